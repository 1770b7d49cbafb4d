"""Custom training loop that writes and resumes original-layout checkpoints.

Replaces ``TPUEstimator.train`` of the original scripts (spec `bert.md` sections 3.3, 3.4,
6.3, 7.1). :class:`TrainConfig` holds the run's settings; :func:`train` composes the steps:

* :class:`bert_tf.training.train_state.TrainState` and
  :func:`~bert_tf.training.train_state.restore_or_warm_start`: on start, restore EVERYTHING
  (weights, ``<name>/adam_m``, ``<name>/adam_v``, ``global_step``) from the newest
  ``<output_dir>/model.ckpt-N`` if there is one, and then ignore ``init_checkpoint``
  (spec 3.4); otherwise warm-start the trainable variables found in ``init_checkpoint`` (no
  slots, no global_step) and log each trainable variable as the original
  (``name = ..., shape = ...[, *INIT_FROM_CKPT*]``);
* :func:`bert_tf.training.train_step.distributed_iterator` and
  :class:`~bert_tf.training.train_step.TrainStep`: ``num_train_steps`` optimizer updates of
  :class:`AdamWeightDecay` with the original schedule and clipping (``create_optimizer``),
  run in chunks inside one ``tf.function`` under the strategy (forward/backward optionally
  XLA-compiled);
* :mod:`bert_tf.training.checkpoint_cadence`: every ``save_checkpoints_steps`` updates and at
  the end, ``model.ckpt-<step>`` (model variables by original name, their two Adam slots,
  int64 ``global_step``) written atomically, the ``checkpoint`` state file updated, the
  newest ``keep_checkpoint_max`` (5, the Estimator default) kept, chief only;
* logs ``global_step``, ``loss`` and ``examples/sec`` every ``log_every_n_steps`` updates,
  and a progress line (step/total, rates, ETA; :mod:`bert_tf.progress`) every 10%
  of the run (a chunk of ``steps_per_loop`` updates ends there) or 30 s;
* writes TensorBoard event files to ``output_dir`` (:mod:`bert_tf.training.summaries`).

Data on resume: the dataset is repeated forever (as the original training input functions
do) and, on resume, the first ``global_step * gradient_accumulation_steps`` batches are
skipped, so an uninterrupted run and a killed-and-resumed run see the same batches when the
dataset's order is deterministic. (The Estimator restarted the input pipeline from the
beginning instead.) With float16 loss scaling a skipped (non-finite) update consumes batches
without advancing ``global_step``, so the skip is then approximate.
"""

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

import keras
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io, stop_requests
from bert_tf.errors import BertTfError
from bert_tf.recompute import set_recompute_grad
from bert_tf.training.checkpoint_cadence import (Cadence, NanLossError,
                                                 check_finite_before_save, is_chief,
                                                 remove_stale_temp_files, save_checkpoint)
from bert_tf.training.optimizer import create_optimizer
from bert_tf.training.schedule import create_schedule
from bert_tf.progress import ProgressReporter
from bert_tf.training.summaries import TrainSummaries
from bert_tf.training.train_state import TrainState, restore_or_warm_start
from bert_tf.training.train_step import DatasetOrFn, TrainStep, distributed_iterator

__all__ = ["DatasetOrFn", "NanLossError", "OutOfMemoryError", "ProgressLog", "Summaries",
           "TrainConfig", "TrainResult", "is_chief", "save_checkpoint", "train"]

Summaries = TrainSummaries  # the earlier name

# TrainConfig field <- flag of the shared vocabulary (bert_tf.flags), for TrainConfig.from_flags.
_FLAG_FIELDS = [("learning_rate", "learning_rate"), ("init_checkpoint", "init_checkpoint"),
                ("save_checkpoints_steps", "save_checkpoints_steps"),
                ("iterations_per_loop", "steps_per_loop"), ("use_xla", "use_xla"),
                ("gradient_accumulation_steps", "gradient_accumulation_steps"),
                ("allow_partial_init_checkpoint", "allow_partial_init_checkpoint"),
                ("lr_schedule", "lr_schedule"), ("slanted_cut_frac", "slanted_cut_frac"),
                ("slanted_ratio", "slanted_ratio"),
                ("recompute_grad", "recompute_grad"), ("train_batch_size", "train_batch_size")]

# What the BERT and ALBERT scripts offer to train in less memory (OutOfMemoryError's advice).
BERT_MEMORY_LEVERS = ("--recompute_grad, a smaller --train_batch_size with "
                      "--gradient_accumulation_steps=K (the same examples per update), "
                      "--dtype=bfloat16, a shorter --max_seq_length")


class OutOfMemoryError(BertTfError):
    """An allocation failed during training (``tf.errors.ResourceExhaustedError`` or
    ``MemoryError``); the message names the batch size, the flags that use less memory and
    the last checkpoint, which is intact (bert_tf: the originals ended in a traceback)."""


@dataclass
class TrainConfig:
    """The settings of one training run (the original's ``RunConfig`` + optimizer flags).

    Attributes:
      output_dir: where ``<basename>-N`` and ``checkpoint`` go (created); a checkpoint there
        is resumed from (the Estimator's ``model_dir``).
      num_train_steps: optimizer updates in total (int > 0; also the decay length of the
        schedule).
      learning_rate, num_warmup_steps, weight_decay_rate: for :func:`create_optimizer`
        (spec 7.1) when :func:`train` is not given an optimizer.
      init_checkpoint: warm start (trainable variables only) when ``output_dir`` holds no
        checkpoint; None: none.
      allow_partial_init_checkpoint: a warm start may leave encoder variables at their
        initial values (bert_tf; :func:`bert_tf.checkpoint_checks.check_warm_start`).
      warm_started: the caller already loaded initial weights (the XLNet tasks load their
        ``--init_checkpoint`` themselves): no "from scratch" warning.
      warm_start: the report of the warm start from ``init_checkpoint`` done when the model
        was built (:func:`bert_tf.training.restore.build_from_checkpoint`, issue 24): not
        read again, logged as the loop's own (``*INIT_FROM_CKPT*``).
      save_checkpoints_steps: save every this many updates (and at the end); <= 0: at the end
        only.
      keep_checkpoint_max: newest checkpoints kept (older ones are deleted).
      log_every_n_steps: log loss and speed every this many updates (< 1 reads as 1).
      steps_per_loop: updates run inside one ``tf.function`` call (``iterations_per_loop``;
        < 1 reads as 1).
      stop_at_step: stop (and save) at this global step, below ``num_train_steps``
        (Estimator's ``max_steps``); the schedule still uses ``num_train_steps``.
      use_xla: compile the forward and backward pass with XLA (``jit_compile=True``).
      gradient_accumulation_steps: batches whose gradients are averaged per update (each
        update consumes this many batches; None reads as 1).
      loss_scale: dynamic loss scaling (float16 compute) via ``keras.optimizers.
        LossScaleOptimizer`` in :meth:`create_optimizer`. The scale is not checkpointed.
      basename: checkpoint basename (``model.ckpt``).
      summary_dir: write TensorBoard scalars here every ``log_every_n_steps`` updates and at
        the end (the Estimator's ``save_summary_steps``; chief only;
        :class:`bert_tf.training.summaries.TrainSummaries`: ``loss_summary``, ``train/lr``,
        ``train/gnorm``, ``global_step/sec``, ``examples/sec``). None: ``output_dir``, as the
        Estimator wrote its event files to ``model_dir``.
      write_summaries: False: no event files at all.
      loss_summary: the tag of the loss scalar (``loss``; XLNet: ``train/total_loss``).
      lr_schedule, slanted_cut_frac, slanted_ratio: (bert_tf, issue 26) ``--lr_schedule``
        (``warmup_linear``: the original; ``slanted_triangular``,
        :func:`bert_tf.training.schedule.create_schedule`).
      layer_recipe: (bert_tf, issue 26) layer-wise rates / gradual unfreezing
        (:class:`bert_tf.training.recipes.LayerRecipe`), or None.
      recompute_grad: (bert_tf, ``--recompute_grad``) set ``recompute_grad`` on the model's
        encoders (:func:`bert_tf.recompute.set_recompute_grad`): each transformer block's
        activations are recomputed in the backward pass instead of kept.
      train_batch_size: examples per batch (``--train_batch_size``), named in the message of
        :class:`OutOfMemoryError`; None: not named.
      memory_levers: the flags that lower training memory, for that message (default
        :data:`BERT_MEMORY_LEVERS`; the XLNet tasks give theirs).

    Raises:
      ValueError: ``num_train_steps`` <= 0 or ``gradient_accumulation_steps`` < 1.
    """

    output_dir: str
    num_train_steps: int
    learning_rate: float = 5e-5
    num_warmup_steps: int = 0
    weight_decay_rate: float = 0.01
    init_checkpoint: Optional[str] = None
    allow_partial_init_checkpoint: bool = False
    warm_started: bool = False
    warm_start: Optional[checkpoint_io.LoadReport] = None
    save_checkpoints_steps: int = 1000
    keep_checkpoint_max: int = 5
    log_every_n_steps: int = 100
    steps_per_loop: int = 1
    stop_at_step: Optional[int] = None
    use_xla: bool = False
    gradient_accumulation_steps: int = 1
    loss_scale: bool = False
    basename: str = "model.ckpt"
    summary_dir: Optional[str] = None
    write_summaries: bool = True
    loss_summary: str = "loss"
    lr_schedule: str = "warmup_linear"
    slanted_cut_frac: float = 0.1
    slanted_ratio: float = 32.0
    layer_recipe: Optional[Any] = None
    recompute_grad: bool = False
    train_batch_size: Optional[int] = None
    memory_levers: str = BERT_MEMORY_LEVERS

    def __post_init__(self):
        self.gradient_accumulation_steps = int(self.gradient_accumulation_steps or 1)
        if self.gradient_accumulation_steps < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got "
                             f"{self.gradient_accumulation_steps}")
        if int(self.num_train_steps) <= 0:
            raise ValueError(f"num_train_steps must be > 0, got {self.num_train_steps}")
        self.num_train_steps = int(self.num_train_steps)
        self.steps_per_loop = max(1, int(self.steps_per_loop))
        self.log_every_n_steps = max(1, int(self.log_every_n_steps))

    @property
    def last_step(self) -> int:
        """The global step training stops at: ``min(stop_at_step, num_train_steps)``."""
        if self.stop_at_step is None:
            return self.num_train_steps
        return min(int(self.stop_at_step), self.num_train_steps)

    def create_optimizer(self, variable_names: Mapping[str, Any]) -> keras.optimizers.Optimizer:
        """The original's optimizer (spec 7.1) for these settings; call under the strategy's
        scope. ``variable_names``: original name -> variable (the slot names)."""
        recipe = self.layer_recipe if self.layer_recipe is not None and \
            self.layer_recipe.active else None
        optimizer, _ = create_optimizer(
            self.learning_rate, self.num_train_steps, self.num_warmup_steps,
            weight_decay_rate=self.weight_decay_rate, variable_names=variable_names,
            loss_scale=self.loss_scale, schedule=self.schedule(), recipe=recipe)
        return optimizer

    def schedule(self, **warmup_kwargs):
        """The learning-rate schedule of ``lr_schedule`` (``warmup_kwargs``: ALBERT's
        ``power``, ``start_warmup_step`` of the original one)."""
        return create_schedule(self.lr_schedule, self.learning_rate, self.num_train_steps,
                               self.num_warmup_steps, self.slanted_cut_frac, self.slanted_ratio,
                               **warmup_kwargs)

    @staticmethod
    def flag_settings(flags: Any) -> dict:
        """The fields set by the shared flag vocabulary (``bert_tf.flags``), as a dict.

        Maps ``learning_rate``, ``init_checkpoint``, ``save_checkpoints_steps``,
        ``iterations_per_loop`` (-> ``steps_per_loop``), ``use_xla``,
        ``gradient_accumulation_steps``, ``recompute_grad``, ``train_batch_size`` and
        ``dtype`` (``float16`` -> ``loss_scale=True``; the
        model's layers must then use the ``mixed_float16`` policy). Flags that are not defined
        (or None) are left out, so the field defaults apply.
        """
        def value(name):
            try:
                return getattr(flags, name)
            except AttributeError:
                return None

        out = {}
        for flag, field in _FLAG_FIELDS:
            v = value(flag)
            if v is not None:
                out[field] = v
        dtype = value("dtype")
        if dtype is not None:
            out["loss_scale"] = dtype == "float16"
        return out

    @classmethod
    def from_flags(cls, flags: Any, num_train_steps: int, **settings) -> "TrainConfig":
        """A config from the flags (:meth:`flag_settings`, ``output_dir`` from
        ``flags.output_dir``) and the task's own ``settings`` (fields; they win over flags).

        ``num_train_steps`` and ``num_warmup_steps`` are the task's (run_classifier derives
        them from epochs and warmup_proportion).

        Raises:
          ValueError: as the constructor; TypeError: an unknown field in ``settings``.
        """
        return cls(flags.output_dir, num_train_steps, **{**cls.flag_settings(flags),
                                                         **settings})


@dataclass
class TrainResult:
    """What :func:`train` did.

    Attributes:
      global_step: optimizer updates done in total (int).
      checkpoint: prefix of the last checkpoint written or restored (``.../model.ckpt-N``).
      resumed_from: the ``output_dir`` checkpoint restored at start, or None.
      warm_start: the :class:`checkpoint_io.LoadReport` of ``init_checkpoint``, or None.
      last_loss: mean training loss of the last chunk of steps run (None when none ran).
    """

    global_step: int
    checkpoint: Optional[str]
    resumed_from: Optional[str]
    warm_start: Optional[checkpoint_io.LoadReport]
    last_loss: Optional[float]


def train(model: keras.Model, loss_fn: Callable[[keras.Model, Any, Any], tf.Tensor],
          dataset: DatasetOrFn, name_map: Mapping[str, Any], config: TrainConfig, *,
          strategy: Optional[tf.distribute.Strategy] = None,
          optimizer: Optional[keras.optimizers.Optimizer] = None) -> TrainResult:
    """Trains ``model`` as ``config`` says and writes original-layout checkpoints.

    Args:
      model: a built Keras model whose variables were created under ``strategy.scope()``.
      loss_fn: ``loss_fn(model, features, labels) -> loss``, the mean loss of the replica's
        batch (float scalar); it calls ``model(..., training=True)`` (see :class:`TrainStep`).
      dataset: a ``tf.data.Dataset`` of ``(features, labels)`` with the GLOBAL batch size, or
        ``input_context -> dataset`` batched per replica (see :func:`distributed_iterator`).
      name_map: original name -> variable (the family's checkpoint map). Every trainable
        variable of ``model`` must be in it; every entry is saved.
      config: the :class:`TrainConfig`.
      strategy: the ``tf.distribute`` strategy (default: the current one).
      optimizer: an :class:`AdamWeightDecay` (or a ``LossScaleOptimizer`` around one) created
        under ``strategy.scope()``; default :meth:`TrainConfig.create_optimizer`.

    Raises:
      ValueError: see :meth:`TrainState.build` (model, name map, scope, optimizer type).
      CheckpointError: ``init_checkpoint`` or the ``output_dir`` checkpoint is unreadable or
        does not fit the model (names the variable and shapes), or ``output_dir`` is not
        writable.
      NanLossError: the loss became NaN/inf (without loss scaling), 100 calls in a row
        made no update (every gradient non-finite under loss scaling), or a checkpoint due
        would hold a non-finite value (not written; the earlier ones stay).
      OutOfMemoryError: an allocation failed (``ResourceExhaustedError``, ``MemoryError``);
        the checkpoints written before are complete (each is written atomically).
      ValueError: ``config.recompute_grad`` and ``model`` holds no encoder to recompute.
    """
    strategy = strategy or tf.distribute.get_strategy()
    if config.recompute_grad and not set_recompute_grad(model, True):
        raise ValueError(f"recompute_grad: {model.name} holds no encoder with transformer "
                         f"blocks to recompute")
    if optimizer is None:
        with strategy.scope():
            optimizer = config.create_optimizer(name_map)
    state = TrainState.build(model, name_map, optimizer, strategy)
    chief = is_chief(strategy)
    if chief:
        remove_stale_temp_files(config.output_dir, config.basename)
    start = restore_or_warm_start(state, config.output_dir, config.init_checkpoint,
                                  config.basename, warm_started=config.warm_started,
                                  allow_partial=config.allow_partial_init_checkpoint,
                                  preloaded=config.warm_start)
    step, last_step = state.global_step, config.last_step
    latest, last_loss = start.resumed_from, None
    if step >= last_step:
        logging.info("global_step=%d >= %d: nothing to train", step, last_step)
        return TrainResult(step, latest, start.resumed_from, start.warm_start, None)

    accumulation = config.gradient_accumulation_steps
    iterator = distributed_iterator(strategy, dataset, skip=step * accumulation)
    with strategy.scope():
        run_steps = TrainStep(model, loss_fn, optimizer, strategy, accumulation, config.use_xla)
    saves = Cadence(config.save_checkpoints_steps, step, last_step)
    progress = ProgressLog(config.log_every_n_steps, step, last_step, run_steps.scaled)
    summary_steps = Cadence(config.log_every_n_steps, step, last_step)  # save_summary_steps
    summaries = TrainSummaries((config.summary_dir or config.output_dir)
                               if config.write_summaries else None,
                               config.loss_summary, optimizer, chief, step)
    bar = ProgressReporter("train", last_step, "steps", start=step)
    saved_step = step  # the step of the newest checkpoint (or of the warm start: step 0)
    logging.info("***** Running training from global_step %d to %d *****", step, last_step)
    # A SIGTERM or Ctrl-C during a call of run_steps cuts the call short after the running
    # update (bert_tf.stop_requests, TrainStep.request_stop) and the signal's handler ends the
    # run as soon as it returns (run_main: exit 143 / 130), the checkpoints written before
    # intact: the run no longer finishes the call first (up to steps_per_loop updates, tens of
    # seconds). Where the handler returns instead, the request is cleared and training goes on.
    try:
        with stop_requests.while_watching(run_steps.request_stop):
            while step < last_step:
                n = min(last_step, saves.next_step, progress.next_step,
                        step + config.steps_per_loop, bar.next_count)
                loss, examples = run_steps(iterator, n - step)
                if run_steps.stop_requested():  # (the handler did not end the run)
                    run_steps.clear_stop()
                    if state.global_step == step:
                        continue
                last_loss = float(loss.numpy())
                chunk_examples = int(examples.numpy())
                step = progress.update(state.global_step, last_loss, chunk_examples)
                summaries.write(step, last_loss, chunk_examples, due=summary_steps.due(step))
                bar.update(step, chunk_examples)
                if saves.due(step):
                    check_finite_before_save(state.variables, step, latest, config.basename)
                    latest = save_checkpoint(state.variables, config.output_dir, step,
                                             config.keep_checkpoint_max, config.basename,
                                             chief=chief)
                    saved_step = step
    except (tf.errors.ResourceExhaustedError, MemoryError) as e:
        raise OutOfMemoryError(out_of_memory_message(config, step, latest, e)) from None
    except (KeyboardInterrupt, SystemExit, RuntimeError) as e:
        stop = stop_requests.signal_exit_of(e)  # Ctrl-C, SIGTERM (also inside TF's C++)
        if stop is None:
            raise
        _save_on_stop(state, config, saved_step, latest, chief)
        if stop is e:
            raise
        raise stop from None
    bar.finish()
    return TrainResult(step, latest, start.resumed_from, start.warm_start, last_loss)


def _save_on_stop(state: TrainState, config: TrainConfig, saved_step: int,
                  latest: Optional[str], chief: bool) -> None:
    """Ctrl-C or SIGTERM (bert_tf, beyond the originals, whose Estimator lost the steps since
    its last checkpoint): the loop stops between updates (:mod:`bert_tf.stop_requests`), so
    the variables are those of ``global_step``; unless that step is already saved, write
    ``<basename>-<global_step>`` as a due checkpoint is written (atomically; another Ctrl-C
    or SIGTERM waits for it: a new user's second Ctrl-C lost the save), so that a rerun
    resumes there. Not written, with a warning, when a value is not finite."""
    step = int(state.global_step)
    if step <= saved_step:
        return
    try:
        check_finite_before_save(state.variables, step, latest, config.basename)
    except NanLossError as e:
        logging.warning("stopping: %s", e)
        return
    if chief:
        logging.warning("stopping at global_step %d: saving %s-%d first (another Ctrl-C or "
                        "SIGTERM waits for it)", step, config.basename, step)
    with stop_requests.signals_deferred():
        path = save_checkpoint(state.variables, config.output_dir, step,
                               config.keep_checkpoint_max, config.basename, chief=chief)
    if chief:
        logging.warning("stopping at global_step %d: saved %s (a rerun resumes from it)", step,
                        path)


def out_of_memory_message(config: TrainConfig, step: int, latest: Optional[str],
                          error: BaseException) -> str:
    """The one line of :class:`OutOfMemoryError`: batch size, accumulation, global step, the
    error's first line, the levers (``config.memory_levers``) and the last checkpoint."""
    lines = [l.strip() for l in (getattr(error, "message", None) or str(error)).splitlines()
             if l.strip()]
    # a traced step's message starts "Graph execution error:" and the trace; the
    # allocator's line names the tensor
    detail = next((l for l in lines if "OOM" in l or "alloc" in l.lower()),
                  lines[0] if lines else type(error).__name__)
    batch = ("" if config.train_batch_size is None
             else f" with --train_batch_size={config.train_batch_size}")
    if config.gradient_accumulation_steps > 1:
        batch += f" and --gradient_accumulation_steps={config.gradient_accumulation_steps}"
    kept = (f"the last checkpoint, {latest}, is intact (a rerun resumes from it)" if latest
            else "no checkpoint was written yet")
    return (f"out of memory training{batch} at global_step {step} ({detail}); to train in "
            f"less memory use {config.memory_levers}; {kept}")


class ProgressLog:
    """The progress lines of :func:`train` and its divergence checks.

    Logs ``global_step = N, loss = L, examples/sec = E, global_step/sec = S`` (the
    Estimator's ``LoggingTensorHook`` / ``StepCounterHook`` lines, speeds over the window since
    the last line) when :class:`Cadence` ``(every, start_step, last_step)`` is due. Raises
    :class:`NanLossError` on a NaN/inf loss (the Estimator's ``NanTensorHook``) unless
    ``scaled`` (dynamic loss scaling skips such updates itself), and after 100 calls in a row
    that made no update.

    Args:
      every: log every this many updates (int >= 1).
      start_step, last_step: the global steps training runs from and to (int).
      scaled: the optimizer is a ``LossScaleOptimizer`` (bool).
    """

    def __init__(self, every: int, start_step: int, last_step: int, scaled: bool):
        self.logs = Cadence(every, start_step, last_step)
        self.step, self.scaled, self.stalled_chunks = start_step, scaled, 0
        self._restart_window()

    @property
    def next_step(self) -> int:
        return self.logs.next_step

    def _restart_window(self):
        self.window_start, self.window_examples, self.window_steps = time.time(), 0, 0

    def update(self, new_step: int, loss: float, examples: int) -> int:
        """Records a call that ended at ``new_step`` with mean ``loss`` (float) over
        ``examples`` examples (int); logs when due; returns ``new_step``.

        Raises:
          NanLossError: see the class.
        """
        self.window_examples += examples
        self.window_steps += new_step - self.step
        if not self.scaled and not math.isfinite(loss):
            raise NanLossError(f"loss is {loss} at global_step {new_step}: training "
                               f"diverged (lower --learning_rate?)")
        self.stalled_chunks = self.stalled_chunks + 1 if new_step == self.step else 0
        if self.stalled_chunks >= 100:
            raise NanLossError(f"no optimizer update in the last 100 calls at global_step "
                               f"{new_step}: every gradient was non-finite (loss {loss})")
        self.step = new_step
        if self.logs.due(new_step):
            elapsed = max(time.time() - self.window_start, 1e-9)
            logging.info("global_step = %d, loss = %.6f, examples/sec = %.1f, "
                         "global_step/sec = %.3f", new_step, loss,
                         self.window_examples / elapsed, self.window_steps / elapsed)
            self._restart_window()
        return new_step
