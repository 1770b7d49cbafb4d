"""Checkpoint bundle I/O faults (issue 15): prefix mapping, damaged data files."""
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint_io
from bert_tf.errors import CheckpointError


def test_map_names_strips_or_adds_one_common_prefix():
    model = ["bert/embeddings/word_embeddings", "bert/pooler/dense/kernel", "output_bias"]
    hub = ["module/bert/embeddings/word_embeddings", "module/bert/pooler/dense/kernel",
           "module/cls/predictions/output_bias", "global_step"]
    m = checkpoint_io.map_names(model, hub)
    assert m.source == {"bert/embeddings/word_embeddings": "module/bert/embeddings/word_embeddings",
                        "bert/pooler/dense/kernel": "module/bert/pooler/dense/kernel"}
    assert "prefix 'module/'" in m.note
    # a checkpoint saved without the bert/ scope
    bare = ["embeddings/word_embeddings", "pooler/dense/kernel"]
    m = checkpoint_io.map_names(model, bare)
    assert m.source == {"bert/embeddings/word_embeddings": "embeddings/word_embeddings",
                        "bert/pooler/dense/kernel": "pooler/dense/kernel"}
    assert "model's names carry the prefix 'bert/'" in m.note
    # names that match as they are: used as they are, even when others would map
    direct = ["bert/pooler/dense/kernel", "module/bert/embeddings/word_embeddings"]
    assert checkpoint_io.map_names(model, direct).source == {
        "bert/pooler/dense/kernel": "bert/pooler/dense/kernel"}
    assert checkpoint_io.map_names(model, direct).note == ""
    # two prefixes matching as many names: no guess
    tie = ["a/bert/pooler/dense/kernel", "b/output_bias"]
    assert checkpoint_io.map_names(model, tie).source == {}
    # optimizer entries never match
    assert checkpoint_io.map_names(["x/kernel"], ["m/x/kernel/adam_m"]).source == {}


def _bundle(tmp_path):
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), {
        "w": np.arange(4096, dtype=np.float32)})
    return prefix


def test_truncated_data_file_is_one_clear_error(tmp_path):
    prefix = _bundle(tmp_path)
    data = prefix + ".data-00000-of-00001"
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    var = tf.Variable(np.zeros([4096], np.float32))
    with pytest.raises(CheckpointError) as e:
        checkpoint_io.assign_from_checkpoint({"w": var}, prefix)
    assert str(e.value).startswith(prefix + ": unreadable checkpoint")
    assert "truncated" in str(e.value) and "\n" not in str(e.value)
    np.testing.assert_array_equal(var.numpy(), np.zeros([4096]))
    with pytest.raises(CheckpointError, match="unreadable checkpoint"):
        checkpoint_io.read_checkpoint(prefix)


def test_step_checkpoints_and_state_file_on_ram():
    """Issue 17 deliverable 2: a model_dir on ``ram://`` (the ``tf.io.gfile`` API of
    ``gs://``): bundles, the ``checkpoint`` state file and the latest-checkpoint look-up."""
    import uuid

    model_dir = f"ram://ckpt-{uuid.uuid4().hex}/model"
    try:
        prefixes = [f"{model_dir}/model.ckpt-{step}" for step in (10, 20)]
        for step, prefix in zip((10, 20), prefixes):
            checkpoint_io.write_checkpoint(prefix, {"w": np.full([2], step, np.float32)})
        checkpoint_io.write_state_file(model_dir, prefixes[-1], prefixes)
        with tf.io.gfile.GFile(f"{model_dir}/checkpoint") as f:
            assert f.read() == ('model_checkpoint_path: "model.ckpt-20"\n'
                                'all_model_checkpoint_paths: "model.ckpt-10"\n'
                                'all_model_checkpoint_paths: "model.ckpt-20"\n')
        assert checkpoint_io.existing_checkpoints(model_dir) == prefixes
        assert checkpoint_io.latest_checkpoint(model_dir) == prefixes[-1]
        np.testing.assert_array_equal(checkpoint_io.read_checkpoint(model_dir)["w"], [20, 20])
        assert not [n for n in tf.io.gfile.listdir(model_dir) if n.startswith(".tmp-")]
    finally:
        tf.io.gfile.rmtree(model_dir.rsplit("/", 1)[0])


def test_restore_in_chunks_and_casts_to_the_variable_dtype(tmp_path, monkeypatch):
    """The values land whatever the chunking of the RestoreV2 reads (a 16-byte limit: every
    tensor its own read, and two small ones together), and a bfloat16 variable gets the
    float32 value rounded to bfloat16: 1/3 -> 0.333984375 (8 significant bits, by hand)."""
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), {
        "a": np.arange(6, dtype=np.float32).reshape(2, 3),
        "b": np.array([1.0 / 3.0], np.float32),
        "c": np.array([7.0], np.float32),
        "d": np.array([5, 6], np.int32)})
    monkeypatch.setattr(checkpoint_io, "_RESTORE_CHUNK_BYTES", 16)
    assert [len(c) for c in checkpoint_io._restore_chunks(
        [(n, None, n) for n in "abcd"], checkpoint_io.list_checkpoint(prefix))] == [1, 3]
    variables = {"a": tf.Variable(tf.zeros([2, 3])), "b": tf.Variable(tf.zeros([1], tf.bfloat16)),
                 "c": tf.Variable(tf.zeros([1])), "d": tf.Variable(tf.zeros([2], tf.int32))}
    report = checkpoint_io.assign_from_checkpoint(variables, prefix, require_all=True)
    assert report.loaded == ["a", "b", "c", "d"]
    assert variables["a"].numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert variables["b"].dtype == tf.bfloat16
    assert float(variables["b"].numpy()[0]) == 0.333984375
    assert variables["c"].numpy().tolist() == [7.0] and variables["d"].numpy().tolist() == [5, 6]
