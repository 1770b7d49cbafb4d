"""XLNet fine-tuning setup, written once for the classifier, SQuAD and RACE tasks (the role of
the original XLNet ``model_utils.py``: ``init_from_checkpoint``, ``get_train_op``; spec
``xlnet.md`` 8.4, 9.5, 10).

One training run of an XLNet task: the global batch of ``--train_batch_size``
(:func:`global_train_batch_size`), the warm start from an XLNet checkpoint unless
``--model_dir`` already holds checkpoints (:func:`warm_start`), the original optimizer (TF1
Adam or AdamW with XLNet's warmup + decay schedule and layer-wise learning-rate decay
``--lr_layer_decay_rate``, :func:`create_optimizer`) built under the strategy, and the
training loop with the original checkpoint cadence (``--iterations``, ``--save_steps``,
``--max_save``; :func:`train_config`). :func:`train_with_xlnet_optimizer` runs them in that
order; SQuAD calls the steps itself to name its record files on a read error.

``args`` below is the run's flags (:class:`bert_tf.xlnet.tasks.classifier.XLNetClassifierArgs`,
``...squad.XLNetSquadArgs``, ``...race.XLNetRaceArgs``): ``learning_rate``, ``train_steps``,
``warmup_steps``, ``decay_method``, ``min_lr_ratio``, ``weight_decay``, ``adam_epsilon``,
``clip``, ``lr_layer_decay_rate``, ``iterations``, ``save_steps``, ``max_save``,
``model_dir``, ``train_batch_size``, ``use_tpu``.
"""

from typing import Optional

import tensorflow as tf
from absl import logging

from bert_tf.checkpoint_checks import check_finite_values, check_warm_start
from bert_tf.training import loop
from bert_tf.training.restore import build_for_training
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.optimization import create_xlnet_optimizer


def global_train_batch_size(args, strategy: tf.distribute.Strategy) -> int:
    """The batch the training input pipeline yields: ``--train_batch_size`` with
    ``--use_tpu``, else ``--train_batch_size`` per replica times the replicas of
    ``strategy``."""
    replicas = strategy.num_replicas_in_sync
    return args.train_batch_size if args.use_tpu else args.train_batch_size * replicas


def warm_start(name_map, init_checkpoint: Optional[str], config, resume: bool,
               model_dir: str, log_checkpoint_name: bool = False,
               allow_partial: bool = False):
    """Loads ``init_checkpoint`` into the model before training unless ``resume``
    (``--model_dir`` already holds checkpoints: then it is ignored, said in one line); logs
    ``Warm start: <report>`` (``Warm start from <checkpoint>: <report>`` with
    ``log_checkpoint_name``, SQuAD's line).

    Args:
      name_map: the model's original name -> variable; config: the XLNet config
        (``untie_r``); model_dir: ``--model_dir``, for the message.

    Returns:
      the LoadReport of ``init_checkpoint``, or None (nothing loaded).

    Raises:
      CheckpointError: an init checkpoint that does not fit, holds a non-finite value, or
        lacks encoder variables without ``allow_partial``
        (:mod:`bert_tf.checkpoint_checks`).
    """
    report = None
    if init_checkpoint and not resume:
        report = checkpoint_map.load_xlnet_checkpoint(name_map, init_checkpoint,
                                                      untie_r=config.untie_r)
        check_finite_values(name_map, report.loaded, report.prefix)
        check_warm_start(report, allow_partial)
        if log_checkpoint_name:
            logging.info("Warm start from %s: %s", init_checkpoint, report.summary())
        else:
            logging.info("Warm start: %s", report.summary())
    elif init_checkpoint:
        logging.info("--init_checkpoint=%s is ignored: %s already holds checkpoints "
                     "(training resumes)", init_checkpoint, model_dir)
    # else: loop.train says it trains from scratch (one warning line for every task)
    return report


def build_warm_started(build, init_checkpoint: Optional[str], config, args,
                       strategy: tf.distribute.Strategy, log_checkpoint_name: bool = False):
    """The training model, built empty and created from ``init_checkpoint`` by
    :func:`warm_start` when the run starts from it (``--model_dir`` holds no checkpoint;
    :func:`bert_tf.training.restore.build_for_training`, issue 24), else built plainly.

    Args:
      build: ``() -> model`` (creates its weights under ``strategy``); init_checkpoint,
        config, log_checkpoint_name: as :func:`warm_start`; args: the flags (``model_dir``,
        ``allow_partial_init_checkpoint``).

    Returns:
      ``(model, LoadReport or None)``: give the report to :func:`train_with_xlnet_optimizer`
      (``warm``) so that nothing is loaded twice.

    Raises:
      CheckpointError: as :func:`warm_start`.
    """
    return build_for_training(
        build, lambda model: warm_start(
            checkpoint_map.xlnet_variable_map(model), init_checkpoint, config, False,
            args.model_dir, log_checkpoint_name, args.allow_partial_init_checkpoint),
        args.model_dir, init_checkpoint, strategy)


def create_optimizer(args, strategy: tf.distribute.Strategy, name_map):
    """XLNet's optimizer (:func:`bert_tf.xlnet.optimization.create_xlnet_optimizer`: the
    original ``model_utils.get_train_op``), its variables created under ``strategy``; the
    layer-wise decay finds each variable's layer by its original name (``name_map``)."""
    with strategy.scope():
        optimizer, _ = create_xlnet_optimizer(
            args.learning_rate, args.train_steps, args.warmup_steps, args.decay_method,
            args.min_lr_ratio, args.weight_decay, args.adam_epsilon, args.clip,
            args.lr_layer_decay_rate, variable_names=name_map)
    return optimizer


# What XLNet's fine-tuning scripts offer to train in less memory (loop.OutOfMemoryError).
XLNET_MEMORY_LEVERS = ("--recompute_grad, --use_bfloat16, a smaller --train_batch_size, a "
                       "shorter --max_seq_length")


def train_config(args, warm_started: bool) -> loop.TrainConfig:
    """The loop's settings: ``--train_steps`` into ``--model_dir``, a checkpoint every
    ``--save_steps`` (none between when unset), ``--max_save`` kept (0: all), host loops of
    ``min(--iterations, --save_steps)`` steps, a log line every ``min(100, loop)`` steps."""
    steps_per_loop = args.iterations if args.save_steps is None else min(
        args.iterations, args.save_steps)
    return loop.TrainConfig(
        args.model_dir, args.train_steps, save_checkpoints_steps=args.save_steps or 0,
        keep_checkpoint_max=args.max_save or 2 ** 31 - 1,
        log_every_n_steps=min(100, steps_per_loop), steps_per_loop=steps_per_loop,
        warm_started=warm_started, recompute_grad=args.recompute_grad,
        train_batch_size=args.train_batch_size, memory_levers=XLNET_MEMORY_LEVERS)


def task_loss(m, features, labels):
    """The training loss of a model with ``task_loss`` (the classifier's, RACE's): its call's
    ``logits`` float32 ``[B, ...]`` into ``task_loss(logits, labels)[1]``, the float32 scalar
    mean loss."""
    logits = m(features, training=True)["logits"]
    return m.task_loss(logits, labels)[1]


def train_with_xlnet_optimizer(model, name_map, dataset, args, strategy, config,
                               init_checkpoint: Optional[str], resume: bool,
                               loss_fn=task_loss, warm=None):
    """Warm start (unless resuming), XLNet's optimizer and the training loop of an XLNet
    fine-tuning task (the original ``run_classifier.py`` / ``run_race.py`` ``train`` with
    ``model_utils.get_train_op``, spec 8.4 and 10).

    Args:
      model: a built model; name_map: its original name -> variable.
      dataset: the training ``tf.data.Dataset`` of ``(features, labels)`` batches.
      args: the flags (module docstring).
      strategy: the strategy the model was built under; config: the XLNet config
        (``untie_r``).
      init_checkpoint: loaded before training unless ``resume`` (``--model_dir`` already holds
        checkpoints: then it is ignored, said in one line).
      loss_fn: ``loss_fn(model, features, labels)`` -> float32 scalar; default
        :func:`task_loss`.
      warm: the LoadReport of the warm start done when the model was built
        (:func:`build_warm_started`): nothing is loaded here then.

    Returns:
      ``(TrainResult, LoadReport of init_checkpoint or None)``.

    Raises:
      CheckpointError: an init checkpoint that does not fit. NanLossError: diverged.
    """
    report = warm or warm_start(name_map, init_checkpoint, config, resume, args.model_dir,
                                allow_partial=args.allow_partial_init_checkpoint)
    optimizer = create_optimizer(args, strategy, name_map)
    train = loop.train(model, loss_fn, dataset, name_map,
                       train_config(args, warm_started=bool(init_checkpoint)),
                       strategy=strategy, optimizer=optimizer)
    return train, report
