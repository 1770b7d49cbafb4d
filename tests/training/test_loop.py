"""The custom training loop: original-layout checkpoints, resume, warm start, kill -9.

Update values are checked against the spec's formulas (bert.md 7.1, 7.2) restated in numpy;
the checkpoint layout against spec 3.3 and the load rules against spec 3.4.
"""
import json
import logging
import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import types

import keras
from absl import logging as absl_logging
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io
from bert_tf.training import loop
from bert_tf.training.optimizer import AdamWeightDecay

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from tests.training.spec_formulas import spec_adam_step, spec_clip, spec_lr  # noqa: E402


# ---- tiny models --------------------------------------------------------------------------------

X = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3)
Y = np.stack([X.sum(axis=1), X[:, 0] - X[:, 2]], axis=1).astype(np.float32) * 3.0


def mlp(seed):
    """Two Dense layers with a name map in the original style (our own names, for the test)."""
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh", name="hidden")
    out = keras.layers.Dense(2, name="out")
    model = keras.Model(inputs, out(hidden(inputs)))
    name_map = {
        "bert/encoder/layer_0/dense/kernel": hidden.kernel,
        "bert/encoder/layer_0/dense/bias": hidden.bias,
        "output_weights": out.kernel,
        "output_bias": out.bias,
    }
    return model, name_map


def mse(model, features, labels):
    return tf.reduce_mean(tf.square(model(features, training=True) - labels))


def dataset(batch=4):
    return tf.data.Dataset.from_tensor_slices((X, Y)).batch(batch)


def read(prefix):
    return checkpoint_io.read_checkpoint(prefix, include_optimizer=True)


# ---- tests --------------------------------------------------------------------------------------

def test_linear_model_updates_match_spec(tmp_path):
    """Three updates of a linear model against numpy: lr 0 at step 0, clipping, decay."""
    inputs = keras.Input((3,))
    dense = keras.layers.Dense(2, name="dense")
    model = keras.Model(inputs, dense(inputs))
    w0 = np.array([[0.5, -0.2], [0.1, 0.3], [-0.4, 0.2]], np.float32)
    b0 = np.array([0.05, -0.1], np.float32)
    dense.kernel.assign(w0)
    dense.bias.assign(b0)
    name_map = {"cls/dense/kernel": dense.kernel, "cls/dense/bias": dense.bias}
    out = str(tmp_path / "out")
    result = loop.train(model, mse, dataset(4), name_map, loop.TrainConfig(
        out, num_train_steps=4, learning_rate=0.1, num_warmup_steps=1, save_checkpoints_steps=1,
        stop_at_step=3))
    assert result.global_step == 3

    w, b = w0.astype(np.float64), b0.astype(np.float64)
    mw, vw, mb, vb = np.zeros_like(w), np.zeros_like(w), np.zeros_like(b), np.zeros_like(b)
    clipped_once = False
    for step in range(3):
        xb = X[4 * step:4 * step + 4].astype(np.float64)  # batches in order, no shuffle
        yb = Y[4 * step:4 * step + 4].astype(np.float64)
        dpred = 2.0 * (xb @ w + b - yb) / yb.size        # d mean((pred - y)^2) / d pred
        gw, gb = xb.T @ dpred, dpred.sum(axis=0)
        clipped_once |= np.sqrt(np.sum(gw ** 2) + np.sum(gb ** 2)) > 1.0
        gw, gb = spec_clip([gw, gb])
        lr = spec_lr(step, 0.1, 4, 1)
        w, mw, vw = spec_adam_step(w, gw, mw, vw, lr, decay=True)
        b, mb, vb = spec_adam_step(b, gb, mb, vb, lr, decay=False)  # "bias" is excluded
        got = read(os.path.join(out, f"model.ckpt-{step + 1}"))
        assert int(got["global_step"]) == step + 1
        np.testing.assert_allclose(got["cls/dense/kernel"], w, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["cls/dense/bias"], b, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["cls/dense/kernel/adam_m"], mw, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["cls/dense/kernel/adam_v"], vw, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(got["cls/dense/bias/adam_m"], mb, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got["cls/dense/bias/adam_v"], vb, rtol=1e-5, atol=1e-9)
        if step == 0:  # lr 0: weights unchanged, moments not
            np.testing.assert_array_equal(got["cls/dense/kernel"], w0)
    assert clipped_once


def test_checkpoint_layout_and_keep_last_five(tmp_path):
    model, name_map = mlp(0)
    out = str(tmp_path / "out")
    result = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(
        out, num_train_steps=7, learning_rate=0.01, save_checkpoints_steps=1,
        log_every_n_steps=3))
    assert result.global_step == 7 and result.checkpoint == os.path.join(out, "model.ckpt-7")
    listed = dict(tf.train.list_variables(result.checkpoint))
    expected_shapes = {
        "bert/encoder/layer_0/dense/kernel": [3, 4], "bert/encoder/layer_0/dense/bias": [4],
        "output_weights": [4, 2], "output_bias": [2],
    }
    want = {"global_step": []}
    for name, shape in expected_shapes.items():
        want[name] = shape
        want[name + "/adam_m"] = shape
        want[name + "/adam_v"] = shape
    assert listed == want
    dtypes = {n: d for n, (_, d) in checkpoint_io.list_checkpoint(result.checkpoint).items()}
    assert dtypes.pop("global_step") == "int64"
    assert set(dtypes.values()) == {"float32"}
    reader = tf.train.load_checkpoint(result.checkpoint)
    assert reader.get_tensor("global_step") == 7
    np.testing.assert_array_equal(reader.get_tensor("output_weights"),
                                  name_map["output_weights"].numpy())
    # Estimator: keep the newest 5, state file lists them oldest first.
    assert [os.path.basename(p) for p in checkpoint_io.existing_checkpoints(out)] == [
        f"model.ckpt-{i}" for i in range(3, 8)]
    with open(os.path.join(out, "checkpoint")) as f:
        state = f.read()
    assert state == ('model_checkpoint_path: "model.ckpt-7"\n' + "".join(
        f'all_model_checkpoint_paths: "model.ckpt-{i}"\n' for i in range(3, 8)))
    assert tf.train.latest_checkpoint(out) == result.checkpoint
    assert stat.S_IMODE(os.stat(os.path.join(out, "checkpoint")).st_mode) & 0o044  # readable
    assert sorted(f for f in os.listdir(out) if not f.startswith("events.out.")) == sorted(
        ["checkpoint"] + [f"model.ckpt-{i}.{ext}" for i in range(3, 8)
                          for ext in ("index", "data-00000-of-00001")])


def test_resume_continues_from_saved_step_with_same_slots(tmp_path):
    full_dir, split_dir = str(tmp_path / "full"), str(tmp_path / "split")
    kwargs = dict(num_train_steps=6, learning_rate=0.05, num_warmup_steps=2,
                  save_checkpoints_steps=3)
    model, name_map = mlp(0)
    loop.train(model, mse, dataset(), name_map, loop.TrainConfig(full_dir, **kwargs))
    full = read(os.path.join(full_dir, "model.ckpt-6"))

    model, name_map = mlp(0)
    first = loop.train(model, mse, dataset(), name_map,
                       loop.TrainConfig(split_dir, stop_at_step=3, **kwargs))
    assert first.global_step == 3 and first.resumed_from is None
    # A fresh process would build the model with other random weights: restore overrides them.
    model, name_map = mlp(1)
    second = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(split_dir, **kwargs))
    assert second.resumed_from == os.path.join(split_dir, "model.ckpt-3")
    assert second.global_step == 6
    split = read(os.path.join(split_dir, "model.ckpt-6"))
    assert sorted(split) == sorted(full)
    for name in full:  # weights, adam_m/adam_v and global_step as the uninterrupted run
        np.testing.assert_allclose(split[name], full[name], rtol=1e-6, atol=1e-7, err_msg=name)
    mid_full = read(os.path.join(full_dir, "model.ckpt-3"))
    mid_split = read(os.path.join(split_dir, "model.ckpt-3"))
    for name in mid_full:
        np.testing.assert_allclose(mid_split[name], mid_full[name], rtol=1e-6, err_msg=name)

    # Already at num_train_steps: nothing to do, nothing written.
    before = sorted(os.listdir(split_dir))
    model, name_map = mlp(2)
    again = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(split_dir, **kwargs))
    assert again.global_step == 6 and again.last_loss is None
    assert sorted(os.listdir(split_dir)) == before
    np.testing.assert_array_equal(name_map["output_weights"].numpy(), full["output_weights"])


def test_warm_start_loads_trainable_weights_only(tmp_path):
    model, name_map = mlp(0)
    init = str(tmp_path / "init" / "bert_model.ckpt")
    kernel = np.full((3, 4), 0.25, np.float32)
    bias = np.arange(4, dtype=np.float32)
    checkpoint_io.write_checkpoint(init, {
        "bert/encoder/layer_0/dense/kernel": kernel,
        "bert/encoder/layer_0/dense/bias": bias,
        "bert/encoder/layer_0/dense/kernel/adam_m": np.full((3, 4), 123.0, np.float32),
        "bert/encoder/layer_0/dense/kernel/adam_v": np.full((3, 4), 123.0, np.float32),
        "global_step": np.int64(77),
        "cls/predictions/output_bias": np.zeros([5], np.float32),
    })
    out = str(tmp_path / "out")
    # Warmup 1: the first update uses lr 0, so the weights stay the loaded ones.
    result = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(
        out, num_train_steps=4, learning_rate=0.1, num_warmup_steps=1, init_checkpoint=init,
        stop_at_step=1))
    report = result.warm_start
    assert sorted(report.loaded) == ["bert/encoder/layer_0/dense/bias",
                                     "bert/encoder/layer_0/dense/kernel"]
    assert sorted(report.missing) == ["output_bias", "output_weights"]
    assert report.unused == ["cls/predictions/output_bias"]
    assert result.global_step == 1  # global_step 77 is not restored
    saved = read(result.checkpoint)
    assert int(saved["global_step"]) == 1
    np.testing.assert_array_equal(saved["bert/encoder/layer_0/dense/kernel"], kernel)
    np.testing.assert_array_equal(saved["bert/encoder/layer_0/dense/bias"], bias)
    # Slots restart from zero: after one update |m| = 0.1 * |clipped grad| <= 0.1.
    assert np.max(np.abs(saved["bert/encoder/layer_0/dense/kernel/adam_m"])) <= 0.1

    # output_dir now holds a checkpoint: init_checkpoint is ignored (even a missing one).
    model, name_map = mlp(3)
    again = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(
        out, num_train_steps=4, learning_rate=0.1, num_warmup_steps=1,
        init_checkpoint=str(tmp_path / "does_not_exist"), stop_at_step=2))
    assert again.warm_start is None and again.resumed_from == result.checkpoint
    assert again.global_step == 2


def test_accumulation_loss_scaling_xla_and_steps_per_loop_give_the_same_updates(tmp_path):
    """Same data, same updates: 2 x 2-example batches accumulated == one 4-example batch;
    loss scaling by 2^k in float32 is exact; XLA and several steps per call change nothing."""
    def run(name, batch, **kw):
        model, name_map = mlp(0)
        loop.train(model, mse, dataset(batch), name_map, loop.TrainConfig(
            str(tmp_path / name), num_train_steps=3, learning_rate=0.05, num_warmup_steps=1,
            **kw))
        return read(str(tmp_path / name / "model.ckpt-3"))

    base = run("base", 4)
    for name, batch, kw in [("accumulated", 2, dict(gradient_accumulation_steps=2)),
                            ("scaled", 4, dict(loss_scale=True)),
                            ("xla", 4, dict(use_xla=True)),
                            ("loop3", 4, dict(steps_per_loop=3))]:
        got = run(name, batch, **kw)
        assert int(got["global_step"]) == 3, name
        for key in base:
            np.testing.assert_allclose(got[key], base[key], rtol=1e-5, atol=1e-7,
                                       err_msg=f"{name}: {key}")


def test_accumulated_resume_skips_two_batches_per_step(tmp_path):
    kwargs = dict(num_train_steps=4, learning_rate=0.05, gradient_accumulation_steps=2)
    model, name_map = mlp(0)
    loop.train(model, mse, dataset(2), name_map, loop.TrainConfig(str(tmp_path / "a"), **kwargs))
    model, name_map = mlp(0)
    loop.train(model, mse, dataset(2), name_map,
               loop.TrainConfig(str(tmp_path / "b"), stop_at_step=1, **kwargs))
    model, name_map = mlp(0)
    loop.train(model, mse, dataset(2), name_map, loop.TrainConfig(str(tmp_path / "b"), **kwargs))
    a, b = read(str(tmp_path / "a" / "model.ckpt-4")), read(str(tmp_path / "b" / "model.ckpt-4"))
    for key in a:
        np.testing.assert_allclose(b[key], a[key], rtol=1e-6, atol=1e-7, err_msg=key)


def test_stale_temp_files_of_a_killed_write_are_removed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    stale = out / ".tmp-0123abcd-model.ckpt-40.data-00000-of-00001"
    stale.write_bytes(b"partial")
    other = out / "eval_results.txt"
    other.write_text("kept\n")
    model, name_map = mlp(0)
    loop.train(model, mse, dataset(), name_map, loop.TrainConfig(str(out), num_train_steps=1))
    assert not stale.exists() and other.exists()


def test_mixed_float16_model_with_loss_scaling(tmp_path):
    keras.utils.set_random_seed(0)
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, activation="tanh", dtype="mixed_float16", name="hidden")
    out = keras.layers.Dense(2, dtype="float32", name="out")
    model = keras.Model(inputs, out(hidden(inputs)))
    name_map = {"h/kernel": hidden.kernel, "h/bias": hidden.bias,
                "output_weights": out.kernel, "output_bias": out.bias}
    result = loop.train(model, mse, dataset(), name_map, loop.TrainConfig(
        str(tmp_path / "out"), num_train_steps=3, learning_rate=0.05, loss_scale=True))
    assert result.global_step == 3 and np.isfinite(result.last_loss)
    dtypes = checkpoint_io.list_checkpoint(result.checkpoint)
    assert dtypes["h/kernel"] == ((3, 4), "float32")  # variables stay float32
    assert dtypes["h/kernel/adam_m"] == ((3, 4), "float32")
    assert dtypes["global_step"] == ((), "int64")


def test_errors(tmp_path):
    model, name_map = mlp(0)
    partial = dict(name_map)
    del partial["output_bias"]
    with pytest.raises(ValueError, match="out/bias"):
        loop.train(model, mse, dataset(), partial,
                   loop.TrainConfig(str(tmp_path / "a"), num_train_steps=2))

    # A checkpoint in output_dir from a different model: the shape error names the variable.
    bad_dir = str(tmp_path / "bad")
    arrays = {n: np.zeros([7], np.float32) for n in name_map}
    checkpoint_io.write_checkpoint(os.path.join(bad_dir, "model.ckpt-5"), arrays)
    model, name_map = mlp(0)
    with pytest.raises(CheckpointError, match=r"layer_0/dense/kernel has shape \[7\]"):
        loop.train(model, mse, dataset(), name_map, loop.TrainConfig(bad_dir, num_train_steps=9))

    model, name_map = mlp(0)
    with pytest.raises(loop.NanLossError, match="global_step 1"):
        loop.train(model, lambda m, f, l: mse(m, f, l) * np.nan, dataset(), name_map,
                   loop.TrainConfig(str(tmp_path / "nan"), num_train_steps=3))


def test_train_config_flag_settings():
    flags = types.SimpleNamespace(learning_rate=2e-5, init_checkpoint="x/bert_model.ckpt",
                                  save_checkpoints_steps=1000, iterations_per_loop=1000,
                                  use_xla=True, gradient_accumulation_steps=4, dtype="float16")
    assert loop.TrainConfig.flag_settings(flags) == dict(
        learning_rate=2e-5, init_checkpoint="x/bert_model.ckpt", save_checkpoints_steps=1000,
        steps_per_loop=1000, use_xla=True, gradient_accumulation_steps=4, loss_scale=True)
    assert loop.TrainConfig.flag_settings(types.SimpleNamespace(dtype="bfloat16")) == dict(
        loss_scale=False)


def test_train_config_from_flags_and_task_settings():
    flags = types.SimpleNamespace(output_dir="out", learning_rate=3e-5, init_checkpoint=None,
                                  save_checkpoints_steps=7, iterations_per_loop=0,
                                  gradient_accumulation_steps=None, dtype="float32")
    config = loop.TrainConfig.from_flags(flags, 20, num_warmup_steps=2, stop_at_step=30,
                                         save_checkpoints_steps=5)
    assert config == loop.TrainConfig(
        "out", 20, learning_rate=3e-5, num_warmup_steps=2, save_checkpoints_steps=5,
        steps_per_loop=1, stop_at_step=30, gradient_accumulation_steps=1, loss_scale=False)
    assert config.last_step == 20  # stop_at_step beyond num_train_steps
    assert loop.TrainConfig("o", 10, stop_at_step=4).last_step == 4
    assert loop.TrainConfig("o", 10, log_every_n_steps=0).log_every_n_steps == 1
    with pytest.raises(ValueError, match="num_train_steps must be > 0, got 0"):
        loop.TrainConfig("o", 0)
    with pytest.raises(ValueError, match="gradient_accumulation_steps must be >= 1, got -2"):
        loop.TrainConfig("o", 5, gradient_accumulation_steps=-2)
    with pytest.raises(TypeError):
        loop.TrainConfig.from_flags(flags, 5, not_a_setting=1)


def test_train_config_optimizer():
    model, name_map = mlp(0)
    plain = loop.TrainConfig("o", 10, learning_rate=0.5).create_optimizer(name_map)
    assert isinstance(plain, AdamWeightDecay) and plain.weight_decay_rate == 0.01
    assert float(plain.learning_rate) == 0.5  # step 0 without warmup: the peak rate
    scaled = loop.TrainConfig("o", 10, loss_scale=True).create_optimizer(name_map)
    assert isinstance(scaled, keras.optimizers.LossScaleOptimizer)
    assert isinstance(scaled.inner_optimizer, AdamWeightDecay)


def test_progress_log_lines_and_divergence_checks(caplog):
    progress = loop.ProgressLog(2, 0, 5, scaled=False)
    verbosity = absl_logging.get_verbosity()  # an earlier parse of FLAGS may have raised it
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        with caplog.at_level(logging.INFO):
            for step in range(1, 6):
                assert progress.update(step, 0.5 * step, 4) == step
    finally:
        absl_logging.set_verbosity(verbosity)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("global_step")]
    assert [line.split(", examples")[0] for line in lines] == [
        "global_step = 2, loss = 1.000000", "global_step = 4, loss = 2.000000",
        "global_step = 5, loss = 2.500000"]

    with pytest.raises(loop.NanLossError, match="loss is nan at global_step 3"):
        loop.ProgressLog(100, 2, 9, scaled=False).update(3, float("nan"), 4)
    scaled = loop.ProgressLog(100, 2, 9, scaled=True)
    assert scaled.update(2, float("inf"), 4) == 2  # loss scaling skipped the update
    for _ in range(98):
        scaled.update(2, float("inf"), 4)
    with pytest.raises(loop.NanLossError, match="no optimizer update in the last 100 calls"):
        scaled.update(2, float("inf"), 4)


# ---- subprocesses -------------------------------------------------------------------------------

WORKER = textwrap.dedent('''
    import json, os, sys
    import numpy as np, tensorflow as tf, keras
    mode, out, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from absl import logging
    logging.set_verbosity(logging.INFO)
    from bert_tf.training import loop
    X = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3)
    Y = (np.stack([X.sum(axis=1), X[:, 0] - X[:, 2]], axis=1) * 3.0).astype(np.float32)

    def build():
        keras.utils.set_random_seed(0)
        inputs = keras.Input((3,))
        hidden = keras.layers.Dense(4, activation="tanh", name="hidden")
        o = keras.layers.Dense(2, name="out")
        model = keras.Model(inputs, o(hidden(inputs)))
        return model, {"h/kernel": hidden.kernel, "h/bias": hidden.bias,
                       "output_weights": o.kernel, "output_bias": o.bias}

    def mse(model, f, l):
        return tf.reduce_mean(tf.square(model(f, training=True) - l))

    def run(strategy, out):
        with strategy.scope():
            model, name_map = build()
        ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4)
        r = loop.train(model, mse, ds, name_map, loop.TrainConfig(
            out, steps, learning_rate=0.01, num_warmup_steps=2, save_checkpoints_steps=25,
            log_every_n_steps=500), strategy=strategy)
        return r

    if mode == "mirrored":
        run(tf.distribute.get_strategy(), os.path.join(out, "one"))
        s = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        assert s.num_replicas_in_sync == 2
        run(s, os.path.join(out, "two"))
    else:
        r = run(tf.distribute.get_strategy(), out)
        print("RESULT " + json.dumps({"step": r.global_step, "resumed_from": r.resumed_from}))
''')


def run_worker(tmp_path, *args, **popen_kw):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen([sys.executable, str(script), *map(str, args)], env=env,
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **popen_kw)


def test_mirrored_two_replicas_match_one_device(tmp_path):
    proc = run_worker(tmp_path, "mirrored", tmp_path / "out", 6)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-3000:]
    one = read(str(tmp_path / "out" / "one" / "model.ckpt-6"))
    two = read(str(tmp_path / "out" / "two" / "model.ckpt-6"))
    assert sorted(one) == sorted(two)
    for key in one:  # loss / replicas, summed, clipped globally: the one-device updates
        np.testing.assert_allclose(two[key], one[key], rtol=1e-5, atol=1e-7, err_msg=key)


def test_kill_9_mid_run_then_resume(tmp_path):
    out = tmp_path / "out"
    steps = 20000  # far more than can run before the kill
    proc = run_worker(tmp_path, "train", out, steps)
    deadline = time.time() + 120
    try:
        while len(checkpoint_io.existing_checkpoints(str(out))) < 3:
            assert proc.poll() is None, proc.communicate()[1][-3000:]
            assert time.time() < deadline, "no checkpoints written"
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL

    # Every visible bundle is complete and readable; the state file names existing bundles.
    survivors = checkpoint_io.existing_checkpoints(str(out))
    assert len(survivors) >= 3
    for prefix in survivors:
        assert os.path.exists(prefix + ".data-00000-of-00001")
        assert len(tf.train.list_variables(prefix)) == 13  # 4 weights + 8 slots + global_step
    latest_by_state = tf.train.latest_checkpoint(str(out))
    assert latest_by_state in survivors
    last = survivors[-1]
    killed_at = checkpoint_io.checkpoint_step(last)
    assert killed_at < steps

    proc = run_worker(tmp_path, "train", out, killed_at + 50)
    stdout, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 0, stderr[-3000:]
    result = json.loads([l for l in stdout.splitlines() if l.startswith("RESULT")][0][7:])
    assert result["resumed_from"] == last
    assert result["step"] == killed_at + 50
    assert f"Restored weights, optimizer slots and global_step={killed_at}" in stderr
    final = checkpoint_io.existing_checkpoints(str(out))
    assert checkpoint_io.checkpoint_step(final[-1]) == killed_at + 50
    assert len(final) == 5
    assert tf.train.latest_checkpoint(str(out)) == final[-1]
    assert int(tf.train.load_checkpoint(final[-1]).get_tensor("global_step")) == killed_at + 50
    assert not [f for f in os.listdir(out) if f.startswith(".tmp-")]


class _NanAtLastStep(keras.optimizers.schedules.LearningRateSchedule):
    """Learning rate 0.01, NaN for the update at global step ``last`` (0-based): that update
    makes every weight NaN although the loss it was computed from is finite."""

    def __init__(self, last):
        self.last = last

    def __call__(self, step):
        return tf.where(tf.cast(step, tf.float32) >= self.last, float("nan"), 0.01)


def test_non_finite_last_update_is_not_saved_and_the_last_good_checkpoint_stays(tmp_path):
    model, name_map = mlp(0)
    out = str(tmp_path / "out")
    optimizer = AdamWeightDecay(_NanAtLastStep(3), variable_names=name_map)
    with pytest.raises(loop.NanLossError) as caught:
        loop.train(model, mse, dataset(), name_map, loop.TrainConfig(
            out, num_train_steps=4, save_checkpoints_steps=2), optimizer=optimizer)
    message = str(caught.value)
    assert "\n" not in message
    assert "global_step 4" in message and "model.ckpt-4 not written" in message
    assert "bert/encoder/layer_0/dense/kernel" in message
    assert "last checkpoint: model.ckpt-2" in message
    assert not tf.io.gfile.glob(os.path.join(out, "model.ckpt-4*"))
    assert checkpoint_io.latest_checkpoint(out).endswith("model.ckpt-2")
    good = read(os.path.join(out, "model.ckpt-2"))
    assert all(np.isfinite(v).all() for v in good.values())


# ---- an allocation failure (issue 24 item 4) ----------------------------------------------------

def oom_on_call(n):
    """A loss function whose n-th run inside the training step asks for a 4 TiB tensor: a
    real allocation failure of TensorFlow's CPU allocator (``ResourceExhaustedError``; the
    kernel refuses an allocation beyond RAM + swap, overcommit heuristic mode 0). The loss's
    gradient reads the tensor, as a real model's backward pass reads its activations, so the
    update waits for it (with ``stop_gradient`` TensorFlow could apply the update before the
    allocation failed: the test then saw the weights of the failed step)."""
    counter = tf.Variable(0, dtype=tf.int64, trainable=False)

    def loss(m, f, l):
        value = mse(m, f, l)
        counter.assign_add(1)
        size = tf.where(counter >= n, tf.constant(2 ** 40, tf.int64), tf.constant(1, tf.int64))
        huge = tf.fill(tf.reshape(size, [1]), 1.0)
        return value * (1.0 + 0.0 * tf.reduce_max(huge))

    return loss


def test_out_of_memory_is_one_line_and_the_last_checkpoint_is_intact(tmp_path):
    out = str(tmp_path / "out")
    model, name_map = mlp(0)
    config = loop.TrainConfig(out, num_train_steps=8, save_checkpoints_steps=2,
                              train_batch_size=4, write_summaries=False)
    with pytest.raises(loop.OutOfMemoryError) as raised:
        loop.train(model, oom_on_call(5), dataset(), name_map, config)
    prefix = os.path.join(out, "model.ckpt-4")
    message = str(raised.value)
    assert "\n" not in message
    head, detail, tail = message.partition(" (OOM when allocating tensor with "
                                           "shape[1099511627776] and type float")
    assert head == "out of memory training with --train_batch_size=4 at global_step 4"
    assert tail.endswith(
        "); to train in less memory use --recompute_grad, a smaller --train_batch_size with "
        "--gradient_accumulation_steps=K (the same examples per update), --dtype=bfloat16, a "
        f"shorter --max_seq_length; the last checkpoint, {prefix}, is intact (a rerun resumes "
        "from it)")
    # the checkpoint of step 4 is complete and holds the weights of step 4 (the failed update
    # changed nothing), and no temporary file is left
    assert tf.train.latest_checkpoint(out) == prefix
    saved = read(prefix)
    assert int(saved["global_step"]) == 4
    for name, variable in name_map.items():
        np.testing.assert_array_equal(saved[name], variable.numpy())
    assert not [f for f in os.listdir(out) if "tmp" in f]
    # a rerun resumes from it
    model, name_map = mlp(1)
    result = loop.train(model, mse, dataset(), name_map, config)
    assert (result.resumed_from, result.global_step) == (prefix, 8)


def test_memory_error_while_saving_keeps_the_previous_checkpoint(tmp_path, monkeypatch):
    out = str(tmp_path / "out")
    model, name_map = mlp(0)
    save = loop.save_checkpoint

    def save_or_fail(variables, output_dir, step, *args, **kwargs):
        if step == 4:
            raise MemoryError()
        return save(variables, output_dir, step, *args, **kwargs)

    monkeypatch.setattr(loop, "save_checkpoint", save_or_fail)
    config = loop.TrainConfig(out, num_train_steps=8, save_checkpoints_steps=2,
                              gradient_accumulation_steps=2, write_summaries=False)
    with pytest.raises(loop.OutOfMemoryError,
                       match=r"^out of memory training and --gradient_accumulation_steps=2 at "
                             r"global_step 4 \(MemoryError\); .* the last checkpoint, "
                             r".*model\.ckpt-2, is intact"):
        loop.train(model, mse, dataset(2), name_map, config)
    assert tf.train.latest_checkpoint(out) == os.path.join(out, "model.ckpt-2")


SIGTERM_WORKER = textwrap.dedent('''
    import sys
    import numpy as np, tensorflow as tf, keras
    from absl import logging
    from bert_tf import flags as bert_flags
    from bert_tf.training import loop
    out, steps = sys.argv[1], int(sys.argv.pop(2))
    X = np.linspace(-1.0, 1.0, 48, dtype=np.float32).reshape(16, 3)
    Y = (np.stack([X.sum(axis=1), X[:, 0] - X[:, 2]], axis=1) * 3.0).astype(np.float32)

    def main(argv):
        logging.set_verbosity(logging.INFO)
        keras.utils.set_random_seed(0)
        inputs = keras.Input((3,))
        o = keras.layers.Dense(2, name="out")
        model = keras.Model(inputs, o(inputs))
        name_map = {"output_weights": o.kernel, "output_bias": o.bias}
        ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(4)
        # one call of the loop would run 10% of the steps: minutes, at 10 ** 8 steps
        every = 10 if steps == 10 else 10 ** 8
        loop.train(model, lambda m, f, l: tf.reduce_mean(tf.square(m(f, training=True) - l)),
                   ds, name_map, loop.TrainConfig(
                       out, steps, learning_rate=0.01, save_checkpoints_steps=every,
                       log_every_n_steps=every, steps_per_loop=every))

    sys.argv = sys.argv[:1]
    bert_flags.run_main(main)
''')


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_inside_a_long_call_of_the_loop_saves_the_step_it_stopped_at(tmp_path, signum,
                                                                             code):
    """bert_tf: Python runs the SIGTERM handler between TensorFlow calls only, so a SIGTERM
    during a call of 10% of 10 ** 8 steps waited for the whole call (minutes). The call is cut
    after the running update (bert_tf.stop_requests): exit 143 (Ctrl-C: 130), and the
    step it stopped at is saved as a due checkpoint is (a new user's kill of a run shorter
    than --save_checkpoints_steps lost every step): model.ckpt-10 (trained first) kept,
    model.ckpt-N (N > 10) the newest, holding global_step N; no temporary file left."""
    out = tmp_path / "out"
    script = tmp_path / "sigterm_worker.py"
    script.write_text(SIGTERM_WORKER)
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    first = subprocess.run([sys.executable, str(script), str(out), "10"], env=env,
                           capture_output=True, text=True, timeout=180)
    assert first.returncode == 0, first.stderr[-3000:]
    assert checkpoint_io.existing_checkpoints(str(out)) == [str(out / "model.ckpt-10")]
    proc = subprocess.Popen([sys.executable, str(script), str(out), str(10 ** 8)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            if "Running training from global_step 10 to 100000000" in line:
                break
        time.sleep(1.0)  # inside the first call
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)  # the whole call would take minutes
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code
    existing = checkpoint_io.existing_checkpoints(str(out))
    assert existing[0] == str(out / "model.ckpt-10") and len(existing) == 2
    newest = existing[1]
    step = int(newest.rsplit("-", 1)[1])
    assert step > 10 and tf.train.latest_checkpoint(str(out)) == newest
    assert tf.train.load_checkpoint(newest).get_tensor("global_step") == step
    assert len(tf.train.list_variables(newest)) == 7  # 2 + 4 slots + step
    assert f"stopping at global_step {step}: saved {newest} (a rerun resumes from it)" in err
    assert not [f for f in os.listdir(out) if "tmp" in f or f.startswith(".")]
