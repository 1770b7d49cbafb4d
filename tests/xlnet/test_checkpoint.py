"""Checkpoint I/O in the original layout: names, bit-exact round trip, clear errors."""
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.model import XLNetClassifier, XLNetModel


def _reader_dump(prefix):
    reader = tf.train.load_checkpoint(prefix)
    shapes = reader.get_variable_to_shape_map()
    dtypes = reader.get_variable_to_dtype_map()
    return {n: (tuple(shapes[n]), dtypes[n], reader.get_tensor(n)) for n in shapes}


def test_names_and_shapes_are_the_original(golden_xlnet):
    xlnet, lm_head, summary, _ = golden_xlnet.build()
    table = checkpoint_map.xlnet_variable_map(xlnet=xlnet, lm_head=lm_head, summary=summary)
    expected = golden_xlnet.run_info["variables"]  # written by the original graph
    assert {n: list(v.shape) for n, v in table.items()} == expected


def test_round_trip_bit_exact(golden_xlnet, tmp_path):
    xlnet, lm_head, summary, _ = golden_xlnet.build()
    table = checkpoint_map.xlnet_variable_map(xlnet=xlnet, lm_head=lm_head, summary=summary)
    prefix = checkpoint_map.save_xlnet_checkpoint(table, str(tmp_path / "out" / "model.ckpt"))
    ours, original = _reader_dump(prefix), _reader_dump(golden_xlnet.ckpt)
    assert sorted(ours) == sorted(original)
    for name, (shape, dtype, value) in original.items():
        assert ours[name][0] == shape, name
        assert ours[name][1] == dtype == tf.float32, name
        assert ours[name][2].tobytes() == value.tobytes(), name
    assert not [f for f in os.listdir(tmp_path / "out") if f.startswith(".tmp")]


@pytest.mark.parametrize("name", ["xlnet_test_checkpoint_empty", "xlnet_test_checkpoint_tune"])
def test_round_trip_keras_xlnet_checkpoints(keras_xlnet_dir, name, tmp_path):
    """untie_r false (empty) and true (tune), no mask_emb / heads: the same 31 entries back."""
    folder = os.path.join(keras_xlnet_dir, name)
    config = XLNetConfig.from_json_file(os.path.join(folder, "xlnet_config.json"))
    xlnet = XLNetModel(config, RunConfig(attn_type="uni", mem_len=5))
    table = checkpoint_map.xlnet_variable_map(xlnet)
    checkpoint_map.load_xlnet_checkpoint(table, os.path.join(folder, "xlnet_model.ckpt"),
                                         require_all=True)
    prefix = checkpoint_map.save_xlnet_checkpoint(
        table, str(tmp_path / "model.ckpt-7"), extra={"global_step": np.int64(7)})
    ours = _reader_dump(prefix)
    original = _reader_dump(os.path.join(folder, "xlnet_model.ckpt"))
    assert ours.pop("global_step")[1] == tf.int64
    assert sorted(ours) == sorted(original)
    for n, (shape, dtype, value) in original.items():
        assert ours[n][:2] == (shape, dtype) and ours[n][2].tobytes() == value.tobytes(), n


def test_table_counts_per_layer():
    config = XLNetConfig(n_layer=3, d_model=8, n_head=2, d_head=4, d_inner=16,
                         ff_activation="gelu", untie_r=True, n_token=50)
    xlnet = XLNetModel(config, with_mask_emb=True)
    table = checkpoint_map.xlnet_variable_map(xlnet)
    # Spec 4.2: 13 per layer + lookup_table, mask_emb, r_w/r_r/r_s biases, seg_embed.
    assert len(table) == 13 * 3 + 6
    assert "model/transformer/layer_2/rel_attn/r/kernel" in table
    assert table["model/transformer/r_w_bias"].shape == (3, 2, 4)
    assert table["model/transformer/seg_embed"].shape == (3, 2, 2, 4)


def _golden_config(golden_xlnet, **changes):
    d = golden_xlnet.config.to_dict()
    d.update(changes)
    return XLNetConfig.from_dict(d)


def test_untie_r_mismatch_is_named(golden_xlnet):
    flipped = not golden_xlnet.config.untie_r
    xlnet = XLNetModel(_golden_config(golden_xlnet, untie_r=flipped), with_mask_emb=True)
    with pytest.raises(CheckpointError) as e:
        checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet),
                                             golden_xlnet.ckpt)
    msg = str(e.value)
    assert f"trained with untie_r={str(not flipped).lower()}" in msg
    assert f"config says untie_r={str(flipped).lower()}" in msg
    assert "model/transformer/r_w_bias" in msg
    # Nothing was assigned.
    assert not np.array_equal(xlnet.lookup_table.numpy(),
                              tf.train.load_checkpoint(golden_xlnet.ckpt).get_tensor(
                                  "model/transformer/word_embedding/lookup_table"))


def test_shape_mismatch_names_variable_and_shapes(golden_xlnet):
    xlnet = XLNetModel(_golden_config(golden_xlnet, n_token=7999))
    with pytest.raises(CheckpointError) as e:
        checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet),
                                             golden_xlnet.ckpt)
    msg = str(e.value)
    assert "model/transformer/word_embedding/lookup_table" in msg
    assert "[8000, 64]" in msg and "[7999, 64]" in msg


def test_integer_weights_are_refused_naming_the_variable(golden_xlnet, tmp_path):
    """Fresh round 3 (r3_xcls_k_int_dtype): a kernel stored as int32 (values truncated to 0)
    was cast and loaded, exit 0, no word."""
    arrays = checkpoint_io.read_checkpoint(golden_xlnet.ckpt)
    name = "model/transformer/layer_0/ff/layer_1/kernel"
    arrays[name] = arrays[name].astype(np.int32)
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), arrays)
    xlnet = XLNetModel(golden_xlnet.config, with_mask_emb=True)
    for check in (checkpoint_map.check_checkpoint_fits, checkpoint_map.load_xlnet_checkpoint):
        with pytest.raises(CheckpointError) as e:
            check(checkpoint_map.xlnet_variable_map(xlnet), prefix)
        assert str(e.value) == (f"{prefix}: variable {name} is stored as int32 in the checkpoint "
                                "but the model's is float32: not a checkpoint of floating-point "
                                "weights (the original's restore refuses it too)")


def test_bert_checkpoint_is_recognised(golden_xlnet, shared_data_dir):
    xlnet = XLNetModel(golden_xlnet.config)
    bert_ckpt = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining", "bert_model.ckpt")
    with pytest.raises(CheckpointError, match="looks like a BERT checkpoint"):
        checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet), bert_ckpt)


def test_optimizer_slots_are_skipped(golden_xlnet, tmp_path):
    """A fine-tuned checkpoint with AdamW slots, TF1 Adam state and global_step."""
    original = checkpoint_io.read_checkpoint(golden_xlnet.ckpt)
    arrays = dict(original)
    name = "model/transformer/layer_0/ff/layer_1/kernel"
    for suffix in ("/adam_m", "/adam_v", "/Adam", "/Adam_1"):
        arrays[name + suffix] = np.full_like(original[name], 7.0)
    arrays["beta1_power"] = np.float32(0.9)
    arrays["beta2_power"] = np.float32(0.999)
    arrays["global_step"] = np.int64(1200)
    prefix = checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt-1200"), arrays)

    model = XLNetClassifier(golden_xlnet.config, n_class=2, task_name="imdb")
    report = checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(model), prefix)
    assert sorted(report.skipped) == sorted([
        "beta1_power", "beta2_power", "global_step", name + "/Adam", name + "/Adam_1",
        name + "/adam_m", name + "/adam_v"])
    assert report.unused == ["model/lm_loss/bias", "model/transformer/mask_emb/mask_emb"]
    assert report.missing == ["model/classification_imdb/logit/kernel",
                              "model/classification_imdb/logit/bias"]
    np.testing.assert_array_equal(model.xlnet.transformer_layers[0].ff.layer_1.kernel.numpy(),
                                  original[name])


def test_regression_and_cls_scope_names(golden_xlnet):
    reg = XLNetClassifier(golden_xlnet.config, task_name="STS-B", is_regression=True)
    names = list(checkpoint_map.xlnet_variable_map(reg))
    assert names[-2:] == ["model/regression_sts-b/logit/kernel", "model/regression_sts-b/logit/bias"]
    assert reg.head.logit.kernel.shape == (64, 1)
    cls = XLNetClassifier(golden_xlnet.config, n_class=5, task_name="yelp5", cls_scope="my_scope",
                          summary_type="attn")
    names = list(checkpoint_map.xlnet_variable_map(cls))
    assert "model/classification_my_scope/logit/kernel" in names
    for suffix in ("summary_bias", "abs_attn/q/kernel", "abs_attn/k/kernel", "abs_attn/v/kernel",
                   "abs_attn/o/kernel", "abs_attn/LayerNorm/gamma", "abs_attn/LayerNorm/beta",
                   "summary/kernel", "summary/bias"):
        assert f"model/sequnece_summary/{suffix}" in names


@pytest.mark.slow
def test_released_base_sizes():
    """Spec 4.2: XLNet-Base has 163 model variables and 116,750,336 parameters."""
    config = XLNetConfig(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072,
                         ff_activation="gelu", untie_r=True, n_token=32000)
    from bert_tf.xlnet.layers import LMHead
    xlnet = XLNetModel(config, with_mask_emb=True)
    table = checkpoint_map.xlnet_variable_map(xlnet=xlnet, lm_head=LMHead(config.n_token))
    assert len(table) == 163
    assert sum(int(np.prod(v.shape)) for v in table.values()) == 116_750_336


def test_albert_checkpoint_is_named_as_albert(golden_xlnet, golden_dir):
    # a new user's ALBERT checkpoint in XLNet mode was called "a BERT checkpoint"
    xlnet = XLNetModel(golden_xlnet.config)
    albert_ckpt = os.path.join(golden_dir, "albert", "model", "model.ckpt")
    with pytest.raises(CheckpointError, match=r"looks like an ALBERT checkpoint \(it has bert/"):
        checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet), albert_ckpt)
