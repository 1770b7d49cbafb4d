"""XLNet run_classifier: golden inference end to end, a short real STS-B run (original
outputs, original-layout checkpoints, resume), warm start, and bad input."""
import dataclasses
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from bert_tf import flags as bert_flags
from bert_tf.data import tfrecord
from bert_tf.xlnet.data import classifier_records as records
from bert_tf.errors import CheckpointError, ConfigError, FlagError
from bert_tf.xlnet.tasks import classifier as xc
from bert_tf import checkpoint_io
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import XLNetConfig
from tests.training.event_files import read_scalars

TINY_CONFIG = {"n_layer": 2, "d_model": 16, "n_head": 2, "d_head": 8, "d_inner": 32,
               "ff_activation": "gelu", "untie_r": True, "n_token": 8000}
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
STSB_HEADER = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
               "sentence2\tscore\n")
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


@pytest.fixture(scope="module")
def golden(golden_dir):
    folder = os.path.join(golden_dir, "xlnet", "tiny_random")
    with np.load(os.path.join(folder, "outputs.npz")) as d:
        outputs = dict(d)
    with open(os.path.join(folder, "outputs_texts.json"), encoding="utf-8") as f:
        texts = json.load(f)
    return {"folder": folder, "config": os.path.join(folder, "xlnet_config.json"),
            "ckpt": os.path.join(folder, "xlnet_model.ckpt"), "outputs": outputs, "texts": texts,
            "spiece": os.path.join(golden_dir, "xlnet", "spiece.model")}


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _json(path, obj):
    _write(path, json.dumps(obj))
    return path


def _args(tmp_path, **kw):
    base = dict(output_dir=str(tmp_path / "proc"), model_dir=str(tmp_path / "model"),
                predict_dir=str(tmp_path / "pred"), data_dir=str(tmp_path / "data"))
    base.update(kw)
    return xc.XLNetClassifierArgs(**base)


def _listing(folder):
    if not os.path.isdir(folder):
        return {}
    return {f: open(os.path.join(folder, f), "rb").read() for f in sorted(os.listdir(folder))}


# ---------------------------------------------------------------------------------------------
# Golden inference: the original model's pooled output through our run_classifier
# ---------------------------------------------------------------------------------------------

def _golden_head_checkpoint(golden, model_dir, scope, n_out):
    """The golden checkpoint plus a logit head with fixed values, as model.ckpt-0."""
    arrays = checkpoint_io.read_checkpoint(golden["ckpt"])
    rng = np.random.RandomState(0)
    kernel = rng.normal(0, 0.5, [64, n_out]).astype(np.float32)
    bias = rng.normal(0, 0.5, [n_out]).astype(np.float32)
    arrays[f"model/{scope}/logit/kernel"] = kernel
    arrays[f"model/{scope}/logit/bias"] = bias
    arrays["global_step"] = np.int64(0)
    checkpoint_io.write_checkpoint(os.path.join(model_dir, "model.ckpt-0"), arrays)
    return kernel.astype(np.float64), bias.astype(np.float64)


@pytest.mark.parametrize("task", ["mrpc", "sts-b"])
def test_golden_pooled_output_through_eval_and_predict(golden, tmp_path, task):
    """The 3 pairs of golden batch0 (max_seq_length 32, cased) as dev set: logits are the
    original's pooled output (summary 'last' + projection) times a fixed head; eval metrics and
    the prediction files follow from them by hand."""
    pairs = golden["texts"][0]
    pooled = golden["outputs"]["batch0/pooled_last_proj"].astype(np.float64)
    regression = task == "sts-b"
    if regression:
        labels = [4.0, 1.5, 3.25]
        rows = "".join(f"{i}\tg\tf\ty\to\ts\ts\t{a}\t{b}\t{y}\n"
                       for i, ((a, b), y) in enumerate(zip(pairs, labels)))
        _write(str(tmp_path / "data" / "dev.tsv"), STSB_HEADER + rows)
    else:
        labels = [1, 0, 1]
        rows = "".join(f"{y}\t{i}\t{i}\t{a}\t{b}\n"
                       for i, ((a, b), y) in enumerate(zip(pairs, labels)))
        _write(str(tmp_path / "data" / "dev.tsv"), MRPC_HEADER + rows)
    model_dir = str(tmp_path / "model")
    scope = "regression_sts-b" if regression else "classification_mrpc"
    kernel, bias = _golden_head_checkpoint(golden, model_dir, scope, 1 if regression else 2)
    args = _args(tmp_path, model_config_path=golden["config"], spiece_model_file=golden["spiece"],
                 task_name=task.upper(), is_regression=regression, do_eval=True, do_predict=True,
                 max_seq_length=32, eval_batch_size=2, predict_batch_size=2, dropout=0.0,
                 dropatt=0.0)
    result = xc.run(args)

    expected = pooled @ kernel + bias  # [3, n_out]
    with open(tmp_path / "pred" / f"{task}.logits.json") as f:
        logits = json.load(f)
    np.testing.assert_allclose(np.array(logits), expected, atol=2e-5)
    with open(tmp_path / "pred" / f"{task}.tsv") as f:
        tsv = f.read().splitlines()
    assert tsv[0] == "index\tprediction" and len(tsv) == 4
    y = np.array(labels, np.float64)
    best = result.best_eval
    if regression:
        assert [line.split("\t") for line in tsv[1:]] == [
            [str(i), str(v[0])] for i, v in enumerate(logits)]
        assert best["eval_loss"] == pytest.approx(np.mean((expected[:, 0] - y) ** 2), rel=1e-4)
        assert best["eval_pearsonr"] == pytest.approx(np.corrcoef(expected[:, 0], y)[0, 1],
                                                      abs=1e-4)
    else:
        assert [line.split("\t")[1] for line in tsv[1:]] == [
            "1" if v[1] - v[0] > 0 else "0" for v in expected]
        log_probs = expected - np.log(np.exp(expected).sum(1, keepdims=True))
        assert best["eval_loss"] == pytest.approx(-np.mean(log_probs[[0, 1, 2], labels]), rel=1e-4)
        assert best["eval_accuracy"] == pytest.approx(np.mean(expected.argmax(1) == y))
    assert best["global_step"] == 0 and best["step"] == 0
    # 3 examples padded to 4 for eval (weight 0), 3 for predict; file names as the original.
    proc = tmp_path / "proc"
    eval_records = list(tfrecord.read_examples(
        str(proc / "spiece.model.len-32.dev.eval.tf_record")))
    assert [r["is_real_example"] for r in eval_records] == [[1], [1], [1], [0]]
    assert len(list(tfrecord.read_examples(
        str(proc / "spiece.model.len-32.dev.predict.tf_record")))) == 3
    np.testing.assert_array_equal(  # the original layout: golden input ids of batch0
        np.array([r["input_ids"] for r in eval_records[:3]]),
        golden["outputs"]["batch0/input_ids"].T)
    with open(tmp_path / "model" / "eval_results.txt") as f:
        lines = f.read().splitlines()
    keys = ["eval_loss", "eval_pearsonr" if regression else "eval_accuracy", "global_step", "loss",
            "path", "step"]
    assert [line.split(" = ")[0] for line in lines] == sorted(keys)


def test_use_bfloat16_eval_and_predict_hold_the_kernels_in_bfloat16(golden, tmp_path,
                                                                      monkeypatch, caplog):
    """Issue 25: an eval + predict run with --use_bfloat16 holds the model's matmul kernels in
    bfloat16, cast once from the float32 checkpoint at the restore (one INFO line says so),
    and writes the same logits, bit for bit, as the mixed_bfloat16 model that casts them on
    every call; both within bfloat16 reach of the original's float32 pooled output (measured
    0.020 on EPYC family 26)."""
    pairs = golden["texts"][0]
    rows = "".join(f"{y}\t{i}\t{i}\t{a}\t{b}\n" for i, ((a, b), y) in enumerate(zip(pairs, [1, 0, 1])))
    _write(str(tmp_path / "data" / "dev.tsv"), MRPC_HEADER + rows)
    kernel, bias = _golden_head_checkpoint(golden, str(tmp_path / "model"), "classification_mrpc", 2)
    expected = golden["outputs"]["batch0/pooled_last_proj"].astype(np.float64) @ kernel + bias

    loads = []
    real_load = checkpoint_map.load_xlnet_checkpoint
    monkeypatch.setattr(checkpoint_map, "load_xlnet_checkpoint",
                        lambda *a, **k: loads.append(a[1]) or real_load(*a, **k))

    def logits(pred):
        args = _args(tmp_path, model_config_path=golden["config"],
                     spiece_model_file=golden["spiece"], task_name="MRPC", do_eval=True,
                     do_predict=True, max_seq_length=32, eval_batch_size=2,
                     predict_batch_size=2, use_bfloat16=True, predict_dir=str(tmp_path / pred))
        loads.clear()
        xc.run(args)
        # the build, the evaluation and the prediction read the one checkpoint once
        assert len(loads) == 1, loads
        with open(tmp_path / pred / "mrpc.logits.json") as f:
            return np.array(json.load(f))

    with caplog.at_level(logging.INFO):
        held = logits("held")
    assert "variables stored as float32" in caplog.text and "cast to bfloat16" in caplog.text
    from bert_tf.xlnet import layers
    monkeypatch.setattr(layers, "matmul_weight_dtype", lambda: None)  # the per-call casts
    np.testing.assert_array_equal(held, logits("per_call"))
    assert 0 < np.abs(held - expected).max() < 0.05


def test_predicting_with_a_pretrained_checkpoint_says_the_head_is_missing(golden, tmp_path):
    """--predict_ckpt of a pre-trained checkpoint (no classification head): the error names the
    head's variables and says to fine-tune first, not "does the config match it?" (a user's
    report)."""
    pairs = golden["texts"][0]
    rows = "".join(f"1\t{i}\t{i}\t{a}\t{b}\n" for i, (a, b) in enumerate(pairs))
    _write(str(tmp_path / "data" / "dev.tsv"), MRPC_HEADER + rows)
    args = _args(tmp_path, model_config_path=golden["config"], spiece_model_file=golden["spiece"],
                 task_name="MRPC", do_predict=True, max_seq_length=32,
                 predict_ckpt=golden["ckpt"])
    with pytest.raises(CheckpointError) as e:
        xc.run(args)
    assert str(e.value) == (
        f"{golden['ckpt']}: model variables missing from the checkpoint: "
        "model/classification_mrpc/logit/kernel, model/classification_mrpc/logit/bias; a "
        "pre-trained checkpoint without this task's head? Fine-tune first (--do_train), or "
        "give a fine-tuned checkpoint")
    assert not os.path.exists(tmp_path / "pred")


# ---------------------------------------------------------------------------------------------
# A short real run: STS-B rows, the golden SentencePiece model, a tiny config from scratch
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def stsb_subset(shared_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("stsb")
    for name, n in (("train.tsv", 40), ("dev.tsv", 20), ("test.tsv", 6)):
        with open(os.path.join(shared_data_dir, "STS-B", name), encoding="utf-8") as f:
            lines = f.readlines()[:n + 1]
        if name == "train.tsv":  # special symbols written literally: kept and reported
            lines.append("9999\tx\tx\tx\tx\tnone\tnone\tA <cls> is here.\tThe end.<eop>\t2.5\n")
        _write(os.path.join(folder, name), "".join(lines))
    return str(folder)


def test_short_stsb_run_writes_the_original_outputs_and_resumes(golden, stsb_subset, tmp_path,
                                                                caplog):
    config = _json(str(tmp_path / "xlnet_config.json"), TINY_CONFIG)
    common = dict(model_config_path=config, spiece_model_file=golden["spiece"],
                  data_dir=stsb_subset, task_name="sts-b", is_regression=True, max_seq_length=32,
                  train_batch_size=8, eval_batch_size=8, predict_batch_size=8, learning_rate=1e-3)
    args = _args(tmp_path, do_train=True, do_eval=True, do_predict=True, train_steps=4,
                 save_steps=2, eval_all_ckpt=True, **common)
    with caplog.at_level(logging.WARNING):
        result = xc.run(args)
    assert "example train-41, text_a contains '<cls>' written literally" in caplog.text
    assert "example train-41, text_b contains '<eop>' written literally: encoded as the symbol" \
        in caplog.text
    train_records = list(tfrecord.read_examples(
        str(tmp_path / "proc" / "spiece.model.len-32.train.tf_record")))
    assert len(train_records) == 41 and [2.5] in [r["label_ids"] for r in train_records]

    model_dir = tmp_path / "model"
    assert result.train.global_step == 4
    assert [s for s, _ in checkpoint_io.step_checkpoints(str(model_dir))] == [2, 4]
    stored = checkpoint_io.list_checkpoint(str(model_dir / "model.ckpt-4"))
    model_names = [n for n in stored if not checkpoint_io.is_optimizer_entry(n)]
    assert len(model_names) == 5 + 13 * 2 + 2 + 2  # transformer, layers, summary, head
    assert stored["model/regression_sts-b/logit/kernel"] == ((16, 1), "float32")
    assert stored["model/sequnece_summary/summary/kernel"] == ((16, 16), "float32")
    assert stored["model/transformer/r_w_bias"][0] == (2, 2, 8)  # untie_r: per layer
    for n in model_names:
        assert stored[n + "/Adam"] == stored[n] and stored[n + "/Adam_1"] == stored[n]
    reader = tf.train.load_checkpoint(str(model_dir / "model.ckpt-4"))
    assert reader.get_tensor("global_step") == 4 and stored["global_step"][1] == "int64"
    assert reader.get_tensor("beta1_power") == pytest.approx(0.9 ** 5)
    assert reader.get_tensor("beta2_power") == pytest.approx(0.999 ** 5)

    # eval of both checkpoints; the last one (also used by predict) checked by hand.
    assert [r["step"] for r in result.eval_results] == [2, 4]
    last = result.eval_results[-1]
    with open(tmp_path / "pred" / "sts-b.logits.json") as f:
        logits = np.array(json.load(f), np.float64)[:, 0]
    with open(os.path.join(stsb_subset, "dev.tsv"), encoding="utf-8") as f:
        y = np.array([float(line.split("\t")[9]) for line in f.read().splitlines()[1:]])
    assert len(logits) == len(y) == 20
    assert last["eval_loss"] == pytest.approx(np.mean((logits - y) ** 2), rel=1e-5)
    assert last["eval_pearsonr"] == pytest.approx(np.corrcoef(logits, y)[0, 1], abs=1e-5)
    best = max(result.eval_results, key=lambda r: r["eval_pearsonr"])
    with open(model_dir / "eval_results.txt") as f:
        assert f"eval_pearsonr = {best['eval_pearsonr']}" in f.read().splitlines()
    # TensorBoard (issue 15 item 8): each evaluated checkpoint at its step in eval/
    scalars = read_scalars(str(model_dir / "eval"))
    assert sorted(scalars["eval_pearsonr"]) == [2, 4] and "step" not in scalars
    assert scalars["eval_pearsonr"][4] == pytest.approx(last["eval_pearsonr"], rel=1e-6)
    assert 4 in read_scalars(str(model_dir))["loss"]

    # resume: a second run continues from model.ckpt-4; max_save=0 keeps every checkpoint.
    again = xc.run(_args(tmp_path, do_train=True, train_steps=6, save_steps=2, **common))
    assert again.train.resumed_from.endswith("model.ckpt-4") and again.train.global_step == 6
    assert [s for s, _ in checkpoint_io.step_checkpoints(str(model_dir))] == [2, 4, 6]


def test_warm_start_loads_the_pretrained_weights(golden, tmp_path, stsb_subset):
    """learning_rate 0: the fine-tuned checkpoint holds the init_checkpoint's values."""
    args = _args(tmp_path, model_config_path=golden["config"], spiece_model_file=golden["spiece"],
                 data_dir=stsb_subset, task_name="sts-b", is_regression=True, max_seq_length=16,
                 train_batch_size=4, do_train=True, train_steps=1, learning_rate=0.0,
                 init_checkpoint=golden["ckpt"])
    xc.run(args)
    original = checkpoint_io.read_checkpoint(golden["ckpt"])
    tuned = checkpoint_io.read_checkpoint(str(tmp_path / "model" / "model.ckpt-1"))
    for name in ("model/transformer/word_embedding/lookup_table", "model/transformer/r_w_bias",
                 "model/transformer/layer_1/ff/layer_2/kernel",
                 "model/sequnece_summary/summary/bias"):
        np.testing.assert_array_equal(tuned[name], original[name])
    assert "model/regression_sts-b/logit/kernel" in tuned
    assert "model/lm_loss/bias" not in tuned and "model/transformer/mask_emb/mask_emb" not in tuned


# ---------------------------------------------------------------------------------------------
# Bad input: clear messages, nothing written, nothing lost
# ---------------------------------------------------------------------------------------------

@pytest.fixture()
def stsb_args(golden, tmp_path):
    _write(str(tmp_path / "data" / "train.tsv"),
           STSB_HEADER + "0\tg\tf\ty\to\ts\ts\tA man.\tA dog.\t1.0\n")
    return dict(spiece_model_file=golden["spiece"], task_name="sts-b", is_regression=True,
                do_train=True, max_seq_length=16, train_steps=1)


def test_checkpoint_of_the_other_untie_r_setting(golden, tmp_path, stsb_args):
    config = dict(json.load(open(golden["config"])), untie_r=False)
    args = _args(tmp_path, model_config_path=_json(str(tmp_path / "c.json"), config),
                 init_checkpoint=golden["ckpt"], **stsb_args)
    with pytest.raises(CheckpointError) as e:
        xc.run(args)
    msg = str(e.value)
    assert "trained with untie_r=true" in msg and "config says untie_r=false" in msg
    assert "model/transformer/r_w_bias has shape [2, 4, 16]" in msg
    assert not os.path.exists(tmp_path / "proc") and not os.path.exists(tmp_path / "model")


def test_existing_checkpoints_survive_a_bad_run(golden, tmp_path, stsb_args):
    model_dir = str(tmp_path / "model")
    _golden_head_checkpoint(golden, model_dir, "regression_sts-b", 1)
    before = _listing(model_dir)
    config = dict(json.load(open(golden["config"])), untie_r=False)
    args = _args(tmp_path, model_config_path=_json(str(tmp_path / "c.json"), config),
                 **dict(stsb_args, do_eval=True))
    with pytest.raises(CheckpointError, match="untie_r"):
        xc.run(args)
    assert _listing(model_dir) == before and not os.path.exists(tmp_path / "proc")


def test_n_token_must_match_the_spiece_model(golden, tmp_path, stsb_args):
    config = dict(TINY_CONFIG, n_token=32000)
    args = _args(tmp_path, model_config_path=_json(str(tmp_path / "c.json"), config), **stsb_args)
    with pytest.raises(ConfigError) as e:
        xc.run(args)
    assert f"{golden['spiece']} has 8000 pieces but {tmp_path / 'c.json'} says n_token=32000" \
        in str(e.value)
    assert not os.path.exists(tmp_path / "proc")


def test_bert_checkpoint_and_config_are_named(tmp_path, stsb_args, shared_data_dir):
    bert_dir = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining")
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    args = _args(tmp_path, model_config_path=config,
                 init_checkpoint=os.path.join(bert_dir, "bert_model.ckpt"), **stsb_args)
    with pytest.raises(CheckpointError, match=r"looks like a BERT checkpoint \(it has bert/"):
        xc.run(args)
    args = _args(tmp_path, model_config_path=os.path.join(bert_dir, "bert_config.json"),
                 **stsb_args)
    with pytest.raises(ConfigError, match="looks like a BERT config"):
        xc.run(args)
    assert not os.path.exists(tmp_path / "proc")


def test_eval_on_the_test_split_says_the_metrics_are_not_meaningful(golden, tmp_path, stsb_args,
                                                                    caplog):
    # a new user's --do_eval --eval_split=test gave eval_accuracy 0.0 without a word (test.tsv
    # has no labels; the processor gives each example the first label, as the original)
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    with caplog.at_level(logging.WARNING):
        xc.check_args(_args(tmp_path, model_config_path=config,
                            **dict(stsb_args, do_eval=True, eval_split="test")))
    assert "--do_eval --eval_split=test: a GLUE test.tsv has no labels" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        xc.check_args(_args(tmp_path, model_config_path=config,
                            **dict(stsb_args, do_eval=True, eval_split="dev")))
    assert "eval_split" not in caplog.text


def test_flag_errors(golden, tmp_path, stsb_args):
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    with pytest.raises(FlagError, match="sts-b is a regression task: pass --is_regression=True"):
        xc.run(_args(tmp_path, model_config_path=config, **dict(stsb_args, is_regression=False)))
    with pytest.raises(FlagError, match="At least one of"):
        xc.run(_args(tmp_path, model_config_path=config, **dict(stsb_args, do_train=False)))
    with pytest.raises(FlagError, match="--predict_dir is required"):
        xc.run(_args(tmp_path, model_config_path=config, predict_dir=None,
                     **dict(stsb_args, do_predict=True)))
    ckpt_dir = tmp_path / "pretrained"
    with pytest.raises(FlagError, match="is the folder of --init_checkpoint"):
        xc.run(_args(tmp_path, model_config_path=config, model_dir=str(ckpt_dir),
                     init_checkpoint=str(ckpt_dir / "xlnet_model.ckpt"), **stsb_args))
    with pytest.raises(CheckpointError, match="no checkpoint to evaluate"):
        xc.run(_args(tmp_path, model_config_path=config, **dict(stsb_args, do_train=False,
                                                                do_eval=True)))
    # a new user's --adam_epsilon=0 (and --clip=-1, --weight_decay=-1) was refused only when
    # the optimizer was built, after the records were written
    for flag, value, message in (("adam_epsilon", 0.0, "must be > 0"), ("clip", -1.0, "must be > 0"),
                                 ("weight_decay", -1.0, "must be >= 0")):
        out = tmp_path / f"out_{flag}"
        with pytest.raises(FlagError, match=f"^--{flag}={value}: {message}$"):
            xc.run(_args(tmp_path, model_config_path=config, output_dir=str(out),
                         **dict(stsb_args, **{flag: value})))
        assert not out.exists()


def _cached_file(path, labels, real=None, seq=16):
    """A cached TFRecord as XLNet's run_classifier writes it: one record per label (int
    labels -> int64_list, float -> float_list), ``real`` is_real_example flags (default all)."""
    from bert_tf.xlnet.data import classifier as xdata
    from bert_tf.data.classifier import InputFeatures
    os.makedirs(os.path.dirname(path), exist_ok=True)
    real = [True] * len(labels) if real is None else real
    with tfrecord.AtomicTFRecordWriter(path) as writer:
        for label, is_real in zip(labels, real):
            feature = InputFeatures([5] * seq, [0] * seq, [0] * seq, label, is_real)
            writer.write(xdata.feature_to_example(feature, regression=isinstance(label, float)))
    return path


def test_stale_cached_train_file_of_other_data_is_an_error(golden, tmp_path, stsb_args):
    """The user's case: a cached train file of another run (16 records) in --output_dir would
    be reused for this run's data (1 example): FlagError before anything is written."""
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    cached = _cached_file(str(tmp_path / "proc" / "spiece.model.len-16.train.tf_record"),
                          [float(i % 5) for i in range(16)])
    before = _listing(str(tmp_path / "proc"))
    with pytest.raises(FlagError) as e:
        xc.run(_args(tmp_path, model_config_path=config, **stsb_args))
    assert str(e.value) == (
        f"--output_dir: the cached {cached} does not fit this run (it would be reused): it "
        "holds 16 records, this run has 1 train examples; it was written for another task or "
        "data set: pass --overwrite_data=True to rewrite it, or another --output_dir")
    with pytest.raises(FlagError, match=r"holds 16 records, this run has 1 train examples x "
                                        r"--num_passes=2 = 2 records"):
        xc.run(_args(tmp_path, model_config_path=config, **dict(stsb_args, num_passes=2)))
    assert _listing(str(tmp_path / "proc")) == before
    assert not os.path.exists(tmp_path / "model")


def test_cached_train_file_with_int_labels_for_sts_b(golden, tmp_path, stsb_args):
    """An MRPC train file (int labels) with the same record count, reused for sts-b: the
    original crashed deep in TF (label_ids int64 vs float)."""
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    cached = _cached_file(str(tmp_path / "proc" / "spiece.model.len-16.train.tf_record"), [1])
    with pytest.raises(FlagError) as e:
        xc.run(_args(tmp_path, model_config_path=config, **stsb_args))
    assert str(e.value).startswith(
        f"--output_dir: the cached {cached} does not fit this run (it would be reused): it "
        "holds int labels but --task_name=sts-b is a regression task (float labels); it was "
        "written for another task or data set: pass --overwrite_data=True")
    assert not os.path.exists(tmp_path / "model")


def test_cached_file_checks(tmp_path):
    """check_cached_records directly: what fits is reused, what differs names the difference."""
    stsb = _args(tmp_path, task_name="sts-b", is_regression=True, eval_batch_size=2)
    mrpc = _args(tmp_path, task_name="mrpc", eval_batch_size=2)
    check = records.check_cached_records
    check(str(tmp_path / "absent.tf_record"), "train", stsb, 7, 1)  # nothing cached
    floats = _cached_file(str(tmp_path / "f.tf_record"), [1.0, 2.5, 0.0])
    check(floats, "train", stsb, 3, 1)
    check(floats, "train", dataclasses.replace(stsb, num_passes=3), 1, 1)  # 1 example x 3
    check(floats, "train", dataclasses.replace(mrpc, overwrite_data=True), 9, 2)  # rewritten
    with pytest.raises(FlagError, match=r"holds float labels \(a regression task's\) but "
                                        r"--task_name=mrpc is a classification task"):
        check(floats, "train", mrpc, 3, 2)
    # eval: 3 real + 1 padding (eval_batch_size 2, as the original pads for the TPU).
    padded = _cached_file(str(tmp_path / "e.tf_record"), [1, 0, 1, 0], [True] * 3 + [False])
    check(padded, "eval", mrpc, 3, 2)
    check(padded, "eval", dataclasses.replace(mrpc, eval_batch_size=4), 3, 2)
    check(padded, "predict", mrpc, 3, 2)  # padding rows are never predicted
    with pytest.raises(FlagError, match=r"it holds 4 records \(3 real \+ 1 padding\), this run "
                                        r"has 5 dev examples"):
        check(padded, "eval", mrpc, 5, 2, "dev")
    with pytest.raises(FlagError, match=r"it holds 4 records \(3 real \+ 1 padding\), not a "
                                        r"multiple of --eval_batch_size=3 \(the last batch would "
                                        r"be dropped\)"):
        check(padded, "eval", dataclasses.replace(mrpc, eval_batch_size=3), 3, 2)
    with pytest.raises(FlagError, match=r"it holds 4 records \(3 real \+ 1 padding\), this run "
                                        r"has 2 test examples"):
        check(padded, "predict", mrpc, 2, 2, "test")
    # An MNLI-style file (labels 0..2) reused for a 2-label task with the same count.
    three = _cached_file(str(tmp_path / "m.tf_record"), [0, 2, 1])
    with pytest.raises(FlagError, match=r"it holds label id 2 but --task_name=mrpc has 2 labels"):
        check(three, "train", mrpc, 3, 2)
    bad = tmp_path / "bad.tf_record"
    bad.write_text("not a TFRecord at all\n")
    # (issue 27 item 2: the framing is read first, and names the damaged record)
    with pytest.raises(FlagError, match=rf"the cached {bad} does not fit this run .*record 0 "
                                        r"has a damaged header \(byte 0 of 22\)"):
        check(str(bad), "train", mrpc, 3, 2)


def _flag_values(argv):
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_string("model_config_path", None, "", flag_values=fv)
    absl_flags.DEFINE_float("learning_rate", 5e-5, "", flag_values=fv)      # BERT's default
    absl_flags.DEFINE_integer("train_batch_size", 32, "", flag_values=fv)
    absl_flags.DEFINE_integer("eval_batch_size", 8, "", flag_values=fv)
    absl_flags.DEFINE_bool("do_lower_case", True, "", flag_values=fv)
    absl_flags.DEFINE_string("vocab_file", None, "", flag_values=fv)
    fv(["prog"] + argv)
    return fv


def test_shared_flags_take_the_xlnet_defaults_unless_given():
    fv = _flag_values(["--model_config_path=c.json", "--train_batch_size=4"])
    assert bert_flags.is_xlnet_invocation(fv)
    args = bert_flags.args_from_flags(xc.XLNetClassifierArgs, fv)
    assert args.learning_rate == 1e-5 and args.eval_batch_size == 128   # XLNet's defaults
    assert args.train_batch_size == 4 and args.model_config_path == "c.json"
    assert not bert_flags.is_xlnet_invocation(_flag_values([]))
    with pytest.raises(FlagError, match=r"--vocab_file \(use --spiece_model_file\), "
                                        r"--do_lower_case \(use --uncased\)"):
        bert_flags.check_no_bert_only_flags(_flag_values(["--vocab_file=v.txt", "--do_lower_case=false"]))
    bert_flags.check_no_bert_only_flags(_flag_values(["--model_config_path=c.json"]))


@pytest.mark.slow  # heavy (10-20 s); run with -m slow
def test_root_script_dispatches_on_the_xlnet_flags(golden, tmp_path):
    """run_classifier.py with XLNet's original flags runs the XLNet path (eval + predict of a
    checkpoint in --model_dir); a BERT-only flag next to them is a one-line error."""
    pairs = golden["texts"][0]
    rows = "".join(f"{i}\tg\tf\ty\to\ts\ts\t{a}\t{b}\t{y}\n"
                   for i, ((a, b), y) in enumerate(zip(pairs, [4.0, 1.5, 3.25])))
    _write(str(tmp_path / "data" / "dev.tsv"), STSB_HEADER + rows)
    _golden_head_checkpoint(golden, str(tmp_path / "model"), "regression_sts-b", 1)
    cmd = [sys.executable, os.path.join(REPO_ROOT, "run_classifier.py"), "--do_eval=True",
           "--do_predict=True", "--task_name=sts-b", "--is_regression=True",
           f"--data_dir={tmp_path / 'data'}", f"--output_dir={tmp_path / 'proc'}",
           f"--model_dir={tmp_path / 'model'}", f"--predict_dir={tmp_path / 'pred'}",
           f"--model_config_path={golden['config']}", f"--spiece_model_file={golden['spiece']}",
           "--max_seq_length=32", "--uncased=False"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "eval: eval_loss = " in proc.stdout and "eval_pearsonr = " in proc.stdout
    assert "wrote 3 predictions to" in proc.stdout
    assert (tmp_path / "pred" / "sts-b.tsv").exists()
    # eval_batch_size: XLNet's default 128 (BERT's is 8): 3 examples padded to 128.
    records = list(tfrecord.read_examples(
        str(tmp_path / "proc" / "spiece.model.len-32.dev.eval.tf_record")))
    assert len(records) == 128
    proc = subprocess.run(cmd + ["--do_lower_case=False"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 1 and "--do_lower_case (use --uncased)" in proc.stderr


def test_changed_data_with_the_same_row_count_rewrites_the_cached_records(golden, tmp_path,
                                                                          stsb_args, caplog):
    """issue 15 item 4: the original (and the record checks: same count, same label type)
    reused the train records of the old text."""
    from bert_tf.xlnet.data import classifier as xdata
    config = _json(str(tmp_path / "c.json"), TINY_CONFIG)
    args = _args(tmp_path, model_config_path=config, **stsb_args)

    def prepared():
        r = xc._prepare(args, tf.distribute.get_strategy())
        xc._read_examples(r)
        return r

    r = prepared()
    xc._wrote(r, r.train_file, xdata.file_based_convert_examples_to_features(
        r.train_examples, r.label_list, args.max_seq_length, r.tokenize, r.train_file))
    assert os.path.exists(r.train_file + ".fingerprint.json")
    assert os.path.basename(r.train_file) == "spiece.model.len-16.train.tf_record"
    prepared()  # the same data: reused
    assert os.path.exists(r.train_file)
    _write(str(tmp_path / "data" / "train.tsv"),
           STSB_HEADER + "0\tg\tf\ty\to\ts\ts\tA cat.\tA dog.\t1.0\n")  # one row, as before
    with caplog.at_level(logging.INFO):
        prepared()
    assert not os.path.exists(r.train_file)
    assert (f"the cached {r.train_file} was written for other data or flags (the examples "
            "changed (same count, 1, other content)): writing it again") in caplog.text


@pytest.mark.slow  # heavy (10-20 s); run with -m slow
def test_use_bfloat16_trains_with_mixed_bfloat16_and_keeps_float32_checkpoints(
        golden, tmp_path, stsb_args):
    """Issue 17 deliverable 4: --use_bfloat16 is Keras' mixed_bfloat16 policy; the variables,
    and so the checkpoint (the original's dtypes), stay float32."""
    args = _args(tmp_path, model_config_path=golden["config"], use_bfloat16=True,
                 train_batch_size=1, **stsb_args)
    model = xc.build_classifier(XLNetConfig.from_json_file(golden["config"]), args, 1, True)
    assert model.xlnet.dtype_policy.name == "mixed_bfloat16"
    xc.run(args)
    reader = tf.train.load_checkpoint(str(tmp_path / "model" / "model.ckpt-1"))
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["model/transformer/word_embedding/lookup_table"] == tf.float32
    assert dtypes["model/regression_sts-b/logit/kernel"] == tf.float32
    assert dtypes["model/transformer/layer_0/ff/layer_1/kernel"] == tf.float32


@pytest.mark.parametrize("flag,name,kind", [
    ("output_dir", "spiece.model.len-16.train.tf_record", "folder"),  # read as a cache first
    ("model_dir", "eval", "file"), ("model_dir", "eval_results.txt", "folder")])
def test_an_output_name_of_the_other_kind_is_refused_before_any_work(golden, tmp_path, stsb_args,
                                                                     flag, name, kind):
    """Issue 27: a folder named like the training records (an IsADirectoryError traceback
    when read as a cache), a file model_dir/eval or a folder model_dir/eval_results.txt
    (failed after the evaluation) are refused before any work."""
    folder = tmp_path / {"output_dir": "proc", "model_dir": "model"}[flag]
    folder.mkdir()
    (folder / name).mkdir() if kind == "folder" else (folder / name).write_text("x")
    args = _args(tmp_path, model_config_path=_json(str(tmp_path / "c.json"), TINY_CONFIG),
                 **dict(stsb_args, do_eval=True))
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError) as e:
        xc.run(args)
    assert str(e.value) == (f"--{flag}={folder}: {folder / name} is a {kind}, but the run "
                            f"writes the {written} {name} there; remove or rename that {kind}")
    assert os.listdir(folder) == [name]
