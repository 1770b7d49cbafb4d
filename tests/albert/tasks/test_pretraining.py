"""ALBERT run_pretraining: flags and defaults (google-research/albert@b772393
run_pretraining.py), a short LAMB run on the golden records from the golden checkpoint
(original checkpoint layout), evaluation keys, a BERT checkpoint refused."""
import dataclasses
import logging
import os

import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.errors import CheckpointError, FlagError
from bert_tf.albert.tasks import pretraining as albert_pretraining
from bert_tf.albert.tasks.args import AlbertPretrainingArgs
from bert_tf.run.pretraining import NoModeError
from bert_tf.albert.tasks.args import read_args

ORIGINAL_DEFAULTS = {
    "albert_config_file": None, "input_file": None, "output_dir": None,
    "init_checkpoint": None, "max_seq_length": 512, "max_predictions_per_seq": 20,
    "do_train": True, "do_eval": False, "train_batch_size": 4096, "eval_batch_size": 64,
    "optimizer": "lamb", "learning_rate": 0.00176, "poly_power": 1.0,
    "num_train_steps": 125000, "num_warmup_steps": 3125, "start_warmup_step": 0,
    "save_checkpoints_steps": 5000, "keep_checkpoint_max": 5, "iterations_per_loop": 1000,
    "max_eval_steps": 100, "use_tpu": False, "init_from_group0": False, "tpu_name": None,
    "tpu_zone": None, "gcp_project": None, "master": None, "num_tpu_cores": 8,
    "masked_lm_budget": 0.0}
BERT_TF_EXTRAS = {"use_xla": False, "dtype": "float32", "gradient_accumulation_steps": 1,
                  "allow_partial_init_checkpoint": False, "recompute_grad": False}


def test_args_are_the_original_flags_with_its_defaults():
    assert ({f.name: f.default for f in dataclasses.fields(AlbertPretrainingArgs)}
            == {**ORIGINAL_DEFAULTS, **BERT_TF_EXTRAS})


def _args(golden_dir, out, **kw):
    return AlbertPretrainingArgs(
        albert_config_file=os.path.join(golden_dir, "albert", "model", "albert_config.json"),
        input_file=os.path.join(golden_dir, "albert", "pretraining_data",
                                "sample_text.seq64.tfrecord"),
        output_dir=out, max_seq_length=64, max_predictions_per_seq=10, train_batch_size=4,
        eval_batch_size=4, num_train_steps=2, num_warmup_steps=1, learning_rate=1e-3,
        save_checkpoints_steps=0, max_eval_steps=2, **kw)


@pytest.mark.slow
def test_lamb_run_from_the_golden_checkpoint_writes_the_original_layout(tmp_path, golden_dir,
                                                                        caplog):
    out = str(tmp_path / "out")
    ckpt = os.path.join(golden_dir, "albert", "model", "model.ckpt")
    with caplog.at_level(logging.INFO):
        result = albert_pretraining.run(_args(golden_dir, out, init_checkpoint=ckpt,
                                              do_eval=True))
    assert result.train.global_step == 2
    # the warm start is the loop's (a new user saw "training starts from randomly initialized
    # weights (from scratch)" after the warm start's own line)
    assert "from scratch" not in caplog.text
    assert result.train.warm_start is not None and len(result.train.warm_start.loaded) == 32
    assert caplog.text.count("*INIT_FROM_CKPT*") == 32
    saved = checkpoint_io.list_checkpoint(os.path.join(out, "model.ckpt-2"))
    with open(os.path.join(golden_dir, "albert", "model", "variables.txt")) as f:
        names = [line.split()[0] for line in f if line.strip()]
    assert len(names) == 32
    expected = set(names) | {f"{n}/adam_{s}" for n in names for s in "mv"} | {"global_step"}
    assert set(saved) == expected
    # the shared block moved away from the golden values; the step is stored
    moved = checkpoint_io.read_checkpoint(os.path.join(out, "model.ckpt-2"))
    start = checkpoint_io.read_checkpoint(ckpt)
    name = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"
    assert not np.allclose(moved[name], start[name])
    assert sorted(result.eval_metrics) == sorted(albert_pretraining.EVAL_KEYS)
    text = open(os.path.join(out, "eval_results.txt")).read()
    assert text.splitlines()[0] == "global_step = 2"
    assert "sentence_order_accuracy = " in text and "next_sentence" not in text


@pytest.mark.slow
def test_bert_checkpoint_is_refused_before_training(tmp_path, golden_dir):
    bert_ckpt = os.path.join(golden_dir, "bert", "tiny_random", "bert_model.ckpt")
    with pytest.raises(CheckpointError, match="variable bert/embeddings/word_embeddings has "
                                              r"shape \[30522, 64\].*this is a BERT checkpoint"):
        albert_pretraining.run(_args(golden_dir, str(tmp_path / "o"), init_checkpoint=bert_ckpt))
    assert not os.path.exists(os.path.join(tmp_path, "o", "model.ckpt-2.index"))


def test_flag_errors_are_one_line(tmp_path, golden_dir):
    args = _args(golden_dir, str(tmp_path / "o"))
    with pytest.raises(NoModeError):
        albert_pretraining.check_args(dataclasses.replace(args, do_train=False))
    with pytest.raises(FlagError, match="--albert_config_file is required"):
        albert_pretraining.check_args(dataclasses.replace(args, albert_config_file=None))
    with pytest.raises(FlagError, match="--max_seq_length=512 is longer than "
                                        "max_position_embeddings=128"):
        albert_pretraining.check_args(dataclasses.replace(args, max_seq_length=512))
    # The original's --masked_lm_budget > 0 reads only token_boundary, and its model_fn then
    # fails on features["masked_lm_positions"]: refused in one line.
    with pytest.raises(FlagError, match="--masked_lm_budget=0.5: on-the-fly masking is not "
                                        "supported"):
        albert_pretraining.check_args(dataclasses.replace(args, masked_lm_budget=0.5))
    with pytest.raises(FlagError, match=r"^--poly_power=-1.0: must not be negative"):
        albert_pretraining.check_args(dataclasses.replace(args, poly_power=-1.0))
    with pytest.raises(FlagError, match=r"^--start_warmup_step=-5: must not be negative$"):
        albert_pretraining.check_args(dataclasses.replace(args, start_warmup_step=-5))
    albert_pretraining.check_args(dataclasses.replace(args, poly_power=0.0))  # a constant rate


def test_root_script_flags_select_albert_with_its_defaults():
    """run_pretraining.py's three profiles: the ALBERT path reads ALBERT's defaults for the
    flags not given (optimizer lamb, do_train True), the BERT path keeps BERT's."""
    from absl import flags as absl_flags

    from bert_tf import flags as bert_flags
    from bert_tf.xlnet.tasks.args import XLNetPretrainingArgs
    bert = ("bert_config_file", "input_file", "output_dir", "init_checkpoint",
            "max_seq_length", "max_predictions_per_seq", "do_train", "do_eval",
            "train_batch_size", "eval_batch_size", "learning_rate", "num_train_steps",
            "num_warmup_steps", "save_checkpoints_steps", "iterations_per_loop",
            "max_eval_steps", "use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master",
            "num_tpu_cores", "use_xla", "dtype", "gradient_accumulation_steps")
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles((bert_flags.RUN_PRETRAINING, bert),
                               (bert_flags.XLNET_RUN_PRETRAINING, bert_flags.field_names(XLNetPretrainingArgs)),
                               (bert_flags.ALBERT_RUN_PRETRAINING,
                                bert_flags.field_names(albert_pretraining.AlbertPretrainingArgs)), flag_values=fv)
    fv(["prog", "--albert_config_file=c.json", "--num_train_steps=7"])
    args = bert_flags.args_from_flags(AlbertPretrainingArgs, fv)
    assert (args.optimizer, args.do_train, args.learning_rate, args.num_train_steps,
            args.train_batch_size) == ("lamb", True, 0.00176, 7, 4096)
    assert (fv.do_train, fv.learning_rate, fv.train_batch_size) == (False, 5e-5, 32)


def test_records_beyond_the_vocab_name_the_albert_flag(tmp_path, golden_dir):
    """Fresh-user finding: the vocab check named --bert_config_file in ALBERT mode, where the
    user gave --albert_config_file."""
    import json

    from bert_tf.errors import ConfigError
    with open(os.path.join(golden_dir, "albert", "model", "albert_config.json")) as f:
        config = json.load(f)
    config["vocab_size"] = 100
    path = tmp_path / "small_vocab.json"
    path.write_text(json.dumps(config))
    args = dataclasses.replace(_args(golden_dir, str(tmp_path / "out")),
                               albert_config_file=str(path))
    with pytest.raises(ConfigError, match=f"vocab_size=100 of --albert_config_file={path}: "
                                          "the records were made with a larger vocab; pass the "
                                          "config of the model"):
        albert_pretraining.run(args)
    assert not os.path.exists(tmp_path / "out" / "checkpoint")


def test_root_script_refuses_bert_config_file_in_albert_mode():
    """Fresh-user finding: --bert_config_file beside --albert_config_file was ignored
    silently."""
    from absl import flags as absl_flags

    from bert_tf import flags as bert_flags
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles((bert_flags.RUN_PRETRAINING, ("bert_config_file",)),
                               (bert_flags.ALBERT_RUN_PRETRAINING,
                                bert_flags.field_names(albert_pretraining.AlbertPretrainingArgs)), flag_values=fv)
    fv(["prog", "--albert_config_file=c.json", "--bert_config_file=b.json"])
    with pytest.raises(FlagError, match=r"^ALBERT's run_pretraining \(--albert_config_file\) "
                                        r"does not read --bert_config_file \(use "
                                        r"--albert_config_file\)$"):
        read_args(AlbertPretrainingArgs, fv)


def test_output_dir_that_is_a_file_is_one_flag_error(tmp_path, golden_dir):
    """Issue 27 fresh round: BERT's run_pretraining gave a FailedPreconditionError traceback
    here; ALBERT's made its folder the same way."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(FlagError, match=r"--output_dir=.*a_file/o is not writable: .*a_file is "
                                        "a file, not a folder"):
        albert_pretraining.run(_args(golden_dir, str(blocker / "o"), do_train=True))


def test_records_cut_at_a_record_boundary_are_refused_and_the_originals_globs_see_only_records(
        tmp_path, golden_dir, uncased_vocab_file):
    """Issue 27 item 2, ALBERT: the count its create_pretraining_data writes with each file is
    checked before training; the original's --input_file globs still find the records only."""
    import tensorflow as tf
    from bert_tf.albert.data.pretraining import create_albert_pretraining_data
    from bert_tf.errors import InputDataError
    folder = tmp_path / "data"
    outs = [str(folder / "a.tfrecord"), str(folder / "b.tfrecord")]
    n = create_albert_pretraining_data(
        os.path.join(golden_dir, "bert", "pretraining_data", "sample_text.txt"), ",".join(outs),
        vocab_file=uncased_vocab_file, max_seq_length=64, max_predictions_per_seq=10,
        dupe_factor=2)
    assert n == 28  # the golden run's flags (golden albert/pretraining_data/flags.txt)
    assert sorted(os.listdir(folder)) == ["a.tfrecord", "b.tfrecord"]
    for pattern in ("*", "a*", "*.tfrecord"):
        assert sorted(tf.io.gfile.glob(str(folder / pattern))) == outs[:1 if pattern == "a*"
                                                                           else 2], pattern
    data = open(outs[0], "rb").read()
    end = 12 + int.from_bytes(data[:8], "little") + 4  # after record 0
    with open(outs[0], "r+b") as f:
        f.truncate(end)
    with pytest.raises(InputDataError) as e:
        albert_pretraining.run(dataclasses.replace(
            _args(golden_dir, str(tmp_path / "o"), do_train=False, do_eval=True),
            input_file=str(folder / "*")))
    assert str(e.value).startswith(f"{outs[0]}: 1 records, but bert_tf wrote 14 into it")


@pytest.mark.parametrize("name,kind", [("eval_results.txt", "folder"), ("eval", "file")])
def test_an_output_name_of_the_other_kind_is_refused_before_work(tmp_path, golden_dir, name,
                                                                 kind):
    """Issue 27: O/eval_results.txt a folder, or O/eval a file, failed after the evaluation."""
    out = tmp_path / "o"
    out.mkdir()
    (out / name).mkdir() if kind == "folder" else (out / name).write_text("x")
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError, match=f"^--output_dir={out}: {out / name} is a {kind}, but "
                                        f"the run writes the {written} {name} there"):
        albert_pretraining.run(_args(golden_dir, str(out), do_train=False, do_eval=True))
    assert os.listdir(out) == [name]
