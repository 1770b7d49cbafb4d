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


def test_integer_weights_for_a_floating_variable_are_refused_before_any_assign(tmp_path):
    """Fresh round 3 (r3_cls_k_int_dtype): a query kernel stored as int32 (every value
    truncated to 0) was cast to float32 and loaded, exit 0, no word."""
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), {
        "a": np.ones([2], np.float32), "k": np.zeros([2, 2], np.int32)})
    variables = {"a": tf.Variable(tf.zeros([2])), "k": tf.Variable(tf.fill([2, 2], 9.0))}
    for check in (checkpoint_io.check_fits, checkpoint_io.assign_from_checkpoint):
        with pytest.raises(CheckpointError) as e:
            check(variables, prefix)
        assert str(e.value) == (f"{prefix}: variable k is stored as int32 in the checkpoint but "
                                "the model's is float32: not a checkpoint of floating-point "
                                "weights (the original's restore refuses it too)")
    assert variables["a"].numpy().tolist() == [0, 0]  # nothing assigned
    assert variables["k"].numpy().tolist() == [[9, 9], [9, 9]]


def test_an_output_folder_with_glob_characters_is_taken_literally(tmp_path):
    """Fresh round (cls_dir_glob_chars): checkpoint files were found with tf.io.gfile.glob on
    the output folder's path. A folder "o*?" also matched its sibling "oAB": listing mixed the
    two folders' checkpoints and pruning model.ckpt-1 deleted the sibling's files too."""
    from bert_tf.training import checkpoint_cadence

    sibling = tmp_path / "oAB"
    sibling.mkdir()
    for name in ("model.ckpt-1.index", "model.ckpt-1.data-00000-of-00001", "model.ckpt-9.index"):
        (sibling / name).write_bytes(b"another run")
    out = tmp_path / "o*?"
    out.mkdir()
    state = {checkpoint_io.GLOBAL_STEP: tf.Variable(0, dtype=tf.int64),
             "w": tf.Variable(np.arange(3, dtype=np.float32))}
    for step in (1, 2, 3):
        checkpoint_cadence.save_checkpoint(state, str(out), step, keep_checkpoint_max=2)
    assert sorted(os.listdir(out)) == [
        "checkpoint", "model.ckpt-2.data-00000-of-00001", "model.ckpt-2.index",
        "model.ckpt-3.data-00000-of-00001", "model.ckpt-3.index"]
    assert sorted(os.listdir(sibling)) == [
        "model.ckpt-1.data-00000-of-00001", "model.ckpt-1.index", "model.ckpt-9.index"]
    prefix = str(out / "model.ckpt-3")
    assert checkpoint_io.existing_checkpoints(str(out)) == [str(out / "model.ckpt-2"), prefix]
    assert checkpoint_io.latest_checkpoint(str(out)) == prefix
    assert checkpoint_io.resolve_prefix(str(out)) == prefix
    np.testing.assert_array_equal(checkpoint_io.read_checkpoint(prefix)["w"], [0, 1, 2])
    (out / ".tmp-99999999-abc-model.ckpt-4.index").write_bytes(b"x")
    (sibling / ".tmp-99999999-abc-model.ckpt-4.index").write_bytes(b"x")
    assert checkpoint_cadence.remove_stale_temp_files(str(out)) == [
        str(out / ".tmp-99999999-abc-model.ckpt-4.index")]
    assert (sibling / ".tmp-99999999-abc-model.ckpt-4.index").exists()


def test_a_checkpoint_path_holding_a_bracket_is_one_line(tmp_path):
    """TensorFlow's checkpoint readers (CheckpointReader, RestoreV2) take the prefix as a glob
    pattern: under "o[1]/" a checkpoint is written but never read back (a resume started
    over). Such an output folder is refused before any work, and such a checkpoint path names
    the cause instead of "Failed to find any matching files"."""
    from bert_tf.atomic_files import make_output_dir
    from bert_tf.errors import FlagError

    with pytest.raises(FlagError) as e:
        make_output_dir(str(tmp_path / "o[1]"))
    assert str(e.value) == (
        f"--output_dir={tmp_path / 'o[1]'}: a path holding '[' cannot be read back "
        "(TensorFlow's checkpoint readers take it as a glob pattern); choose a name without '['")
    assert not (tmp_path / "o[1]").exists()
    with pytest.raises(CheckpointError, match=r"o\[1\]/model.ckpt-1: TensorFlow's checkpoint "
                                              r"readers take this path as a glob pattern"):
        checkpoint_io.read_checkpoint(str(tmp_path / "o[1]" / "model.ckpt-1"))


def test_a_data_file_without_read_permission_is_not_called_damaged(tmp_path, monkeypatch):
    """Fresh round (cls_nobody_unreadable_ckpt): a user without read permission on the data
    file was told it was "damaged or truncated"."""
    prefix = _bundle(tmp_path)

    def denied(**kwargs):  # what RestoreV2 raises when the data file cannot be opened
        raise tf.errors.OpError(None, None, f"{prefix}.data-00000-of-00001; Permission "
                                "denied", tf.errors.UNKNOWN)
    monkeypatch.setattr(tf.raw_ops, "RestoreV2", denied)
    var = tf.Variable(np.zeros([4096], np.float32))
    with pytest.raises(CheckpointError) as e:
        checkpoint_io.assign_from_checkpoint({"w": var}, prefix)
    assert str(e.value) == f"{prefix}: cannot read its data file (Permission denied)"


@pytest.mark.parametrize("path,reason", [
    ("hdfs://nohost/bert_model.ckpt", "File system scheme 'hdfs' not implemented"),
    ("nosuchscheme://b/bert_model.ckpt", "File system scheme 'nosuchscheme' not implemented"),
])
def test_a_checkpoint_on_an_unreachable_file_system_is_one_line(path, reason):
    """Fresh round (cls_ck_hdfs, cls_ck_gs): TensorFlow's UnimplementedError (or a
    FailedPreconditionError without network) came out of resolve_prefix as a traceback."""
    with pytest.raises(CheckpointError) as e:
        checkpoint_io.resolve_prefix(path)
    assert str(e.value).startswith(f"{path}: cannot read the checkpoint there ({reason}")
    assert "\n" not in str(e.value)


def test_a_folder_of_several_checkpoints_names_the_highest_step(tmp_path):
    # no 'checkpoint' state file: the error's example was the last name alphabetically
    # (model.ckpt-200 before model.ckpt-1000)
    for name in ("model.ckpt-1000", "model.ckpt-200", "model.ckpt-99"):
        (tmp_path / (name + ".index")).write_bytes(b"x")
    with pytest.raises(CheckpointError, match=r"holds 3 checkpoints and no 'checkpoint' state "
                                              r"file; pass one prefix, e\.g\. .*model\.ckpt-1000$"):
        checkpoint_io.resolve_prefix(str(tmp_path))


def _save_v1(prefix, arrays):
    """A checkpoint written by TF's own name-based ``tf.compat.v1.train.Saver`` (the original
    releases' writer), each array stored in its own dtype under its name."""
    variables = {name: tf.Variable(value, name=name.replace("/", "_"))
                 for name, value in arrays.items()}
    return tf.compat.v1.train.Saver(var_list=variables).save(None, prefix,
                                                             write_meta_graph=False)


def test_a_bfloat16_checkpoint_cast_to_float32_is_said_in_one_line(tmp_path, caplog):
    """Fresh-user round of 2026-12-02: a checkpoint whose variables were saved in bfloat16
    loaded into the float32 model cast without a word. The values are the bfloat16 ones
    (1/3 stored as bfloat16 is 0.333984375: 8 significant bits, by hand); one INFO line
    counts the cast variables; a float32 variable is not counted."""
    import logging
    prefix = _save_v1(str(tmp_path / "bf16.ckpt"), {
        "bert/embeddings/word_embeddings": tf.constant([[1.0 / 3.0, 2.0]], tf.bfloat16),
        "bert/pooler/dense/kernel": tf.constant([[0.5]], tf.bfloat16),
        "bert/pooler/dense/bias": tf.constant([0.25], tf.float32)})
    assert checkpoint_io.list_checkpoint(prefix)["bert/pooler/dense/kernel"][1] == "bfloat16"
    variables = {"bert/embeddings/word_embeddings": tf.Variable(tf.zeros([1, 2])),
                 "bert/pooler/dense/kernel": tf.Variable(tf.zeros([1, 1])),
                 "bert/pooler/dense/bias": tf.Variable(tf.zeros([1]))}
    with caplog.at_level(logging.INFO):
        report = checkpoint_io.assign_from_checkpoint(variables, prefix, require_all=True)
    assert variables["bert/embeddings/word_embeddings"].numpy().tolist() == [[0.333984375, 2.0]]
    assert variables["bert/pooler/dense/kernel"].dtype == tf.float32
    assert report.cast == {("bfloat16", "float32"): 2}
    lines = [r.getMessage() for r in caplog.records if "cast to" in r.getMessage()]
    assert lines == [f"2 variables stored as bfloat16 in {prefix} were cast to float32"]
    # the same names stored in float32: nothing cast, nothing said
    caplog.clear()
    prefix = _save_v1(str(tmp_path / "fp32.ckpt"), {n: tf.zeros(v.shape)
                                                    for n, v in variables.items()})
    with caplog.at_level(logging.INFO):
        assert checkpoint_io.assign_from_checkpoint(variables, prefix).cast == {}
    assert not [r for r in caplog.records if "cast to" in r.getMessage()]


def test_extract_features_on_a_bfloat16_checkpoint_says_it_was_cast(minilm_checkpoint_dir,
                                                                      tmp_path):
    """The root script on MiniLM with every weight saved in bfloat16 under the original names:
    it runs (float32 model) and its log says the 103 weights (the checkpoint's 103 entries,
    every one a model variable) were cast."""
    import subprocess
    import sys
    reader = tf.train.load_checkpoint(os.path.join(minilm_checkpoint_dir, "bert_model.ckpt"))
    names = sorted(reader.get_variable_to_shape_map())
    assert len(names) == 103
    prefix = _save_v1(str(tmp_path / "bf16" / "bert_model.ckpt"),
                      {n: tf.cast(reader.get_tensor(n), tf.bfloat16) for n in names})
    (tmp_path / "in.txt").write_text("the cat sat\n")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run(
        [sys.executable, os.path.join(repo, "extract_features.py"),
         f"--input_file={tmp_path / 'in.txt'}", f"--output_file={tmp_path / 'o.jsonl'}",
         "--layers=-1", "--max_seq_length=8", f"--init_checkpoint={prefix}",
         f"--bert_config_file={minilm_checkpoint_dir}/bert_config.json",
         f"--vocab_file={minilm_checkpoint_dir}/vocab.txt"],
        capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=repo))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"103 variables stored as bfloat16 in {prefix} were cast to float32" in proc.stderr
    assert (tmp_path / "o.jsonl").exists()


def test_checkpoint_layers_above_the_model_are_one_warning(tmp_path, caplog):
    """A new user's 4-layer config on a 6-layer checkpoint ran with an INFO count only (the
    original said nothing either): one WARNING names the unused layers and both counts.
    Loading every layer says nothing."""
    import logging
    names = [f"bert/encoder/layer_{i}/output/dense/bias" for i in range(3)]
    prefix = _save_v1(str(tmp_path / "three.ckpt"), {n: tf.zeros([2]) for n in names})
    two = {n: tf.Variable(tf.ones([2])) for n in names[:2]}
    with caplog.at_level(logging.WARNING):
        report = checkpoint_io.assign_from_checkpoint(two, prefix, require_all=True)
    assert report.unused == [names[2]]
    warnings = [r.getMessage() for r in caplog.records if "not used" in r.getMessage()]
    assert warnings == [f"{prefix}: the checkpoint's layer 2 is not used: the model has 2 "
                        "layer(s) (num_hidden_layers / n_layer of the config) and the "
                        "checkpoint 3; it runs with the first 2"]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        checkpoint_io.assign_from_checkpoint(
            {n: tf.Variable(tf.ones([2])) for n in names}, prefix, require_all=True)
    assert not [r for r in caplog.records if "not used" in r.getMessage()]


def test_a_checkpoint_of_another_release_is_named_when_nothing_matches(golden_dir):
    """A new user's XLNet checkpoint given to BERT got "is this a checkpoint of this model?";
    the names say which release it is."""
    import os
    xlnet = os.path.join(golden_dir, "xlnet", "tiny_random", "xlnet_model.ckpt")
    variables = {"bert/pooler/dense/bias": tf.Variable(tf.zeros([2]))}
    with pytest.raises(CheckpointError) as e:
        checkpoint_io.assign_from_checkpoint(variables, xlnet)
    assert str(e.value).endswith("it would train or predict from random weights: it looks like "
                                 "an XLNet checkpoint")
    assert checkpoint_io.checkpoint_family(["bert/encoder/transformer/group_0/x"]) == "ALBERT"
    assert checkpoint_io.checkpoint_family(["bert/encoder/layer_0/x", "cls/y"]) == "BERT"
    assert checkpoint_io.checkpoint_family(["output_weights"]) is None
