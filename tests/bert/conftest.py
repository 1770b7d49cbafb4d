"""Fixtures for BERT model tests: the tiny_random golden model and MiniLM converted here."""
import os

import numpy as np
import pytest

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint, pretraining_heads_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel, BertPretrainingHeads


@pytest.fixture(scope="session")
def tiny_random_dir(golden_dir):
    return os.path.join(golden_dir, "bert", "tiny_random")


@pytest.fixture(scope="session")
def tiny_random_outputs(tiny_random_dir):
    with np.load(os.path.join(tiny_random_dir, "outputs.npz")) as d:
        return dict(d)


@pytest.fixture(scope="session")
def tiny_random_model(tiny_random_dir):
    """(BertModel, BertPretrainingHeads, load report) restored from the golden checkpoint."""
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    heads = BertPretrainingHeads(model)
    out = model({"input_ids": np.zeros((1, 2), np.int32)})
    heads(out["sequence_output"], out["pooled_output"], np.zeros((1, 1), np.int32))
    table = bert_model_map(model)
    table.update(pretraining_heads_map(heads))
    report = load_bert_checkpoint(table, os.path.join(tiny_random_dir, "bert_model.ckpt"))
    return model, heads, report


# A 1-layer config for tests that only need a built model (no golden weights).
TINY_CONFIG = dict(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                   intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)
TINY_FEATURES = {"input_ids": np.array([[2, 5, 7, 0]], np.int32),
                 "input_mask": np.array([[1, 1, 1, 0]], np.int32),
                 "segment_ids": np.zeros((1, 4), np.int32),
                 "masked_lm_positions": np.array([[1, 2]], np.int32)}


def assert_config_round_trips(model, output_keys):
    """``type(model).from_config(model.get_config())`` is the same model: same config (JSON
    serializable), same original names in ``name_map``, same weight paths and shapes, and the
    same ``output_keys`` outputs on :data:`TINY_FEATURES` once given the same weights.

    Returns the rebuilt model."""
    import json

    config = model.get_config()
    json.dumps(config)  # serializable as Keras saves it
    clone = type(model).from_config(config).build_with_dummy_input()
    assert clone.get_config() == config
    assert clone.name == model.name and clone.config == model.config
    assert list(clone.name_map()) == list(model.name_map())
    assert ([(v.path, tuple(v.shape)) for v in clone.weights]
            == [(v.path, tuple(v.shape)) for v in model.weights])
    clone.set_weights(model.get_weights())
    for key in output_keys:
        np.testing.assert_array_equal(clone(TINY_FEATURES)[key].numpy(),
                                      model(TINY_FEATURES)[key].numpy())
    return clone
