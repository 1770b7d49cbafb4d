"""Start-up pieces of feature extraction: the check that the checkpoint restore fills every
trainable weight (none is left at a random initial value; the weights themselves are built
empty and created from the checkpoint, tests/test_pending_variables.py)."""
import pytest

from bert_tf.bert.checkpoint_map import bert_model_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.bert.tasks.feature_extraction import check_all_trainables_mapped


def _config():
    return BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)


def test_every_trainable_weight_must_be_in_the_checkpoint_map():
    model = BertModel(_config()).build_with_dummy_input()
    table = bert_model_map(model)
    check_all_trainables_mapped(model, table)  # the real map covers all 5 + 16 L + 2 weights
    assert len(table) == len(model.trainable_weights) == 5 + 16 * 2 + 2
    dropped = next(iter(table))
    partial = dict(table)
    del partial[dropped]
    with pytest.raises(RuntimeError, match="misses the weights"):
        check_all_trainables_mapped(model, partial)
