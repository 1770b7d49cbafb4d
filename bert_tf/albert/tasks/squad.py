"""ALBERT SQuAD v1.1 / v2.0: the run behind ``python -m bert_tf.albert.run_squad_v1`` /
``... .run_squad_v2`` and ``run_squad.py --albert_config_file=...``.

Mirrors the original google-research/albert ``run_squad_v1.py`` / ``run_squad_v2.py`` +
``squad_utils.py`` (b772393): their flags and defaults (``--max_seq_length`` 384,
``--doc_stride`` 128, ``--max_query_length`` 64, ``--train_batch_size`` 32,
``--learning_rate`` 5e-5, ``--num_train_epochs`` 3, ``--warmup_proportion`` 0.1; v2
``--start_n_top`` / ``--end_n_top`` 5, ``--dropout_prob`` 0.1), the start-up checks, the
features (:mod:`bert_tf.albert.data.squad`), the heads (:mod:`bert_tf.albert.squad`), AdamW
(ALBERT's ``optimization.create_optimizer`` default), the training examples shuffled with
``random.Random(12345)``, ``num_train_steps = int(examples / batch * epochs)``, and the files
(:mod:`bert_tf.albert.data.squad_records`):

* ``--train_feature_file`` (written from ``--train_file`` when absent, else reused, as the
  original; bert_tf: refused, naming it, when its records are not ``--max_seq_length`` long);
* ``--predict_feature_file`` (TFRecord) and ``--predict_feature_left_file`` (the features
  for post-processing) reused when both exist, else written. The original pickles its
  ``InputFeatures`` objects; bert_tf writes gzip JSON lines with the settings that made them
  and rewrites both files when those changed (an original pickle is refused in one line);
* in ``--output_dir``: ``model.ckpt-N``, ``predictions.json``, ``nbest_predictions.json``
  (entries ``text, probability, start_log_prob, end_log_prob``), v2 ``null_odds.json``
  (the null score of each question), and ``eval_results.txt`` when the predict file has
  answers: the metrics as ``key = value`` lines (sorted keys; v1 ``exact_match``, ``f1``; v2
  ``exact``, ``f1``, ``null_score_diff_threshold``, ``total``), ``best f1 = ...``, 50 ``=``,
  the final metrics again and ``best perf happened at step: N`` (no newline), as the
  original writes them for one checkpoint. v2's predictions are those of the original's
  second pass (the best-F1 null threshold applied).

Done differently (and said in the flags' help):

* ``--do_predict`` predicts once, with the newest ``model.ckpt-N`` of ``--output_dir``, else
  ``--init_checkpoint``. The original polls ``--output_dir`` (sleeping 60 s) until a
  checkpoint reaches the training steps, deletes older ones and copies the best to
  ``model.ckpt-best``; nothing is deleted or copied here.
* v2: the original reads ``--train_file`` even without ``--do_train`` (its polling loop needs
  the step count) and fails without it; here it is needed only for training.
* The original finds the paragraph start as ``tokens.index("[SEP]") + 1``, which fails for a
  SentencePiece model without a ``[SEP]`` piece (the XLNet model the tests use); the layout
  gives the same position (query length + 2) for any model.
* ``--albert_hub_module_handle`` is refused (no TF-Hub), so is v1's ``--export_dir`` (the
  original's Estimator SavedModel + TFLite export); ``--use_einsum`` changes nothing (the
  same math either way).
"""

import json
import os
import random
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.albert.checkpoint_map import load_albert_checkpoint
from bert_tf.albert.config import AlbertConfig
from bert_tf.bert.config import check_pair_segments
from bert_tf.albert.squad import AlbertSquadV1, AlbertSquadV2, qa_loss, squad_loss
from bert_tf.atomic_files import atomic_write_text
from bert_tf.albert.data import squad as data
from bert_tf.albert.data import squad_postprocess as postprocess
from bert_tf.albert.data import squad_records as records
from bert_tf.data import squad as squad_data
from bert_tf.data import squad_metrics
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.run import checks as run_checks
from bert_tf.albert.tokenization import load_sp_model
from bert_tf.training import loop
from bert_tf.albert.lamb import create_albert_optimizer
from bert_tf.albert.tasks.args import AlbertSquadArgs
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor, numpy_batches
from bert_tf.training.restore import (build_for_inference, build_for_training,
                                      restore_for_inference, warm_start)
from bert_tf.training.schedule import check_step_count
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags

PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"
EVAL_RESULTS_FILE = "eval_results.txt"
V1_KEYS = ("start_logits", "end_logits")
V2_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
           "cls_logits")


def check_args(args: AlbertSquadArgs, version: int) -> AlbertConfig:
    """The original ``validate_flags_or_throw`` (its order) plus bert_tf's checks.

    Returns:
      the :class:`AlbertConfig`.

    Raises:
      FlagError: a required flag missing, no mode, a bad number, a window too short.
      ConfigError: unreadable config, TF-Hub requested.
    """
    for name in ("albert_config_file", "spm_model_file", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    if args.albert_hub_module_handle:
        raise ConfigError(f"--albert_hub_module_handle={args.albert_hub_module_handle}: TF-Hub "
                          "is not supported; pass --albert_config_file and --init_checkpoint")
    if version == 1 and args.export_dir:
        raise FlagError(f"--export_dir={args.export_dir}: not supported for ALBERT SQuAD v1 (the "
                        "original exports an Estimator SavedModel and a TFLite file; bert_tf "
                        "has neither path here): leave it unset")
    if version == 2 and (args.export_dir or not args.use_einsum):
        name = "export_dir" if args.export_dir else "use_einsum"
        raise FlagError(f"--{name}: ALBERT's run_squad_v2 has no such flag (run_squad_v1's)")
    if not (args.do_train or args.do_predict):
        raise FlagError("At least one of `do_train` or `do_predict` must be True.")
    if args.do_train:
        if not args.train_file:
            raise FlagError("If `do_train` is True, then `train_file` must be specified.")
        if not args.train_feature_file:
            raise FlagError("If `do_train` is True, then `train_feature_file` must be "
                            "specified (bert_tf: the original fails on it unset).")
    if args.do_predict:
        for name in ("predict_file", "predict_feature_file", "predict_feature_left_file"):
            if not getattr(args, name):
                raise FlagError(f"If `do_predict` is True, then `{name}` must be specified.")
    check_tpu_flags(args)
    for name in ("train_batch_size", "predict_batch_size", "n_best_size", "max_answer_length",
                 "doc_stride", "gradient_accumulation_steps"):
        if int(getattr(args, name)) < 1:
            raise FlagError(f"--{name}={getattr(args, name)}: must be at least 1")
    if version == 2:
        for name in ("start_n_top", "end_n_top"):
            if not 1 <= int(getattr(args, name)) <= args.max_seq_length:
                raise FlagError(f"--{name}={getattr(args, name)}: must be in 1.."
                                f"--max_seq_length ({args.max_seq_length})")
        if not 0.0 <= args.dropout_prob < 1.0:
            raise FlagError(f"--dropout_prob={args.dropout_prob}: must be in [0, 1)")
    config = AlbertConfig.from_json_file(args.albert_config_file)
    check_pair_segments(config, args.albert_config_file, "SQuAD (question + context)")
    if args.max_seq_length > config.max_position_embeddings:
        raise FlagError(f"Cannot use sequence length {args.max_seq_length} because the ALBERT "
                        f"model was only trained up to sequence length "
                        f"{config.max_position_embeddings} ({args.albert_config_file})")
    if args.max_seq_length <= args.max_query_length + 3:
        raise FlagError(f"The max_seq_length ({args.max_seq_length}) must be greater than "
                        f"max_query_length ({args.max_query_length}) + 3")
    # bert_tf, as BERT's run_squad: a stride past the document window, a query of no pieces
    squad_data.check_feature_flags(args.max_seq_length, args.doc_stride, args.max_query_length)
    if args.do_train and not 0.0 <= args.warmup_proportion <= 1.0:
        raise FlagError(f"--warmup_proportion={args.warmup_proportion}: must be in [0, 1]")
    return config


def load_fn(name_map, path, require_all=False):
    """:func:`load_albert_checkpoint` in the :func:`restore_for_inference` signature."""
    return load_albert_checkpoint(name_map, path, require_all=require_all)


def build_model(config: AlbertConfig, args: AlbertSquadArgs, version: int):
    """The built v1 or v2 model (variables created in the current strategy's scope), in
    ``--dtype`` (:func:`bert_tf.training.precision.dtype_policy`: the encoder in bfloat16 /
    float16 over float32 variables, float32 outputs; a predict-only run holds the matmul
    kernels in that dtype, cast once at the restore, issue 25)."""
    with dtype_policy(args.dtype, inference_only=not args.do_train):
        if version == 1:
            return AlbertSquadV1(config,
                                 use_one_hot_embeddings=args.use_tpu).build_with_dummy_input()
        model = AlbertSquadV2(config, args.start_n_top, args.end_n_top, args.dropout_prob,
                              use_one_hot_embeddings=args.use_tpu)
        return model.build_with_dummy_input(max(2, args.start_n_top, args.end_n_top))


def loss_fn_for(version: int):
    """``loss_fn(model, features, labels)`` of the original model_fn: v1 ``(CE start + CE
    end) / 2``; v2 that plus ``0.5 * mean sigmoid CE(cls_logits, is_impossible)``."""
    def loss_fn(model, features, labels):
        out = model(features, training=True)
        if version == 1:
            return squad_loss(out["start_logits"], out["end_logits"], labels["start_positions"],
                              labels["end_positions"])
        return qa_loss(out, labels["start_positions"], labels["end_positions"],
                       labels["is_impossible"])
    return loss_fn


def raw_results(model, args: AlbertSquadArgs, version: int, total: int) -> List:
    """The heads' outputs per predict record, as the original's ``RawResult`` /
    ``RawResultV2`` (Python floats of the float32 outputs)."""
    keys = V1_KEYS if version == 1 else V2_KEYS
    predictor = BatchPredictor(model, keys, input_keys=records.MODEL_INPUTS)
    batches = numpy_batches(records.predict_dataset(args.predict_feature_file,
                                                    args.max_seq_length,
                                                    args.predict_batch_size))
    results = []
    for batch, out in predictor.predict(batches, total=total):
        for i, unique_id in enumerate(batch["unique_ids"]):
            if version == 1:
                results.append(postprocess.RawResultV1(
                    int(unique_id), [float(x) for x in out["start_logits"][i]],
                    [float(x) for x in out["end_logits"][i]]))
            else:
                results.append(postprocess.RawResultV2(
                    unique_id=int(unique_id),
                    start_top_log_probs=[float(x) for x in out["start_top_log_probs"][i]],
                    start_top_index=[int(x) for x in out["start_top_index"][i]],
                    end_top_log_probs=[float(x) for x in out["end_top_log_probs"][i]],
                    end_top_index=[int(x) for x in out["end_top_index"][i]],
                    cls_logits=float(out["cls_logits"][i])))
    return results


def load_dataset(path: str) -> List[Dict[str, Any]]:
    """The ``data`` list of a SQuAD file.

    Raises:
      InputDataError: unreadable (names the file).
    """
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            return json.load(f)["data"]
    except (OSError, ValueError, KeyError, TypeError, tf.errors.OpError) as e:
        raise InputDataError(f"{path}: not a SQuAD JSON file ({e})") from e


def has_answers(dataset: Sequence[Dict[str, Any]]) -> bool:
    """Whether any question of the file has a gold answer (then it is scored)."""
    return any(qa.get("answers") for article in dataset for p in article.get("paragraphs", [])
               for qa in p.get("qas", []))


def eval_results_text(metrics: Dict[str, Any], global_step: int) -> str:
    """``eval_results.txt`` as the original writes it for one evaluated checkpoint."""
    lines = ["%s = %s\n" % (k, str(metrics[k])) for k in sorted(metrics)]
    text = "".join(lines) + "best f1 = {}\n".format(metrics["f1"]) + "=" * 50 + "\n"
    return text + "".join(lines) + "best perf happened at step: {}".format(global_step)


@dataclass
class AlbertSquadResult:
    """What :func:`run` did (a field is None when its step did not run).

    Attributes:
      train: the :class:`bert_tf.training.loop.TrainResult`, or None; num_train_steps,
        num_train_examples: training's schedule and examples.
      weights_from: the checkpoint prefix predicted with; global_step: its step.
      num_predict_examples, num_predict_features: prediction's counts.
      predictions: the :class:`SquadPredictions` written; metrics: the official metrics (or
        None: no gold answers, or v1 on a file it cannot score, e.g. SQuAD 2.0 questions
        without an answer; a warning says so and the predictions are written); files: the
        prediction files written.
    """

    train: Optional[loop.TrainResult] = None
    num_train_steps: Optional[int] = None
    num_train_examples: Optional[int] = None
    weights_from: Optional[str] = None
    global_step: Optional[int] = None
    num_predict_examples: Optional[int] = None
    num_predict_features: Optional[int] = None
    predictions: Any = None
    metrics: Optional[Dict[str, Any]] = None
    files: Optional[List[str]] = None

    def summary_lines(self) -> List[str]:
        """What the ``python -m bert_tf.albert.run_squad_v1`` / ``_v2`` entry points and
        ``run_squad.py``'s ALBERT mode print: the checkpoint trained to, the prediction
        files, the metrics."""
        lines = []
        if self.train is not None:
            lines.append(f"trained to global_step {self.train.global_step}: "
                         f"{self.train.checkpoint}")
        if self.files is not None:
            lines.append(f"predicted {self.num_predict_examples} questions: "
                         + ", ".join(self.files))
        if self.metrics:
            lines.append(", ".join(f"{k} = {str(v)}" for k, v in sorted(self.metrics.items())))
        return lines


def run(args: AlbertSquadArgs, version: int,
        strategy: Optional[tf.distribute.Strategy] = None,
        stop_at_step: Optional[int] = None) -> AlbertSquadResult:
    """Trains and/or predicts as the flags say (module docstring).

    Args:
      version: 1 (run_squad_v1) or 2 (run_squad_v2; ``run_squad.py`` with
        ``--version_2_with_negative``): the entry point's, not a flag of ALBERT's scripts.
      stop_at_step: (tests) stop training at this global step.

    Returns:
      An :class:`AlbertSquadResult`.

    Raises:
      FlagError, ConfigError, InputDataError, CheckpointError naming the flag, file, question
      or variable; the flag and file checks come before anything is written.
    """
    if version not in (1, 2):
        raise ValueError(f"version must be 1 or 2, got {version}")
    config = check_args(args, version)
    sp = load_sp_model(args.spm_model_file)
    if sp.GetPieceSize() > config.vocab_size:
        raise ConfigError(f"--spm_model_file={args.spm_model_file} has {sp.GetPieceSize()} "
                          f"pieces but {args.albert_config_file} says vocab_size="
                          f"{config.vocab_size}")
    run_checks.warn_if_vocab_smaller(sp.GetPieceSize(), args.spm_model_file, config.vocab_size,
                                     args.albert_config_file)
    train_examples = eval_examples = dataset = None
    if args.do_train:
        train_examples = data.read_squad_examples(args.train_file, is_training=True)
    if args.do_predict:
        dataset = load_dataset(args.predict_file)
        eval_examples = data.read_squad_examples(args.predict_file, is_training=False)
    run_checks.make_output_dir(args.output_dir, files=(
        PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE, EVAL_RESULTS_FILE)
        + run_checks.TRAINING_FILES)
    strategy = strategy or strategy_from_flags(args)

    def build():
        with strategy.scope():
            return build_model(config, args, version)

    # the weights created straight from the checkpoint, no random copy (issue 24)
    warm = restored = None
    if args.do_train:
        model, warm = build_for_training(build, lambda m: _warm_start(m.name_map(), args),
                                         args.output_dir, args.init_checkpoint, strategy)
    else:
        model, restored = build_for_inference(build, lambda m: m.name_map(), args.output_dir,
                                              args.init_checkpoint, load_fn=load_fn,
                                              strategy=strategy)
    result = AlbertSquadResult()
    if args.do_train:
        train_squad(result, model, sp, train_examples, args, version, strategy, stop_at_step,
                    warm)
    if args.do_predict:
        predict_squad(result, model, sp, eval_examples, dataset, args, version, restored)
    return result


def _warm_start(name_map, args: AlbertSquadArgs):
    """The warm start from ``--init_checkpoint`` (a BERT checkpoint fails here), checked and
    logged (:func:`bert_tf.training.restore.warm_start`); its LoadReport."""
    return warm_start(name_map, args.init_checkpoint, args.allow_partial_init_checkpoint,
                      load_fn=load_fn, log_line="Warm start from %s: %%s" % (
                          args.init_checkpoint.replace("%", "%%")))


def train_squad(result: AlbertSquadResult, model, sp, train_examples: list,
                args: AlbertSquadArgs, version: int, strategy,
                stop_at_step: Optional[int], warm=None) -> None:
    """The ``do_train`` step: the schedule (``num_train_epochs``), the original's seeded
    shuffle, the warm start from ``--init_checkpoint`` (a BERT checkpoint fails here), the
    train records, then AdamW training; fills ``result``'s ``train``, ``num_train_steps``,
    ``num_train_examples``. ``warm``: the LoadReport of the warm start done when the model
    was built (then nothing is loaded here), or None.

    Raises:
      FlagError: no training step; CheckpointError: ``--init_checkpoint`` does not fit.
    """
    name_map = model.name_map()
    num_steps = int(len(train_examples) / args.train_batch_size * args.num_train_epochs)
    if num_steps < 1:
        raise FlagError(f"{len(train_examples)} training examples / --train_batch_size="
                        f"{args.train_batch_size} x --num_train_epochs="
                        f"{args.num_train_epochs} gives {num_steps} steps: nothing to train")
    check_step_count(num_steps, f"{len(train_examples)} training examples / --train_batch_size="
                                f"{args.train_batch_size} x --num_train_epochs="
                                f"{args.num_train_epochs}")
    num_warmup = int(num_steps * args.warmup_proportion)
    random.Random(records.TRAIN_SHUFFLE_SEED).shuffle(train_examples)
    existing = checkpoint_io.existing_checkpoints(args.output_dir)
    if args.init_checkpoint and not existing and warm is None:
        _warm_start(name_map, args)
    path = records.train_records(args, sp, train_examples)
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(train_examples))
    logging.info("  Batch size = %d", args.train_batch_size)
    logging.info("  Num steps = %d", num_steps)
    with strategy.scope():
        optimizer, _ = create_albert_optimizer(
            args.learning_rate, num_steps, num_warmup, optimizer="adamw",
            variable_names=name_map, loss_scale=args.dtype == "float16")
    train_config = loop.TrainConfig.from_flags(
        args, num_steps, num_warmup_steps=num_warmup, init_checkpoint=None,
        warm_started=bool(args.init_checkpoint), keep_checkpoint_max=2 ** 31 - 1,
        steps_per_loop=max(1, min(args.iterations_per_loop, args.save_checkpoints_steps)),
        log_every_n_steps=max(1, min(100, num_steps // 20)), stop_at_step=stop_at_step)
    result.train = loop.train(
        model, loss_fn_for(version),
        records.train_dataset(path, args.max_seq_length, args.train_batch_size),
        name_map, train_config, strategy=strategy, optimizer=optimizer)
    result.num_train_steps, result.num_train_examples = num_steps, len(train_examples)


def predict_squad(result: AlbertSquadResult, model, sp, eval_examples: list, dataset,
                  args: AlbertSquadArgs, version: int, restored=None) -> None:
    """The ``do_predict`` step: the newest weights (:func:`restore_for_inference`), the
    predict features (cached), the heads' outputs, the v1 or v2 post-processing, the
    prediction files and, when ``dataset`` has gold answers, the metrics and
    ``eval_results.txt``; fills ``result``'s prediction fields.

    Raises:
      CheckpointError: a checkpoint that does not fit.

    ``restored``: the :class:`bert_tf.training.restore.Restored` of the weights the model was
    built with (:func:`bert_tf.training.restore.build_for_inference`); None: restored here.
    """
    restored = restored or restore_for_inference(model.name_map(), args.output_dir,
                                                 args.init_checkpoint, load_fn=load_fn)
    features = records.predict_features(args, sp, eval_examples)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(eval_examples))
    logging.info("  Num split examples = %d", len(features))
    results = raw_results(model, args, version, len(features))
    out = [os.path.join(args.output_dir, n) for n in (PREDICTIONS_FILE, NBEST_FILE)]
    if version == 1:
        preds, metrics = score_v1(dataset, eval_examples, features, results, args)
    else:
        out.append(os.path.join(args.output_dir, NULL_ODDS_FILE))
        preds, metrics = score_v2(dataset, eval_examples, features, results, args)
    postprocess.write_predictions(preds, *out)
    if metrics is not None:
        atomic_write_text(os.path.join(args.output_dir, EVAL_RESULTS_FILE),
                          eval_results_text(metrics, int(restored.global_step)))
        logging.info("***** Final Eval results *****")
        for key in sorted(metrics):
            logging.info("  %s = %s", key, str(metrics[key]))
    result.weights_from, result.global_step = restored.prefix, int(restored.global_step)
    result.num_predict_examples, result.num_predict_features = (len(eval_examples),
                                                                len(features))
    result.predictions, result.metrics, result.files = preds, metrics, out


def score_v1(dataset, eval_examples, features, results, args: AlbertSquadArgs):
    """v1 post-processing: ``(SquadPredictions, metrics or None)``; the official v1.1 metrics
    when ``dataset`` has gold answers, none (a warning) for a file v1 cannot score."""
    preds = postprocess.compute_predictions_v1(eval_examples, features, results,
                                               args.n_best_size, args.max_answer_length)
    metrics = None
    if has_answers(dataset):
        try:
            metrics = squad_metrics.evaluate_v1(dataset, preds.predictions)
        except InputDataError as e:  # e.g. a SQuAD 2.0 file: keep the predictions
            logging.warning("%s: cannot score the predictions: %s (a SQuAD 2.0 file? "
                            "use run_squad_v2, or run_squad.py "
                            "--version_2_with_negative); no %s", args.predict_file,
                            e, EVAL_RESULTS_FILE)
    return preds, metrics


def score_v2(dataset, eval_examples, features, results, args: AlbertSquadArgs):
    """v2 post-processing: ``(SquadPredictions, metrics or None)``; with gold answers the
    original's threshold search and metrics (:func:`postprocess.evaluate_v2`)."""
    if has_answers(dataset):
        metrics, preds = postprocess.evaluate_v2(
            dataset, eval_examples, features, results, args.n_best_size,
            args.max_answer_length, args.start_n_top, args.end_n_top)
        return preds, metrics
    preds = postprocess.compute_predictions_v2(
        eval_examples, features, results, args.n_best_size,
        args.max_answer_length, args.start_n_top, args.end_n_top)
    return preds, None


