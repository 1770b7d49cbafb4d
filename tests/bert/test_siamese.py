"""BertSiamese (bert/siamese.py): pooling, the two SBERT objectives worked out by hand, the
checkpoint names, and the exact GELU of ``hidden_act = "gelu_exact"``."""
import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import get_activation
from bert_tf.bert.model import BertModel
from bert_tf.bert.siamese import (BertSiamese, cosine_regression_loss, cosine_similarity,
                                  mean_pool, pair_features, softmax_loss)
from tests.bert.conftest import TINY_CONFIG


def test_mean_pool_averages_the_real_tokens_only():
    seq = np.array([[[1., 2.], [3., 4.], [100., -100.]]], np.float32)  # [1, 3, 2]
    mask = np.array([[1, 1, 0]], np.int32)
    np.testing.assert_allclose(mean_pool(seq, mask).numpy(), [[2., 3.]])


def test_cosine_regression_loss_by_hand():
    # pair 1: u = (1, 0), v = (0, 1): cos 0, score 2.5 -> target 0.5, error 0.25
    # pair 2: u = (1, 1), v = (2, 2): cos 1, score 5.0 -> target 1.0, error 0
    # pair 3: u = (3, 4), v = (4, 3): cos 24/25 = 0.96, score 4.0 -> target 0.8, error 0.0256
    u = tf.constant([[1., 0.], [1., 1.], [3., 4.]])
    v = tf.constant([[0., 1.], [2., 2.], [4., 3.]])
    cos = cosine_similarity(u, v)
    np.testing.assert_allclose(cos.numpy(), [0., 1., 0.96], atol=1e-6)
    mean, per_example = cosine_regression_loss(cos, tf.constant([2.5, 5.0, 4.0]))
    np.testing.assert_allclose(per_example.numpy(), [0.25, 0., 0.0256], atol=1e-6)
    assert float(mean) == pytest.approx((0.25 + 0.0256) / 3, abs=1e-6)


def test_softmax_loss_by_hand():
    # logits (0, ln 3): softmax (1/4, 3/4); label 1 -> -ln(3/4); label 0 -> -ln(1/4)
    logits = tf.constant([[0., math.log(3.)], [0., math.log(3.)]])
    mean, per_example = softmax_loss(logits, tf.constant([1, 0]))
    np.testing.assert_allclose(per_example.numpy(), [-math.log(.75), -math.log(.25)], atol=1e-6)
    assert float(mean) == pytest.approx((math.log(4 / 3) + math.log(4)) / 2, abs=1e-6)


def test_pair_features_are_u_v_and_abs_difference():
    got = pair_features(tf.constant([[1., -2.]]), tf.constant([[3., 1.]])).numpy()
    np.testing.assert_array_equal(got, [[1., -2., 3., 1., 2., 3.]])


def _features(ids_a, ids_b):
    out = {}
    for side, ids in (("a", ids_a), ("b", ids_b)):
        ids = np.asarray(ids, np.int32)
        out[f"input_ids_{side}"] = ids
        out[f"input_mask_{side}"] = (ids > 0).astype(np.int32)
        out[f"segment_ids_{side}"] = np.zeros_like(ids)
    return out


def test_both_sentences_go_through_the_one_encoder_alone():
    config = BertConfig(**TINY_CONFIG)
    model = BertSiamese(config, num_labels=3).build_with_dummy_input()
    features = _features([[2, 5, 7, 0], [3, 4, 0, 0]], [[2, 9, 0, 0], [6, 6, 6, 6]])
    out = model(features)
    for side, key in (("a", "u"), ("b", "v")):
        ids = features[f"input_ids_{side}"]
        seq = model.bert({"input_ids": ids, "input_mask": features[f"input_mask_{side}"],
                          "segment_ids": features[f"segment_ids_{side}"]})["sequence_output"]
        seq = seq.numpy()
        for row in range(2):
            n = int((ids[row] > 0).sum())
            np.testing.assert_allclose(out[key][row], seq[row, :n].mean(axis=0), atol=1e-6)
    u, v = out["u"].numpy(), out["v"].numpy()
    w = model.head.output_weights.numpy()
    b = model.head.output_bias.numpy()
    logits = np.concatenate([u, v, np.abs(u - v)], axis=1) @ w.T + b
    np.testing.assert_allclose(out["logits"].numpy(), logits, atol=1e-5)
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(out["cosine"].numpy(), cos, atol=1e-6)


def test_checkpoint_names_are_the_original_encoder_and_a_named_head():
    config = BertConfig(**TINY_CONFIG)
    with_head = BertSiamese(config, num_labels=2).build_with_dummy_input().name_map()
    encoder = BertModel(config).build_with_dummy_input()
    from bert_tf.bert.checkpoint_map import bert_model_map
    assert set(with_head) == set(bert_model_map(encoder)) | {"siamese/output_weights",
                                                              "siamese/output_bias"}
    assert tuple(with_head["siamese/output_weights"].shape) == (2, 3 * config.hidden_size)
    assert tuple(with_head["siamese/output_bias"].shape) == (2,)
    regression = BertSiamese(config).build_with_dummy_input()
    assert set(regression.name_map()) == set(bert_model_map(encoder))
    assert "logits" not in regression(_features([[2, 3]], [[4, 5]]))


def test_gelu_exact_is_the_erf_form_and_gelu_stays_tanh():
    x = np.array([-3., -1., -0.5, 0., 0.5, 1., 3.], np.float32)
    erf = np.array([0.5 * t * (1 + math.erf(t / math.sqrt(2))) for t in x])
    tanh = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(get_activation("gelu_exact")(x).numpy(), erf, atol=1e-6)
    np.testing.assert_allclose(get_activation("gelu")(x).numpy(), tanh, atol=1e-6)
    assert np.abs(erf - tanh).max() > 1e-4  # the two forms are told apart
    with pytest.raises(ValueError, match="Unsupported activation: gelu_erf"):
        get_activation("gelu_erf")
