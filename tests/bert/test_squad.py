"""BertSquad (bert/squad.py): get_config round-trips to the same model."""
import json

import numpy as np

from bert_tf.bert.config import BertConfig
from bert_tf.bert.squad import BertSquad

TINY = dict(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)


def test_get_config_round_trips():
    model = BertSquad(BertConfig(**TINY), name="bert_squad").build_with_dummy_input()
    config = model.get_config()
    json.dumps(config)  # serializable as Keras saves it
    clone = BertSquad.from_config(config).build_with_dummy_input()
    assert clone.get_config() == config
    assert clone.name == "bert_squad" and clone.config == model.config
    assert list(clone.name_map()) == list(model.name_map())
    assert "cls/squad/output_weights" in clone.name_map()
    assert ([(v.path, tuple(v.shape)) for v in clone.weights]
            == [(v.path, tuple(v.shape)) for v in model.weights])
    clone.set_weights(model.get_weights())
    ids = np.array([[2, 5, 7, 0]], np.int32)
    features = {"input_ids": ids, "input_mask": (ids > 0).astype(np.int32),
                "segment_ids": np.zeros_like(ids)}
    for key in ("start_logits", "end_logits"):
        np.testing.assert_array_equal(clone(features)[key].numpy(), model(features)[key].numpy())
