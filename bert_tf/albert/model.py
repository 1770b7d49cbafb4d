"""`AlbertModel` and its pre-training heads (masked LM + sentence order).

Mirrors `modeling.AlbertModel` / `transformer_model` of the original ALBERT release and
`get_masked_lm_output` / `get_sentence_order_output` of its `run_pretraining.py`, built from
BERT's Keras layers where the math is the same:

* embeddings: BERT's (word + token type + position, LayerNorm, dropout), E wide;
* `embedding_hidden_mapping_in`: a dense E -> H (only when E != H, as the original);
* encoder: the blocks of the used groups, each ``inner_group_num`` BERT post-LN
  `TransformerBlock`s; layer l runs group ``int(l / L * G)``, so all L layers share one set of
  weights when G = 1;
* pooler: tanh dense on the first token.

Inputs and outputs are dicts with the field's standard names:

inputs
  ``input_ids``    int32 ``[batch_size, seq_length]``
  ``input_mask``   int32 ``[batch_size, seq_length]``, 1 = real token (default all ones)
  ``segment_ids``  int32 ``[batch_size, seq_length]`` (token type ids, default all zeros)

outputs
  ``sequence_output``        float32 ``[batch_size, seq_length, hidden_size]`` (last block)
  ``pooled_output``          float32 ``[batch_size, hidden_size]``
  ``all_encoder_layers``     list of L * inner_group_num float32
                             ``[batch_size, seq_length, hidden_size]``, one per inner block
  ``embedding_output``       float32 ``[batch_size, seq_length, embedding_size]``, before the
                             E -> H projection (the original `get_embedding_output`)
  ``word_embedding_output``  float32 ``[batch_size, seq_length, embedding_size]``, the raw
                             lookup (the original `get_word_embedding_output`)

Dropout is active only when called with ``training=True`` (the original's ``is_training``).
With ``recompute_grad`` set (``--recompute_grad``; bert_tf, beyond the original) a training
call keeps only each block call's input for the backward pass and recomputes the rest there,
with the same dropout masks (:mod:`bert_tf.recompute`; a shared block draws a new stream at
each of its L calls).
Checkpoint names are in `bert_tf/albert/checkpoint_map.py`.
"""

import functools
from typing import Dict

import keras
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.layers import AlbertMaskedLMHead
from bert_tf.bert.layers import (BertEmbeddings, TransformerBlock, TransposedOutput,
                                 attention_mask_adder, dense)
from bert_tf.bert.model import masked_lm_loss, next_sentence_loss
from bert_tf.recompute import call_recomputed

__all__ = ["AlbertModel", "AlbertPretrainingHeads", "masked_lm_loss", "sentence_order_loss"]


class AlbertModel(keras.Model):
    """The ALBERT encoder: factorised embeddings, shared transformer groups, pooler.

    Args:
      config: an :class:`AlbertConfig`.
      use_one_hot_embeddings: word lookup by one-hot matmul (original TPU path; same numbers).
      recompute_grad: (bert_tf) in training calls, recompute each block call's activations in
        the backward pass (:func:`bert_tf.recompute.call_recomputed`); same values and
        gradients, less memory. An attribute: the training loop sets it from
        ``--recompute_grad``.

    Call args:
      inputs: dict with ``input_ids`` and optionally ``input_mask``, ``segment_ids``
        (int32 ``[B, S]``), or a bare ``input_ids`` tensor.
      training: enables dropout.

    Returns:
      dict of ``sequence_output``, ``pooled_output``, ``all_encoder_layers``,
      ``embedding_output``, ``word_embedding_output`` (see the module docstring).

    Raises:
      ConfigError: an invalid config (from :meth:`AlbertConfig.validate`).
      ValueError: seq_length > max_position_embeddings.
    """

    def __init__(self, config: AlbertConfig, use_one_hot_embeddings: bool = False,
                 recompute_grad: bool = False, **kwargs):
        kwargs.setdefault("name", "bert")
        super().__init__(**kwargs)
        config.validate()
        self.config = config
        self.use_one_hot_embeddings = use_one_hot_embeddings
        self.recompute_grad = recompute_grad
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.embedding_size,
            type_vocab_size=config.type_vocab_size,
            max_position_embeddings=config.max_position_embeddings,
            initializer_range=config.initializer_range,
            hidden_dropout_prob=config.hidden_dropout_prob,
            use_one_hot_embeddings=use_one_hot_embeddings, name="embeddings")
        if config.embedding_size != config.hidden_size:
            self.embedding_hidden_mapping_in = dense(
                config.hidden_size, config.initializer_range, name="embedding_hidden_mapping_in")
            self.embedding_hidden_mapping_in.build((None, None, config.embedding_size))
        else:
            self.embedding_hidden_mapping_in = None
        # One flat list, group-major: the block of (group g, inner k) is at
        # self._block_index[(g, k)]. Only groups some layer uses exist (as in the original).
        self._block_index = {}
        self.transformer_blocks = []
        for group_idx in config.used_groups:
            for inner_idx in range(config.inner_group_num):
                self._block_index[(group_idx, inner_idx)] = len(self.transformer_blocks)
                self.transformer_blocks.append(TransformerBlock(
                    hidden_size=config.hidden_size,
                    num_attention_heads=config.num_attention_heads,
                    intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
                    hidden_dropout_prob=config.hidden_dropout_prob,
                    attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                    initializer_range=config.initializer_range,
                    name=f"group_{group_idx}_inner_group_{inner_idx}"))
        self.pooler = dense(config.hidden_size, config.initializer_range, activation="tanh",
                            name="pooler_dense")
        self.pooler.build((None, config.hidden_size))

    def block(self, group_idx: int, inner_group_idx: int) -> TransformerBlock:
        """The shared block ``group_<g>/inner_group_<k>``.

        Raises:
          KeyError: no layer uses that group, or k >= inner_group_num.
        """
        return self.transformer_blocks[self._block_index[(group_idx, inner_group_idx)]]

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
        # [B, S, E]: the raw lookup, exposed as the original's get_word_embedding_output.
        # (the table is float32 in every policy; the output in the compute dtype, as before)
        word_embedding_output = tf.cast(tf.gather(
            tf.convert_to_tensor(self.embeddings.word_embeddings), input_ids),
            self.embeddings.compute_dtype)
        # [B, S, E]: word + token type + position, LayerNorm, dropout.
        embedding_output = self.embeddings(input_ids, segment_ids, training=training)
        mask_adder = attention_mask_adder(input_mask, embedding_output.dtype)  # [B, 1, 1, S]
        if self.embedding_hidden_mapping_in is not None:
            # [B, S, H], in embedding_output's dtype: float32 under mixed_bfloat16 too (the
            # residual stream of bert_tf.bert.layers.TransformerBlock)
            hidden = tf.cast(self.embedding_hidden_mapping_in(embedding_output),
                             embedding_output.dtype)
        else:
            hidden = embedding_output
        all_layers = []
        for layer_idx in range(self.config.num_hidden_layers):
            group_idx = self.config.group_of_layer(layer_idx)
            for inner_idx in range(self.config.inner_group_num):
                block = self.block(group_idx, inner_idx)
                if self.recompute_grad and training:
                    hidden = call_recomputed(block, functools.partial(block, training=training),
                                             [hidden, mask_adder])
                else:
                    hidden = block(hidden, mask_adder, training=training)
                all_layers.append(hidden)  # [B, S, H]
        pooled = self.pooler(hidden[:, 0])  # [B, H]
        return {
            "sequence_output": hidden,
            "pooled_output": pooled,
            "all_encoder_layers": all_layers,
            "embedding_output": embedding_output,
            "word_embedding_output": word_embedding_output,
        }

    def build_with_dummy_input(self, seq_length: int = 2) -> "AlbertModel":
        """Creates every weight by running a tiny batch; returns self."""
        ids = tf.zeros([1, seq_length], tf.int32)
        self({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": ids})
        return self

    def get_embedding_table(self):
        """The ``[V, E]`` word-embedding variable (tied to the MLM decoder)."""
        return self.embeddings.word_embeddings

    def get_config(self):
        return {"config": self.config.to_dict(),
                "use_one_hot_embeddings": self.use_one_hot_embeddings,
                "recompute_grad": self.recompute_grad, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(AlbertConfig.from_dict(config["config"]),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   recompute_grad=config.get("recompute_grad", False),
                   name=config.get("name", "bert"))


class AlbertPretrainingHeads(keras.layers.Layer):
    """Masked-LM and sentence-order heads (scopes `cls/predictions`, `cls/seq_relationship`).

    The MLM head is :class:`AlbertMaskedLMHead` (H -> E transform, decoder = the model's
    word embeddings); the SOP head is BERT's NSP layout, ``output_weights [2, H]``,
    ``output_bias [2]`` on the pooled output (original `get_sentence_order_output`).

    Args:
      albert: the :class:`AlbertModel` whose word embeddings the decoder shares.

    Call args:
      sequence_output: float ``[B, S, H]``; pooled_output: float ``[B, H]``;
      masked_lm_positions: int32 ``[B, K]``.

    Returns:
      dict with ``mlm_log_probs`` float32 ``[B*K, V]`` and ``sop_log_probs`` float32 ``[B, 2]``
      (label 0 = segments in order, 1 = swapped).
    """

    def __init__(self, albert: AlbertModel, **kwargs):
        kwargs.setdefault("name", "cls")
        super().__init__(**kwargs)
        config = albert.config
        self.predictions = AlbertMaskedLMHead(
            albert.embeddings, config.hidden_size, config.embedding_size, config.hidden_act,
            config.initializer_range, name="predictions")
        self.seq_relationship = TransposedOutput(2, config.hidden_size, config.initializer_range,
                                                 name="seq_relationship")

    def call(self, sequence_output, pooled_output, masked_lm_positions):
        sop_logits = self.seq_relationship(pooled_output)  # [B, 2]
        return {
            "mlm_log_probs": self.predictions(sequence_output, masked_lm_positions),
            "sop_log_probs": tf.nn.log_softmax(tf.cast(sop_logits, tf.float32), axis=-1),
        }


def sentence_order_loss(log_probs, sentence_order_labels):
    """SOP loss: batch mean of ``-log p[label]`` (original `get_sentence_order_output`).

    Args:
      log_probs: float32 ``[B, 2]``; sentence_order_labels: int32 ``[B]`` or ``[B, 1]``
        (fed as `next_sentence_labels` in the original run_pretraining).

    Returns:
      (loss scalar, per_example_loss float32 ``[B]``).
    """
    return next_sentence_loss(log_probs, sentence_order_labels)
