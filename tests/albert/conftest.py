"""Fixtures for ALBERT tests: the golden tiny model of the original ALBERT release."""
import os

import numpy as np
import pytest

from bert_tf.albert.checkpoint_map import (albert_model_map, load_albert_checkpoint,
                                           pretraining_heads_map)
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel, AlbertPretrainingHeads

BATCHES = ("b0", "b1", "b2")  # golden README section B


def model_with_heads(config):
    """A built AlbertModel, its pre-training heads, and the full name table (32 names for the
    golden config)."""
    model = AlbertModel(config).build_with_dummy_input()
    heads = AlbertPretrainingHeads(model)
    out = model({"input_ids": np.zeros((1, 2), np.int32)})
    heads(out["sequence_output"], out["pooled_output"], np.zeros((1, 1), np.int32))
    table = albert_model_map(model)
    table.update(pretraining_heads_map(heads))
    return model, heads, table


@pytest.fixture(scope="session")
def albert_model_dir(golden_dir):
    return os.path.join(golden_dir, "albert", "model")


@pytest.fixture(scope="session")
def albert_ckpt(albert_model_dir):
    return os.path.join(albert_model_dir, "model.ckpt")


@pytest.fixture(scope="session")
def albert_config(albert_model_dir):
    return AlbertConfig.from_json_file(os.path.join(albert_model_dir, "albert_config.json"))


@pytest.fixture(scope="session")
def albert_outputs(albert_model_dir):
    """batch name -> {key without the bN_ prefix: array} of the golden outputs.npz."""
    with np.load(os.path.join(albert_model_dir, "outputs.npz")) as d:
        g = dict(d)
    return {b: {k[len(b) + 1:]: v for k, v in g.items() if k.startswith(b + "_")} for b in BATCHES}


@pytest.fixture(scope="session")
def albert_golden_model(albert_config, albert_ckpt):
    """(AlbertModel, AlbertPretrainingHeads, name table, LoadReport) restored from the golden."""
    model, heads, table = model_with_heads(albert_config)
    report = load_albert_checkpoint(table, albert_ckpt)
    return model, heads, table, report
