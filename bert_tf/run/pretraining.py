"""The run pieces of a masked-LM + sentence-pair pre-training run shared by BERT's and
ALBERT's (:mod:`bert_tf.bert.tasks.pretraining`, :mod:`bert_tf.albert.tasks.pretraining`;
spec `bert.md` 6): the mode and size checks, the evaluation (the original's six eval metrics
over ``max_eval_steps`` batches, ``eval_results.txt``), the result and its printed report.

The model, its checkpoint loader and the family's eval keys are values (a built pretrainer
with ``eval_metric_sums``, a ``load_fn``, a ``rename``); nothing here imports a family.
"""

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.data.pretraining_records import input_fn_builder
from bert_tf.errors import FlagError
from bert_tf.progress import ProgressReporter
from bert_tf.run.checks import EVAL_FOLDERS, TRAINING_FILES, make_output_dir
from bert_tf.training import loop
from bert_tf.training.eval_results import (EVAL_RESULTS_FILE, format_eval_results,
                                           write_eval_results)
from bert_tf.training.restore import restore_for_inference

EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
             "next_sentence_accuracy", "next_sentence_loss")

METRIC_SUM_KEYS = ("masked_lm_correct", "masked_lm_weight", "masked_lm_loss_sum",
                   "next_sentence_correct", "next_sentence_count", "next_sentence_loss_sum",
                   "loss_sum", "batches")


class NoModeError(FlagError, ValueError):
    """Neither ``--do_train`` nor ``--do_eval`` is set (the original raises ValueError)."""


def check_sizes_and_steps(args) -> None:
    """The size and step flags of a pre-training run (BERT's or ALBERT's) must be positive.

    Args:
      args: :class:`bert_tf.bert.tasks.pretraining.PretrainingArgs` or ALBERT's args
        (``max_seq_length``, ``max_predictions_per_seq``; with ``do_train`` ``train_batch_size``,
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


def make_pretraining_output_dir(output_dir: str) -> str:
    """Creates ``--output_dir`` (:func:`bert_tf.atomic_files.make_output_dir`) and refuses,
    before any work, a folder there named like a file the run writes (``eval_results.txt``,
    the checkpoint state file) or a file named like its ``eval`` summaries folder (bert_tf:
    these failed after training).

    Raises:
      FlagError: naming the flag and the path in the way.
    """
    return make_output_dir(output_dir, files=(EVAL_RESULTS_FILE,) + TRAINING_FILES,
                           folders=EVAL_FOLDERS)


def metrics_from_sums(sums: Mapping[str, float], global_step: int) -> Dict[str, Any]:
    """The six values of the original eval results from accumulated
    :func:`bert_tf.bert.pretrainer.eval_metric_sums`.

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


def evaluate(model, input_fn, max_eval_steps: int, global_step: int,
             strategy: Optional[tf.distribute.Strategy] = None,
             use_xla: bool = False) -> Dict[str, Any]:
    """Runs ``max_eval_steps`` batches and returns the original's six eval metrics.

    Args:
      model: a built pretrainer holding the weights to evaluate (BERT's
        :class:`bert_tf.bert.pretrainer.BertPretrainer` or ALBERT's subclass); its
        ``eval_metric_sums(outputs, features)`` gives a batch's sums (:data:`METRIC_SUM_KEYS`).
      input_fn: eval ``input_fn`` of :func:`bert_tf.data.pretraining_records.input_fn_builder`
        (``is_training=False``).
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
        return model.eval_metric_sums(model(features, training=False), features)

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
        sums = {k: float(v.numpy()) for k, v in step(iterator).items()}
        for k, v in sums.items():
            totals[k] += v
        bar.update(done, int(sums["next_sentence_count"]))  # a batch's examples
    bar.finish()
    return metrics_from_sums(totals, global_step)


@dataclass
class PretrainingResult:
    """What a pre-training run did (BERT's :func:`bert_tf.bert.tasks.pretraining.run`, ALBERT's
    :func:`bert_tf.albert.tasks.pretraining.run`).

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


def run_eval(result: PretrainingResult, model, name_map: Mapping[str, tf.Variable],
             input_files: List[str], args, trained_step: Optional[int],
             strategy: tf.distribute.Strategy, explained: Callable[[Callable[[], Any]], Any],
             load_fn: Optional[Callable] = None,
             rename: Callable[[Dict[str, Any]], Dict[str, Any]] = dict,
             restored: Optional[Any] = None) -> None:
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
      explained: the runner of
        :func:`bert_tf.data.pretraining_record_checks.record_errors_explained`.
      load_fn: the family's checkpoint loader for :func:`restore_for_inference` (default:
        BERT's ``checkpoint_io.assign_from_checkpoint``).
      rename: maps :func:`evaluate`'s six values to the family's keys (ALBERT:
        ``sentence_order_*``).
      restored: the :class:`bert_tf.training.restore.Restored` the model was built with
        (:func:`bert_tf.training.restore.build_for_inference`, issue 24): nothing is loaded.

    Raises:
      InputDataError, ConfigError: records that do not fit (see ``explained``).
      CheckpointError: a checkpoint that does not fit.
    """
    logging.info("***** Running evaluation *****")
    logging.info("  Batch size = %d", args.eval_batch_size)
    if trained_step is None:
        restore_kwargs = {} if load_fn is None else {"load_fn": load_fn}
        global_step = (restored or restore_for_inference(
            name_map, args.output_dir, args.init_checkpoint, **restore_kwargs)).global_step
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
