"""Sentence(-pair) classification: the run behind the root `run_classifier.py`.

Mirrors the original `run_classifier.py` (spec `bert.md` 8): same flags and defaults, same
start-up checks in the same order, the same feature files in ``output_dir``
(``train.tf_record``, ``eval.tf_record``, ``predict.tf_record``, TPU padding examples
included) and the same result files:

* ``eval_results.txt``: ``key = value`` lines, keys sorted: ``eval_accuracy`` and
  ``eval_loss`` (weighted by ``is_real_example``), ``global_step``, ``loss`` (the mean of the
  eval batches' unweighted mean losses, as the Estimator's ``loss``). Values are ``str()`` of
  numpy float32 / int64 scalars, as the original printed them (spec 8.6, 8.7).
* ``test_results.tsv``: one line per real test example, the class probabilities ``str()`` of
  float32 joined by tabs, no header.

Checkpoints are ``model.ckpt-N`` in the original layout (``bert/*``, top-level
``output_weights [num_labels, H]`` / ``output_bias [num_labels]``, ``<var>/adam_m``,
``<var>/adam_v``, int64 ``global_step``) written by :func:`bert_tf.training.loop.train`, so a
checkpoint fine-tuned by the original loads here (as ``--init_checkpoint``, or found in
``output_dir``) and ours loads in the original. Eval/predict without ``--do_train`` use the
newest checkpoint in ``output_dir`` if there is one (as the Estimator), else
``init_checkpoint`` (then ``global_step = 0``).

Beyond the original:

* the GLUE tasks ``sst-2``, ``qnli``, ``qqp``, ``rte``, ``wnli`` and ``sts-b`` (regression:
  one output, squared-error loss; ``eval_results.txt`` holds ``eval_loss`` (MSE),
  ``eval_pearson``, ``eval_spearman``, ``global_step``, ``loss``; ``test_results.tsv`` one
  score per line);
* every data file needed is read (and checked) before training starts, and every output is
  written atomically, so a bad dev/test file never costs a training run or a partial file;
* ``--export_dir``: a SavedModel under ``<export_dir>/<timestamp>/`` that takes raw text:
  ``serving_default`` (tf.string ``text_a``, ``text_b`` ``[batch]``; an empty ``text_b`` is a
  single sentence, as the original's ``if example.text_b``), ``serving_single`` (``text_a``)
  and ``serving_ids`` (int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[batch, seq]``),
  each -> float32 ``probabilities [batch, num_labels]`` and ``logits``
  (:func:`export_saved_model`, :mod:`bert_tf.run.serving`); ``tf.saved_model.load`` serves
  it without bert_tf (after ``import tensorflow_text``);
* with none of ``--bert_config_file``, ``--vocab_file``, ``--init_checkpoint`` the embedded
  MiniLM default model is used (`bert_tf.defaults`);
* batches are cut to their longest real row (a multiple of 8) on CPU/GPU without XLA:
  padding is masked, so the numbers are those of the padded batch, only faster;
* the F1 of the positive class (label ``"1"``) of binary tasks is logged and returned (not
  written: ``eval_results.txt`` keeps the original keys);
* ``--siamese``: a Sentence-BERT bi-encoder instead of the cross-encoder
  (:mod:`bert_tf.bert.tasks.siamese`);
* for ``cola``, ``eval_results.txt`` also holds ``eval_mcc``, the Matthews correlation GLUE
  reports for CoLA (:func:`bert_tf.training.metrics.matthews_corrcoef`);
* ``--doc_stride`` (issue 13): an example longer than ``max_seq_length`` is cut into
  run_squad's sliding windows (:mod:`bert_tf.data.windows`; a pair keeps its shorter side
  whole) instead of being truncated. The record files hold one record per window with an
  ``example_index``. Training: each window is a training instance with its example's label,
  and the number of steps counts windows (``int(num_windows / train_batch_size *
  num_train_epochs)``). Eval / predict: the logits of an example's windows are pooled
  (``--window_pooling``: ``mean``, the default, or ``max``) into its one prediction, so
  ``test_results.tsv`` keeps one row per example (the softmax of the pooled logits; the pooled
  score for regression) and the metrics are per example (``eval_loss`` / accuracy /
  Pearson... of the pooled logits; ``loss`` the mean over batches of ``eval_batch_size``
  examples). An example that fits in one window gets the prediction it gets without
  ``--doc_stride``;
* the fine-tuning recipes of issue 26 (:mod:`bert_tf.bert.recipes`): ``--seed``,
  ``--deterministic``, ``--num_restarts`` / ``--select_metric``
  (:mod:`bert_tf.training.restarts`), ``--lr_layer_decay_rate``, ``--unfreeze_schedule``,
  ``--lr_schedule=slanted_triangular``, ``--freeze_encoder``, ``--feature_layers`` /
  ``--feature_combine``.
"""

import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.atomic_files import atomic_write_text
from bert_tf.bert.classifier import BertClassifier, classifier_loss_fn
from bert_tf.bert.config import BertConfig, check_pair_segments, load_config_for_length
from bert_tf.bert import recipes
from bert_tf.bert.tasks.args import ClassifierArgs
from bert_tf.data import classifier as data
from bert_tf.data.classifier_processors import DataProcessor, get_processor
from bert_tf.data.classifier_records import SHUFFLE_SEED, LENGTH_MULTIPLE, train_dataset_fn
from bert_tf.data.glue_files import (PREDICT_FILE, format_test_results, read_task_examples,
                                    write_predict_records)
from bert_tf.data.windows import check_window_flags
from bert_tf.errors import CheckpointError, ConfigError, FlagError
from bert_tf.run import checks as run_checks
from bert_tf.run import serving
from bert_tf.run.classification import (eval_metrics, export_saved_model, predict_all,
                                        predict_probabilities, predict_windows)
from bert_tf.tokenization.in_graph_wordpiece import BertTextPreprocessor
from bert_tf.tokenization.wordpiece import validate_case_matches_checkpoint
from bert_tf.training import loop, metrics, restarts
from bert_tf.training.eval_results import EVAL_RESULTS_FILE, write_eval_results
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor, dynamic_signature
from bert_tf.training.restore import (build_for_training, build_from_checkpoint,
                                      restore_for_inference)
from bert_tf.training.schedule import check_step_count
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags

TRAIN_FILE = "train.tf_record"
EVAL_FILE = "eval.tf_record"
TEST_RESULTS_FILE = "test_results.tsv"


@dataclass
class ClassifierResult:
    """What :func:`run` did.

    Attributes:
      model: the :class:`BertClassifier` with the weights last used.
      global_step: the step of those weights (0 for an untrained ``init_checkpoint``).
      train: the :class:`bert_tf.training.loop.TrainResult`, or None.
      num_train_steps, num_warmup_steps: the schedule (0 without ``do_train``).
      eval_results: key -> numpy scalar, as written to ``eval_results.txt`` (or None).
      eval_extra: bert_tf metrics not written (``eval_f1`` of binary tasks).
      num_eval_examples, num_predict_examples: real examples evaluated / predicted.
      predictions: float32 ``[num_predict_examples, num_labels]`` (or None).
      export_path: the SavedModel folder written (or None).
      test_results_file: where ``predictions`` were written (or None).
    """

    model: Any
    global_step: int = 0
    train: Optional[loop.TrainResult] = None
    num_train_steps: int = 0
    num_warmup_steps: int = 0
    eval_results: Optional[Dict[str, Any]] = None
    eval_extra: Dict[str, float] = field(default_factory=dict)
    num_eval_examples: int = 0
    num_predict_examples: int = 0
    predictions: Optional[np.ndarray] = None
    export_path: Optional[str] = None
    test_results_file: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_classifier.py`` prints (bert_tf's summary, not the original's output):
        ``eval: k = v, ...`` (keys sorted), ``wrote N predictions to <test_results.tsv>``,
        ``exported the SavedModel to <folder>``, each when done."""
        lines = []
        if self.eval_results is not None:
            items = sorted(self.eval_results.items())
            lines.append("eval: " + ", ".join(f"{k} = {str(v)}" for k, v in items))
        if self.predictions is not None:
            lines.append(f"wrote {self.num_predict_examples} predictions to "
                         f"{self.test_results_file}")
        if self.export_path:
            lines.append(f"exported the SavedModel to {self.export_path}")
        return lines


# ---------------------------------------------------------------------------------------------
# Start-up checks (spec 8.1)
# ---------------------------------------------------------------------------------------------

def _check_numbers(args: ClassifierArgs) -> None:
    for name in ("train_batch_size", "eval_batch_size", "predict_batch_size",
                 "gradient_accumulation_steps"):
        if int(getattr(args, name)) < 1:
            raise FlagError(f"--{name}={getattr(args, name)}: must be at least 1")
    if args.max_seq_length < 3:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 3 "
                        f"([CLS] a [SEP] b [SEP] needs 3 special tokens)")
    if args.do_train:
        if not args.num_train_epochs > 0:
            raise FlagError(f"--num_train_epochs={args.num_train_epochs}: must be positive")
        if not 0.0 <= args.warmup_proportion <= 1.0:
            raise FlagError(f"--warmup_proportion={args.warmup_proportion}: must be in [0, 1]")


def require_args(args: ClassifierArgs) -> None:
    """``--data_dir``, ``--task_name`` and ``--output_dir`` given (the first start-up check;
    ``run_classifier.py`` makes it before resolving the default model).

    Raises:
      FlagError: naming the first one missing.
    """
    for name in ("data_dir", "task_name", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")


def check_args(args: ClassifierArgs):
    """The original start-up checks, in its order, plus bert_tf's (``bert_config_file`` and
    ``vocab_file`` given or resolved by :func:`bert_tf.defaults.resolve_model_files`).

    0. ``data_dir``, ``task_name``, ``output_dir`` given (:func:`require_args`);
    1. ``do_lower_case`` vs a released checkpoint's name (original check);
    2. one of ``do_train`` / ``do_eval`` / ``do_predict`` (or ``--export_dir``);
    3. ``max_seq_length <= max_position_embeddings``;
    4. ``output_dir`` created and writable;
    5. a known ``task_name`` (the valid names are listed);
    then the vocab (its case, its size against the config).

    Returns:
      ``(config, processor, tokenizer)``.

    Raises:
      FlagError / CaseMismatchError / ConfigError naming the flag or file.
    """
    require_args(args)
    for name in ("bert_config_file", "vocab_file"):  # run_classifier.py resolves the default
        if not getattr(args, name):
            raise FlagError(f"--{name} missing: give --bert_config_file and --vocab_file, or "
                            "run run_classifier.py without model flags (the embedded default "
                            "model, bert_tf.defaults.resolve_model_files)")
    validate_case_matches_checkpoint(args.do_lower_case, args.init_checkpoint or "")
    if not args.export_dir:
        run_checks.require_one_mode(do_train=args.do_train, do_eval=args.do_eval,
                                    do_predict=args.do_predict)
    _check_numbers(args)
    check_window_flags(args.doc_stride, args.window_pooling, args.max_seq_length, num_special=2)
    check_tpu_flags(args)
    config = load_config_for_length(args.bert_config_file, args.max_seq_length)
    run_checks.make_output_dir(
        args.output_dir, files=(TRAIN_FILE, EVAL_FILE, PREDICT_FILE, EVAL_RESULTS_FILE,
                                TEST_RESULTS_FILE) + run_checks.TRAINING_FILES,
        folders=run_checks.EVAL_FOLDERS)
    if args.export_dir:
        serving.check_export_dir(args.export_dir, doc_stride=args.doc_stride,
                                 max_seq_length=args.max_seq_length)
    processor = get_processor(args.task_name)
    tokenizer = run_checks.load_tokenizer(args.vocab_file, args.do_lower_case,
                                          args.init_checkpoint)
    if len(tokenizer.vocab) > config.vocab_size:
        raise ConfigError(f"{args.vocab_file} has {len(tokenizer.vocab)} tokens but "
                          f"{args.bert_config_file} says vocab_size={config.vocab_size}")

    run_checks.warn_if_vocab_smaller(len(tokenizer.vocab), args.vocab_file, config.vocab_size,
                                     args.bert_config_file)
    return config, processor, tokenizer


def training_steps(num_examples: int, args: ClassifierArgs):
    """``(num_train_steps, num_warmup_steps)`` as the original (spec 8.1).

    ``int(num_examples / train_batch_size * num_train_epochs)`` and
    ``int(num_train_steps * warmup_proportion)``.

    Raises:
      FlagError: that gives no step at all, or more than ``schedule.MAX_STEPS``.
    """
    made_of = (f"{num_examples} training examples / --train_batch_size={args.train_batch_size}"
               f" x --num_train_epochs={args.num_train_epochs}")
    steps = int(num_examples / args.train_batch_size * args.num_train_epochs)
    if steps < 1:
        raise FlagError(f"no training step: {made_of} < 1")
    return check_step_count(steps, made_of), int(steps * args.warmup_proportion)


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------

def build_model(config: BertConfig, processor: DataProcessor, strategy,
                use_one_hot_embeddings: bool = False, dtype: str = "float32",
                feature_layers=None, feature_combine: str = "concat",
                inference_only: bool = False) -> BertClassifier:
    """A built :class:`BertClassifier` for the task, its variables created under ``strategy``
    (``dtype``: the ``--dtype`` compute precision, :mod:`bert_tf.training.precision`;
    ``feature_layers``, ``feature_combine``: ``--feature_layers``, issue 26;
    ``inference_only``: a model that only predicts, its matmul kernels in ``dtype``,
    :func:`bert_tf.training.precision.dtype_policy`)."""
    with dtype_policy(dtype, inference_only=inference_only), strategy.scope():
        model = BertClassifier(config, processor.num_labels,
                               is_regression=processor.is_regression,
                               use_one_hot_embeddings=use_one_hot_embeddings,
                               feature_layers=feature_layers, feature_combine=feature_combine)
        model.build_with_dummy_input()
    return model


# ---------------------------------------------------------------------------------------------
# Run
# ---------------------------------------------------------------------------------------------

def probabilities_of_logits(logits: np.ndarray, regression: bool) -> np.ndarray:
    """float32 ``[N, num_labels]`` logits -> the model's ``probabilities`` output: the
    softmax over the last axis (the score itself for regression, as
    :class:`bert_tf.bert.classifier.BertClassifier`)."""
    logits = np.asarray(logits, np.float32)
    if regression:
        return logits
    return tf.nn.softmax(tf.constant(logits), axis=-1).numpy()


def check_checkpoints_fit(name_map, args: ClassifierArgs) -> None:
    """Checks the checkpoint the run will read against the model before any file is written
    (the original, and bert_tf before issue 15, wrote ``train.tf_record`` first): the newest
    ``model.ckpt-N`` of ``--output_dir`` (every variable), else ``--init_checkpoint`` (the
    variables it has, :func:`bert_tf.checkpoint_io.check_fits`).

    Raises:
      CheckpointError: a shape that does not fit (names the variable and both shapes), none
        of the model's variables in ``--init_checkpoint``, or a variable missing from the
        ``--output_dir`` checkpoint.
    """
    existing = checkpoint_io.existing_checkpoints(args.output_dir)
    if existing:
        _check_head_fits_task(name_map, existing[-1], args)
        checkpoint_io.check_fits(name_map, existing[-1], require_all=True)
    elif args.init_checkpoint:
        checkpoint_io.check_fits(name_map, args.init_checkpoint)


def _check_head_fits_task(name_map, prefix: str, args: ClassifierArgs) -> None:
    """The classifier head of ``--output_dir``'s checkpoint against the task's label count
    (bert_tf: a checkpoint fine-tuned on another task was said not to match the config).

    Raises:
      CheckpointError: the head has another number of outputs; names both and the flags.
    """
    stored = checkpoint_io.list_checkpoint(prefix)
    head = name_map.get("output_bias")
    if head is None or "output_bias" not in stored:
        return
    held, needed = tuple(stored["output_bias"][0]), tuple(head.shape)
    if held != needed:
        raise CheckpointError(
            f"{prefix}: its classifier head (output_bias) has {held[0] if held else 0} "
            f"output(s) but --task_name={args.task_name} needs {needed[0]}: --output_dir="
            f"{args.output_dir} holds a model fine-tuned for another task; use another "
            "--output_dir")


def run(args: ClassifierArgs, strategy: Optional[tf.distribute.Strategy] = None,
        stop_at_step: Optional[int] = None) -> ClassifierResult:
    """Runs training, evaluation, prediction and export as the flags say (spec 8.7).

    The entry point (``run_classifier.py``) resolves the embedded default model
    (:func:`bert_tf.defaults.resolve_model_files`) before, and runs
    :func:`bert_tf.bert.tasks.siamese.run` instead for ``--siamese``.

    Args:
      args: the flags (``bert_config_file`` and ``vocab_file`` given or resolved).
      strategy: a ``tf.distribute`` strategy (default: from the TPU flags, ``TF_CONFIG`` and
        the visible devices, :func:`bert_tf.training.strategy.strategy_from_flags`).
      stop_at_step: (tests) stop training at this global step; the schedule keeps its length.

    Returns:
      A :class:`ClassifierResult`.

    Raises:
      FlagError, ConfigError, CaseMismatchError: bad flags (named).
      InputDataError: a bad data row (file and line), an empty data file, an unknown label.
      CheckpointError: an unreadable or non-fitting checkpoint.
      NanLossError: training diverged.
      Nothing is left half-written: every output is renamed into place when complete.
    """
    if args.siamese:
        raise FlagError("--siamese: run bert_tf.bert.tasks.siamese.run (run_classifier.py "
                        "dispatches it)")
    if args.num_restarts > 1:  # bert_tf, issue 26
        require_args(args)
        recipes.check_recipe_flags(args)
        return restarts.run_restarts(args, run, headline_metric(args.task_name),
                                     restart_metrics, restart_flags={"do_predict": False},
                                     final_flags={"do_eval": False})
    config, processor, tokenizer = check_args(args)
    recipes.start(args)  # --seed, --deterministic: before the model is built
    window_pooling = check_window_flags(args.doc_stride, args.window_pooling,
                                        args.max_seq_length)
    examples = read_task_examples(processor, args)
    check_pair_segments(config, args.bert_config_file, f"task {args.task_name}",
                        [ex for split in examples.values() for ex in split])
    if args.doc_stride is not None:  # a pair that does not fit the windows fails before training
        check_examples_fit_windows(examples, processor.get_labels(), args, tokenizer)
    strategy = strategy or strategy_from_flags(args)
    chief = loop.is_chief(strategy)
    trim = not (args.use_tpu or args.use_xla)
    trains = args.do_train or not (args.do_eval or args.do_predict or args.export_dir)

    def build():
        return build_model(config, processor, strategy, use_one_hot_embeddings=args.use_tpu,
                           dtype=args.dtype,
                           feature_layers=recipes.feature_layers(args, config.num_hidden_layers),
                           feature_combine=args.feature_combine,
                           inference_only=not (trains or args.export_dir))

    def restore(model):
        check_checkpoints_fit(model.name_map(), args)
        return restore_for_inference(model.name_map(), args.output_dir,
                                     args.init_checkpoint).global_step

    # weights created straight from the checkpoint, no random copy (issue 24)
    if trains:
        model, warm = build_for_training(build, recipes.warm_start_load(args), args.output_dir,
                                         args.init_checkpoint, strategy)
        global_step = 0
        check_checkpoints_fit(model.name_map(), args)
    else:
        model, global_step = build_from_checkpoint(build, restore, strategy)
    result = ClassifierResult(model=model, global_step=global_step)
    if args.do_train:
        train_classifier(result, examples["train"], processor, tokenizer, args, strategy,
                         trim, stop_at_step, warm)

    predictor = BatchPredictor(model, ["logits", "probabilities"], strategy, trim_padding=trim,
                               length_multiple=LENGTH_MULTIPLE,
                               input_signature=dynamic_signature() if trim else None)
    if args.do_eval:
        evaluate_classifier(result, predictor, examples["eval"], processor, tokenizer, args,
                            window_pooling, chief)
    if args.do_predict:
        predict_classifier(result, predictor, examples["predict"], processor, tokenizer, args,
                           window_pooling, chief)
    if args.export_dir and chief:
        preprocessor = BertTextPreprocessor(args.vocab_file, args.do_lower_case,
                                            args.max_seq_length)
        result.export_path = export_saved_model(model, args.export_dir, preprocessor)
    return result


def restart_metrics(result: ClassifierResult) -> Dict[str, float]:
    """One restart's metrics (``--num_restarts``): ``eval_results.txt``'s and ``eval_f1``."""
    return {**{k: float(v) for k, v in result.eval_results.items()}, **result.eval_extra}


def headline_metric(task_name: str) -> str:
    """The default ``--select_metric`` of a task: ``eval_mcc`` (CoLA), ``eval_pearson``
    (STS-B), else ``eval_accuracy``."""
    task = (task_name or "").lower()
    if task in metrics.MCC_TASKS:
        return "eval_mcc"
    return "eval_pearson" if task == "sts-b" else "eval_accuracy"


def check_examples_fit_windows(examples: Dict[str, list], label_list, args: ClassifierArgs,
                               tokenizer) -> None:
    """``--doc_stride``: cuts every example of every mode into its windows once, so a pair
    that does not fit the windows fails before training (names the record file).

    Raises:
      InputDataError: a pair whose shorter side leaves no room for the other's window.
    """
    for name, file_name in (("train", TRAIN_FILE), ("eval", EVAL_FILE),
                            ("predict", PREDICT_FILE)):
        for example in examples.get(name, ()):
            data.convert_example_windows(data.NUM_LOGGED_EXAMPLES, example, label_list,
                                         args.max_seq_length, tokenizer, args.doc_stride,
                                         where=f"{file_name}: ")


def train_classifier(result: ClassifierResult, train_examples: list, processor, tokenizer,
                     args: ClassifierArgs, strategy, trim: bool,
                     stop_at_step: Optional[int], warm=None) -> None:
    """The ``do_train`` step: ``train.tf_record`` (one record per window with
    ``--doc_stride``), the schedule, then :func:`bert_tf.training.loop.train` of
    ``result.model``; fills ``result``'s ``num_train_steps``, ``num_warmup_steps``, ``train``
    and ``global_step``. ``warm``: the LoadReport of the warm start done when the model was
    built (:func:`bert_tf.bert.recipes.warm_start_load`), or None.

    Raises:
      FlagError: no training step; NanLossError, CheckpointError: as :func:`run`.
    """
    model = result.model
    regression = processor.is_regression
    steps, warmup = training_steps(len(train_examples), args)
    result.num_train_steps, result.num_warmup_steps = steps, warmup
    train_file = os.path.join(args.output_dir, TRAIN_FILE)
    num_records = data.file_based_convert_examples_to_features(
        train_examples, processor.get_labels(), args.max_seq_length, tokenizer, train_file,
        doc_stride=args.doc_stride)
    if args.doc_stride is not None:  # each window is a training instance
        steps, warmup = training_steps(num_records, args)
        result.num_train_steps, result.num_warmup_steps = steps, warmup
    logging.info("***** Running training *****")
    logging.info("  Num examples = %d", len(train_examples))
    if args.doc_stride is not None:
        logging.info("  Num windows = %d (--doc_stride=%d)", num_records, args.doc_stride)
    logging.info("  Batch size = %d", args.train_batch_size)
    logging.info("  Num steps = %d", steps)
    settings = {"warm_start": warm}
    if args.freeze_encoder and recipes.freeze_encoder(model, args, model.encoder_name_map(),
                                                      load_fn=lambda *_: warm):
        settings = {"init_checkpoint": None, "warm_started": True}
    train_config = loop.TrainConfig.from_flags(
        args, steps, num_warmup_steps=warmup, log_every_n_steps=max(1, min(100, steps // 20)),
        stop_at_step=stop_at_step, **settings, layer_recipe=recipes.layer_recipe(
            args, recipes.bert_block_of(model.config.num_hidden_layers), model.name_map()))

    result.train = loop.train(
        model, classifier_loss_fn(regression),
        train_dataset_fn(train_file, args.max_seq_length, args.train_batch_size,
                         regression, trim=trim, group_lengths=args.group_by_length and trim,
                         seed=SHUFFLE_SEED if args.seed is None else args.seed),
        model.name_map(), train_config, strategy=strategy)
    result.global_step = result.train.global_step


def evaluate_classifier(result: ClassifierResult, predictor, eval_examples: list, processor,
                        tokenizer, args: ClassifierArgs, window_pooling: Optional[str],
                        chief: bool) -> None:
    """The ``do_eval`` step: ``eval.tf_record`` (TPU padding, or windows with
    ``--doc_stride``), the logits of every example (pooled over its windows), the metrics of
    :func:`eval_metrics` (spec 8.6), the log and, on the chief, ``eval_results.txt``; fills
    ``result``'s ``eval_results``, ``eval_extra`` and ``num_eval_examples``."""
    label_list = processor.get_labels()
    regression = processor.is_regression
    eval_file = os.path.join(args.output_dir, EVAL_FILE)
    if args.doc_stride is None:
        eval_examples, num_actual = data.add_tpu_padding(eval_examples, args.eval_batch_size,
                                                         args.use_tpu)
        data.file_based_convert_examples_to_features(eval_examples, label_list,
                                                     args.max_seq_length, tokenizer,
                                                     eval_file)
        num_records = len(eval_examples)
    else:
        num_actual = len(eval_examples)
        num_records = data.file_based_convert_examples_to_features(
            eval_examples, label_list, args.max_seq_length, tokenizer, eval_file,
            doc_stride=args.doc_stride,
            pad_to_multiple=args.eval_batch_size if args.use_tpu else None)
    logging.info("***** Running evaluation *****")
    logging.info("  Num examples = %d (%d actual, %d padding)", len(eval_examples),
                 num_actual, len(eval_examples) - num_actual)
    logging.info("  Batch size = %d", args.eval_batch_size)
    if args.doc_stride is None:
        logits, labels, real, batch_losses = predict_all(
            predictor, eval_file, args, args.eval_batch_size, regression, "eval",
            num_records)
    else:
        logging.info("  Num windows = %d (--doc_stride=%d, --window_pooling=%s)",
                     num_records, args.doc_stride, window_pooling)
        logits, labels, batch_losses = predict_windows(
            predictor, eval_file, args, args.eval_batch_size, regression, "eval",
            num_records, num_actual, window_pooling)
        real = np.ones(num_actual, np.int32)
    result.eval_results = eval_metrics(
        logits, labels, real, batch_losses, result.global_step, regression,
        mcc=args.task_name.lower() in metrics.MCC_TASKS)
    if label_list is not None and len(label_list) == 2:
        result.eval_extra["eval_f1"] = metrics.binary_f1(logits, labels, real)
    result.num_eval_examples = num_actual
    logging.info("***** Eval results *****")
    for key in sorted(result.eval_results):
        logging.info("  %s = %s", key, str(result.eval_results[key]))
    for key, value in result.eval_extra.items():
        logging.info("  %s = %.6f (bert_tf, not written)", key, value)
    if chief:
        write_eval_results(args.output_dir, result.eval_results)


def predict_classifier(result: ClassifierResult, predictor, predict_examples: list, processor,
                       tokenizer, args: ClassifierArgs, window_pooling: Optional[str],
                       chief: bool) -> None:
    """The ``do_predict`` step: ``predict.tf_record`` (TPU padding, or windows with
    ``--doc_stride``), the probabilities of every real example (of its windows' pooled
    logits), on the chief ``test_results.tsv``; fills ``result``'s ``predictions``,
    ``num_predict_examples`` and ``test_results_file``.

    Raises:
      RuntimeError: fewer predictions than examples came back.
    """
    label_list = processor.get_labels()
    regression = processor.is_regression
    if args.doc_stride is not None:
        predict_file = os.path.join(args.output_dir, PREDICT_FILE)
        num_actual = len(predict_examples)
        num_records = data.file_based_convert_examples_to_features(
            predict_examples, label_list, args.max_seq_length, tokenizer, predict_file,
            doc_stride=args.doc_stride,
            pad_to_multiple=args.predict_batch_size if args.use_tpu else None)
        logging.info("***** Running prediction*****")
        logging.info("  Num examples = %d, in %d windows (--doc_stride=%d, --window_pooling=%s)",
                     num_actual, num_records, args.doc_stride, window_pooling)
        logits, _, _ = predict_windows(predictor, predict_file, args, args.predict_batch_size,
                                       regression, "predict", num_records, num_actual,
                                       window_pooling)
        probabilities = probabilities_of_logits(logits, regression)
    else:
        padded, num_actual, predict_file = write_predict_records(
            predict_examples, label_list, args, tokenizer)
        logging.info("  Batch size = %d", args.predict_batch_size)
        probabilities = predict_probabilities(predictor, predict_file, args, regression,
                                              len(padded), num_actual)
    result.predictions = probabilities
    result.num_predict_examples = num_actual
    result.test_results_file = os.path.join(args.output_dir, TEST_RESULTS_FILE)
    if chief:
        atomic_write_text(result.test_results_file, format_test_results(probabilities))
