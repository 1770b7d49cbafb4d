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


@pytest.fixture(scope="session")
def minilm_checkpoint_dir(minilm_dir, tmp_path_factory):
    """MiniLM converted to the original layout by our converter (bert_tf.convert)."""
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm"))
    convert_hf_folder(minilm_dir, out)
    return out
