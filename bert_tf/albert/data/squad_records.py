"""ALBERT SQuAD TFRecords and the predict features cache: written, checked, read back.

The record half of the original google-research/albert ``run_squad_v1.py`` /
``run_squad_v2.py`` + ``squad_utils.py`` (b772393): ``--train_feature_file`` written from the
training examples when absent, else reused (:func:`train_records`); ``--predict_feature_file``
(TFRecord) and ``--predict_feature_left_file`` (the features for post-processing) reused when
both exist, else written (:func:`predict_features`); both decoded into model inputs
(:func:`train_dataset`, :func:`predict_dataset`). Records are written by
:func:`bert_tf.albert.data.squad.write_feature_records` (schema
:func:`bert_tf.albert.data.squad.record_schema`).

Beyond the original: a reused ``--train_feature_file`` must hold ``--max_seq_length`` records;
the predict features are gzip JSON lines with the settings that made them
(:func:`settings_of`; the original pickles its ``InputFeatures``), rewritten with the
TFRecord when those changed.

``args`` below is the run's flags: :class:`bert_tf.albert.tasks.squad.AlbertSquadArgs` (or
any object with its fields).
"""

import gzip
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from absl import logging

from bert_tf.albert.data import squad as data
from bert_tf.data import record_cache
from bert_tf.data import squad_features_cache
from bert_tf.errors import FlagError

TRAIN_SHUFFLE_SEED = 12345  # the original's random.Random(12345) pre-shuffle of the examples
TRAIN_SHUFFLE_BUFFER = 100  # the original input_fn's shuffle buffer
MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "p_mask")
FEATURES_CACHE_FORMAT = "bert_tf albert squad features 1"


def _on_mismatch(example) -> None:
    logging.warning("MISMATCH DETECTED! (question %s: its paragraph cannot be aligned to its "
                    "SentencePiece pieces; skipped, as the original)", example.qas_id)


def convert(examples, sp, args, is_training: bool
            ) -> List[data.AlbertSquadFeatures]:
    """All features of ``examples`` with the flags' window settings."""
    return list(data.convert_examples_to_features(
        examples, sp, args.max_seq_length, args.doc_stride, args.max_query_length,
        is_training=is_training, do_lower_case=args.do_lower_case, on_mismatch=_on_mismatch))


def _record_length(path: str) -> Optional[int]:
    for raw in tf.data.TFRecordDataset(path).take(1):
        example = tf.train.Example.FromString(raw.numpy())
        return len(example.features.feature["input_ids"].int64_list.value)
    return None


def train_records(args, sp, examples) -> str:
    """``--train_feature_file``: reused when it exists (as the original), else written.

    Raises:
      FlagError: an existing file whose records are not ``--max_seq_length`` long.
    """
    path = args.train_feature_file
    if tf.io.gfile.exists(path):
        length = _record_length(path)
        if length != args.max_seq_length:
            raise FlagError(f"--train_feature_file={path} holds records of length {length}, "
                            f"not --max_seq_length={args.max_seq_length}: remove it to "
                            "rewrite it")
        logging.info("Reusing the training features %s", path)
        return path
    count = data.write_feature_records(convert(examples, sp, args, True), path, True)
    logging.info("Wrote %d training features to %s", count, path)
    return path


def train_dataset(path: str, max_seq_length: int, batch_size: int) -> tf.data.Dataset:
    """The original training input: repeat, shuffle(100) (seeded, so a resumed run sees the
    same batches), parse, batch with ``drop_remainder``.

    Returns:
      ``(features, labels)``: int32 ``input_ids``, ``input_mask``, ``segment_ids``,
      ``p_mask`` ``[B, S]``; labels ``start_positions``, ``end_positions``,
      ``is_impossible`` ``[B]``.
    """
    schema = data.record_schema(max_seq_length, is_training=True)

    def split(record):
        ex = {k: tf.cast(v, tf.int32) for k, v in tf.io.parse_single_example(record,
                                                                                schema).items()}
        features = {k: ex[k] for k in MODEL_INPUTS}
        labels = {k: ex[k] for k in ("start_positions", "end_positions", "is_impossible")}
        features["start_positions"] = ex["start_positions"]
        return features, labels

    d = tf.data.TFRecordDataset(path).repeat()
    d = d.shuffle(TRAIN_SHUFFLE_BUFFER, seed=TRAIN_SHUFFLE_SEED)
    return d.map(split).batch(batch_size, drop_remainder=True)


def settings_of(args) -> Dict[str, Any]:
    """What the predict features depend on (stored with them; a change rewrites them)."""
    spm_sha = record_cache.file_sha256(args.spm_model_file)
    data_sha = record_cache.file_sha256(args.predict_file)
    return {"format": FEATURES_CACHE_FORMAT, "max_seq_length": args.max_seq_length,
            "doc_stride": args.doc_stride, "max_query_length": args.max_query_length,
            "do_lower_case": args.do_lower_case, "spm_model_sha256": spm_sha,
            "predict_file_sha256": data_sha}


def write_features_cache(path: str, settings: Dict[str, Any],
                         features: Sequence[data.AlbertSquadFeatures]) -> None:
    """``--predict_feature_left_file``: gzip JSON lines (settings header, one feature a
    line), atomically, the same bytes for the same features
    (:func:`bert_tf.data.squad_features_cache.write_features_cache`)."""
    squad_features_cache.write_features_cache(path, settings, features)


def read_features_cache(path: str) -> Tuple[Dict[str, Any], List[data.AlbertSquadFeatures]]:
    """``(settings, features)`` of :func:`write_features_cache`'s file.

    Raises:
      FlagError: not such a file (e.g. the original's pickle), naming it.
    """
    try:
        with tf.io.gfile.GFile(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as f:
            return squad_features_cache.parse_features_cache(f.readline(), f,
                                                             data.AlbertSquadFeatures)
    except (OSError, EOFError, ValueError, KeyError, TypeError, gzip.BadGzipFile) as e:
        raise FlagError(f"--predict_feature_left_file={path} is not a features file written by "
                        f"bert_tf ({e}; the original's pickle cannot be read): remove it and "
                        "--predict_feature_file to rewrite them") from e


def predict_features(args, sp, examples) -> List[data.AlbertSquadFeatures]:
    """The predict features: both cache files when they exist and fit, else converted and
    both written."""
    settings = settings_of(args)
    record, left = args.predict_feature_file, args.predict_feature_left_file
    if tf.io.gfile.exists(record) and tf.io.gfile.exists(left):
        cached_settings, features = read_features_cache(left)
        if cached_settings == settings:
            logging.info("Loading eval features from %s", left)
            return features
        logging.warning("%s was made with other settings or data: rewriting it and %s", left,
                        record)
    features = convert(examples, sp, args, False)
    with squad_features_cache.features_cache_written(left, settings, features):  # together
        data.write_feature_records(features, record, is_training=False)
    return features


def predict_dataset(path: str, max_seq_length: int, batch_size: int) -> tf.data.Dataset:
    """The predict records in file order, int32, batches of ``batch_size`` (last one short)."""
    schema = data.record_schema(max_seq_length, is_training=False)

    def parse(record):
        return {k: tf.cast(v, tf.int32) if k != "unique_ids" else v
                for k, v in tf.io.parse_single_example(record, schema).items()}

    return tf.data.TFRecordDataset(path).map(parse).batch(batch_size)
