"""BertClassifier (bert/classifier.py): get_config round-trips to the same model."""
import json

import numpy as np
import pytest

from bert_tf.bert.classifier import BertClassifier
from bert_tf.bert.config import BertConfig

TINY = dict(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)


@pytest.mark.parametrize("num_labels, is_regression", [(3, False), (1, True)])
def test_get_config_round_trips(num_labels, is_regression):
    model = BertClassifier(BertConfig(**TINY), num_labels, is_regression=is_regression,
                           use_one_hot_embeddings=True).build_with_dummy_input()
    config = model.get_config()
    json.dumps(config)  # serializable as Keras saves it
    clone = BertClassifier.from_config(config).build_with_dummy_input()
    assert clone.get_config() == config
    assert clone.config == model.config and clone.num_labels == num_labels
    assert clone.is_regression is is_regression and clone.bert.use_one_hot_embeddings
    assert list(clone.name_map()) == list(model.name_map())
    assert "output_weights" in clone.name_map() and "output_bias" in clone.name_map()
    assert ([(v.path, tuple(v.shape)) for v in clone.weights]
            == [(v.path, tuple(v.shape)) for v in model.weights])
    clone.set_weights(model.get_weights())
    ids = np.array([[2, 5, 7, 0]], np.int32)
    features = {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                "segment_ids": np.zeros_like(ids)}
    np.testing.assert_array_equal(clone(features)["logits"].numpy(),
                                  model(features)["logits"].numpy())
