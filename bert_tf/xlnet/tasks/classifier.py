"""XLNet fine-tuning for sentence(-pair) classification and regression (original XLNet
`run_classifier.py`, spec `xlnet.md` 8).

The XLNet path of the root ``run_classifier.py``: it runs when ``--model_config_path`` or
``--spiece_model_file`` is given (:func:`is_xlnet_invocation`), with XLNet's original flags::

    python run_classifier.py --do_train=True --do_eval=True --task_name=sts-b \
      --data_dir=$GLUE/STS-B --output_dir=proc_data/sts-b --model_dir=exp/sts-b \
      --uncased=False --spiece_model_file=$LARGE/spiece.model \
      --model_config_path=$LARGE/xlnet_config.json --init_checkpoint=$LARGE/xlnet_model.ckpt \
      --max_seq_length=128 --train_batch_size=8 --num_core_per_host=4 --learning_rate=5e-5 \
      --train_steps=1200 --warmup_steps=120 --save_steps=600 --is_regression=True

What it writes, as the original:

* ``--output_dir``: the TFRecords ``{spm}.len-{S}.train.tf_record``,
  ``{spm}.len-{S}.{split}.eval.tf_record``, ``{spm}.len-{S}.{split}.predict.tf_record``
  (reused when they exist, unless ``--overwrite_data``; beyond the original, a cached file
  that does not fit this run -- another record count, float labels for a classification task
  or int labels for a regression one -- is an error,
  :func:`bert_tf.xlnet.data.classifier_records.check_cached_records`);
* ``--model_dir``: ``model.ckpt-N`` in the original layout (variables by their TF1 names,
  TF1 Adam slots ``<var>/Adam``, ``<var>/Adam_1``, ``beta1_power``, ``beta2_power`` — or
  ``<var>/adam_m``, ``<var>/adam_v`` with ``--weight_decay`` > 0 — and ``global_step``);
  training resumes from the newest one;
* evaluation of the last checkpoint in ``--model_dir`` (every one with ``--eval_all_ckpt``):
  ``eval_loss`` and ``eval_accuracy`` (classification) or ``eval_pearsonr`` (regression),
  weighted by ``is_real_example``, plus the Estimator's ``loss`` and ``global_step`` and the
  original's ``step``/``path``; logged as ``Eval result | ...`` and ``Best result | ...``;
* ``--predict_dir``: ``{task}.tsv`` (header ``index<TAB>prediction``; the value for
  regression, else a label) and ``{task}.logits.json`` (``json.dump(..., indent=4)``).

Beyond the original:
* ``--export_dir``: a raw-text SavedModel (strings in, logits and probabilities out; the ids
  signature beside it), :func:`_export` and :mod:`bert_tf.run.serving`;
* ``eval_results.txt`` in ``--model_dir`` (``key = value`` lines of the best result, BERT's
  format);
* every output (TFRecords, checkpoints, predictions, eval results) is written atomically;
* bad input fails before any file is written, with a message naming the flag, file or
  variable: a BERT checkpoint or config given to the XLNet flags, a checkpoint of the other
  ``untie_r`` setting, ``n_token`` different from the SentencePiece model's size, a
  SentencePiece model whose ``<sep>``/``<cls>`` ids are not XLNet's, BERT-only flags;
* special symbols written literally in the data (``<cls>``, ``<eop>``...) are reported (they
  are tokenized exactly as the original does);
* ``--doc_stride`` / ``--window_pooling`` (issue 13): examples longer than
  ``max_seq_length`` become run_squad's sliding windows (``A_window <sep> B <sep> <cls>``, a
  pair keeping its shorter side whole; :mod:`bert_tf.data.windows`) instead of being
  truncated, in record files named ``....stride-<D>.tf_record`` (never mistaken for the
  original's); each window trains with its example's label; eval and predict pool each
  example's window logits (mean, or max) into one row, metrics per example;
* predictions cover the real examples only (the original also wrote rows for the padding
  examples it had appended for evaluation when ``--do_eval`` and ``--do_predict`` ran
  together); the training examples are shuffled with a fixed seed (the original used numpy's
  unseeded global generator).

Flags shared with the BERT path keep their meaning. ``learning_rate``, ``train_batch_size``,
``eval_batch_size`` and ``predict_batch_size`` have other defaults in XLNet's original
(1e-5, 8, 128, 128; BERT: 5e-5, 32, 8, 8): here the XLNet default applies unless the flag is
given on the command line (the XLNet profile, :data:`bert_tf.flags.XLNET`, read by
:func:`bert_tf.flags.args_from_flags`). ``--output_dir`` holds only the TFRecords in the XLNet
path (checkpoints go to ``--model_dir``), as in the original.
"""

import dataclasses
import functools
import json
import os
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import atomic_write_text
from bert_tf.data import record_cache
from bert_tf.xlnet.data import classifier as data
from bert_tf.xlnet.data import classifier_records as records
from bert_tf.data.classifier import PaddingInputExample
from bert_tf.data.windows import check_window_flags, first_window_rows, pool_window_logits
from bert_tf.errors import CheckpointError, FlagError
# The XLNet path's dispatch and BERT-flag check (root scripts and tests call them from here).
from bert_tf.run import serving
from bert_tf.run.checks import require_one_mode
from bert_tf.xlnet.tasks.checks import (check_output_folders, classifier_outputs,
                                         require_positive_steps)
from bert_tf.tokenization.in_graph_sentencepiece import XLNetTextPreprocessor
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model, tokenize_fn
from bert_tf import checkpoint_io
from bert_tf.training import loop, metrics
from bert_tf.training.eval_results import write_eval_results
from bert_tf.training.summaries import write_eval_summaries
from bert_tf.training.predict import (SORT_WINDOW_BATCHES, BatchPredictor, dynamic_signature,
                                      numpy_batches)
from bert_tf.training.restore import (build_from_checkpoint, resolve_latest,
                                      restore_for_inference)
from bert_tf.training.precision import dtype_policy
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import XLNetConfig, check_spiece_matches_config, create_run_config
from bert_tf.xlnet.layers import SUMMARY_TYPES
from bert_tf.xlnet.model import XLNetClassifier
from bert_tf.xlnet.tasks.args import XLNetClassifierArgs
from bert_tf.xlnet.tasks import finetuning


@dataclasses.dataclass
class XLNetClassifierResult:
    """What :func:`run` did.

    Attributes:
      train: the :class:`bert_tf.training.loop.TrainResult`, or None.
      eval_results: one result dict per evaluated checkpoint, or None; best_eval: the best of
        them (or None).
      predict_files: ``[<task>.tsv, <task>.logits.json]`` written, or None;
        num_predictions: their rows.
      export_path: the SavedModel folder written, or None.
    """

    train: Optional[loop.TrainResult] = None
    eval_results: Optional[List[Dict[str, Any]]] = None
    best_eval: Optional[Dict[str, Any]] = None
    predict_files: Optional[List[str]] = None
    num_predictions: int = 0
    export_path: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_classifier.py`` prints with XLNet's flags (bert_tf's summary): where
        training ended, the best eval result, where the predictions went."""
        lines = []
        if self.train is not None:
            lines.append(f"trained to global_step {self.train.global_step}: "
                         f"{self.train.checkpoint}")
        if self.best_eval is not None:
            lines.append("eval: " + ", ".join(f"{k} = {v}"
                                              for k, v in sorted(self.best_eval.items())))
        if self.predict_files:
            lines.append(f"wrote {self.num_predictions} predictions to "
                         f"{' and '.join(self.predict_files)}")
        return lines


# ---------------------------------------------------------------------------------------------
# Checks (before anything is written)
# ---------------------------------------------------------------------------------------------

def check_args(args: XLNetClassifierArgs) -> None:
    """Flag checks of the original (one mode, known task) plus bert_tf's (required paths,
    positive sizes, regression flag matching the task...).

    Raises:
      FlagError: naming the flag.
    """
    check_tpu_flags(args)
    if not args.export_dir:
        require_one_mode(do_train=args.do_train, do_eval=args.do_eval, do_predict=args.do_predict)
    for name in ("model_config_path", "spiece_model_file", "task_name", "data_dir", "output_dir",
                 "model_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required by XLNet's run_classifier")
    if args.do_predict and not args.predict_dir:
        raise FlagError("--predict_dir is required with --do_predict (where <task>.tsv and "
                        "<task>.logits.json are written)")
    if args.summary_type not in SUMMARY_TYPES:
        raise FlagError(f"--summary_type={args.summary_type}: expected one of "
                        f"{', '.join(SUMMARY_TYPES)}")
    if args.max_seq_length < 3:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 3 "
                        "(<sep> <sep> <cls>)")
    require_positive_steps(args, ("train_batch_size", "eval_batch_size", "predict_batch_size",
                                  "iterations", "num_passes", "shuffle_buffer",
                                  "num_core_per_host"))
    if args.max_save < 0:
        raise FlagError(f"--max_save={args.max_save}: must be >= 0 (0 keeps all)")
    check_window_flags(args.doc_stride, args.window_pooling, args.max_seq_length, num_special=2)
    if args.eval_split not in ("dev", "test"):
        raise FlagError(f"--eval_split={args.eval_split}: expected dev or test")
    if args.do_eval and args.eval_split == "test":  # bert_tf: the original said nothing
        logging.warning("--do_eval --eval_split=test: a GLUE test.tsv has no labels (every "
                        "example takes the task's first label, as the original), so the eval "
                        "metrics written to --model_dir's eval_results.txt are not meaningful; "
                        "--eval_split=test is for --do_predict")
    if args.export_dir:
        serving.check_export_dir(args.export_dir, doc_stride=args.doc_stride,
                                 max_seq_length=args.max_seq_length)
    if args.do_train and args.init_checkpoint:
        ckpt_dir = os.path.dirname(os.path.abspath(args.init_checkpoint))
        if os.path.abspath(args.model_dir) in (ckpt_dir, os.path.abspath(args.init_checkpoint)):
            raise FlagError(f"--model_dir={args.model_dir} is the folder of --init_checkpoint; "
                            "use a separate folder for the fine-tuned checkpoints (XLNet README)")


def check_task_mode(processor, args: XLNetClassifierArgs) -> None:
    """``--is_regression`` must match the task (sts-b is regression, the others are not).

    Raises:
      FlagError: naming the task and the flag.
    """
    task_is_regression = getattr(processor, "is_regression", False)
    if task_is_regression and not args.is_regression:
        raise FlagError(f"--task_name={args.task_name} is a regression task: pass "
                        "--is_regression=True")
    if args.is_regression and not task_is_regression:
        raise FlagError(f"--is_regression=True but --task_name={args.task_name} is a "
                        "classification task")


# ---------------------------------------------------------------------------------------------
# Model, data
# ---------------------------------------------------------------------------------------------

def build_classifier(config: XLNetConfig, args: XLNetClassifierArgs, n_class: int,
                     is_training: bool, inference_only: bool = False) -> XLNetClassifier:
    """An :class:`XLNetClassifier` with the fine-tuning run config of ``args`` (no memory),
    built on a ``[1, max_seq_length]`` dummy batch. Call under the strategy scope.

    ``--use_bfloat16`` builds it with Keras' ``mixed_bfloat16`` policy
    (:func:`bert_tf.training.precision.dtype_policy`): bfloat16 compute as the original's
    TPU path, float32 variables, so checkpoints keep the original's float32 dtypes;
    ``inference_only`` (a model that only evaluates or predicts, no export): its matmul kernels
    held in bfloat16, cast once at the restore (issue 25)."""
    run_config = create_run_config(is_training, True, args)
    with dtype_policy("bfloat16" if args.use_bfloat16 else "float32",
                      inference_only=inference_only):
        model = XLNetClassifier(config, run_config, n_class=n_class,
                                summary_type=args.summary_type,
                                use_summ_proj=args.use_summ_proj, task_name=args.task_name,
                                cls_scope=args.cls_scope, is_regression=args.is_regression)
    s = args.max_seq_length
    model({"input_ids": tf.zeros([1, s], tf.int32), "segment_ids": tf.zeros([1, s], tf.int32),
           "input_mask": tf.zeros([1, s], tf.float32)}, training=False)
    return model


# ---------------------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------------------

def eval_metrics(per_example_loss: np.ndarray, logits: np.ndarray, labels: np.ndarray,
                 weights: np.ndarray, regression: bool, mcc: bool = False) -> Dict[str, float]:
    """The original metric_fn / regression_metric_fn (spec 8.4), weighted by is_real_example.

    Args:
      per_example_loss: float32 ``[N]``; logits: float32 ``[N, n_class]`` (``[N]`` for
      regression); labels: ``[N]``; weights: ``[N]`` is_real_example; regression: the task
      kind; mcc: add ``eval_mcc`` (bert_tf, beyond the original: GLUE's CoLA metric,
      :func:`bert_tf.training.metrics.matthews_corrcoef`).

    Returns:
      ``eval_loss`` and ``eval_accuracy`` (argmax == label) (and ``eval_mcc``), or
      ``eval_loss`` and ``eval_pearsonr`` (logit vs label) for regression; Python floats.
    """
    w = np.asarray(weights, np.float64)
    out = {"eval_loss": metrics.weighted_mean(per_example_loss, w)}
    if regression:
        out["eval_pearsonr"] = metrics.pearson(logits, labels, w)
    else:
        out["eval_accuracy"] = metrics.accuracy(logits, labels, w)
        if mcc:
            out["eval_mcc"] = metrics.matthews_corrcoef(logits, labels, w)
    return out


def evaluate_checkpoint(model: XLNetClassifier, prefix: str, config: XLNetConfig,
                        eval_file: str, args: XLNetClassifierArgs,
                        num_examples: Optional[int] = None,
                        held_step: Optional[int] = None) -> Dict[str, Any]:
    """Loads ``prefix`` into ``model`` and evaluates the eval TFRecord (Estimator.evaluate).
    ``held_step``: the model holds ``prefix`` already (restored at that global step): not read
    again.

    The batches (``--eval_batch_size``, the last partial one dropped as the original's TPU
    input_fn) run through :class:`bert_tf.training.predict.BatchPredictor`, each cut from the
    left to its longest real row (not on TPU; the logits do not change), the per-example loss
    computed in the same step.

    With ``--doc_stride`` (bert_tf, issue 13) the records are windows: the logits of each of
    the ``num_examples`` examples are its windows' pooled (``--window_pooling``), and the
    metrics are those of the pooled logits, per example (``loss``: the mean over batches of
    ``eval_batch_size`` examples).

    Returns:
      dict: the metrics of :func:`eval_metrics`, ``loss`` (mean of the batch losses, padding
      examples included, as the Estimator reports it), ``global_step``.

    Raises:
      CheckpointError: the checkpoint does not fit the model (names variable / shapes).
    """
    if held_step is None:
        held_step = restore_for_inference(
            checkpoint_map.xlnet_variable_map(model), args.model_dir, checkpoint=prefix,
            load_fn=functools.partial(checkpoint_map.load_xlnet_checkpoint,
                                      untie_r=config.untie_r)).global_step
    predictor = BatchPredictor(
        model, ["logits"], per_example_loss_fn=lambda out, labels: model.task_loss(
            out["logits"], labels)[0], trim_padding="left" if _trims(args) else False,
        input_signature=_signature(args, labels=True) if _trims(args) else None)
    windowed = args.doc_stride is not None
    dataset = records.eval_dataset(eval_file, args.max_seq_length, args.is_regression,
                                   args.eval_batch_size, drop_remainder=True, windowed=windowed)
    if windowed:
        logits, labels, totals = _pooled_window_logits(
            model, predictor, dataset, args, num_examples, args.eval_batch_size)
        losses = model.task_loss(tf.constant(logits), tf.constant(labels))[0].numpy()
        result = eval_metrics(losses, logits, labels, np.ones(len(labels)), args.is_regression,
                              mcc=args.task_name.lower() in metrics.MCC_TASKS)
        result["loss"] = float(np.mean(totals))
        result["global_step"] = held_step
        return result
    logits, losses, labels, weights, totals = [], [], [], [], []
    for batch, out in predictor.predict(numpy_batches(dataset), name="eval",
                                        sort_window=SORT_WINDOW_BATCHES):
        logits.append(out["logits"])
        losses.append(out["per_example_loss"])
        labels.append(batch["label_ids"])
        weights.append(batch["is_real_example"])
        # the Estimator's loss: tf.reduce_mean of the batch's per-example losses
        totals.append(float(tf.reduce_mean(out["per_example_loss"]).numpy()))
    result = eval_metrics(np.concatenate(losses), np.concatenate(logits), np.concatenate(labels),
                          np.concatenate(weights), args.is_regression,
                          mcc=args.task_name.lower() in metrics.MCC_TASKS)
    result["loss"] = float(np.mean(totals))
    result["global_step"] = held_step
    return result


def _trims(args: XLNetClassifierArgs, strategy=None) -> bool:
    """Whether batches are cut to their longest real row (bert_tf, beyond the original): not
    with ``--use_tpu`` or under a TPUStrategy (fixed shapes)."""
    return not (args.use_tpu or isinstance(strategy, tf.distribute.TPUStrategy))


def _signature(args: XLNetClassifierArgs, labels: bool = False):
    """The one-trace ``input_signature`` of the cut batches: float32 ``input_mask``, and the
    ``label_ids`` (float32 for regression) when the step computes the loss."""
    dtypes = {"input_mask": tf.float32}
    if labels:
        dtypes["label_ids"] = tf.float32 if args.is_regression else tf.int32
    return dynamic_signature(dtypes)


def _pooled_window_logits(model, predictor, dataset, args, num_examples: int, batch_size: int):
    """Window records -> ``(logits, labels, batch_losses)`` per example: the windows' logits
    pooled by ``--window_pooling`` (:func:`bert_tf.data.windows.pool_window_logits`), shaped
    as the model's (``[N]`` for regression, ``[N, n_class]`` else), the first window's label
    and the mean task loss of each batch of ``batch_size`` examples."""
    window_logits, window_labels, example_index = [], [], []
    for batch, out in predictor.predict(numpy_batches(dataset), name="eval",
                                        sort_window=SORT_WINDOW_BATCHES):
        rows = len(batch["example_index"])
        window_logits.append(np.reshape(out["logits"], [rows, -1]))
        window_labels.append(batch["label_ids"])
        example_index.append(batch["example_index"])
    example_index = np.concatenate(example_index)
    pooling = args.window_pooling or "mean"
    logits = pool_window_logits(np.concatenate(window_logits), example_index, num_examples,
                                pooling)
    if args.is_regression:
        logits = logits[:, 0]
    labels = np.concatenate(window_labels)[first_window_rows(example_index, num_examples)]
    totals = []
    for i in range(0, num_examples, batch_size):
        loss = model.task_loss(tf.constant(logits[i:i + batch_size]),
                               tf.constant(labels[i:i + batch_size]))[0]
        totals.append(float(tf.reduce_mean(loss).numpy()))
    return logits, labels, totals


def format_predictions(all_logits: List[List[float]], label_list: Optional[List],
                       threshold: float) -> str:
    """The original ``{task}.tsv``: header ``index\\tprediction``, then one row per example.

    One logit: the value; two: ``labels[1]`` if ``logit1 - logit0 > threshold`` else
    ``labels[0]``; more: the argmax label (spec 8.4).
    """
    lines = ["index\tprediction\n"]
    for i, logits in enumerate(all_logits):
        if len(logits) == 1:
            label_out = logits[0]
        elif len(logits) == 2:
            label_out = label_list[1] if logits[1] - logits[0] > threshold else label_list[0]
        else:
            label_out = label_list[int(np.argmax(np.array(logits, dtype=np.float32)))]
        lines.append("{}\t{}\n".format(i, label_out))
    return "".join(lines)


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def _log_result(prefix: str, result: Dict[str, Any]) -> None:
    logging.info("=" * 80)
    logging.info("%s | %s", prefix, " | ".join(f"{k} {v}" for k, v in sorted(result.items())))


@dataclasses.dataclass
class _Run:
    """What the steps of :func:`run` share: the task, model files and record files."""

    args: XLNetClassifierArgs
    processor: Any
    task_name: str
    label_list: Optional[List]
    n_class: int
    config: XLNetConfig
    sp: Any
    tokenize: Any
    init_checkpoint: Optional[str]
    strategy: tf.distribute.Strategy
    train_file: str
    eval_file: str
    predict_file: str
    train_examples: Optional[List] = None
    eval_examples: Optional[List] = None
    fingerprints: Dict[str, Any] = dataclasses.field(default_factory=dict)
    # (checkpoint prefix, global_step) the eval model's weights were last restored from: the
    # build, the evaluation and the prediction read a checkpoint once, not once each
    eval_holds: Optional[Tuple[str, int]] = None


def _check_cache(r: _Run, path: str, kind: str, examples, split: str) -> None:
    """A cached ``path`` of other data or flags is removed (written again, said in one line);
    one without a fingerprint is checked as before (:func:`records.check_cached_records`)."""
    r.fingerprints[path] = records.cache_fingerprint(r.args, r.task_name, kind, examples)
    if record_cache.reuse_cached(path, r.fingerprints[path], r.args.overwrite_data):
        records.check_cached_records(path, kind, r.args, len(examples), r.n_class, split)


def _wrote(r: _Run, path: str, written: Optional[int]) -> None:
    if written is not None and path in r.fingerprints:
        record_cache.write_fingerprint(path, r.fingerprints[path])


def _prepare(args: XLNetClassifierArgs, strategy) -> _Run:
    """Flags, config, SentencePiece model and record file names, checked (no file written)."""
    check_args(args)
    processor = data.get_processor(args.task_name)
    check_task_mode(processor, args)
    label_list = None if args.is_regression else processor.get_labels()
    config = XLNetConfig.from_json_file(args.model_config_path)
    sp = load_sp_model(args.spiece_model_file)
    check_spiece_matches_config(sp, config, args.spiece_model_file, args.model_config_path)
    spm_basename = os.path.basename(args.spiece_model_file)

    def record_file(kind, split=None):
        name = data.record_file_name(spm_basename, args.max_seq_length, kind,
                                     *([split] if split else []))
        if args.doc_stride is not None:  # window records never pass for the original's
            name = name.replace(".tf_record", f".stride-{args.doc_stride}.tf_record")
        return os.path.join(args.output_dir, name)

    return _Run(args=args, processor=processor, task_name=args.task_name.lower(),
                label_list=label_list, n_class=1 if args.is_regression else len(label_list),
                config=config, sp=sp,
                tokenize=functools.partial(tokenize_fn, sp, uncased=args.uncased),
                init_checkpoint=resolve_latest(args.init_checkpoint, flag="--init_checkpoint"),
                strategy=strategy or strategy_from_flags(args),
                train_file=record_file("train"),
                eval_file=record_file("eval", args.eval_split),
                predict_file=record_file("predict", args.eval_split))


def _check_checkpoints(r: _Run, name_map) -> bool:
    """Checks every checkpoint the run will read against the model; returns whether
    ``--model_dir`` holds checkpoints to resume from.

    Raises:
      CheckpointError: a checkpoint that does not fit, or nothing to evaluate / predict with.
    """
    args = r.args
    resume = (checkpoint_io.existing_checkpoints(args.model_dir)
              if tf.io.gfile.isdir(args.model_dir) else [])
    existing = checkpoint_io.step_checkpoints(args.model_dir, basename=None)
    if args.do_train and r.init_checkpoint and not resume:
        checkpoint_map.check_checkpoint_fits(name_map, r.init_checkpoint, r.config.untie_r)
    for prefix in ([existing[-1][1]] if existing else []) + (
            [args.predict_ckpt] if args.predict_ckpt else []):
        checkpoint_map.check_checkpoint_fits(name_map, prefix, r.config.untie_r,
                                             require_all=True)
    if not args.do_train and not existing and (args.do_eval or not args.predict_ckpt):
        raise CheckpointError(f"--model_dir={args.model_dir}: no checkpoint to evaluate or "
                              "predict with; train first (--do_train) or point --model_dir at "
                              "the fine-tuned checkpoints")
    return bool(resume)


def _read_examples(r: _Run) -> None:
    """Reads the examples and checks cached TFRecords, then creates the output folders.

    Raises:
      InputDataError: unreadable data; FlagError: a cached TFRecord that does not fit the run,
        or a folder that cannot be created.
    """
    args = r.args
    outputs = classifier_outputs(args, (r.train_file, r.eval_file, r.predict_file), r.task_name)
    check_output_folders(args, outputs)  # before the caches are read
    if args.do_train:
        r.train_examples = r.processor.get_train_examples(args.data_dir)
        _check_cache(r, r.train_file, "train", r.train_examples, "train")
    if args.do_eval or args.do_predict:
        r.eval_examples = (r.processor.get_dev_examples(args.data_dir) if args.eval_split == "dev"
                           else r.processor.get_test_examples(args.data_dir))
        if args.do_eval:
            _check_cache(r, r.eval_file, "eval", r.eval_examples, args.eval_split)
        if args.do_predict:
            _check_cache(r, r.predict_file, "predict", r.eval_examples, args.eval_split)
    if args.doc_stride is not None:  # a pair that does not fit the windows fails before training
        for path, exs in ((r.train_file, r.train_examples), (r.eval_file, r.eval_examples)):
            for example in exs or ():
                data.convert_example_windows(data.NUM_LOGGED_EXAMPLES, example, r.label_list,
                                             args.max_seq_length, r.tokenize, args.doc_stride,
                                             where=f"{os.path.basename(path)}: ")
    check_output_folders(args, outputs, make=True)


def _train(r: _Run, model, name_map, resume: bool, warm=None):
    """Writes the train TFRecord (cached) and trains (spec 8.3-8.4; ``warm``: the warm start
    done at the build, or None); returns the TrainResult."""
    args = r.args
    logging.info("Use tfrecord file %s", r.train_file)
    np.random.RandomState(records.TRAIN_SHUFFLE_SEED).shuffle(r.train_examples)
    logging.info("Num of train samples: %d", len(r.train_examples))
    _wrote(r, r.train_file, data.file_based_convert_examples_to_features(
        r.train_examples, r.label_list, args.max_seq_length, r.tokenize, r.train_file,
        num_passes=args.num_passes, overwrite=args.overwrite_data,
        symbol_report=data.LiteralSymbolReport(r.sp, f"{r.task_name} train examples"),
        doc_stride=args.doc_stride))
    batch = finetuning.global_train_batch_size(args, r.strategy)
    dataset = records.train_dataset(r.train_file, args.max_seq_length, args.is_regression,
                                    batch, args.shuffle_buffer, trim=_trims(r.args, r.strategy))
    return finetuning.train_with_xlnet_optimizer(model, name_map, dataset, args, r.strategy,
                                                 r.config, r.init_checkpoint, resume,
                                                 warm=warm)[0]


def _evaluate(r: _Run, eval_model):
    """Evaluates the last (or, with ``--eval_all_ckpt``, every) checkpoint of ``--model_dir``
    and writes the best to ``eval_results.txt``; returns ``(results, best)``."""
    args = r.args
    padded = list(r.eval_examples)
    while args.doc_stride is None and len(padded) % args.eval_batch_size != 0:
        padded.append(PaddingInputExample())  # windows: the window records are padded
    _wrote(r, r.eval_file, data.file_based_convert_examples_to_features(
        padded, r.label_list, args.max_seq_length, r.tokenize, r.eval_file,
        overwrite=args.overwrite_data,
        symbol_report=data.LiteralSymbolReport(r.sp, f"{r.task_name} {args.eval_split} "
                                                     "examples"),
        doc_stride=args.doc_stride, pad_to_multiple=args.eval_batch_size))
    steps_and_files = checkpoint_io.step_checkpoints(args.model_dir, basename=None)
    if not steps_and_files:
        raise CheckpointError(f"--model_dir={args.model_dir}: no checkpoint to evaluate")
    if not args.eval_all_ckpt:
        steps_and_files = steps_and_files[-1:]
    eval_results = []
    for global_step, prefix in steps_and_files:
        held = r.eval_holds[1] if r.eval_holds and r.eval_holds[0] == prefix else None
        ret = evaluate_checkpoint(eval_model, prefix, r.config, r.eval_file, args,
                                  num_examples=len(r.eval_examples), held_step=held)
        r.eval_holds = (prefix, ret["global_step"])
        ret["step"] = global_step
        ret["path"] = prefix
        eval_results.append(ret)
        _log_result("Eval result", ret)
        write_eval_summaries(args.model_dir, ret, step=global_step)  # TensorBoard eval/
    key_name = "eval_pearsonr" if args.is_regression else "eval_accuracy"
    best = sorted(eval_results, key=lambda res: res[key_name], reverse=True)[0]
    _log_result("Best result", best)
    write_eval_results(args.model_dir, best, summaries=False)  # eval/ has each checkpoint's
    return eval_results, best


def _restore_for_prediction(r: _Run, eval_model, purpose: str) -> None:
    """Loads ``--predict_ckpt`` (else the newest checkpoint of ``--model_dir``) into
    ``eval_model`` (XLNet names, ``untie_r`` from the config), for :func:`_predict` and the
    ``--export_dir`` writer.

    Raises:
      CheckpointError: no checkpoint (``--model_dir`` named, "no checkpoint to <purpose>").
    """
    args = r.args
    prefix = args.predict_ckpt or checkpoint_io.latest_checkpoint(args.model_dir)
    if not prefix:
        raise CheckpointError(f"--model_dir={args.model_dir}: no checkpoint to {purpose}")
    if r.eval_holds and r.eval_holds[0] == prefix:
        return  # the eval model holds it already
    restored = restore_for_inference(
        checkpoint_map.xlnet_variable_map(eval_model), args.model_dir, checkpoint=prefix,
        load_fn=functools.partial(checkpoint_map.load_xlnet_checkpoint,
                                  untie_r=r.config.untie_r))
    r.eval_holds = (prefix, restored.global_step)


def _predict(r: _Run, eval_model) -> Tuple[List[str], int]:
    """Predicts with ``--predict_ckpt`` (else the newest checkpoint) and writes
    ``<task>.tsv`` and ``<task>.logits.json`` to ``--predict_dir``; returns their paths and
    the number of predictions."""
    args = r.args
    _wrote(r, r.predict_file, data.file_based_convert_examples_to_features(
        r.eval_examples, r.label_list, args.max_seq_length, r.tokenize, r.predict_file,
        overwrite=args.overwrite_data, doc_stride=args.doc_stride))
    _restore_for_prediction(r, eval_model, "predict with")
    windowed = args.doc_stride is not None
    dataset = records.eval_dataset(r.predict_file, args.max_seq_length, args.is_regression,
                                   args.predict_batch_size, windowed=windowed)
    all_logits = []
    trim = _trims(args, r.strategy)
    predictor = BatchPredictor(eval_model, ["logits"], trim_padding="left" if trim else False,
                               input_signature=_signature(args) if trim else None)
    if windowed:  # one row per example: its windows' pooled logits (issue 13)
        logits, _, _ = _pooled_window_logits(eval_model, predictor, dataset, args,
                                             len(r.eval_examples), args.predict_batch_size)
        all_logits = [[float(x) for x in np.reshape(row, [-1])] for row in logits]
        dataset = dataset.take(0)
    for batch, out in predictor.predict(numpy_batches(dataset), total=len(r.eval_examples),
                                        sort_window=SORT_WINDOW_BATCHES):
        real = batch["is_real_example"]
        for row, is_real in zip(np.reshape(out["logits"], [len(real), -1]), real):
            if is_real:
                all_logits.append([float(x) for x in row.flat])
    tsv_path = os.path.join(args.predict_dir, f"{r.task_name}.tsv")
    json_path = os.path.join(args.predict_dir, f"{r.task_name}.logits.json")
    atomic_write_text(tsv_path, format_predictions(
        all_logits, r.label_list, args.predict_threshold))
    atomic_write_text(json_path, json.dumps(all_logits, indent=4))
    logging.info("Wrote %d predictions to %s and %s", len(all_logits), tsv_path, json_path)
    return [tsv_path, json_path], len(all_logits)


def run(args: XLNetClassifierArgs, strategy: Optional[tf.distribute.Strategy] = None
        ) -> XLNetClassifierResult:
    """Runs XLNet's run_classifier: train, evaluate, predict (module docstring).

    Returns:
      An :class:`XLNetClassifierResult`.

    Raises:
      FlagError, ConfigError, CheckpointError, InputDataError naming the flag, file, line or
      variable; raised before anything is written when the cause is in the flags, config,
      SentencePiece model or checkpoints.
    """
    r = _prepare(args, strategy)

    def build():
        with r.strategy.scope():
            return build_classifier(r.config, args, r.n_class, is_training=True)

    # the weights created straight from the checkpoint, no random copy (issue 24)
    model, warm = finetuning.build_warm_started(build, r.init_checkpoint, r.config, args,
                                                r.strategy) if args.do_train else (
        _build_eval_model(r), None)
    name_map = checkpoint_map.xlnet_variable_map(model)
    resume = _check_checkpoints(r, name_map)
    _read_examples(r)
    result = XLNetClassifierResult()
    if args.do_train:
        result.train = _train(r, model, name_map, resume, warm)
    if not (args.do_eval or args.do_predict or args.export_dir):
        return result
    eval_model = _build_eval_model(r) if args.do_train else model
    if args.do_eval or args.do_predict:
        logging.info("Num of eval samples: %d", len(r.eval_examples))
    if args.do_eval:
        result.eval_results, result.best_eval = _evaluate(r, eval_model)
    if args.do_predict:
        result.predict_files, result.num_predictions = _predict(r, eval_model)
    if args.export_dir:
        result.export_path = _export(r, eval_model)
    return result


def _build_eval_model(r: _Run):
    """The eval/predict/export model, built empty and created from the first checkpoint the
    run reads (:func:`_evaluate`'s, else :func:`_restore_for_prediction`'s; issue 24)."""
    args = r.args
    if args.do_eval:
        found = checkpoint_io.step_checkpoints(args.model_dir, basename=None)
        first = (found if args.eval_all_ckpt else found[-1:])[0][1] if found else None
    else:
        first = args.predict_ckpt or checkpoint_io.latest_checkpoint(args.model_dir)

    def build():
        with tf.distribute.get_strategy().scope():
            return build_classifier(r.config, args, r.n_class, is_training=False,
                                    inference_only=not args.export_dir)

    load_fn = functools.partial(checkpoint_map.load_xlnet_checkpoint, untie_r=r.config.untie_r)
    model, restored = build_from_checkpoint(build, first and (lambda model: restore_for_inference(
        checkpoint_map.xlnet_variable_map(model), args.model_dir, checkpoint=first,
        load_fn=load_fn)))
    if first and restored is not None:
        r.eval_holds = (first, restored.global_step)
    return model


def _export(r: _Run, eval_model) -> str:
    """``--export_dir`` (bert_tf): the raw-text SavedModel of the classifier with the weights
    ``--do_predict`` uses (``--predict_ckpt``, else the newest checkpoint of ``--model_dir``).

    Signatures (:mod:`bert_tf.run.serving`): ``serving_default`` (tf.string ``text_a``,
    ``text_b`` ``[B]``), ``serving_single`` (``text_a``), ``serving_ids`` (int32
    ``input_ids``, float32 ``input_mask`` (1 = padding, left padded), int32 ``segment_ids``
    ``[B, S]``). Outputs: float32 ``logits [B, n_class]`` (what ``<task>.logits.json`` holds;
    ``[B, 1]`` for regression) and, for classification, ``probabilities`` (their softmax).

    Raises:
      CheckpointError: no checkpoint; FlagError: ``--export_dir`` cannot be written.
    """
    args = r.args
    _restore_for_prediction(r, eval_model, "export")
    dtypes = {"input_ids": tf.int32, "input_mask": tf.float32, "segment_ids": tf.int32}

    def serve(features):
        logits = tf.cast(eval_model(features, training=False)["logits"], tf.float32)
        out = {"logits": tf.reshape(logits, [tf.shape(logits)[0], r.n_class])}
        if not args.is_regression:
            out["probabilities"] = tf.nn.softmax(out["logits"], axis=-1)
        return out

    preprocessor = XLNetTextPreprocessor(args.spiece_model_file, args.uncased,
                                         args.max_seq_length)
    return serving.write_saved_model(args.export_dir, [eval_model, preprocessor],
                                     serving.text_endpoints(preprocessor, serve, dtypes))
