"""WarmupLinearDecay against spec bert.md 7.1, restated in numpy below."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError
from bert_tf.training.schedule import WarmupLinearDecay


def spec_lr(step, init_lr, num_train_steps, num_warmup_steps):
    """Spec 7.1 in float32: polynomial_decay(end 0, power 1) from step 0, then linear warmup."""
    f = np.float32
    decay = f(init_lr) * (f(1.0) - f(min(step, num_train_steps)) / f(num_train_steps))
    if num_warmup_steps and step < num_warmup_steps:
        return f(init_lr) * (f(step) / f(num_warmup_steps))
    return decay


@pytest.mark.parametrize("step,expected", [
    (0, 0.0),            # the first update uses lr 0
    (1, 1e-6),           # 1e-4 * 1/100
    (50, 5e-5),
    (99, 9.9e-5),
    (100, 9e-5),         # jump: 1e-4 * (1 - 100/1000), decay counted from step 0
    (101, 8.99e-5),
    (500, 5e-5),
    (999, 1e-7),
    (1000, 0.0),
    (1500, 0.0),         # held at end_learning_rate 0, no cycling
])
def test_warmup_then_decay_hand_values(step, expected):
    sched = WarmupLinearDecay(1e-4, num_train_steps=1000, num_warmup_steps=100)
    got = sched(tf.constant(step, tf.int64))
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-12)
    np.testing.assert_allclose(got.numpy(), spec_lr(step, 1e-4, 1000, 100), rtol=1e-6, atol=0)


@pytest.mark.parametrize("warmup", [0, None])
def test_no_warmup_is_plain_linear_decay(warmup):
    sched = WarmupLinearDecay(2e-5, num_train_steps=400, num_warmup_steps=warmup)
    for step, expected in [(0, 2e-5), (100, 1.5e-5), (200, 1e-5), (399, 5e-8), (400, 0.0)]:
        np.testing.assert_allclose(sched(step).numpy(), expected, rtol=1e-5, atol=1e-12)


def test_jump_at_end_of_warmup():
    sched = WarmupLinearDecay(1.0, num_train_steps=10, num_warmup_steps=5)
    before = sched(4).numpy()
    at = sched(5).numpy()
    np.testing.assert_allclose(before, 0.8, rtol=1e-6)
    np.testing.assert_allclose(at, 0.5, rtol=1e-6)  # 1 * (1 - 5/10), lower than step 4


def test_matches_numpy_restatement_every_step():
    sched = WarmupLinearDecay(5e-5, num_train_steps=37, num_warmup_steps=7)
    steps = tf.range(0, 45, dtype=tf.int64)
    got = tf.map_fn(sched, steps, fn_output_signature=tf.float32).numpy()
    want = np.array([spec_lr(s, 5e-5, 37, 7) for s in range(45)], np.float32)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_inside_tf_function_with_int64_variable():
    step = tf.Variable(3, dtype=tf.int64)
    sched = WarmupLinearDecay(1e-3, num_train_steps=100, num_warmup_steps=10)
    fn = tf.function(lambda: sched(step))
    np.testing.assert_allclose(fn().numpy(), 3e-4, rtol=1e-6)
    step.assign(20)
    np.testing.assert_allclose(fn().numpy(), 8e-4, rtol=1e-6)


def test_get_config_round_trips():
    sched = WarmupLinearDecay(3e-5, num_train_steps=123, num_warmup_steps=12, name="lr")
    config = sched.get_config()
    assert config == {"init_lr": 3e-5, "num_train_steps": 123, "num_warmup_steps": 12, "name": "lr",
                      "power": 1.0, "start_warmup_step": 0}
    again = WarmupLinearDecay.from_config(config)
    assert again.get_config() == config
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(sched))
    assert isinstance(restored, WarmupLinearDecay)
    assert restored.get_config() == config


@pytest.mark.parametrize("steps", [0, -5, None])
def test_bad_num_train_steps_raises(steps):
    with pytest.raises(FlagError, match="num_train_steps"):
        WarmupLinearDecay(1e-4, num_train_steps=steps)


@pytest.mark.parametrize("kw,flag", [
    (dict(num_train_steps=2 ** 31), "--num_train_steps=2147483648"),
    (dict(num_train_steps=10, num_warmup_steps=10 ** 30), "--num_warmup_steps=" + "1" + "0" * 30),
    (dict(num_train_steps=10, start_warmup_step=2 ** 40), "--start_warmup_step=1099511627776"),
])
def test_step_counts_beyond_int32_are_refused_naming_the_flag(kw, flag):
    """The original's warmup counts the step in int32; 1e30 steps gave an OverflowError."""
    with pytest.raises(FlagError, match=f"^{flag} gives .* training steps: more than 2147483647"):
        WarmupLinearDecay(1e-4, **kw)
    assert WarmupLinearDecay(1e-4, 2 ** 31 - 1, 2 ** 31 - 1).num_warmup_steps == 2 ** 31 - 1


def test_negative_warmup_raises():
    with pytest.raises(FlagError, match="num_warmup_steps"):
        WarmupLinearDecay(1e-4, num_train_steps=10, num_warmup_steps=-1)
