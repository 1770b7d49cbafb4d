"""Where a training run starts: resume, warm start or fresh (spec `bert.md` 3.3, 3.4).

Every checkpoint read here is written by the test with hand-chosen values.
"""
import logging
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io
from bert_tf.training.optimizer import create_optimizer
from bert_tf.training.train_state import TrainState, restore_or_warm_start

W0 = np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]], np.float32)


def linear():
    inputs = keras.Input((3,))
    dense = keras.layers.Dense(2, name="dense")
    model = keras.Model(inputs, dense(inputs))
    dense.kernel.assign(W0)
    dense.bias.assign(np.zeros([2], np.float32))
    return model, {"cls/kernel": dense.kernel, "cls/bias": dense.bias}


def state():
    model, name_map = linear()
    optimizer, _ = create_optimizer(0.1, 10, 0, variable_names=name_map)
    return TrainState.build(model, name_map, optimizer, tf.distribute.get_strategy())


def full_checkpoint(prefix, step, fill):
    checkpoint_io.write_checkpoint(prefix, {
        "cls/kernel": np.full([3, 2], fill, np.float32),
        "cls/bias": np.array([1.0, 2.0], np.float32),
        "cls/kernel/adam_m": np.full([3, 2], 0.25, np.float32),
        "cls/kernel/adam_v": np.full([3, 2], 0.0625, np.float32),
        "cls/bias/adam_m": np.array([0.5, -0.5], np.float32),
        "cls/bias/adam_v": np.array([0.125, 0.125], np.float32),
        "global_step": np.int64(step)})


def test_state_holds_weights_slots_and_global_step():
    s = state()
    assert sorted(s.variables) == ["cls/bias", "cls/bias/adam_m", "cls/bias/adam_v",
                                   "cls/kernel", "cls/kernel/adam_m", "cls/kernel/adam_v",
                                   "global_step"]
    assert s.variables["global_step"] is s.adam.iterations
    assert s.global_step == 0
    assert tuple(s.variables["cls/kernel/adam_v"].shape) == (3, 2)
    np.testing.assert_array_equal(np.asarray(s.variables["cls/kernel/adam_m"]), np.zeros([3, 2]))
    assert sorted(s.trainable_by_name()) == ["cls/bias", "cls/kernel"]


def test_resume_restores_everything_from_the_newest_checkpoint(tmp_path):
    out = str(tmp_path / "out")
    full_checkpoint(os.path.join(out, "model.ckpt-7"), 7, 0.5)
    full_checkpoint(os.path.join(out, "model.ckpt-10"), 10, 1.5)  # newest by step, not name
    s = state()
    start = restore_or_warm_start(s, out, init_checkpoint=str(tmp_path / "does_not_exist"))
    assert start.resumed_from == os.path.join(out, "model.ckpt-10")
    assert start.warm_start is None  # init_checkpoint ignored, not even opened
    assert s.global_step == 10
    np.testing.assert_array_equal(s.name_map["cls/kernel"].numpy(), np.full([3, 2], 1.5))
    np.testing.assert_array_equal(s.name_map["cls/bias"].numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(s.variables["cls/kernel/adam_v"]),
                                  np.full([3, 2], 0.0625))
    np.testing.assert_array_equal(np.asarray(s.variables["cls/bias/adam_m"]), [0.5, -0.5])


def test_warm_start_loads_trainable_weights_only(tmp_path, caplog):
    init = str(tmp_path / "init" / "bert_model.ckpt")
    checkpoint_io.write_checkpoint(init, {
        "cls/kernel": np.full([3, 2], 2.0, np.float32),
        "cls/kernel/adam_m": np.full([3, 2], 9.0, np.float32),
        "global_step": np.int64(77),
        "bert/unused": np.zeros([4], np.float32)})
    s = state()
    with caplog.at_level(logging.INFO):
        start = restore_or_warm_start(s, str(tmp_path / "out"), init)
    assert start.resumed_from is None
    assert start.warm_start.loaded == ["cls/kernel"]
    assert start.warm_start.missing == ["cls/bias"]
    assert start.warm_start.unused == ["bert/unused"]
    np.testing.assert_array_equal(s.name_map["cls/kernel"].numpy(), np.full([3, 2], 2.0))
    np.testing.assert_array_equal(s.name_map["cls/bias"].numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(np.asarray(s.variables["cls/kernel/adam_m"]), np.zeros([3, 2]))
    assert s.global_step == 0  # 77 is not restored
    assert "name = cls/kernel, shape = (3, 2), *INIT_FROM_CKPT*" in caplog.text
    assert "name = cls/bias, shape = (2,)\n" in caplog.text + "\n"


def test_fresh_start_keeps_initial_values(tmp_path):
    s = state()
    start = restore_or_warm_start(s, str(tmp_path / "missing"))
    assert start.resumed_from is None and start.warm_start is None
    assert s.global_step == 0
    np.testing.assert_array_equal(s.name_map["cls/kernel"].numpy(), W0)


def test_a_checkpoint_of_another_model_names_the_variable(tmp_path):
    out = str(tmp_path / "out")
    checkpoint_io.write_checkpoint(os.path.join(out, "model.ckpt-5"), {
        "cls/kernel": np.zeros([7], np.float32), "cls/bias": np.zeros([2], np.float32)})
    with pytest.raises(CheckpointError, match=r"cls/kernel has shape \[7\]"):
        restore_or_warm_start(state(), out)


def test_build_errors():
    model, name_map = linear()
    strategy = tf.distribute.get_strategy()
    with pytest.raises(ValueError, match="AdamWeightDecay"):
        TrainState.build(model, name_map, keras.optimizers.SGD(0.1), strategy)
    partial = {"cls/kernel": name_map["cls/kernel"]}
    optimizer, _ = create_optimizer(0.1, 10, 0, variable_names=partial)
    with pytest.raises(ValueError, match="missing from the checkpoint name map.*dense/bias"):
        TrainState.build(model, partial, optimizer, strategy)
    empty = keras.Sequential([keras.layers.Dense(2)])  # not built: no variables
    with pytest.raises(ValueError, match="no variables"):
        TrainState.build(empty, {}, create_optimizer(0.1, 10, 0)[0], strategy)


def test_tf_hub_prefix_is_mapped_and_said(tmp_path, caplog):
    # issue 15 item 1: TF-Hub exports name every variable module/<name>; the original's
    # init_from_checkpoint loaded none of them and trained from random weights.
    init = str(tmp_path / "hub" / "model.ckpt")
    checkpoint_io.write_checkpoint(init, {
        "module/cls/kernel": np.full([3, 2], 2.0, np.float32),
        "module/cls/bias": np.array([0.5, -1.0], np.float32),
        "global_step": np.int64(3)})
    s = state()
    with caplog.at_level(logging.INFO):
        start = restore_or_warm_start(s, str(tmp_path / "out"), init)
    assert start.warm_start.loaded == ["cls/kernel", "cls/bias"]
    assert start.warm_start.unused == [] and start.warm_start.missing == []
    np.testing.assert_array_equal(s.name_map["cls/kernel"].numpy(), np.full([3, 2], 2.0))
    np.testing.assert_array_equal(s.name_map["cls/bias"].numpy(), [0.5, -1.0])
    said = [r.getMessage() for r in caplog.records if "prefix 'module/'" in r.getMessage()]
    assert len(said) == 1 and "mapped 2 names" in said[0]


def test_init_checkpoint_with_none_of_the_variables_refuses_to_train(tmp_path):
    init = str(tmp_path / "other" / "model.ckpt")
    checkpoint_io.write_checkpoint(init, {"encoder/w": np.zeros([3, 2], np.float32),
                                          "head/b": np.zeros([2], np.float32)})
    s = state()
    with pytest.raises(CheckpointError) as e:
        restore_or_warm_start(s, str(tmp_path / "out"), init)
    msg = str(e.value)
    assert "none of the model's 2 variables" in msg
    assert "cls/kernel" in msg and "encoder/w" in msg  # the first names of both sides
    np.testing.assert_array_equal(s.name_map["cls/kernel"].numpy(), W0)


def test_fresh_start_says_it_trains_from_scratch(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        restore_or_warm_start(state(), str(tmp_path / "missing"))
    lines = [r.getMessage() for r in caplog.records if "from scratch" in r.getMessage()]
    assert len(lines) == 1 and lines[0].startswith("no checkpoint in")
    caplog.clear()
    with caplog.at_level(logging.INFO):  # the XLNet tasks load --init_checkpoint themselves
        restore_or_warm_start(state(), str(tmp_path / "missing"), warm_started=True)
    assert "from scratch" not in caplog.text


def encoder_state():
    inputs = keras.Input((3,))
    body = keras.layers.Dense(2, name="body")
    head = keras.layers.Dense(2, name="head")
    model = keras.Model(inputs, head(body(inputs)))
    name_map = {"bert/encoder/layer_0/kernel": body.kernel, "bert/encoder/layer_0/bias": body.bias,
                "output_weights": head.kernel, "output_bias": head.bias}
    optimizer, _ = create_optimizer(0.1, 10, 0, variable_names=name_map)
    return TrainState.build(model, name_map, optimizer, tf.distribute.get_strategy())


def test_warm_start_missing_encoder_variables_needs_the_flag(tmp_path, caplog):
    # issue 27 item 6: a checkpoint missing a whole encoder layer trained it from random values.
    init = checkpoint_io.write_checkpoint(str(tmp_path / "bert_model.ckpt"), {
        "bert/encoder/layer_0/kernel": np.ones([3, 2], np.float32)})
    with pytest.raises(CheckpointError) as caught:
        restore_or_warm_start(encoder_state(), str(tmp_path / "a"), init)
    assert str(caught.value) == (
        f"{init}: --init_checkpoint lacks 1 encoder variables, which would train from their "
        "initial values (bert/encoder/layer_0/bias); give --allow_partial_init_checkpoint if "
        "that is meant")
    with caplog.at_level(logging.WARNING):
        start = restore_or_warm_start(encoder_state(), str(tmp_path / "b"), init,
                                      allow_partial=True)
    assert start.warm_start.missing == ["bert/encoder/layer_0/bias", "output_weights",
                                        "output_bias"]
    assert "--allow_partial_init_checkpoint" in caplog.text
    # the task head missing alone is the normal fine-tuning start: no error
    full = checkpoint_io.write_checkpoint(str(tmp_path / "full.ckpt"), {
        "bert/encoder/layer_0/kernel": np.ones([3, 2], np.float32),
        "bert/encoder/layer_0/bias": np.ones([2], np.float32)})
    assert restore_or_warm_start(encoder_state(), str(tmp_path / "c"), full).warm_start.missing \
        == ["output_weights", "output_bias"]


def test_warm_start_and_resume_refuse_non_finite_values(tmp_path):
    init = checkpoint_io.write_checkpoint(str(tmp_path / "nan.ckpt"), {
        "cls/kernel": np.full([3, 2], np.nan, np.float32), "cls/bias": np.zeros([2], np.float32)})
    with pytest.raises(CheckpointError, match=r"nan\.ckpt: cls/kernel holds nan \(6 non-finite"):
        restore_or_warm_start(state(), str(tmp_path / "a"), init)
    out = str(tmp_path / "out")
    full_checkpoint(os.path.join(out, "model.ckpt-3"), 3, np.inf)
    with pytest.raises(CheckpointError, match=r"model\.ckpt-3: cls/kernel holds inf"):
        restore_or_warm_start(state(), out)


def _truncate(prefix):
    data = prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)


def test_truncated_newest_checkpoint_names_the_intact_one_before_it(tmp_path):
    out = str(tmp_path / "out")
    for step in (3, 7, 10):
        full_checkpoint(os.path.join(out, f"model.ckpt-{step}"), step, 0.5)
    _truncate(os.path.join(out, "model.ckpt-10"))
    _truncate(os.path.join(out, "model.ckpt-7"))  # the one before is damaged too
    with pytest.raises(CheckpointError) as e:
        restore_or_warm_start(state(), out)
    message = str(e.value)
    assert message.startswith(os.path.join(out, "model.ckpt-10") + ": unreadable checkpoint")
    assert (f"the checkpoint before it, {os.path.join(out, 'model.ckpt-3')}, reads back: move "
            f"model.ckpt-10.* out of {out} and rerun to resume from it") in message
    assert "\n" not in message
    # as said: with model.ckpt-10 moved away (and the damaged 7), training resumes from 3
    for step in (7, 10):
        for name in os.listdir(out):
            if name.startswith(f"model.ckpt-{step}."):
                os.remove(os.path.join(out, name))
    s = state()
    assert restore_or_warm_start(s, out).resumed_from == os.path.join(out, "model.ckpt-3")
    assert s.global_step == 3


def test_truncated_only_checkpoint_says_there_is_none_to_resume_from(tmp_path):
    out = str(tmp_path / "out")
    full_checkpoint(os.path.join(out, "model.ckpt-10"), 10, 0.5)
    _truncate(os.path.join(out, "model.ckpt-10"))
    with pytest.raises(CheckpointError, match="no earlier checkpoint in .* reads back: move "
                                              r"model\.ckpt-10\.\* out of it"):
        restore_or_warm_start(state(), out)
