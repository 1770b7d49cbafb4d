"""BatchPredictor: padding trim (hand values), fixed batch padding, MirroredStrategy split."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.bert.classifier import BertClassifier
from bert_tf.training.predict import BatchPredictor, trim_batch, trimmed_length

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_trimmed_length_hand_values():
    mask = np.zeros((3, 32), np.int32)
    mask[0, :5] = 1
    mask[1, :17] = 1
    assert trimmed_length(mask, 8) == 24  # longest row 17 -> next multiple of 8
    assert trimmed_length(mask, 1) == 17
    assert trimmed_length(mask, 64) == 32  # never longer than the batch
    assert trimmed_length(np.zeros((2, 16), np.int32), 8) == 8
    batch = {"input_ids": np.ones((3, 32)), "input_mask": mask, "label_ids": np.arange(3)}
    cut = trim_batch(batch, 24)
    assert cut["input_ids"].shape == (3, 24) and cut["input_mask"].shape == (3, 24)
    assert cut["label_ids"].tolist() == [0, 1, 2]


def _tiny_classifier():
    config = BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=32, type_vocab_size=2)
    tf.random.set_seed(0)
    return BertClassifier(config, 3).build_with_dummy_input()


def _batch(rows=5, seq=32, seed=0):
    rs = np.random.RandomState(seed)
    lengths = rs.randint(2, 12, rows)
    ids = np.zeros((rows, seq), np.int32)
    mask = np.zeros((rows, seq), np.int32)
    segs = np.zeros((rows, seq), np.int32)
    for r, n in enumerate(lengths):
        ids[r, :n] = rs.randint(1, 50, n)
        mask[r, :n] = 1
        segs[r, n // 2:n] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segs}


def test_trim_and_fixed_batch_padding_do_not_change_per_example_outputs():
    model = _tiny_classifier()
    batch = _batch()
    full = BatchPredictor(model, ["logits", "probabilities"]).predict_batch(batch)
    trimmed = BatchPredictor(model, ["logits"], trim_padding=True).predict_batch(batch)
    fixed = BatchPredictor(model, ["logits"], fixed_batch_size=8).predict_batch(batch)
    assert full["logits"].shape == (5, 3) and full["probabilities"].shape == (5, 3)
    np.testing.assert_allclose(trimmed["logits"], full["logits"], atol=1e-6)
    np.testing.assert_allclose(fixed["logits"], full["logits"], atol=1e-6)
    direct = model(batch)["logits"].numpy()
    np.testing.assert_allclose(full["logits"], direct, atol=1e-6)


def test_predict_yields_every_batch_in_order():
    model = _tiny_classifier()
    batches = [_batch(rows=4, seed=1), _batch(rows=3, seed=2)]
    out = list(BatchPredictor(model, ["logits"], trim_padding=True).predict(batches, total=7))
    assert [o["logits"].shape[0] for _, o in out] == [4, 3]
    assert out[1][0] is batches[1]


@pytest.mark.parametrize("sort_window", [0, 2])
def test_progress_counts_real_examples_only(sort_window, monkeypatch):
    """A new user's XLNet eval of an 80-row dev set said "eval: 128 examples": the padding
    rows of the last batch (is_real_example 0) are no examples."""
    from bert_tf.training import predict as predict_module
    counted = []

    class Counting(predict_module.ProgressReporter):
        def finish(self):
            counted.append(self.done)
            super().finish()
    monkeypatch.setattr(predict_module, "ProgressReporter", Counting)
    model = _tiny_classifier()
    batches = [dict(_batch(rows=4, seed=1), is_real_example=np.ones(4, np.int32)),
               dict(_batch(rows=4, seed=2), is_real_example=np.array([1, 0, 0, 0], np.int32))]
    predictor = BatchPredictor(model, ["logits"], trim_padding=True)
    assert len(list(predictor.predict(batches, sort_window=sort_window))) == 2
    assert counted == [5]


def test_missing_output_or_input_is_named():
    model = _tiny_classifier()
    with pytest.raises(KeyError, match="start_logits"):
        BatchPredictor(model, ["start_logits"]).predict_batch(_batch())
    with pytest.raises(KeyError, match="segment_ids"):
        batch = _batch()
        del batch["segment_ids"]
        BatchPredictor(model, ["logits"]).predict_batch(batch)


def test_input_signature_traces_once_for_every_batch_shape():
    """issue 16: with ``input_signature`` batches of 3 shapes share one trace; the logits
    equal the model called directly on each batch."""
    model = _tiny_classifier()
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in ("input_ids", "input_mask", "segment_ids")}
    predictor = BatchPredictor(model, ["logits"], input_signature=spec)
    for rows, seq in ((5, 32), (3, 16), (2, 24)):
        batch = _batch(rows=rows, seq=seq, seed=seq)
        out = predictor.predict_batch(batch)["logits"]
        np.testing.assert_allclose(out, model(batch)["logits"].numpy(), atol=1e-6)
    assert predictor._local_step.experimental_get_tracing_count() == 1
    relaxed = BatchPredictor(model, ["logits"])  # the default: a second trace, relaxed shapes
    for seq in (32, 16, 24):
        relaxed.predict_batch(_batch(rows=2, seq=seq))
    assert relaxed._local_step.experimental_get_tracing_count() == 2
    with pytest.raises(KeyError, match="segment_ids"):
        BatchPredictor(model, ["logits"], input_signature={"input_ids": spec["input_ids"]})


@pytest.mark.slow  # heavy (tens of seconds); run with -m slow
def test_mirrored_two_replicas_match_one_device(tmp_path):
    # Two logical CPUs must be configured before TF starts: run in a fresh process.
    code = textwrap.dedent(f"""
        import json, sys
        import numpy as np, tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        sys.path.insert(0, {REPO!r})
        from tests.training.test_predict import _batch, _tiny_classifier
        from bert_tf.bert.classifier import BertClassifier
        from bert_tf.training.predict import BatchPredictor
        one = _tiny_classifier()
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            two = BertClassifier(one.config, 3).build_with_dummy_input()
        for a, b in zip(two.weights, one.weights):
            a.assign(b.numpy())
        batch = _batch(rows=5)
        p = BatchPredictor(two, ["logits"], strategy)
        out = p.predict_batch(batch)["logits"]
        ref = BatchPredictor(one, ["logits"]).predict_batch(batch)["logits"]
        json.dump({{"distributed": p.distributed, "shape": list(out.shape),
                   "max_diff": float(np.abs(out - ref).max())}},
                  open({str(tmp_path / "r.json")!r}, "w"))
    """)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(tmp_path / "r.json") as f:
        r = json.load(f)
    assert r["distributed"] and r["shape"] == [5, 3] and r["max_diff"] <= 1e-6


def test_per_example_loss_in_the_step_and_left_padding_kept():
    """XLNet's eval: the loss comes from the same step; left-padded inputs are run as they
    are (float input_mask, 1 = padding)."""
    def model(features, training=False):
        ids = tf.cast(features["input_ids"], tf.float32)
        return {"logits": ids[:, -1], "seen_length": tf.fill(tf.shape(ids)[:1],
                                                             tf.shape(ids)[1])}

    batch = {"input_ids": np.array([[0, 0, 3], [0, 5, 2]], np.int32),
             "segment_ids": np.array([[4, 4, 2], [4, 0, 2]], np.int32),
             "input_mask": np.array([[1, 1, 0], [1, 0, 0]], np.float32),
             "label_ids": np.array([1.0, 4.0], np.float32)}
    predictor = BatchPredictor(model, ["logits", "seen_length"],
                               per_example_loss_fn=lambda out, y: tf.square(out["logits"] - y))
    out = predictor.predict_batch(batch)
    np.testing.assert_array_equal(out["logits"], [3.0, 2.0])  # the last position: <cls>
    np.testing.assert_array_equal(out["per_example_loss"], [4.0, 4.0])  # (3-1)^2, (2-4)^2
    assert out["seen_length"].tolist() == [3, 3]  # not trimmed
    with pytest.raises(KeyError, match="label_ids"):
        predictor.predict_batch({k: v for k, v in batch.items() if k != "label_ids"})


def test_sort_window_returns_each_batch_its_own_outputs_in_row_order():
    """issue 25: rows run sorted by length in token-budget groups; every batch still gets the
    logits of its own rows, in order, equal to the model on the padded batch."""
    model = _tiny_classifier()
    batches = [_batch(rows=4, seed=s) for s in range(5)] + [_batch(rows=3, seed=9)]
    predictor = BatchPredictor(model, ["logits"], trim_padding=True)
    out = list(predictor.predict(batches, total=23, sort_window=4))
    assert len(out) == 6
    for batch, (got_batch, got) in zip(batches, out):
        assert got_batch is batch
        np.testing.assert_allclose(got["logits"], model(batch)["logits"].numpy(), atol=1e-6)
    # lengths 2..11 of 32: groups of up to 4 x 32 = 128 tokens of 8 or 16 -> fewer calls
    calls = []
    real_step = predictor.predict_batch
    predictor.predict_batch = lambda b: calls.append(
        (len(b["input_ids"]), trimmed_length(b["input_mask"], 8))) or real_step(b)
    list(predictor.predict(batches[:4], sort_window=4))
    assert sum(r for r, _ in calls) == 16 and len(calls) < 4
    assert all(s in (8, 16) and r * s <= 128 for r, s in calls)
