"""TensorBoard event files of the shared training loop and of evaluations (issue 15 item 8).

Expected values are worked out by hand: a one-weight linear model ``y = w * x`` with
``w = 0``, ``x = 1``, ``y = 2`` has loss ``(0 - 2)^2 = 4`` and gradient ``2 * (0 - 2) * 1 =
-4`` (global norm 4) at the first update; the BERT schedule without warmup gives
``lr(N) = 1e-3 * (1 - N / 4)`` (spec `bert.md` 7.1).
"""

import glob
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training import loop
from bert_tf.training.eval_results import write_eval_results
from tests.training.event_files import read_scalars


def test_training_writes_the_estimator_scalars_to_output_dir(tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((1,))
    dense = keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros", name="out")
    model = keras.Model(inputs, dense(inputs))
    x = np.ones((1, 1), np.float32)
    data = tf.data.Dataset.from_tensor_slices((x, 2 * x)).batch(1)

    def loss_fn(m, features, labels):
        return tf.reduce_mean(tf.square(m(features, training=True) - labels))

    out = str(tmp_path / "out")
    config = loop.TrainConfig(out, 4, learning_rate=1e-3, num_warmup_steps=0,
                              save_checkpoints_steps=0, warm_started=True, stop_at_step=3,
                              log_every_n_steps=1)
    loop.train(model, loss_fn, data, {"output_weights": dense.kernel}, config)
    scalars = read_scalars(out)  # summary_dir defaults to output_dir (the Estimator's)
    assert {"loss", "train/lr", "train/gnorm", "global_step/sec", "examples/sec"} <= set(scalars)
    assert sorted(scalars["loss"]) == [1, 2, 3]
    assert scalars["loss"][1] == pytest.approx(4.0)
    assert scalars["train/gnorm"][1] == pytest.approx(4.0)
    for step in (1, 2, 3):
        assert scalars["train/lr"][step] == pytest.approx(1e-3 * (1 - step / 4), rel=1e-6)
        assert scalars["examples/sec"][step] > 0 and scalars["global_step/sec"][step] > 0
    assert scalars["loss"][2] < 4.0  # the first update moved w towards 2

    every2 = str(tmp_path / "every2")  # every log_every_n_steps and the last step
    loop.train(model, loss_fn, data, {"output_weights": dense.kernel}, loop.TrainConfig(
        every2, 5, save_checkpoints_steps=0, warm_started=True, log_every_n_steps=2))
    assert sorted(read_scalars(every2)["loss"]) == [2, 4, 5]

    quiet = str(tmp_path / "quiet")
    loop.train(model, loss_fn, data, {"output_weights": dense.kernel}, loop.TrainConfig(
        quiet, 1, save_checkpoints_steps=0, warm_started=True, write_summaries=False))
    assert not glob.glob(os.path.join(quiet, "events*"))


def test_eval_results_also_go_to_the_eval_folder(tmp_path):
    write_eval_results(str(tmp_path), {"eval_accuracy": np.float32(0.75), "eval_loss": 0.5,
                                       "global_step": 7, "pred": np.arange(3), "path": "x"})
    scalars = read_scalars(str(tmp_path / "eval"))
    assert scalars == {"eval_accuracy": {7: 0.75}, "eval_loss": {7: 0.5}}
    assert os.path.exists(tmp_path / "eval_results.txt")
