"""BertClassifier (bert/classifier.py): get_config round-trips to the same model."""
import pytest

from bert_tf.bert.classifier import BertClassifier
from bert_tf.bert.config import BertConfig
from tests.bert.conftest import TINY_CONFIG, assert_config_round_trips


@pytest.mark.parametrize("num_labels, is_regression", [(3, False), (1, True)])
def test_get_config_round_trips(num_labels, is_regression):
    model = BertClassifier(BertConfig(**TINY_CONFIG), num_labels, is_regression=is_regression,
                           use_one_hot_embeddings=True).build_with_dummy_input()
    clone = assert_config_round_trips(model, ["logits", "probabilities"])
    assert clone.num_labels == num_labels and clone.is_regression is is_regression
    assert clone.bert.use_one_hot_embeddings
    assert "output_weights" in clone.name_map() and "output_bias" in clone.name_map()
