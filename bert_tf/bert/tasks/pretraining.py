"""Pre-training (masked LM + next sentence): the run behind the root `run_pretraining.py`.

Mirrors the original `run_pretraining.py` (spec `bert.md` section 6) without TPUEstimator:

* flags and defaults are the original's (:class:`PretrainingArgs`, spec 6.1), plus
  ``use_xla``, ``dtype`` and ``gradient_accumulation_steps``;
* the input pipeline reads the TFRecords of `create_pretraining_data.py` (the original's or
  ours) with fixed-length features cast from int64 to int32; training interleaves the files
  in parallel and shuffles, evaluation reads them in order; both drop the last partial batch
  (spec 6.2, :func:`bert_tf.data.pretraining_records.input_fn_builder`);
* the model is :class:`bert_tf.bert.pretrainer.BertPretrainer` (:class:`BertModel` plus
  :class:`BertPretrainingHeads`); the loss is ``masked_lm_loss + next_sentence_loss`` (spec
  2.11, 2.12, :func:`bert_tf.bert.pretrainer.pretraining_losses`);
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
(checked in the first
:data:`bert_tf.data.pretraining_records.VOCAB_CHECK_RECORDS` records of each file before anything is
written; TF's mid-run ``indices[..] = id is not in [0, N)`` is turned into the same message)
name the file, the largest id and ``vocab_size``.
"""

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.bert.config import BertConfig
from bert_tf.bert.pretrainer import BertPretrainer, pretraining_losses
from bert_tf.data.pretraining_records import (check_input_records, check_token_ids,
                                              explain_index_error, explain_parse_error,
                                              feature_lengths, find_input_files,
                                              input_fn_builder, is_parse_error)
from bert_tf.errors import FlagError
from bert_tf import checkpoint_io
from bert_tf.training import loop
from bert_tf.training.eval_results import format_eval_results, write_eval_results
from bert_tf.progress import ProgressReporter
from bert_tf.training.precision import dtype_policy
from bert_tf.training.restore import restore_for_inference
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags

EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
             "next_sentence_accuracy", "next_sentence_loss")


class NoModeError(FlagError, ValueError):
    """Neither ``--do_train`` nor ``--do_eval`` is set (the original raises ValueError)."""


@bert_flags.args_class(bert_flags.RUN_PRETRAINING, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS)
class PretrainingArgs:
    """The original `run_pretraining.py` flags (spec 6.1) plus three (bert_tf) flags.

    Defaults are :data:`bert_tf.flags.RUN_PRETRAINING`'s (the original's). None means "not
    given". ``input_file`` is a comma-separated list of files or globs.
    """

    bert_config_file: Optional[str]
    input_file: Optional[str]
    output_dir: Optional[str]
    init_checkpoint: Optional[str]
    max_seq_length: int
    max_predictions_per_seq: int
    do_train: bool
    do_eval: bool
    train_batch_size: int
    eval_batch_size: int
    learning_rate: float
    num_train_steps: int
    num_warmup_steps: int
    save_checkpoints_steps: int
    iterations_per_loop: int
    max_eval_steps: int
    # (bert_tf)


# ---------------------------------------------------------------------------------------------
# Model, loss, metrics (spec 2.11, 2.12, 6.3)
# ---------------------------------------------------------------------------------------------

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

def check_args(args: PretrainingArgs, config: BertConfig) -> None:
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
    check_sizes_and_steps(args)
    if args.max_predictions_per_seq > args.max_seq_length:
        raise FlagError(f"--max_predictions_per_seq={args.max_predictions_per_seq} is larger "
                        f"than --max_seq_length={args.max_seq_length}")


def check_sizes_and_steps(args) -> None:
    """The size and step flags of a pre-training run (BERT's or ALBERT's) must be positive.

    Args:
      args: :class:`PretrainingArgs` or ALBERT's args (``max_seq_length``,
        ``max_predictions_per_seq``; with ``do_train`` ``train_batch_size``,
        ``num_train_steps``, ``gradient_accumulation_steps``, ``num_warmup_steps``; with
        ``do_eval`` ``eval_batch_size``, ``max_eval_steps``).

    Raises:
      FlagError: the first non-positive one (``--name=value must be positive``), or a negative
        ``--num_warmup_steps`` with ``do_train``.
    """
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


def checked_input_files(input_file: str, max_seq_length: int, max_predictions_per_seq: int,
                        vocab_size: int, config_file: str,
                        config_flag: str = "bert_config_file") -> List[str]:
    """The files of ``--input_file`` (logged as the original does), checked before a run.

    Args:
      input_file: the flag (comma-separated glob patterns).
      max_seq_length, max_predictions_per_seq: the flags the records must fit.
      vocab_size: the model config's; config_file: its path, for the message.

    Returns:
      the matching file names, in order.

    Raises:
      FlagError: no file matches. InputDataError: records that do not fit the two lengths
        (names the file, feature and both lengths). ConfigError: a token id >= ``vocab_size``.
    """
    input_files = find_input_files(input_file)
    logging.info("*** Input Files ***")
    for f in input_files:
        logging.info("  %s", f)
    check_input_records(input_files, max_seq_length, max_predictions_per_seq)
    check_token_ids(input_files, vocab_size, config_file, config_flag=config_flag)
    return input_files


def record_errors_explained(input_files: List[str], max_seq_length: int,
                            max_predictions_per_seq: int, config, config_file: str,
                            config_flag: str = "bert_config_file"
                            ) -> Callable[[Callable[[], Any]], Any]:
    """A runner ``run(fn)`` that calls ``fn()`` and turns the record errors TensorFlow raises
    while reading ``input_files`` into one-line bert_tf errors.

    Args:
      input_files: the records read; max_seq_length, max_predictions_per_seq: the flags;
      config: the model config (its ``vocab_size``); config_file: its path, for the message.

    Returns:
      the runner; it returns what ``fn`` returns.

    Raises (from the runner):
      InputDataError: a record that does not parse with the two lengths. ConfigError: an
        embedding index out of range (a token id >= ``vocab_size``). Any other
        ``InvalidArgumentError`` / ``DataLossError`` as it is.
    """
    def run(fn):
        try:
            return fn()
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
            if is_parse_error(e):
                raise explain_parse_error(e, input_files, max_seq_length,
                                          max_predictions_per_seq) from e
            index_error = explain_index_error(e, input_files, config, config_file,
                                              config_flag)
            if index_error is not None:
                raise index_error from e
            raise

    return run


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

    Logs progress lines (:mod:`bert_tf.progress`) every 10% or 30 s.

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
    bar = ProgressReporter("eval", int(max_eval_steps), "steps")  # the original was silent
    for done in range(1, int(max_eval_steps) + 1):
        for k, v in step(iterator).items():
            totals[k] += float(v.numpy())
        bar.update(done)
    bar.finish()
    return metrics_from_sums(totals, global_step)


@dataclass
class PretrainingResult:
    """What :func:`run` did (BERT's; ALBERT's run returns one too).

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

    def summary_lines(self) -> List[str]:
        """What a BERT or ALBERT pre-training run did, as the scripts print it (bert_tf's
        summary, not the original's output): ``trained to global_step N (S steps, R
        steps/s); last loss L; checkpoint P`` after training, then ``wrote
        <eval_results.txt>:`` and its ``key = value`` lines, indented by two spaces, after
        evaluation. Empty without either."""
        lines = []
        if self.train is not None:
            steps = self.train_steps_run
            rate = steps / self.train_seconds if self.train_seconds > 0 else 0.0
            lines.append(f"trained to global_step {self.train.global_step} ({steps} steps, "
                         f"{rate:.2f} steps/s); last loss {self.train.last_loss}; "
                         f"checkpoint {self.train.checkpoint}")
        if self.eval_metrics is not None:
            lines.append(f"wrote {self.eval_results_file}:")
            lines.extend(f"  {line}"
                         for line in format_eval_results(self.eval_metrics).splitlines())
        return lines


def run(args: PretrainingArgs, strategy: Optional[tf.distribute.Strategy] = None,
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
      FlagError: a bad flag (see :func:`check_args`), no file matches ``--input_file``.
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
    check_args(args, config)
    check_tpu_flags(args)
    # before the record checks: they run TF ops, and a TF_CONFIG cluster's collective ops must
    # be configured before the first one ("Collective ops must be configured at program startup")
    strategy = strategy or strategy_from_flags(args)
    input_files = checked_input_files(args.input_file, args.max_seq_length,
                                      args.max_predictions_per_seq, config.vocab_size,
                                      args.bert_config_file)
    tf.io.gfile.makedirs(args.output_dir)

    model = build_pretrainer(config, strategy, use_one_hot_embeddings=args.use_tpu,
                             dtype=args.dtype)
    name_map = model.name_map()
    logging.info("*** Features ***")
    for name, (n, kind, _) in feature_lengths(args.max_seq_length,
                                              args.max_predictions_per_seq).items():
        logging.info("  name = %s, shape = (batch, %d)", name, n)

    parse_errors_explained = record_errors_explained(
        input_files, args.max_seq_length, args.max_predictions_per_seq, config,
        args.bert_config_file)

    result = PretrainingResult()
    trained_step = None
    if args.do_train:
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", args.train_batch_size)
        train_input_fn = input_fn_builder(input_files, args.max_seq_length,
                                          args.max_predictions_per_seq, is_training=True,
                                          batch_size=args.train_batch_size)
        train_config = loop.TrainConfig.from_flags(args, args.num_train_steps,
                                                   num_warmup_steps=args.num_warmup_steps,
                                                   log_every_n_steps=log_every_n_steps)
        start = time.time()
        before = step_in_output_dir(args.output_dir)
        result.train = parse_errors_explained(lambda: loop.train(
            model, pretraining_loss_fn, train_input_fn, name_map, train_config,
            strategy=strategy))
        result.train_seconds = time.time() - start
        result.train_steps_run = result.train.global_step - before
        trained_step = result.train.global_step
        if result.train.warm_start is not None and result.train.warm_start.missing:
            logging.info("Not in --init_checkpoint, trained from their initial values: %s",
                         ", ".join(result.train.warm_start.missing))

    if args.do_eval:
        run_eval(result, model, name_map, input_files, args, trained_step, strategy,
                 parse_errors_explained)
    return result


def run_eval(result: PretrainingResult, model, name_map: Mapping[str, tf.Variable],
             input_files: List[str], args, trained_step: Optional[int],
             strategy: tf.distribute.Strategy, explained: Callable[[Callable[[], Any]], Any],
             load_fn: Optional[Callable] = None,
             rename: Callable[[Dict[str, Any]], Dict[str, Any]] = dict) -> None:
    """The ``do_eval`` part of a pre-training run (BERT's or ALBERT's, spec 6): weights, then
    :func:`evaluate`, ``eval_results.txt``, the log; fills ``result.eval_metrics`` and
    ``result.eval_results_file``.

    Args:
      result: the run's :class:`PretrainingResult`, filled in.
      model: a built pretrainer (outputs ``mlm_log_probs`` ``[B*K, V]`` and
        ``nsp_log_probs`` ``[B, 2]`` float32); name_map: its original name -> variable.
      input_files: the records; args: the run's flags (``output_dir``, ``init_checkpoint``,
        ``max_seq_length``, ``max_predictions_per_seq``, ``eval_batch_size``,
        ``max_eval_steps``, ``use_xla``).
      trained_step: the step just trained (the model holds its weights), or None: weights
        from :func:`restore_for_inference` (newest checkpoint of ``output_dir``, else
        ``init_checkpoint``).
      strategy: the strategy the model was built under.
      explained: the runner of :func:`record_errors_explained`.
      load_fn: the family's checkpoint loader for :func:`restore_for_inference` (default:
        BERT's ``checkpoint_io.assign_from_checkpoint``).
      rename: maps :func:`evaluate`'s six values to the family's keys (ALBERT:
        ``sentence_order_*``).

    Raises:
      InputDataError, ConfigError: records that do not fit (see ``explained``).
      CheckpointError: a checkpoint that does not fit.
    """
    logging.info("***** Running evaluation *****")
    logging.info("  Batch size = %d", args.eval_batch_size)
    if trained_step is None:
        restore_kwargs = {} if load_fn is None else {"load_fn": load_fn}
        global_step = restore_for_inference(name_map, args.output_dir, args.init_checkpoint,
                                            **restore_kwargs).global_step
    else:
        global_step = trained_step  # the model holds the weights just saved
    eval_input_fn = input_fn_builder(input_files, args.max_seq_length,
                                     args.max_predictions_per_seq, is_training=False,
                                     batch_size=args.eval_batch_size)
    metrics = rename(explained(lambda: evaluate(
        model, eval_input_fn, args.max_eval_steps, global_step, strategy=strategy,
        use_xla=args.use_xla)))
    result.eval_metrics = metrics
    result.eval_results_file = write_eval_results(args.output_dir, metrics)
    logging.info("***** Eval results *****")
    for key in sorted(metrics):
        logging.info("  %s = %s", key, metrics[key])


def step_in_output_dir(output_dir: str) -> int:
    """The step of the newest ``model.ckpt-N`` in ``output_dir`` (0: none, or no folder)."""
    existing = checkpoint_io.existing_checkpoints(output_dir) if tf.io.gfile.isdir(
        output_dir) else []
    return checkpoint_io.checkpoint_step(existing[-1]) if existing else 0


__all__ = [
    "EVAL_KEYS", "NoModeError", "PretrainingArgs", "PretrainingResult", "check_args",
    "check_sizes_and_steps", "checked_input_files", "eval_metric_sums", "evaluate",
    "metrics_from_sums", "pretraining_loss_fn", "record_errors_explained",
    "run", "run_eval", "step_in_output_dir",
]
