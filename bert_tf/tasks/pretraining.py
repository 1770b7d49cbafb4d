"""Pre-training (masked LM + next sentence): the run behind the root `run_pretraining.py`.

Mirrors the original `run_pretraining.py` (spec `bert.md` section 6) without TPUEstimator:

* flags and defaults are the original's (:class:`PretrainingArgs`, spec 6.1), plus
  ``use_xla``, ``dtype`` and ``gradient_accumulation_steps``;
* the input pipeline reads the TFRecords of `create_pretraining_data.py` (the original's or
  ours) with fixed-length features cast from int64 to int32; training interleaves the files
  in parallel and shuffles, evaluation reads them in order; both drop the last partial batch
  (spec 6.2, :func:`input_fn_builder`);
* the model is :class:`BertModel` plus :class:`BertPretrainingHeads`; the loss is
  ``masked_lm_loss + next_sentence_loss`` (spec 2.11, 2.12, :func:`pretraining_losses`);
* training runs :func:`bert_tf.training.loop.train`, which writes ``model.ckpt-N`` with the
  original names (`bert/*`, `cls/*`, `*/adam_m`, `*/adam_v`, `global_step`) and resumes from
  the newest one after a kill (spec 3.3, 3.4);
* evaluation computes the original's metrics over ``max_eval_steps`` batches of the same
  input files (spec 6.3, :func:`metrics_from_sums`) and writes
  ``<output_dir>/eval_results.txt`` as sorted ``key = value`` lines, atomically.

Beyond the original, bad input fails early with one clear message
(:class:`bert_tf.errors.BertTfError`): a TFRecord whose feature lengths differ from
``--max_seq_length`` / ``--max_predictions_per_seq`` names the file, the record, the feature
and both lengths (also when the mismatch shows up as a parse failure mid-run), an input
pattern that matches no file names the pattern, ``--max_seq_length`` above the config's
``max_position_embeddings`` names both, and token ids at or above the config's ``vocab_size``
(checked in the first :data:`VOCAB_CHECK_RECORDS` records of each file before anything is
written; TF's mid-run ``indices[..] = id is not in [0, N)`` is turned into the same message)
name the file, the largest id and ``vocab_size``.
"""

import collections
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.bert.checkpoint_map import bert_model_map, pretraining_heads_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import (BertModel, BertPretrainingHeads, masked_lm_loss,
                                next_sentence_loss)
from bert_tf.data.pretraining import expand_input_patterns
from bert_tf.errors import BertTfError, ConfigError, FlagError, InputDataError
from bert_tf.training import checkpoint_io, loop
from bert_tf.training.eval_results import write_eval_results
from bert_tf.training.precision import dtype_policy
from bert_tf.training.restore import restore_for_inference
from bert_tf.training.strategy import strategy_from_flags

EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
             "next_sentence_accuracy", "next_sentence_loss")
# Spec 6.2: parallel interleave over at most 4 files, shuffle buffer 100 records.
_MAX_CYCLE_LENGTH = 4
_SHUFFLE_BUFFER = 100
# Records of each input file whose token ids are checked against vocab_size up front.
VOCAB_CHECK_RECORDS = 100
_ID_FEATURES = ("input_ids", "masked_lm_ids")
_INDEX_ERROR = re.compile(r"indices\[[^\]]*\] = (-?\d+) is not in \[0, (\d+)\)")


class NoModeError(FlagError, ValueError):
    """Neither ``--do_train`` nor ``--do_eval`` is set (the original raises ValueError)."""


@dataclass
class PretrainingArgs:
    """The original `run_pretraining.py` flags (spec 6.1) plus three (bert_tf) flags.

    None means "not given". ``input_file`` is a comma-separated list of files or globs.
    """

    bert_config_file: Optional[str] = None
    input_file: Optional[str] = None
    output_dir: Optional[str] = None
    init_checkpoint: Optional[str] = None
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    do_train: bool = False
    do_eval: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    use_tpu: bool = False
    tpu_name: Optional[str] = None
    tpu_zone: Optional[str] = None
    gcp_project: Optional[str] = None
    master: Optional[str] = None
    num_tpu_cores: int = 8
    # (bert_tf)
    use_xla: bool = False
    dtype: str = "float32"
    gradient_accumulation_steps: int = 1

    @classmethod
    def from_flags(cls, flag_values) -> "PretrainingArgs":
        """Reads every field from an absl ``FLAGS`` (each must be defined there)."""
        from bert_tf.flags import args_from_flags
        return args_from_flags(cls, flag_values)


# ---------------------------------------------------------------------------------------------
# Input (spec 6.2)
# ---------------------------------------------------------------------------------------------

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
            raise InputDataError(f"{path}: cannot read it as a TFRecord file "
                                 f"({e.message.strip()})") from e
    if total == 0:
        raise InputDataError(f"the input files hold no records: {', '.join(input_files)}")


def _vocab_mismatch(path: str, largest: int, feature: str, index: int, vocab_size: int,
                    config_file: str) -> str:
    return (f"{path}: token id {largest} ({feature} of record {index}, the largest id found) "
            f"is not smaller than vocab_size={vocab_size} of --bert_config_file={config_file}: "
            f"the records were made with a larger vocab; pass the bert_config.json of the model "
            f"that vocab belongs to, or recreate the data with create_pretraining_data.py and "
            f"the model's vocab.txt")


def check_token_ids(input_files: Sequence[str], vocab_size: int, config_file: str,
                    records_per_file: Optional[int] = VOCAB_CHECK_RECORDS) -> None:
    """Checks that ``input_ids`` and ``masked_lm_ids`` of the first records fit the vocab.

    An id >= ``vocab_size`` would fail deep in the embedding lookup (``indices[0,1] = 2066 is
    not in [0, 1000)``) on CPU, or silently embed zeros on GPU. Records that cannot be parsed
    are left to :func:`check_input_records` / the input pipeline.

    Args:
      input_files: TFRecord paths.
      vocab_size: ``vocab_size`` of the config.
      config_file: ``--bert_config_file`` (for the message).
      records_per_file: records checked per file (None: all).

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
                                              vocab_size, config_file))


def explain_index_error(error: tf.errors.OpError, input_files: Sequence[str],
                        config: BertConfig, config_file: str) -> Optional[BertTfError]:
    """Turns an embedding lookup failure (``indices[0,1] = 2066 is not in [0, 1000)``) inside
    training or evaluation into one clear error, or returns None for other errors.

    When ``N`` is ``vocab_size`` the input files are scanned for the first file holding an
    id >= ``vocab_size`` (named with its largest id, as :func:`check_token_ids`);
    ``type_vocab_size`` names ``segment_ids``.

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
                check_token_ids([path], bound, config_file, records_per_file=None)
            except ConfigError as found:
                return found
        return ConfigError(f"a token id of {', '.join(input_files)} is out of range: {index} "
                           f"is not in [0, {bound}), vocab_size={bound} of --bert_config_file="
                           f"{config_file}")
    if bound == config.type_vocab_size:
        return ConfigError(f"a segment_ids value of {', '.join(input_files)} is out of range: "
                           f"{index} is not in [0, {bound}), type_vocab_size={bound} of "
                           f"--bert_config_file={config_file}")
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
            return InputDataError(f"{path}: cannot read it as a TFRecord file "
                                  f"({e.message.strip()})")
    return InputDataError(f"cannot parse the pre-training records of {', '.join(input_files)} "
                          f"with --max_seq_length={max_seq_length} --max_predictions_per_seq="
                          f"{max_predictions_per_seq}: {error.message.strip()}")


def _is_parse_error(error: tf.errors.OpError) -> bool:
    message = error.message or ""
    return any(s in message for s in ("parse serialized Example", "Data types don't match",
                                      "is required but could not be found",
                                      "corrupted record", "DataLossError"))


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


# ---------------------------------------------------------------------------------------------
# Model, loss, metrics (spec 2.11, 2.12, 6.3)
# ---------------------------------------------------------------------------------------------

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
    """

    def __init__(self, config: BertConfig, use_one_hot_embeddings: bool = False, **kwargs):
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(**kwargs)
        self.config = config
        self.bert = BertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
        self.heads = BertPretrainingHeads(self.bert)

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
        """Original name -> variable: the 5 + 16 L + 2 `bert/*` then the 7 `cls/*` names."""
        table = bert_model_map(self.bert)
        table.update(pretraining_heads_map(self.heads))
        return table


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


METRIC_SUM_KEYS = ("masked_lm_correct", "masked_lm_weight", "masked_lm_loss_sum",
                   "next_sentence_correct", "next_sentence_count", "next_sentence_loss_sum",
                   "loss_sum", "batches")


def eval_metric_sums(outputs: Mapping[str, tf.Tensor],
                     features: Mapping[str, tf.Tensor]) -> Dict[str, tf.Tensor]:
    """One batch's contribution to the original `metric_fn` streaming metrics (spec 6.3).

    Returns:
      float32 scalars (see :data:`METRIC_SUM_KEYS`): ``masked_lm_correct`` =
      ``sum(w * [argmax == id])``, ``masked_lm_weight`` = ``sum(w)``, ``masked_lm_loss_sum``
      = ``sum(w * l)``, ``next_sentence_correct``, ``next_sentence_count`` (= B),
      ``next_sentence_loss_sum`` (sum of per-example NSP losses), ``loss_sum`` (this batch's
      total loss, as the Estimator's mean ``loss``) and ``batches`` (1). Sums add up over
      batches and replicas; :func:`metrics_from_sums` turns them into the metrics.
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


def metrics_from_sums(sums: Mapping[str, float], global_step: int) -> Dict[str, Any]:
    """The six values of the original eval results from accumulated :func:`eval_metric_sums`.

    ``masked_lm_accuracy`` = weighted accuracy (``tf.metrics.accuracy`` with weights),
    ``masked_lm_loss`` = ``sum(w*l) / sum(w)`` (``tf.metrics.mean`` with weights, no 1e-5),
    ``next_sentence_accuracy`` and ``next_sentence_loss`` unweighted means, ``loss`` = mean
    of the per-batch total losses, ``global_step`` as int. A zero denominator gives 0.0
    (the streaming metrics' ``div_no_nan``). Floats are ``numpy.float32`` as the Estimator's.
    """
    def ratio(num, den):
        return np.float32(sums[num] / sums[den]) if sums[den] else np.float32(0.0)

    return {
        "global_step": int(global_step),
        "loss": ratio("loss_sum", "batches"),
        "masked_lm_accuracy": ratio("masked_lm_correct", "masked_lm_weight"),
        "masked_lm_loss": ratio("masked_lm_loss_sum", "masked_lm_weight"),
        "next_sentence_accuracy": ratio("next_sentence_correct", "next_sentence_count"),
        "next_sentence_loss": ratio("next_sentence_loss_sum", "next_sentence_count"),
    }


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def validate_args(args: PretrainingArgs, config: BertConfig) -> None:
    """Flag checks made before anything is built.

    Raises:
      NoModeError: neither ``do_train`` nor ``do_eval`` (the original's ValueError message).
      FlagError: a missing required flag, ``--max_seq_length`` above the config's
        ``max_position_embeddings``, or a non-positive size or step count.
    """
    if not args.do_train and not args.do_eval:
        raise NoModeError("At least one of `do_train` or `do_eval` must be True.")
    for name in ("bert_config_file", "input_file", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    if args.max_seq_length > config.max_position_embeddings:
        raise FlagError(
            f"--max_seq_length={args.max_seq_length} is longer than max_position_embeddings="
            f"{config.max_position_embeddings} of --bert_config_file={args.bert_config_file}: "
            f"cannot use sequence length {args.max_seq_length} because the BERT model was only "
            f"trained up to sequence length {config.max_position_embeddings}")
    positive = ["max_seq_length", "max_predictions_per_seq"]
    if args.do_train:
        positive += ["train_batch_size", "num_train_steps", "gradient_accumulation_steps"]
    if args.do_eval:
        positive += ["eval_batch_size", "max_eval_steps"]
    for name in positive:
        if int(getattr(args, name)) <= 0:
            raise FlagError(f"--{name}={getattr(args, name)} must be positive")
    if args.do_train and args.num_warmup_steps < 0:
        raise FlagError(f"--num_warmup_steps={args.num_warmup_steps} must not be negative")
    if args.max_predictions_per_seq > args.max_seq_length:
        raise FlagError(f"--max_predictions_per_seq={args.max_predictions_per_seq} is larger "
                        f"than --max_seq_length={args.max_seq_length}")


def build_pretrainer(config: BertConfig, strategy: tf.distribute.Strategy,
                     use_one_hot_embeddings: bool = False,
                     dtype: str = "float32") -> BertPretrainer:
    """A built :class:`BertPretrainer` whose variables live under ``strategy.scope()``.

    ``dtype`` float16/bfloat16 builds the layers with Keras' ``mixed_*`` policy (float32
    variables; the log-probs and losses stay float32).

    Raises:
      FlagError: an unknown ``dtype``.
    """
    with dtype_policy(dtype), strategy.scope():
        model = BertPretrainer(config, use_one_hot_embeddings=use_one_hot_embeddings)
        model.build_with_dummy_input()
    return model


def evaluate(model: BertPretrainer, input_fn, max_eval_steps: int, global_step: int,
             strategy: Optional[tf.distribute.Strategy] = None,
             use_xla: bool = False) -> Dict[str, Any]:
    """Runs ``max_eval_steps`` batches and returns the original's six eval metrics.

    Args:
      model: a built :class:`BertPretrainer` holding the weights to evaluate.
      input_fn: eval ``input_fn`` of :func:`input_fn_builder` (``is_training=False``).
      max_eval_steps: batches to run (the original ``steps=max_eval_steps``).
      global_step: reported as ``global_step``.
      strategy: the strategy the model was built under (default: the current one).
      use_xla: compile the forward pass with XLA.

    Returns:
      dict of :data:`EVAL_KEYS` (see :func:`metrics_from_sums`). With several replicas,
      ``loss`` is the mean of the replicas' batch losses; the other metrics pool all examples.
    """
    strategy = strategy or tf.distribute.get_strategy()
    dataset = strategy.distribute_datasets_from_function(input_fn)

    def forward(features):
        return eval_metric_sums(model(features, training=False), features)

    if use_xla:
        forward = tf.function(forward, jit_compile=True)

    @tf.function
    def step(iterator):
        sums = strategy.run(forward, args=(next(iterator),))
        return {k: strategy.reduce(tf.distribute.ReduceOp.SUM, v, axis=None)
                for k, v in sums.items()}

    iterator = iter(dataset)
    totals = dict.fromkeys(METRIC_SUM_KEYS, 0.0)
    for _ in range(int(max_eval_steps)):
        for k, v in step(iterator).items():
            totals[k] += float(v.numpy())
    return metrics_from_sums(totals, global_step)


@dataclass
class PretrainingResult:
    """What :func:`run_pretraining` did.

    Attributes:
      train: the :class:`bert_tf.training.loop.TrainResult`, or None without ``do_train``.
      eval_metrics: the six eval values, or None without ``do_eval``.
      eval_results_file: path of ``eval_results.txt``, or None.
      train_seconds: wall time of training (0.0 without ``do_train``).
      train_steps_run: optimizer updates run in this call.
    """

    train: Optional[loop.TrainResult] = None
    eval_metrics: Optional[Dict[str, Any]] = None
    eval_results_file: Optional[str] = None
    train_seconds: float = 0.0
    train_steps_run: int = 0


def run_pretraining(args: PretrainingArgs,
                    strategy: Optional[tf.distribute.Strategy] = None,
                    log_every_n_steps: int = 100) -> PretrainingResult:
    """The original `run_pretraining.py` main: train and/or evaluate (spec 6).

    Args:
      args: the flags (:class:`PretrainingArgs`).
      strategy: a ``tf.distribute`` strategy; default: chosen from the TPU flags and the
        machine (:func:`bert_tf.training.strategy.strategy_from_flags`).
      log_every_n_steps: training log interval (loss, examples/sec).

    Returns:
      A :class:`PretrainingResult`.

    Raises:
      NoModeError: neither do_train nor do_eval.
      FlagError: a bad flag (see :func:`validate_args`), no file matches ``--input_file``.
      ConfigError: unreadable ``--bert_config_file``; token ids >= its ``vocab_size`` (names
        the file, the largest id and ``vocab_size``).
      InputDataError: records that do not fit ``--max_seq_length`` /
        ``--max_predictions_per_seq`` (names the file, feature and both lengths).
      CheckpointError: ``init_checkpoint`` or an ``output_dir`` checkpoint that does not fit.
      NanLossError: the training loss diverged.
    """
    if not args.do_train and not args.do_eval:
        raise NoModeError("At least one of `do_train` or `do_eval` must be True.")
    if not args.bert_config_file:
        raise FlagError("--bert_config_file is required")
    config = BertConfig.from_json_file(args.bert_config_file)
    validate_args(args, config)
    input_files = find_input_files(args.input_file)
    logging.info("*** Input Files ***")
    for f in input_files:
        logging.info("  %s", f)
    check_input_records(input_files, args.max_seq_length, args.max_predictions_per_seq)
    check_token_ids(input_files, config.vocab_size, args.bert_config_file)
    tf.io.gfile.makedirs(args.output_dir)

    strategy = strategy or strategy_from_flags(args)
    model = build_pretrainer(config, strategy, use_one_hot_embeddings=args.use_tpu,
                             dtype=args.dtype)
    name_map = model.name_map()
    logging.info("*** Features ***")
    for name, (n, kind, _) in feature_lengths(args.max_seq_length,
                                              args.max_predictions_per_seq).items():
        logging.info("  name = %s, shape = (batch, %d)", name, n)

    def parse_errors_explained(fn):
        try:
            return fn()
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
            if _is_parse_error(e):
                raise explain_parse_error(e, input_files, args.max_seq_length,
                                          args.max_predictions_per_seq) from e
            index_error = explain_index_error(e, input_files, config, args.bert_config_file)
            if index_error is not None:
                raise index_error from e
            raise

    result = PretrainingResult()
    trained_step = None
    if args.do_train:
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", args.train_batch_size)
        train_input_fn = input_fn_builder(input_files, args.max_seq_length,
                                          args.max_predictions_per_seq, is_training=True,
                                          batch_size=args.train_batch_size)
        kwargs = loop.loop_kwargs_from_flags(args)
        start = time.time()
        before = _step_in_output_dir(args.output_dir)
        result.train = parse_errors_explained(lambda: loop.train(
            model, pretraining_loss_fn, train_input_fn, name_map, args.output_dir,
            args.num_train_steps, num_warmup_steps=args.num_warmup_steps,
            log_every_n_steps=log_every_n_steps, strategy=strategy, **kwargs))
        result.train_seconds = time.time() - start
        result.train_steps_run = result.train.global_step - before
        trained_step = result.train.global_step
        if result.train.warm_start is not None and result.train.warm_start.missing:
            logging.info("Not in --init_checkpoint, trained from their initial values: %s",
                         ", ".join(result.train.warm_start.missing))

    if args.do_eval:
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d", args.eval_batch_size)
        if trained_step is None:
            global_step = restore_for_inference(name_map, args.output_dir,
                                                args.init_checkpoint).global_step
        else:
            global_step = trained_step  # the model holds the weights just saved
        eval_input_fn = input_fn_builder(input_files, args.max_seq_length,
                                         args.max_predictions_per_seq, is_training=False,
                                         batch_size=args.eval_batch_size)
        metrics = parse_errors_explained(lambda: evaluate(
            model, eval_input_fn, args.max_eval_steps, global_step, strategy=strategy,
            use_xla=args.use_xla))
        result.eval_metrics = metrics
        result.eval_results_file = write_eval_results(args.output_dir, metrics)
        logging.info("***** Eval results *****")
        for key in sorted(metrics):
            logging.info("  %s = %s", key, metrics[key])
    return result


def _step_in_output_dir(output_dir: str) -> int:
    existing = checkpoint_io.existing_checkpoints(output_dir) if tf.io.gfile.isdir(
        output_dir) else []
    return checkpoint_io.checkpoint_step(existing[-1]) if existing else 0


__all__ = [
    "BertPretrainer", "EVAL_KEYS", "NoModeError", "PretrainingArgs", "PretrainingResult",
    "VOCAB_CHECK_RECORDS", "check_input_records", "check_token_ids", "decode_pretraining_record",
    "eval_metric_sums", "evaluate", "explain_index_error", "explain_parse_error",
    "feature_lengths", "find_input_files", "input_fn_builder",
    "metrics_from_sums", "pretraining_loss_fn", "pretraining_losses", "record_schema",
    "run_pretraining", "validate_args",
]
