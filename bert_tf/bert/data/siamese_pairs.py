"""Sentence pairs as two separate inputs, for the Siamese (SBERT) mode of run_classifier.

bert_tf, beyond the original. Where ``run_classifier.py`` packs a pair into one sequence
(``[CLS] a [SEP] b [SEP]``, :mod:`bert_tf.data.sequence_pairs`), a bi-encoder reads each
sentence alone: ``[CLS] a [SEP]`` and ``[CLS] b [SEP]``, each truncated to
``max_seq_length`` (its tail cut, as the original truncates a single sentence) and padded on
the right with id 0, segment ids all 0. Kept in memory as numpy arrays (no TFRecords: the
pair layout has no original record format). No Keras here.
"""

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence

import numpy as np
import tensorflow as tf

from bert_tf.data.sequence_pairs import build_bert_inputs
from bert_tf.data.tfrecord import shard_for_input_context
from bert_tf.errors import InputDataError

SHUFFLE_SEED = 12345  # as the classifier's training input
LENGTH_MULTIPLE = 8  # trimmed batch lengths are multiples of this


@dataclass
class PairArrays:
    """Two padded sides and the labels of N examples.

    Attributes:
      features: int32 ``[N, max_seq_length]`` ``input_ids_a``, ``input_mask_a``,
        ``segment_ids_a`` and the same with ``_b``.
      labels: ``[N]`` int32 label ids (classification) or float32 scores (regression).
      num_truncated: sentences cut to ``max_seq_length`` (either side).
    """

    features: Dict[str, np.ndarray]
    labels: np.ndarray
    num_truncated: int = 0

    def __len__(self):
        return len(self.labels)


def label_ids(examples: Sequence, label_list: Optional[Sequence[str]]) -> np.ndarray:
    """Label ids of ``examples`` (``.label``, ``.guid``): the index in ``label_list``, or
    ``float(label)`` for regression (``label_list`` None).

    Returns:
      int32 ``[N]`` or float32 ``[N]``.

    Raises:
      InputDataError: an unknown label or a non-numeric score (names the guid).
    """
    if label_list is None:
        out = []
        for ex in examples:
            try:
                out.append(float(ex.label))
            except (TypeError, ValueError):
                raise InputDataError(f"example {ex.guid}: label {ex.label!r} is not a number "
                                     "(regression task)") from None
            if not math.isfinite(out[-1]):
                raise InputDataError(f"example {ex.guid}: label {ex.label!r} is not a finite "
                                     "number (regression task)")
        return np.asarray(out, np.float32)
    index = {label: i for i, label in enumerate(label_list)}
    out = []
    for ex in examples:
        if ex.label not in index:
            raise InputDataError(f"example {ex.guid}: unknown label {ex.label!r}; valid labels: "
                                 f"{', '.join(repr(x) for x in label_list)}")
        out.append(index[ex.label])
    return np.asarray(out, np.int32)


def pair_arrays(examples: Sequence, label_list: Optional[Sequence[str]], max_seq_length: int,
                tokenizer) -> PairArrays:
    """Tokenizes ``text_a`` and ``text_b`` of each example into two padded sequences.

    Args:
      examples: ``InputExample`` s (``text_a``, ``text_b``, ``label``, ``guid``).
      label_list: as :func:`label_ids`.
      max_seq_length: S, the length of each side (``[CLS]`` and ``[SEP]`` included).
      tokenizer: a ``FullTokenizer`` (``tokenize``, ``convert_tokens_to_ids``).

    Returns:
      :class:`PairArrays`.

    Raises:
      InputDataError: an example without ``text_b`` (names the guid), or a bad label.
    """
    n = len(examples)
    features = {f"{key}_{side}": np.zeros((n, max_seq_length), np.int32)
                for side in ("a", "b") for key in ("input_ids", "input_mask", "segment_ids")}
    truncated = 0
    for row, ex in enumerate(examples):
        if not ex.text_b:
            raise InputDataError(f"example {ex.guid}: no second sentence (text_b); the Siamese "
                                 "mode needs sentence pairs")
        for side, text in (("a", ex.text_a), ("b", ex.text_b)):
            tokens = tokenizer.tokenize(text)
            truncated += len(tokens) > max_seq_length - 2
            inputs = build_bert_inputs(tokens, None, max_seq_length, tokenizer, pad=True)
            features[f"input_ids_{side}"][row] = inputs.input_ids
            features[f"input_mask_{side}"][row] = inputs.input_mask
            features[f"segment_ids_{side}"][row] = inputs.segment_ids
    return PairArrays(features, label_ids(examples, label_list), truncated)


def trim_side(features: Dict[str, tf.Tensor], side: str, multiple: int = LENGTH_MULTIPLE):
    """Cuts one side's ``[B, S]`` tensors to its longest real row rounded up to ``multiple``
    (padding is masked, so the embeddings do not change); other keys pass unchanged."""
    mask = features[f"input_mask_{side}"]
    seq_length = tf.shape(mask)[1]
    longest = tf.reduce_max(tf.reduce_sum(mask, axis=1))
    length = tf.minimum(seq_length, tf.maximum(multiple, (longest + multiple - 1) // multiple
                                               * multiple))
    keys = [f"{k}_{side}" for k in ("input_ids", "input_mask", "segment_ids")]
    return {k: (v[:, :length] if k in keys else v) for k, v in features.items()}


def train_dataset_fn(arrays: PairArrays, train_batch_size: int, trim: bool = True,
                     seed: int = SHUFFLE_SEED):
    """The training input: ``fn(input_context) -> tf.data.Dataset`` of ``(features, labels)``.

    The examples sharded per input pipeline, shuffled over the whole set (seeded, reshuffled
    each epoch; a resumed run sees the same batches), repeated and batched per replica with
    ``drop_remainder=True``; each side cut to its longest row when ``trim``.

    Raises:
      FlagError: ``train_batch_size`` is not a multiple of the number of replicas.
    """
    def fn(ctx: Optional[tf.distribute.InputContext] = None):
        d = tf.data.Dataset.from_tensor_slices((arrays.features, arrays.labels))
        d, batch_size = shard_for_input_context(d, ctx, train_batch_size)
        d = d.shuffle(len(arrays), seed=seed).repeat().batch(batch_size, drop_remainder=True)

        def split(features, labels):
            if trim:
                features = trim_side(trim_side(features, "a"), "b")
            return features, labels

        return d.map(split, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return fn


def side_batches(arrays: PairArrays, side: str, batch_size: int):
    """Yields one side's inputs in order, ``batch_size`` rows at a time, as dicts of int32
    ``[b, S]`` ``input_ids`` / ``input_mask`` / ``segment_ids`` (for inference)."""
    n = len(arrays)
    for start in range(0, n, batch_size):
        yield {k: arrays.features[f"{k}_{side}"][start:start + batch_size]
               for k in ("input_ids", "input_mask", "segment_ids")}
