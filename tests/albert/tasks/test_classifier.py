"""ALBERT run_classifier: the golden run of the original (golden README albert D) reproduced
from model.ckpt + classifier_head.npz; flags and defaults; the ALBERT mode of the root script;
a BERT checkpoint refused with the first variable that does not fit."""
import dataclasses
import math
import os

import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from bert_tf import checkpoint_io
from bert_tf import flags as bert_flags
from bert_tf.data.tfrecord import read_examples
from bert_tf.errors import CheckpointError, ConfigError, FlagError
from bert_tf.albert.tasks import classifier as albert_classifier
from bert_tf.albert.tasks.args import AlbertClassifierArgs, read_args

# The original's flags.DEFINE_* defaults (google-research/albert@b772393 run_classifier.py).
ORIGINAL_DEFAULTS = {
    "data_dir": None, "albert_config_file": None, "task_name": None, "vocab_file": None,
    "spm_model_file": None, "output_dir": None, "cached_dir": None, "init_checkpoint": None,
    "albert_hub_module_handle": None, "do_lower_case": True, "max_seq_length": 512,
    "do_train": False, "do_eval": False, "do_predict": False, "train_batch_size": 32,
    "eval_batch_size": 8, "predict_batch_size": 8, "learning_rate": 5e-5, "train_step": 1000,
    "warmup_step": 0, "save_checkpoints_steps": 1000, "keep_checkpoint_max": 5,
    "iterations_per_loop": 1000, "use_tpu": False, "optimizer": "adamw", "tpu_name": None,
    "tpu_zone": None, "gcp_project": None, "master": None, "num_tpu_cores": 8,
    "export_dir": None}
BERT_TF_EXTRAS = {"use_xla": False, "gradient_accumulation_steps": 1, "dtype": "float32",
                  "allow_partial_init_checkpoint": False, "recompute_grad": False}
# bert_tf's fine-tuning recipes (issue 26), each off by default: the original's training
RECIPE_EXTRAS = {"seed": None, "deterministic": False, "num_restarts": 1, "select_metric": None,
                 "lr_schedule": "warmup_linear", "slanted_cut_frac": 0.1, "slanted_ratio": 32.0,
                 "lr_layer_decay_rate": 1.0, "unfreeze_schedule": 0, "freeze_encoder": False,
                 "feature_layers": None, "feature_combine": "concat"}


def test_args_are_the_original_flags_with_its_defaults():
    defaults = {f.name: f.default for f in dataclasses.fields(AlbertClassifierArgs)}
    assert math.isnan(defaults.pop("threshold_to_export"))  # the original's float("nan")
    assert defaults == {**ORIGINAL_DEFAULTS, **BERT_TF_EXTRAS, **RECIPE_EXTRAS}


@pytest.fixture(scope="module")
def golden_classifier(golden_dir):
    return os.path.join(golden_dir, "albert", "classifier")


def _golden_output_dir(tmp_path, golden_dir, golden_classifier, step=1):
    """output_dir as the harness built it: model.ckpt-N = golden model.ckpt's bert/* +
    classifier_head.npz + global_step N."""
    out = tmp_path / "out"
    out.mkdir()
    arrays = {k: v for k, v in checkpoint_io.read_checkpoint(
        os.path.join(golden_dir, "albert", "model", "model.ckpt")).items()
        if k.startswith("bert/")}
    with np.load(os.path.join(golden_classifier, "classifier_head.npz")) as head:
        arrays.update({k: head[k] for k in head.files})
    arrays["global_step"] = np.array(step, np.int64)
    checkpoint_io.write_checkpoint(str(out / f"model.ckpt-{step}"), arrays)
    return str(out)


def _args(golden_dir, golden_classifier, output_dir, vocab, **kw):
    return AlbertClassifierArgs(
        task_name="MRPC", data_dir=os.path.join(golden_classifier, "glue_data"),
        output_dir=output_dir, vocab_file=vocab, spm_model_file="",
        albert_config_file=os.path.join(golden_dir, "albert", "model", "albert_config.json"),
        do_lower_case=True, max_seq_length=64, do_eval=True, do_predict=True,
        eval_batch_size=8, predict_batch_size=8, train_step=1, **kw)


def _read(path):
    with open(path) as f:
        return f.read()


def test_golden_eval_and_predict_reproduced(tmp_path, golden_dir, golden_classifier,
                                            uncased_vocab_file):
    out = _golden_output_dir(tmp_path, golden_dir, golden_classifier)
    result = albert_classifier.run(_args(golden_dir, golden_classifier, out, uncased_vocab_file))
    # the features the original wrote
    for mine, theirs in (("mrpc_eval.tf_record", "mrpc_eval.tf_record"),
                         ("predict.tf_record", "predict.tf_record")):
        assert (list(read_examples(os.path.join(out, mine)))
                == list(read_examples(os.path.join(golden_classifier, theirs)))), mine
    # eval_results.txt: same lines; accuracy exact, losses within 1e-5
    got = _read(os.path.join(out, "eval_results.txt")).splitlines()
    want = _read(os.path.join(golden_classifier, "eval_results.txt")).splitlines()
    assert [line.split(" = ")[0] for line in got] == [line.split(" = ")[0] for line in want]
    for g, w in zip(got, want):
        if g.startswith(("eval_loss", "loss")):
            assert abs(float(g.split(" = ")[1]) - float(w.split(" = ")[1])) < 1e-5
        else:
            assert g == w
    assert _read(os.path.join(out, "best_trial.txt")) == _read(
        os.path.join(golden_classifier, "best_trial.txt"))
    # probabilities within 1e-5, predictions exact
    mine = np.loadtxt(os.path.join(out, "test_results.tsv"), delimiter="\t")
    theirs = np.loadtxt(os.path.join(golden_classifier, "test_results.tsv"), delimiter="\t")
    assert mine.shape == theirs.shape == (12, 2)
    np.testing.assert_allclose(mine, theirs, atol=1e-5, rtol=0)
    assert _read(os.path.join(out, "submit_results.tsv")) == _read(
        os.path.join(golden_classifier, "submit_results.tsv"))
    assert result.predict_checkpoint == os.path.join(out, "model.ckpt-1")


@pytest.mark.slow
def test_predict_alone_uses_the_best_trial_checkpoint(tmp_path, golden_dir, golden_classifier,
                                                      uncased_vocab_file):
    """--do_predict without --do_eval: the best checkpoint of best_trial.txt (the original
    reads only model.ckpt-best, which a --do_eval run renames into place)."""
    out = _golden_output_dir(tmp_path, golden_dir, golden_classifier)
    with open(os.path.join(out, "best_trial.txt"), "w") as f:
        f.write("1:1:0.625")
    args = dataclasses.replace(_args(golden_dir, golden_classifier, out, uncased_vocab_file),
                               do_eval=False)
    result = albert_classifier.run(args)
    assert result.predict_checkpoint == os.path.join(out, "model.ckpt-1")
    theirs = np.loadtxt(os.path.join(golden_classifier, "test_results.tsv"), delimiter="\t")
    np.testing.assert_allclose(result.predictions, theirs, atol=1e-5, rtol=0)


@pytest.mark.slow
def test_eval_from_init_checkpoint_without_output_dir_checkpoints(tmp_path, golden_dir,
                                                                  golden_classifier,
                                                                  uncased_vocab_file):
    """No model.ckpt-N in output_dir: --init_checkpoint (the original would poll forever)."""
    src = _golden_output_dir(tmp_path, golden_dir, golden_classifier)
    out = str(tmp_path / "fresh")
    result = albert_classifier.run(_args(
        golden_dir, golden_classifier, out, uncased_vocab_file,
        init_checkpoint=os.path.join(src, "model.ckpt-1")))
    (prefix, results), = result.evaluated
    assert results["eval_accuracy"] == np.float32(0.625) and results["global_step"] == 0
    assert not os.path.exists(os.path.join(out, "best_trial.txt"))


def test_bert_checkpoint_names_the_first_variable_that_does_not_fit(tmp_path, golden_dir,
                                                                    golden_classifier,
                                                                    uncased_vocab_file):
    bert_ckpt = os.path.join(golden_dir, "bert", "tiny_random", "bert_model.ckpt")
    if not os.path.exists(bert_ckpt + ".index"):
        pytest.skip(f"{bert_ckpt} absent")
    with pytest.raises(CheckpointError) as e:
        albert_classifier.run(_args(golden_dir, golden_classifier, str(tmp_path / "o"),
                                    uncased_vocab_file, init_checkpoint=bert_ckpt))
    message = str(e.value)
    assert "\n" not in message
    assert "variable bert/embeddings/word_embeddings has shape [30522, 64]" in message
    assert message.endswith("this is a BERT checkpoint, not ALBERT")


def test_hub_module_and_missing_config_are_one_line_errors(tmp_path, golden_dir,
                                                           golden_classifier,
                                                           uncased_vocab_file):
    args = _args(golden_dir, golden_classifier, str(tmp_path / "o"), uncased_vocab_file)
    with pytest.raises(ConfigError, match="TF-Hub is not supported"):
        albert_classifier.check_args(dataclasses.replace(
            args, albert_hub_module_handle="https://tfhub.dev/google/albert_base/3"))
    with pytest.raises(FlagError, match="--albert_config_file is required"):
        albert_classifier.check_args(dataclasses.replace(args, albert_config_file=None))
    with pytest.raises(FlagError, match="Cannot use sequence length 129"):
        albert_classifier.check_args(dataclasses.replace(args, max_seq_length=129))
    with pytest.raises(FlagError, match="valid ALBERT tasks: cola, mnli, mismnli"):
        albert_classifier.check_args(dataclasses.replace(args, task_name="xnli"))
    # a new user's --warmup_step=-1 said "num_warmup_steps must be >= 0" after the records
    with pytest.raises(FlagError, match=r"^--warmup_step=-1: must not be negative$"):
        albert_classifier.check_args(dataclasses.replace(args, do_train=True, warmup_step=-1))


def test_root_script_flags_select_albert_with_its_defaults():
    """run_classifier.py's three profiles: --albert_config_file reads ALBERT's defaults."""
    from bert_tf.bert.tasks.args import ClassifierArgs
    from bert_tf.xlnet.tasks.args import XLNetClassifierArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_CLASSIFIER, ClassifierArgs.__dataclass_fields__),
        (bert_flags.XLNET_RUN_CLASSIFIER, bert_flags.field_names(XLNetClassifierArgs)),
        (bert_flags.ALBERT_RUN_CLASSIFIER, bert_flags.field_names(albert_classifier.AlbertClassifierArgs)),
        flag_values=fv)
    fv(["prog", "--albert_config_file=c.json", "--task_name=MRPC"])
    assert bert_flags.flag_given(fv, "albert_config_file")
    args = bert_flags.args_from_flags(AlbertClassifierArgs, fv)
    assert (args.max_seq_length, args.train_step, args.optimizer) == (512, 1000, "adamw")
    assert fv.max_seq_length == 128  # the BERT path keeps BERT's default


def test_root_script_refuses_bert_flags_albert_does_not_read():
    """Fresh-user findings: in ALBERT mode --num_train_epochs=0.1 silently trained
    --train_step=1000 steps, and --bert_config_file was silently ignored."""
    from bert_tf.bert.tasks.args import ClassifierArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_CLASSIFIER, ClassifierArgs.__dataclass_fields__),
        (bert_flags.ALBERT_RUN_CLASSIFIER, bert_flags.field_names(albert_classifier.AlbertClassifierArgs)),
        flag_values=fv)
    fv(["prog", "--albert_config_file=c.json", "--task_name=MRPC", "--num_train_epochs=0.1",
        "--bert_config_file=b.json"])
    with pytest.raises(FlagError) as e:
        read_args(AlbertClassifierArgs, fv)
    assert str(e.value) == (
        "ALBERT's run_classifier (--albert_config_file) does not read --bert_config_file (use "
        "--albert_config_file), --num_train_epochs (use --train_step (ALBERT trains a number "
        "of steps))")


@pytest.mark.slow
def test_train_with_lamb_then_eval_each_checkpoint_once(tmp_path, golden_dir, golden_classifier,
                                                        uncased_vocab_file, shared_data_dir):
    """--do_train (LAMB, from the golden checkpoint) writes model.ckpt-1 and -2 in the
    original layout; --do_eval evaluates both, once, in order, with the original's blocks."""
    glue = tmp_path / "glue" / "MRPC"
    glue.mkdir(parents=True)
    with open(os.path.join(shared_data_dir, "MRPC", "train.tsv"), encoding="utf-8") as f:
        glue.joinpath("train.tsv").write_text("".join(f.readlines()[:17]), encoding="utf-8")
    for name in ("dev.tsv", "test.tsv"):
        glue.joinpath(name).write_bytes(
            open(os.path.join(golden_classifier, "glue_data", "MRPC", name), "rb").read())
    out = str(tmp_path / "out")
    args = dataclasses.replace(
        _args(golden_dir, golden_classifier, out, uncased_vocab_file,
              init_checkpoint=os.path.join(golden_dir, "albert", "model", "model.ckpt")),
        data_dir=str(tmp_path / "glue"), do_train=True, train_step=2, train_batch_size=8,
        save_checkpoints_steps=1, optimizer="lamb", learning_rate=1e-3)
    result = albert_classifier.run(args)
    assert [p for p, _ in result.evaluated] == [os.path.join(out, f"model.ckpt-{n}")
                                                for n in (1, 2)]
    names = set(checkpoint_io.list_checkpoint(os.path.join(out, "model.ckpt-2")))
    assert {"output_weights", "output_weights/adam_m", "global_step",
            "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma/adam_v"} <= names
    text = _read(os.path.join(out, "eval_results.txt"))
    assert text.count("=" * 50 + "\n") == 2 and text.count("best = ") == 2
    assert text.splitlines()[4] == "best = -1"
    assert os.path.exists(os.path.join(out, "mrpc_train.tf_record"))
    # a second --do_eval: nothing newer than best_trial.txt, the newest is evaluated again
    again = albert_classifier.run(dataclasses.replace(args, do_train=False, do_predict=False))
    assert [p for p, _ in again.evaluated] == [os.path.join(out, "model.ckpt-2")]


@pytest.mark.parametrize("recompute_grad", [False, True])
def test_a_resumed_deterministic_run_ends_on_the_uninterrupted_run(
        tmp_path, golden_dir, golden_classifier, uncased_vocab_file, recompute_grad):
    """ALBERT's one shared block is called 3 times per update, so each of its dropouts draws
    3 masks an update (recomputed: on 3 streams, recompute.py): a run stopped at step 1 and
    resumed ends on the uninterrupted run's step-2 checkpoint, every variable and slot equal
    (dropout 0.1 in the golden config and the head)."""
    glue = tmp_path / "glue" / "MRPC"
    glue.mkdir(parents=True)
    for name, source in (("train.tsv", "dev.tsv"), ("dev.tsv", "dev.tsv"),
                         ("test.tsv", "test.tsv")):
        glue.joinpath(name).write_bytes(
            open(os.path.join(golden_classifier, "glue_data", "MRPC", source), "rb").read())

    def args(out):
        return dataclasses.replace(
            _args(golden_dir, golden_classifier, str(tmp_path / out), uncased_vocab_file,
                  init_checkpoint=os.path.join(golden_dir, "albert", "model", "model.ckpt")),
            data_dir=str(tmp_path / "glue"), do_train=True, do_eval=False, do_predict=False,
            train_step=2, train_batch_size=4, save_checkpoints_steps=1, learning_rate=1e-3,
            seed=5, deterministic=True, recompute_grad=recompute_grad)

    albert_classifier.run(args("whole"))
    albert_classifier.run(args("cut"), stop_at_step=1)
    assert not os.path.exists(tmp_path / "cut" / "model.ckpt-2.index")
    albert_classifier.run(args("cut"))
    a = checkpoint_io.read_checkpoint(str(tmp_path / "whole" / "model.ckpt-2"),
                                   include_optimizer=True)
    b = checkpoint_io.read_checkpoint(str(tmp_path / "cut" / "model.ckpt-2"),
                                   include_optimizer=True)
    assert sorted(a) == sorted(b) and int(b["global_step"]) == 2
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    one = checkpoint_io.read_checkpoint(str(tmp_path / "cut" / "model.ckpt-1"))
    name = "bert/encoder/transformer/group_0/inner_group_0/LayerNorm_1/gamma"
    assert not np.array_equal(one[name], b[name])  # the second update moved the block


def test_cached_records_are_rewritten_when_the_data_changes(tmp_path, golden_dir,
                                                            golden_classifier,
                                                            uncased_vocab_file, caplog):
    """Fresh-user finding: a train.tsv edited in place (same row count) was trained on from
    the stale cached records; the fingerprint beside the file now says so and rewrites it."""
    from bert_tf.data.classifier import InputExample
    from bert_tf.albert.tokenization import FullTokenizer
    args = _args(golden_dir, golden_classifier, str(tmp_path), uncased_vocab_file)
    tokenizer = FullTokenizer(uncased_vocab_file, do_lower_case=True)
    path = str(tmp_path / "mrpc_train.tf_record")
    first = [InputExample("a", "the cat sat", "on the mat", "1"),
             InputExample("b", "a dog ran", None, "0")]
    albert_classifier.write_cached_records(first, ["0", "1"], args, tokenizer, path, reuse=True)
    assert os.path.exists(path + ".fingerprint.json")
    mtime = os.stat(path).st_mtime_ns
    albert_classifier.write_cached_records(first, ["0", "1"], args, tokenizer, path, reuse=True)
    assert os.stat(path).st_mtime_ns == mtime  # same data and flags: reused
    changed = [first[0], InputExample("b", "a dog ran", None, "1")]  # one label edited
    albert_classifier.write_cached_records(changed, ["0", "1"], args, tokenizer, path,
                                           reuse=True)
    assert "the examples changed (same count, 2, other content)" in caplog.text
    assert [r["label_ids"] for r in read_examples(path)] == [[1], [1]]


def _stsb_dir(tmp_path, shared_data_dir, rows=10):
    """GLUE folder with STS-B/dev.tsv: the header and the first ``rows`` rows of the real
    file, unchanged; returns (folder, their gold scores as read off the file)."""
    src = os.path.join(shared_data_dir, "STS-B", "dev.tsv")
    if not os.path.exists(src):
        pytest.skip(f"{src} is absent")
    with open(src, encoding="utf-8") as f:
        lines = f.readlines()[:rows + 1]
    folder = tmp_path / "glue" / "STS-B"
    folder.mkdir(parents=True)
    with open(folder / "dev.tsv", "w", encoding="utf-8") as f:
        f.writelines(lines)
    return str(tmp_path / "glue"), [float(l.rstrip("\n").split("\t")[-1]) for l in lines[1:]]


def _numpy_block(text, key):
    """The values of a ``key = [..]`` entry (numpy's str of a 1-D array, maybe wrapped)."""
    import re
    m = re.search(r"^%s = \[([^\]]*)\]$" % key, text, re.M | re.S)
    assert m, key
    return m.group(0)[len(key) + 3:], np.array(m.group(1).split(), np.float64)


def test_stsb_eval_results_hold_pred_and_label_arrays(tmp_path, golden_dir, uncased_vocab_file,
                                                     shared_data_dir):
    """The original's STS-B metric_fn also returns streaming_concat(logits) as ``pred`` and
    streaming_concat(label_ids) as ``label_ids``; its eval_results.txt prints them with str()
    among the sorted keys. The labels are the file's scores; pearson / MSE follow from the
    two arrays (numpy, float64)."""
    data_dir, scores = _stsb_dir(tmp_path, shared_data_dir)
    out = str(tmp_path / "out")
    args = AlbertClassifierArgs(
        task_name="STS-B", data_dir=data_dir, output_dir=out, vocab_file=uncased_vocab_file,
        spm_model_file="", do_lower_case=True, max_seq_length=64, do_eval=True,
        eval_batch_size=4, init_checkpoint=os.path.join(golden_dir, "albert", "model",
                                                        "model.ckpt"),
        albert_config_file=os.path.join(golden_dir, "albert", "model", "albert_config.json"))
    result = albert_classifier.run(args)
    text = _read(os.path.join(out, "eval_results.txt"))
    keys = [line.split(" = ")[0] for line in text.splitlines() if " = " in line]
    assert keys == ["MSE", "eval_loss", "global_step", "label_ids", "loss", "pearson", "pred",
                    "best"]
    label_text, labels = _numpy_block(text, "label_ids")
    assert label_text == str(np.array(scores, np.float32))
    pred_text, pred = _numpy_block(text, "pred")
    (_, results), = result.evaluated
    assert pred_text == str(results["pred"]) and pred.shape == (10,)
    assert float(results["pearson"]) == pytest.approx(np.corrcoef(pred, labels)[0, 1], abs=1e-5)
    assert float(results["MSE"]) == pytest.approx(np.mean((pred - labels) ** 2), abs=1e-5)


@pytest.mark.slow
def test_threshold_to_export_is_served_with_the_predictions(tmp_path, golden_dir,
                                                            golden_classifier,
                                                            uncased_vocab_file):
    """The original's _add_threshold_to_model_fn: output ``threshold`` (float32 scalar) in the
    serving signature, next to the probabilities."""
    import tensorflow as tf
    out = _golden_output_dir(tmp_path, golden_dir, golden_classifier)
    args = dataclasses.replace(
        _args(golden_dir, golden_classifier, out, uncased_vocab_file), do_eval=False,
        do_predict=False, export_dir=str(tmp_path / "export"), threshold_to_export=0.25)
    result = albert_classifier.run(args)
    fn = tf.saved_model.load(result.export_path).signatures["serving_default"]
    ids = tf.constant([[2, 7, 3, 0]], tf.int32)
    served = fn(input_ids=ids, input_mask=tf.cast(ids > 0, tf.int32),
                segment_ids=tf.zeros_like(ids))
    assert sorted(served) == ["logits", "probabilities", "threshold"]
    assert served["threshold"].dtype == tf.float32 and float(served["threshold"]) == 0.25


def test_bad_export_dir_fails_before_training(tmp_path, golden_dir, golden_classifier,
                                              uncased_vocab_file):
    """issue 27 item 7: --export_dir was checked only after training and evaluation had
    written their outputs; now before any work (here a regular file in its place)."""
    blocker = tmp_path / "taken"
    blocker.write_text("a file\n")
    out = str(tmp_path / "out")
    args = dataclasses.replace(
        _args(golden_dir, golden_classifier, out, uncased_vocab_file,
              init_checkpoint=os.path.join(golden_dir, "albert", "model", "model.ckpt")),
        do_train=True, export_dir=str(blocker / "export"))
    with pytest.raises(FlagError, match=f"--export_dir={blocker}/export: cannot create it"):
        albert_classifier.run(args)
    assert not os.path.exists(out) or os.listdir(out) == []


@pytest.mark.parametrize("name,kind", [("mrpc_eval.tf_record", "folder"),
                                       ("submit_results.tsv", "folder"), ("eval", "file")])
def test_an_output_name_of_the_other_kind_is_refused_before_any_work(
        tmp_path, golden_dir, golden_classifier, uncased_vocab_file, name, kind):
    """Issue 27: a folder O/mrpc_eval.tf_record or O/submit_results.tsv, or a file O/eval,
    failed the run only when it wrote there (after the evaluation)."""
    from bert_tf.errors import FlagError
    out = tmp_path / "out"
    out.mkdir()
    (out / name).mkdir() if kind == "folder" else (out / name).write_text("x")
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError) as e:
        albert_classifier.run(_args(golden_dir, golden_classifier, str(out), uncased_vocab_file))
    assert str(e.value) == (f"--output_dir={out}: {out / name} is a {kind}, but the run writes "
                            f"the {written} {name} there; remove or rename that {kind}")
    assert os.listdir(out) == [name]


def test_a_vocabulary_larger_than_the_config_names_its_flag_and_file(tmp_path, golden_dir,
                                                                   golden_classifier,
                                                                   uncased_vocab_file):
    """Fresh round 3 (r3_acls_spm_xlnet): "the vocabulary has 32000 tokens but ..." named
    neither the flag nor the file (run_squad_v1 names --spm_model_file=<path>)."""
    import json
    from bert_tf.errors import ConfigError
    config = json.load(open(os.path.join(golden_dir, "albert", "model", "albert_config.json")))
    small = tmp_path / "albert_config.json"
    small.write_text(json.dumps(dict(config, vocab_size=1000)))
    args = dataclasses.replace(_args(golden_dir, golden_classifier, str(tmp_path / "out"),
                                     uncased_vocab_file), albert_config_file=str(small))
    with pytest.raises(ConfigError) as e:
        albert_classifier.check_args(args)
    assert str(e.value) == (f"--vocab_file={uncased_vocab_file} has 30522 tokens but {small} "
                            "says vocab_size=1000")


def test_bfloat16_eval_and_predict_hold_kernels_in_bfloat16_near_the_golden(
        tmp_path, golden_dir, golden_classifier, uncased_vocab_file):
    """An ALBERT run that only evaluates and predicts with ``--dtype=bfloat16`` (issue 25): the
    shared block's dense kernels are bfloat16 variables cast once from the float32
    checkpoint, the embeddings float32; the probabilities stay within bfloat16 reach (8
    significant bits in the matmul inputs) of the original's float32 golden."""
    out = _golden_output_dir(tmp_path, golden_dir, golden_classifier)
    result = albert_classifier.run(_args(golden_dir, golden_classifier, out, uncased_vocab_file,
                                         dtype="bfloat16"))
    names = result.model.name_map()
    kernel = [n for n in names if n.endswith("ffn_1/intermediate/dense/kernel")]
    assert kernel and all(names[n].dtype == tf.bfloat16 for n in kernel)
    assert names["bert/embeddings/word_embeddings"].dtype == tf.float32
    mine = np.loadtxt(os.path.join(out, "test_results.tsv"), delimiter="\t")
    theirs = np.loadtxt(os.path.join(golden_classifier, "test_results.tsv"), delimiter="\t")
    np.testing.assert_allclose(mine, theirs, atol=0.005, rtol=0)  # measured: 0.00047
