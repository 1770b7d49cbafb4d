"""RACE TFRecords read back: input pipelines and the check of cached files.

The reading half of the original XLNet ``run_race.py`` (``file_based_input_fn_builder``, spec
``xlnet.md`` 10): records written by :func:`bert_tf.xlnet.data.race.write_feature_records`
(schema :func:`bert_tf.xlnet.data.race.record_schema`) decoded into model inputs, and, beyond
the original, :func:`check_cached_records`: a cached file the run would reuse must have been
written for this run.
"""

from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf

from bert_tf.data import record_cache
from bert_tf.data.tfrecord import decode_record
from bert_tf.xlnet.data.race import NUM_CHOICES, record_schema
from bert_tf.errors import FlagError

# Default seed of the training shuffles (the run's --random_seed; the original used Python's
# unseeded global random and an unseeded tf shuffle).
TRAIN_SHUFFLE_SEED = 12345


def record_dataset(input_file: str, max_seq_length: int) -> tf.data.Dataset:
    """Decoded records as dicts (original ``_decode_record``).

    Each element: ``input_ids`` / ``segment_ids`` int32 ``[4 * S]``, ``input_mask`` float32
    ``[4 * S]`` (1 = padding, left padded per choice), ``label_ids`` int32 ``[]`` (0-3),
    ``is_real_example`` int32 ``[]``.
    """
    schema = record_schema(max_seq_length)
    return tf.data.TFRecordDataset(input_file).map(lambda r: decode_record(r, schema))


def _features_and_label(record):
    features = {k: record[k] for k in ("input_ids", "segment_ids", "input_mask")}
    return features, record["label_ids"]


def train_dataset(input_file: str, max_seq_length: int, batch_size: int,
                  shuffle_buffer: int, seed: int = TRAIN_SHUFFLE_SEED) -> tf.data.Dataset:
    """shuffle(shuffle_buffer, seeded) -> repeat -> batch(drop_remainder) of
    ``(features, label_ids)``: features ``[B, 4 * S]`` as :func:`record_dataset`, labels
    int32 ``[B]`` (original training input_fn; the shuffle seeded here)."""
    d = record_dataset(input_file, max_seq_length).shuffle(shuffle_buffer, seed=seed).repeat()
    return d.map(_features_and_label).batch(batch_size, drop_remainder=True)


def eval_dataset(input_file: str, max_seq_length: int, batch_size: int,
                 drop_remainder: bool = True) -> tf.data.Dataset:
    """Eval records in file order, batched dicts for
    :class:`bert_tf.training.predict.BatchPredictor` (each key ``[B, ...]`` as
    :func:`record_dataset`); ``drop_remainder`` as the original's eval input_fn."""
    return record_dataset(input_file, max_seq_length).batch(batch_size,
                                                            drop_remainder=drop_remainder)


def cache_fingerprint(args, examples, split: str) -> Dict[str, Any]:
    """What a RACE record file is made from (:func:`bert_tf.data.record_cache.fingerprint`):
    the examples (in the order written: the train shuffle included), the SentencePiece model
    and the flags that shape the records (``args``: the run's flags, any object with
    ``max_seq_length``, ``max_qa_length``, ``uncased``, ``original_context_mutation``,
    ``random_seed``, ``eval_batch_size``, ``spiece_model_file``; ``data_dir`` when there is
    one: the article paths are hashed relative to it, not where the data lies)."""
    data_dir = (getattr(args, "data_dir", "") or "").rstrip("/")

    def located_by_content(example):
        """The example with its article ``path`` relative to ``--data_dir``: a copy of the
        same data elsewhere (local disk -> ``gs://``) keeps the cache."""
        path = getattr(example, "path", None)
        if not data_dir or not isinstance(path, str) or not path.startswith(data_dir + "/"):
            return example
        return {**vars(example), "path": path[len(data_dir) + 1:]}

    examples = (located_by_content(e) for e in examples)
    settings = {"split": split, "max_seq_length": args.max_seq_length,
                "max_qa_length": args.max_qa_length, "uncased": bool(args.uncased),
                "original_context_mutation": bool(args.original_context_mutation)}
    if split == "train":
        settings["random_seed"] = args.random_seed
    else:
        settings["eval_batch_size"] = args.eval_batch_size  # the padding examples
    return record_cache.fingerprint(settings, examples, files=[args.spiece_model_file])


def check_cached_records(path: str, split: str, max_seq_length: int, num_examples: int,
                         overwrite: bool = False, eval_batch_size: Optional[int] = None,
                         sample_input_ids: Sequence[Sequence[int]] = (),
                         fingerprint: Optional[Mapping[str, Any]] = None) -> None:
    """Checks that a cached RACE TFRecord the run would reuse was written for this run.

    With ``fingerprint`` (:func:`cache_fingerprint`), a file whose stored fingerprint differs
    is removed, to be written again (:func:`bert_tf.data.record_cache.reuse_cached`, one
    warning line), and one with the same fingerprint is reused unchecked; the checks below
    are for a file without one (the original's, or an older bert_tf's).

    The original reuses ``{spm}.len-{S}.{split}.tf_record`` in ``--output_dir`` whenever it
    exists (unless ``--overwrite_data``), so a file of other data, another
    ``--max_qa_length`` or ``--uncased`` was silently used. Here, when the file would be
    reused, it must hold:

    * RACE records of this length (``input_ids`` of ``4 * max_seq_length``);
    * ``num_examples`` real examples (``is_real_example`` = 1), labels 0-3;
    * with ``eval_batch_size``: a multiple of it records in all (the eval pads to one);
    * every ``sample_input_ids`` (``[4 * S]`` ids of a few of this run's features, e.g. the
      first and the last example) among its records, order aside (the original's file order
      follows its file system).

    Nothing is checked when the file is absent or ``overwrite`` is set.

    Args:
      path: the TFRecord; split: its split, for messages; max_seq_length: ``S``;
      num_examples: this run's real examples of the split; overwrite: ``--overwrite_data``;
      eval_batch_size: ``--eval_batch_size`` for an eval file, None for a train file;
      sample_input_ids: lists of ``4 * S`` ints.

    Raises:
      FlagError: the file does not fit (names the file, what differs, and tells to pass
        ``--overwrite_data=True`` or another ``--output_dir``).
    """
    if fingerprint is not None and (overwrite or not record_cache.reuse_cached(
            path, fingerprint, overwrite)
            or tf.io.gfile.exists(record_cache.fingerprint_path(path))):
        return
    fix = record_cache.REWRITE_HINT
    n = NUM_CHOICES * max_seq_length

    def check(prefix):
        feature = record_cache.first_record_features(path)
        if feature is not None:
            if "input_ids" not in feature or "label_ids" not in feature:
                raise FlagError(f"{prefix}: its records have no input_ids/label_ids, it is not "
                                f"a RACE TFRecord{fix}")
            length = len(feature["input_ids"].int64_list.value)
            if length != n:
                raise FlagError(f"{prefix}: its records hold {length} input_ids, this run "
                                f"4 x --max_seq_length={max_seq_length} = {n}{fix}")
        schema = {"input_ids": tf.io.FixedLenFeature([n], tf.int64),
                  "label_ids": tf.io.FixedLenFeature([], tf.int64),
                  "is_real_example": tf.io.FixedLenFeature([], tf.int64)}
        wanted = [np.asarray(s, np.int64) for s in sample_input_ids]
        found = [False] * len(wanted)
        total = real = 0
        largest = -1
        for batch in tf.data.TFRecordDataset(path).batch(1024).map(
                lambda r: tf.io.parse_example(r, schema)).as_numpy_iterator():
            total += len(batch["is_real_example"])
            real += int(np.sum(batch["is_real_example"] == 1))
            if len(batch["label_ids"]):
                largest = max(largest, int(np.max(batch["label_ids"])))
            for i, ids in enumerate(wanted):
                if not found[i]:
                    found[i] = bool(np.any(np.all(batch["input_ids"] == ids, axis=1)))
        record_cache.check_counts(prefix, fix, total, real, num_examples, split,
                                  eval_batch_size)
        if largest >= NUM_CHOICES:
            raise FlagError(f"{prefix}: it holds label id {largest}, RACE has {NUM_CHOICES}"
                            f"{fix}")
        if not all(found):
            raise FlagError(f"{prefix}: it lacks the features this run gives its {split} "
                            "examples (other data, --max_qa_length, --uncased or "
                            f"--original_context_mutation?){fix}")

    record_cache.check_cached_file(path, overwrite, check, fix)
