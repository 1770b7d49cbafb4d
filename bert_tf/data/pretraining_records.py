"""Pre-training TFRecords: their schema, start-up checks and the input pipeline (spec 6.2).

The records are those of `create_pretraining_data.py` (the original's or ours, spec 5.6):
fixed-length int64 ``input_ids``, ``input_mask``, ``segment_ids`` ``[max_seq_length]``,
``masked_lm_positions``, ``masked_lm_ids`` ``[max_predictions_per_seq]``, float
``masked_lm_weights`` ``[max_predictions_per_seq]`` and int64 ``next_sentence_labels`` ``[1]``.

* :func:`record_schema` / :func:`decode_pretraining_record`: the original ``name_to_features``
  and ``_decode_record`` of `run_pretraining.py` (int64 cast to int32);
* :func:`input_fn_builder`: the original ``input_fn_builder`` as a ``tf.distribute`` dataset
  function;
* beyond the original, checks that fail early with one clear message
  (:class:`bert_tf.errors.BertTfError`): :func:`find_input_files`,
  :func:`check_input_records` (feature lengths against ``--max_seq_length`` /
  ``--max_predictions_per_seq``), :func:`check_token_ids` (ids against ``vocab_size``), and
  :func:`explain_parse_error` / :func:`explain_index_error`, which turn TF's mid-run parse and
  embedding-lookup failures into the same messages.
"""

import collections
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

import tensorflow as tf

from bert_tf.data.pretraining_corpus import expand_input_patterns
from bert_tf.errors import BertTfError, ConfigError, FlagError, InputDataError

# Spec 6.2: parallel interleave over at most 4 files, shuffle buffer 100 records.
_MAX_CYCLE_LENGTH = 4
_SHUFFLE_BUFFER = 100
# Records of each input file whose token ids are checked against vocab_size up front.
VOCAB_CHECK_RECORDS = 100
_ID_FEATURES = ("input_ids", "masked_lm_ids")
_INDEX_ERROR = re.compile(r"indices\[[^\]]*\] = (-?\d+) is not in \[0, (\d+)\)")


def feature_lengths(max_seq_length: int, max_predictions_per_seq: int) -> "collections.OrderedDict":
    """Feature name -> (length, kind, flag) of a pre-training record (spec 5.6, 6.2).

    ``kind`` is ``"int64_list"`` or ``"float_list"``; ``flag`` is the flag the length comes
    from (None for ``next_sentence_labels``, always 1).
    """
    s, k = int(max_seq_length), int(max_predictions_per_seq)
    return collections.OrderedDict([
        ("input_ids", (s, "int64_list", "max_seq_length")),
        ("input_mask", (s, "int64_list", "max_seq_length")),
        ("segment_ids", (s, "int64_list", "max_seq_length")),
        ("masked_lm_positions", (k, "int64_list", "max_predictions_per_seq")),
        ("masked_lm_ids", (k, "int64_list", "max_predictions_per_seq")),
        ("masked_lm_weights", (k, "float_list", "max_predictions_per_seq")),
        ("next_sentence_labels", (1, "int64_list", None)),
    ])


def record_schema(max_seq_length: int, max_predictions_per_seq: int) -> Dict[str, Any]:
    """The original ``name_to_features``: ``tf.io.FixedLenFeature`` per feature (spec 6.2).

    int64 ``[max_seq_length]`` for input_ids/input_mask/segment_ids, int64
    ``[max_predictions_per_seq]`` for masked_lm_positions/masked_lm_ids, float32
    ``[max_predictions_per_seq]`` for masked_lm_weights, int64 ``[1]`` for next_sentence_labels.
    """
    return {name: tf.io.FixedLenFeature([n], tf.float32 if kind == "float_list" else tf.int64)
            for name, (n, kind, _) in feature_lengths(max_seq_length,
                                                      max_predictions_per_seq).items()}


def decode_pretraining_record(record: tf.Tensor, schema: Mapping[str, Any]) -> Dict[str, tf.Tensor]:
    """Parses one serialized Example and casts int64 to int32 (original `_decode_record`).

    Returns:
      dict of int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[S]``,
      ``masked_lm_positions``, ``masked_lm_ids`` ``[K]``, float32 ``masked_lm_weights``
      ``[K]`` and int32 ``next_sentence_labels`` ``[1]``.
    """
    example = tf.io.parse_single_example(record, schema)
    return {k: (tf.cast(v, tf.int32) if v.dtype == tf.int64 else v) for k, v in example.items()}


def find_input_files(input_file: str) -> List[str]:
    """Expands ``--input_file`` (comma-separated files or globs, original `tf.gfile.Glob`).

    Raises:
      FlagError: ``--input_file`` is empty, or one of its patterns matches no file (names
        the pattern).
    """
    try:
        files = expand_input_patterns(input_file)
    except InputDataError as e:
        raise FlagError(f"--input_file={input_file}: {e}") from e
    return files


def _record_mismatch(path: str, index: int, serialized: bytes, max_seq_length: int,
                     max_predictions_per_seq: int) -> Optional[str]:
    """Why record ``index`` of ``path`` does not fit the flags, or None when it fits."""
    try:
        example = tf.train.Example.FromString(serialized)
    except Exception as e:  # noqa: BLE001 - protobuf raises DecodeError, not a stable type
        return f"{path}: record {index} is not a tf.train.Example ({type(e).__name__}: {e})"
    feature = example.features.feature
    for name, (length, kind, flag) in feature_lengths(max_seq_length,
                                                      max_predictions_per_seq).items():
        if name not in feature:
            return (f"{path}: record {index} has no feature '{name}'; this is not a "
                    f"pre-training TFRecord of create_pretraining_data.py")
        stored_kind = feature[name].WhichOneof("kind")
        if stored_kind != kind:
            return (f"{path}: record {index}: feature '{name}' is a {stored_kind}, expected "
                    f"a {kind}")
        got = len(getattr(feature[name], kind).value)
        if got != length:
            if flag is None:
                return (f"{path}: record {index}: feature '{name}' has length {got}, "
                        f"expected {length}")
            return (f"{path}: record {index}: feature '{name}' has length {got} but "
                    f"--{flag}={length}; the file was written with {flag}={got} (pass "
                    f"--{flag}={got}, or recreate the data with create_pretraining_data.py)")
    return None


def check_input_records(input_files: Sequence[str], max_seq_length: int,
                        max_predictions_per_seq: int, records_per_file: int = 1) -> None:
    """Checks the first records of each file against the flags before any graph is built.

    Args:
      input_files: TFRecord paths.
      max_seq_length, max_predictions_per_seq: the flags the records must fit.
      records_per_file: records checked per file (None: all).

    Raises:
      InputDataError: a file is unreadable or not a TFRecord, every file is empty, or a
        checked record lacks a feature or has another length (names the file, the record,
        the feature and both lengths).
    """
    total = 0
    for path in input_files:
        dataset = tf.data.TFRecordDataset(path)
        if records_per_file is not None:
            dataset = dataset.take(records_per_file)
        try:
            for i, serialized in enumerate(dataset.as_numpy_iterator()):
                total += 1
                problem = _record_mismatch(path, i, serialized, max_seq_length,
                                           max_predictions_per_seq)
                if problem:
                    raise InputDataError(problem)
        except tf.errors.OpError as e:
            raise InputDataError(f"{path}: {_damage(e)}") from e
    if total == 0:
        raise InputDataError(f"the input files hold no records: {', '.join(input_files)}")


def _damage(error: tf.errors.OpError) -> str:
    """What is wrong with a TFRecord file that TF could not read, in one line (TF's message
    without its ``{{function_node ...}}`` and ``[[{{node ...}}]]`` decorations)."""
    message = " ".join((error.message or "").split())
    message = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", message)
    message = re.sub(r"\s*\[\[\{\{node [^}]*\}\}\]\].*$", "", message)
    message = re.sub(r"\s*\[Op:[^\]]*\].*$", "", message)
    truncated = re.search(r"truncated record at (\d+)", message)
    if truncated:
        return (f"truncated TFRecord file (truncated record at byte {truncated.group(1)}, "
                f"the file ends inside it); the run that wrote it was probably interrupted: "
                f"write it again")
    return f"cannot read it as a TFRecord file ({message})"


def _vocab_mismatch(path: str, largest: int, feature: str, index: int, vocab_size: int,
                    config_file: str, config_flag: str = "bert_config_file") -> str:
    config_name = "bert_config.json" if config_flag == "bert_config_file" else "config"
    return (f"{path}: token id {largest} ({feature} of record {index}, the largest id found) "
            f"is not smaller than vocab_size={vocab_size} of --{config_flag}={config_file}: "
            f"the records were made with a larger vocab; pass the {config_name} of the model "
            f"that vocab belongs to, or recreate the data with create_pretraining_data.py and "
            f"the model's vocab.txt")


def check_token_ids(input_files: Sequence[str], vocab_size: int, config_file: str,
                    records_per_file: Optional[int] = VOCAB_CHECK_RECORDS,
                    config_flag: str = "bert_config_file") -> None:
    """Checks that ``input_ids`` and ``masked_lm_ids`` of the first records fit the vocab.

    An id >= ``vocab_size`` would fail deep in the embedding lookup (``indices[0,1] = 2066 is
    not in [0, 1000)``) on CPU, or silently embed zeros on GPU. Records that cannot be parsed
    are left to :func:`check_input_records` / the input pipeline.

    Args:
      input_files: TFRecord paths.
      vocab_size: ``vocab_size`` of the config.
      config_file: ``--bert_config_file`` (for the message).
      records_per_file: records checked per file (None: all).
      config_flag: the flag that named ``config_file`` (``albert_config_file`` for ALBERT).

    Raises:
      ConfigError: a checked id is >= ``vocab_size`` (names the file, the largest id found,
        its feature and record, and ``vocab_size=<n>`` of ``--bert_config_file``).
    """
    for path in input_files:
        dataset = tf.data.TFRecordDataset(path)
        if records_per_file is not None:
            dataset = dataset.take(records_per_file)
        largest = (-1, "", -1)  # (id, feature, record index)
        try:
            for i, serialized in enumerate(dataset.as_numpy_iterator()):
                try:
                    feature = tf.train.Example.FromString(serialized).features.feature
                except Exception:  # noqa: BLE001 - reported by the record checks
                    continue
                for name in _ID_FEATURES:
                    if name in feature and feature[name].WhichOneof("kind") == "int64_list":
                        values = feature[name].int64_list.value
                        if values and max(values) > largest[0]:
                            largest = (max(values), name, i)
        except tf.errors.OpError:
            pass  # unreadable files are reported by check_input_records
        if largest[0] >= vocab_size:
            raise ConfigError(_vocab_mismatch(path, largest[0], largest[1], largest[2],
                                              vocab_size, config_file, config_flag))


def explain_index_error(error: tf.errors.OpError, input_files: Sequence[str],
                        config, config_file: str, config_flag: str = "bert_config_file"
                        ) -> Optional[BertTfError]:
    """Turns an embedding lookup failure (``indices[0,1] = 2066 is not in [0, 1000)``) inside
    training or evaluation into one clear error, or returns None for other errors.

    When ``N`` is ``vocab_size`` the input files are scanned for the first file holding an
    id >= ``vocab_size`` (named with its largest id, as :func:`check_token_ids`);
    ``type_vocab_size`` names ``segment_ids``. ``config`` is the model's config (a
    ``BertConfig``: only its ``vocab_size`` and ``type_vocab_size`` are read).

    Returns:
      A :class:`ConfigError` to raise, or None when the message is not an embedding index
      error (TF's error is then re-raised as is).
    """
    match = _INDEX_ERROR.search(error.message or "")
    if not match:
        return None
    index, bound = int(match.group(1)), int(match.group(2))
    if bound == config.vocab_size:
        for path in input_files:
            try:
                check_token_ids([path], bound, config_file, records_per_file=None,
                                config_flag=config_flag)
            except ConfigError as found:
                return found
        return ConfigError(f"a token id of {', '.join(input_files)} is out of range: {index} "
                           f"is not in [0, {bound}), vocab_size={bound} of --{config_flag}="
                           f"{config_file}")
    if bound == config.type_vocab_size:
        return ConfigError(f"a segment_ids value of {', '.join(input_files)} is out of range: "
                           f"{index} is not in [0, {bound}), type_vocab_size={bound} of "
                           f"--{config_flag}={config_file}")
    return None


def explain_parse_error(error: tf.errors.OpError, input_files: Sequence[str],
                        max_seq_length: int, max_predictions_per_seq: int) -> InputDataError:
    """Turns a record parse failure inside the input pipeline into a clear InputDataError.

    ``tf.io.parse_single_example`` only says "Key: input_ids. Can't parse serialized
    Example"; this scans the input files for the first record that does not fit the flags
    and names it, its feature and both lengths.

    Returns:
      The error to raise (with TF's message when no offending record is found).
    """
    for path in input_files:
        try:
            for i, serialized in enumerate(tf.data.TFRecordDataset(path).as_numpy_iterator()):
                problem = _record_mismatch(path, i, serialized, max_seq_length,
                                           max_predictions_per_seq)
                if problem:
                    return InputDataError(problem)
        except tf.errors.OpError as e:
            return InputDataError(f"{path}: {_damage(e)}")
    return InputDataError(f"cannot parse the pre-training records of {', '.join(input_files)} "
                          f"with --max_seq_length={max_seq_length} --max_predictions_per_seq="
                          f"{max_predictions_per_seq}: {error.message.strip()}")


def is_parse_error(error: tf.errors.OpError) -> bool:
    """Whether ``error`` (raised inside the input pipeline) is a record parse failure that
    :func:`explain_parse_error` can explain (a parse, dtype, missing-key or corruption error)."""
    message = error.message or ""
    return any(s in message for s in ("parse serialized Example", "Data types don't match",
                                      "is required but could not be found",
                                      "corrupted record", "truncated record",
                                      "DataLossError"))


def input_fn_builder(input_files: Sequence[str], max_seq_length: int,
                     max_predictions_per_seq: int, is_training: bool, batch_size: int,
                     num_cpu_threads: int = 4, seed: Optional[int] = None):
    """The original `input_fn_builder` as a ``tf.distribute`` dataset function (spec 6.2).

    Args:
      input_files: TFRecord paths.
      max_seq_length, max_predictions_per_seq: feature lengths (must match the data).
      is_training: training pipeline (files repeated and shuffled, parallel "sloppy"
        interleave with cycle length min(4, files), record shuffle buffer 100) or eval
        pipeline (all files in order, repeated).
      batch_size: GLOBAL batch size; each input pipeline batches
        ``input_context.get_per_replica_batch_size(batch_size)``, dropping the remainder.
      num_cpu_threads: parallel parse calls (the original's ``num_parallel_batches``).
      seed: shuffle seed (None: random, as the original).

    Returns:
      ``input_fn(input_context=None) -> tf.data.Dataset`` of feature dicts (see
      :func:`decode_pretraining_record`, each with a leading batch dimension).
    """
    files = list(input_files)
    schema = record_schema(max_seq_length, max_predictions_per_seq)

    def input_fn(input_context: Optional[tf.distribute.InputContext] = None) -> tf.data.Dataset:
        per_replica = batch_size
        if input_context is not None:
            per_replica = input_context.get_per_replica_batch_size(batch_size)
        if is_training:
            pipelines, pipeline_id = 1, 0
            if input_context is not None:
                pipelines = input_context.num_input_pipelines
                pipeline_id = input_context.input_pipeline_id
            # Each input pipeline (host) reads its own files when there are enough of them,
            # else every pipeline reads all files and keeps every pipelines-th record.
            shard_files = pipelines > 1 and len(files) >= pipelines
            own = files[pipeline_id::pipelines] if shard_files else files
            d = tf.data.Dataset.from_tensor_slices(tf.constant(own))
            d = d.repeat().shuffle(buffer_size=len(own), seed=seed)
            # "Sloppy" interleave: deterministic=False lets a slow file not block the others.
            d = d.interleave(tf.data.TFRecordDataset,
                             cycle_length=min(num_cpu_threads, _MAX_CYCLE_LENGTH, len(own)),
                             num_parallel_calls=tf.data.AUTOTUNE, deterministic=False)
            if pipelines > 1 and not shard_files:
                d = d.shard(pipelines, pipeline_id)
            d = d.shuffle(buffer_size=_SHUFFLE_BUFFER, seed=seed)
        else:
            d = tf.data.TFRecordDataset(files)
            if input_context is not None and input_context.num_input_pipelines > 1:
                d = d.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            # A fixed number of eval steps: repeat rather than run out of records.
            d = d.repeat()
        d = d.map(lambda r: decode_pretraining_record(r, schema),
                  num_parallel_calls=num_cpu_threads, deterministic=not is_training)
        d = d.batch(per_replica, drop_remainder=True)
        return d.prefetch(tf.data.AUTOTUNE)

    return input_fn
