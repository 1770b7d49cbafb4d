"""The run pieces of a GLUE classifier run shared by BERT's and ALBERT's
(:mod:`bert_tf.bert.tasks.classifier`, :mod:`bert_tf.albert.tasks.classifier`): batched
prediction over the classifier records (plain and ``--doc_stride`` windows), the original's
EVAL metrics, the probabilities of ``--do_predict`` and the ``--export_dir`` SavedModel.

The model is a value (a built :class:`bert_tf.bert.classifier.BertClassifier` or ALBERT's
``AlbertClassifier``: features -> ``logits`` / ``probabilities``); nothing here imports a family.
"""

from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from bert_tf.data.classifier_records import eval_dataset
from bert_tf.data.windows import first_window_rows, pool_window_logits
from bert_tf.feature_names import SEQUENCE_FEATURES
from bert_tf.run import serving
from bert_tf.training import metrics
from bert_tf.training.predict import SORT_WINDOW_BATCHES, numpy_batches


def eval_metrics(logits: np.ndarray, labels: np.ndarray, is_real_example: np.ndarray,
                 batch_losses: Sequence[float], global_step: int, regression: bool = False,
                 mcc: bool = False) -> Dict[str, Any]:
    """The metrics of the original EVAL mode (spec 8.6), as numpy scalars.

    Args:
      logits: float32 ``[N, num_labels]`` of every evaluated example (padding included).
      labels: ``[N]`` label ids (float scores for regression).
      is_real_example: ``[N]`` 1 for real examples, 0 for TPU padding (the weights).
      batch_losses: each eval batch's unweighted mean loss.
      global_step: the step of the evaluated weights.
      mcc: add ``eval_mcc``, the Matthews correlation (bert_tf, beyond the original: GLUE's
        CoLA metric, :func:`bert_tf.training.metrics.matthews_corrcoef`).

    Returns:
      Classification: ``eval_accuracy``, ``eval_loss`` (float32), ``global_step`` (int64),
      ``loss`` (float32) (and ``eval_mcc`` float32 with ``mcc``). Regression:
      ``eval_loss``, ``eval_pearson``, ``eval_spearman``, ``global_step``, ``loss``.
    """
    w = np.asarray(is_real_example, np.float32)
    per_example = metrics.per_example_loss(logits, labels, regression)
    count = max(float(w.sum()), 1e-12)
    results = {
        "eval_loss": np.float32(np.sum(w * per_example, dtype=np.float64) / count),
        "global_step": np.int64(global_step),
        "loss": np.float32(np.mean(np.asarray(batch_losses, np.float64))),
    }
    if regression:
        real = w > 0
        predictions = np.asarray(logits, np.float32)[real, 0]
        scores = np.asarray(labels, np.float32)[real]
        results["eval_pearson"] = np.float32(metrics.pearson(predictions, scores))
        results["eval_spearman"] = np.float32(metrics.spearman(predictions, scores))
    else:
        results["eval_accuracy"] = np.float32(metrics.accuracy(logits, labels, w))
        if mcc:
            results["eval_mcc"] = np.float32(metrics.matthews_corrcoef(logits, labels, w))
    return results


def predict_all(predictor, input_file, args, batch_size, regression, name, total):
    """Runs ``predictor`` over a classifier record file (eval layout) in order.

    Args:
      predictor: a :class:`BatchPredictor` with a ``logits`` output.
      input_file: the TFRecords (``input_ids``/``input_mask``/``segment_ids`` ``[S]``,
        ``label_ids``, ``is_real_example``); ``args.max_seq_length`` is S and
        ``args.use_tpu`` drops a last partial batch (the original's TPU eval).
      batch_size, regression, name (for the progress log), total (records).

    Returns:
      ``(logits [N, num_labels] float32, label_ids [N], is_real_example [N], batch_losses)``:
      ``batch_losses`` is each batch's unweighted mean loss (the Estimator's ``loss``).
    """
    logits, labels, real, batch_losses, _ = _predict_records(
        predictor, input_file, args, batch_size, regression, name, total, windowed=False)
    return logits, labels, real, batch_losses


def _predict_records(predictor, input_file, args, batch_size, regression, name, total,
                     windowed: bool):
    logits, labels, real, batch_losses, example_index = [], [], [], [], []
    dataset = eval_dataset(input_file, args.max_seq_length, batch_size, regression,
                           drop_remainder=args.use_tpu, windowed=windowed)
    for batch, out in predictor.predict(numpy_batches(dataset), total=total, name=name,
                                          sort_window=SORT_WINDOW_BATCHES):
        logits.append(out["logits"])
        labels.append(batch["label_ids"])
        real.append(batch["is_real_example"])
        if windowed:
            example_index.append(batch["example_index"])
        batch_losses.append(float(np.mean(metrics.per_example_loss(
            out["logits"], batch["label_ids"], regression))))
    return (np.concatenate(logits), np.concatenate(labels), np.concatenate(real),
            batch_losses, np.concatenate(example_index) if windowed else None)


def predict_windows(predictor, input_file: str, args, batch_size: int, regression: bool,
                    name: str, total: int, num_examples: int, pooling: str):
    """Runs ``predictor`` over ``--doc_stride`` window records and pools each example's windows
    (bert_tf, issue 13).

    Args:
      predictor: a :class:`BatchPredictor` with a ``logits`` output.
      input_file: window records (``example_index`` per record, -1 for TPU padding) of
        :func:`bert_tf.data.classifier.file_based_convert_examples_to_features`.
      batch_size, regression, name, total (records): as :func:`predict_all`.
      num_examples: N, the real examples; pooling: ``mean`` or ``max``.

    Returns:
      ``(logits float32 [N, num_labels], label_ids [N], batch_losses)``: the pooled logits of
      each example (:func:`bert_tf.data.windows.pool_window_logits`), its label, and the mean
      loss of each batch of ``batch_size`` examples (of the pooled logits, in order).

    Raises:
      RuntimeError: an example none of whose windows came back (a TPU run dropped them).
    """
    window_logits, window_labels, _, _, example_index = _predict_records(
        predictor, input_file, args, batch_size, regression, name, total, windowed=True)
    try:
        logits = pool_window_logits(window_logits, example_index, num_examples, pooling)
    except ValueError as e:
        raise RuntimeError(f"{input_file}: {e}") from e
    labels = np.asarray(window_labels)[first_window_rows(example_index, num_examples)]
    per_example = metrics.per_example_loss(logits, labels, regression)
    batch_losses = [float(np.mean(per_example[i:i + batch_size]))
                    for i in range(0, num_examples, batch_size)]
    return logits, labels, batch_losses


def predict_probabilities(predictor, predict_file: str, args, regression: bool, total: int,
                          num_actual: int) -> np.ndarray:
    """The ``probabilities`` of every real example of ``predict_file``, in order.

    Args:
      predictor: a :class:`BatchPredictor` with a ``probabilities`` output; predict_file: the
        records of :func:`bert_tf.data.glue_files.write_predict_records`; args: ``max_seq_length``,
        ``predict_batch_size``, ``use_tpu`` (drops a last partial batch, the original's TPU
        predict); total: records in the file; num_actual: the real (unpadded) examples.

    Returns:
      float ``[num_actual, num_labels]`` (float32 from a float32 model).

    Raises:
      RuntimeError: fewer rows than ``num_actual`` came back (the original asserts this).
    """
    rows: List[np.ndarray] = []
    dataset = eval_dataset(predict_file, args.max_seq_length, args.predict_batch_size,
                           regression, drop_remainder=args.use_tpu)
    for _, out in predictor.predict(numpy_batches(dataset), total=total, name="predict",
                                    sort_window=SORT_WINDOW_BATCHES):
        rows.append(out["probabilities"])
    probabilities = np.concatenate(rows)[:num_actual]
    if len(probabilities) != num_actual:  # the original asserts this
        raise RuntimeError(f"predicted {len(probabilities)} of {num_actual} examples")
    return probabilities


def export_saved_model(model, export_dir: str, preprocessor=None,
                       threshold: Optional[float] = None) -> str:
    """Writes a SavedModel of ``model`` under ``<export_dir>/<timestamp>/``, atomically.

    Outputs of every signature: float32 ``probabilities [batch, num_labels]`` (softmax; the raw
    score ``[batch, 1]`` for regression), ``logits`` (same shape) and, when ``threshold`` is
    given (ALBERT's ``--threshold_to_export``), ``threshold`` float32 scalar (the original's
    ``_add_threshold_to_model_fn``). With ``preprocessor`` (a ``BertTextPreprocessor``: the
    run's vocab, ``do_lower_case`` and ``max_seq_length``), :mod:`bert_tf.run.serving`'s
    three signatures: ``serving_default`` (tf.string ``text_a``, ``text_b`` ``[batch]``),
    ``serving_single`` (``text_a``) and ``serving_ids`` (int32 ``input_ids``, ``input_mask``,
    ``segment_ids`` ``[batch, seq]``, ``seq`` <= max_position_embeddings); the text signatures
    truncate as the original (no sliding windows). Without it (ALBERT), ``serving_default`` is
    the ids signature. Loadable with ``tf.saved_model.load`` (after ``import tensorflow_text``
    for the text signatures). Written by :func:`bert_tf.run.serving.write_saved_model`
    (temporary folder, then renamed).

    Returns:
      The folder written.

    Raises:
      FlagError: ``export_dir`` cannot be created or written.
    """
    dtypes = {name: tf.int32 for name in SEQUENCE_FEATURES}

    def serve(features):
        out = model(features, training=False)
        outputs = {"probabilities": out["probabilities"], "logits": out["logits"]}
        if threshold is not None:  # ALBERT --threshold_to_export: served with the predictions
            outputs["threshold"] = tf.constant(threshold, tf.float32)
        return outputs

    if preprocessor is None:
        def ids(input_ids, input_mask, segment_ids):
            return serve({"input_ids": input_ids, "input_mask": input_mask,
                          "segment_ids": segment_ids})
        return serving.write_saved_model(
            export_dir, [model], [(serving.DEFAULT_SIGNATURE, ids, serving.id_specs(dtypes))])
    return serving.write_saved_model(export_dir, [model, preprocessor],
                                     serving.text_endpoints(preprocessor, serve, dtypes))
