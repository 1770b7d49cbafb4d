"""run_pretraining: losses and metrics against the ORIGINAL code's outputs, training,
original-layout checkpoints, eval_results.txt, resume, and bad-input errors.

Expected values come from the goldens (`tests/golden/bert/tiny_random/outputs.npz`, written by
the original `modeling.py` + `run_pretraining.get_masked_lm_output` /
`get_next_sentence_output`; `tests/golden/bert/pretraining_data/`, written by the original
`create_pretraining_data.py`) or from the spec's metric definitions (bert.md 6.3) applied to
those golden arrays in numpy.
"""
import gzip
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert import pretrainer
from bert_tf.bert.config import BertConfig
from bert_tf.data import pretraining_records
from bert_tf.data.tfrecord import AtomicTFRecordWriter, make_example
from bert_tf.errors import BertTfError, ConfigError, FlagError, InputDataError
from bert_tf.bert.tasks.pretraining import PretrainingArgs, build_pretrainer, run as run_pretraining
from bert_tf.run import pretraining
from bert_tf.run.pretraining import EVAL_KEYS, NoModeError
from bert_tf import checkpoint_io
from bert_tf.training.eval_results import format_eval_results

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
LOSS_ATOL = 1e-5
BATCHES = ["b0", "b1", "b2", "b3"]


# ---- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_dir(golden_dir):
    return os.path.join(golden_dir, "bert", "tiny_random")


@pytest.fixture(scope="module")
def tiny_outputs(tiny_dir):
    with np.load(os.path.join(tiny_dir, "outputs.npz")) as d:
        return dict(d)


@pytest.fixture(scope="module")
def golden_tfrecord(golden_dir):
    return os.path.join(golden_dir, "bert", "pretraining_data", "tf_examples.tfrecord")


@pytest.fixture(scope="module")
def golden_records(golden_dir):
    path = os.path.join(golden_dir, "bert", "pretraining_data", "tf_examples.decoded.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def tiny_pretrainer(tiny_dir):
    config = BertConfig.from_json_file(os.path.join(tiny_dir, "bert_config.json"))
    model = build_pretrainer(config, tf.distribute.get_strategy())
    report = checkpoint_io.assign_from_checkpoint(
        model.name_map(), os.path.join(tiny_dir, "bert_model.ckpt"), require_all=True)
    assert len(report.loaded) == 46 and not report.unused  # 39 bert/* + 7 cls/*
    return model


def golden_batch(outputs, batch):
    return {k[len(batch) + 1:]: v for k, v in outputs.items() if k.startswith(batch + "_")}


def spec_metrics(g):
    """Spec 6.3 metrics of one golden batch, from the golden log-probs and losses (numpy)."""
    w = g["masked_lm_weights"].reshape(-1).astype(np.float64)
    ids = g["masked_lm_ids"].reshape(-1)
    mlm_pred = g["mlm_log_probs"].argmax(axis=-1)
    labels = g["next_sentence_labels"].reshape(-1)
    nsp_pred = g["nsp_log_probs"].argmax(axis=-1)
    return {
        "loss": float(g["mlm_loss"]) + float(g["nsp_loss"]),
        "masked_lm_accuracy": float(np.sum(w * (mlm_pred == ids)) / np.sum(w)),
        "masked_lm_loss": float(np.sum(w * g["mlm_per_example_loss"]) / np.sum(w)),
        "next_sentence_accuracy": float(np.mean(nsp_pred == labels)),
        "next_sentence_loss": float(np.mean(g["nsp_per_example_loss"])),
    }


def write_records(path, rows):
    """Writes feature dicts as pre-training Examples (int64 lists, float masked_lm_weights)."""
    with AtomicTFRecordWriter(str(path)) as writer:
        for row in rows:
            ints = {k: [int(x) for x in np.ravel(row[k])] for k in
                    ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                     "masked_lm_ids", "next_sentence_labels")}
            writer.write(make_example(ints, {"masked_lm_weights":
                                             [float(x) for x in np.ravel(row["masked_lm_weights"])]}))
    return str(path)


def batch_rows(g):
    return [{k: g[k][i] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                                  "masked_lm_ids", "masked_lm_weights")}
            | {"next_sentence_labels": [g["next_sentence_labels"][i]]}
            for i in range(g["input_ids"].shape[0])]


def read_eval_results(output_dir):
    with open(os.path.join(output_dir, "eval_results.txt"), encoding="utf-8") as f:
        text = f.read()
    pairs = [line.split(" = ") for line in text.splitlines()]
    return text, {k: v for k, v in pairs}


def tiny_config_file(tmp_path, **overrides):
    config = dict(vocab_size=30522, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.1,
                  attention_probs_dropout_prob=0.1, max_position_embeddings=128,
                  type_vocab_size=2, initializer_range=0.02)
    config.update(overrides)
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(config))
    return str(path)


# ---- losses and metrics through the task's code (part 2) ---------------------------------------

@pytest.mark.parametrize("batch", BATCHES)
def test_losses_and_metric_sums_match_original_on_golden_batches(tiny_pretrainer, tiny_outputs,
                                                                 batch):
    g = golden_batch(tiny_outputs, batch)
    features = {k: tf.constant(g[k]) for k in (
        "input_ids", "input_mask", "segment_ids", "masked_lm_positions", "masked_lm_ids",
        "masked_lm_weights", "next_sentence_labels")}
    features["next_sentence_labels"] = tf.reshape(features["next_sentence_labels"], [-1, 1])
    outputs = tiny_pretrainer(features, training=False)
    np.testing.assert_allclose(outputs["mlm_log_probs"], g["mlm_log_probs"], rtol=0, atol=LOSS_ATOL)
    np.testing.assert_allclose(outputs["nsp_log_probs"], g["nsp_log_probs"], rtol=0, atol=LOSS_ATOL)

    losses = pretrainer.pretraining_losses(outputs, features)
    np.testing.assert_allclose(losses["masked_lm_example_loss"], g["mlm_per_example_loss"],
                               rtol=0, atol=LOSS_ATOL)
    np.testing.assert_allclose(float(losses["masked_lm_loss"]), g["mlm_loss"], rtol=0, atol=LOSS_ATOL)
    np.testing.assert_allclose(losses["next_sentence_example_loss"], g["nsp_per_example_loss"],
                               rtol=0, atol=LOSS_ATOL)
    np.testing.assert_allclose(float(losses["next_sentence_loss"]), g["nsp_loss"], rtol=0,
                               atol=LOSS_ATOL)
    np.testing.assert_allclose(float(losses["total_loss"]), g["mlm_loss"] + g["nsp_loss"],
                               rtol=0, atol=LOSS_ATOL)

    sums = {k: float(v) for k, v in pretrainer.eval_metric_sums(outputs, features).items()}
    metrics = pretraining.metrics_from_sums(sums, global_step=7)
    assert sorted(metrics) == sorted(EVAL_KEYS) and metrics["global_step"] == 7
    for key, value in spec_metrics(g).items():
        np.testing.assert_allclose(float(metrics[key]), value, rtol=0, atol=LOSS_ATOL, err_msg=key)


def test_masked_lm_metric_is_weighted_mean_without_epsilon_and_loss_has_it():
    # Hand-worked: 2 slots, weights (1, 0): losses ln 2 and ln 4 (log-probs of the labels).
    log_probs = np.log(np.array([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25]], np.float32))
    outputs = {"mlm_log_probs": tf.constant(log_probs),
               "nsp_log_probs": tf.constant(np.log(np.array([[0.8, 0.2]], np.float32)))}
    features = {"masked_lm_ids": tf.constant([[0, 2]]),
                "masked_lm_weights": tf.constant([[1.0, 0.0]]),
                "next_sentence_labels": tf.constant([[1]])}
    losses = pretrainer.pretraining_losses(outputs, features)
    np.testing.assert_allclose(float(losses["masked_lm_loss"]), np.log(2) / (1 + 1e-5), rtol=1e-6)
    np.testing.assert_allclose(float(losses["next_sentence_loss"]), -np.log(0.2), rtol=1e-6)
    sums = {k: float(v) for k, v in pretrainer.eval_metric_sums(outputs, features).items()}
    m = pretraining.metrics_from_sums(sums, 0)
    np.testing.assert_allclose(m["masked_lm_loss"], np.log(2), rtol=1e-6)  # tf.metrics.mean
    assert m["masked_lm_accuracy"] == 1.0        # slot 0 right; slot 1 (weight 0) ignored
    assert m["next_sentence_accuracy"] == 0.0    # argmax 0, label 1
    text = format_eval_results(m)
    assert text.splitlines()[0] == "global_step = 0"
    assert [line.split(" = ")[0] for line in text.splitlines()] == sorted(EVAL_KEYS)
    assert "masked_lm_loss = 0.6931472\n" in text  # str(np.float32), as the original writes


@pytest.mark.parametrize("batch", BATCHES)
def test_eval_run_on_golden_batch_records_writes_original_metrics(tiny_dir, tiny_outputs, tmp_path,
                                                                  batch, monkeypatch):
    """The whole do_eval path (TFRecord -> pipeline -> model -> metrics -> file)."""
    from bert_tf.run import pretraining as run_pretraining_module
    counted = []

    class Counting(run_pretraining_module.ProgressReporter):
        def finish(self):
            counted.append((self.done, self.examples))
            super().finish()
    monkeypatch.setattr(run_pretraining_module, "ProgressReporter", Counting)
    g = golden_batch(tiny_outputs, batch)
    b, s = g["input_ids"].shape
    k = g["masked_lm_positions"].shape[1]
    records = write_records(tmp_path / "batch.tfrecord", batch_rows(g))
    out = str(tmp_path / "out")
    args = PretrainingArgs(bert_config_file=os.path.join(tiny_dir, "bert_config.json"),
                           input_file=records, output_dir=out,
                           init_checkpoint=os.path.join(tiny_dir, "bert_model.ckpt"),
                           max_seq_length=s, max_predictions_per_seq=k, do_eval=True,
                           eval_batch_size=b, max_eval_steps=2)
    result = run_pretraining(args)
    assert result.train is None
    text, values = read_eval_results(out)
    assert list(values) == sorted(EVAL_KEYS)
    assert values["global_step"] == "0"  # no checkpoint in output_dir: init_checkpoint, step 0
    for key, value in spec_metrics(g).items():
        np.testing.assert_allclose(float(values[key]), value, rtol=0, atol=LOSS_ATOL, err_msg=key)
    # written atomically: no temp file left; eval/: the TensorBoard scalars of the evaluation
    assert sorted(os.listdir(out)) == ["eval", "eval_results.txt"]
    # the progress line's examples/s counts the batches' examples (a new user saw 0.0)
    assert counted == [(2, 2 * b)]


# ---- input pipeline (spec 6.2) -------------------------------------------------------------------

def test_eval_pipeline_reads_original_tfrecord_in_order_as_int32(golden_tfrecord, golden_records):
    assert len(golden_records) == 60
    fn = pretraining_records.input_fn_builder([golden_tfrecord], 128, 20, is_training=False, batch_size=8)
    batches = list(fn().take(8).as_numpy_iterator())  # 60 records: the 8th batch wraps around
    rows = golden_records + golden_records
    for i, batch in enumerate(batches):
        for key, value in batch.items():
            expected = np.array([r[key] for r in rows[8 * i: 8 * i + 8]])
            assert value.dtype == (np.float32 if key == "masked_lm_weights" else np.int32), key
            np.testing.assert_array_equal(value, expected.reshape(value.shape), err_msg=key)
    assert batches[0]["next_sentence_labels"].shape == (8, 1)


def test_train_pipeline_shuffles_whole_records_and_drops_remainder(golden_tfrecord, golden_records):
    fn = pretraining_records.input_fn_builder([golden_tfrecord, golden_tfrecord], 128, 20,
                                      is_training=True, batch_size=7, seed=1)
    known = {tuple(r["input_ids"]) + tuple(r["masked_lm_ids"]): r for r in golden_records}
    first = []
    for batch in fn().take(20).as_numpy_iterator():
        assert batch["input_ids"].shape == (7, 128) and batch["masked_lm_weights"].shape == (7, 20)
        for i in range(7):
            key = tuple(batch["input_ids"][i]) + tuple(batch["masked_lm_ids"][i])
            record = known[key]  # every row is one whole original record
            np.testing.assert_array_equal(batch["masked_lm_positions"][i],
                                          record["masked_lm_positions"])
            first.append(key)
    order = [tuple(r["input_ids"]) + tuple(r["masked_lm_ids"]) for r in golden_records]
    assert first[:60] != order  # shuffled


def test_two_input_pipelines_split_one_file_by_record_and_the_batch(golden_tfrecord,
                                                                    golden_records):
    fn = pretraining_records.input_fn_builder([golden_tfrecord], 128, 20, is_training=True,
                                      batch_size=8, seed=3)
    seen = []
    for pipeline in (0, 1):
        ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                         num_replicas_in_sync=2)
        batches = list(fn(ctx).take(60).as_numpy_iterator())  # 240 records: 8 passes of 30
        assert all(b["input_ids"].shape == (4, 128) for b in batches)  # per-replica batch
        seen.append({tuple(row) for b in batches for row in b["input_ids"]})
    assert len(seen[0]) == len(seen[1]) == 30 and not seen[0] & seen[1]  # disjoint halves
    assert seen[0] | seen[1] == {tuple(r["input_ids"]) for r in golden_records}


# ---- training, checkpoints, eval_results.txt, resume (part 3) ------------------------------------

def test_train_then_eval_writes_original_checkpoint_and_resumes(golden_tfrecord, tmp_path):
    out = str(tmp_path / "out")
    args = PretrainingArgs(bert_config_file=tiny_config_file(tmp_path), input_file=golden_tfrecord,
                           output_dir=out, do_train=True, do_eval=True, train_batch_size=4,
                           eval_batch_size=8, num_train_steps=3, num_warmup_steps=1,
                           save_checkpoints_steps=2, max_eval_steps=3, learning_rate=1e-3)
    result = run_pretraining(args)
    assert result.train.global_step == 3 and result.train.resumed_from is None
    assert result.train_steps_run == 3
    assert [os.path.basename(p) for p in checkpoint_io.existing_checkpoints(out)] == [
        "model.ckpt-2", "model.ckpt-3"]

    stored = checkpoint_io.list_checkpoint(os.path.join(out, "model.ckpt-3"))
    model_names = [n for n in stored if not checkpoint_io.is_optimizer_entry(n)]
    assert len(model_names) == 39 + 7  # 5 + 16 L + 2 bert/* (L = 2) and 7 cls/* (spec 3.2)
    assert stored["bert/embeddings/word_embeddings"] == ((30522, 16), "float32")
    assert stored["bert/encoder/layer_1/attention/self/query/kernel"] == ((16, 16), "float32")
    assert stored["cls/predictions/output_bias"] == ((30522,), "float32")
    assert stored["cls/predictions/transform/dense/kernel"] == ((16, 16), "float32")
    assert stored["cls/predictions/transform/LayerNorm/gamma"] == ((16,), "float32")
    assert stored["cls/seq_relationship/output_weights"] == ((2, 16), "float32")
    assert stored["cls/seq_relationship/output_bias"] == ((2,), "float32")
    for name in model_names:  # spec 3.3: an adam_m and adam_v slot per variable, same shape
        assert stored[name + "/adam_m"] == stored[name]
        assert stored[name + "/adam_v"] == stored[name]
    assert len(stored) == 46 * 3 + 1
    reader = tf.train.load_checkpoint(os.path.join(out, "model.ckpt-3"))
    assert reader.get_tensor("global_step") == 3
    assert reader.get_variable_to_dtype_map()["global_step"] == tf.int64

    text, values = read_eval_results(out)
    assert list(values) == sorted(EVAL_KEYS) and values["global_step"] == "3"
    assert 0.0 <= float(values["masked_lm_accuracy"]) <= 1.0
    assert 0.0 <= float(values["next_sentence_accuracy"]) <= 1.0
    # An untrained 30522-way softmax: about ln(30522) = 10.33 per masked token.
    assert 9.0 < float(values["masked_lm_loss"]) < 11.5

    # Resume: a new run with more steps restores weights, slots and global_step from ckpt-3.
    weights_3 = reader.get_tensor("cls/predictions/output_bias")
    args.num_train_steps = 5
    args.do_eval = False
    again = run_pretraining(args)
    assert again.train.resumed_from == os.path.join(out, "model.ckpt-3")
    assert again.train.global_step == 5 and again.train_steps_run == 2
    assert tf.train.load_checkpoint(os.path.join(out, "model.ckpt-5")).get_tensor(
        "global_step") == 5
    assert not np.array_equal(
        tf.train.load_checkpoint(os.path.join(out, "model.ckpt-5")).get_tensor(
            "cls/predictions/output_bias"), weights_3)

    # do_eval alone evaluates the newest checkpoint of output_dir at its global_step.
    args.do_train, args.do_eval = False, True
    run_pretraining(args)
    assert read_eval_results(out)[1]["global_step"] == "5"


def test_warm_start_from_tiny_random_loads_heads_then_loss_falls(tiny_dir, golden_tfrecord,
                                                                tmp_path):
    out = str(tmp_path / "out")
    args = PretrainingArgs(bert_config_file=os.path.join(tiny_dir, "bert_config.json"),
                           input_file=golden_tfrecord, output_dir=out,
                           init_checkpoint=os.path.join(tiny_dir, "bert_model.ckpt"),
                           do_train=True, train_batch_size=8, num_train_steps=2,
                           num_warmup_steps=0, save_checkpoints_steps=0, learning_rate=1e-3,
                           dtype="bfloat16", gradient_accumulation_steps=2)
    result = run_pretraining(args)
    report = result.train.warm_start
    assert len(report.loaded) == 46 and not report.missing  # cls/* come from the checkpoint
    assert result.train.global_step == 2
    stored = checkpoint_io.list_checkpoint(os.path.join(out, "model.ckpt-2"))
    assert stored["bert/embeddings/word_embeddings"] == ((30522, 64), "float32")  # mixed: f32 vars


# ---- bad input ----------------------------------------------------------------------------------

def eval_args(tiny_dir, input_file, tmp_path, **kw):
    base = dict(bert_config_file=os.path.join(tiny_dir, "bert_config.json"), input_file=input_file,
                output_dir=str(tmp_path / "out"), do_eval=True, eval_batch_size=1,
                max_eval_steps=4)
    base.update(kw)
    return PretrainingArgs(**base)


@pytest.mark.parametrize("flag,value,feature,stored", [
    ("max_seq_length", 64, "input_ids", 128),
    ("max_predictions_per_seq", 10, "masked_lm_positions", 20),
])
def test_record_lengths_differing_from_flags_name_file_feature_and_lengths(
        tiny_dir, golden_tfrecord, tmp_path, flag, value, feature, stored):
    with pytest.raises(InputDataError) as e:
        run_pretraining(eval_args(tiny_dir, golden_tfrecord, tmp_path, **{flag: value}))
    msg = str(e.value)
    assert golden_tfrecord in msg and f"'{feature}'" in msg
    assert f"length {stored}" in msg and f"--{flag}={value}" in msg
    assert not os.path.exists(tmp_path / "out")  # failed before anything was written


def test_parse_failure_in_the_pipeline_becomes_the_same_message(tiny_dir, tiny_outputs, tmp_path):
    g = golden_batch(tiny_outputs, "b0")  # S = 16, P = 2
    rows = batch_rows(g) * 2
    rows[2] = dict(rows[2], input_ids=rows[2]["input_ids"][:12])  # record 2 is short
    path = write_records(tmp_path / "mixed.tfrecord", rows)
    # Only record 0 is checked up front, so record 2 fails inside tf.data's parse op.
    with pytest.raises(InputDataError) as e:
        run_pretraining(eval_args(tiny_dir, path, tmp_path, max_seq_length=16,
                                  max_predictions_per_seq=2))
    msg = str(e.value)
    assert path in msg and "record 2" in msg and "'input_ids'" in msg
    assert "length 12" in msg and "--max_seq_length=16" in msg
    assert isinstance(e.value.__cause__, tf.errors.InvalidArgumentError)


def small_id_rows(n, big_id=None, big_row=None, feature="input_ids"):
    """n records of S = 16, P = 2 with ids < 200; row ``big_row`` gets ``big_id`` in
    ``feature`` (input_ids position 2, or masked_lm_ids position 1)."""
    rows = []
    for i in range(n):
        input_ids = [101, 5 + i % 50, 6, 7, 102, 8, 9, 102] + [0] * 8
        row = {"input_ids": input_ids, "input_mask": [1] * 8 + [0] * 8,
               "segment_ids": [0] * 5 + [1] * 3 + [0] * 8, "masked_lm_positions": [1, 2],
               "masked_lm_ids": [150, 151], "masked_lm_weights": [1.0, 1.0],
               "next_sentence_labels": [i % 2]}
        if i == big_row:
            if feature == "input_ids":
                row["input_ids"] = input_ids[:2] + [big_id] + input_ids[3:]
            else:
                row["masked_lm_ids"] = [150, big_id]
        rows.append(row)
    return rows


@pytest.mark.parametrize("feature", ["input_ids", "masked_lm_ids"])
def test_token_ids_above_vocab_size_name_file_largest_id_and_vocab_size(tmp_path, feature):
    # The user's case: ids up to 2066 but a config with vocab_size=1000. Records 0..3 hold
    # ids < 200; record 3 holds 1500 and record 5 holds 2066: the largest is named.
    rows = small_id_rows(8, 1500, 3, feature)
    rows[5] = small_id_rows(6, 2066, 5, feature)[5]
    good = write_records(tmp_path / "good.tfrecord", small_id_rows(4))
    bad = write_records(tmp_path / "bad.tfrecord", rows)
    config = tiny_config_file(tmp_path, vocab_size=1000)
    args = PretrainingArgs(bert_config_file=config, input_file=f"{good},{bad}",
                           output_dir=str(tmp_path / "out"), do_train=True, num_train_steps=1,
                           train_batch_size=2, max_seq_length=16, max_predictions_per_seq=2)
    with pytest.raises(ConfigError) as e:
        run_pretraining(args)
    assert str(e.value).startswith(
        f"{bad}: token id 2066 ({feature} of record 5, the largest id found) is not smaller "
        f"than vocab_size=1000 of --bert_config_file={config}")
    assert not os.path.exists(tmp_path / "out")  # failed before anything was written
    pretraining_records.check_token_ids([good, bad], 2067, config)  # 2066 < 2067: fits


def test_token_ids_beyond_the_checked_records_fail_with_the_same_message(tmp_path):
    """Only the first 100 records are checked up front; an id >= vocab_size in record 100
    fails inside the embedding lookup (CPU: InvalidArgumentError "indices[..] = 2066 is not in
    [0, 1000)"), which becomes the same one-line ConfigError."""
    assert pretraining_records.VOCAB_CHECK_RECORDS == 100
    path = write_records(tmp_path / "late.tfrecord", small_id_rows(102, 2066, 100))
    config = tiny_config_file(tmp_path, vocab_size=1000)
    args = PretrainingArgs(bert_config_file=config, input_file=path,
                           output_dir=str(tmp_path / "out"), do_eval=True, eval_batch_size=2,
                           max_eval_steps=51, max_seq_length=16, max_predictions_per_seq=2)
    with tf.device("/CPU:0"):
        with pytest.raises(ConfigError) as e:
            run_pretraining(args, strategy=tf.distribute.OneDeviceStrategy("/cpu:0"))
    assert str(e.value) == (
        f"{path}: token id 2066 (input_ids of record 100, the largest id found) is not smaller "
        f"than vocab_size=1000 of --bert_config_file={config}: the records were made with a "
        f"larger vocab; pass the bert_config.json of the model that vocab belongs to, or "
        f"recreate the data with create_pretraining_data.py and the model's vocab.txt")
    assert isinstance(e.value.__cause__, tf.errors.InvalidArgumentError)
    assert "is not in [0, 1000)" in e.value.__cause__.message


def test_index_errors_other_than_the_embeddings_are_left_alone(tmp_path):
    config = BertConfig.from_json_file(tiny_config_file(tmp_path, vocab_size=1000))
    error = tf.errors.InvalidArgumentError(None, None, "indices[3] = 40 is not in [0, 32)")
    assert pretraining_records.explain_index_error(error, ["x"], config, "c.json") is None
    error = tf.errors.InvalidArgumentError(None, None, "indices[0,5] = 2 is not in [0, 2)")
    assert str(pretraining_records.explain_index_error(error, ["x"], config, "c.json")) == (
        "a segment_ids value of x is out of range: 2 is not in [0, 2), type_vocab_size=2 of "
        "--bert_config_file=c.json")


def test_no_input_file_matches_the_pattern(tiny_dir, tmp_path):
    pattern = str(tmp_path / "nothing-*.tfrecord")
    with pytest.raises(FlagError) as e:
        run_pretraining(eval_args(tiny_dir, pattern, tmp_path))
    assert pattern in str(e.value) and "matches no file" in str(e.value)


def test_a_file_that_is_not_a_tfrecord(tiny_dir, tmp_path):
    path = tmp_path / "text.tfrecord"
    path.write_text("This is plain text, not a TFRecord file.\n" * 3)
    with pytest.raises(InputDataError) as e:
        run_pretraining(eval_args(tiny_dir, str(path), tmp_path))
    assert str(path) in str(e.value)


def test_neither_do_train_nor_do_eval_is_the_original_value_error(tiny_dir, golden_tfrecord,
                                                                 tmp_path):
    with pytest.raises(ValueError, match="^At least one of `do_train` or `do_eval` must be True.$"):
        run_pretraining(eval_args(tiny_dir, golden_tfrecord, tmp_path, do_eval=False))
    assert issubclass(NoModeError, BertTfError)


def test_max_seq_length_above_max_position_embeddings(tiny_dir, golden_tfrecord, tmp_path):
    with pytest.raises(FlagError) as e:
        run_pretraining(eval_args(tiny_dir, golden_tfrecord, tmp_path, max_seq_length=256))
    msg = str(e.value)
    assert "--max_seq_length=256" in msg and "max_position_embeddings=128" in msg
    assert os.path.join(tiny_dir, "bert_config.json") in msg


def script_env():
    return dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")


def test_script_prints_one_error_line_and_exits_1(tiny_dir, golden_tfrecord, tmp_path):
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "run_pretraining.py"),
         f"--input_file={golden_tfrecord}", f"--output_dir={tmp_path / 'out'}",
         f"--bert_config_file={os.path.join(tiny_dir, 'bert_config.json')}", "--do_eval",
         "--max_seq_length=64"],
        env=script_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "'input_ids'" in errors[0] and "length 128" in errors[0]


@pytest.mark.slow
def test_script_killed_mid_training_resumes_from_its_last_checkpoint(golden_tfrecord, tmp_path):
    out = tmp_path / "out"
    config = tiny_config_file(tmp_path)
    command = [sys.executable, os.path.join(REPO_ROOT, "run_pretraining.py"),
               f"--input_file={golden_tfrecord}", f"--output_dir={out}",
               f"--bert_config_file={config}", "--do_train", "--train_batch_size=4",
               "--num_train_steps=100000", "--num_warmup_steps=2", "--save_checkpoints_steps=2",
               "--iterations_per_loop=1"]
    proc = subprocess.Popen(command, env=script_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    try:
        while len(checkpoint_io.existing_checkpoints(str(out))) < 2:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.time() < deadline, "no checkpoints written"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    last = checkpoint_io.existing_checkpoints(str(out))[-1]
    step = checkpoint_io.checkpoint_step(last)
    args = PretrainingArgs(bert_config_file=config, input_file=golden_tfrecord, output_dir=str(out),
                           do_train=True, train_batch_size=4, num_train_steps=step + 2,
                           num_warmup_steps=2, save_checkpoints_steps=2)
    result = run_pretraining(args)
    assert result.train.resumed_from == last
    assert result.train.global_step == step + 2 and result.train_steps_run == 2


def test_output_dir_that_is_a_file_is_one_flag_error(tiny_dir, golden_tfrecord, tmp_path):
    """Issue 27 fresh round: a FailedPreconditionError traceback from tf.io.gfile.makedirs."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(FlagError, match=r"--output_dir=.*a_file is not writable: it is a file"):
        run_pretraining(eval_args(tiny_dir, golden_tfrecord, tmp_path, output_dir=str(blocker)))
    assert blocker.read_text() == "x"


def _record_ends(path):
    data = open(path, "rb").read()
    ends, pos = [], 0
    while pos < len(data):
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
        ends.append(pos)
    return ends


def test_records_cut_at_a_record_boundary_are_refused_and_the_originals_globs_see_only_records(
        tiny_dir, golden_dir, uncased_vocab_file, tmp_path):
    """Issue 27 item 2: a file cut exactly after a record read as a clean, shorter file. The
    count create_pretraining_data writes goes with each file, where no glob of the original's
    --input_file (``dir/*``, ``shard*``) finds it."""
    from bert_tf.data.pretraining import create_pretraining_data
    folder = tmp_path / "data"
    outs = [str(folder / "shard0.tfrecord"), str(folder / "shard1.tfrecord")]
    n = create_pretraining_data(
        os.path.join(golden_dir, "bert", "pretraining_data", "sample_text.txt"), ",".join(outs),
        uncased_vocab_file, dupe_factor=1)
    assert sorted(os.listdir(folder)) == ["shard0.tfrecord", "shard1.tfrecord"]
    for pattern in ("*", "shard*", "*.tfrecord", "shard?.*"):
        assert sorted(tf.io.gfile.glob(str(folder / pattern))) == outs, pattern
    ends = _record_ends(outs[1])
    assert (n, len(ends)) == (11, 5)  # round robin: records 1, 3, 5, 7, 9
    with open(outs[1], "r+b") as f:
        f.truncate(ends[2])
    with pytest.raises(InputDataError) as e:
        run_pretraining(eval_args(tiny_dir, str(folder / "*"), tmp_path))
    assert str(e.value).startswith(f"{outs[1]}: 3 records, but bert_tf wrote 5 into it")
    assert not os.path.exists(tmp_path / "out" / "eval_results.txt")


@pytest.mark.parametrize("name,kind", [("eval_results.txt", "folder"), ("checkpoint", "folder"),
                                       ("eval", "file")])
def test_an_output_name_of_the_other_kind_is_refused_before_work(tiny_dir, golden_tfrecord,
                                                                 tmp_path, name, kind):
    """Issue 27: O/eval_results.txt a folder, or O/eval a file, failed after the evaluation."""
    out = tmp_path / "out"
    out.mkdir()
    (out / name).mkdir() if kind == "folder" else (out / name).write_text("x")
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError, match=f"^--output_dir={out}: {out / name} is a {kind}, but "
                                        f"the run writes the {written} {name} there"):
        run_pretraining(eval_args(tiny_dir, golden_tfrecord, tmp_path))
    assert os.listdir(out) == [name]
