"""ALBERT GLUE fine-tuning: the run behind ``python -m bert_tf.albert.run_classifier`` and
``run_classifier.py --albert_config_file=...``.

Mirrors the original google-research/albert ``run_classifier.py`` + ``classifier_utils.py``
(b772393; golden README ``albert`` section D and surprise 5): its flags and defaults
(``--max_seq_length`` 512, ``--train_step`` 1000, ``--warmup_step`` 0, ``--optimizer`` adamw),
its processors and features (:mod:`bert_tf.albert.data.classifier`: BERT's features with
ALBERT's tokenizer and ``preprocess_text``), its head (`output_weights`/`output_bias`, std 0.02)
and its files in ``--output_dir``:

* ``<task>_train.tf_record`` / ``<task>_eval.tf_record`` (in ``--cached_dir`` when given),
  reused when present (bert_tf: only when they still hold as many records of
  ``--max_seq_length``; the original reuses any), and ``predict.tf_record`` (rewritten);
* ``eval_results.txt``: per evaluated checkpoint, ``key = value`` lines (keys sorted:
  ``eval_accuracy``, ``eval_loss``, ``global_step``, ``loss``; CoLA adds ``matthew_corr``;
  STS-B has ``MSE``, ``eval_loss``, ``pearson``), then ``best = <best so far>`` and 50 ``=``;
* ``best_trial.txt``: ``<global_step>:<best step>:<best value>``;
* ``test_results.tsv`` (``str(float32)`` probabilities, tab-separated) and
  ``submit_results.tsv`` (``index\\tprediction`` header, then ``<guid>\\t<label>``).

Done better than the original (and said in the flags' help):

* ``--do_eval`` evaluates, once, every ``model.ckpt-N`` of ``--output_dir`` newer than
  ``best_trial.txt`` (the newest again when none is newer), else ``--init_checkpoint``. The
  original polls the folder forever (sleeping 60 s) until a checkpoint reaches
  ``--train_step``, deletes the non-best ones and renames the best to ``model.ckpt-best``;
  here nothing is deleted or renamed.
* ``--do_predict`` uses the best evaluated checkpoint (``best_trial.txt``), else
  ``model.ckpt-best``, else the newest of ``--output_dir``, else ``--init_checkpoint``; the
  original reads only ``model.ckpt-best``, so it needs a prior ``--do_eval``.
* A checkpoint that does not fit (a BERT checkpoint, another config) is one line naming the
  first variable, before any training; outputs are atomic.

STS-B's ``eval_results.txt`` also holds the original's ``pred`` and ``label_ids`` lines: every
evaluated score and gold score as ``str()`` of a float32 numpy array (numpy elides the middle
of an array over 1000 entries, as the original's did). ``--albert_hub_module_handle`` is
refused (no TF-Hub).
"""

import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.albert.checkpoint_map import load_albert_checkpoint
from bert_tf.albert.classifier import AlbertClassifier
from bert_tf.albert.config import AlbertConfig
from bert_tf.bert.config import check_pair_segments
from bert_tf.bert.classifier import classifier_loss_fn
from bert_tf.atomic_files import atomic_write_text
from bert_tf.data import classifier as bert_data
from bert_tf.data import record_cache
from bert_tf.data.glue_files import (PREDICT_FILE, format_test_results, read_task_examples,
                                     write_predict_records)
from bert_tf.albert.data.classifier import AlbertProcessor
from bert_tf.data.classifier_records import SHUFFLE_SEED, LENGTH_MULTIPLE, train_dataset_fn
from bert_tf.data.tfrecord import read_examples
from bert_tf.errors import ConfigError, FlagError
from bert_tf.run import checks as run_checks
from bert_tf.run.classification import (eval_metrics, export_saved_model, predict_all,
                                        predict_probabilities)
from bert_tf.albert.tokenization import FullTokenizer
from bert_tf.bert import recipes
from bert_tf.training import loop
from bert_tf.albert.lamb import create_albert_optimizer
from bert_tf.albert.tasks.args import AlbertClassifierArgs
from bert_tf.training.optimizer import inner_optimizer
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor, dynamic_signature
from bert_tf.training.restore import (build_for_inference, build_for_training,
                                      restore_for_inference)
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags
from bert_tf.training.summaries import write_eval_summaries

EVAL_RESULTS_FILE = "eval_results.txt"
BEST_TRIAL_FILE = "best_trial.txt"
TEST_RESULTS_FILE = "test_results.tsv"
SUBMIT_RESULTS_FILE = "submit_results.tsv"
BEST_CHECKPOINT = "model.ckpt-best"


@dataclass
class AlbertClassifierResult:
    """What :func:`run` did.

    Attributes:
      model: the :class:`AlbertClassifier` with the weights last used.
      train: the :class:`bert_tf.training.loop.TrainResult`, or None.
      evaluated: ``[(checkpoint prefix, results dict)]`` in evaluation order.
      best: ``(global_step, best_step, best_value)`` after evaluation, or None.
      predictions: float32 ``[num_test_examples, num_labels]`` (or None); predict_checkpoint:
        the prefix it came from ("" for the initial weights).
      export_path: the SavedModel folder (or None).
      output_dir: ``--output_dir`` (where ``test_results.tsv`` went).
    """

    model: Any
    train: Optional[loop.TrainResult] = None
    evaluated: List = field(default_factory=list)
    best: Optional[tuple] = None
    predictions: Optional[np.ndarray] = None
    predict_checkpoint: Optional[str] = None
    export_path: Optional[str] = None
    output_dir: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_classifier.py --albert_config_file`` and ``python -m
        bert_tf.albert.run_classifier`` print (bert_tf's summary): each evaluation, where the
        predictions went (and from which weights), the SavedModel."""
        lines = [f"eval {prefix or '(initial weights)'}: "
                 + ", ".join(f"{k} = {str(v)}" for k, v in sorted(results.items()))
                 for prefix, results in self.evaluated]
        if self.predictions is not None:
            lines.append(f"wrote {len(self.predictions)} predictions (from "
                         f"{self.predict_checkpoint or 'the initial weights'}) to "
                         f"{self.output_dir}/test_results.tsv and submit_results.tsv")
        if self.export_path:
            lines.append(f"exported the SavedModel to {self.export_path}")
        return lines


def metric_key(task_name: str) -> str:
    """The metric that picks the best checkpoint (original): ``pearson`` for STS-B,
    ``matthew_corr`` for CoLA, else ``eval_accuracy``."""
    return {"sts-b": "pearson", "cola": "matthew_corr"}.get(task_name, "eval_accuracy")


def check_args(args: AlbertClassifierArgs):
    """The original's start-up checks, in its order, plus bert_tf's.

    Returns:
      ``(config, processor, tokenizer)``.

    Raises:
      FlagError: a required flag missing, no mode, a bad number, an unknown task, the
        sequence longer than the config allows. ConfigError: unreadable config / vocab /
        SentencePiece model, TF-Hub requested.
    """
    for name in ("data_dir", "task_name", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    if not (args.do_train or args.do_eval or args.do_predict or args.export_dir):
        raise FlagError("At least one of `do_train`, `do_eval`, `do_predict' or `export_dir` "
                        "must be True.")
    if args.albert_hub_module_handle:
        raise ConfigError(f"--albert_hub_module_handle={args.albert_hub_module_handle}: TF-Hub "
                          "is not supported; pass --albert_config_file and --init_checkpoint")
    if not args.albert_config_file:
        raise FlagError("--albert_config_file is required")
    check_tpu_flags(args)
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size",
                 "gradient_accumulation_steps"):
        if int(getattr(args, name)) < 1:
            raise FlagError(f"--{name}={getattr(args, name)}: must be at least 1")
    if args.do_train and args.train_step < 1:
        raise FlagError(f"--train_step={args.train_step}: must be at least 1")
    if args.do_train and args.warmup_step < 0:  # before any record is written
        raise FlagError(f"--warmup_step={args.warmup_step}: must not be negative")
    if args.max_seq_length < 3:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 3")
    config = AlbertConfig.from_json_file(args.albert_config_file)
    if args.max_seq_length > config.max_position_embeddings:
        raise FlagError(f"Cannot use sequence length {args.max_seq_length} because the ALBERT "
                        f"model was only trained up to sequence length "
                        f"{config.max_position_embeddings} ({args.albert_config_file}): lower "
                        "--max_seq_length")
    records = tuple(f"{(args.task_name or '').lower()}_{split}.tf_record"
                    for split in ("train", "eval"))
    run_checks.make_output_dir(
        args.output_dir, files=(EVAL_RESULTS_FILE, BEST_TRIAL_FILE, TEST_RESULTS_FILE,
                                SUBMIT_RESULTS_FILE, PREDICT_FILE, BEST_CHECKPOINT + ".index")
        + (() if args.cached_dir else records) + run_checks.TRAINING_FILES,
        folders=run_checks.EVAL_FOLDERS)
    if args.cached_dir:
        run_checks.make_output_dir(args.cached_dir, "cached_dir", files=records)
    processor = AlbertProcessor(args.task_name, use_spm=bool(args.spm_model_file),
                                do_lower_case=args.do_lower_case)
    if not args.spm_model_file and not args.vocab_file:
        raise FlagError("--vocab_file (WordPiece) or --spm_model_file (SentencePiece) is "
                        "required")
    tokenizer = FullTokenizer(args.vocab_file, do_lower_case=args.do_lower_case,
                              spm_model_file=args.spm_model_file)
    vocab = (f"--spm_model_file={args.spm_model_file}" if args.spm_model_file
             else f"--vocab_file={args.vocab_file}")
    if len(tokenizer.vocab) > config.vocab_size:
        raise ConfigError(f"{vocab} has {len(tokenizer.vocab)} tokens but "
                          f"{args.albert_config_file} says vocab_size={config.vocab_size}")
    run_checks.warn_if_vocab_smaller(len(tokenizer.vocab), vocab, config.vocab_size,
                                     args.albert_config_file)
    return config, processor, tokenizer


def load_fn(name_map, path, require_all=False):
    """:func:`bert_tf.albert.checkpoint_map.load_albert_checkpoint` in the
    :func:`restore_for_inference` signature: a BERT checkpoint, or one of another config,
    names the first variable that does not fit."""
    return load_albert_checkpoint(name_map, path, require_all=require_all)


def read_best_trial(output_dir: str):
    """``(global_step, best_step, best_value)`` of ``best_trial.txt``, else ``(-1, -1, -1)``
    (original ``_best_trial_info``).

    Raises:
      ConfigError: the file is not ``int:int:float`` (names it).
    """
    path = os.path.join(output_dir, BEST_TRIAL_FILE)
    if not tf.io.gfile.exists(path):
        return -1, -1, -1
    with tf.io.gfile.GFile(path, "r") as f:
        text = f.read()
    try:
        step, best_step, value = text.split(":")
        return int(step), int(best_step), float(value)
    except ValueError:
        raise ConfigError(f"{path}: expected <global_step>:<best step>:<best value>, got "
                          f"{text[:80]!r}") from None


def albert_eval_results(results: Dict[str, Any], task_name: str,
                        logits: Optional[np.ndarray] = None,
                        labels: Optional[np.ndarray] = None) -> Dict[str, Any]:
    """BERT's metric dict (:func:`bert_tf.run.classification.eval_metrics`) under the original
    ALBERT keys: CoLA ``matthew_corr`` (+ ``eval_accuracy``, ``eval_loss``); STS-B
    ``pearson``, ``MSE`` (= ``eval_loss``, the weighted squared error) and, when ``logits``
    and ``labels`` are given, ``pred`` / ``label_ids``: float32 ``[num_eval_examples]``
    arrays of every evaluated score and gold score, in order (the original's
    ``streaming_concat`` metrics, which its ``eval_results.txt`` prints with ``str()``);
    all with ``global_step`` and ``loss``."""
    out = {k: results[k] for k in ("eval_loss", "global_step", "loss")}
    if task_name == "sts-b":
        out["pearson"] = results["eval_pearson"]
        out["MSE"] = results["eval_loss"]
        if logits is not None and labels is not None:
            out["pred"] = np.asarray(logits, np.float32).reshape(-1)
            out["label_ids"] = np.asarray(labels, np.float32).reshape(-1)
    else:
        out["eval_accuracy"] = results["eval_accuracy"]
        if task_name == "cola":
            out["matthew_corr"] = results["eval_mcc"]
    return out


def _cached_records_fit(path: str, max_seq_length: int, num_examples: int) -> bool:
    """Whether a cached record file has ``num_examples`` records of ``max_seq_length``."""
    count, length = 0, None
    for features in read_examples(path):
        if length is None:
            length = len(features.get("input_ids", []))
        count += 1
    return count == num_examples and length == max_seq_length


def write_cached_records(examples, label_list, args, tokenizer, path, reuse: bool) -> None:
    """Writes the records, or reuses a cached file (original) when it still fits.

    bert_tf (the original reuses any file of that name): a file written by bert_tf carries a
    fingerprint (:mod:`bert_tf.data.record_cache`: the examples, the vocab or SentencePiece
    model, ``--max_seq_length``, ``--do_lower_case`` and the labels), and is rewritten, said in
    one line, when the data or those flags changed; a file without one (the original's) is
    reused when it holds as many records of ``--max_seq_length`` as there are examples.
    """
    expected = record_cache.fingerprint(
        {"max_seq_length": args.max_seq_length, "do_lower_case": args.do_lower_case,
         "labels": None if label_list is None else list(label_list)},
        examples, files=[args.spm_model_file or args.vocab_file])
    if reuse and tf.io.gfile.exists(path):
        fingerprinted = tf.io.gfile.exists(record_cache.fingerprint_path(path))
        if record_cache.reuse_cached(path, expected, overwrite=False):
            if fingerprinted:
                return
            if _cached_records_fit(path, args.max_seq_length, len(examples)):
                logging.info("Reusing the cached records %s", path)
                return
            logging.warning("%s holds other records (another --max_seq_length or data set): "
                            "rewriting it", path)
    bert_data.file_based_convert_examples_to_features(examples, label_list,
                                                      args.max_seq_length, tokenizer, path)
    record_cache.write_fingerprint(path, expected)


def _has_index(prefix: str) -> bool:
    return tf.io.gfile.exists(prefix + ".index")


def _predict_checkpoint(output_dir: str, best_step: int) -> Optional[str]:
    """The best evaluated ``model.ckpt-<best_step>``, else ``model.ckpt-best``, else None
    (then :func:`restore_for_inference` takes the newest, else ``--init_checkpoint``)."""
    if best_step >= 0:
        prefix = os.path.join(output_dir, f"model.ckpt-{best_step}")
        if _has_index(prefix):
            return prefix
    best = os.path.join(output_dir, BEST_CHECKPOINT)
    if _has_index(best):
        return best
    return None


def _first_checkpoint(args: AlbertClassifierArgs) -> Optional[str]:
    """The checkpoint an eval, predict or export run without training reads first
    (:func:`evaluate_checkpoints`' first, else :func:`_predict_checkpoint`'s); None: the
    newest of ``--output_dir``, else ``--init_checkpoint`` (:func:`restore_for_inference`)."""
    global_step, best_step, _ = read_best_trial(args.output_dir)
    if args.do_eval:
        found = checkpoint_io.step_checkpoints(args.output_dir)
        todo = [p for s, p in found if s > global_step] or [p for _, p in found[-1:]]
        return todo[0] if todo else None
    return _predict_checkpoint(args.output_dir, best_step if args.do_predict else -1)


def run(args: AlbertClassifierArgs, strategy: Optional[tf.distribute.Strategy] = None,
        stop_at_step: Optional[int] = None) -> AlbertClassifierResult:
    """Trains, evaluates, predicts and exports as the flags say (see the module docstring).

    Args:
      args: the flags; strategy: a ``tf.distribute`` strategy (default from the flags);
      stop_at_step: (tests) stop training at this global step.

    Raises:
      FlagError, ConfigError: bad flags or files (named). InputDataError: a bad data row.
      CheckpointError: an unreadable or non-fitting checkpoint (names the first variable).
    """
    if args.num_restarts > 1:
        raise FlagError("--num_restarts: bert_tf's restarts are for BERT's run_classifier.py "
                        "and not yet for ALBERT (its eval_results.txt holds every evaluated "
                        "checkpoint); run once per --seed instead")
    config, processor, tokenizer = check_args(args)
    if args.export_dir:  # before training: a bad --export_dir must not fail after it
        from bert_tf.run import serving
        serving.check_export_dir(args.export_dir)
    recipes.start(args)  # (bert_tf, issue 26) --seed, --deterministic: before the model
    examples = read_task_examples(processor, args)
    check_pair_segments(config, args.albert_config_file, f"task {args.task_name}",
                        [ex for split in examples.values() for ex in split])
    strategy = strategy or strategy_from_flags(args)
    chief = loop.is_chief(strategy)
    trim = not (args.use_tpu or args.use_xla)
    # predict or evaluate only (no training, no export): matmul kernels held in --dtype
    inference_only = not (args.do_train or args.export_dir)

    def build():
        with dtype_policy(args.dtype, inference_only=inference_only), strategy.scope():
            return AlbertClassifier(config, processor.num_labels,
                                    is_regression=processor.is_regression,
                                    use_one_hot_embeddings=args.use_tpu,
                                    feature_layers=recipes.feature_layers(
                                        args, config.num_hidden_layers),
                                    feature_combine=args.feature_combine
                                    ).build_with_dummy_input()

    # the weights created straight from the checkpoint, no random copy (issue 24): a warm
    # start; without training, the first checkpoint the run reads
    if args.do_train:
        model, warm = build_for_training(build, lambda m: _warm_start(m, args),
                                         args.output_dir, args.init_checkpoint, strategy)
    else:
        model, _ = build_for_inference(build, lambda m: m.name_map(), args.output_dir,
                                       args.init_checkpoint, checkpoint=_first_checkpoint(args),
                                       load_fn=load_fn, strategy=strategy)
    result = AlbertClassifierResult(model=model, output_dir=args.output_dir)

    if args.do_train:
        train_classifier(result, examples["train"], processor, tokenizer, args, strategy, trim,
                         stop_at_step, warm)
    predictor = BatchPredictor(model, ["logits", "probabilities"], strategy, trim_padding=trim,
                               length_multiple=LENGTH_MULTIPLE,
                               input_signature=dynamic_signature() if trim else None)
    if args.do_eval:
        evaluate_checkpoints(result, predictor, examples["eval"], processor, tokenizer, args,
                             chief)
    if args.do_predict:
        predict_test_set(result, predictor, examples["predict"], processor, tokenizer, args,
                         chief)
    if args.export_dir and chief:
        threshold = None if math.isnan(args.threshold_to_export) else args.threshold_to_export
        result.export_path = export_saved_model(model, args.export_dir, threshold=threshold)
    return result


def _warm_start(model, args: AlbertClassifierArgs):
    """The training start from ``--init_checkpoint``: ALBERT's loader over every weight (a
    BERT checkpoint, or one of another config, fails here), then what the training loop
    loads (:func:`bert_tf.bert.recipes.warm_start_load`: the trainable weights, or the
    encoder with ``--freeze_encoder``); returns the latter's LoadReport."""
    load_fn(model.name_map(), args.init_checkpoint)
    return recipes.warm_start_load(args, load_fn)(model)


def train_classifier(result: AlbertClassifierResult, train_examples: list, processor,
                     tokenizer, args: AlbertClassifierArgs, strategy, trim: bool,
                     stop_at_step: Optional[int], warm=None) -> None:
    """The ``do_train`` step: checks ``--init_checkpoint`` fits (a BERT checkpoint fails
    before any training), writes (or reuses) ``<task>_train.tf_record`` in ``--cached_dir``,
    trains ``train_step`` steps of ``--optimizer``; fills ``result.train``.

    ``warm``: the LoadReport of :func:`_warm_start` done when the model was built (nothing
    is loaded here then), or None.

    Raises:
      CheckpointError: ``--init_checkpoint`` does not fit; NanLossError: training diverged.
    """
    model = result.model
    name_map = model.name_map()
    regression = processor.is_regression
    if args.init_checkpoint and not checkpoint_io.existing_checkpoints(args.output_dir) \
            and warm is None:
        # Fails on a BERT checkpoint (or another config) before any training.
        load_fn(name_map, args.init_checkpoint)
    settings = {"warm_start": warm}  # (bert_tf, issue 26) --freeze_encoder: the encoder
    if args.freeze_encoder and recipes.freeze_encoder(model, args, model.encoder_name_map(),
                                                      (lambda *_: warm) if warm else load_fn):
        settings = {"init_checkpoint": None, "warm_started": True}
    train_file = os.path.join(args.cached_dir or args.output_dir,
                              f"{processor.task_name}_train.tf_record")
    write_cached_records(train_examples, processor.get_labels(), args, tokenizer, train_file,
                         reuse=True)
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(train_examples))
    logging.info("  Batch size = %d", args.train_batch_size)
    logging.info("  Num steps = %d", args.train_step)
    train_config = loop.TrainConfig.from_flags(
        args, args.train_step, num_warmup_steps=args.warmup_step,
        keep_checkpoint_max=args.keep_checkpoint_max,
        log_every_n_steps=max(1, min(100, args.train_step // 20)),
        stop_at_step=stop_at_step, **settings)

    with strategy.scope():
        optimizer, _ = create_albert_optimizer(
            args.learning_rate, args.train_step, args.warmup_step, optimizer=args.optimizer,
            variable_names=name_map, loss_scale=args.dtype == "float16",
            schedule=None if args.lr_schedule == "warmup_linear" else train_config.schedule())
        inner_optimizer(optimizer).set_recipe(recipes.layer_recipe(  # bert_tf, issue 26
            args, recipes.albert_block_of(), name_map))

    result.train = loop.train(
        model, classifier_loss_fn(regression),
        train_dataset_fn(train_file, args.max_seq_length, args.train_batch_size,
                         regression, trim=trim,
                         seed=SHUFFLE_SEED if args.seed is None else args.seed),
        name_map, train_config, strategy=strategy, optimizer=optimizer)


def evaluate_checkpoints(result: AlbertClassifierResult, predictor, eval_examples: list,
                         processor, tokenizer, args: AlbertClassifierArgs, chief: bool) -> None:
    """The ``do_eval`` step: writes (or reuses) ``<task>_eval.tf_record``, evaluates every
    checkpoint of ``--output_dir`` newer than ``best_trial.txt``'s step (the newest again
    when all are evaluated; the initial weights when there is none), keeps the best by
    :func:`metric_key`; on the chief ``eval_results.txt``, ``best_trial.txt`` and the
    TensorBoard eval summaries. Fills ``result.evaluated`` and ``result.best``.

    Raises:
      CheckpointError: a checkpoint that does not fit.
    """
    task = processor.task_name
    regression = processor.is_regression
    name_map = result.model.name_map()
    eval_examples, num_actual = bert_data.add_tpu_padding(
        eval_examples, args.eval_batch_size, args.use_tpu)
    eval_file = os.path.join(args.cached_dir or args.output_dir, f"{task}_eval.tf_record")
    write_cached_records(eval_examples, processor.get_labels(), args, tokenizer, eval_file,
                         reuse=True)
    logging.info("***** Running evaluation *****")
    logging.info("  Num examples = %d (%d actual, %d padding)", len(eval_examples),
                 num_actual, len(eval_examples) - num_actual)
    logging.info("  Batch size = %d", args.eval_batch_size)
    global_step, best_step, best_value = read_best_trial(args.output_dir)
    found = checkpoint_io.step_checkpoints(args.output_dir)
    todo = [(s, p) for s, p in found if s > global_step]
    if found and not todo:
        logging.info("every checkpoint of %s is evaluated already (%s); evaluating the "
                     "newest again", args.output_dir, BEST_TRIAL_FILE)
        todo = found[-1:]
    key = metric_key(task)
    lines = []
    for _, prefix in (todo or [(None, None)]):
        restored = restore_for_inference(name_map, args.output_dir, args.init_checkpoint,
                                         checkpoint=prefix, load_fn=load_fn)
        logits, labels, real, batch_losses = predict_all(
            predictor, eval_file, args, args.eval_batch_size, regression, "eval",
            len(eval_examples))
        results = albert_eval_results(eval_metrics(
            logits, labels, real, batch_losses, restored.global_step, regression,
            mcc=task == "cola"), task, logits, labels)
        logging.info("***** Eval results %s *****", restored.prefix or "(initial)")
        for k in sorted(results):
            logging.info("  %s = %s", k, str(results[k]))
            lines.append("%s = %s\n" % (k, str(results[k])))
        lines.append("best = {}\n".format(best_value))
        lines.append("=" * 50 + "\n")
        result.evaluated.append((restored.prefix, results))
        if chief:  # TensorBoard: <output_dir>/eval/ (the Estimator's eval summaries)
            write_eval_summaries(args.output_dir, results,
                                 step=int(restored.global_step))
        global_step = int(restored.global_step)
        if prefix is not None and results[key] > best_value:
            best_value, best_step = results[key], global_step
    if chief:
        atomic_write_text(os.path.join(args.output_dir, EVAL_RESULTS_FILE), "".join(lines))
        if todo:
            atomic_write_text(os.path.join(args.output_dir, BEST_TRIAL_FILE),
                              "{}:{}:{}".format(global_step, best_step, best_value))
    result.best = (global_step, best_step, best_value)


def predict_test_set(result: AlbertClassifierResult, predictor, predict_examples: list,
                     processor, tokenizer, args: AlbertClassifierArgs, chief: bool) -> None:
    """The ``do_predict`` step: ``predict.tf_record``, the weights of the best evaluated
    checkpoint (:func:`_predict_checkpoint`), the probabilities of every real test example;
    on the chief ``test_results.tsv`` and ``submit_results.tsv`` (``index``/``prediction``:
    the label, or the score for regression). Fills ``result.predictions`` and
    ``result.predict_checkpoint``.

    Raises:
      CheckpointError: a checkpoint that does not fit; RuntimeError: rows missing.
    """
    label_list = processor.get_labels()
    regression = processor.is_regression
    predict_examples, num_actual, predict_file = write_predict_records(
        predict_examples, label_list, args, tokenizer)
    _, best_step, _ = read_best_trial(args.output_dir)
    restored = restore_for_inference(result.model.name_map(), args.output_dir,
                                     args.init_checkpoint,
                                     checkpoint=_predict_checkpoint(args.output_dir, best_step),
                                     load_fn=load_fn)
    probabilities = predict_probabilities(
        predictor, predict_file, args, regression, len(predict_examples),
        num_actual).astype(np.float32)
    result.predictions, result.predict_checkpoint = probabilities, restored.prefix
    submit = ["index\tprediction\n"]
    for example, row in zip(predict_examples[:num_actual], probabilities):
        label = str(row[0]) if regression else label_list[int(np.argmax(row))]
        submit.append(f"{example.guid}\t{label}\n")
    if chief:
        atomic_write_text(os.path.join(args.output_dir, TEST_RESULTS_FILE),
                          format_test_results(probabilities))
        atomic_write_text(os.path.join(args.output_dir, SUBMIT_RESULTS_FILE),
                          "".join(submit))


