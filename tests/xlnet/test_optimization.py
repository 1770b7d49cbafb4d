"""XLNet optimisation (spec xlnet.md 7.3): schedule, TF1 Adam with bias correction and its
slot names, AdamW lists, layer-wise gradient factors — against hand-worked numbers."""
import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError
from bert_tf.training.optimizer import AdamWeightDecay
from bert_tf.xlnet.optimization import (TF1Adam, XLNetLearningRate,
                                                 create_xlnet_optimizer, layer_decay_multiplier)


def _lr(schedule, step):
    return float(schedule(tf.constant(step, tf.int64)))


def test_poly_schedule_with_warmup_and_min_lr_ratio():
    # lr 1e-3, 10 steps, 4 warmup, end = 1e-4: warmup step/4*lr, then linear over 6 steps.
    s = XLNetLearningRate(1e-3, train_steps=10, warmup_steps=4, decay_method="poly",
                          min_lr_ratio=0.1)
    assert _lr(s, 0) == 0.0
    assert _lr(s, 1) == pytest.approx(0.25e-3)
    assert _lr(s, 3) == pytest.approx(0.75e-3)
    assert _lr(s, 4) == pytest.approx(1e-3)                       # decay starts at the top
    assert _lr(s, 7) == pytest.approx((1e-3 - 1e-4) * (1 - 3 / 6) + 1e-4)
    assert _lr(s, 10) == pytest.approx(1e-4)
    assert _lr(s, 50) == pytest.approx(1e-4)                      # held at the end value


def test_poly_without_warmup_and_cos():
    s = XLNetLearningRate(2e-5, train_steps=100)
    assert _lr(s, 0) == pytest.approx(2e-5)
    assert _lr(s, 25) == pytest.approx(1.5e-5)
    c = XLNetLearningRate(1.0, train_steps=12, warmup_steps=2, decay_method="cos",
                          min_lr_ratio=0.2)
    assert _lr(c, 1) == pytest.approx(0.5)
    t = 7 - 2
    assert _lr(c, 7) == pytest.approx(0.8 * 0.5 * (1 + math.cos(math.pi * t / 10)) + 0.2)
    assert _lr(c, 12) == pytest.approx(0.2)


def test_schedule_errors_name_the_flag():
    with pytest.raises(FlagError, match="--decay_method=exp"):
        XLNetLearningRate(1e-5, 10, decay_method="exp")
    with pytest.raises(FlagError, match="--train_steps=5 must be larger than --warmup_steps=5"):
        XLNetLearningRate(1e-5, 5, warmup_steps=5)


def _numpy_tf1_adam(param, grads, lr, eps, b1=0.9, b2=0.999):
    m = np.zeros_like(param)
    v = np.zeros_like(param)
    for t, g in enumerate(grads, 1):
        lr_t = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        m = m + (g - m) * (1 - b1)
        v = v + (g * g - v) * (1 - b2)
        param = param - lr_t * m / (np.sqrt(v) + eps)
    return param, m, v


def test_tf1_adam_matches_the_tf1_formula_and_names_its_slots():
    w0 = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
    grads = [np.array([[0.1, -0.2], [0.3, 0.0]], np.float32),
             np.array([[-0.4, 0.05], [0.2, 1.5]], np.float32),
             np.array([[0.02, 0.02], [-0.7, 0.3]], np.float32)]
    var = tf.Variable(w0)
    opt = TF1Adam(learning_rate=0.01, epsilon=1e-8, variable_names={"model/w": var})
    for g in grads:
        opt.apply([tf.constant(g)], [var])
    expected, m, v = _numpy_tf1_adam(w0.astype(np.float64), [g.astype(np.float64) for g in grads],
                                     0.01, 1e-8)
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5, atol=1e-7)
    slots = opt.slot_variables()
    assert sorted(slots) == ["beta1_power", "beta2_power", "model/w/Adam", "model/w/Adam_1"]
    np.testing.assert_allclose(slots["model/w/Adam"].numpy(), m, rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(slots["model/w/Adam_1"].numpy(), v, rtol=1e-5, atol=1e-10)
    # TF1 holds beta^(t+1) after t updates (the powers of the next update).
    assert float(slots["beta1_power"].numpy()) == pytest.approx(0.9 ** 4)
    assert float(slots["beta2_power"].numpy()) == pytest.approx(0.999 ** 4)


def test_tf1_adam_clips_by_global_norm_then_scales_by_layer():
    var0 = tf.Variable(np.zeros([2], np.float32))
    var1 = tf.Variable(np.zeros([2], np.float32))
    names = {"model/transformer/layer_0/ff/layer_1/bias": var0,
             "model/transformer/layer_1/ff/layer_1/bias": var1}
    opt, _ = create_xlnet_optimizer(0.1, train_steps=10, adam_epsilon=1e-8, clip=1.0,
                                    lr_layer_decay_rate=0.5, variable_names=names)
    assert isinstance(opt, TF1Adam)
    g = np.array([3.0, 4.0], np.float32)  # two of them: global norm 5 * sqrt(2)
    opt.apply([tf.constant(g), tf.constant(g)], [var0, var1])
    clipped = g / (5 * math.sqrt(2))
    # First Adam step: m = 0.1 c g, v = 0.001 (c g)^2, lr_t = lr sqrt(0.001) / 0.1 ->
    # update = lr * sign(g) (epsilon aside) whatever the factor c: layer 0 gets c = 0.5.
    for var, c in ((var0, 0.5), (var1, 1.0)):
        cg = c * clipped
        m, v = 0.1 * cg, 0.001 * cg * cg
        expected = -0.1 * math.sqrt(0.001) / 0.1 * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(var.numpy(), expected, rtol=1e-5)


def test_weight_decay_uses_adamw_with_xlnet_lists():
    names = {n: tf.Variable(np.ones([2], np.float32)) for n in (
        "model/transformer/r_w_bias", "model/transformer/layer_0/ff/layer_1/bias",
        "model/transformer/layer_0/ff/LayerNorm/gamma",
        "model/transformer/layer_0/ff/layer_1/kernel")}
    opt, _ = create_xlnet_optimizer(1e-3, 10, weight_decay=0.01, adam_epsilon=1e-6,
                                    variable_names=names)
    assert isinstance(opt, AdamWeightDecay) and not isinstance(opt, TF1Adam)
    opt.build(list(names.values()))
    assert opt.variable_decay_table() == {
        "model/transformer/r_w_bias": True,                         # include list first
        "model/transformer/layer_0/ff/layer_1/bias": False,
        "model/transformer/layer_0/ff/LayerNorm/gamma": False,
        "model/transformer/layer_0/ff/layer_1/kernel": True}
    assert opt.epsilon == 1e-6 and opt.clip_norm == 1.0


def test_layer_decay_multiplier_by_hand():
    names = [f"model/transformer/layer_{i}/rel_attn/q/kernel" for i in range(3)] + [
        "model/transformer/word_embedding/lookup_table", "model/regression_sts-b/logit/kernel"]
    f = layer_decay_multiplier(names, 0.75)
    assert [f(n) for n in names] == [0.75 ** 2, 0.75, 1.0, 1.0, 1.0]
    assert layer_decay_multiplier(names, 1.0) is None
