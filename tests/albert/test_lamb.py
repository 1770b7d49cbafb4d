"""Lamb (original ALBERT lamb_optimizer.LAMBOptimizer) against values worked out by hand, and
the ALBERT create_optimizer settings (google-research/albert@b772393 optimization.py)."""
import keras
import numpy as np
import pytest

from bert_tf.albert.lamb import Lamb, create_albert_optimizer
from bert_tf.training.optimizer import AdamWeightDecay


def test_two_lamb_steps_by_hand():
    """kernel w = [3, 4] (||w|| = 5), g = [0.6, 0.8] twice, lr 0.1, weight decay 0.01:

    step 1: m = [0.06, 0.08], v = [0.00036, 0.00064],
            u = m / (sqrt(v) + 1e-6) + 0.01 w = [3.192111002, 3.202152665] (||u|| = 4.521432775),
            w <- w - 0.1 * (5 / ||u||) u = [2.647002271, 3.645891820]: a step of exactly
            lr * ||w|| = 0.5;
    step 2: m = [0.114, 0.152], v = [0.00071964, 0.00127936], same rule ->
            [2.328791685, 3.326934918].
    bias [1, -2], g = [0.5, -0.5]: excluded from decay and adaptation (AdamWeightDecay's
    step): 1 - 0.1 * 0.05 / (sqrt(0.00025) + 1e-6) = 0.683792233.
    zero kernel, g = [1, 0]: ||w|| = 0 gives ratio 1: -0.1 * 0.1 / (sqrt(0.001) + 1e-6)
    = -0.316217766, and 0 where g is 0."""
    w = keras.Variable(np.array([3.0, 4.0], np.float32))
    b = keras.Variable(np.array([1.0, -2.0], np.float32))
    z = keras.Variable(np.array([0.0, 0.0], np.float32))
    opt = Lamb(0.1, weight_decay_rate=0.01, exclude_from_weight_decay=["LayerNorm", "bias"],
               variable_names={"bert/x/kernel": w, "bert/x/bias": b, "bert/z/kernel": z})
    grads = [np.array([0.6, 0.8], np.float32), np.array([0.5, -0.5], np.float32),
             np.array([1.0, 0.0], np.float32)]
    opt.apply(grads, [w, b, z])
    np.testing.assert_allclose(w.numpy(), [2.647002271, 3.645891820], rtol=1e-6)
    assert abs(np.linalg.norm(np.array([3.0, 4.0]) - w.numpy()) - 0.5) < 1e-6
    np.testing.assert_allclose(b.numpy(), [0.683792233, -1.683792233], rtol=1e-6)
    np.testing.assert_allclose(z.numpy(), [-0.316217766, 0.0], rtol=1e-6, atol=1e-9)
    slots = opt.slot_variables()
    np.testing.assert_allclose(slots["bert/x/kernel/adam_m"].numpy(), [0.06, 0.08], rtol=1e-6)
    np.testing.assert_allclose(slots["bert/x/kernel/adam_v"].numpy(), [0.00036, 0.00064],
                               rtol=1e-5)
    opt.apply([grads[0]], [w])
    np.testing.assert_allclose(w.numpy(), [2.328791685, 3.326934918], rtol=1e-6)
    assert opt.layer_adaptation_table() == {"bert/x/kernel": True, "bert/x/bias": False,
                                            "bert/z/kernel": True}


def test_layer_adaptation_exclusion_defaults_to_the_decay_exclusion():
    opt = Lamb(0.1, exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"])
    assert opt.do_layer_adaptation("bert/encoder/transformer/group_0/inner_group_0/ffn_1/"
                                   "intermediate/dense/kernel")
    assert not opt.do_layer_adaptation("bert/embeddings/LayerNorm/gamma")
    assert not Lamb(0.1, exclude_from_weight_decay=["bias"],
                    exclude_from_layer_adaptation=["kernel"]).do_layer_adaptation("a/kernel")


def test_create_albert_optimizer_settings():
    """optimization.create_optimizer: weight decay 0.01, betas 0.9/0.999, eps 1e-6, clip 1.0;
    lr = init_lr * (1 - step/T) ** poly_power after warmup, warmup counted from
    start_warmup_step: at step 30 with start 20, warmup 20: lr = 1e-3 * 10 / 20."""
    opt, schedule = create_albert_optimizer(1e-3, 100, 20, optimizer="lamb", poly_power=2.0,
                                            start_warmup_step=20)
    assert isinstance(opt, Lamb) and isinstance(opt, AdamWeightDecay)
    assert (opt.weight_decay_rate, opt.beta_1, opt.beta_2, opt.epsilon, opt.clip_norm) == (
        0.01, 0.9, 0.999, 1e-6, 1.0)
    assert opt.exclude_from_weight_decay_patterns == ["LayerNorm", "layer_norm", "bias"]
    np.testing.assert_allclose(float(schedule(30)), 1e-3 * 10 / 20, rtol=1e-6)
    # after warmup: (1 - 50/100) ** 2 = 0.25
    np.testing.assert_allclose(float(schedule(50)), 1e-3 * 0.25, rtol=1e-6)
    adamw, _ = create_albert_optimizer(1e-3, 100, 0, optimizer="adamw")
    assert type(adamw) is AdamWeightDecay
    with pytest.raises(ValueError, match="Not supported optimizer"):
        create_albert_optimizer(1e-3, 100, 0, optimizer="sgd")
