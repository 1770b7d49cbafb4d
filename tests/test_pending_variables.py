"""Weights built empty and filled from the checkpoint (issue 24 item 1): a restored weight
never holds a random value, and a weight the checkpoint lacks gets exactly the value a plain
build gives it."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint_io, pending_variables
from bert_tf.bert.checkpoint_map import bert_model_map, output_head_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import TransposedOutput
from bert_tf.bert.model import BertModel
from bert_tf.errors import CheckpointError
from bert_tf.training.restore import build_from_checkpoint


def _config():
    return BertConfig(vocab_size=40, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)


class _EncoderWithHead(keras.Model):
    """A BERT encoder and a classifier-style head (`output_weights`/`output_bias`)."""

    def __init__(self):
        super().__init__()
        self.bert = BertModel(_config())
        self.head = TransposedOutput(3, 8, 0.02)

    def build_with_dummy_input(self):
        self.bert.build_with_dummy_input()
        return self

    def name_map(self):
        table = bert_model_map(self.bert)
        table.update(output_head_map(self.head))
        return table


def _checkpoint(tmp_path):
    """An encoder-only checkpoint whose every value is 0.5 + its index/1000 (no head)."""
    model = BertModel(_config()).build_with_dummy_input()
    arrays = {name: np.full(tuple(v.shape), 0.5 + i / 1000, np.float32)
              for i, (name, v) in enumerate(bert_model_map(model).items())}
    return checkpoint_io.write_checkpoint(str(tmp_path / "model.ckpt"), arrays), arrays


def _record_random_draws(monkeypatch):
    """The shapes of the truncated-normal tensors computed from now on (traced ops not)."""
    drawn = []
    original = keras.initializers.TruncatedNormal.__call__

    def record(self, shape, dtype=None):
        value = original(self, shape, dtype=dtype)
        if tf.executing_eagerly():
            drawn.append(tuple(shape))
        return value

    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__", record)
    return drawn


def test_a_plain_build_draws_every_kernel(monkeypatch):
    """The check below can fail: a plain build computes 2 + 6 L + 1 (+ head) kernels."""
    drawn = _record_random_draws(monkeypatch)
    _EncoderWithHead().build_with_dummy_input()
    assert len(drawn) == 3 + 6 * 2 + 1 + 1


def test_restored_weights_are_created_from_the_checkpoint_and_never_hold_random_values(
        tmp_path, monkeypatch):
    prefix, arrays = _checkpoint(tmp_path)
    drawn = _record_random_draws(monkeypatch)
    seen_pending = []

    def restore(model):
        table = model.name_map()
        seen_pending.extend(pending_variables.is_pending(v) for v in table.values())
        return checkpoint_io.assign_from_checkpoint(table, prefix)

    model, report = build_from_checkpoint(
        lambda: _EncoderWithHead().build_with_dummy_input(), restore)
    # the build allocated nothing: every weight was pending when the restore began
    assert seen_pending and all(seen_pending)
    # only the head's kernel (absent from the checkpoint) drew random numbers: [3, 8]
    assert drawn == [(3, 8)]
    assert report.missing == ["output_weights", "output_bias"]
    for name, var in model.name_map().items():
        if name in arrays:
            np.testing.assert_array_equal(var.numpy(), arrays[name])
    assert not pending_variables.pending_variables()


def test_a_head_absent_from_the_checkpoint_gets_exactly_the_value_of_a_plain_build(tmp_path):
    prefix, _ = _checkpoint(tmp_path)
    keras.utils.set_random_seed(123)
    plain = _EncoderWithHead().build_with_dummy_input()
    checkpoint_io.assign_from_checkpoint(plain.name_map(), prefix)
    keras.utils.set_random_seed(123)
    model, _ = build_from_checkpoint(
        lambda: _EncoderWithHead().build_with_dummy_input(),
        lambda m: checkpoint_io.assign_from_checkpoint(m.name_map(), prefix))
    head = model.head.output_weights.numpy()
    np.testing.assert_array_equal(head, plain.head.output_weights.numpy())
    np.testing.assert_array_equal(model.head.output_bias.numpy(), np.zeros(3, np.float32))
    # a truncated normal of stddev 0.02, as the original's create_initializer draws
    assert head.std() > 0.005 and np.abs(head).max() <= 0.04
    ids = tf.constant([[1, 2, 3]])
    np.testing.assert_array_equal(model.bert({"input_ids": ids})["sequence_output"],
                                  plain.bert({"input_ids": ids})["sequence_output"])


def test_a_failed_restore_draws_nothing_and_leaves_no_pending_weight(tmp_path, monkeypatch):
    """The restore's own error comes out, and no random value is drawn for the dropped model
    (issue 27: a config too large to allocate failed there with an out-of-memory traceback
    that hid the shape mismatch)."""
    prefix, _ = _checkpoint(tmp_path)
    wrong = BertConfig(vocab_size=41, hidden_size=8, num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=16, max_position_embeddings=16, type_vocab_size=2)
    drawn = _record_random_draws(monkeypatch)

    def restore(model):
        return checkpoint_io.assign_from_checkpoint(bert_model_map(model), prefix)

    with pytest.raises(CheckpointError, match="word_embeddings has shape"):
        build_from_checkpoint(lambda: BertModel(wrong).build_with_dummy_input(), restore)
    assert drawn == []
    assert not pending_variables.pending_variables()
    # the next build is not disturbed by the dropped one
    model, _ = build_from_checkpoint(
        lambda: BertModel(_config()).build_with_dummy_input(),
        lambda m: checkpoint_io.assign_from_checkpoint(bert_model_map(m), prefix))
    assert drawn == [] and not pending_variables.pending_variables()
    assert float(bert_model_map(model)["bert/embeddings/word_embeddings"][0, 0]) == 0.5