"""bert_tf.dropout: 16-bit random draws, the original's rate and scaling (tf.nn.dropout)."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.dropout import Dropout, built_dropout, drop_threshold, random_uint16


def test_threshold_is_rate_times_65536_rounded():
    assert drop_threshold(0.1) == 6554  # 6553.6 rounded
    assert drop_threshold(0.5) == 32768
    assert drop_threshold(0.0) == 0
    assert drop_threshold(1.0) == 65536
    assert abs(drop_threshold(0.1) / 65536 - 0.1) < 7.7e-6


def test_uint16_halves_are_the_philox_words_little_endian():
    seed = tf.constant([7, 11], tf.int32)
    words = tf.random.stateless_uniform([3, 4], seed, minval=None, maxval=None,
                                        dtype=tf.uint32).numpy().astype(np.int64)
    halves = random_uint16([3, 8], seed).numpy().astype(np.int64)
    expected = np.stack([words & 0xFFFF, words >> 16], axis=-1).reshape(3, 8)
    np.testing.assert_array_equal(halves, expected)


def test_uint16_odd_last_axis_drops_the_spare_half():
    seed = tf.constant([3, 5], tf.int32)
    words = tf.random.stateless_uniform([2, 3], seed, minval=None, maxval=None,
                                        dtype=tf.uint32).numpy().astype(np.int64)
    halves = random_uint16([2, 5], seed).numpy().astype(np.int64)
    expected = np.stack([words & 0xFFFF, words >> 16], axis=-1).reshape(2, 6)[:, :5]
    np.testing.assert_array_equal(halves, expected)


@pytest.mark.parametrize("dtype", [tf.float32, tf.bfloat16])
def test_rate_and_scaling(dtype):
    layer = built_dropout(0.1)
    x = tf.fill([16, 12, 128, 128], tf.constant(2.0, dtype))  # 3,145,728 elements
    y = tf.function(lambda t: layer.call(t, training=True))(x)  # call: no autocast to float32
    assert y.dtype == dtype and y.shape == x.shape
    y = y.numpy().astype(np.float64)
    p = 6554 / 65536
    n = y.size
    # binomial: 6 standard deviations of the drop fraction (sqrt(p (1 - p) / n) = 1.7e-4)
    assert abs((y == 0).mean() - p) < 6 * np.sqrt(p * (1 - p) / n)
    kept = np.unique(y[y != 0])
    scale = np.float64(np.array(1 / 0.9, dtype.as_numpy_dtype).astype(np.float64))
    expected = np.array(2 * scale, dtype.as_numpy_dtype).astype(np.float64)
    np.testing.assert_array_equal(kept, [expected])


def test_identity_when_not_training_and_when_rate_zero():
    x = tf.random.normal([4, 6])
    np.testing.assert_array_equal(built_dropout(0.1)(x, training=False).numpy(), x.numpy())
    np.testing.assert_array_equal(built_dropout(0.0)(x, training=True).numpy(), x.numpy())


def test_same_seed_state_same_mask_and_the_state_advances():
    layer = built_dropout(0.3)
    state = layer.seed_generator.state.numpy().copy()
    x = tf.ones([8, 64])
    first = layer(x, training=True).numpy()
    second = layer(x, training=True).numpy()
    assert not np.array_equal(first, second)
    layer.seed_generator.state.assign(state)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), first)


def test_xla_gives_the_same_mask():
    layer = built_dropout(0.1)
    state = layer.seed_generator.state.numpy().copy()
    x = tf.ones([4, 32, 48])
    plain = tf.function(lambda t: layer(t, training=True))(x).numpy()
    layer.seed_generator.state.assign(state)
    xla = tf.function(lambda t: layer(t, training=True), jit_compile=True)(x).numpy()
    np.testing.assert_array_equal(xla, plain)


def test_config_round_trip():
    layer = Dropout(0.25, name="d")
    again = Dropout.from_config(layer.get_config())
    assert isinstance(again, Dropout) and again.rate == 0.25
