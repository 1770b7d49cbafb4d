"""When the training loop saves, what it writes and keeps, and who writes (spec `bert.md` 3.3).

Expected steps and files are worked out by hand from the rules: "every save_checkpoints_steps
and at the end", the Estimator's keep_checkpoint_max, the chief alone writing.
"""
import os
import types

import numpy as np
import tensorflow as tf

from bert_tf import checkpoint_io
from bert_tf.training.checkpoint_cadence import (Cadence, is_chief, remove_stale_temp_files,
                                                 save_checkpoint)


def fired(cadence, steps):
    return [s for s in steps if cadence.due(s)]


def test_cadence_every_3_of_10_steps():
    # Multiples of 3 below 10, then the last step: 3, 6, 9, 10.
    assert fired(Cadence(3, 0, 10), range(1, 11)) == [3, 6, 9, 10]
    assert fired(Cadence(4, 0, 10), range(1, 11)) == [4, 8, 10]
    assert fired(Cadence(10, 0, 10), range(1, 11)) == [10]
    assert fired(Cadence(1, 0, 3), range(1, 4)) == [1, 2, 3]


def test_cadence_at_the_end_only_when_not_positive():
    assert fired(Cadence(0, 0, 10), range(1, 11)) == [10]
    assert fired(Cadence(-1, 0, 10), range(1, 11)) == [10]
    assert Cadence(0, 4, 10).next_step == 10


def test_cadence_after_resume_and_on_a_step_that_did_not_advance():
    # Resumed at step 3 (a multiple): 3 itself is not saved again; next are 6, 9, 10.
    cadence = Cadence(3, 3, 10)
    assert cadence.next_step == 6
    assert fired(cadence, [3, 4, 5, 6, 6, 6, 7, 8, 9, 10]) == [6, 9, 10]
    assert Cadence(3, 4, 10).next_step == 6
    assert Cadence(3, 0, 10).next_step == 3


def test_cadence_bounds_chunks_of_several_steps():
    # The loop runs min(last, next save, step + steps_per_loop) - step updates per call:
    # with every=3 and 4 steps per call from 0 to 10, calls end at 3, 6, 9, 10.
    cadence, step, ends = Cadence(3, 0, 10), 0, []
    while step < 10:
        step = min(10, cadence.next_step, step + 4)
        ends.append(step)
        assert cadence.due(step)
    assert ends == [3, 6, 9, 10]


def state_at(step):
    return {"w": tf.Variable(np.full([2, 3], float(step), np.float32)),
            "w/adam_m": tf.Variable(np.full([2, 3], 0.5, np.float32)),
            "global_step": tf.Variable(step, dtype=tf.int64)}


def test_save_checkpoint_keeps_newest_and_writes_the_state_file(tmp_path):
    out = str(tmp_path / "out")
    for step in (1, 2, 3, 4):
        prefix = save_checkpoint(state_at(step), out, step, keep_checkpoint_max=2)
        assert prefix == os.path.join(out, f"model.ckpt-{step}")
    assert sorted(os.listdir(out)) == [
        "checkpoint", "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index",
        "model.ckpt-4.data-00000-of-00001", "model.ckpt-4.index"]
    with open(os.path.join(out, "checkpoint")) as f:
        assert f.read() == ('model_checkpoint_path: "model.ckpt-4"\n'
                            'all_model_checkpoint_paths: "model.ckpt-3"\n'
                            'all_model_checkpoint_paths: "model.ckpt-4"\n')
    listed = checkpoint_io.list_checkpoint(os.path.join(out, "model.ckpt-4"))
    assert listed == {"w": ((2, 3), "float32"), "w/adam_m": ((2, 3), "float32"),
                      "global_step": ((), "int64")}
    reader = tf.train.load_checkpoint(os.path.join(out, "model.ckpt-4"))
    assert reader.get_tensor("global_step") == 4
    np.testing.assert_array_equal(reader.get_tensor("w"), np.full([2, 3], 4.0, np.float32))


def test_save_checkpoint_int32_step_is_saved_as_int64(tmp_path):
    state = dict(state_at(0), global_step=tf.Variable(5, dtype=tf.int32))
    save_checkpoint(state, str(tmp_path), 5)
    assert checkpoint_io.list_checkpoint(str(tmp_path / "model.ckpt-5"))["global_step"] == (
        (), "int64")


def test_non_chief_writes_nothing(tmp_path):
    out = tmp_path / "out"
    prefix = save_checkpoint(state_at(2), str(out), 2, chief=False)
    assert prefix == str(out / "model.ckpt-2")
    assert not out.exists()


def test_remove_stale_temp_files(tmp_path):
    names = [".tmp-0123abcd-model.ckpt-40.data-00000-of-00001", ".tmp-ff-model.ckpt-3.index",
             "model.ckpt-3.index", "eval_results.txt", ".tmp-ff-other.ckpt-3.index"]
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    removed = remove_stale_temp_files(str(tmp_path))
    assert sorted(os.path.basename(f) for f in removed) == sorted(names[:2])
    assert sorted(os.listdir(tmp_path)) == sorted(names[2:])
    assert remove_stale_temp_files(str(tmp_path / "missing")) == []


class Resolver:
    def __init__(self, task_type, task_id, cluster):
        self.task_type, self.task_id, self._cluster = task_type, task_id, cluster

    def cluster_spec(self):
        return tf.train.ClusterSpec(self._cluster)


def test_is_chief():
    workers = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    with_chief = dict(workers, chief=["127.0.0.1:3"])

    def strategy(resolver):
        return types.SimpleNamespace(cluster_resolver=resolver)

    assert is_chief(tf.distribute.get_strategy())
    assert is_chief(strategy(None))
    assert is_chief(strategy(Resolver(None, None, {})))
    assert is_chief(strategy(Resolver("chief", 0, with_chief)))
    assert is_chief(strategy(Resolver("worker", 0, workers)))
    assert not is_chief(strategy(Resolver("worker", 1, workers)))
    assert not is_chief(strategy(Resolver("worker", 0, with_chief)))
    assert not is_chief(strategy(Resolver("ps", 0, dict(workers, ps=["127.0.0.1:4"]))))
    assert not is_chief(strategy(Resolver("evaluator", 0, workers)))
