"""bert_tf.dropout: 16-bit random draws, the original's rate and scaling (tf.nn.dropout)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.dropout import (Dropout, StepSeeds, built_dropout, drop_threshold, key_counter,
                             random_uint16)


def test_threshold_is_rate_times_65536_rounded():
    assert drop_threshold(0.1) == 6554  # 6553.6 rounded
    assert drop_threshold(0.5) == 32768
    assert drop_threshold(0.0) == 0
    assert drop_threshold(1.0) == 65536
    assert abs(drop_threshold(0.1) / 65536 - 0.1) < 7.7e-6


def _philox_words(shape, key, counter):
    return tf.raw_ops.StatelessRandomUniformFullIntV2(
        shape=shape, key=tf.constant([key], tf.uint64), counter=tf.constant(counter, tf.uint64),
        alg=tf.random.Algorithm.PHILOX.value, dtype=tf.uint32).numpy().astype(np.int64)


def test_uint16_halves_are_the_philox_words_little_endian():
    words = _philox_words([3, 4], 7, [0, 11])
    halves = random_uint16([3, 8], tf.constant([7], tf.uint64),
                           tf.constant([0, 11], tf.uint64)).numpy().astype(np.int64)
    expected = np.stack([words & 0xFFFF, words >> 16], axis=-1).reshape(3, 8)
    np.testing.assert_array_equal(halves, expected)


def test_uint16_odd_last_axis_drops_the_spare_half():
    words = _philox_words([2, 3], 3, [0, 5])
    halves = random_uint16([2, 5], tf.constant([3], tf.uint64),
                           tf.constant([0, 5], tf.uint64)).numpy().astype(np.int64)
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


def test_key_is_the_stream_and_the_counter_holds_step_and_draw():
    """State [stream, step << 32 | draw] -> key [stream], counter [0, step << 32 | draw]: the
    words advance the counter's low half, so no two (step, draw) share a word."""
    for stream, step, draw in ((12345, 0, 0), (12345, 7, 3), (999999999, 3000000, 1)):
        key, counter = key_counter(tf.constant([stream, (step << 32) | draw], tf.int64))
        assert key.dtype == tf.uint64 and counter.dtype == tf.uint64
        np.testing.assert_array_equal(key.numpy(), [stream])
        np.testing.assert_array_equal(counter.numpy(), [0, (step << 32) | draw])
    # Keras' floormod(state, 2^31 - 2) maps step 1 draw 0 onto step 0 draw 2; ours does not
    a = random_uint16([64], *key_counter(tf.constant([5, 1 << 32], tf.int64))).numpy()
    b = random_uint16([64], *key_counter(tf.constant([5, 2], tf.int64))).numpy()
    assert not np.array_equal(a, b)
    key, counter = key_counter(tf.constant([4, 9], tf.int32))  # another backend's int32 state
    assert key.numpy().tolist() == [4] and counter.numpy().tolist() == [0, 9]


def test_xla_gives_the_same_mask_at_a_later_step():
    """XLA reads only the low 32 bits of an int64 seed; the step must reach the mask there too."""
    layer = built_dropout(0.1)
    x = tf.ones([4, 32, 48])
    masks = {}
    for step in (0, 5):
        for xla in (False, True):
            StepSeeds(layer).key_on(tf.constant(step, tf.int64))
            fn = tf.function(lambda t: layer(t, training=True), jit_compile=xla)
            masks[step, xla] = fn(x).numpy()
        np.testing.assert_array_equal(masks[step, True], masks[step, False])
    assert not np.array_equal(masks[0, False], masks[5, False])


def test_step_seeds_key_every_dropout_on_the_step():
    class Two(keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = built_dropout(0.2), built_dropout(0.2)

        def call(self, x, training=False):
            return self.a(x, training=training), self.b(x, training=training)

    model = Two()
    streams = [int(model.a.seed_generator.state.numpy()[0]),
               int(model.b.seed_generator.state.numpy()[0])]
    seeds = StepSeeds(model)
    assert seeds.streams == streams and len(seeds.generators) == 2
    x = tf.ones([8, 64])
    model(x, training=True)  # draws move the states on
    seeds.key_on(tf.constant(3, tf.int64))
    for layer, stream in zip((model.a, model.b), streams):
        np.testing.assert_array_equal(layer.seed_generator.state.numpy(), [stream, 3 << 32])
    first = [m.numpy() for m in model(x, training=True)]
    seeds.key_on(tf.constant(3, tf.int64))
    again = [m.numpy() for m in model(x, training=True)]
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    assert not np.array_equal(first[0], first[1])  # each layer its own stream
    seeds.key_on(tf.constant(4, tf.int64))
    assert not np.array_equal(model(x, training=True)[0].numpy(), first[0])
