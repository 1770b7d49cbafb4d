"""XLNet SQuAD heads (spec xlnet.md 3.16, 9.5) against the original's head outputs on the golden
predict features (tests/golden/xlnet_squad: tiny_random_qa checkpoint, squad/qa_logits.npz)."""

import math
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.xlnet.data import squad as xs
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model
from bert_tf import checkpoint_io
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import XLNetConfig
from bert_tf.xlnet.squad import XLNetSquad, qa_loss


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad")


def as_batch(features):
    return {"input_ids": tf.constant([f.input_ids for f in features]),
            "segment_ids": tf.constant([f.segment_ids for f in features]),
            "input_mask": tf.constant([f.input_mask for f in features], tf.float32),
            "p_mask": tf.constant([f.p_mask for f in features], tf.float32),
            "cls_index": tf.constant([f.cls_index for f in features])}


@pytest.fixture(scope="module")
def loaded(golden, shared_data_dir):
    sp = load_sp_model(os.path.join(shared_data_dir, "xlnet", "spiece.model"))
    examples = xs.read_squad_examples(os.path.join(golden, "squad", "inputs", "dev.json"), False)
    features = list(xs.convert_examples_to_features(examples, sp, 192, 64, 64, False))
    model = XLNetSquad(XLNetConfig.from_json_file(
        os.path.join(golden, "tiny_random_qa", "xlnet_config.json")))
    model(as_batch(features[:1]))
    report = checkpoint_map.load_xlnet_checkpoint(
        checkpoint_map.xlnet_variable_map(model),
        os.path.join(golden, "tiny_random_qa", "xlnet_model.ckpt"), require_all=True)
    return model, features, report


def test_checkpoint_names_are_the_originals(loaded):
    """42 variables loaded; the 4 unused ones are the RACE head's (README tiny_random_qa)."""
    _, _, report = loaded
    assert len(report.loaded) == 42 and not report.missing
    assert sorted(report.unused) == ["logits/dense/bias", "logits/dense/kernel",
                                     "model/sequnece_summary/summary/bias",
                                     "model/sequnece_summary/summary/kernel"]


def test_head_outputs_equal_the_original(loaded, golden):
    model, features, _ = loaded
    want = np.load(os.path.join(golden, "squad", "qa_logits.npz"))
    got = {}
    for i in range(0, len(features), 8):  # the original's predict_batch_size
        for key, value in model(as_batch(features[i:i + 8])).items():
            got.setdefault(key, []).append(value.numpy())
    got = {k: np.concatenate(v) for k, v in got.items()}
    for key in ("start_logits", "end_logits", "start_top_log_probs", "end_top_log_probs",
                "cls_logits"):
        np.testing.assert_allclose(got[key], want[key], atol=1e-5, rtol=0, err_msg=key)
    # Near ties (README "Independent checks") did not reorder any top-k entry here.
    np.testing.assert_array_equal(got["start_top_index"], want["start_top_index"])
    np.testing.assert_array_equal(got["end_top_index"], want["end_top_index"])


def test_teacher_forced_end_equals_the_beam_row(loaded):
    """Training's end head given start s is the beam's row for s (same dense_0 / LayerNorm /
    dense_1 on concat([output, output[s]]))."""
    model, features, _ = loaded
    batch = as_batch(features[:2])
    beam = model(batch, training=False)
    starts = beam["start_top_index"][:, 0]
    forced = model.qa_heads(model.xlnet(batch)["sequence_output"], batch["p_mask"],
                            batch["cls_index"], start_positions=starts)
    p_mask = batch["p_mask"].numpy()
    row = beam["end_logits"].numpy()[:, 0] * (1 - p_mask) - 1e30 * p_mask
    row = row - np.log(np.exp(row - row.max(-1, keepdims=True)).sum(-1, keepdims=True)) - row.max(
        -1, keepdims=True)
    np.testing.assert_allclose(forced["end_log_probs"].numpy(), row, atol=1e-5)
    np.testing.assert_allclose(forced["cls_logits"].numpy(), beam["cls_logits"].numpy(),
                               atol=1e-6)


def test_qa_loss_by_hand():
    """0.5 * (start CE + end CE) + 0.5 * sigmoid CE: one example, log-probs log(0.5) at the
    gold start and log(0.25) at the gold end, cls logit 0 with is_impossible 1."""
    outputs = {"start_log_probs": tf.math.log([[0.5, 0.25, 0.25]]),
               "end_log_probs": tf.math.log([[0.5, 0.25, 0.25]]),
               "cls_logits": tf.constant([0.0])}
    loss = qa_loss(outputs, tf.constant([0]), tf.constant([2]), tf.constant([1.0]))
    want = 0.5 * (math.log(2) + math.log(4)) + 0.5 * math.log(2)
    assert float(loss) == pytest.approx(want, abs=1e-6)


def test_saved_heads_reload_under_the_original_names(loaded, tmp_path):
    model, _, _ = loaded
    table = checkpoint_map.xlnet_variable_map(model)
    prefix = checkpoint_map.save_xlnet_checkpoint(table, str(tmp_path / "model.ckpt-0"))
    stored = checkpoint_io.list_checkpoint(prefix)
    assert stored["answer_class/dense_1/kernel"][0] == (32, 1)
    assert "answer_class/dense_1/bias" not in stored
    assert stored["end_logits/dense_0/kernel"][0] == (64, 32)
    clone = XLNetSquad.from_config(model.get_config())
    clone(as_batch(loaded[1][:1]))
    checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(clone), prefix,
                                         require_all=True)
    a = model(as_batch(loaded[1][:2]))["cls_logits"].numpy()
    b = clone(as_batch(loaded[1][:2]))["cls_logits"].numpy()
    np.testing.assert_array_equal(a, b)
