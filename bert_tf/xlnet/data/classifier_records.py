"""XLNet classifier TFRecords read back: input pipelines and the check of cached files.

The reading half of the original XLNet ``run_classifier.py`` (``file_based_input_fn_builder``,
spec `xlnet.md` 8.3): records written by
:func:`bert_tf.xlnet.data.classifier.file_based_convert_examples_to_features` (schema
:func:`bert_tf.xlnet.data.classifier.record_schema`) decoded into model inputs, and, beyond
the original, :func:`cache_fingerprint` (what a record file is made from,
:mod:`bert_tf.data.record_cache`) and :func:`check_cached_records`: a cached file the run
would reuse must have been written for this run.
"""

import math
from typing import Any, Dict, Tuple

import numpy as np
import tensorflow as tf

from bert_tf.data import record_cache
from bert_tf.data.classifier_records import trim_features
from bert_tf.data.tfrecord import decode_record
from bert_tf.xlnet.data.classifier import record_schema
from bert_tf.errors import FlagError

# Seed of the training shuffles (examples before writing, records in the pipeline); the
# original used numpy's unseeded global generator and an unseeded tf shuffle.
TRAIN_SHUFFLE_SEED = 12345


def _count_cached_records(path: str, regression: bool) -> Tuple[int, int, float]:
    """``(records, real examples, largest label)`` of a cached TFRecord of this task."""
    schema = {"is_real_example": tf.io.FixedLenFeature([], tf.int64, default_value=1),
              "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64)}
    total, real, largest = 0, 0, -math.inf
    dataset = tf.data.TFRecordDataset(path).batch(4096).map(
        lambda r: tf.io.parse_example(r, schema))
    for batch in dataset.as_numpy_iterator():
        total += len(batch["is_real_example"])
        real += int(np.sum(batch["is_real_example"] == 1))
        if len(batch["label_ids"]):
            largest = max(largest, float(np.max(batch["label_ids"])))
    return total, real, largest


def cache_fingerprint(args, task_name: str, kind: str, examples) -> Dict[str, Any]:
    """What the ``kind`` record file is made from (:func:`bert_tf.data.record_cache.fingerprint`):
    the examples, the SentencePiece model and the flags that shape the records (``args``: the
    run's flags, any object with ``max_seq_length``, ``uncased``, ``num_passes``,
    ``eval_batch_size``, ``doc_stride``, ``spiece_model_file``; ``task_name`` lower case)."""
    settings = {"task_name": task_name, "max_seq_length": args.max_seq_length,
                "uncased": bool(args.uncased), "kind": kind,
                "shuffle_seed": TRAIN_SHUFFLE_SEED}
    if kind == "train":
        settings["num_passes"] = args.num_passes
    if kind == "eval":
        settings["eval_batch_size"] = args.eval_batch_size  # the padding examples
    if args.doc_stride is not None:  # window records (issue 13)
        settings["doc_stride"] = args.doc_stride
    return record_cache.fingerprint(settings, examples, files=[args.spiece_model_file])


def check_cached_records(path: str, kind: str, args, num_examples: int, n_class: int,
                         split: str = "train") -> None:
    """Checks that a cached TFRecord the run would reuse was written for this run.

    The original reuses ``{spm}.len-{S}.*.tf_record`` in ``--output_dir`` whenever it exists
    (unless ``--overwrite_data``), so a file of another task or data set was silently used
    (or crashed deep in TF on the label dtype). Here, when the file would be reused, it must
    hold:

    * labels of the task's type (``float_list`` for regression, ``int64_list`` otherwise; int
      labels below ``n_class``);
    * train: ``num_examples * --num_passes`` records (the original writes them so, without
      padding);
    * eval: ``num_examples`` real examples (``is_real_example`` = 1) and, with the padding
      examples the original appends for the TPU, a multiple of ``--eval_batch_size`` records
      (evaluation drops the last partial batch as the original's TPU input_fn does); the
      padding count itself may differ (it depends on the batch size, which the name lacks);
    * predict: ``num_examples`` real examples (padding rows are never predicted).

    Nothing is checked when the file is absent or ``--overwrite_data`` is set.

    Args:
      path: the TFRecord; kind: ``train``, ``eval`` or ``predict``; args: the run's flags,
      any object with ``task_name``, ``is_regression``, ``num_passes``, ``eval_batch_size``
      and ``overwrite_data`` (:class:`bert_tf.xlnet.tasks.classifier.XLNetClassifierArgs`);
      num_examples: this run's
      examples of that split (without padding); n_class: labels of the task (1: regression);
      split: the split name for messages.

    Raises:
      FlagError: the file does not fit (names the file, what differs, and tells to pass
        ``--overwrite_data=True`` or another ``--output_dir``).
    """
    task = args.task_name.lower()
    fix = ("; it was written for another task or data set: pass --overwrite_data=True to "
           "rewrite it, or another --output_dir")

    def check(prefix):
        feature = record_cache.first_record_features(path)
        if feature is not None:
            label_kind = (feature["label_ids"].WhichOneof("kind") if "label_ids" in feature
                          else None)
            if label_kind is None or "input_ids" not in feature:
                raise FlagError(f"{prefix}: its records have no label_ids/input_ids, it is not "
                                f"an XLNet classifier TFRecord{fix}")
            if args.is_regression and label_kind != "float_list":
                raise FlagError(f"{prefix}: it holds int labels but --task_name={task} is a "
                                f"regression task (float labels){fix}")
            if not args.is_regression and label_kind != "int64_list":
                raise FlagError(f"{prefix}: it holds float labels (a regression task's) but "
                                f"--task_name={task} is a classification task{fix}")
        total, real, largest = _count_cached_records(path, args.is_regression)
        if kind == "train":
            expected = num_examples * args.num_passes
            if total != expected:
                passes = (f" x --num_passes={args.num_passes} = {expected} records"
                          if args.num_passes != 1 else "")
                raise FlagError(f"{prefix}: it holds {total} records, this run has "
                                f"{num_examples} {split} examples{passes}{fix}")
        else:
            record_cache.check_counts(prefix, fix, total, real, num_examples, split,
                                      args.eval_batch_size if kind == "eval" else None)
        if not args.is_regression and total and largest >= n_class:
            raise FlagError(f"{prefix}: it holds label id {int(largest)} but --task_name={task} "
                            f"has {n_class} labels{fix}")

    record_cache.check_cached_file(path, args.overwrite_data, check, fix)


def _split_features(record):
    features = {"input_ids": record["input_ids"], "segment_ids": record["segment_ids"],
                "input_mask": record["input_mask"]}
    return features, record["label_ids"], record["is_real_example"]


def record_dataset(input_file: str, max_seq_length: int, regression: bool) -> tf.data.Dataset:
    """Decoded records ``(features, label_ids, is_real_example)`` (original input_fn).

    features: ``input_ids`` / ``segment_ids`` int32 ``[S]``, ``input_mask`` float32 ``[S]``
    (1 = padding); labels int32 (float32 for regression); is_real_example int32.
    """
    schema = record_schema(max_seq_length, regression)
    return tf.data.TFRecordDataset(input_file).map(
        lambda r: _split_features(decode_record(r, schema)))


def train_dataset(input_file: str, max_seq_length: int, regression: bool, batch_size: int,
                  shuffle_buffer: int, trim: bool = False) -> tf.data.Dataset:
    """shuffle(shuffle_buffer) -> repeat -> batch(drop_remainder) of ``(features, labels)``.

    ``trim`` (bert_tf, beyond the original; off on TPU, which needs fixed shapes): each batch's
    ``[B, S]`` features cut from the left to its longest real row rounded up to 8
    (:func:`bert_tf.data.classifier_records.trim_features`, ``padding_side="left"``): the
    records are left padded with the ``<cls>`` summary token last, padding is a masked key
    and the attention relative, so the loss and gradients do not change.
    """
    d = record_dataset(input_file, max_seq_length, regression)
    d = d.shuffle(shuffle_buffer, seed=TRAIN_SHUFFLE_SEED).repeat()
    d = d.map(lambda f, label, real: (f, label)).batch(batch_size, drop_remainder=True)
    if trim:
        d = d.map(lambda f, label: (trim_features(f, padding_side="left"), label))
    return d


def eval_dataset(input_file: str, max_seq_length: int, regression: bool, batch_size: int,
                 drop_remainder: bool = False, windowed: bool = False) -> tf.data.Dataset:
    """Eval/predict records in file order, batched, as dicts for
    :class:`bert_tf.training.predict.BatchPredictor`.

    Each element: ``input_ids`` / ``segment_ids`` int32 ``[B, S]``, ``input_mask`` float32
    ``[B, S]`` (1 = padding, LEFT padded), ``label_ids`` int32 ``[B]`` (float32 for
    regression), ``is_real_example`` int32 ``[B]``. ``drop_remainder``: drop the last partial
    batch, as the original's TPU eval input_fn (``--do_eval``). ``windowed`` (``--doc_stride``
    records, bert_tf): each element also holds int32 ``[B]`` ``example_index``.
    """
    if windowed:
        schema = record_schema(max_seq_length, regression, windowed=True)
        d = tf.data.TFRecordDataset(input_file).map(lambda r: decode_record(r, schema))
        return d.batch(batch_size, drop_remainder=drop_remainder)
    d = record_dataset(input_file, max_seq_length, regression)
    d = d.map(lambda f, label, real: dict(f, label_ids=label, is_real_example=real))
    return d.batch(batch_size, drop_remainder=drop_remainder)
