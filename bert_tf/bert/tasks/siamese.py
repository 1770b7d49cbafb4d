"""Siamese (Sentence-BERT) fine-tuning: ``run_classifier.py --siamese=True``.

bert_tf, beyond the original (issue 13). A bi-encoder (:class:`bert_tf.bert.siamese.BertSiamese`)
reads each sentence of a pair alone and mean-pools its last layer; the training objective
depends on the task (Reimers & Gurevych 2019, section 3):

* ``sts-b``: cosine-similarity regression, mean of ``(cos(u, v) - score / 5)^2``;
* the pair classification tasks (``mrpc``, ``mnli``, ``xnli``, ``qnli``, ``qqp``, ``rte``,
  ``wnli``; NLI data in MNLI/XNLI layout): softmax on ``[u; v; |u - v|]``, cross-entropy.

Same flags, checks and files as ``run_classifier.py`` otherwise: ``--do_train`` trains on the
shared loop (:func:`bert_tf.training.loop.train`: AdamWeightDecay, warmup, ``model.ckpt-N``
in the original layout, ``bert/*`` + ``siamese/output_weights [num_labels, 3H]`` /
``siamese/output_bias``), warm-starting ``bert/*`` from ``--init_checkpoint``;
``--do_eval`` writes ``eval_results.txt``:

* ``sts-b``: ``eval_loss`` (the objective on dev), ``eval_pearson`` and ``eval_spearman`` of
  the cosine similarity against the gold scores (SBERT's evaluation), ``global_step``;
* classification: ``eval_accuracy``, ``eval_loss`` (mean cross-entropy), ``global_step``;

``--do_predict`` writes ``test_results.tsv``: the cosine similarity (``sts-b``) or the class
probabilities per line, ``str()`` of float32 joined by tabs. No TFRecords are written (the
pair layout has no original record format); ``--export_dir`` is refused.
"""

import os
from typing import Dict, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.bert import recipes
from bert_tf.atomic_files import atomic_write_text
from bert_tf.bert.siamese import (STS_SCORE_SCALE, BertSiamese, cosine_regression_loss,
                                  softmax_loss)
from bert_tf.data import classifier_processors as data
from bert_tf.data import glue_files
from bert_tf.bert.data.siamese_pairs import (LENGTH_MULTIPLE, PairArrays, pair_arrays, side_batches,
                                        train_dataset_fn)
from bert_tf.errors import FlagError
from bert_tf.bert.tasks import classifier
from bert_tf.training import loop, metrics
from bert_tf.training.eval_results import write_eval_results
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor
from bert_tf.training.restore import (bert_warm_start, build_for_training,
                                      build_from_checkpoint, restore_for_inference)
from bert_tf.training.strategy import strategy_from_flags

REGRESSION_TASKS = ("sts-b",)
SOFTMAX_TASKS = ("mrpc", "mnli", "xnli", "qnli", "qqp", "rte", "wnli")


def check_siamese_task(task_name: Optional[str]) -> None:
    """Refuses a known task the Siamese mode cannot train (single-sentence ``cola``,
    ``sst-2``). Unknown names are left to ``run_classifier``'s own check.

    Raises:
      FlagError: naming the task and the supported ones.
    """
    name = (task_name or "").lower()
    if name in data.PROCESSORS and name not in REGRESSION_TASKS + SOFTMAX_TASKS:
        raise FlagError(f"--siamese: task {task_name} has single sentences, not pairs; the "
                        f"Siamese mode supports {', '.join(REGRESSION_TASKS)} (cosine "
                        f"regression) and {', '.join(SOFTMAX_TASKS)} (softmax on (u, v, |u-v|))")


def build_model(config, processor: data.DataProcessor, strategy,
                use_one_hot_embeddings: bool = False, dtype: str = "float32") -> BertSiamese:
    """A built :class:`BertSiamese` for the task (no head for regression), variables created
    under ``strategy``."""
    num_labels = None if processor.is_regression else len(processor.get_labels())
    with dtype_policy(dtype), strategy.scope():
        model = BertSiamese(config, num_labels, use_one_hot_embeddings=use_one_hot_embeddings)
        model.build_with_dummy_input()
    return model


def _build(args, config, processor: data.DataProcessor, strategy):
    """``(model, warm start LoadReport or None, Restored or None)``: the model built empty and
    created from the checkpoint (issue 24): ``--init_checkpoint`` when training starts from it
    (:func:`bert_tf.training.restore.build_for_training`), else the weights eval uses
    (:func:`bert_tf.training.restore.restore_for_inference`); checked against the model first.

    Raises:
      CheckpointError: as :func:`bert_tf.bert.tasks.classifier.check_checkpoints_fit`.
    """
    def build():
        return build_model(config, processor, strategy, use_one_hot_embeddings=args.use_tpu,
                           dtype=args.dtype)

    def check_and_restore(model):
        classifier.check_checkpoints_fit(model.name_map(), args)
        return restore_for_inference(model.name_map(), args.output_dir, args.init_checkpoint)

    if not args.do_train:
        model, restored = build_from_checkpoint(build, check_and_restore, strategy)
        return model, None, restored
    model, warm = build_for_training(build, bert_warm_start(
        args.init_checkpoint, args.allow_partial_init_checkpoint), args.output_dir,
        args.init_checkpoint, strategy)
    classifier.check_checkpoints_fit(model.name_map(), args)
    return model, warm, None


def siamese_loss_fn(regression: bool):
    """``loss_fn(model, features, labels)`` for :func:`bert_tf.training.loop.train`: the
    batch mean of :func:`~bert_tf.bert.siamese.cosine_regression_loss` (``labels`` float32
    ``[B]`` scores) or :func:`~bert_tf.bert.siamese.softmax_loss` (int32 ``[B]`` ids), with
    dropout (``training=True``)."""
    def loss_fn(model, features, labels):
        out = model(features, training=True)
        if regression:
            return cosine_regression_loss(out["cosine"], labels)[0]
        return softmax_loss(out["logits"], labels)[0]

    return loss_fn


def embed_pairs(model: BertSiamese, arrays: PairArrays, batch_size: int, strategy,
                trim: bool, name: str):
    """Mean-pooled embeddings of both sides, in order.

    Returns:
      (u, v) float32 ``[N, H]`` each.
    """
    def encode(features, training=False):
        return {"embedding": model.embed(features, training=training)}

    predictor = BatchPredictor(encode, ["embedding"], strategy, trim_padding=trim,
                               length_multiple=LENGTH_MULTIPLE)
    sides = []
    for side in ("a", "b"):
        rows = [out["embedding"] for _, out in predictor.predict(
            side_batches(arrays, side, batch_size), total=len(arrays), name=f"{name} ({side})")]
        sides.append(np.concatenate(rows) if rows else
                     np.zeros((0, model.config.hidden_size), np.float32))
    return sides[0], sides[1]


def cosine_rows(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity, float64 arithmetic: ``[N, H]`` twice -> float32 ``[N]``."""
    u64, v64 = np.asarray(u, np.float64), np.asarray(v, np.float64)
    norms = np.maximum(np.linalg.norm(u64, axis=1) * np.linalg.norm(v64, axis=1), 1e-12)
    return ((u64 * v64).sum(axis=1) / norms).astype(np.float32)


def siamese_eval_metrics(model: BertSiamese, u: np.ndarray, v: np.ndarray, labels: np.ndarray,
                         regression: bool, global_step: int) -> Dict:
    """The ``eval_results.txt`` values of the Siamese mode (numpy scalars).

    Args:
      u, v: float32 ``[N, H]`` embeddings; labels: float32 scores ``[N]`` (regression) or
        int32 ids.

    Returns:
      regression: ``eval_loss`` (mean of ``(cos - score/5)^2``), ``eval_pearson``,
      ``eval_spearman`` (cosine vs score), ``global_step``; classification: ``eval_accuracy``,
      ``eval_loss`` (mean cross-entropy), ``global_step``.
    """
    results = {"global_step": np.int64(global_step)}
    if regression:
        cos = cosine_rows(u, v)
        scores = np.asarray(labels, np.float32)
        results["eval_loss"] = np.float32(np.mean(
            (cos.astype(np.float64) - scores / STS_SCORE_SCALE) ** 2))
        results["eval_pearson"] = np.float32(metrics.pearson(cos, scores))
        results["eval_spearman"] = np.float32(metrics.spearman(cos, scores))
        return results
    logits = model.classify(tf.constant(u), tf.constant(v)).numpy()
    results["eval_loss"] = np.float32(np.mean(metrics.per_example_loss(logits, labels, False)))
    results["eval_accuracy"] = np.float32(metrics.accuracy(logits, labels))
    return results


def check_args(args):
    """The Siamese mode's start-up checks, then ``run_classifier``'s
    (:func:`bert_tf.bert.tasks.classifier.check_args`).

    Returns:
      ``(config, processor, tokenizer)``.

    Raises:
      FlagError: a single-sentence task, ``--export_dir``, ``--doc_stride`` /
        ``--window_pooling``, and ``run_classifier``'s own flag checks.
    """
    check_siamese_task(args.task_name)
    if args.export_dir:
        raise FlagError("--export_dir: not supported with --siamese (export the encoder's "
                        "checkpoint instead: its bert/* variables are a plain BERT checkpoint)")
    if args.doc_stride is not None or args.window_pooling is not None:
        raise FlagError("--doc_stride / --window_pooling: not supported with --siamese (each "
                        "sentence is one [CLS] s [SEP] input, cut to --max_seq_length)")
    return classifier.check_args(args)


def run(args, strategy: Optional[tf.distribute.Strategy] = None,
        stop_at_step: Optional[int] = None) -> classifier.ClassifierResult:
    """Runs the Siamese mode as the flags say (see the module docstring): what
    ``run_classifier.py --siamese=True`` runs, the default model resolved before as for
    :func:`bert_tf.bert.tasks.classifier.run`.

    Args:
      args: a :class:`bert_tf.bert.tasks.classifier.ClassifierArgs` with ``siamese`` True.
      strategy, stop_at_step: as :func:`bert_tf.bert.tasks.classifier.run`.

    Returns:
      A :class:`bert_tf.bert.tasks.classifier.ClassifierResult` (``predictions``: cosine ``[N, 1]``
      or probabilities ``[N, num_labels]``).

    Raises:
      FlagError: a single-sentence task, ``--export_dir``, ``--doc_stride``, and ``run_classifier``'s own flag
        checks; InputDataError: a bad row, an example without a second sentence;
      CheckpointError, NanLossError: as :func:`bert_tf.bert.tasks.classifier.run`.
    """
    config, processor, tokenizer = check_args(args)
    recipes.refuse_recipe_flags(args, "--siamese")  # issue 26: the cross-encoder's only
    examples = glue_files.read_task_examples(processor, args)
    label_list = processor.get_labels()
    regression = processor.is_regression
    arrays = {mode: pair_arrays(exs, label_list, args.max_seq_length, tokenizer)
              for mode, exs in examples.items()}  # every file tokenized before training
    for mode, pairs in arrays.items():
        if pairs.num_truncated:
            logging.info("%s: %d of %d sentences cut to --max_seq_length=%d", mode,
                         pairs.num_truncated, 2 * len(pairs), args.max_seq_length)
    strategy = strategy or strategy_from_flags(args)
    chief = loop.is_chief(strategy)
    trim = not (args.use_tpu or args.use_xla)
    model, warm, restored = _build(args, config, processor, strategy)
    result = classifier.ClassifierResult(model=model)

    if args.do_train:
        train = arrays["train"]
        steps, warmup = classifier.training_steps(len(train), args)
        result.num_train_steps, result.num_warmup_steps = steps, warmup
        logging.info("***** Running Siamese training (%s objective) *****",
                     "cosine regression" if regression else "softmax (u, v, |u-v|)")
        logging.info("  Num examples = %d", len(train))
        logging.info("  Batch size = %d", args.train_batch_size)
        logging.info("  Num steps = %d", steps)
        train_config = loop.TrainConfig.from_flags(
            args, steps, num_warmup_steps=warmup, log_every_n_steps=max(1, min(100, steps // 20)),
            stop_at_step=stop_at_step, warm_start=warm)
        result.train = loop.train(model, siamese_loss_fn(regression),
                                  train_dataset_fn(train, args.train_batch_size, trim=trim),
                                  model.name_map(), train_config, strategy=strategy)
        result.global_step = result.train.global_step
    else:
        result.global_step = restored.global_step

    if args.do_eval:
        dev = arrays["eval"]
        logging.info("***** Running Siamese evaluation *****")
        logging.info("  Num examples = %d", len(dev))
        u, v = embed_pairs(model, dev, args.eval_batch_size, strategy, trim, "eval")
        result.eval_results = siamese_eval_metrics(model, u, v, dev.labels, regression,
                                                   result.global_step)
        result.num_eval_examples = len(dev)
        logging.info("***** Eval results *****")
        for key in sorted(result.eval_results):
            logging.info("  %s = %s", key, str(result.eval_results[key]))
        if chief:
            write_eval_results(args.output_dir, result.eval_results)

    if args.do_predict:
        test = arrays["predict"]
        u, v = embed_pairs(model, test, args.predict_batch_size, strategy, trim, "predict")
        if regression:
            result.predictions = cosine_rows(u, v)[:, None]
        else:
            result.predictions = tf.nn.softmax(model.classify(tf.constant(u), tf.constant(v)),
                                               axis=-1).numpy()
        result.num_predict_examples = len(test)
        result.test_results_file = os.path.join(args.output_dir, classifier.TEST_RESULTS_FILE)
        if chief:
            atomic_write_text(result.test_results_file,
                              glue_files.format_test_results(result.predictions))
    return result
