"""`BertModel` and the pre-training heads (spec `bert.md` 2.2-2.12).

Mirrors the original `modeling.BertModel` (and `get_masked_lm_output` /
`get_next_sentence_output` of `run_pretraining.py`) as Keras 3 models. Inputs and outputs are
dicts with the field's standard names:

inputs
  ``input_ids``    int32 ``[batch_size, seq_length]``
  ``input_mask``   int32 ``[batch_size, seq_length]``, 1 = real token (default all ones)
  ``segment_ids``  int32 ``[batch_size, seq_length]`` (token type ids, default all zeros)

outputs
  ``sequence_output``     float32 ``[batch_size, seq_length, hidden_size]`` (last block)
  ``pooled_output``       float32 ``[batch_size, hidden_size]`` (tanh dense on the first token)
  ``all_encoder_layers``  list of L float32 ``[batch_size, seq_length, hidden_size]``
  ``embedding_output``    float32 ``[batch_size, seq_length, hidden_size]``

Dropout is active only when called with ``training=True`` (the original's ``is_training``).
With ``recompute_grad`` set (``--recompute_grad``; bert_tf, beyond the original) a training
call keeps only each block's input for the backward pass and recomputes the rest there, with
the same dropout masks (:mod:`bert_tf.recompute`).
Checkpoint names are in `bert_tf/bert/checkpoint_map.py`.
"""

import functools
from typing import Dict

import keras
import tensorflow as tf

from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import (BertEmbeddings, MaskedLMHead, TransformerBlock,
                                 TransposedOutput, attention_mask_adder, dense)
from bert_tf.feature_names import SEQUENCE_FEATURES
from bert_tf.recompute import call_recomputed


def encoder_inputs(features):
    """The :class:`BertModel` inputs of a feature dict: its ``input_ids``, ``input_mask``,
    ``segment_ids`` (int32 ``[B, S]``; those present), other keys (labels, ids) left out."""
    return {k: features[k] for k in SEQUENCE_FEATURES if k in features}


class BertModel(keras.Model):
    """The BERT encoder: embeddings, L post-LN transformer blocks, pooler.

    Args:
      config: a :class:`BertConfig`.
      use_one_hot_embeddings: word lookup by one-hot matmul (original TPU path; same numbers).
      recompute_grad: (bert_tf) in training calls, recompute each block's activations in the
        backward pass (:func:`bert_tf.recompute.call_recomputed`); same values and gradients,
        less memory. An attribute: the training loop sets it from ``--recompute_grad``.

    Call args:
      inputs: dict with ``input_ids`` and optionally ``input_mask``, ``segment_ids``
        (int32 ``[B, S]``), or a bare ``input_ids`` tensor.
      training: enables dropout.

    Returns:
      dict of ``sequence_output``, ``pooled_output``, ``all_encoder_layers``,
      ``embedding_output`` (see the module docstring).

    Raises:
      ValueError: seq_length > max_position_embeddings.
    """

    def __init__(self, config: BertConfig, use_one_hot_embeddings: bool = False,
                 recompute_grad: bool = False, **kwargs):
        kwargs.setdefault("name", "bert")
        super().__init__(**kwargs)
        config.validate()
        self.config = config
        self.use_one_hot_embeddings = use_one_hot_embeddings
        self.recompute_grad = recompute_grad
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            type_vocab_size=config.type_vocab_size,
            max_position_embeddings=config.max_position_embeddings,
            initializer_range=config.initializer_range,
            hidden_dropout_prob=config.hidden_dropout_prob,
            use_one_hot_embeddings=use_one_hot_embeddings, name="embeddings")
        self.encoder_layers = [
            TransformerBlock(
                hidden_size=config.hidden_size, num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
                hidden_dropout_prob=config.hidden_dropout_prob,
                attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range, name=f"layer_{i}")
            for i in range(config.num_hidden_layers)
        ]
        self.pooler = dense(config.hidden_size, config.initializer_range, activation="tanh",
                            name="pooler_dense")
        self.pooler.build((None, config.hidden_size))
        self.built = True  # every weight exists (see `dropout`)

    def call(self, inputs, training=False) -> Dict[str, tf.Tensor]:
        if isinstance(inputs, dict):
            input_ids = inputs["input_ids"]
            input_mask = inputs.get("input_mask")
            segment_ids = inputs.get("segment_ids")
        else:
            input_ids, input_mask, segment_ids = inputs, None, None
        input_ids = tf.cast(input_ids, tf.int32)
        if input_mask is None:
            input_mask = tf.ones_like(input_ids)
        if segment_ids is None:
            segment_ids = tf.zeros_like(input_ids)
        segment_ids = tf.cast(segment_ids, tf.int32)
        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        mask_adder = attention_mask_adder(input_mask, embedding_output.dtype)
        hidden = embedding_output
        all_layers = []
        for block in self.encoder_layers:
            if self.recompute_grad and training:
                hidden = call_recomputed(block, functools.partial(block, training=training),
                                         [hidden, mask_adder])
            else:
                hidden = block(hidden, mask_adder, training=training)
            all_layers.append(hidden)
        pooled = self.pooler(hidden[:, 0])
        return {
            "sequence_output": hidden,
            "pooled_output": pooled,
            "all_encoder_layers": all_layers,
            "embedding_output": embedding_output,
        }

    def build_with_dummy_input(self, seq_length: int = 2) -> "BertModel":
        """Returns self: every weight already exists (``__init__`` creates them all), so no
        batch is run (a dummy trace cost ~0.2-0.4 CPU s of every command's start, issue 25).
        Kept so that any family's model is built alike (ALBERT's runs a tiny batch)."""
        del seq_length
        return self

    def get_embedding_table(self):
        """The ``[V, H]`` word-embedding variable (tied to the MLM head)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {"config": self.config.to_dict(), "use_one_hot_embeddings": self.use_one_hot_embeddings,
                "recompute_grad": self.recompute_grad, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(BertConfig.from_dict(config["config"]),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   recompute_grad=config.get("recompute_grad", False),
                   name=config.get("name", "bert"))


def build_task_model(model, seq_length: int = 2):
    """Creates every weight of a task model (``BertClassifier``, ``BertSquad``) whose head
    weights exist from ``__init__`` and whose encoder is ``model.bert``; returns ``model``.

    The encoder builds itself (:class:`BertModel`: nothing to run; ALBERT's runs a tiny
    batch), so the whole model is not traced on a dummy batch (issue 25: ~0.2-0.4 CPU s of
    every command's start).
    """
    model.bert.build_with_dummy_input(seq_length)
    return model


class BertPretrainingHeads(keras.layers.Layer):
    """Masked-LM and next-sentence heads (scopes `cls/predictions`, `cls/seq_relationship`).

    Call args:
      sequence_output: float ``[B, S, H]``; pooled_output: float ``[B, H]``;
      masked_lm_positions: int32 ``[B, K]``.

    Returns:
      dict with ``mlm_log_probs`` float32 ``[B*K, V]`` and ``nsp_log_probs`` float32 ``[B, 2]``
      (label 0 = "IsNext", 1 = random next).
    """

    def __init__(self, bert: BertModel, **kwargs):
        kwargs.setdefault("name", "cls")
        super().__init__(**kwargs)
        config = bert.config
        self.predictions = MaskedLMHead(bert.embeddings, config.hidden_size, config.hidden_act,
                                        config.initializer_range, name="predictions")
        self.seq_relationship = TransposedOutput(2, config.hidden_size, config.initializer_range,
                                                 name="seq_relationship")
        self.built = True  # every weight exists (see `dropout`)

    def call(self, sequence_output, pooled_output, masked_lm_positions):
        nsp_logits = self.seq_relationship(pooled_output)
        return {
            "mlm_log_probs": self.predictions(sequence_output, masked_lm_positions),
            "nsp_log_probs": tf.nn.log_softmax(tf.cast(nsp_logits, tf.float32), axis=-1),
        }


def masked_lm_loss(log_probs, masked_lm_ids, masked_lm_weights):
    """Weighted MLM loss ``sum(w * -log p[label]) / (sum(w) + 1e-5)`` (spec 2.11).

    Args:
      log_probs: float32 ``[B*K, V]``; masked_lm_ids: int32 ``[B, K]``;
      masked_lm_weights: float32 ``[B, K]`` (1.0 real, 0.0 padded slot).

    Returns:
      (loss scalar, per_example_loss ``[B*K]`` unweighted).
    """
    ids = tf.reshape(tf.cast(masked_lm_ids, tf.int32), [-1])
    weights = tf.reshape(tf.cast(masked_lm_weights, tf.float32), [-1])
    per_example = -tf.gather(log_probs, ids, batch_dims=1)
    loss = tf.reduce_sum(weights * per_example) / (tf.reduce_sum(weights) + 1e-5)
    return loss, per_example


def next_sentence_loss(log_probs, next_sentence_labels):
    """NSP loss: batch mean of ``-log p[label]`` (spec 2.12).

    Args:
      log_probs: float32 ``[B, 2]``; next_sentence_labels: int32 ``[B]`` or ``[B, 1]``.

    Returns:
      (loss scalar, per_example_loss ``[B]``).
    """
    labels = tf.reshape(tf.cast(next_sentence_labels, tf.int32), [-1])
    per_example = -tf.gather(log_probs, labels, batch_dims=1)
    return tf.reduce_mean(per_example), per_example
