"""Start-up pieces of feature extraction (issue 16): zero initial values for the weights the
checkpoint restore overwrites, and the check that the restore does overwrite all of them."""
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.bert.tasks.feature_extraction import check_all_trainables_mapped, zero_initialized_trainables


def _config():
    return BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)


def test_trainables_start_as_zeros_with_their_shapes_and_the_rest_keeps_its_values():
    with zero_initialized_trainables():
        model = BertModel(_config()).build_with_dummy_input()
        counter = tf.Variable(lambda: tf.constant(7), trainable=False)
        table = tf.Variable(lambda: tf.ones([3, 2]), trainable=True)
        given = tf.Variable(tf.ones([2]), trainable=True)  # a value, not an initializer: kept
    assert counter.numpy() == 7
    assert tuple(table.shape) == (3, 2) and not table.numpy().any()
    assert given.numpy().tolist() == [1.0, 1.0]
    reference = BertModel(_config()).build_with_dummy_input()
    assert [w.shape for w in model.trainable_weights] == [w.shape for w in reference.trainable_weights]
    assert [w.dtype for w in model.trainable_weights] == [w.dtype for w in reference.trainable_weights]
    for w in model.trainable_weights:
        assert not np.asarray(w.numpy()).any(), w.path
    # LayerNorm gammas are ones and kernels random outside the scope
    assert any(np.asarray(w.numpy()).any() for w in reference.trainable_weights)


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
