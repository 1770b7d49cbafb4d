"""XLNet SQuAD 2.0 heads and model (original ``function_builder.get_qa_outputs``, spec
``xlnet.md`` 3.16).

Three heads on the single-stream sequence output, each at the top of the checkpoint (not under
``model/``):

* ``start_logits/dense`` ``[D, 1]``: start logits, masked ``x (1 - p_mask) - 1e30 p_mask``;
* ``end_logits/dense_0`` ``[2D, D]`` (tanh), ``end_logits/LayerNorm``, ``end_logits/dense_1``
  ``[D, 1]``: end logits conditioned on a start (the gold start in training, each of the
  ``start_n_top`` best starts at inference: beam search);
* ``answer_class/dense_0`` ``[2D, D]`` (tanh), dropout, ``answer_class/dense_1`` ``[D, 1]``
  without bias: the answerability logit from the expected start representation and the
  ``<cls>`` representation (positive: no answer).
"""

from typing import Dict, Optional

import keras
import tensorflow as tf

from bert_tf.dropout import Dropout
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.layers import dense_layer, get_initializer, layer_norm_layer
from bert_tf.xlnet.model import XLNetModel

NEG_INF = 1e30


def masked_log_softmax(logits, p_mask):
    """``(masked logits, log_softmax)`` with ``logits (1 - p_mask) - 1e30 p_mask`` (the
    original's masking; ``p_mask`` 1 = cannot be an answer boundary), over the last axis."""
    masked = logits * (1 - p_mask) - NEG_INF * p_mask
    return masked, tf.nn.log_softmax(masked, -1)


class QAHeads(keras.layers.Layer):
    """The start, end and answer-class heads of :mod:`this module <bert_tf.xlnet.squad>`.

    Args:
      d_model: the encoder width D. dropout: rate after ``answer_class/dense_0``.
      start_n_top, end_n_top: beam sizes at inference (original flags, default 5 / 5).
      initializer: kernel initializer (the encoder's).

    Call args:
      output: float ``[B, L, D]`` sequence output. p_mask: float ``[B, L]``. cls_index: int
        ``[B]``. start_positions: int ``[B]`` (training: teacher-forced end head) or None
        (inference: beam search). training: enables dropout.

    Returns:
      dict. Always ``start_logits`` ``[B, L]`` (raw, before masking) and ``cls_logits``
      ``[B]``. Training: ``start_log_probs``, ``end_log_probs`` ``[B, L]``. Inference:
      ``end_logits`` ``[B, k_s, L]`` (raw), ``start_top_log_probs``, ``start_top_index``
      ``[B, k_s]``, ``end_top_log_probs``, ``end_top_index`` ``[B, k_s * k_e]`` (entry
      ``s * k_e + e``: the e-th end for the s-th start).
    """

    def __init__(self, d_model: int, dropout: float = 0.0, start_n_top: int = 5,
                 end_n_top: int = 5, initializer=None, **kwargs):
        kwargs.setdefault("name", "qa_heads")
        super().__init__(**kwargs)
        self.d_model, self.dropout_rate = d_model, dropout
        self.start_n_top, self.end_n_top = start_n_top, end_n_top
        init = initializer or get_initializer()
        self.start_dense = dense_layer(1, d_model, init, "start_logits_dense")
        self.end_dense_0 = dense_layer(d_model, 2 * d_model, init, "end_logits_dense_0",
                                  activation="tanh")
        self.end_layer_norm = layer_norm_layer(d_model, "end_logits_LayerNorm")
        self.end_dense_1 = dense_layer(1, d_model, init, "end_logits_dense_1")
        self.answer_dense_0 = dense_layer(d_model, 2 * d_model, init, "answer_class_dense_0",
                                     activation="tanh")
        self.answer_dense_1 = dense_layer(1, d_model, init, "answer_class_dense_1", use_bias=False)
        self.dropout = Dropout(dropout)

    def _end_logits(self, end_input):
        x = self.end_layer_norm(self.end_dense_0(end_input))
        return tf.squeeze(self.end_dense_1(x), -1)

    def call(self, output, p_mask, cls_index, start_positions=None, training=False):
        p_mask = tf.cast(p_mask, output.dtype)
        seq_len = tf.shape(output)[1]
        start_logits = tf.squeeze(self.start_dense(output), -1)              # [B, L]
        start_masked, start_log_probs = masked_log_softmax(start_logits, p_mask)
        out: Dict[str, tf.Tensor] = {"start_logits": start_logits}
        if start_positions is not None:
            start_index = tf.one_hot(tf.reshape(start_positions, [-1]), seq_len,
                                     dtype=output.dtype)                     # [B, L]
            start_features = tf.einsum("blh,bl->bh", output, start_index)    # [B, D]
            start_features = tf.tile(start_features[:, None], [1, seq_len, 1])
            end_logits = self._end_logits(tf.concat([output, start_features], -1))  # [B, L]
            _, end_log_probs = masked_log_softmax(end_logits, p_mask)
            out.update(start_log_probs=start_log_probs, end_log_probs=end_log_probs)
        else:
            k_s, k_e = self.start_n_top, self.end_n_top
            start_top_log_probs, start_top_index = tf.math.top_k(start_log_probs, k=k_s)
            start_index = tf.one_hot(start_top_index, seq_len, dtype=output.dtype)  # [B, k, L]
            start_features = tf.einsum("blh,bkl->bkh", output, start_index)  # [B, k, D]
            end_input = tf.concat([
                tf.tile(output[:, None], [1, k_s, 1, 1]),                    # [B, k, L, D]
                tf.tile(start_features[:, :, None], [1, 1, seq_len, 1])], -1)  # [B, k, L, 2D]
            end_logits = self._end_logits(end_input)                         # [B, k, L]
            _, end_log_probs = masked_log_softmax(end_logits, p_mask[:, None])
            end_top_log_probs, end_top_index = tf.math.top_k(end_log_probs, k=k_e)
            out.update(end_logits=end_logits, start_top_log_probs=start_top_log_probs,
                       start_top_index=start_top_index,
                       end_top_log_probs=tf.reshape(end_top_log_probs, [-1, k_s * k_e]),
                       end_top_index=tf.reshape(end_top_index, [-1, k_s * k_e]))
        cls_index = tf.one_hot(tf.reshape(cls_index, [-1]), seq_len, dtype=output.dtype)
        cls_feature = tf.einsum("blh,bl->bh", output, cls_index)             # [B, D]
        start_p = tf.nn.softmax(start_masked, -1)
        start_feature = tf.einsum("blh,bl->bh", output, start_p)             # [B, D]
        x = self.answer_dense_0(tf.concat([start_feature, cls_feature], -1))
        x = self.dropout(x, training=training)
        out["cls_logits"] = tf.squeeze(self.answer_dense_1(x), -1)           # [B]
        return out

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, dropout=self.dropout_rate,
                      start_n_top=self.start_n_top, end_n_top=self.end_n_top)
        return config


def qa_loss(outputs, start_positions, end_positions, is_impossible):
    """The original run_squad training loss (spec 9.5): ``0.5 (start CE + end CE) + 0.5
    mean(sigmoid CE(cls_logits, is_impossible))``, each CE the mean over the batch.

    Args:
      outputs: training outputs of :class:`QAHeads` (``start_log_probs``, ``end_log_probs``
        ``[B, L]``, ``cls_logits`` ``[B]``). start_positions, end_positions: int ``[B]``.
      is_impossible: float ``[B]`` (1 = no answer in this window).

    Returns:
      float32 scalar.
    """
    seq_len = tf.shape(outputs["start_log_probs"])[1]

    def ce(log_probs, positions):
        log_probs = tf.cast(log_probs, tf.float32)  # a mixed_bfloat16 model's: float32 loss
        one_hot = tf.one_hot(tf.reshape(positions, [-1]), seq_len, dtype=tf.float32)
        return -tf.reduce_mean(tf.reduce_sum(log_probs * one_hot, -1))

    total = 0.5 * (ce(outputs["start_log_probs"], start_positions)
                   + ce(outputs["end_log_probs"], end_positions))
    cls_loss = tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.cast(tf.reshape(is_impossible, [-1]), tf.float32),
        logits=tf.cast(outputs["cls_logits"], tf.float32))
    return total + 0.5 * tf.reduce_mean(cls_loss)


class XLNetSquad(keras.Model):
    """XLNet encoder + :class:`QAHeads` (original run_squad model).

    Args:
      config, run_config: as :class:`bert_tf.xlnet.model.XLNetModel` (fine-tuning: no memory).
      start_n_top, end_n_top: beam sizes.

    Call args:
      features: dict of ``input_ids`` int ``[B, L]``, ``segment_ids`` int ``[B, L]``,
        ``input_mask`` float ``[B, L]`` (1 = padding), ``p_mask`` float ``[B, L]``,
        ``cls_index`` int ``[B]``, and in training ``start_positions`` int ``[B]``.
      training: enables dropout and, with ``start_positions`` given, the training outputs.

    Returns:
      :class:`QAHeads`' dict.
    """

    def __init__(self, config: XLNetConfig, run_config: Optional[RunConfig] = None,
                 start_n_top: int = 5, end_n_top: int = 5, **kwargs):
        kwargs.setdefault("name", "xlnet_squad")
        super().__init__(**kwargs)
        run_config = run_config or RunConfig()
        self.xlnet = XLNetModel(config, run_config)
        self.qa_heads = QAHeads(config.d_model, run_config.dropout, start_n_top, end_n_top,
                                self.xlnet.initializer)

    def call(self, features, training=None):
        if training is None:
            training = self.xlnet.run_config.is_training
        out = self.xlnet({"input_ids": features["input_ids"],
                          "segment_ids": features["segment_ids"],
                          "input_mask": features["input_mask"]}, training=training)
        heads = self.qa_heads(out["sequence_output"], features["p_mask"], features["cls_index"],
                              features.get("start_positions") if training else None,
                              training=training)
        # a mixed_bfloat16 model (--use_bfloat16) computes in bfloat16; its outputs are float32
        return {k: tf.cast(v, tf.float32) if v.dtype.is_floating else v
                for k, v in heads.items()}

    def get_config(self):
        return {"config": self.xlnet.config.to_dict(),
                "run_config": self.xlnet.run_config.to_dict(),
                "start_n_top": self.qa_heads.start_n_top, "end_n_top": self.qa_heads.end_n_top,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(XLNetConfig.from_dict(config["config"]), RunConfig(**config["run_config"]),
                   config["start_n_top"], config["end_n_top"], name=config.get("name"))
