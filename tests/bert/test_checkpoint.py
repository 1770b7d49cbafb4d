"""Checkpoint I/O in the original layout (spec bert.md 3): load, report, save back bit-exact."""
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.checkpoint_map import (bert_model_map, load_bert_checkpoint, output_head_map,
                                         pretraining_heads_map, save_bert_checkpoint)
from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import TransposedOutput
from bert_tf.bert.model import BertModel, BertPretrainingHeads
from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io


def _model_with_heads(config):
    model = BertModel(config).build_with_dummy_input()
    heads = BertPretrainingHeads(model)
    out = model({"input_ids": np.zeros((1, 2), np.int32)})
    heads(out["sequence_output"], out["pooled_output"], np.zeros((1, 1), np.int32))
    table = bert_model_map(model)
    table.update(pretraining_heads_map(heads))
    return model, table


def test_name_table_matches_the_original_variable_list(tiny_random_dir):
    names = set(tf.train.load_checkpoint(os.path.join(tiny_random_dir, "bert_model.ckpt"))
                .get_variable_to_shape_map())
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    _, table = _model_with_heads(config)
    assert set(table) == names
    assert len(table) == 5 + 16 * config.num_hidden_layers + 2 + 7


def test_base_sized_table_has_the_spec_counts():
    config = BertConfig(vocab_size=30522, type_vocab_size=2)
    table = bert_model_map(BertModel(config).build_with_dummy_input())
    assert len(table) == 199  # 206 tensors minus the 7 cls/* heads (spec 3.2)
    assert sum(int(np.prod(v.shape)) for v in table.values()) == 109482240
    assert tuple(table["bert/encoder/layer_11/intermediate/dense/kernel"].shape) == (768, 3072)


def test_toy_pretraining_checkpoint_with_adam_slots_loads(shared_data_dir):
    prefix = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining", "bert_model.ckpt")
    config = BertConfig.from_json_file(os.path.join(os.path.dirname(prefix), "bert_config.json"))
    _, table = _model_with_heads(config)
    report = load_bert_checkpoint(table, prefix, require_all=True)
    # 139 variables = 46 model tensors + 2 x 46 Adam slots + global_step (data README)
    assert len(report.loaded) == 46 and report.missing == [] and report.unused == []
    assert len(report.skipped) == 93 and "global_step" in report.skipped
    reader = tf.train.load_checkpoint(prefix)
    np.testing.assert_array_equal(table["cls/predictions/output_bias"].numpy(),
                                  reader.get_tensor("cls/predictions/output_bias"))


def test_round_trip_is_bit_exact(tiny_random_model, tiny_random_dir, tmp_path):
    model, heads, _ = tiny_random_model
    table = bert_model_map(model)
    table.update(pretraining_heads_map(heads))
    prefix = save_bert_checkpoint(table, str(tmp_path / "bert_model.ckpt"))
    original = tf.train.load_checkpoint(os.path.join(tiny_random_dir, "bert_model.ckpt"))
    ours = tf.train.load_checkpoint(prefix)
    assert ours.get_variable_to_shape_map() == original.get_variable_to_shape_map()
    assert ours.get_variable_to_dtype_map() == original.get_variable_to_dtype_map()
    for name in original.get_variable_to_shape_map():
        np.testing.assert_array_equal(ours.get_tensor(name), original.get_tensor(name), err_msg=name)
    # the file layout is the original's: only the bundle, no temporary files left
    assert sorted(os.listdir(tmp_path)) == ["bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index"]


def test_config_that_does_not_fit_names_variable_and_shapes(tiny_random_dir):
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    config.intermediate_size = 256
    model = BertModel(config).build_with_dummy_input()
    table = bert_model_map(model)
    before = table["bert/embeddings/word_embeddings"].numpy().copy()
    with pytest.raises(CheckpointError) as e:
        load_bert_checkpoint(table, os.path.join(tiny_random_dir, "bert_model.ckpt"))
    msg = str(e.value)
    assert "bert/encoder/layer_0/intermediate/dense/kernel" in msg
    assert "[64, 128]" in msg and "[64, 256]" in msg
    # nothing was assigned before the mismatch was found
    np.testing.assert_array_equal(table["bert/embeddings/word_embeddings"].numpy(), before)


def test_missing_and_unused_names_are_reported(tiny_random_dir):
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    head = TransposedOutput(3, config.hidden_size, name="classifier")
    head(np.zeros((1, config.hidden_size), np.float32))
    table = bert_model_map(model)
    table.update(output_head_map(head))
    report = load_bert_checkpoint(table, os.path.join(tiny_random_dir, "bert_model.ckpt"))
    assert report.missing == ["output_weights", "output_bias"]
    assert len(report.unused) == 7 and all(n.startswith("cls/") for n in report.unused)
    assert "missing: output_weights, output_bias" in report.summary()
    with pytest.raises(CheckpointError, match="missing from the checkpoint: output_weights"):
        load_bert_checkpoint(table, os.path.join(tiny_random_dir, "bert_model.ckpt"), require_all=True)


def test_squad_head_names():
    head = TransposedOutput(2, 8)
    head(np.zeros((1, 8), np.float32))
    assert list(output_head_map(head, "cls/squad")) == ["cls/squad/output_weights", "cls/squad/output_bias"]
    assert tuple(head.output_weights.shape) == (2, 8)


@pytest.mark.parametrize("suffix", ["", ".index", ".data-00000-of-00001"])
def test_prefix_resolution(tiny_random_dir, suffix):
    path = os.path.join(tiny_random_dir, "bert_model.ckpt") + suffix
    assert checkpoint_io.resolve_prefix(path) == os.path.join(tiny_random_dir, "bert_model.ckpt")
    assert checkpoint_io.resolve_prefix(tiny_random_dir) == os.path.join(tiny_random_dir, "bert_model.ckpt")


def test_missing_and_corrupt_checkpoints(tmp_path):
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        checkpoint_io.resolve_prefix(str(tmp_path / "bert_model.ckpt"))
    (tmp_path / "bad.ckpt.index").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="unreadable checkpoint"):
        checkpoint_io.read_checkpoint(str(tmp_path / "bad.ckpt"))


def test_write_is_atomic_on_failure(tmp_path):
    good = {"a": np.ones((2,), np.float32)}
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt-1"), good)
    with pytest.raises(Exception):
        checkpoint_io.write_checkpoint(prefix, {"a": object()})
    np.testing.assert_array_equal(checkpoint_io.read_checkpoint(prefix)["a"], good["a"])
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]
