"""Classifier TFRecords -> ``tf.data`` pipelines (original ``file_based_input_fn_builder``).

The records are those of :func:`bert_tf.data.classifier.file_based_convert_examples_to_features`
(spec `bert.md` 8.5): int64 ``input_ids``, ``input_mask``, ``segment_ids``
``[max_seq_length]``, ``label_ids`` (float for regression) and ``is_real_example`` scalars.
Training repeats, shuffles (buffer 100, seeded) and drops the last partial batch; eval and
predict read the file in order. Beyond the original, training batches may be cut to their
longest real row (:func:`trim_features`).
"""

from typing import Dict, Optional

import tensorflow as tf

from bert_tf.data import tfrecord
from bert_tf.data.classifier import classifier_schema
from bert_tf.feature_names import SEQUENCE_FEATURES

SHUFFLE_BUFFER = 100  # original input_fn_builder: d.shuffle(buffer_size=100)
# The original shuffled without a seed; a fixed one makes a resumed run see the same batches.
SHUFFLE_SEED = 12345
LENGTH_MULTIPLE = 8  # trimmed batch lengths are multiples of this
# --group_by_length: the shuffled records are taken this many batches at a time, sorted by
# length within the window, cut into batches, and the batches shuffled.
GROUP_WINDOW_BATCHES = 50


def _decode_fn(max_seq_length: int, regression: bool, windowed: bool = False):
    """``record -> features`` of :func:`classifier_schema` (int64 cast to int32)."""
    schema = classifier_schema(max_seq_length, regression, windowed)
    return lambda record: tfrecord.decode_record(record, schema)


def trim_features(features: Dict[str, tf.Tensor], multiple: int = LENGTH_MULTIPLE,
                  padding_side: str = "right"):
    """Cuts the ``[B, S]`` model inputs to the batch's longest real row rounded up to
    ``multiple`` (graph version of :func:`bert_tf.training.predict.trimmed_length`).

    ``padding_side`` "right" (BERT, ALBERT: ``input_mask`` 1 = real token) keeps the first
    positions; "left" (XLNet: ``input_mask`` 1 = padding, int or float) keeps the last.
    Padding positions are masked keys, so per-example outputs do not change (bert_tf, beyond
    the original). Only :data:`SEQUENCE_FEATURES` are cut; other features pass unchanged.
    """
    seq_length = tf.shape(features["input_ids"])[1]
    mask = features["input_mask"]
    real = tf.cast(tf.equal(mask, 0) if padding_side == "left" else tf.not_equal(mask, 0),
                   tf.int32)
    longest = tf.reduce_max(tf.reduce_sum(real, axis=1))
    length = tf.minimum(seq_length, tf.maximum(multiple, (longest + multiple - 1) // multiple
                                               * multiple))
    if padding_side == "left":
        return {k: (v[:, seq_length - length:] if k in SEQUENCE_FEATURES else v)
                for k, v in features.items()}
    return {k: (v[:, :length] if k in SEQUENCE_FEATURES else v) for k, v in features.items()}


def group_by_length(d: tf.data.Dataset, batch_size: int,
                    window_batches: int = GROUP_WINDOW_BATCHES,
                    seed: int = SHUFFLE_SEED) -> tf.data.Dataset:
    """Batches of similar lengths (``--group_by_length``; bert_tf, beyond the original).

    ``d``: decoded records (int32 ``[S]`` ``input_mask``, 1 = real token), already shuffled
    and repeated. Takes ``window_batches * batch_size`` records at a time, orders them by their
    real length (stable), cuts them into ``batch_size`` batches and shuffles the batches (a
    buffer of ``window_batches``, seeded). Returns batches as ``d.batch(batch_size,
    drop_remainder=True)`` would: every record lands in a batch, but the batches are not those
    of a random shuffle.
    """
    def sort_window(window):
        order = tf.argsort(tf.reduce_sum(window["input_mask"], axis=1), stable=True)
        return {k: tf.gather(v, order) for k, v in window.items()}

    d = d.batch(batch_size * window_batches, drop_remainder=True).map(sort_window)
    d = d.unbatch().batch(batch_size, drop_remainder=True)
    return d.shuffle(window_batches, seed=seed)


def train_dataset_fn(input_file: str, max_seq_length: int, train_batch_size: int,
                     regression: bool = False, trim: bool = True, seed: int = SHUFFLE_SEED,
                     group_lengths: bool = False):
    """The training input function (original ``file_based_input_fn_builder``, training mode).

    Returns ``fn(input_context) -> tf.data.Dataset`` of ``(features, label_ids)``: the
    records sharded per input pipeline (multi-worker), repeated, shuffled with a buffer of 100,
    decoded (int64 -> int32) and batched per replica with ``drop_remainder=True``. features:
    int32 ``[b, S]`` ``input_ids``, ``input_mask``, ``segment_ids`` (``S`` cut to the batch's
    longest row when ``trim``), int32 ``[b]`` ``is_real_example``; label_ids int32 ``[b]``
    (float32 for regression). ``group_lengths`` (``--group_by_length``): batches of similar
    lengths (:func:`group_by_length`) instead of ``batch`` of the shuffled records.

    Raises:
      FlagError: ``train_batch_size`` is not a multiple of the number of replicas.
    """
    decode = _decode_fn(max_seq_length, regression)

    def fn(ctx: Optional[tf.distribute.InputContext] = None):
        d = tf.data.TFRecordDataset(input_file)
        d, batch_size = tfrecord.shard_for_input_context(d, ctx, train_batch_size)
        d = d.repeat().shuffle(SHUFFLE_BUFFER, seed=seed)
        d = d.map(decode, num_parallel_calls=tf.data.AUTOTUNE)
        if group_lengths:
            d = group_by_length(d, batch_size, seed=seed)
        else:
            d = d.batch(batch_size, drop_remainder=True)

        def split(example):
            labels = example.pop("label_ids")
            return (trim_features(example) if trim else example), labels

        return d.map(split, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    return fn


def eval_dataset(input_file: str, max_seq_length: int, batch_size: int, regression: bool,
                 drop_remainder: bool, windowed: bool = False) -> tf.data.Dataset:
    """Eval/predict records decoded and batched in file order (``drop_remainder`` = use_tpu).

    Returns:
      A ``tf.data.Dataset`` of feature dicts: int32 ``[B, max_seq_length]`` ``input_ids``,
      ``input_mask``, ``segment_ids``, int32 ``[B]`` ``is_real_example`` and ``label_ids``
      (int32 ``[B]``, float32 for regression); ``windowed`` (``--doc_stride`` records): also
      int32 ``[B]`` ``example_index``.
    """
    return (tf.data.TFRecordDataset(input_file)
            .map(_decode_fn(max_seq_length, regression, windowed))
            .batch(batch_size, drop_remainder=drop_remainder))
