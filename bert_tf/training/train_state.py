"""What a training checkpoint holds, and where a run starts from (spec `bert.md` 3.3, 3.4).

* :class:`TrainState`: the model's variables by original name, their two Adam slots
  (``<name>/adam_m``, ``<name>/adam_v``) and ``global_step`` (the optimizer's ``iterations``),
  checked against the model and the strategy;
* :func:`restore_or_warm_start`: resume EVERYTHING from the newest ``model.ckpt-N`` of the
  output folder, else warm-start the trainable variables from ``init_checkpoint``, else start
  fresh, as the Estimator did.
"""

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

import keras
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.checkpoint_checks import check_finite_values
from bert_tf.errors import CheckpointError
from bert_tf.training import restore
from bert_tf.training.optimizer import AdamWeightDecay, inner_optimizer


@dataclass
class TrainState:
    """The variables of a training run, by the name they have in an original checkpoint.

    Build it with :meth:`build`.

    Attributes:
      name_map: original name -> model variable (the family's checkpoint map).
      trainable: the model's trainable variables (list, in ``model.trainable_variables``
        order).
      adam: the :class:`AdamWeightDecay` (inside a ``LossScaleOptimizer`` or not); its
        ``iterations`` is the global step.
      variables: what a checkpoint holds: ``name_map``, then each trainable variable's
        ``<name>/adam_m`` and ``<name>/adam_v`` (float32, the variable's shape), then
        ``global_step`` (the int64 scalar ``adam.iterations``); spec 3.3.
    """

    name_map: Mapping[str, Any]
    trainable: List[Any]
    adam: AdamWeightDecay
    variables: Dict[str, Any]

    @classmethod
    def build(cls, model: keras.Model, name_map: Mapping[str, Any],
              optimizer: keras.optimizers.Optimizer,
              strategy: tf.distribute.Strategy) -> "TrainState":
        """Checks the model and optimizer, creates the slots, collects the variables.

        Args:
          model: a built Keras model whose variables were created under ``strategy.scope()``.
          name_map: original name -> variable; every trainable variable must be in it.
          optimizer: an :class:`AdamWeightDecay` or a ``LossScaleOptimizer`` around one,
            created under ``strategy.scope()``. Its slot names come from ``name_map`` unless
            it was built or given names before.
          strategy: the ``tf.distribute`` strategy of the run.

        Raises:
          ValueError: the model has no variables, the optimizer is not AdamWeightDecay, a
            trainable variable is missing from ``name_map`` (names it), or a variable was not
            created under ``strategy.scope()`` (names it).
        """
        if not model.variables:
            raise ValueError("train(): the model has no variables; build it (call it once on "
                             "inputs) under strategy.scope() first")
        trainable = list(model.trainable_variables)
        with strategy.scope():
            adam = inner_optimizer(optimizer)
            if not isinstance(adam, AdamWeightDecay):
                raise ValueError(f"train(): the optimizer must be AdamWeightDecay (or a "
                                 f"LossScaleOptimizer around one) to save original slots, got "
                                 f"{type(adam).__name__}")
            if not adam.built and adam.variable_names is None:
                adam.set_variable_names(name_map)
            _check_variables(strategy, adam, trainable, name_map, model)
            optimizer.build(trainable)
        variables = dict(name_map)
        variables.update(adam.slot_variables())
        variables[checkpoint_io.GLOBAL_STEP] = adam.iterations
        return cls(name_map, trainable, adam, variables)

    @property
    def global_step(self) -> int:
        """Optimizer updates done so far (``adam.iterations``, int)."""
        return int(self.adam.iterations.numpy())

    def trainable_by_name(self) -> Dict[str, Any]:
        """The entries of ``name_map`` that are trainable variables (original name -> var)."""
        keys = {self.adam.variable_key(v) for v in self.trainable}
        return {n: v for n, v in self.name_map.items() if self.adam.variable_key(v) in keys}


@dataclass
class StartingPoint:
    """Where a run started: :func:`restore_or_warm_start`'s answer.

    Attributes:
      resumed_from: the ``output_dir`` checkpoint prefix restored, or None.
      warm_start: the :class:`checkpoint_io.LoadReport` of ``init_checkpoint``, or None.
    """

    resumed_from: Optional[str]
    warm_start: Optional[checkpoint_io.LoadReport]


def restore_or_warm_start(state: TrainState, output_dir: str,
                          init_checkpoint: Optional[str] = None,
                          basename: str = "model.ckpt",
                          warm_started: bool = False,
                          allow_partial: bool = False,
                          preloaded: Optional[checkpoint_io.LoadReport] = None) -> StartingPoint:
    """Resumes from ``output_dir``, else warm-starts from ``init_checkpoint``, else nothing.

    Spec 3.4, the Estimator's rules:

    * ``output_dir`` holds ``<basename>-N`` bundles: the newest is restored entirely (every
      entry of ``state.variables``: weights, Adam slots, ``global_step``), and
      ``init_checkpoint`` is ignored (not even opened);
    * else, with ``init_checkpoint``: the trainable variables found in it are assigned (no
      slots, no ``global_step``; missing and unused names are reported); ``preloaded``: the
      report of that warm start, done when the model was built from it
      (:func:`bert_tf.training.restore.build_from_checkpoint`), not read again;
    * else the variables keep their initial values (one warning line: training from
      scratch, unless ``warm_started``: the caller loaded them, as the XLNet tasks do).

    An ``init_checkpoint`` holding none of the trainable variables (not even with one common
    prefix mapped, :func:`bert_tf.checkpoint_io.map_names`) is an error, never a silent
    start from random weights (the original's behaviour, google-research/bert#394).

    Then each trainable variable is logged as ``name = <name>, shape = (..)`` with
    ``, *INIT_FROM_CKPT*`` when it was warm-started.

    Returns:
      A :class:`StartingPoint`.

    bert_tf, beyond the original (:mod:`bert_tf.checkpoint_checks`): a checkpoint value that
    is NaN or infinite is an error naming the variable; a warm start that leaves encoder
    variables at their initial values is an error unless ``allow_partial``
    (``--allow_partial_init_checkpoint``).

    Raises:
      CheckpointError: the checkpoint is unreadable, ``init_checkpoint`` holds none of the
        model's variables (or, without ``allow_partial``, not all its encoder variables),
        a value is not finite, or a variable is missing from the
        ``output_dir`` checkpoint, or has another shape (names the variable and both shapes).
    """
    resumed_from, warm_start = None, None
    existing = checkpoint_io.existing_checkpoints(output_dir, basename) if tf.io.gfile.isdir(
        output_dir) else []
    if existing:
        resumed_from = existing[-1]
        try:
            report = checkpoint_io.assign_from_checkpoint(state.variables, resumed_from,
                                                          require_all=True)
        except CheckpointError as e:
            raise CheckpointError(f"{e}; {_resume_hint(existing, output_dir)}") from e
        check_finite_values(state.variables, report.loaded, report.prefix)
        logging.info("Restored weights, optimizer slots and global_step=%d from %s",
                     state.global_step, resumed_from)
        if init_checkpoint:
            logging.info("init_checkpoint=%s is ignored: %s already holds a checkpoint",
                         init_checkpoint, output_dir)
    elif preloaded is not None:  # built from init_checkpoint: checked and logged then
        warm_start = preloaded
    elif init_checkpoint:
        warm_start = restore.warm_start(state.trainable_by_name(), init_checkpoint,
                                        allow_partial)
    elif not warm_started:
        logging.warning("no checkpoint in %s and no --init_checkpoint: training starts from "
                        "randomly initialized weights (from scratch)", output_dir)
    _log_trainable_variables(state, set(warm_start.loaded) if warm_start else set())
    return StartingPoint(resumed_from, warm_start)


def _is_readable(prefix: str) -> bool:
    """Whether every tensor of the checkpoint ``prefix`` reads back (one at a time)."""
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except Exception:  # noqa: BLE001 (OpError, IndexError "Read less bytes", ...): unreadable
        return False
    return True


def _resume_hint(existing: List[str], output_dir: str) -> str:
    """What to do when the newest of ``existing`` (prefixes sorted by step) cannot be
    resumed: the newest earlier one that reads back, and how to resume from it."""
    newest = os.path.basename(existing[-1])
    for prefix in reversed(existing[:-1]):
        if _is_readable(prefix):
            return (f"the checkpoint before it, {prefix}, reads back: move {newest}.* out of "
                    f"{output_dir} and rerun to resume from it")
    return (f"no earlier checkpoint in {output_dir} reads back: move {newest}.* out of it to "
            "start again (from --init_checkpoint if given)")


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


def _log_trainable_variables(state: TrainState, loaded) -> None:
    by_key = {}
    for name, var in state.name_map.items():
        by_key.setdefault(state.adam.variable_key(var), name)
    logging.info("**** Trainable Variables ****")
    for v in state.trainable:
        name = by_key.get(state.adam.variable_key(v), getattr(v, "path", v.name))
        logging.info("  name = %s, shape = %s%s", name, tuple(v.shape),
                     ", *INIT_FROM_CKPT*" if name in loaded else "")
