"""TensorBoard event files of training and evaluation (the Estimator's summaries).

The original scripts ran under ``TPUEstimator``, which wrote event files to ``--output_dir``
(``model_dir``): the training ``loss``, ``global_step/sec`` and ``examples/sec`` (its
``StepCounterHook``), and, per evaluation, the metrics dict in ``<model_dir>/eval/`` (tags
the metric names: ``eval_accuracy``, ``eval_loss``, ``loss``, ...). XLNet's host call added
``train/lr`` and ``train/gnorm`` (spec `xlnet.md`, ``construct_scalar_host_call``).
:class:`TrainSummaries` writes all of these for every training run of :func:`bert_tf.training.
loop.train` (BERT, XLNet and ALBERT tasks alike); :func:`write_eval_summaries` the eval ones.

Event files are created on the first write only, so a run that fails before its first update
leaves no event file behind.
"""

import math
import os
import time
from typing import Any, Mapping, Optional

import numpy as np
import tensorflow as tf

__all__ = ["EVAL_SUBDIR", "TrainSummaries", "write_eval_summaries"]

EVAL_SUBDIR = "eval"  # the Estimator's evaluation summary folder inside model_dir


def _learning_rate(optimizer, step: int) -> float:
    """The schedule's rate at global step ``step`` (the pairing XLNet's host call logs:
    summary step ``s`` with ``lr(s)``), or the optimizer's constant rate."""
    rate = getattr(optimizer, "_learning_rate", None)
    if callable(rate):
        return float(rate(step))
    return float(optimizer.learning_rate)


class TrainSummaries:
    """Training scalars, written by the chief every ``log_every_n_steps`` updates.

    Tags at global step ``N`` (after the chunk): ``<loss_tag>`` (mean loss of the chunk,
    float), ``train/lr`` (the schedule at ``N``, the value XLNet's host call pairs with step
    ``N``), ``train/gnorm`` (pre-clip global gradient norm of the last update, for an
    :class:`~bert_tf.training.optimizer.AdamWeightDecay`), ``global_step/sec`` and
    ``examples/sec`` (over the time since the previous write or the start, as the
    Estimator's ``StepCounterHook``).

    Args:
      summary_dir: the event file folder (created on first write), or None: nothing written.
      loss_tag: tag of the loss (``loss``, the Estimator's; XLNet ``train/total_loss``).
      optimizer: the training optimizer (a ``LossScaleOptimizer`` is unwrapped).
      chief: whether this worker writes.
      start_step: the global step training starts from (int).
    """

    def __init__(self, summary_dir: Optional[str], loss_tag: str, optimizer, chief: bool,
                 start_step: int = 0):
        self.summary_dir = summary_dir if chief else None
        self.loss_tag = loss_tag
        self.optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        self.writer = None
        self.last_step, self.last_time = int(start_step), time.time()
        self.examples = 0

    def write(self, step: int, loss: float, examples: int, due: bool = True) -> None:
        """Records a chunk that ended at global step ``step`` (int) with mean ``loss`` after
        consuming ``examples`` examples (int); when ``due`` (the log cadence: every
        ``log_every_n_steps``, as the Estimator's ``save_summary_steps``, and the last step)
        writes the scalars and flushes. Speeds cover every chunk since the last write."""
        if self.summary_dir is None:
            return
        self.examples += int(examples)
        if not due:
            return
        if self.writer is None:
            self.writer = tf.summary.create_file_writer(self.summary_dir)
        now = time.time()
        elapsed = max(now - self.last_time, 1e-9)
        with self.writer.as_default(step=step):
            tf.summary.scalar(self.loss_tag, loss)
            tf.summary.scalar("train/lr", _learning_rate(self.optimizer, step))
            norm = getattr(self.optimizer, "global_norm", None)
            if norm is not None:
                tf.summary.scalar("train/gnorm", norm)
            tf.summary.scalar("global_step/sec", (step - self.last_step) / elapsed)
            tf.summary.scalar("examples/sec", self.examples / elapsed)
        self.writer.flush()
        self.last_step, self.last_time, self.examples = step, now, 0


def _scalar(value: Any) -> Optional[float]:
    """``value`` as a float when it is one finite-or-not number (numpy or Python), else None."""
    if isinstance(value, (str, bytes)):
        return None
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return None
    if array.size != 1 or not np.issubdtype(array.dtype, np.number):
        return None
    return float(array.reshape(()))


def write_eval_summaries(model_dir: str, results: Mapping[str, Any],
                         step: Optional[int] = None) -> Optional[str]:
    """Writes the numeric entries of an evaluation's ``results`` as scalars to
    ``<model_dir>/eval/`` (the Estimator's evaluation summaries; tags the keys, e.g.
    ``eval_accuracy``, ``eval_loss``, ``loss``).

    Args:
      model_dir: the training output folder.
      results: metric name -> value; non-numeric values, arrays (ALBERT's STS-B ``pred``)
        and the step itself (``global_step``, XLNet's ``step``) are not written.
      step: the summary step; default ``results["global_step"]`` (0 when absent).

    Returns:
      the event folder, or None when there was nothing to write.
    """
    if step is None:
        step = _scalar(results.get("global_step", 0))
        step = 0 if step is None or not math.isfinite(step) else int(step)
    values = {k: _scalar(v) for k, v in results.items() if k not in ("global_step", "step")}
    values = {k: v for k, v in values.items() if v is not None}
    if not values:
        return None
    folder = os.path.join(model_dir, EVAL_SUBDIR)
    writer = tf.summary.create_file_writer(folder)
    with writer.as_default(step=int(step)):
        for key in sorted(values):
            tf.summary.scalar(key, values[key])
    writer.flush()
    writer.close()
    return folder
