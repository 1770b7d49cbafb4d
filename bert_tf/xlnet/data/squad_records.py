"""XLNet SQuAD TFRecords and the eval features cache: written, checked, read back.

The record half of the original XLNet ``run_squad.py`` (``preprocess``, ``input_fn_builder``,
the eval-feature pickle; spec ``xlnet.md`` 9.4): the training questions shuffled and written
as ``{spm}.{proc_id}.slen-{L}.qlen-{Q}.train.tf_record``, the eval records
``{spm}.slen-{L}.qlen-{Q}.eval.tf_record`` with their features cache
(``.eval.features.jsonl.gz``), both decoded into model inputs
(:func:`train_dataset`, :func:`eval_dataset`). Records are written by
:func:`bert_tf.xlnet.data.squad.write_feature_records` (schema
:func:`bert_tf.xlnet.data.squad.record_schema`).

Beyond the original, a cached file must have been written for this run: the training records
carry a fingerprint (:func:`train_fingerprint`, :mod:`bert_tf.data.record_cache`) and are
written again, or refused, when it differs (:func:`check_cached_train_records`); the features
cache holds the settings that made it (:func:`cache_settings`) and is refused when they
differ (:func:`cached_eval_features`).

``args`` below is the run's flags: :class:`bert_tf.xlnet.tasks.squad.XLNetSquadArgs` (or any
object with its fields).
"""

import glob
import json
import os
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import is_remote
from bert_tf.data import record_cache
from bert_tf.data import squad_features_cache
from bert_tf.data.tfrecord import decode_record
from bert_tf.errors import FlagError, InputDataError
from bert_tf.file_streams import open_text
from bert_tf.xlnet.data import squad as data

FEATURES_CACHE_SUFFIX = ".eval.features.jsonl.gz"
MODEL_INPUTS = ("input_ids", "segment_ids", "input_mask", "p_mask", "cls_index")


def read_train_examples(path: str, seed: int, proc_id: int = 0, num_proc: int = 1
                        ) -> List[data.XLNetSquadExample]:
    """The training questions ``[proc_id::num_proc]``, shuffled with ``random.Random(seed)``
    (original ``preprocess``; it used the unseeded global ``random.shuffle``).

    Raises:
      InputDataError: see :func:`bert_tf.xlnet.data.squad.read_squad_examples`; no question.
    """
    examples = data.read_squad_examples(path, is_training=True)[proc_id::num_proc]
    if not examples:
        raise InputDataError(f"--train_file={path}: no training question (proc_id={proc_id}, "
                             f"num_proc={num_proc})")
    random.Random(seed).shuffle(examples)
    return examples


def _on_mismatch(example) -> None:
    logging.info("MISMATCH DETECTED! question %s: its paragraph cannot be aligned to its "
                 "SentencePiece pieces; skipped (as the original)", example.qas_id)


def write_train_records(args, sp, path: str, proc_id: int = 0,
                        num_proc: int = 1) -> Tuple[int, int]:
    """Reads, shuffles and converts the training questions and writes the train TFRecord
    ``path`` atomically (original ``preprocess``, spec 9.4).

    Returns:
      ``(questions, features)``.
    """
    examples = read_train_examples(args.train_file, args.random_seed, proc_id, num_proc)
    logging.info("Shuffled %d training questions with random.Random(--random_seed=%d) (the "
                 "original: unseeded random.shuffle)", len(examples), args.random_seed)
    counts = {"pos": 0, "neg": 0}

    def counted(features):
        for feature in features:
            counts["neg" if feature.is_impossible else "pos"] += 1
            yield feature

    total = data.write_feature_records(counted(data.convert_examples_to_features(
        examples, sp, args.max_seq_length, args.doc_stride, args.max_query_length,
        is_training=True, uncased=args.uncased, on_mismatch=_on_mismatch)), path, True)
    logging.info("Total number of instances: %d = pos %d neg %d", total, counts["pos"],
                 counts["neg"])
    logging.info("Wrote %s", path)
    record_cache.write_fingerprint(path, train_fingerprint(args, proc_id, num_proc))
    return len(examples), total


# The flags that shape the training records besides the two lengths of their file name.
_TRAIN_RECORD_FLAGS = ("doc_stride", "uncased", "random_seed")


def train_fingerprint(args, proc_id: int = 0, num_proc: int = 1):
    """What a training record file is made from (:mod:`bert_tf.data.record_cache`): the
    ``--train_file`` and SentencePiece model (hashed) and the shaping flags."""
    settings = {k: getattr(args, k) for k in _TRAIN_RECORD_FLAGS}
    settings.update(max_seq_length=args.max_seq_length, max_query_length=args.max_query_length,
                    proc_id=proc_id, num_proc=num_proc)
    return record_cache.fingerprint(settings, files=[args.train_file, args.spiece_model_file])


def _stale_train_records(path: str, args) -> str:
    """What differs between ``path``'s stored fingerprint and this run ("" when nothing or no
    fingerprint is stored): the shaping flags, the SentencePiece model and, when given,
    ``--train_file``."""
    side = record_cache.fingerprint_path(path)
    if not tf.io.gfile.exists(side):
        return ""
    try:
        with tf.io.gfile.GFile(side, "r") as f:
            stored = json.load(f)
        settings, files = stored["settings"], stored["files"]
    except (ValueError, KeyError, TypeError, OSError, tf.errors.OpError):
        return "an unreadable fingerprint"
    differ = [f"--{k} {settings.get(k)!r} -> {getattr(args, k)!r}" for k in _TRAIN_RECORD_FLAGS
              if settings.get(k) != getattr(args, k)]
    spm = os.path.basename(args.spiece_model_file)
    if files.get(spm) != record_cache.file_sha256(args.spiece_model_file):
        differ.append(f"{spm} changed")
    if args.train_file:
        name = os.path.basename(args.train_file)
        if files.get(name) != record_cache.file_sha256(args.train_file):
            differ.append(f"--train_file={args.train_file} is not the file they were made from")
    return ", ".join(differ)


def train_record_glob(args) -> str:
    """``<output_dir>/{spm}.*.slen-{L}.qlen-{Q}.train.tf_record`` (the original's glob)."""
    return os.path.join(args.output_dir, f"{os.path.basename(args.spiece_model_file)}.*."
                        f"slen-{args.max_seq_length}.qlen-{args.max_query_length}"
                        ".train.tf_record")

def train_record_path(args, proc_id: int = 0) -> str:
    """``<output_dir>/{spm}.{proc_id}.slen-{L}.qlen-{Q}.train.tf_record`` (the original's
    name, :func:`bert_tf.xlnet.data.squad.record_file_names`)."""
    train_name, _, _ = data.record_file_names(os.path.basename(args.spiece_model_file),
                                              args.max_seq_length, args.max_query_length,
                                              proc_id)
    return os.path.join(args.output_dir, train_name)


def _split_train_record(record):
    features = {k: record[k] for k in MODEL_INPUTS + ("start_positions",)}
    labels = {k: record[k] for k in ("start_positions", "end_positions", "is_impossible")}
    return features, labels


def train_dataset(files: Sequence[str], max_seq_length: int, batch_size: int,
                  shuffle_buffer: int, seed: int) -> tf.data.Dataset:
    """``(features, labels)`` batches of the training records (original ``input_fn_builder``,
    spec 9.4): files shuffled (several files), records shuffled (``shuffle_buffer``, seeded),
    repeated, batched with ``drop_remainder``.

    features: ``input_ids``, ``segment_ids`` int32 ``[B, L]``, ``input_mask``, ``p_mask``
    float32 ``[B, L]``, ``cls_index``, ``start_positions`` int32 ``[B]``; labels:
    ``start_positions``, ``end_positions`` int32 ``[B]``, ``is_impossible`` float32 ``[B]``.
    """
    schema = data.record_schema(max_seq_length, is_training=True)
    files = sorted(files)
    d = tf.data.Dataset.from_tensor_slices(files)
    if len(files) > 1:
        d = d.shuffle(len(files), seed=seed)
    d = d.interleave(tf.data.TFRecordDataset, cycle_length=min(8, len(files)))
    d = d.map(lambda r: _split_train_record(decode_record(r, schema)))
    return d.shuffle(shuffle_buffer, seed=seed).repeat().batch(batch_size, drop_remainder=True)


def check_cached_train_records(files: Sequence[str], args) -> List[str]:
    """Checks the cached training files the run would train on; returns those to use.

    The first record of each must be an XLNet SQuAD training record of ``--max_seq_length``
    (bert_tf; the original failed deep in TF). Files written by bert_tf's ``--do_prepro`` carry
    a fingerprint (:func:`train_fingerprint`): when one differs from this run (another
    ``--doc_stride``, ``--uncased``, ``--random_seed``, SentencePiece model or ``--train_file``;
    the original trained on them silently), they are removed and written again from
    ``--train_file`` (one warning line; the returned list is then empty), or, without
    ``--train_file``, refused.

    Raises:
      FlagError: names the file, what differs, and the flag to pass.
    """
    stale = {path: _stale_train_records(path, args) for path in files}
    stale = {path: why for path, why in stale.items() if why}
    if stale:
        first, why = next(iter(stale.items()))
        if not args.train_file:
            raise FlagError(f"--output_dir: the cached {first} was written with other data or "
                            f"flags ({why}); rerun --do_prepro with this run's flags, or give "
                            f"--train_file to rewrite it")
        logging.warning("the cached training records %s were written with other data or flags "
                        "(%s): writing them again from --train_file=%s", ", ".join(files), why,
                        args.train_file)
        for path in files:
            for name in (path, record_cache.fingerprint_path(path)):
                if tf.io.gfile.exists(name):
                    tf.io.gfile.remove(name)
        return []
    schema = data.record_schema(args.max_seq_length, is_training=True)
    for path in files:
        try:
            for raw in tf.data.TFRecordDataset(path).take(1):
                tf.io.parse_single_example(raw, schema)
        except Exception as e:  # noqa: BLE001 - DataLossError, InvalidArgumentError
            message = (getattr(e, "message", None) or str(e)).strip().splitlines()[0]
            raise FlagError(f"--output_dir: the cached {path} is not an XLNet SQuAD training "
                            f"TFRecord of --max_seq_length={args.max_seq_length} ({message}); "
                            "delete it or rerun --do_prepro") from e
    return list(files)

def cached_train_files(args) -> List[str]:
    """The cached training records of ``--output_dir`` (:func:`train_record_glob`, sorted)
    the run may train on, checked (:func:`check_cached_train_records`).

    Raises:
      FlagError: see :func:`check_cached_train_records`.
    """
    return check_cached_train_records(sorted(_glob(train_record_glob(args))), args)


def cache_settings(args) -> Dict[str, Any]:
    """What the eval features depend on (the header of the features cache)."""
    return {"predict_file_sha256": record_cache.file_sha256(args.predict_file),
            "spiece_model_sha256": record_cache.file_sha256(args.spiece_model_file),
            "max_seq_length": args.max_seq_length, "max_query_length": args.max_query_length,
            "doc_stride": args.doc_stride, "uncased": bool(args.uncased)}


def eval_cache_paths(args) -> Tuple[str, str]:
    """``(eval tf_record, features cache)`` in ``--output_dir``."""
    _, eval_name, _ = data.record_file_names(os.path.basename(args.spiece_model_file),
                                             args.max_seq_length, args.max_query_length)
    return (os.path.join(args.output_dir, eval_name),
            os.path.join(args.output_dir, eval_name[:-len(".eval.tf_record")]
                         + FEATURES_CACHE_SUFFIX))


def _glob(pattern: str) -> List[str]:
    """Local: ``glob.glob`` (skips dot files, so no ``.tmp-`` file); remote: ``tf.io.gfile.glob``."""
    return tf.io.gfile.glob(pattern) if is_remote(pattern) else glob.glob(pattern)


def write_features_cache(path: str, settings: Dict[str, Any],
                         features: Sequence[data.XLNetSquadFeatures]) -> None:
    """Writes the eval features as gzip JSON lines (a ``settings`` header line, then one
    feature per line), atomically
    (:func:`bert_tf.data.squad_features_cache.write_features_cache`)."""
    squad_features_cache.write_features_cache(path, settings, features)


def read_features_cache(path: str) -> Tuple[Dict[str, Any], List[data.XLNetSquadFeatures]]:
    """``(settings, features)`` of :func:`write_features_cache`'s file.

    Raises:
      FlagError: unreadable (names the file).
    """
    try:
        with open_text(path) as f:  # gunzipped; local or gs:// (tf.io.gfile)
            return squad_features_cache.parse_features_cache(next(f), f,
                                                             data.XLNetSquadFeatures)
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as e:
        raise FlagError(f"--output_dir: the cached {path} cannot be read ({e}); pass "
                        "--overwrite_data=True to rewrite it") from e


def _count_records(path: str) -> int:
    return int(tf.data.TFRecordDataset(path).reduce(np.int64(0), lambda n, _: n + 1).numpy())


def cached_eval_features(args, settings: Dict[str, Any]
                         ) -> Optional[List[data.XLNetSquadFeatures]]:
    """The cached eval features when the run may reuse them, else None (write them).

    Reused (the original's ``Loading eval features from ...``) when the eval TFRecord and the
    features cache both exist and ``--overwrite_data`` is not set; beyond the original, the
    cache must have been made with this run's settings (:func:`cache_settings`) and the
    record count must match.

    Raises:
      FlagError: a cache that does not fit (names what differs; pass ``--overwrite_data``).
    """
    record_path, cache_path = eval_cache_paths(args)
    if args.overwrite_data or not (tf.io.gfile.exists(record_path)
                                   and tf.io.gfile.exists(cache_path)):
        return None
    cached_settings, features = read_features_cache(cache_path)
    differ = [f"{k}: cached {cached_settings.get(k)!r}, this run {v!r}"
              for k, v in settings.items() if cached_settings.get(k) != v]
    if differ:
        raise FlagError(f"--output_dir: the cached {record_path} was made for another run "
                        f"({'; '.join(differ)}); the original would reuse it silently: pass "
                        "--overwrite_data=True to rewrite it, or another --output_dir")
    try:
        count = _count_records(record_path)
    except Exception as e:  # noqa: BLE001 - DataLossError
        raise FlagError(f"--output_dir: the cached {record_path} cannot be read ({e}); pass "
                        "--overwrite_data=True to rewrite it") from e
    if count != len(features):
        raise FlagError(f"--output_dir: the cached {record_path} holds {count} records but "
                        f"{cache_path} {len(features)} features; pass --overwrite_data=True")
    logging.info("Loading eval features from %s (and %s)", cache_path, record_path)
    return features

def eval_features(args, sp, examples: Sequence[data.XLNetSquadExample]
                  ) -> List[data.XLNetSquadFeatures]:
    """The eval features: the cache of ``--output_dir`` when it fits
    (:func:`cached_eval_features`), else converted from ``examples`` with the SentencePiece
    model ``sp`` and written (eval TFRecord and features cache, :func:`eval_cache_paths`).

    Raises:
      FlagError: a cache that does not fit (see :func:`cached_eval_features`).
    """
    record_path, cache_path = eval_cache_paths(args)
    settings = cache_settings(args)
    features = cached_eval_features(args, settings)
    if features is None:
        features = list(data.convert_examples_to_features(
            examples, sp, args.max_seq_length, args.doc_stride, args.max_query_length,
            is_training=False, uncased=args.uncased, on_mismatch=_on_mismatch))
        with squad_features_cache.features_cache_written(cache_path, settings, features):
            data.write_feature_records(features, record_path, is_training=False)  # together
        logging.info("Wrote %d eval features to %s (and %s)", len(features), record_path,
                     cache_path)
    logging.info("Total number of instances: %d = pos %d neg 0", len(features), len(features))
    logging.info("Num of eval samples: %d", len(examples))
    return features


def eval_dataset(path: str, max_seq_length: int, batch_size: int) -> tf.data.Dataset:
    """The eval records in file order, batched (last batch kept): ``unique_ids`` int32
    ``[B]`` and the model inputs of :data:`MODEL_INPUTS`."""
    schema = data.record_schema(max_seq_length, is_training=False)
    return tf.data.TFRecordDataset(path).map(lambda r: decode_record(r, schema)).batch(
        batch_size)
