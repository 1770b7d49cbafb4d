"""training/restore.py (restore for inference) and the checkpoint listing of checkpoint_io."""
import functools
import logging
import os

import keras
import numpy as np
import pytest

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io
from bert_tf.training import restore


def _name_map():
    return {"bert/w": keras.Variable(np.zeros([2, 3], np.float32)),
            "output_bias": keras.Variable(np.full([2], -1.0, np.float32))}


def _write(prefix, step=None, **arrays):
    tensors = {k.replace("__", "/"): np.asarray(v, np.float32) for k, v in arrays.items()}
    if step is not None:
        tensors["global_step"] = np.int64(step)
    return checkpoint_io.write_checkpoint(prefix, tensors)


def test_newest_checkpoint_of_the_folder_wins(tmp_path):
    model_dir = str(tmp_path / "out")
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    _write(os.path.join(model_dir, "model.ckpt-2"), 2, bert__w=w * 0, output_bias=[0, 0])
    _write(os.path.join(model_dir, "model.ckpt-10"), 10, bert__w=w, output_bias=[5, 6])
    init = _write(str(tmp_path / "init.ckpt"), None, bert__w=w * 7)
    names = _name_map()
    got = restore.restore_for_inference(names, model_dir, init_checkpoint=init)
    # 10 > 2 numerically (not as text), and --init_checkpoint is ignored
    assert (got.prefix, got.global_step, got.source) == (
        os.path.join(model_dir, "model.ckpt-10"), 10, restore.SOURCE_MODEL_DIR)
    np.testing.assert_array_equal(names["bert/w"].numpy(), w)
    np.testing.assert_array_equal(names["output_bias"].numpy(), [5, 6])


def test_folder_checkpoint_must_hold_every_variable(tmp_path):
    model_dir = str(tmp_path / "out")
    _write(os.path.join(model_dir, "model.ckpt-3"), 3, bert__w=np.ones([2, 3]))
    with pytest.raises(CheckpointError, match="missing from the checkpoint: output_bias"):
        restore.restore_for_inference(_name_map(), model_dir)


def test_init_checkpoint_leaves_missing_variables_at_initial_values(tmp_path, caplog):
    init = _write(str(tmp_path / "bert_model.ckpt"), 123, bert__w=np.ones([2, 3]))
    names = _name_map()
    with caplog.at_level(logging.WARNING):
        got = restore.restore_for_inference(names, str(tmp_path / "absent"), init_checkpoint=init)
    # the step of a pre-trained checkpoint is not the fine-tuning step: 0, as the Estimator
    assert (got.prefix, got.global_step, got.source) == (init, 0, restore.SOURCE_INIT_CHECKPOINT)
    assert got.report.missing == ["output_bias"]
    np.testing.assert_array_equal(names["bert/w"].numpy(), np.ones([2, 3]))
    np.testing.assert_array_equal(names["output_bias"].numpy(), [-1, -1])
    assert "left at their initial values" in caplog.text and "output_bias" in caplog.text


def test_nothing_to_load_keeps_the_initial_weights_with_a_warning(tmp_path, caplog):
    names = _name_map()
    with caplog.at_level(logging.WARNING):
        got = restore.restore_for_inference(names, str(tmp_path))
    assert (got.prefix, got.global_step, got.source, got.report) == (
        "", 0, restore.SOURCE_INITIAL, None)
    assert "no --init_checkpoint" in caplog.text
    np.testing.assert_array_equal(names["output_bias"].numpy(), [-1, -1])


def test_explicit_checkpoint_and_load_fn(tmp_path):
    prefix = _write(str(tmp_path / "m" / "model.ckpt-5"), None, bert__w=np.ones([2, 3]),
                    output_bias=[1, 2])
    calls = []

    def load_fn(name_map, path, require_all=False, untie_r=None):
        calls.append((path, require_all, untie_r))
        return checkpoint_io.assign_from_checkpoint(name_map, path, require_all=require_all)

    got = restore.restore_for_inference(
        _name_map(), str(tmp_path / "elsewhere"), checkpoint=prefix,
        load_fn=functools.partial(load_fn, untie_r=True))
    assert calls == [(prefix, True, True)]
    # no global_step entry: the N of model.ckpt-N
    assert (got.global_step, got.source) == (5, restore.SOURCE_CHECKPOINT)


def test_resolve_latest(tmp_path):
    assert restore.resolve_latest(None) is None
    assert restore.resolve_latest("/a/xlnet_model.ckpt") == "/a/xlnet_model.ckpt"
    folder = str(tmp_path)
    with pytest.raises(CheckpointError, match="--init_checkpoint=.*latest: no checkpoint state"):
        restore.resolve_latest(os.path.join(folder, "latest"))
    prefix = _write(os.path.join(folder, "model.ckpt-4"), 4, bert__w=np.ones([2, 3]))
    checkpoint_io.write_state_file(folder, prefix, [prefix])
    assert restore.resolve_latest(os.path.join(folder, "latest")) == prefix


def test_step_checkpoints_and_latest_checkpoint(tmp_path, caplog):
    folder = str(tmp_path)
    assert checkpoint_io.step_checkpoints(os.path.join(folder, "absent")) == []
    assert checkpoint_io.latest_checkpoint(os.path.join(folder, "absent")) is None
    for name in ("model.ckpt-10", "model.ckpt-9", "other-3", "no_step"):
        _write(os.path.join(folder, name), None, bert__w=np.ones([2, 3]))
    p = lambda name: os.path.join(folder, name)  # noqa: E731
    assert checkpoint_io.step_checkpoints(folder) == [(9, p("model.ckpt-9")),
                                                      (10, p("model.ckpt-10"))]
    with caplog.at_level(logging.WARNING):
        anything = checkpoint_io.step_checkpoints(folder, basename=None)
    assert anything == [(3, p("other-3")), (9, p("model.ckpt-9")), (10, p("model.ckpt-10"))]
    assert "no_step: not a <name>-<step> checkpoint" in caplog.text
    assert checkpoint_io.existing_checkpoints(folder) == [p("model.ckpt-9"), p("model.ckpt-10")]
    assert checkpoint_io.latest_checkpoint(folder) == p("model.ckpt-10")  # no state file
    checkpoint_io.write_state_file(folder, p("model.ckpt-9"), [p("model.ckpt-9")])
    assert checkpoint_io.latest_checkpoint(folder) == p("model.ckpt-9")  # the state file's


def test_check_fits_assigns_nothing(tmp_path):
    prefix = _write(str(tmp_path / "c.ckpt"), None, bert__w=np.ones([3, 2]))
    names = _name_map()
    with pytest.raises(CheckpointError, match=r"bert/w has shape \[3, 2\] in the checkpoint but "
                                              r"\[2, 3\]"):
        checkpoint_io.check_fits(names, prefix)
    prefix = _write(str(tmp_path / "d.ckpt"), None, bert__w=np.ones([2, 3]))
    assert checkpoint_io.check_fits(names, prefix) == prefix
    with pytest.raises(CheckpointError, match="missing from the checkpoint: output_bias; hint"):
        checkpoint_io.check_fits(names, prefix, require_all=True, missing_hint="hint")
    np.testing.assert_array_equal(names["bert/w"].numpy(), np.zeros([2, 3]))


@pytest.mark.parametrize("source", ["model_dir", "init_checkpoint", "checkpoint"])
def test_a_non_finite_checkpoint_value_is_refused_naming_the_variable(tmp_path, source):
    # issue 27 item 6: an all-NaN checkpoint made extract_features write NaN with exit 0.
    w = np.ones([2, 3], np.float32)
    w[1, 2] = np.nan
    prefix = _write(os.path.join(str(tmp_path / "out"), "model.ckpt-4"), 4, bert__w=w,
                    output_bias=[1.0, np.inf])
    kwargs = {"model_dir": str(tmp_path / ("out" if source == "model_dir" else "absent"))}
    if source != "model_dir":
        kwargs[source] = prefix
    with pytest.raises(CheckpointError, match=r"model\.ckpt-4: bert/w holds nan \(1 non-finite "
                                              r"values\): not a usable checkpoint"):
        restore.restore_for_inference(_name_map(), **kwargs)
