"""`BertPretrainer`: the encoder plus the pre-training heads, their loss and eval sums.

Mirrors `model_fn` of the original `run_pretraining.py` (spec `bert.md` 2.11, 2.12, 6):
:class:`BertModel` (scope `bert`) with :class:`BertPretrainingHeads` (scope `cls`:
`cls/predictions/*`, `cls/seq_relationship/*`), and the total loss masked LM + next sentence.
:meth:`BertPretrainer.name_map` gives original checkpoint name -> variable.
"""

import collections
from typing import Dict, Mapping

import keras
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map, pretraining_heads_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import (BertModel, BertPretrainingHeads, masked_lm_loss,
                                next_sentence_loss)


class BertPretrainer(keras.Model):
    """:class:`BertModel` (scope `bert`) with :class:`BertPretrainingHeads` (scope `cls`).

    Args:
      config: a :class:`BertConfig`.
      use_one_hot_embeddings: the original's TPU word lookup (same numbers).

    Call args:
      features: dict with int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[B, S]``
        and ``masked_lm_positions`` ``[B, K]`` (other keys are ignored).
      training: enables dropout (the original's ``is_training``).

    Returns:
      dict with ``mlm_log_probs`` float32 ``[B*K, V]`` and ``nsp_log_probs`` float32
      ``[B, 2]``.

    A family on BERT's layers (ALBERT's `AlbertPretrainer`) subclasses it and sets the class
    attributes below: its config, encoder and heads classes, their name maps and the default
    model name.
    """

    config_class = BertConfig
    encoder_class = BertModel
    heads_class = BertPretrainingHeads
    encoder_map = staticmethod(bert_model_map)
    heads_map = staticmethod(pretraining_heads_map)
    default_name = "bert_pretrainer"

    def __init__(self, config: BertConfig, use_one_hot_embeddings: bool = False, **kwargs):
        kwargs.setdefault("name", self.default_name)
        super().__init__(**kwargs)
        self.config = config
        self.bert = self.encoder_class(config, use_one_hot_embeddings=use_one_hot_embeddings)
        self.heads = self.heads_class(self.bert)

    def call(self, features, training=False):
        out = self.bert({"input_ids": features["input_ids"],
                         "input_mask": features["input_mask"],
                         "segment_ids": features["segment_ids"]}, training=training)
        return self.heads(out["sequence_output"], out["pooled_output"],
                          features["masked_lm_positions"])

    def build_with_dummy_input(self) -> "BertPretrainer":
        """Creates every weight by running a batch of one 2-token sequence; returns self."""
        ids = tf.zeros([1, 2], tf.int32)
        self({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": ids,
              "masked_lm_positions": tf.zeros([1, 1], tf.int32)})
        return self

    def name_map(self) -> "collections.OrderedDict":
        """Original name -> variable: the `bert/*` names (BERT: 5 + 16 L + 2), then the 7
        `cls/*` names."""
        table = self.encoder_map(self.bert)
        table.update(self.heads_map(self.heads))
        return table

    def get_config(self):
        """The constructor arguments (``config`` as its dict) and the model name."""
        return {"config": self.config.to_dict(),
                "use_one_hot_embeddings": self.bert.use_one_hot_embeddings, "name": self.name}

    def eval_metric_sums(self, outputs: Mapping[str, tf.Tensor],
                         features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
        """:func:`eval_metric_sums` of a batch's outputs: what the shared evaluation
        (:func:`bert_tf.run.pretraining.evaluate`) sums over the eval batches."""
        return eval_metric_sums(outputs, features)

    @classmethod
    def from_config(cls, config):
        """Rebuilds (unbuilt, new weights) the model :meth:`get_config` describes."""
        return cls(cls.config_class.from_dict(config["config"]),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   name=config.get("name", cls.default_name))


def pretraining_losses(outputs: Mapping[str, tf.Tensor],
                       features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """The original `model_fn` losses (spec 2.11, 2.12): total = masked LM + next sentence.

    Args:
      outputs: :class:`BertPretrainer` outputs (``mlm_log_probs`` ``[B*K, V]``,
        ``nsp_log_probs`` ``[B, 2]``, float32).
      features: batch with ``masked_lm_ids`` int32 ``[B, K]``, ``masked_lm_weights`` float32
        ``[B, K]`` and ``next_sentence_labels`` int32 ``[B, 1]`` (or ``[B]``).

    Returns:
      dict of float32: ``total_loss``, ``masked_lm_loss`` (``sum(w*l) / (sum(w) + 1e-5)``)
      and ``next_sentence_loss`` (batch mean) scalars; ``masked_lm_example_loss`` ``[B*K]``
      and ``next_sentence_example_loss`` ``[B]`` (unweighted).
    """
    mlm, mlm_example = masked_lm_loss(outputs["mlm_log_probs"], features["masked_lm_ids"],
                                      features["masked_lm_weights"])
    nsp, nsp_example = next_sentence_loss(outputs["nsp_log_probs"],
                                          features["next_sentence_labels"])
    return {"total_loss": mlm + nsp, "masked_lm_loss": mlm, "next_sentence_loss": nsp,
            "masked_lm_example_loss": mlm_example, "next_sentence_example_loss": nsp_example}


def pretraining_loss_fn(model: BertPretrainer, features, labels=None) -> tf.Tensor:
    """``loss_fn`` for :func:`bert_tf.training.loop.train`: the batch's total loss (dropout on)."""
    return pretraining_losses(model(features, training=True), features)["total_loss"]


def eval_metric_sums(outputs: Mapping[str, tf.Tensor],
                     features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """One batch's contribution to the original `metric_fn` streaming metrics (spec 6.3).

    Returns:
      float32 scalars (see :data:`bert_tf.run.pretraining.METRIC_SUM_KEYS`):
      ``masked_lm_correct`` = ``sum(w * [argmax == id])``, ``masked_lm_weight`` = ``sum(w)``,
      ``masked_lm_loss_sum`` = ``sum(w * l)``, ``next_sentence_correct``,
      ``next_sentence_count`` (= B), ``next_sentence_loss_sum`` (sum of per-example NSP
      losses), ``loss_sum`` (this batch's total loss, as the Estimator's mean ``loss``) and
      ``batches`` (1). Sums add up over batches and replicas;
      :func:`bert_tf.run.pretraining.metrics_from_sums` turns them into the metrics.
    """
    losses = pretraining_losses(outputs, features)
    weights = tf.reshape(tf.cast(features["masked_lm_weights"], tf.float32), [-1])
    ids = tf.reshape(tf.cast(features["masked_lm_ids"], tf.int32), [-1])
    mlm_pred = tf.argmax(outputs["mlm_log_probs"], axis=-1, output_type=tf.int32)
    labels = tf.reshape(tf.cast(features["next_sentence_labels"], tf.int32), [-1])
    nsp_pred = tf.argmax(outputs["nsp_log_probs"], axis=-1, output_type=tf.int32)
    return {
        "masked_lm_correct": tf.reduce_sum(weights * tf.cast(tf.equal(mlm_pred, ids), tf.float32)),
        "masked_lm_weight": tf.reduce_sum(weights),
        "masked_lm_loss_sum": tf.reduce_sum(weights * losses["masked_lm_example_loss"]),
        "next_sentence_correct": tf.reduce_sum(tf.cast(tf.equal(nsp_pred, labels), tf.float32)),
        "next_sentence_count": tf.cast(tf.size(labels), tf.float32),
        "next_sentence_loss_sum": tf.reduce_sum(losses["next_sentence_example_loss"]),
        "loss_sum": tf.cast(losses["total_loss"], tf.float32),
        "batches": tf.constant(1.0, tf.float32),
    }
