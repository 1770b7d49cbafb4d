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
  input files (spec 6.3, :func:`bert_tf.run.pretraining.metrics_from_sums`) and writes
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
from typing import Optional

import tensorflow as tf
from absl import logging

from bert_tf.bert.config import BertConfig, check_pair_segments
from bert_tf.bert.pretrainer import BertPretrainer, pretraining_loss_fn
from bert_tf.bert.tasks.args import PretrainingArgs
from bert_tf.data.pretraining_record_checks import checked_input_files, record_errors_explained
from bert_tf.data.pretraining_records import feature_lengths, input_fn_builder
from bert_tf.errors import FlagError
from bert_tf.run.pretraining import (NoModeError, PretrainingResult, check_sizes_and_steps,
                                     make_pretraining_output_dir, run_eval, step_in_output_dir)
from bert_tf.training import loop
from bert_tf.training.restore import bert_warm_start, build_for_inference, build_for_training
from bert_tf.training.precision import dtype_policy
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags


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


def _build(args: PretrainingArgs, config: BertConfig, strategy):
    """``(model, warm start LoadReport or None, Restored or None)``: the pretrainer built empty
    and created from the checkpoint (issue 24): ``--init_checkpoint`` when training starts
    from it (:func:`bert_tf.training.restore.build_for_training`); eval alone, the checkpoint
    it evaluates (:func:`bert_tf.training.restore.build_for_inference`).

    Raises:
      CheckpointError: a checkpoint that does not fit (names the variable).
    """
    def build():
        return build_pretrainer(config, strategy, use_one_hot_embeddings=args.use_tpu,
                                dtype=args.dtype)

    if not args.do_train:
        model, restored = build_for_inference(build, lambda m: m.name_map(), args.output_dir,
                                              args.init_checkpoint, strategy=strategy)
        return model, None, restored
    model, warm = build_for_training(build, bert_warm_start(
        args.init_checkpoint, args.allow_partial_init_checkpoint), args.output_dir,
        args.init_checkpoint, strategy)
    return model, warm, None


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
    check_pair_segments(config, args.bert_config_file, "pre-training (next sentence)")
    check_args(args, config)
    check_tpu_flags(args)
    # before the record checks: they run TF ops, and a TF_CONFIG cluster's collective ops must
    # be configured before the first one ("Collective ops must be configured at program startup")
    strategy = strategy or strategy_from_flags(args)
    input_files = checked_input_files(args.input_file, args.max_seq_length,
                                      args.max_predictions_per_seq, config.vocab_size,
                                      args.bert_config_file)
    make_pretraining_output_dir(args.output_dir)

    model, warm, restored = _build(args, config, strategy)
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
                                                   log_every_n_steps=log_every_n_steps,
                                                   warm_start=warm)
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
                 parse_errors_explained, restored=restored)
    return result


__all__ = ["PretrainingArgs", "check_args", "run"]
