"""`BertSiamese`: a Sentence-BERT bi-encoder on the BERT encoder (bert_tf, beyond the original).

Sentence-BERT (Reimers & Gurevych 2019, sections 3 and 4): both sentences of a pair go through
the SAME encoder, each on its own (``[CLS] sentence [SEP]``); the sentence embedding is the
mean of the last layer over the real tokens (``[CLS]`` and ``[SEP]`` included, as
sentence-transformers' ``Pooling(mode_mean_tokens)`` with the attention mask). Two objectives:

* regression (STS-B): ``cos(u, v)`` against the gold score scaled to [0, 1]
  (``label / 5``), squared error (sentence-transformers' ``CosineSimilarityLoss``);
* classification (MRPC, NLI): ``softmax(W [u; v; |u - v|] + b)`` with cross-entropy
  (sentence-transformers' ``SoftmaxLoss``, concatenation mode (u, v, |u-v|)).

Checkpoint names: the encoder under ``bert/*`` (the original layout, so a released checkpoint
warm-starts it and the trained encoder is a plain BERT checkpoint again), the softmax head as
``siamese/output_weights [num_labels, 3H]`` and ``siamese/output_bias [num_labels]`` (the
classifier's layout, :class:`bert_tf.bert.layers.TransposedOutput`, under its own scope so
it is never mistaken for ``run_classifier``'s ``[num_labels, H]`` head). The regression
objective has no head.

Inputs are dicts of int32 ``[batch_size, seq_length]`` ``input_ids_a``, ``input_mask_a``,
``segment_ids_a`` and the same with ``_b`` (the two sentences, padded separately).
"""

import collections
from typing import Optional

import keras
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map, output_head_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import TransposedOutput
from bert_tf.bert.model import BertModel

STS_SCORE_SCALE = 5.0  # STS-B gold scores are in [0, 5]; the cosine target is label / 5
HEAD_SCOPE = "siamese"
HEAD_INIT_STDDEV = 0.02  # as the classifier head
SIDES = ("a", "b")
SEQUENCE_KEYS = ("input_ids", "input_mask", "segment_ids")


def side_inputs(features, side: str):
    """The encoder inputs of one sentence: ``input_ids_<side>`` ... renamed to
    ``input_ids`` ... (int32 ``[B, S]``)."""
    return {k: features[f"{k}_{side}"] for k in SEQUENCE_KEYS}


def mean_pool(sequence_output, input_mask):
    """Mean of the real tokens' vectors.

    Args:
      sequence_output: float ``[B, S, H]``; input_mask: int ``[B, S]`` (1 = real token).

    Returns:
      float32 ``[B, H]``: ``sum_s mask * x / max(sum_s mask, 1e-9)`` (sentence-transformers'
      mean pooling; an all-padding row gives zeros).
    """
    mask = tf.cast(input_mask, tf.float32)[:, :, None]
    x = tf.cast(sequence_output, tf.float32)
    return tf.reduce_sum(x * mask, axis=1) / tf.maximum(tf.reduce_sum(mask, axis=1), 1e-9)


def cosine_similarity(u, v):
    """``u.v / (|u| |v|)`` per row; float32 ``[B, H]`` twice -> ``[B]`` (norms clipped at
    1e-12, so a zero vector gives 0)."""
    dot = tf.reduce_sum(u * v, axis=-1)
    norms = tf.norm(u, axis=-1) * tf.norm(v, axis=-1)
    return dot / tf.maximum(norms, 1e-12)


def pair_features(u, v):
    """SBERT's classification input ``[u; v; |u - v|]``: float32 ``[B, H]`` twice ->
    ``[B, 3H]``."""
    return tf.concat([u, v, tf.abs(u - v)], axis=-1)


class BertSiamese(keras.Model):
    """A bi-encoder: one :class:`BertModel` (scope ``bert``) applied to both sentences.

    Args:
      config: the encoder's :class:`BertConfig`.
      num_labels: classes of the softmax objective; None for the cosine regression
        objective (no head).
      use_one_hot_embeddings: the original TPU lookup (same numbers).

    Call returns a dict:
      ``u``, ``v`` float32 ``[B, H]`` (mean-pooled embeddings of sentences a and b);
      ``cosine`` float32 ``[B]``; with a head also ``logits`` and ``probabilities`` float32
      ``[B, num_labels]``.

    Raises:
      ConfigError: an invalid ``config``.
    """

    def __init__(self, config: BertConfig, num_labels: Optional[int] = None,
                 use_one_hot_embeddings: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.num_labels = num_labels
        self.bert = BertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
        self.head = None
        if num_labels is not None:
            self.head = TransposedOutput(num_labels, 3 * config.hidden_size, HEAD_INIT_STDDEV,
                                         name="siamese_head")

    def embed(self, inputs, training=False):
        """The sentence embedding of one side: ``input_ids`` / ``input_mask`` /
        ``segment_ids`` int32 ``[B, S]`` -> float32 ``[B, H]`` (mean pooling)."""
        out = self.bert(inputs, training=training)
        return mean_pool(out["sequence_output"], inputs["input_mask"])

    def classify(self, u, v):
        """Logits float32 ``[B, num_labels]`` of the head on ``[u; v; |u - v|]``.

        Raises:
          ValueError: the model has no head (regression objective)."""
        if self.head is None:
            raise ValueError("BertSiamese without num_labels has no softmax head")
        return tf.cast(self.head(pair_features(u, v)), tf.float32)

    def call(self, features, training=False):
        u = self.embed(side_inputs(features, "a"), training=training)
        v = self.embed(side_inputs(features, "b"), training=training)
        out = {"u": u, "v": v, "cosine": cosine_similarity(u, v)}
        if self.head is not None:
            logits = self.classify(u, v)
            out["logits"] = logits
            out["probabilities"] = tf.nn.softmax(logits, axis=-1)
        return out

    def build_with_dummy_input(self, seq_length: int = 2) -> "BertSiamese":
        ids = tf.zeros([1, seq_length], tf.int32)
        features = {}
        for side in SIDES:
            features.update({f"input_ids_{side}": ids, f"input_mask_{side}": tf.ones_like(ids),
                             f"segment_ids_{side}": ids})
        self(features)
        return self

    def name_map(self):
        """Original names: ``bert/*``, plus ``siamese/output_weights`` / ``output_bias``."""
        table = collections.OrderedDict(bert_model_map(self.bert))
        if self.head is not None:
            table.update(output_head_map(self.head, scope=HEAD_SCOPE))
        return table


def cosine_regression_loss(cosine, scores, scale: float = STS_SCORE_SCALE):
    """SBERT's regression objective: mean of ``(cos(u, v) - score / scale)^2``.

    Args:
      cosine: float32 ``[B]``; scores: float ``[B]`` gold similarity in ``[0, scale]``.

    Returns:
      (mean loss float32 scalar, per-example loss ``[B]``).
    """
    target = tf.cast(tf.reshape(scores, [-1]), tf.float32) / scale
    per_example = tf.square(tf.reshape(cosine, [-1]) - target)
    return tf.reduce_mean(per_example), per_example


def softmax_loss(logits, label_ids):
    """SBERT's classification objective: cross-entropy of ``softmax(logits)``.

    Args:
      logits: float32 ``[B, num_labels]``; label_ids: int ``[B]``.

    Returns:
      (mean loss float32 scalar, per-example loss ``[B]``).
    """
    labels = tf.cast(tf.reshape(label_ids, [-1]), tf.int32)
    per_example = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tf.reduce_mean(per_example), per_example
