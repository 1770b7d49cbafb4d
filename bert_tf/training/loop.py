"""Custom training loop that writes and resumes original-layout checkpoints.

Replaces ``TPUEstimator.train`` of the original scripts (spec `bert.md` sections 3.3, 3.4,
6.3, 7.1). Given a built Keras model, its checkpoint map (original name -> variable), a loss
function and a dataset, :func:`train`:

* on start, restores EVERYTHING (weights, ``<name>/adam_m``, ``<name>/adam_v``,
  ``global_step``) from the newest ``<output_dir>/model.ckpt-N`` if there is one, and then
  ignores ``init_checkpoint`` (spec 3.4); otherwise warm-starts the trainable variables found
  in ``init_checkpoint`` (no slots, no global_step) and logs each trainable variable as the
  original (``name = ..., shape = ...[, *INIT_FROM_CKPT*]``);
* runs ``num_train_steps`` optimizer updates of :class:`AdamWeightDecay` with the original
  schedule and clipping (``create_optimizer``), each a ``tf.function`` under the strategy
  (forward/backward optionally XLA-compiled);
* every ``save_checkpoints_steps`` updates and at the end writes ``model.ckpt-<step>``
  (model variables by original name, their two Adam slots, int64 ``global_step``) atomically
  through :mod:`bert_tf.training.checkpoint_io`, updates the ``checkpoint`` state file and
  keeps the newest ``keep_checkpoint_max`` (5, the Estimator default);
* logs ``global_step``, ``loss`` and ``examples/sec`` every ``log_every_n_steps`` updates.

Data on resume: the dataset is repeated forever (as the original training input functions
do) and, on resume, the first ``global_step * gradient_accumulation_steps`` batches are
skipped, so an uninterrupted run and a killed-and-resumed run see the same batches when the
dataset's order is deterministic. (The Estimator restarted the input pipeline from the
beginning instead.) With float16 loss scaling a skipped (non-finite) update consumes batches
without advancing ``global_step``, so the skip is then approximate.
"""

import functools
import math
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.errors import BertTfError
from bert_tf.training import checkpoint_io
from bert_tf.training.optimizer import AdamWeightDecay, create_optimizer, inner_optimizer

DatasetOrFn = Union[tf.data.Dataset, Callable[[tf.distribute.InputContext], tf.data.Dataset]]


class NanLossError(BertTfError):
    """The training loss became NaN or infinite (as the Estimator's NanTensorHook)."""


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


def train(model: keras.Model,
          loss_fn: Callable[[keras.Model, Any, Any], tf.Tensor],
          dataset: DatasetOrFn,
          name_map: Mapping[str, Any],
          output_dir: str,
          num_train_steps: int,
          *,
          learning_rate: float = 5e-5,
          num_warmup_steps: int = 0,
          weight_decay_rate: float = 0.01,
          optimizer: Optional[keras.optimizers.Optimizer] = None,
          init_checkpoint: Optional[str] = None,
          save_checkpoints_steps: int = 1000,
          keep_checkpoint_max: int = 5,
          log_every_n_steps: int = 100,
          steps_per_loop: int = 1,
          stop_at_step: Optional[int] = None,
          strategy: Optional[tf.distribute.Strategy] = None,
          use_xla: bool = False,
          gradient_accumulation_steps: int = 1,
          loss_scale: bool = False,
          basename: str = "model.ckpt") -> TrainResult:
    """Trains ``model`` and writes original-layout checkpoints to ``output_dir``.

    Args:
      model: a built Keras model whose variables were created under ``strategy.scope()``.
      loss_fn: ``loss_fn(model, features, labels) -> loss``: the mean loss of the replica's
        batch (float scalar; a vector is averaged). It calls ``model(..., training=True)``.
        The loop divides it by the number of replicas, as the original's CrossShardOptimizer.
      dataset: a ``tf.data.Dataset`` of ``(features, labels)`` batched with the GLOBAL batch
        size (split across replicas), or a function ``input_context -> dataset`` batched
        per replica (``strategy.distribute_datasets_from_function``). An element that is not a
        2-tuple is passed as ``features`` with ``labels=None``. Repeated forever here.
      name_map: original name -> variable (the family's checkpoint map). Every trainable
        variable of ``model`` must be in it; every entry is saved.
      output_dir: where ``model.ckpt-N`` and ``checkpoint`` go (created).
      num_train_steps: optimizer updates in total (also the decay length of the schedule).
      learning_rate, num_warmup_steps, weight_decay_rate: for :func:`create_optimizer` when
        ``optimizer`` is None.
      optimizer: an :class:`AdamWeightDecay` (or a ``LossScaleOptimizer`` around one), created
        under ``strategy.scope()``; its ``iterations`` is the global step.
      init_checkpoint: warm start (trainable variables only) when ``output_dir`` holds no
        checkpoint.
      save_checkpoints_steps: save every this many updates (and at the end); <= 0: at the end
        only.
      keep_checkpoint_max: newest checkpoints kept (older ones are deleted).
      log_every_n_steps: log loss and speed every this many updates.
      steps_per_loop: updates run inside one ``tf.function`` call (``iterations_per_loop``).
      stop_at_step: stop (and save) at this global step, below ``num_train_steps``
        (Estimator's ``max_steps``); the schedule still uses ``num_train_steps``.
      strategy: the ``tf.distribute`` strategy (default: the current one).
      use_xla: compile the forward and backward pass with XLA (``jit_compile=True``).
      gradient_accumulation_steps: batches whose gradients are averaged per update (each
        update consumes this many batches).
      loss_scale: dynamic loss scaling (float16 compute) via ``keras.optimizers.
        LossScaleOptimizer`` when ``optimizer`` is None. The scale is not checkpointed.
      basename: checkpoint basename (``model.ckpt``).

    Returns:
      A :class:`TrainResult`.

    Raises:
      ValueError: the model has no variables, a trainable variable is missing from
        ``name_map``, a variable or the optimizer was not created under ``strategy.scope()``,
        bad step arguments, or an optimizer that is not AdamWeightDecay.
      CheckpointError: ``init_checkpoint`` or the ``output_dir`` checkpoint is unreadable or
        does not fit the model (names the variable and shapes), or ``output_dir`` is not
        writable.
      NanLossError: the loss became NaN/inf (without loss scaling).
    """
    strategy = strategy or tf.distribute.get_strategy()
    accumulation = int(gradient_accumulation_steps or 1)
    if accumulation < 1:
        raise ValueError(f"gradient_accumulation_steps must be >= 1, got {accumulation}")
    if int(num_train_steps) <= 0:
        raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
    num_train_steps = int(num_train_steps)
    last_step = num_train_steps if stop_at_step is None else min(int(stop_at_step),
                                                                  num_train_steps)
    steps_per_loop = max(1, int(steps_per_loop))
    log_every_n_steps = max(1, int(log_every_n_steps))
    trainable = list(model.trainable_variables)
    if not model.variables:
        raise ValueError("train(): the model has no variables; build it (call it once on "
                         "inputs) under strategy.scope() first")

    with strategy.scope():
        if optimizer is None:
            optimizer, _ = create_optimizer(learning_rate, num_train_steps, num_warmup_steps,
                                            weight_decay_rate=weight_decay_rate,
                                            variable_names=name_map, loss_scale=loss_scale)
        adam = inner_optimizer(optimizer)
        if not isinstance(adam, AdamWeightDecay):
            raise ValueError(f"train(): the optimizer must be AdamWeightDecay (or a "
                             f"LossScaleOptimizer around one) to save original slots, got "
                             f"{type(adam).__name__}")
        if not adam.built and adam.variable_names is None:
            adam.set_variable_names(name_map)
        _check_variables(strategy, adam, trainable, name_map, model)
        optimizer.build(trainable)
        accumulators = []
        if accumulation > 1:
            accumulators = [tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                                        synchronization=tf.VariableSynchronization.ON_READ,
                                        aggregation=tf.VariableAggregation.SUM,
                                        name="gradient_accumulator")
                            for v in trainable]

    state = dict(name_map)
    state.update(adam.slot_variables())
    state[checkpoint_io.GLOBAL_STEP] = adam.iterations
    chief = _is_chief(strategy)
    if chief:
        _remove_stale_temp_files(output_dir, basename)

    # ---- restore or warm start (spec 3.4) -------------------------------------------------
    resumed_from = None
    warm_start = None
    existing = checkpoint_io.existing_checkpoints(output_dir, basename) if tf.io.gfile.isdir(
        output_dir) else []
    if existing:
        resumed_from = existing[-1]
        checkpoint_io.assign_from_checkpoint(state, resumed_from, require_all=True)
        logging.info("Restored weights, optimizer slots and global_step=%d from %s",
                     int(adam.iterations.numpy()), resumed_from)
        if init_checkpoint:
            logging.info("init_checkpoint=%s is ignored: %s already holds a checkpoint",
                         init_checkpoint, output_dir)
    elif init_checkpoint:
        trainable_keys = {adam.variable_key(v) for v in trainable}
        to_load = {n: v for n, v in name_map.items() if adam.variable_key(v) in trainable_keys}
        warm_start = checkpoint_io.assign_from_checkpoint(to_load, init_checkpoint)
        logging.info("Warm start: %s", warm_start.summary())
    _log_trainable_variables(name_map, trainable, adam,
                             set(warm_start.loaded) if warm_start else set())

    step = int(adam.iterations.numpy())
    latest = resumed_from
    if step >= last_step:
        logging.info("global_step=%d >= %d: nothing to train", step, last_step)
        return TrainResult(step, latest, resumed_from, warm_start, None)

    # ---- data -----------------------------------------------------------------------------
    skip = step * accumulation
    if callable(dataset) and not isinstance(dataset, tf.data.Dataset):
        dataset_fn = dataset
        dist_dataset = strategy.distribute_datasets_from_function(
            lambda ctx: dataset_fn(ctx).repeat().skip(skip))
    else:
        dist_dataset = strategy.experimental_distribute_dataset(dataset.repeat().skip(skip))
    if skip:
        logging.info("Skipping the first %d batches (already trained on)", skip)
    iterator = iter(dist_dataset)

    # ---- step functions --------------------------------------------------------------------
    num_replicas = strategy.num_replicas_in_sync
    scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

    def forward_backward(features, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(loss_fn(model, features, labels), tf.float32))
            replica_loss = loss / num_replicas
            if scaled:
                replica_loss = optimizer.scale_loss(replica_loss)
        grads = tape.gradient(replica_loss, trainable)
        return loss, grads

    if use_xla:
        forward_backward = tf.function(forward_backward, jit_compile=True)

    def micro_step(features, labels, apply):
        loss, grads = forward_backward(features, labels)
        if accumulation == 1:
            optimizer.apply(grads, trainable)
        elif not apply:
            for acc, g in zip(accumulators, grads):
                if g is not None:
                    acc.assign_add(tf.convert_to_tensor(g))
        else:
            grads = [None if g is None else (acc + tf.convert_to_tensor(g)) / accumulation
                     for acc, g in zip(accumulators, grads)]
            optimizer.apply(grads, trainable)
            for acc in accumulators:
                acc.assign(tf.zeros_like(acc))
        batch = tf.shape(tf.nest.flatten(features)[0])[0]
        return loss, batch

    @tf.function
    def train_steps(iterator, n):
        loss_sum = tf.constant(0.0)
        examples = tf.constant(0, tf.int32)
        for _ in tf.range(n):
            for j in range(accumulation):
                element = next(iterator)
                if isinstance(element, tuple) and len(element) == 2:
                    features, labels = element
                else:
                    features, labels = element, None
                fn = functools.partial(micro_step, apply=(j == accumulation - 1))
                loss, batch = strategy.run(fn, args=(features, labels))
                loss_sum += strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)
                examples += strategy.reduce(tf.distribute.ReduceOp.SUM, batch, axis=None)
        return loss_sum / tf.cast(n * accumulation, tf.float32), examples

    # ---- loop ------------------------------------------------------------------------------
    def next_multiple(s, every):
        return (s // every + 1) * every

    next_save = next_multiple(step, save_checkpoints_steps) if save_checkpoints_steps > 0 \
        else last_step
    next_log = next_multiple(step, log_every_n_steps)
    last_loss = None
    stalled_chunks = 0
    window_start, window_examples, window_steps = time.time(), 0, 0
    logging.info("***** Running training from global_step %d to %d *****", step, last_step)
    while step < last_step:
        n = min(last_step, next_save, next_log, step + steps_per_loop) - step
        loss, examples = train_steps(iterator, tf.constant(n, tf.int32))
        last_loss = float(loss.numpy())
        new_step = int(adam.iterations.numpy())
        window_examples += int(examples.numpy())
        window_steps += new_step - step
        if not scaled and not math.isfinite(last_loss):
            raise NanLossError(f"loss is {last_loss} at global_step {new_step}: training "
                               f"diverged (lower --learning_rate?)")
        stalled_chunks = stalled_chunks + 1 if new_step == step else 0
        if stalled_chunks >= 100:
            raise NanLossError(f"no optimizer update in the last 100 calls at global_step "
                               f"{new_step}: every gradient was non-finite (loss {last_loss})")
        step = new_step
        if step >= next_log or step >= last_step:
            elapsed = max(time.time() - window_start, 1e-9)
            logging.info("global_step = %d, loss = %.6f, examples/sec = %.1f, "
                         "global_step/sec = %.3f", step, last_loss, window_examples / elapsed,
                         window_steps / elapsed)
            window_start, window_examples, window_steps = time.time(), 0, 0
            next_log = next_multiple(step, log_every_n_steps)
        if step >= next_save or step >= last_step:
            latest = save_checkpoint(state, output_dir, step, keep_checkpoint_max, basename,
                                     chief=chief)
            if save_checkpoints_steps > 0:
                next_save = next_multiple(step, save_checkpoints_steps)
    return TrainResult(step, latest, resumed_from, warm_start, last_loss)


def loop_kwargs_from_flags(flags: Any) -> dict:
    """Keyword arguments of :func:`train` from the shared flag vocabulary (``bert_tf.flags``).

    Maps ``learning_rate``, ``init_checkpoint``, ``save_checkpoints_steps``,
    ``iterations_per_loop`` (-> ``steps_per_loop``), ``use_xla``,
    ``gradient_accumulation_steps`` and ``dtype`` (``float16`` -> ``loss_scale=True``; the
    model's layers must then use the ``mixed_float16`` policy). Flags that are not defined are
    left out, so :func:`train`'s defaults apply. ``num_train_steps`` and ``num_warmup_steps``
    are left to the task (run_classifier derives them from epochs and warmup_proportion).
    """
    def value(name):
        try:
            return getattr(flags, name)
        except AttributeError:
            return None

    out = {}
    for flag, kwarg in [("learning_rate", "learning_rate"), ("init_checkpoint", "init_checkpoint"),
                        ("save_checkpoints_steps", "save_checkpoints_steps"),
                        ("iterations_per_loop", "steps_per_loop"), ("use_xla", "use_xla"),
                        ("gradient_accumulation_steps", "gradient_accumulation_steps")]:
        v = value(flag)
        if v is not None:
            out[kwarg] = v
    dtype = value("dtype")
    if dtype is not None:
        out["loss_scale"] = dtype == "float16"
    return out


def save_checkpoint(state: Mapping[str, Any], output_dir: str, step: int,
                    keep_checkpoint_max: int = 5, basename: str = "model.ckpt",
                    chief: bool = True) -> str:
    """Writes ``<output_dir>/<basename>-<step>`` from ``state`` (original name -> variable).

    The bundle is written atomically (:func:`checkpoint_io.write_checkpoint`), then the
    ``checkpoint`` state file lists the newest ``keep_checkpoint_max`` bundles, then older
    bundles are deleted; a kill at any point leaves complete bundles only. Non-chief workers
    write nothing.

    Returns:
      The prefix written.

    Raises:
      CheckpointError: the folder is not writable.
    """
    prefix = os.path.join(output_dir, f"{basename}-{step}")
    if not chief:
        return prefix
    arrays = checkpoint_io.variables_to_arrays(state)
    arrays[checkpoint_io.GLOBAL_STEP] = np.asarray(arrays[checkpoint_io.GLOBAL_STEP], np.int64)
    checkpoint_io.write_checkpoint(prefix, arrays)
    kept = [p for p in checkpoint_io.existing_checkpoints(output_dir, basename)
            if checkpoint_io.checkpoint_step(p) <= step]
    keep = max(1, int(keep_checkpoint_max or 1))
    old, kept = kept[:-keep], kept[-keep:]
    checkpoint_io.write_state_file(output_dir, prefix, kept)
    for p in old:
        # Index first: a kill in between leaves data without index, which no reader lists.
        files = tf.io.gfile.glob(p + ".*")
        for f in sorted(files, key=lambda f: not f.endswith(".index")):
            tf.io.gfile.remove(f)
    logging.info("Saved checkpoint %s", prefix)
    return prefix


def _check_variables(strategy, adam, trainable, name_map, model):
    keys = {adam.variable_key(v) for v in name_map.values()}
    unnamed = [getattr(v, "path", v.name) for v in trainable if adam.variable_key(v) not in keys]
    if unnamed:
        raise ValueError(f"train(): trainable variables missing from the checkpoint name map "
                         f"(they would not be saved): {', '.join(unnamed)}")
    for v in list(model.variables) + [adam.iterations]:
        tf_var = v.value if isinstance(v, keras.Variable) else v
        if not strategy.extended.variable_created_in_scope(tf_var):
            raise ValueError(f"train(): variable {getattr(v, 'path', v.name)} was not created "
                             f"under strategy.scope(); build the model and optimizer there")


def _is_chief(strategy) -> bool:
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None) if resolver is not None else None
    if task_type in (None, "chief"):
        return True
    if task_type == "worker":
        cluster = resolver.cluster_spec().as_dict() if resolver is not None else {}
        return "chief" not in cluster and resolver.task_id == 0
    return False


def _remove_stale_temp_files(output_dir: str, basename: str) -> None:
    # Leftovers of a write killed before its renames (checkpoint_io's temporary prefixes).
    if not tf.io.gfile.isdir(output_dir):
        return
    for f in tf.io.gfile.glob(os.path.join(output_dir, f".tmp-*-{basename}-*")):
        logging.info("Removing a partial checkpoint file left by a killed run: %s", f)
        tf.io.gfile.remove(f)


def _log_trainable_variables(name_map, trainable, adam, loaded) -> None:
    by_key = {}
    for name, var in name_map.items():
        by_key.setdefault(adam.variable_key(var), name)
    logging.info("**** Trainable Variables ****")
    for v in trainable:
        name = by_key.get(adam.variable_key(v), getattr(v, "path", v.name))
        logging.info("  name = %s, shape = %s%s", name, tuple(v.shape),
                     ", *INIT_FROM_CKPT*" if name in loaded else "")
