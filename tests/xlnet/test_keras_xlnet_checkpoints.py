"""The keras-xlnet tiny checkpoints of ../shared/data (original layout, d_model 6, 2 layers)
and their recorded outputs: attn_type "uni", mem_len 5, dropout 0. Inputs and outputs are
batch-major, as our API."""
import os

import numpy as np

from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.layers import LMHead
from bert_tf.xlnet.model import XLNetModel

TOL = 1e-5


def _load(folder, name):
    return np.load(os.path.join(folder, name + ".npy"))


def _model(folder, with_mask_emb=False):
    config = XLNetConfig.from_json_file(os.path.join(folder, "xlnet_config.json"))
    xlnet = XLNetModel(config, RunConfig(attn_type="uni", mem_len=5), with_mask_emb=with_mask_emb)
    return config, xlnet


def test_empty_untied_false_no_memory(keras_xlnet_dir):
    folder = os.path.join(keras_xlnet_dir, "xlnet_test_checkpoint_empty")
    config, xlnet = _model(folder)
    assert config.untie_r is False
    report = checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet),
                                                  os.path.join(folder, "xlnet_model.ckpt"),
                                                  require_all=True)
    assert len(report.loaded) == 31 and not report.unused
    out = xlnet({"input_ids": _load(folder, "input_ids"), "segment_ids": _load(folder, "seg_ids")})
    expected = _load(folder, "empty_output")
    assert np.max(np.abs(out["sequence_output"].numpy() - expected)) < TOL


def test_tune_untied_with_memory(keras_xlnet_dir):
    folder = os.path.join(keras_xlnet_dir, "xlnet_test_checkpoint_tune")
    config, xlnet = _model(folder)
    assert config.untie_r is True
    report = checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(xlnet),
                                                  os.path.join(folder, "xlnet_model.ckpt"),
                                                  require_all=True)
    assert len(report.loaded) == 31 and not report.unused
    out = xlnet({"input_ids": _load(folder, "input_ids"), "segment_ids": _load(folder, "seg_ids"),
                 "mems": [_load(folder, "mems_0"), _load(folder, "mems_1")]})
    assert np.max(np.abs(out["sequence_output"].numpy() - _load(folder, "tune_output"))) < TOL
    for i in range(2):
        assert np.max(np.abs(out["new_mems"][i].numpy() - _load(folder, f"tune_new_mems_{i}"))) < TOL


def test_pre_smoke(keras_xlnet_dir):
    """`pre` was recorded by a third-party port: only load and run the two-stream path."""
    folder = os.path.join(keras_xlnet_dir, "xlnet_test_checkpoint_pre")
    config, xlnet = _model(folder, with_mask_emb=True)
    lm_head = LMHead(config.n_token)
    table = checkpoint_map.xlnet_variable_map(xlnet=xlnet, lm_head=lm_head)
    report = checkpoint_map.load_xlnet_checkpoint(table, os.path.join(folder, "xlnet_model.ckpt"),
                                                  require_all=True)
    assert "model/transformer/mask_emb/mask_emb" in report.loaded
    assert "model/lm_loss/bias" in report.loaded
    out = xlnet({"input_ids": _load(folder, "input_ids"), "segment_ids": _load(folder, "seg_ids"),
                 "input_mask": _load(folder, "input_mask"), "input_q": _load(folder, "input_query"),
                 "mems": [_load(folder, "mems_0"), _load(folder, "mems_1")]})
    logits = lm_head(out["query_output"], xlnet.lookup_table).numpy()
    assert logits.shape == _load(folder, "pre_output").shape == (2, 5, 31)
    assert np.all(np.isfinite(logits))
    # Layer 0's memory is the embedding lookup: the same in any implementation.
    assert np.max(np.abs(out["new_mems"][0].numpy() - _load(folder, "pre_new_mems_0"))) < TOL
