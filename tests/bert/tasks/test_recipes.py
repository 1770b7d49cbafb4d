"""Issue 26 on BERT's run_classifier with the golden tiny_random model (2 layers, hidden 64) and
the golden MRPC rows (40 train, 24 dev): bit-identical runs with --seed --deterministic,
--num_restarts surviving an interrupt and a kill -9 in the second restart, and which
variables one training step moves under --unfreeze_schedule, --lr_layer_decay_rate and
--freeze_encoder --feature_layers (by how much: the first AdamWeightDecay step, spec 7.2)."""
import dataclasses
import glob
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.tasks import classifier
from bert_tf.bert.tasks.classifier import ClassifierArgs
from bert_tf.training import restarts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
# The first AdamWeightDecay step (zero slots, no bias correction) moves an element by
# lr * 0.1 |g| / (sqrt(0.001) |g| + 1e-6) <= lr * 0.1 / sqrt(0.001) (+ decay, where decayed)
FIRST_STEP = 0.1 / np.sqrt(0.001)


@pytest.fixture(scope="module")
def files(golden_dir, uncased_vocab_file):
    tiny = os.path.join(golden_dir, "bert", "tiny_random")
    return dict(data_dir=os.path.join(golden_dir, "bert", "classifier", "MRPC"),
                vocab_file=uncased_vocab_file,
                bert_config_file=os.path.join(tiny, "bert_config.json"),
                init_checkpoint=os.path.join(tiny, "bert_model.ckpt"))


def _args(files, output_dir, **kw):
    base = dict(task_name="MRPC", output_dir=str(output_dir), do_train=True, do_eval=True,
                max_seq_length=32, train_batch_size=8, eval_batch_size=8,
                num_train_epochs=0.4, learning_rate=1e-3, **files)  # 40 * 0.4 / 8 = 2 steps
    base.update(kw)
    return ClassifierArgs(**base)


def _flags(files, output_dir, *extra):
    a = _args(files, output_dir)
    names = ("task_name", "output_dir", "data_dir", "vocab_file", "bert_config_file",
             "init_checkpoint", "max_seq_length", "train_batch_size", "eval_batch_size",
             "num_train_epochs", "learning_rate")
    return ([sys.executable, os.path.join(REPO, "run_classifier.py"), "--do_train=true",
             "--do_eval=true"] + [f"--{n}={getattr(a, n)}" for n in names] + list(extra))


def _env():
    return dict(os.environ, PYTHONPATH=REPO)


def _files_bytes(folder, pattern):
    return {os.path.basename(p): open(p, "rb").read()
            for p in sorted(glob.glob(os.path.join(folder, pattern)))}


def _checkpoint(prefix):
    reader = tf.train.load_checkpoint(prefix)
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}


# ---- reproducibility ------------------------------------------------------------------------

@pytest.mark.slow  # three runs of run_classifier.py (about a minute each on 2 shared cores)
def test_seed_and_deterministic_give_bit_identical_runs(files, tmp_path):
    outs = {}
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        out = tmp_path / name
        subprocess.run(_flags(files, out, f"--seed={seed}", "--deterministic"), check=True,
                       env=_env(), capture_output=True)
        outs[name] = (_files_bytes(out, "model.ckpt-2.*"),
                      (out / "eval_results.txt").read_bytes())
    assert outs["a"][0] and outs["a"] == outs["b"]       # checkpoint bytes and metrics
    assert outs["a"][0] != outs["c"][0]                  # another seed: another run
    a, c = _checkpoint(str(tmp_path / "a" / "model.ckpt-2")), _checkpoint(
        str(tmp_path / "c" / "model.ckpt-2"))
    assert not np.array_equal(a["output_weights"], c["output_weights"])  # the head's init


def test_a_resumed_deterministic_run_ends_on_the_uninterrupted_run(files, tmp_path):
    """A run stopped after its first checkpoint (step 1 of 2) and rerun ends with the same
    checkpoint values as a run that was never stopped: the resumed update draws the dropout
    masks the uninterrupted one drew (they are keyed on global_step, not on a seed state the
    checkpoint does not hold); dropout is on (the tiny model's 0.1 and the head's 0.1)."""
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    classifier.run(_args(files, whole, do_eval=False, seed=3, deterministic=True))
    classifier.run(_args(files, cut, do_eval=False, seed=3, deterministic=True), stop_at_step=1)
    assert os.path.exists(cut / "model.ckpt-1.index")
    assert not os.path.exists(cut / "model.ckpt-2.index")
    classifier.run(_args(files, cut, do_eval=False, seed=3, deterministic=True))  # resumes
    a, b = _checkpoint(str(whole / "model.ckpt-2")), _checkpoint(str(cut / "model.ckpt-2"))
    assert sorted(a) == sorted(b) and int(b["global_step"]) == 2
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    first = _checkpoint(str(cut / "model.ckpt-1"))  # the second update moved the weights
    assert not np.array_equal(first["output_weights"], b["output_weights"])


# ---- restarts -------------------------------------------------------------------------------

@pytest.mark.parametrize("name,kind", [("restarts_summary.txt", "folder"),
                                       ("restart-1", "file")])
def test_restarts_refuse_an_output_name_of_the_other_kind_before_the_first_restart(
        files, tmp_path, name, kind):
    """Issue 27: a folder O/restarts_summary.txt failed after every restart had trained; a
    file O/restart-1 failed the second restart."""
    from bert_tf.errors import FlagError
    out = tmp_path / "out"
    out.mkdir()
    (out / name).mkdir() if kind == "folder" else (out / name).write_text("x")
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError) as e:
        restarts.run_restarts(_args(files, out, num_restarts=2, seed=7),
                              lambda sub: pytest.fail("must fail before a restart"),
                              "eval_accuracy", classifier.restart_metrics)
    assert str(e.value) == (f"--output_dir={out}: {out / name} is a {kind}, but the run writes "
                            f"the {written} {name} there; remove or rename that {kind}")
    assert os.listdir(out) == [name]


@pytest.mark.slow  # four in-process fine-tunings of the tiny model
def test_restarts_resume_after_an_interrupt_in_the_second_restart(files, tmp_path):
    out = tmp_path / "out"
    args = _args(files, out, num_restarts=3, seed=7, do_predict=True)
    calls = []

    def interrupted(sub):
        calls.append(os.path.basename(sub.output_dir))
        if sub.output_dir.endswith("restart-1"):
            # one of its two training steps, checkpointed, then the "kill" (before its eval)
            classifier.run(dataclasses.replace(sub, do_eval=False), stop_at_step=1)
            raise KeyboardInterrupt
        return classifier.run(sub)

    with pytest.raises(KeyboardInterrupt):
        restarts.run_restarts(args, interrupted, "eval_accuracy", classifier.restart_metrics,
                              restart_flags={"do_predict": False},
                              final_flags={"do_eval": False})
    assert calls == ["restart-0", "restart-1"]
    assert os.path.exists(out / "restart-0" / "eval_results.txt")
    assert os.path.exists(out / "restart-1" / "model.ckpt-1.index")
    assert not os.path.exists(out / "restart-1" / "eval_results.txt")
    assert not os.path.exists(out / "restart-1" / restarts.RESTART_METRICS)
    assert not os.path.exists(out / restarts.SUMMARY_FILE)
    first = (out / "restart-0" / "eval_results.txt").stat().st_mtime_ns

    result = classifier.run(args)  # the rerun
    assert (out / "restart-0" / "eval_results.txt").stat().st_mtime_ns == first  # not redone
    assert result.seeds == [7, 8, 9]
    assert [run["global_step"] for run in result.runs] == [2.0, 2.0, 2.0]
    assert os.path.exists(out / "restart-1" / "model.ckpt-2.index")  # resumed to the end
    summary = (out / restarts.SUMMARY_FILE).read_text(encoding="utf-8")
    accuracies = [run["eval_accuracy"] for run in result.runs]
    assert result.stats["eval_accuracy"]["mean"] == pytest.approx(np.mean(accuracies))
    assert "eval_accuracy: mean = " in summary and f"best = restart-{result.best}" in summary
    assert result.stats["eval_accuracy"]["std"] == pytest.approx(np.std(accuracies, ddof=1))
    assert "eval_f1" in result.stats   # the metric run_classifier logs but does not write
    best = int(np.argmax(accuracies))
    assert result.best == best
    # model.ckpt-best is the best restart's last checkpoint, byte for byte, and predict used it
    assert _files_bytes(out, "model.ckpt-best.*") == {
        n.replace("model.ckpt-2", "model.ckpt-best"): b for n, b in
        _files_bytes(out / f"restart-{best}", "model.ckpt-2.*").items()}
    again = classifier.run(_args(files, tmp_path / "check", do_train=False, do_eval=False,
                                 do_predict=True,
                                 init_checkpoint=str(out / "model.ckpt-best")))
    assert (out / "test_results.tsv").read_text() == (
        tmp_path / "check" / "test_results.tsv").read_text()
    np.testing.assert_array_equal(result.final.predictions, again.predictions)


@pytest.mark.slow  # a real kill -9 of run_classifier.py in its second restart, then a rerun
def test_restarts_survive_kill_9_in_the_second_restart(files, tmp_path):
    out = tmp_path / "out"
    cmd = _flags(files, out, "--num_restarts=3", "--seed=1", "--save_checkpoints_steps=1",
                 "--num_train_epochs=2.0")  # 10 steps each, a checkpoint every step
    proc = subprocess.Popen(cmd, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not glob.glob(str(out / "restart-1" / "model.ckpt-*.index")):
        assert proc.poll() is None and time.time() < deadline, "no checkpoint in restart-1"
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not os.path.exists(out / "restart-1" / "eval_results.txt")
    assert not os.path.exists(out / restarts.SUMMARY_FILE)
    subprocess.run(cmd, env=_env(), check=True, capture_output=True)
    runs = [restarts.read_results(str(out / f"restart-{k}" / restarts.RESTART_METRICS))
            for k in range(3)]
    assert [r["global_step"] for r in runs] == [10.0, 10.0, 10.0]
    summary = (out / restarts.SUMMARY_FILE).read_text(encoding="utf-8")
    assert summary.startswith("restarts = 3\nselect_metric = eval_accuracy\n")
    assert os.path.exists(out / "model.ckpt-best.index")


# ---- which variables one step moves ---------------------------------------------------------

def _one_step(files, tmp_path, **kw):
    out = tmp_path / "out"
    classifier.run(_args(files, out, do_eval=False, warmup_proportion=0.0, seed=1, **kw),
                   stop_at_step=1)
    return _checkpoint(str(out / "model.ckpt-1")), _checkpoint(files["init_checkpoint"])


@pytest.mark.slow  # a training step of the tiny model
def test_unfreeze_schedule_moves_only_the_head_first(files, tmp_path):
    after, init = _one_step(files, tmp_path, unfreeze_schedule=5)
    for name, value in init.items():
        if name.startswith(("bert/encoder/", "bert/embeddings/")):
            np.testing.assert_array_equal(after[name], value, err_msg=name)
            assert not after[name + "/adam_m"].any() and not after[name + "/adam_v"].any()
    for name in ("bert/pooler/dense/bias", "output_bias"):  # block 0 trains from step 0
        assert after[name + "/adam_v"].any(), name
    assert not np.array_equal(after["bert/pooler/dense/kernel"],
                              init["bert/pooler/dense/kernel"])


@pytest.mark.slow  # a training step of the tiny model
def test_layer_decay_scales_the_first_step_per_layer(files, tmp_path):
    lr = 1e-3
    after, init = _one_step(files, tmp_path, lr_layer_decay_rate=0.5, learning_rate=lr)
    # not decayed (bias, LayerNorm): |step| = lr * multiplier * 0.1|g| / (sqrt(0.001)|g| + eps)
    cases = {"output_bias": 1.0, "bert/pooler/dense/bias": 1.0,
             "bert/encoder/layer_1/output/LayerNorm/beta": 1.0,   # the top layer
             "bert/encoder/layer_0/output/LayerNorm/beta": 0.5,   # one below
             "bert/embeddings/LayerNorm/beta": 0.25}              # the embeddings lowest
    for name, multiplier in cases.items():
        # the new head's bias starts at zeros: its step is its value
        step = np.abs(after[name] - init[name]) if name in init else np.abs(after[name])
        bound = lr * multiplier * FIRST_STEP
        assert step.max() <= bound * (1 + 1e-5), name
        assert step.max() >= 0.95 * bound, name  # the largest gradient is >> epsilon


@pytest.mark.slow  # a training step of the tiny model
def test_freeze_encoder_with_feature_layers_trains_only_the_head(files, tmp_path):
    after, init = _one_step(files, tmp_path, freeze_encoder=True, feature_layers="-1,-2")
    assert after["output_weights"].shape == (2, 2 * 64)   # [CLS] of 2 layers, concatenated
    for name, value in init.items():
        if name.startswith("bert/"):
            np.testing.assert_array_equal(after[name], value, err_msg=name)
            assert name + "/adam_m" not in after    # no slot: not a trained variable
    assert after["output_weights/adam_m"].any() and after["output_bias"].any()
