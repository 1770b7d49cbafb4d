"""ALBERT checkpoints in the original layout: the name table, load reports, bit-exact save,
and one clear error for a checkpoint that does not fit (golden README section B)."""
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.checkpoint_map import (albert_model_map, load_albert_checkpoint,
                                           save_albert_checkpoint)
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.bert.checkpoint_map import output_head_map
from bert_tf.bert.layers import TransposedOutput
from bert_tf.errors import CheckpointError
from tests.albert.conftest import model_with_heads


def _golden_variables(albert_model_dir):
    """name -> shape tuple from the golden variables.txt (`name [d0, d1]` lines)."""
    out = {}
    with open(os.path.join(albert_model_dir, "variables.txt"), encoding="utf-8") as f:
        for line in f:
            name, shape = line.rstrip("\n").split(" ", 1)
            out[name] = tuple(int(x) for x in shape.strip("[]").split(",") if x.strip())
    return out


def test_name_table_is_the_original_variable_list(albert_config, albert_model_dir):
    _, _, table = model_with_heads(albert_config)
    golden = _golden_variables(albert_model_dir)
    assert len(golden) == 32
    assert {n: tuple(v.shape) for n, v in table.items()} == golden


def test_base_sized_table_has_albert_base_counts():
    # albert_base: V 30000, E 128, H 768, L 12, G 1, K 1, N 12, I 3072, P 512, T 2.
    config = AlbertConfig(vocab_size=30000, embedding_size=128, hidden_size=768,
                          num_attention_heads=12, intermediate_size=3072)
    table = albert_model_map(AlbertModel(config).build_with_dummy_input())
    assert len(table) == 5 + 2 + 16 + 2
    # embeddings 30000*128 + 2*128 + 512*128 + 2*128 = 3,906,048; projection 128*768 + 768
    # = 99,072; one block 4*(768*768+768) + 4*768 + 768*3072+3072 + 3072*768+768 = 7,087,872;
    # pooler 768*768 + 768 = 590,592.
    assert sum(int(np.prod(v.shape)) for v in table.values()) == 11683584
    name = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/output/dense/kernel"
    assert tuple(table[name].shape) == (3072, 768)


def test_groups_and_inner_groups_in_the_names():
    config = AlbertConfig(vocab_size=10, embedding_size=4, hidden_size=8, num_hidden_layers=2,
                          num_hidden_groups=3, inner_group_num=2, num_attention_heads=2,
                          intermediate_size=8)
    table = albert_model_map(AlbertModel(config).build_with_dummy_input())
    # L 2, G 3: layers use int(0/2*3) = 0 and int(1/2*3) = 1; group_2 is never created.
    groups = sorted({"/".join(n.split("/")[3:5]) for n in table if "/transformer/" in n})
    assert groups == ["group_0/inner_group_0", "group_0/inner_group_1",
                      "group_1/inner_group_0", "group_1/inner_group_1"]
    assert len(table) == 5 + 2 + 16 * 4 + 2


def test_no_projection_when_embedding_size_equals_hidden_size():
    config = AlbertConfig(vocab_size=10, embedding_size=8, hidden_size=8, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=8)
    table = albert_model_map(AlbertModel(config).build_with_dummy_input())
    assert not any("embedding_hidden_mapping_in" in n for n in table)
    assert len(table) == 5 + 16 + 2


def test_round_trip_is_bit_exact(albert_golden_model, albert_ckpt, albert_outputs, tmp_path):
    model, heads, table, _ = albert_golden_model
    prefix = save_albert_checkpoint(table, str(tmp_path / "model.ckpt"))
    ours, orig = tf.train.load_checkpoint(prefix), tf.train.load_checkpoint(albert_ckpt)
    assert ours.get_variable_to_shape_map() == orig.get_variable_to_shape_map()
    assert ours.get_variable_to_dtype_map() == orig.get_variable_to_dtype_map()
    for name in orig.get_variable_to_shape_map():
        a, b = ours.get_tensor(name), orig.get_tensor(name)
        assert a.tobytes() == b.tobytes(), name
    # and it loads back into a fresh model with the same outputs
    fresh, _, fresh_table = model_with_heads(model.config)
    report = load_albert_checkpoint(fresh_table, prefix, require_all=True)
    assert len(report.loaded) == 32 and not report.missing and not report.unused
    g = albert_outputs["b2"]
    inputs = {k: g[k] for k in ("input_ids", "input_mask", "segment_ids")}
    np.testing.assert_array_equal(fresh(inputs)["sequence_output"].numpy(),
                                  model(inputs)["sequence_output"].numpy())


def test_config_that_does_not_fit_names_variable_and_both_shapes(albert_ckpt, albert_config):
    cfg = AlbertConfig.from_dict(dict(albert_config.to_dict(), embedding_size=32))
    model, _, table = model_with_heads(cfg)
    before = model.embeddings.word_embeddings.numpy().copy()
    with pytest.raises(CheckpointError) as e:
        load_albert_checkpoint(table, albert_ckpt)
    msg = str(e.value)
    assert "bert/embeddings/word_embeddings" in msg
    assert "[30522, 16] in the checkpoint" in msg and "[30522, 32] in the ALBERT model" in msg
    np.testing.assert_array_equal(model.embeddings.word_embeddings.numpy(), before)


def test_integer_weights_are_refused_naming_the_variable(albert_ckpt, albert_config, tmp_path):
    """Fresh round 3 (r3_cls_k_int_dtype, r3_xcls_k_int_dtype; ALBERT's loader too): a kernel
    stored as int32 was cast and loaded, exit 0, no word."""
    from bert_tf import checkpoint_io
    arrays = checkpoint_io.read_checkpoint(albert_ckpt)
    name = "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel"
    arrays[name] = arrays[name].astype(np.int32)
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), arrays)
    _, _, table = model_with_heads(albert_config)
    with pytest.raises(CheckpointError) as e:
        load_albert_checkpoint(table, prefix)
    assert str(e.value) == (f"{prefix}: variable {name} is stored as int32 in the checkpoint "
                            "but the model's is float32: not a checkpoint of floating-point "
                            "weights (the original's restore refuses it too)")


def test_more_groups_than_the_checkpoint_is_an_error(albert_ckpt, albert_config):
    cfg = AlbertConfig.from_dict(dict(albert_config.to_dict(), num_hidden_groups=3))
    _, _, table = model_with_heads(cfg)
    with pytest.raises(CheckpointError, match="group_1/inner_group_0/attention_1/self/query/kernel "
                                              r"\(shape \[64, 64\]\) is not in the checkpoint"):
        load_albert_checkpoint(table, albert_ckpt)


def test_bert_checkpoint_given_as_albert(golden_dir):
    """The golden tiny BERT (H 64, 2 layers): with E 16 the first variable does not fit; with
    E == H the shapes fit and the BERT layout is named."""
    bert_ckpt = os.path.join(golden_dir, "bert", "tiny_random", "bert_model.ckpt")
    sizes = dict(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=128, type_vocab_size=2)
    _, _, table = model_with_heads(AlbertConfig(embedding_size=16, **sizes))
    with pytest.raises(CheckpointError, match=r"variable bert/embeddings/word_embeddings has shape "
                                              r"\[30522, 64\] in the checkpoint but \[30522, 16\]"):
        load_albert_checkpoint(table, bert_ckpt)
    _, _, table = model_with_heads(AlbertConfig(embedding_size=64, **sizes))
    with pytest.raises(CheckpointError, match="this is a BERT checkpoint, not ALBERT") as e:
        load_albert_checkpoint(table, bert_ckpt)
    assert "bert/encoder/layer_0/" in str(e.value)


def test_xlnet_checkpoint_given_as_albert_is_named(golden_dir):
    """A new user's XLNet checkpoint in ALBERT mode got "does the config match it?"."""
    xlnet_ckpt = os.path.join(golden_dir, "xlnet", "tiny_random", "xlnet_model.ckpt")
    sizes = dict(vocab_size=30522, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128, max_position_embeddings=128, type_vocab_size=2)
    _, _, table = model_with_heads(AlbertConfig(embedding_size=16, **sizes))
    with pytest.raises(CheckpointError, match=r"is not in the checkpoint \(\d+ bert/\* variables "
                                              r"missing\); it holds XLNet names \(model/"
                                              r"transformer/\.\.\.\): this is an XLNet "
                                              r"checkpoint, not ALBERT$"):
        load_albert_checkpoint(table, xlnet_ckpt)


def test_missing_and_unused_names_are_reported(albert_ckpt, albert_config):
    model, _, _ = model_with_heads(albert_config)
    table = albert_model_map(model)  # no pre-training heads: the 7 cls/* names are unused
    head = TransposedOutput(2, albert_config.hidden_size, name="classifier")
    table.update(output_head_map(head))  # run_classifier's new head: missing
    report = load_albert_checkpoint(table, albert_ckpt)
    assert len(report.loaded) == 25
    assert report.missing == ["output_weights", "output_bias"]
    assert sorted(report.unused) == sorted([
        "cls/predictions/output_bias", "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma", "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel", "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights"])
    assert "missing: output_weights, output_bias" in report.summary()
    with pytest.raises(CheckpointError, match="missing from the checkpoint: output_weights"):
        load_albert_checkpoint(table, albert_ckpt, require_all=True)


def test_optimizer_entries_are_skipped(albert_golden_model, albert_config, tmp_path):
    _, _, table, _ = albert_golden_model
    name = "bert/pooler/dense/bias"
    extra = {"global_step": np.int64(7), name + "/adam_m": np.ones([64], np.float32),
             name + "/adam_v": np.ones([64], np.float32)}
    prefix = save_albert_checkpoint(table, str(tmp_path / "model.ckpt-7"), extra=extra)
    _, _, fresh_table = model_with_heads(albert_config)
    report = load_albert_checkpoint(fresh_table, prefix)
    assert sorted(report.skipped) == sorted(extra) and not report.unused
    assert len(report.loaded) == 32


def test_init_from_group0_fills_every_group_from_a_one_group_checkpoint(
        albert_ckpt, albert_config, albert_outputs):
    """run_pretraining --init_from_group0: groups 1, 2 load group_0's tensors, so the 3-group
    model computes what the 1-group golden model computed."""
    cfg = AlbertConfig.from_dict(dict(albert_config.to_dict(), num_hidden_groups=3))
    model, heads, table = model_with_heads(cfg)
    assert len(table) == 32 + 2 * 16
    report = load_albert_checkpoint(table, albert_ckpt, require_all=True, init_from_group0=True)
    assert sorted(report.loaded) == sorted(table) and not report.missing and not report.unused
    reader = tf.train.load_checkpoint(albert_ckpt)
    name = "bert/encoder/transformer/group_2/inner_group_0/ffn_1/intermediate/dense/kernel"
    np.testing.assert_array_equal(table[name].numpy(), reader.get_tensor(
        name.replace("group_2", "group_0")))
    g = albert_outputs["b0"]
    out = model({k: g[k] for k in ("input_ids", "input_mask", "segment_ids")})
    real = g["input_mask"].astype(bool)
    assert np.abs(out["sequence_output"].numpy() - g["sequence_output"])[real].max() <= 2e-5
