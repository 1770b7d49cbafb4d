"""XLNet run_race: the golden command line end to end (tests/golden/xlnet_squad/race, README
"race/"), the intended layout, a short training run (original names, resume), bad input."""
import dataclasses
import gzip
import json
import logging
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from bert_tf import checkpoint_io
from bert_tf import flags as bert_flags
from bert_tf.data import tfrecord
from bert_tf.errors import CheckpointError, FlagError, InputDataError
from bert_tf.xlnet.tasks import race as xr

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RECORD = "spiece.model.len-128.dev.tf_record"

# run_race.py's flags and defaults, spec xlnet.md 10 ("as in the classifier" for the model,
# I/O and machine flags, 8.1), as written there; plus bert_tf's original_context_mutation.
XLNET_RUN_RACE_SPEC = dict(
    model_config_path=None, dropout=0.1, dropatt=0.1, clamp_len=-1, summary_type="last",
    use_summ_proj=True, use_bfloat16=False, init="normal", init_std=0.02, init_range=0.1,
    overwrite_data=False, init_checkpoint=None, output_dir="", spiece_model_file="",
    model_dir="", data_dir="",
    use_tpu=False, num_hosts=1, num_core_per_host=8, tpu_job_name=None, tpu=None, tpu_zone=None,
    gcp_project=None, master=None, iterations=1000,
    do_train=False, train_steps=12000, warmup_steps=0, learning_rate=2e-5,
    lr_layer_decay_rate=1.0, min_lr_ratio=0.0, clip=1.0, max_save=0, save_steps=None,
    train_batch_size=8, weight_decay=0.0, adam_epsilon=1e-6, decay_method="poly",
    do_eval=False, eval_split="dev", eval_batch_size=32,
    max_seq_length=512, max_qa_length=128, shuffle_buffer=2048, uncased=False,
    high_only=False, middle_only=False, original_context_mutation=True, random_seed=12345)


@pytest.fixture(scope="module")
def race(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad", "race")


@pytest.fixture(scope="module")
def qa_dir(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad", "tiny_random_qa")


@pytest.fixture(scope="module")
def spiece(shared_data_dir):
    return os.path.join(shared_data_dir, "xlnet", "spiece.model")


@pytest.fixture(scope="module")
def want(race):
    with open(os.path.join(race, "eval_result.json")) as f:
        return json.load(f)


def _golden_records(race):
    with gzip.open(os.path.join(race, "features.jsonl.gz"), "rt") as f:
        return [json.loads(line) for line in f]


def _key(record):
    return json.dumps(record, sort_keys=True)


def _records(path):
    return sorted(map(_key, tfrecord.read_examples(path)))


def _eval_results(model_dir):
    with open(os.path.join(model_dir, "eval_results.txt")) as f:
        return dict(line.rstrip("\n").split(" = ") for line in f)


def _args(tmp_path, race, qa_dir, spiece, **kw):
    """The golden command line (race/flags.txt) as XLNetRaceArgs, paths in tmp_path."""
    base = dict(do_train=False, do_eval=True, eval_split="dev",
                data_dir=os.path.join(race, "RACE"), output_dir=str(tmp_path / "output_dir"),
                model_dir=str(tmp_path / "model_dir"),
                init_checkpoint=os.path.join(qa_dir, "xlnet_model.ckpt"),
                model_config_path=os.path.join(qa_dir, "xlnet_config.json"),
                spiece_model_file=spiece, max_seq_length=128, max_qa_length=32, uncased=False,
                eval_batch_size=4, num_hosts=1, num_core_per_host=1, use_tpu=False,
                summary_type="last", use_summ_proj=True)
    base.update(kw)
    return xr.XLNetRaceArgs(**base)


def _case_dir(tmp_path, race, qa_dir, spiece):
    """The golden case directory: RACE, spiece.model, config and checkpoint side by side."""
    case = tmp_path / "case"
    shutil.copytree(os.path.join(race, "RACE"), case / "RACE")
    shutil.copy(spiece, case / "spiece.model")
    for name in os.listdir(qa_dir):
        if name.startswith("xlnet_"):
            shutil.copy(os.path.join(qa_dir, name), case / name)
    return case


# ---------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------

def test_args_are_the_original_flags_with_their_defaults():
    # The same flags (field order is not meaningful: the shared groups come first), plus
    # bert_tf's --allow_partial_init_checkpoint (issue 27) and --recompute_grad (issue 24), off
    # by default.
    assert sorted(f.name for f in dataclasses.fields(xr.XLNetRaceArgs)) == sorted(
        [*XLNET_RUN_RACE_SPEC, "allow_partial_init_checkpoint", "recompute_grad"])
    assert xr.XLNetRaceArgs().allow_partial_init_checkpoint is False
    assert xr.XLNetRaceArgs().recompute_grad is False
    args = xr.XLNetRaceArgs()
    for name, expected in XLNET_RUN_RACE_SPEC.items():
        assert getattr(args, name) == expected, name
        assert type(getattr(args, name)) is type(expected), name
    assert xr.XLNetRaceArgs.flag_profile is bert_flags.XLNET_RUN_RACE


def test_help_says_files_are_read_in_sorted_order():
    fv = absl_flags.FlagValues()
    bert_flags.define(*bert_flags.field_names(xr.XLNetRaceArgs), profile=bert_flags.XLNET_RUN_RACE, flag_values=fv)
    assert sorted(fv) == sorted(bert_flags.field_names(xr.XLNetRaceArgs))
    help_text = " ".join(fv["data_dir"].help.split())
    assert "read in sorted order" in help_text and "depends on the file system" in help_text
    fv(["run_race.py", "--max_seq_length=128"])
    args = bert_flags.args_from_flags(xr.XLNetRaceArgs, fv)
    assert args.max_seq_length == 128 and args.eval_batch_size == 32


# ---------------------------------------------------------------------------------------------
# The golden run
# ---------------------------------------------------------------------------------------------

def test_golden_command_line_gives_the_original_metrics_and_records(tmp_path, race, qa_dir,
                                                                    spiece, want):
    """race/flags.txt run unchanged from the case directory through the root script."""
    case = _case_dir(tmp_path, race, qa_dir, spiece)
    with open(os.path.join(race, "flags.txt")) as f:
        line = next(ln for ln in f if ln.startswith("python run_race.py"))
    argv = shlex.split(line)[2:]
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "run_race.py")] + argv,
                          capture_output=True, text=True, timeout=300, cwd=case)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Num of eval samples: 34" in proc.stderr
    got = _eval_results(case / "model_dir")
    assert sorted(got) == ["eval_accuracy", "eval_loss", "global_step", "loss"]
    assert float(got["eval_accuracy"]) == pytest.approx(6 / 34, abs=1e-12)
    assert float(got["eval_accuracy"]) == pytest.approx(want["eval_accuracy"], abs=1e-7)
    assert float(got["eval_loss"]) == pytest.approx(want["eval_loss"], abs=1e-5)
    assert float(got["loss"]) == pytest.approx(want["loss"], abs=1e-5)
    assert got["global_step"] == "0"
    assert "eval: eval_accuracy = " in proc.stdout
    # the cached TFRecord: the original's 36 records (34 real + 2 padding), order aside
    assert _records(str(case / "output_dir" / RECORD)) == _records(
        os.path.join(race, "output_dir", RECORD))


def test_intended_layout_changes_exactly_the_mutated_choices(tmp_path, race, qa_dir, spiece,
                                                             want):
    """--original_context_mutation=False: the 15 choices of articles 13-14 that carried earlier
    choices' tokens (README surprise 7) differ from the original's records, nothing else."""
    result = xr.run(_args(tmp_path, race, qa_dir, spiece, original_context_mutation=False))
    assert os.path.basename(result.eval_file) == \
        "spiece.model.len-128.dev.clean_context.tf_record"
    clean = list(tfrecord.read_examples(result.eval_file))
    assert len(clean) == 36
    golden = [r for r in _golden_records(race) if not r.get("padding_example")]
    changed, files = 0, set()
    # Match by question: each golden record and ours share the first choice (never mutated).
    by_first_choice = {tuple(r["input_ids"][:128]): r for r in clean}
    for record in golden:
        mine = by_first_choice[tuple(record["input_ids"][0])]
        for k in range(4):
            if mine["input_ids"][k * 128:(k + 1) * 128] != record["input_ids"][k]:
                changed += 1
                files.add(record["file"])
    assert changed == 15
    assert files == {"dev/middle/13.txt", "dev/high/14.txt"}
    assert result.eval["eval_loss"] != pytest.approx(want["eval_loss"], abs=1e-9)


def test_eval_reuses_a_fitting_cache_and_refuses_one_that_does_not(tmp_path, race, qa_dir,
                                                                   spiece, want, caplog):
    """The original's cached record file is reused (same metrics); another eval batch size
    (36 records are not a multiple of 8) or other data is a one-line error, nothing lost."""
    out = tmp_path / "output_dir"
    out.mkdir()
    shutil.copy(os.path.join(race, "output_dir", RECORD), out / RECORD)
    with caplog.at_level(logging.INFO):
        result = xr.run(_args(tmp_path, race, qa_dir, spiece))
    assert "Reusing the cached" in caplog.text
    assert result.eval["eval_loss"] == pytest.approx(want["eval_loss"], abs=1e-5)
    assert result.eval["loss"] == pytest.approx(want["loss"], abs=1e-5)
    before = (out / RECORD).read_bytes()
    with pytest.raises(FlagError, match="not a multiple of --eval_batch_size=8"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, eval_batch_size=8))
    with pytest.raises(FlagError, match="lacks the features this run gives"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, max_qa_length=16))
    assert (out / RECORD).read_bytes() == before


def test_empty_model_dir_and_no_init_checkpoint_is_a_warning(tmp_path, race, qa_dir, spiece,
                                                             caplog):
    with caplog.at_level(logging.WARNING):
        result = xr.run(_args(tmp_path, race, qa_dir, spiece, init_checkpoint=None,
                              middle_only=True))
    assert "evaluating randomly initialized weights" in caplog.text
    assert os.path.basename(result.eval_file) == "middle." + RECORD
    records = list(tfrecord.read_examples(result.eval_file))
    # middle/{1,3,5,7,9,11,13}.txt: 2+3+3+2+3+3+2 = 18 questions (README), padded to 20
    assert sum(r["is_real_example"] == [1] for r in records) == 18 and len(records) == 20
    assert result.eval["global_step"] == 0


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------

@pytest.mark.slow  # about 20 s: a real training run
def test_short_training_run_writes_original_names_and_resumes(tmp_path, race, qa_dir, spiece):
    data_dir = tmp_path / "RACE"
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "train")
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "dev")
    common = dict(data_dir=str(data_dir), train_batch_size=2, learning_rate=1e-3,
                  save_steps=2, max_save=0)
    result = xr.run(_args(tmp_path, race, qa_dir, spiece, do_train=True, do_eval=False,
                          train_steps=2, **common))
    model_dir = tmp_path / "model_dir"
    assert result.train.global_step == 2 and result.train.resumed_from is None
    assert len(result.warm_start.loaded) == 35 and not result.warm_start.missing
    train_records = list(tfrecord.read_examples(result.train_file))
    assert len(train_records) == 34 and all(r["is_real_example"] == [1] for r in train_records)
    stored = checkpoint_io.list_checkpoint(str(model_dir / "model.ckpt-2"))
    assert stored["logits/dense/kernel"] == ((32, 1), "float32")
    assert stored["logits/dense/bias"] == ((1,), "float32")
    assert stored["model/sequnece_summary/summary/kernel"] == ((32, 32), "float32")
    assert stored["model/transformer/r_w_bias"][0] == (2, 2, 16)
    model_names = [n for n in stored if not checkpoint_io.is_optimizer_entry(n)
                   and not n.endswith(("/Adam", "/Adam_1")) and "_power" not in n]
    assert len(model_names) == 35  # transformer 5 + 2 x 13, summary 2, logits 2 (README)
    for n in model_names:
        assert stored[n + "/Adam"] == stored[n] and stored[n + "/Adam_1"] == stored[n]
    reader = tf.train.load_checkpoint(str(model_dir / "model.ckpt-2"))
    assert reader.get_tensor("global_step") == 2 and stored["global_step"][1] == "int64"
    original = checkpoint_io.read_checkpoint(os.path.join(qa_dir, "xlnet_model.ckpt"))
    assert not np.array_equal(reader.get_tensor("logits/dense/kernel"),
                              original["logits/dense/kernel"])  # it trained

    # resume to step 3, then evaluate the trained checkpoint (not --init_checkpoint)
    again = xr.run(_args(tmp_path, race, qa_dir, spiece, do_train=True, do_eval=True,
                         train_steps=3, **common))
    assert again.train.resumed_from.endswith("model.ckpt-2")
    assert again.train.global_step == 3
    assert [s for s, _ in checkpoint_io.step_checkpoints(str(model_dir))] == [2, 3]
    assert again.eval["global_step"] == 3
    assert _eval_results(str(model_dir))["global_step"] == "3"


# ---------------------------------------------------------------------------------------------
# Bad input: one clear message, nothing written
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content,message", [
    ("{", "not a RACE JSON file"),
    (json.dumps({"options": [["a"] * 4], "questions": ["q"], "article": "x"}),
     "missing 'answers'"),
    (json.dumps({"answers": ["E"], "options": [["a"] * 4], "questions": ["q"], "article": "x"}),
     "answer 'E' is not one of A, B, C, D"),
    (json.dumps({"answers": ["A"], "options": [["a"] * 5], "questions": ["q"], "article": "x"}),
     "exactly 4 options"),
])
def test_bad_race_file(tmp_path, race, qa_dir, spiece, content, message):
    data_dir = tmp_path / "RACE"
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "dev")
    (data_dir / "dev" / "high" / "99.txt").write_text(content)
    with pytest.raises(InputDataError, match=message) as e:
        xr.run(_args(tmp_path, race, qa_dir, spiece, data_dir=str(data_dir)))
    assert "99.txt" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "output_dir").exists() and not (tmp_path / "model_dir").exists()


def test_a_split_without_questions(tmp_path, race, qa_dir, spiece):
    data_dir = tmp_path / "RACE"
    for level in ("middle", "high"):
        (data_dir / "test" / level).mkdir(parents=True)
    with pytest.raises(InputDataError, match=r"no RACE questions in .*test/high: nothing to "
                                             r"evaluate"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, data_dir=str(data_dir), eval_split="test",
                     high_only=True))
    with pytest.raises(InputDataError, match=r"RACE folder not found"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, data_dir=str(data_dir)))
    assert not (tmp_path / "output_dir").exists()


def test_max_seq_length_too_small_for_a_question(tmp_path, race, qa_dir, spiece):
    with pytest.raises(InputDataError, match=r"question \d+: --max_seq_length=12 is too small"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, max_seq_length=12))
    assert not (tmp_path / "output_dir").exists()


def test_bert_checkpoint_as_init_checkpoint(tmp_path, race, qa_dir, spiece, shared_data_dir):
    bert = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining", "bert_model.ckpt")
    with pytest.raises(CheckpointError, match=r"looks like a BERT checkpoint \(it has bert/"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, init_checkpoint=bert))
    assert not (tmp_path / "output_dir").exists() and not (tmp_path / "model_dir").exists()


def test_flag_errors(tmp_path, race, qa_dir, spiece):
    with pytest.raises(FlagError, match="--high_only and --middle_only are both set"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, high_only=True, middle_only=True))
    with pytest.raises(FlagError, match="At least one of `do_train`, `do_eval` must be True"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, do_eval=False))
    with pytest.raises(FlagError, match="--eval_split=train with --do_train"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, do_train=True, eval_split="train"))
    with pytest.raises(FlagError, match="--model_dir is required"):
        xr.run(_args(tmp_path, race, qa_dir, spiece, model_dir=""))
    assert not (tmp_path / "output_dir").exists()


def test_train_steps_not_above_warmup_steps_before_any_record(tmp_path, race, qa_dir, spiece):
    """The schedule's check (train_steps - warmup_steps decay steps) fails at start-up, not
    after the training records are written."""
    data_dir = tmp_path / "RACE"
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "train")
    with pytest.raises(FlagError, match="--train_steps=4 must be larger than "
                                        "--warmup_steps=20") as e:
        xr.run(_args(tmp_path, race, qa_dir, spiece, data_dir=str(data_dir), do_train=True,
                     do_eval=False, train_steps=4, warmup_steps=20))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "output_dir").exists() and not (tmp_path / "model_dir").exists()


@pytest.mark.slow  # a real training run
def test_use_bfloat16_trains_with_mixed_bfloat16_and_keeps_float32_checkpoints(
        tmp_path, race, qa_dir, spiece):
    """Issue 17 deliverable 4: --use_bfloat16 builds the RACE model with Keras'
    mixed_bfloat16 policy; variables and the checkpoint keep the original's float32 dtypes;
    the logits (and so the loss and eval metrics) are float32."""
    from bert_tf.xlnet.config import XLNetConfig

    data_dir = tmp_path / "RACE"
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "train")
    shutil.copytree(os.path.join(race, "RACE", "dev"), data_dir / "dev")
    args = _args(tmp_path, race, qa_dir, spiece, do_train=True, do_eval=True, train_steps=1,
                 data_dir=str(data_dir), train_batch_size=2, use_bfloat16=True)
    model = xr.build_race_model(XLNetConfig.from_json_file(args.model_config_path), args,
                                is_training=False)
    assert model.xlnet.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in model.weights} == {"float32"}
    n = 4 * args.max_seq_length
    logits = model({"input_ids": tf.ones([1, n], tf.int32), "segment_ids": tf.zeros([1, n], tf.int32),
                    "input_mask": tf.zeros([1, n], tf.float32)})["logits"]
    assert logits.dtype == tf.float32 and logits.shape == (1, 4)
    result = xr.run(args)
    assert result.train.global_step == 1
    assert 0.0 <= float(_eval_results(str(tmp_path / "model_dir"))["eval_accuracy"]) <= 1.0
    dtypes = tf.train.load_checkpoint(str(tmp_path / "model_dir" / "model.ckpt-1")
                                      ).get_variable_to_dtype_map()
    initial = tf.train.load_checkpoint(os.path.join(qa_dir, "xlnet_model.ckpt")
                                       ).get_variable_to_dtype_map()
    assert all(dtypes[name] == dtype for name, dtype in initial.items() if name in dtypes)
    assert dtypes["logits/dense/kernel"] == tf.float32
    assert dtypes["model/transformer/word_embedding/lookup_table"] == tf.float32


@pytest.mark.parametrize("flag,kind", [("output_dir", "folder"), ("model_dir", "file")])
def test_an_output_name_of_the_other_kind_is_refused_before_any_work(tmp_path, race, qa_dir,
                                                                     spiece, flag, kind):
    """Issue 27: a folder named like the dev records (an IsADirectoryError traceback when read
    as a cache) or a file model_dir/eval (failed after the evaluation) is refused first."""
    folder = tmp_path / flag
    name = f"{os.path.basename(spiece)}.len-128.dev.tf_record" if kind == "folder" else "eval"
    folder.mkdir()
    (folder / name).mkdir() if kind == "folder" else (folder / name).write_text("x")
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError) as e:
        xr.run(_args(tmp_path, race, qa_dir, spiece))
    assert str(e.value) == (f"--{flag}={folder}: {folder / name} is a {kind}, but the run "
                            f"writes the {written} {name} there; remove or rename that {kind}")
    assert os.listdir(folder) == [name]
