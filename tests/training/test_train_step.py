"""The training data iterator and the update step, on values worked out by hand.

The model is ``pred = x @ w`` with ``w = [[1], [2]]`` and loss ``mean((pred - y)^2)``, so the
gradient of one example is ``2 (pred - y) x``; plain SGD with learning rate 1 makes the
update ``w <- w - g`` (the BERT optimizer's own formulas are tested in test_optimizer.py).
"""
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.train_step import TrainStep, distributed_iterator

X = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
Y = np.array([[0.0], [1.0]], np.float32)
# Example 1: pred 1, y 0 -> loss 1, gradient 2 * 1 * [1, 0] = [2, 0].
# Example 2: pred 2, y 1 -> loss 1, gradient 2 * 1 * [0, 1] = [0, 2].


def linear():
    inputs = keras.Input((2,))
    dense = keras.layers.Dense(1, use_bias=False)
    model = keras.Model(inputs, dense(inputs))
    dense.kernel.assign([[1.0], [2.0]])
    return model, dense.kernel


def mse(model, features, labels):
    return tf.reduce_mean(tf.square(model(features, training=True) - labels))


def sgd(model, scaled=False):
    optimizer = keras.optimizers.SGD(learning_rate=1.0)
    if scaled:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer, initial_scale=2.0 ** 10)
    optimizer.build(model.trainable_variables)
    return optimizer


def pairs():
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(1)


def values(iterator, n):
    return [int(next(iterator).numpy()[0]) for _ in range(n)]


def test_iterator_repeats_and_skips():
    strategy = tf.distribute.get_strategy()
    five = tf.data.Dataset.range(5).batch(1)
    assert values(distributed_iterator(strategy, five), 7) == [0, 1, 2, 3, 4, 0, 1]
    assert values(distributed_iterator(strategy, five, skip=2), 6) == [2, 3, 4, 0, 1, 2]
    # A function of the input context; the skip counts in the repeated data: 7 -> 2.
    seen = []

    def dataset_fn(ctx):
        seen.append(ctx.num_input_pipelines)
        return tf.data.Dataset.range(5).batch(1)

    assert values(distributed_iterator(strategy, dataset_fn, skip=7), 4) == [2, 3, 4, 0]
    assert seen == [1]


def test_one_batch_per_update():
    model, w = linear()
    optimizer = sgd(model)
    step = TrainStep(model, mse, optimizer, tf.distribute.get_strategy())
    iterator = distributed_iterator(tf.distribute.get_strategy(), pairs())
    loss, examples = step(iterator, 1)
    np.testing.assert_allclose(w.numpy(), [[-1.0], [2.0]])  # [1, 2] - [2, 0]
    assert float(loss) == pytest.approx(1.0) and int(examples) == 1
    # Example 2 now: pred = 2, loss 1, gradient [0, 2] -> w = [-1, 0].
    loss, examples = step(iterator, 1)
    np.testing.assert_allclose(w.numpy(), [[-1.0], [0.0]])
    assert float(loss) == pytest.approx(1.0) and int(optimizer.iterations) == 2


@pytest.mark.parametrize("scaled", [False, True])
def test_accumulation_applies_the_mean_of_two_gradients(scaled):
    model, w = linear()
    optimizer = sgd(model, scaled)
    strategy = tf.distribute.get_strategy()
    step = TrainStep(model, mse, optimizer, strategy, accumulation=2)
    loss, examples = step(distributed_iterator(strategy, pairs()), 1)
    # mean([2, 0], [0, 2]) = [1, 1]: w = [1, 2] - [1, 1] = [0, 1], in ONE update.
    np.testing.assert_allclose(w.numpy(), [[0.0], [1.0]], atol=1e-6)
    assert float(loss) == pytest.approx(1.0)  # mean of the two unscaled losses
    assert int(examples) == 2
    assert int(optimizer.iterations) == 1
    np.testing.assert_array_equal(step.accumulators[0].numpy(), np.zeros([2, 1]))


def test_several_updates_in_one_call_and_xla():
    model, w = linear()
    strategy = tf.distribute.get_strategy()
    step = TrainStep(model, mse, sgd(model), strategy, use_xla=True)
    loss, examples = step(distributed_iterator(strategy, pairs()), 2)
    np.testing.assert_allclose(w.numpy(), [[-1.0], [0.0]])  # as two calls of one update
    assert float(loss) == pytest.approx(1.0) and int(examples) == 2


def test_features_without_labels():
    model, w = linear()
    labels_seen = []

    def square(m, features, labels):
        labels_seen.append(labels)
        return tf.reduce_mean(tf.square(m(features, training=True)))

    strategy = tf.distribute.get_strategy()
    step = TrainStep(model, square, sgd(model), strategy)
    step(distributed_iterator(strategy, tf.data.Dataset.from_tensor_slices(X).batch(1)), 1)
    # pred 1, loss 1, gradient 2 * 1 * [1, 0] -> w = [-1, 2].
    np.testing.assert_allclose(w.numpy(), [[-1.0], [2.0]])
    assert labels_seen and all(label is None for label in labels_seen)


def test_accumulation_below_one_is_an_error():
    model, _ = linear()
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be >= 1, got 0"):
        TrainStep(model, mse, sgd(model), tf.distribute.get_strategy(), accumulation=0)


@pytest.mark.parametrize("accumulation", [1, 2])
def test_a_variable_the_loss_does_not_use_is_skipped_without_a_warning(accumulation):
    # BERT's pooler under the SQuAD loss: the original's optimizer skips a None gradient
    # silently; Keras warned "Gradients do not exist for variables" on every run.
    inputs = keras.Input((2,))
    dense = keras.layers.Dense(1, use_bias=False)
    unused = keras.layers.Dense(1, use_bias=False, kernel_initializer="ones")
    model = keras.Model(inputs, [dense(inputs), unused(inputs)])
    dense.kernel.assign([[1.0], [2.0]])

    def first_output_mse(model, features, labels):
        return tf.reduce_mean(tf.square(model(features, training=True)[0] - labels))

    step = TrainStep(model, first_output_mse, sgd(model), tf.distribute.get_strategy(),
                     accumulation=accumulation)
    iterator = distributed_iterator(tf.distribute.get_strategy(), pairs())
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        step(iterator, 1)
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    # one batch: [1, 2] - [2, 0]; two accumulated: [1, 2] - mean([2, 0], [0, 2])
    expected = [[-1.0], [2.0]] if accumulation == 1 else [[0.0], [1.0]]
    np.testing.assert_allclose(dense.kernel.numpy(), expected)
    np.testing.assert_allclose(unused.kernel.numpy(), [[1.0], [1.0]])


def test_a_stop_request_ends_the_call_after_the_running_update():
    """bert_tf: SIGTERM during a chunk of steps waited for the whole chunk (Python's handler
    runs only between TensorFlow calls). A stop requested before the call: no update, nothing
    consumed; cleared: the n updates, the first one example 1's (w [1, 2] -> [-1, 2], by hand,
    as test_one_batch_per_update)."""
    model, w = linear()
    optimizer = sgd(model)
    step = TrainStep(model, mse, optimizer, tf.distribute.get_strategy())
    iterator = distributed_iterator(tf.distribute.get_strategy(), pairs())
    step.request_stop()
    assert step.stop_requested()
    loss, examples = step(iterator, 3)
    assert int(optimizer.iterations) == 0 and int(examples) == 0 and float(loss) == 0.0
    np.testing.assert_allclose(w.numpy(), [[1.0], [2.0]])
    step.clear_stop()
    assert not step.stop_requested()
    loss, examples = step(iterator, 1)
    np.testing.assert_allclose(w.numpy(), [[-1.0], [2.0]])
    assert int(examples) == 1 and float(loss) == pytest.approx(1.0)


def cut_short_by_another_thread(strategy):
    """Runs a call of 10 ** 7 updates under ``strategy`` while a thread requests a stop after
    1 s; returns ``(updates run, seconds, loss, stop_requested)``."""
    import threading
    import time
    with strategy.scope():
        model, w = linear()
        w.assign([[0.0], [1.0]])  # pred = y for both examples: loss 0, gradient 0
        optimizer = sgd(model)
        step = TrainStep(model, mse, optimizer, strategy)
    iterator = distributed_iterator(strategy, pairs().unbatch().batch(2))
    step(iterator, 1)  # traced
    timer = threading.Timer(1.0, step.request_stop)
    timer.start()
    began = time.time()
    loss, _ = step(iterator, 10 ** 7)
    seconds = time.time() - began
    timer.join()
    done = int(optimizer.iterations.numpy()) - 1
    return done, seconds, float(loss), step.stop_requested()


def test_a_stop_requested_from_another_thread_cuts_a_running_call():
    """The watcher thread of bert_tf.stop_requests calls request_stop while the main thread is
    inside the call: the call returns with fewer than its n updates (not before the request),
    the loss the mean of those run (0: w is already the solution)."""
    done, seconds, loss, stopped = cut_short_by_another_thread(tf.distribute.get_strategy())
    assert 0 < done < 10 ** 7 and seconds >= 1.0 and loss == 0.0 and stopped


def test_a_stop_request_cuts_a_call_under_mirrored_strategy(tmp_path):
    """The same under MirroredStrategy over two CPU replicas (the stop variable is mirrored),
    in a child process (the logical CPUs must be set before TensorFlow starts)."""
    import os
    import subprocess
    import sys
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import tensorflow as tf\n"
            "cpu = tf.config.list_physical_devices('CPU')[0]\n"
            "tf.config.set_logical_device_configuration(\n"
            "    cpu, [tf.config.LogicalDeviceConfiguration()] * 2)\n"
            "from tests.training.test_train_step import cut_short_by_another_thread\n"
            "s = tf.distribute.MirroredStrategy(['/cpu:0', '/cpu:1'])\n"
            "print('RESULT', *cut_short_by_another_thread(s))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=repo, env=dict(os.environ, PYTHONPATH=repo))
    assert proc.returncode == 0, proc.stderr[-3000:]
    done, seconds, loss, stopped = proc.stdout.split("RESULT ")[1].split()
    assert 0 < int(done) < 10 ** 7 and float(seconds) >= 1.0
    assert float(loss) == 0.0 and stopped == "True"
