"""ALBERT pre-training (masked LM + sentence order): the run behind
``python -m bert_tf.albert.run_pretraining`` and ``run_pretraining.py --albert_config_file=...``.

Mirrors the original google-research/albert@b772393 ``run_pretraining.py`` on BERT's
pre-training pieces (:mod:`bert_tf.run.pretraining`, :mod:`bert_tf.data.pretraining_records`)
and the shared training layer:

* flags and defaults are ALBERT's (:data:`bert_tf.flags.ALBERT_RUN_PRETRAINING`: ``--optimizer``
  lamb, ``--learning_rate`` 0.00176, ``--train_batch_size`` 4096, ``--do_train`` True, ...);
* the records are those of ALBERT's ``create_pretraining_data`` (``next_sentence_labels`` holds
  the sentence-order label; ``token_boundary`` is not read), checked as BERT's;
* the model is :class:`bert_tf.albert.pretrainer.AlbertPretrainer`; loss = masked LM +
  sentence order;
* the optimizer is :func:`bert_tf.albert.lamb.create_albert_optimizer` (LAMB or AdamW,
  ``--poly_power``, ``--start_warmup_step``), the loop :func:`bert_tf.training.loop.train`
  (``model.ckpt-N`` in the original layout: `bert/*`, `cls/*`, `*/adam_m`, `*/adam_v`,
  `global_step`; resumed after a kill);
* ``--init_checkpoint`` warm-starts through :func:`bert_tf.albert.checkpoint_map.
  load_albert_checkpoint` (``--init_from_group0``: groups k > 0 from group 0), which refuses a
  BERT checkpoint, naming the first variable that does not fit, before training;
* evaluation writes ``eval_results.txt`` with the original's keys: ``global_step``, ``loss``,
  ``masked_lm_accuracy``, ``masked_lm_loss``, ``sentence_order_accuracy``,
  ``sentence_order_loss``.

``--masked_lm_budget`` > 0 (on-the-fly masking) is refused in one line: the original's input
then reads only ``token_boundary`` and its ``model_fn`` fails on the missing
``masked_lm_positions`` (the online masking was never released).
"""

import functools
import time
from typing import Any, Dict, Optional

import tensorflow as tf
from absl import logging

from bert_tf.albert.checkpoint_map import load_albert_checkpoint
from bert_tf.albert.config import AlbertConfig
from bert_tf.bert.config import check_pair_segments
from bert_tf.albert.pretrainer import AlbertPretrainer
from bert_tf.bert.pretrainer import pretraining_loss_fn
from bert_tf.data.pretraining_record_checks import checked_input_files, record_errors_explained
from bert_tf.data.pretraining_records import input_fn_builder
from bert_tf.errors import FlagError
from bert_tf.run.pretraining import (NoModeError, PretrainingResult, check_sizes_and_steps,
                                     make_pretraining_output_dir, run_eval, step_in_output_dir)
from bert_tf.training import loop
from bert_tf.albert.lamb import create_albert_optimizer
from bert_tf.albert.tasks.args import AlbertPretrainingArgs
from bert_tf.training.precision import dtype_policy
from bert_tf.training.restore import build_for_inference, build_for_training, warm_start
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags

EVAL_KEYS = ("global_step", "loss", "masked_lm_accuracy", "masked_lm_loss",
             "sentence_order_accuracy", "sentence_order_loss")


def albert_eval_metrics(metrics: Dict[str, Any]) -> Dict[str, Any]:
    """BERT's six eval values (:func:`bert_tf.run.pretraining.evaluate`) under ALBERT's keys
    (``next_sentence_*`` -> ``sentence_order_*``)."""
    return {k.replace("next_sentence_", "sentence_order_"): v for k, v in metrics.items()}


def check_args(args: AlbertPretrainingArgs) -> AlbertConfig:
    """Flag checks before anything is built; returns the config.

    Raises:
      NoModeError: neither ``do_train`` nor ``do_eval``. FlagError: a missing flag, a
        sequence longer than the config allows, a non-positive size or step count, a
        negative ``--poly_power`` or ``--start_warmup_step`` (the original took them).
      ConfigError: unreadable config.
    """
    if not args.do_train and not args.do_eval:
        raise NoModeError("At least one of `do_train` or `do_eval` must be True.")
    for name in ("albert_config_file", "input_file", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    if args.masked_lm_budget:
        raise FlagError(f"--masked_lm_budget={args.masked_lm_budget}: on-the-fly masking is "
                        "not supported (the original then reads only token_boundary and its "
                        "model_fn fails on the missing masked_lm_positions): leave it 0 and "
                        "mask offline with create_pretraining_data")
    check_tpu_flags(args)
    config = AlbertConfig.from_json_file(args.albert_config_file)
    check_pair_segments(config, args.albert_config_file, "pre-training (sentence order)")
    if args.max_seq_length > config.max_position_embeddings:
        raise FlagError(f"--max_seq_length={args.max_seq_length} is longer than "
                        f"max_position_embeddings={config.max_position_embeddings} of "
                        f"--albert_config_file={args.albert_config_file}")
    check_sizes_and_steps(args)
    if args.optimizer not in ("lamb", "adamw"):
        raise FlagError(f"--optimizer={args.optimizer}: lamb or adamw")
    if args.do_train and args.poly_power < 0:  # (1 - step / steps) ** -p grows without bound
        raise FlagError(f"--poly_power={args.poly_power}: must not be negative (the learning "
                        "rate would grow without bound as the decay ends)")
    if args.do_train and args.start_warmup_step < 0:
        raise FlagError(f"--start_warmup_step={args.start_warmup_step}: must not be negative")
    return config


def load_fn(name_map, path, require_all=False):
    """The ALBERT loader in :func:`restore_for_inference`'s signature."""
    return load_albert_checkpoint(name_map, path, require_all=require_all)


def run(args: AlbertPretrainingArgs, strategy: Optional[tf.distribute.Strategy] = None,
        log_every_n_steps: int = 100) -> PretrainingResult:
    """Trains and/or evaluates (see the module docstring).

    Returns:
      a :class:`bert_tf.run.pretraining.PretrainingResult` (``eval_metrics`` with
      :data:`EVAL_KEYS`).

    Raises:
      NoModeError, FlagError, ConfigError: bad flags or config. InputDataError: records that
      do not fit the flags. CheckpointError: a checkpoint that does not fit (a BERT one
      names its first variable). NanLossError: training diverged.
    """
    config = check_args(args)
    # before the record checks (TF ops): a TF_CONFIG cluster is configured before the first op
    strategy = strategy or strategy_from_flags(args)
    input_files = checked_input_files(args.input_file, args.max_seq_length,
                                      args.max_predictions_per_seq, config.vocab_size,
                                      args.albert_config_file, config_flag="albert_config_file")
    make_pretraining_output_dir(args.output_dir)
    def build():
        with dtype_policy(args.dtype), strategy.scope():
            return AlbertPretrainer(config, use_one_hot_embeddings=args.use_tpu
                                    ).build_with_dummy_input()

    def load(model):  # the warm start, group 0 copied as the original's --init_from_group0
        return warm_start(model.name_map(), args.init_checkpoint,
                          args.allow_partial_init_checkpoint,
                          load_fn=functools.partial(load_albert_checkpoint,
                                                    init_from_group0=args.init_from_group0),
                          log_line="Warm start from %s: %%s" % (
                              args.init_checkpoint.replace("%", "%%")))

    # the weights created straight from the checkpoint, no random copy (issue 24): a warm
    # start; eval alone, the checkpoint it evaluates
    restored = warm = None
    if args.do_train:
        model, warm = build_for_training(build, load, args.output_dir, args.init_checkpoint,
                                         strategy)
    else:
        model, restored = build_for_inference(build, lambda m: m.name_map(), args.output_dir,
                                              args.init_checkpoint, load_fn=load_fn,
                                              strategy=strategy)
    name_map = model.name_map()

    explained = record_errors_explained(input_files, args.max_seq_length,
                                        args.max_predictions_per_seq, config,
                                        args.albert_config_file, "albert_config_file")

    result = PretrainingResult()
    trained_step = None
    if args.do_train:
        with strategy.scope():
            optimizer, _ = create_albert_optimizer(
                args.learning_rate, args.num_train_steps, args.num_warmup_steps,
                optimizer=args.optimizer, poly_power=args.poly_power,
                start_warmup_step=args.start_warmup_step, variable_names=name_map,
                loss_scale=args.dtype == "float16")
        train_config = loop.TrainConfig.from_flags(
            args, args.num_train_steps, num_warmup_steps=args.num_warmup_steps,
            keep_checkpoint_max=args.keep_checkpoint_max, log_every_n_steps=log_every_n_steps,
            init_checkpoint=None, warm_start=warm)
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d, optimizer = %s", args.train_batch_size, args.optimizer)
        train_input_fn = input_fn_builder(input_files, args.max_seq_length,
                                          args.max_predictions_per_seq, is_training=True,
                                          batch_size=args.train_batch_size)
        before = step_in_output_dir(args.output_dir)
        start = time.time()
        result.train = explained(lambda: loop.train(
            model, pretraining_loss_fn, train_input_fn, name_map, train_config,
            strategy=strategy, optimizer=optimizer))
        result.train_seconds = time.time() - start
        result.train_steps_run = result.train.global_step - before
        trained_step = result.train.global_step

    if args.do_eval:
        run_eval(result, model, name_map, input_files, args, trained_step, strategy, explained,
                 load_fn=load_fn, rename=albert_eval_metrics, restored=restored)
    return result


