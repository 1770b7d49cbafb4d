"""Batched inference for the task scripts: the predict/eval half of ``TPUEstimator``.

The original scripts call ``estimator.predict`` / ``estimator.evaluate`` on a TFRecord input
function (spec `bert.md` 8.7, 9.4). Here a restored Keras model is run over batches of numpy
features by :class:`BatchPredictor`: one ``tf.function`` step per batch, outputs returned as
numpy arrays with the batch's rows in order. Used by `run_classifier.py` (probabilities,
logits) and meant for `run_squad.py` (start/end logits).

Devices:

* one device (CPU, one GPU) and ``MultiWorkerMirroredStrategy``: the step runs on the local
  device (each worker predicts its whole input; variables are read from the local copy);
* ``MirroredStrategy`` over several local devices and ``TPUStrategy``: each batch is padded
  with zero rows to a multiple of the replica count, split across the replicas with
  ``strategy.run``, and the padding rows are dropped from the outputs.

Beyond the original: ``trim_padding`` cuts a batch's ``[B, S]`` features to its longest real
row (rounded up to ``length_multiple``). Padding positions are masked keys (weight
``exp(-10000) = 0``, XLNet's ``-1e30``), so per-example outputs (pooled output, classifier
logits) do not change; per-position outputs (SQuAD logits) would lose the padded positions, so
leave it off there. BERT and ALBERT pad on the right (``input_mask`` 1 = real token): the cut
keeps the first positions. XLNet pads on the left (``input_mask`` 1 = padding, the ``<cls>``
summary token last): the cut keeps the last positions; XLNet's attention is relative (the
score of query ``i`` and key ``j`` reads the encoding of ``i - j``, which a cut from the left
leaves as it is), and fine-tuning runs without mems or perm_mask.
"""

import itertools
import math
from typing import (Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence,
                    Tuple, Union)

import numpy as np
import tensorflow as tf

from bert_tf.feature_names import SEQUENCE_FEATURES
from bert_tf.progress import ProgressReporter

Batch = Mapping[str, np.ndarray]
# BatchPredictor.predict(sort_window=...): batches whose rows the classifier tasks run sorted
# by length at a time.
SORT_WINDOW_BATCHES = 64
PADDING_SIDES = ("right", "left")  # BERT / ALBERT, XLNet


def trimmed_length(input_mask: np.ndarray, length_multiple: int = 8,
                   padding_side: str = "right") -> int:
    """Length that keeps every real token of a batch: the longest row, rounded up.

    Args:
      input_mask: ``[B, S]``; ``padding_side`` "right" (BERT): int, 1 = real token; "left"
        (XLNet): int or float, 1 = padding.
      length_multiple: round up to a multiple of this (limits distinct shapes / retracing).

    Returns:
      int in ``[1, S]``.
    """
    mask = np.asarray(input_mask)
    seq_length = mask.shape[1]
    if padding_side == "left":
        mask = (mask == 0)
    real = mask.sum(axis=1).max() if mask.size else 0
    multiple = max(1, int(length_multiple))
    return int(min(seq_length, max(multiple, int(math.ceil(real / multiple)) * multiple)))


def dynamic_signature(dtypes: Optional[Mapping[str, tf.DType]] = None
                      ) -> Dict[str, tf.TensorSpec]:
    """A :class:`BatchPredictor` ``input_signature`` for batches cut to their longest row: int32
    ``[None, None]`` for each of :data:`SEQUENCE_FEATURES`; ``dtypes`` overrides a feature's
    dtype (XLNet's float32 ``input_mask``) or adds a ``[None]`` feature (labels). One trace
    serves every batch and length (without it: a trace for the first shape, another relaxed)."""
    spec = {k: tf.TensorSpec([None, None], tf.int32) for k in SEQUENCE_FEATURES}
    for k, dtype in (dtypes or {}).items():
        spec[k] = tf.TensorSpec([None, None] if k in SEQUENCE_FEATURES else [None], dtype)
    return spec


def trim_batch(features: Batch, length: int, keys: Sequence[str] = SEQUENCE_FEATURES,
               padding_side: str = "right") -> Dict[str, np.ndarray]:
    """Cuts the ``[B, S]`` features named in ``keys`` to ``[B, length]``: their first
    ``length`` positions (``padding_side`` "right") or their last (``"left"``, XLNet); others
    unchanged."""
    if padding_side == "left":
        return {k: (v[:, v.shape[1] - length:] if k in keys else v) for k, v in features.items()}
    return {k: (v[:, :length] if k in keys else v) for k, v in features.items()}


def _real_rows(batch: Batch, outputs: Dict[str, np.ndarray]) -> int:
    """The examples of a batch for the progress lines: its ``is_real_example`` rows where it
    has the feature, else every output row."""
    if "is_real_example" in batch:
        return int(np.count_nonzero(batch["is_real_example"]))
    return len(next(iter(outputs.values())))


class BatchPredictor:
    """Runs ``model(features, training=False)`` over batches; returns numpy outputs.

    Args:
      model: a built Keras model (or any callable) taking a dict of int32 ``[B, S]`` tensors
        (``input_ids``, ``input_mask``, ``segment_ids``, ...) and ``training=False``, and
        returning a dict of tensors whose first axis is the batch.
      output_keys: the outputs to return (others are not copied to the host).
      strategy: the ``tf.distribute`` strategy the model's variables were created under
        (default: the current one).
      input_keys: features passed to the model (others, e.g. ``label_ids``, are ignored).
      trim_padding: cut each batch to its longest real row (see the module docstring). Only
        for outputs without a sequence axis. Ignored on TPU (fixed shapes). ``True`` or
        ``"right"``: BERT's layout; ``"left"``: XLNet's (left padding, ``input_mask`` 1 =
        padding).
      length_multiple: rounding of the trimmed length.
      fixed_batch_size: pad every batch with zero rows to this many rows (TPU-style fixed
        shapes); the outputs keep only the real rows.
      per_example_loss_fn: ``(model outputs, labels) -> float32 [B]``, run inside the same
        ``tf.function`` step; its result is returned as ``per_example_loss`` (the eval loss
        of the Estimator's EVAL mode, e.g. ``XLNetClassifier.task_loss(...)[0]``). The
        batches then need ``label_key``.
      label_key: the labels fed to ``per_example_loss_fn`` (``[B]``).
      input_signature: feed key -> ``tf.TensorSpec`` (e.g. ``[None, None]`` int32): the
        one-device step is traced once for every batch shape these allow, instead of once
        for the first shape and again for a relaxed one (bert_tf, issue 16: a trace of a
        6-layer encoder is ~1.5 s CPU). The batches must then hold exactly these keys' dtypes.

    Raises:
      ValueError: ``trim_padding`` is a string other than "right" / "left".
      KeyError (at call time): an input or output key is missing (names it).
    """

    def __init__(self, model, output_keys: Sequence[str],
                 strategy: Optional[tf.distribute.Strategy] = None,
                 input_keys: Sequence[str] = SEQUENCE_FEATURES,
                 trim_padding: Union[bool, str] = False,
                 length_multiple: int = 8, fixed_batch_size: Optional[int] = None,
                 per_example_loss_fn: Optional[Callable] = None, label_key: str = "label_ids",
                 input_signature: Optional[Mapping[str, tf.TensorSpec]] = None):
        self.model = model
        self.output_keys = list(output_keys)
        self.strategy = strategy or tf.distribute.get_strategy()
        self.input_keys = list(input_keys)
        self.per_example_loss_fn = per_example_loss_fn
        self.label_key = label_key
        self.feed_keys = self.input_keys + ([label_key] if per_example_loss_fn else [])
        self.is_tpu = isinstance(self.strategy, tf.distribute.TPUStrategy)
        side = "right" if trim_padding is True else trim_padding
        if side and side not in PADDING_SIDES:
            raise ValueError(f"trim_padding={trim_padding!r}: expected a bool, 'right' or 'left'")
        self.padding_side = side or "right"
        self.trim_padding = bool(side) and not self.is_tpu
        self.length_multiple = length_multiple
        self.fixed_batch_size = fixed_batch_size
        self.distributed = self.is_tpu or (
            self.strategy.num_replicas_in_sync > 1
            and not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy))
        if input_signature is not None:
            missing = [k for k in self.feed_keys if k not in input_signature]
            if missing:
                raise KeyError(f"input_signature lacks the model input(s) {missing}")
            spec = {k: input_signature[k] for k in self.feed_keys}
            self._local_step = tf.function(self._step, input_signature=[spec], autograph=False)
        else:
            self._local_step = tf.function(self._step, reduce_retracing=True, autograph=False)
        self._dist_step = tf.function(self._run_replicas, reduce_retracing=True)

    def _step(self, features):
        # plain ops, no tensor-dependent Python control flow: traced without autograph (its
        # source rewrite took seconds of XLNet's first batch, issue 24)
        outputs = self.model({k: features[k] for k in self.input_keys}, training=False)
        missing = [k for k in self.output_keys if k not in outputs]
        if missing:
            raise KeyError(f"model outputs {sorted(outputs)} lack {missing}")
        result = {k: outputs[k] for k in self.output_keys}
        if self.per_example_loss_fn is not None:
            result["per_example_loss"] = self.per_example_loss_fn(outputs,
                                                                  features[self.label_key])
        return result

    def _run_replicas(self, dist_features):
        return self.strategy.run(self._step, args=(dist_features,))

    def predict_batch(self, features: Batch) -> Dict[str, np.ndarray]:
        """Runs one batch.

        Args:
          features: dict of numpy arrays, each ``[B, ...]`` (int32 ``[B, S]`` model inputs).

        Returns:
          dict ``output_key -> np.ndarray [B, ...]`` in the batch's row order (and
          ``per_example_loss`` float32 ``[B]`` with ``per_example_loss_fn``).
        """
        missing = [k for k in self.feed_keys if k not in features]
        if missing:
            raise KeyError(f"batch lacks the model input(s) {missing}")
        inputs = {k: np.asarray(features[k]) for k in self.feed_keys}
        batch = int(next(iter(inputs.values())).shape[0])
        if self.trim_padding and "input_mask" in inputs:
            length = trimmed_length(inputs["input_mask"], self.length_multiple,
                                    self.padding_side)
            inputs = trim_batch(inputs, length, padding_side=self.padding_side)
        rows = batch
        if self.fixed_batch_size and rows < self.fixed_batch_size:
            rows = int(self.fixed_batch_size)
        if self.distributed:
            n = self.strategy.num_replicas_in_sync
            rows = int(math.ceil(rows / n) * n)
        if rows != batch:
            inputs = {k: np.concatenate([v, np.zeros((rows - batch,) + v.shape[1:], v.dtype)])
                      for k, v in inputs.items()}
        if not self.distributed:
            out = self._local_step({k: tf.constant(v) for k, v in inputs.items()})
            return {k: v.numpy()[:batch] for k, v in out.items()}
        return {k: v[:batch] for k, v in self._predict_distributed(inputs, rows).items()}

    def _predict_distributed(self, inputs, rows):
        n = self.strategy.num_replicas_in_sync
        per_replica = rows // n

        def value_fn(ctx):
            i = ctx.replica_id_in_sync_group
            return {k: tf.constant(v[i * per_replica:(i + 1) * per_replica])
                    for k, v in inputs.items()}

        dist = self.strategy.experimental_distribute_values_from_function(value_fn)
        out = self._dist_step(dist)
        return {k: np.concatenate([t.numpy() for t in
                                   self.strategy.experimental_local_results(v)])
                for k, v in out.items()}

    def predict(self, batches: Iterable[Batch], total: Optional[int] = None,
                name: str = "predict", log_every_s: float = 30.0,
                sort_window: int = 0) -> Iterator[Tuple[Batch, Dict[str, np.ndarray]]]:
        """Yields ``(batch, outputs)`` for each batch, logging progress.

        Logs :func:`bert_tf.progress.format_progress` lines (done/total examples,
        examples/s, ETA) every 10% of ``total`` (when given) or ``log_every_s`` seconds, and
        once at the end; a batch with ``is_real_example`` counts its real rows only (the
        padding rows of the last batch are no examples).

        ``sort_window`` > 0 (with ``trim_padding``; bert_tf, beyond the original): the rows of
        ``sort_window`` batches at a time run sorted by real length (:meth:`_run_sorted`),
        each batch's outputs still returned with it in its row order. Only for outputs
        without a sequence axis (classifier logits, per-example losses).
        """
        bar = ProgressReporter(name, total, "examples", every_s=log_every_s)
        done = 0
        if sort_window <= 0 or not self.trim_padding or "input_mask" not in self.feed_keys:
            for batch in batches:
                outputs = self.predict_batch(batch)
                done += _real_rows(batch, outputs)
                yield batch, outputs
                bar.update(done)
            bar.finish()
            return
        window = []
        for batch in itertools.chain(batches, [None]):
            if batch is not None:
                window.append(batch)
            if window and (batch is None or len(window) == sort_window):
                for one, outputs in zip(window, self._run_sorted(window)):
                    done += _real_rows(one, outputs)
                    yield one, outputs
                bar.update(done)
                window = []
        bar.finish()

    def _run_sorted(self, window: Sequence[Batch]) -> List[Dict[str, np.ndarray]]:
        """The outputs of each batch of ``window``, computed with the window's rows sorted by
        real length and regrouped: a group holds as many rows as fit in the token budget of
        the window's largest batch (its rows x ``S``), cut to its longest row (rounded up to
        ``length_multiple``). Each row's outputs are those of its own computation (padding is
        masked), so only the float rounding of larger or smaller matrix products differs; the
        padding computed drops from each batch's longest row to each row's own length, and
        short rows run in fewer, larger calls."""
        feats = {k: np.concatenate([np.asarray(b[k]) for b in window]) for k in self.feed_keys}
        sizes = [len(np.asarray(b[self.feed_keys[0]])) for b in window]
        mask = feats["input_mask"]
        real = (mask == 0) if self.padding_side == "left" else (mask != 0)
        m = max(1, int(self.length_multiple))
        cut = np.maximum(m, -(-real.sum(axis=1) // m) * m)
        order = np.argsort(cut, kind="stable")
        budget = max(sizes) * mask.shape[1]
        pieces, start, n = [], 0, len(order)
        while start < n:
            end = start + 1
            while end < n and (end + 1 - start) * cut[order[end]] <= budget:
                end += 1
            rows = order[start:end]
            pieces.append(self.predict_batch({k: v[rows] for k, v in feats.items()}))
            start = end
        merged = {k: np.empty_like(np.concatenate([p[k] for p in pieces])) for k in pieces[0]}
        for k in merged:
            merged[k][order] = np.concatenate([p[k] for p in pieces])
        bounds = np.cumsum([0] + sizes)
        return [{k: v[a:b] for k, v in merged.items()} for a, b in zip(bounds[:-1], bounds[1:])]


def numpy_batches(dataset: tf.data.Dataset) -> Iterator[Dict[str, np.ndarray]]:
    """Iterates a batched dataset of feature dicts as dicts of numpy arrays."""
    for element in dataset.as_numpy_iterator():
        yield dict(element)
