"""Fixtures for XLNet tests: the golden tiny models (original code's outputs) and the
keras-xlnet tiny checkpoints of ../shared/data."""
import json
import os

import numpy as np
import pytest

from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.layers import LMHead, SequenceSummary
from bert_tf.xlnet.model import XLNetModel

GOLDEN_VARIANTS = ("tiny_random", "tiny_random_tied")


def time_to_batch_major(a):
    """``[len, batch, ...]`` (the golden files' layout) -> ``[batch, len, ...]``."""
    a = np.asarray(a)
    return np.transpose(a, [1, 0] + list(range(2, a.ndim)))


class GoldenXLNet:
    """One golden tiny model folder: config, run settings, checkpoint and recorded outputs."""

    def __init__(self, folder):
        self.folder = folder
        self.name = os.path.basename(folder)
        self.config = XLNetConfig.from_json_file(os.path.join(folder, "xlnet_config.json"))
        with open(os.path.join(folder, "run_config.json")) as f:
            self.run_info = json.load(f)
        self.ckpt = os.path.join(folder, "xlnet_model.ckpt")
        with np.load(os.path.join(folder, "outputs.npz")) as d:
            self.outputs = dict(d)
        with np.load(os.path.join(folder, "two_stream.npz")) as d:
            self.two_stream = dict(d)

    def run_config(self, **overrides):
        rc = self.run_info["run_config"]
        kwargs = dict(dropout=rc["dropout"], dropatt=rc["dropatt"], init=rc["init"],
                      init_range=rc["init_range"], init_std=rc["init_std"],
                      bi_data=rc["bi_data"], clamp_len=rc["clamp_len"],
                      same_length=rc["same_length"])
        kwargs.update(overrides)
        return RunConfig(**kwargs)

    def build(self, **run_overrides):
        """(XLNetModel with mask_emb, LMHead, SequenceSummary('last', proj), LoadReport)."""
        xlnet = XLNetModel(self.config, self.run_config(**run_overrides), with_mask_emb=True)
        lm_head = LMHead(self.config.n_token)
        summary = SequenceSummary(self.config.d_model, self.config.n_head, self.config.d_head,
                                  "last", use_proj=True)
        table = checkpoint_map.xlnet_variable_map(xlnet=xlnet, lm_head=lm_head, summary=summary)
        report = checkpoint_map.load_xlnet_checkpoint(table, self.ckpt, require_all=True)
        return xlnet, lm_head, summary, report


@pytest.fixture(scope="session", params=GOLDEN_VARIANTS)
def golden_xlnet(request, golden_dir):
    return GoldenXLNet(os.path.join(golden_dir, "xlnet", request.param))


@pytest.fixture(scope="session")
def keras_xlnet_dir(shared_data_dir):
    """Folder holding xlnet_test_checkpoint_{empty,tune,pre} (keras-xlnet's test data)."""
    return os.path.join(shared_data_dir, "checkpoints")
