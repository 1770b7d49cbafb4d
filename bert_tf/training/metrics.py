"""Evaluation metrics of the classifier tasks, BERT and XLNet alike (numpy, host side).

The original scripts compute their metrics with ``tf.metrics`` inside the Estimator's
``metric_fn`` (BERT ``run_classifier.py``: accuracy and mean loss weighted by
``is_real_example``, spec `bert.md` 8.6; XLNet ``run_classifier.py``: accuracy, or
``streaming_pearson_correlation`` for regression, both weighted, spec `xlnet.md` 8.4). Here the
logits of every evaluated example are gathered on the host and the same quantities are
computed once, in float64, by the functions below:

* :func:`per_example_loss` -- softmax cross-entropy, or squared error (regression);
* :func:`weighted_mean` -- the weighted mean loss;
* :func:`accuracy` -- weighted fraction of ``argmax(logits) == label``;
* :func:`binary_f1` -- F1 of class 1 (the GLUE metric of MRPC and QQP);
* :func:`pearson` -- Pearson r with optional example weights;
* :func:`spearman` -- Pearson r of the average ranks (ties share their mean rank);
* :func:`matthews_corrcoef` -- Matthews correlation coefficient (bert_tf: beyond the
  original, the GLUE metric of CoLA).

Weights are ``is_real_example`` (1 for real examples, 0 for the padding examples the
original appends for the TPU), so padding never counts.
"""

import math
from typing import Optional

import numpy as np
from absl import logging

# The task whose GLUE metric is the Matthews correlation (GLUE paper, table 1).
MCC_TASKS = ("cola",)


def per_example_loss(logits: np.ndarray, labels: np.ndarray, regression: bool) -> np.ndarray:
    """float32 ``[N]``: ``-log_softmax(logits)[label]``, or the squared error (regression).

    Args:
      logits: float32 ``[N, num_labels]`` (``[N, 1]`` for regression).
      labels: int ``[N]`` label ids (float scores for regression).
      regression: squared error ``(logits[:, 0] - label)^2`` instead of cross-entropy.

    Source: the original ``create_model`` losses (BERT ``run_classifier.py``, spec 8.5).
    """
    logits = np.asarray(logits, np.float32)
    if regression:
        return np.square(logits[:, 0] - np.asarray(labels, np.float32))
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -log_probs[np.arange(len(labels)), np.asarray(labels, np.int64)]


def weighted_mean(values: np.ndarray, weights: np.ndarray) -> float:
    """``sum(w * v) / sum(w)`` in float64 (0.0 when ``sum(w)`` is 0).

    Args:
      values: float ``[N]`` (e.g. per-example losses); weights: ``[N]`` (``is_real_example``).

    Source: ``tf.metrics.mean(values, weights=is_real_example)`` of the original
    ``metric_fn`` (the ``eval_loss``).
    """
    w = np.asarray(weights, np.float64)
    total = float(w.sum())
    return float((w * np.asarray(values, np.float64)).sum() / total) if total > 0 else 0.0


def accuracy(logits: np.ndarray, labels: np.ndarray,
             weights: Optional[np.ndarray] = None) -> float:
    """Weighted fraction of examples whose ``argmax(logits)`` is the label.

    Args:
      logits: float ``[N, num_labels]``; labels: int ``[N]``; weights: ``[N]``
        (``is_real_example``; default all ones).

    Returns:
      float in [0, 1] (``sum(w * correct) / sum(w)``, float64; 0 when ``sum(w)`` is 0).

    Source: ``tf.metrics.accuracy(labels, predictions, weights=is_real_example)`` of the
    original ``metric_fn``.
    """
    correct = (np.argmax(logits, axis=-1) == np.asarray(labels)).astype(np.float64)
    w = np.ones_like(correct) if weights is None else np.asarray(weights, np.float64)
    total = float(w.sum())
    return float((w * correct).sum() / total) if total > 0 else 0.0


def binary_f1(logits: np.ndarray, labels: np.ndarray, is_real_example: np.ndarray) -> float:
    """F1 of class 1 over the real examples (the GLUE metric of MRPC and QQP).

    Args:
      logits: float ``[N, 2]``; labels: int ``[N]``; is_real_example: ``[N]`` (> 0 = real).

    Returns:
      ``2 tp / (2 tp + fp + fn)``, 0.0 when there is no positive prediction nor label.
    """
    real = np.asarray(is_real_example) > 0
    pred = np.argmax(logits, axis=1)[real] == 1
    gold = np.asarray(labels)[real] == 1
    tp = float(np.sum(pred & gold))
    fp = float(np.sum(pred & ~gold))
    fn = float(np.sum(~pred & gold))
    return 2 * tp / (2 * tp + fp + fn) if tp + fp + fn > 0 else 0.0


def matthews_corrcoef(logits: np.ndarray, labels: np.ndarray,
                      is_real_example: np.ndarray) -> float:
    """Matthews correlation coefficient of ``argmax(logits)`` against the labels.

    bert_tf, beyond the original (which reports only accuracy for CoLA): GLUE's CoLA metric.
    With ``C`` the confusion matrix of the real examples (``C[i, j]`` = examples of label i
    predicted j), ``t_k`` = row sums, ``p_k`` = column sums, ``c`` = trace, ``s`` = total::

        MCC = (c s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2) (s^2 - sum_k t_k^2))

    which for two classes is ``(tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn))``
    (Gorodkin 2004's multi-class form, as scikit-learn's ``matthews_corrcoef`` used by GLUE).

    Args:
      logits: float ``[N, num_labels]``; labels: int ``[N]``; is_real_example: ``[N]``
        (> 0 = real; the others are left out).

    Returns:
      float in [-1, 1]; 0.0 when a denominator factor is 0 (one class only), as scikit-learn.
    """
    real = np.asarray(is_real_example) > 0
    pred = np.argmax(logits, axis=1)[real].astype(np.int64)
    gold = np.asarray(labels)[real].astype(np.int64)
    n_class = int(max(np.asarray(logits).shape[1], pred.max(initial=-1) + 1,
                      gold.max(initial=-1) + 1))
    confusion = np.zeros((n_class, n_class), np.float64)
    np.add.at(confusion, (gold, pred), 1.0)
    t = confusion.sum(axis=1)
    p = confusion.sum(axis=0)
    c = float(np.trace(confusion))
    s = float(confusion.sum())
    cov_yp = c * s - float(np.dot(p, t))
    cov_pp = s * s - float(np.dot(p, p))
    cov_yy = s * s - float(np.dot(t, t))
    if cov_pp == 0 or cov_yy == 0:
        return 0.0
    return cov_yp / math.sqrt(cov_pp * cov_yy)


def pearson(x: np.ndarray, y: np.ndarray, weights: Optional[np.ndarray] = None) -> float:
    """Pearson correlation of two float vectors, with optional example weights, in float64.

    ``r = sum w (x - mx)(y - my) / sqrt(sum w (x - mx)^2 * sum w (y - my)^2)`` with the
    weighted means ``mx = sum w x / sum w``.

    Args:
      x, y: float ``[N]``; weights: ``[N]`` (``is_real_example``; default all ones).

    Returns:
      float; nan when ``x`` or ``y`` is constant (over the weighted examples), with a
      warning naming which (callers pass predictions, then labels).

    Source: XLNet's ``streaming_pearson_correlation(logits, labels, weights=is_real_example)``
    (original ``run_classifier.py`` ``regression_metric_fn``, spec `xlnet.md` 8.4); BERT's
    sts-b path (bert_tf) uses it unweighted over the real examples.
    """
    x = np.asarray(x, np.float64)
    y = np.asarray(y, np.float64)
    w = np.ones_like(x) if weights is None else np.asarray(weights, np.float64)
    total = w.sum()
    mx, my = (w * x).sum() / total, (w * y).sum() / total
    cxy = (w * (x - mx) * (y - my)).sum()
    cxx = (w * (x - mx) ** 2).sum()
    cyy = (w * (y - my) ** 2).sum()
    if cxx > 0 and cyy > 0:
        return float(cxy / math.sqrt(cxx * cyy))
    constant = " and ".join(name for name, c in (("predictions", cxx), ("labels", cyy)) if c <= 0)
    logging.warning("correlation undefined (nan): the %s are constant over the %d examples",
                    constant, len(x))  # bert_tf: a nan in eval_results.txt said nothing
    return float("nan")


def average_ranks(x: np.ndarray) -> np.ndarray:
    """float64 ``[N]``: 1-based ranks of ``x``, ties sharing their average rank.

    E.g. ``[10, 20, 20, 30] -> [1, 2.5, 2.5, 4]``.
    """
    x = np.asarray(x, np.float64)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), np.float64)
    sorted_x = x[order]
    i = 0
    while i < len(x):  # average ranks of ties
        j = i
        while j + 1 < len(x) and sorted_x[j + 1] == sorted_x[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rank correlation: :func:`pearson` of the :func:`average_ranks` of x and y.

    Args:
      x, y: float ``[N]`` (the real examples only).

    Returns:
      float; nan when one vector is constant.
    """
    return pearson(average_ranks(x), average_ranks(y))
