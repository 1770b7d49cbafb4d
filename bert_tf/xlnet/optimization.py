"""XLNet's optimisation (`model_utils.get_train_op` of the original XLNet release, spec
`xlnet.md` 7.3) on top of the shared Keras optimizer and training loop.

* :class:`XLNetLearningRate`: linear warmup from 0 over ``warmup_steps``, then ``poly``
  (linear) or ``cos`` decay from ``learning_rate`` to ``learning_rate * min_lr_ratio`` over
  ``train_steps - warmup_steps`` steps, counted from the end of warmup (unlike BERT's
  schedule, which counts the decay from step 0);
* ``weight_decay == 0`` (the fine-tuning default): TF1 ``AdamOptimizer`` WITH bias
  correction, :class:`TF1Adam`, whose checkpoint slots are named as TF1 names them
  (``<var>/Adam``, ``<var>/Adam_1``, ``beta1_power``, ``beta2_power``);
* ``weight_decay > 0``: :class:`bert_tf.training.optimizer.AdamWeightDecay` (no bias
  correction) with XLNet's lists: ``r_w_bias``, ``r_r_bias``, ``r_s_bias`` always decayed,
  ``LayerNorm``, ``layer_norm``, ``bias`` otherwise excluded;
* gradients clipped together to global norm ``clip``, then, when ``lr_layer_decay_rate !=
  1``, the gradient of every variable under ``model/transformer/layer_<l>/`` multiplied by
  ``lr_layer_decay_rate ** (n_layer - 1 - l)`` (:func:`layer_decay_multiplier`).

Both optimizers run in :func:`bert_tf.training.loop.train`, which saves their slots under
the original names.
"""

import math
import re
from typing import Callable, Iterable, Optional

import keras
import tensorflow as tf

from bert_tf.errors import FlagError
from bert_tf.training.optimizer import AdamWeightDecay, VariableNames

DECAY_METHODS = ("poly", "cos")
XLNET_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
XLNET_INCLUDE_IN_WEIGHT_DECAY = ("r_s_bias", "r_r_bias", "r_w_bias")
_LAYER_RE = re.compile(r"model/transformer/layer_(\d+)/")


@keras.saving.register_keras_serializable(package="bert_tf")
class XLNetLearningRate(keras.optimizers.schedules.LearningRateSchedule):
    """The learning rate of the original ``get_train_op`` (spec 7.3 step 1).

    ``lr(step) = step / warmup_steps * learning_rate`` while ``step < warmup_steps`` (warmup
    only when ``warmup_steps > 0``), else, with ``t = min(step - warmup_steps, T)`` and
    ``T = train_steps - warmup_steps``:

    * ``poly``: ``(learning_rate - end) * (1 - t / T) + end``, ``end = learning_rate *
      min_lr_ratio`` (TF1 ``polynomial_decay``, power 1);
    * ``cos``: ``learning_rate * ((1 - a) * 0.5 * (1 + cos(pi * t / T)) + a)``,
      ``a = min_lr_ratio`` (TF1 ``cosine_decay``).

    Called with the optimizer's update count (int, before the increment); returns a float32
    scalar.

    Raises:
      FlagError: ``decay_method`` not ``poly``/``cos``; ``train_steps <= warmup_steps``;
        negative ``warmup_steps``.
    """

    def __init__(self, learning_rate: float, train_steps: int, warmup_steps: int = 0,
                 decay_method: str = "poly", min_lr_ratio: float = 0.0, name=None):
        super().__init__()
        if decay_method not in DECAY_METHODS:
            raise FlagError(f"--decay_method={decay_method}: expected poly or cos (the original "
                            f"raises too)")
        warmup_steps = int(warmup_steps or 0)
        if warmup_steps < 0:
            raise FlagError(f"--warmup_steps={warmup_steps}: must be >= 0")
        if int(train_steps) <= warmup_steps:
            raise FlagError(f"--train_steps={train_steps} must be larger than "
                            f"--warmup_steps={warmup_steps} (the decay runs over "
                            f"train_steps - warmup_steps steps)")
        self.learning_rate = float(learning_rate)
        self.train_steps = int(train_steps)
        self.warmup_steps = warmup_steps
        self.decay_method = decay_method
        self.min_lr_ratio = float(min_lr_ratio)
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "XLNetLearningRate"):
            lr = tf.constant(self.learning_rate, tf.float32)
            step = tf.cast(step, tf.float32)
            warmup = float(self.warmup_steps)
            decay_steps = float(self.train_steps - self.warmup_steps)
            t = tf.minimum(step - warmup, decay_steps)
            if self.decay_method == "poly":
                end = lr * self.min_lr_ratio
                decay_lr = (lr - end) * (1.0 - t / decay_steps) + end
            else:
                cosine = 0.5 * (1.0 + tf.cos(math.pi * t / decay_steps))
                decay_lr = lr * ((1.0 - self.min_lr_ratio) * cosine + self.min_lr_ratio)
            if self.warmup_steps <= 0:
                return decay_lr
            warmup_lr = step / warmup * lr
            return tf.where(step < warmup, warmup_lr, decay_lr)

    def get_config(self):
        return {"learning_rate": self.learning_rate, "train_steps": self.train_steps,
                "warmup_steps": self.warmup_steps, "decay_method": self.decay_method,
                "min_lr_ratio": self.min_lr_ratio, "name": self.name}


@keras.saving.register_keras_serializable(package="bert_tf")
class TF1Adam(AdamWeightDecay):
    """TF1's ``tf.train.AdamOptimizer``: Adam with bias correction (spec 7.3 step 2).

    Per variable at update ``t`` (1-based) with gradient ``g`` (after clipping and the
    layer-wise multiplier)::

        lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
        m <- m + (g - m) * (1 - beta_1)
        v <- v + (g^2 - v) * (1 - beta_2)
        param <- param - lr_t * m / (sqrt(v) + epsilon)

    No weight decay. Slots are saved as TF1 names them: ``<name>/Adam`` (m),
    ``<name>/Adam_1`` (v), and the scalars ``beta1_power`` = ``beta_1^(t+1)`` and
    ``beta2_power`` after ``t`` updates (what TF1 holds for the next update).

    Args: as :class:`AdamWeightDecay` without the weight-decay lists; ``epsilon`` is the
    original ``--adam_epsilon`` (1e-8 in run_classifier).
    """

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-8,
                 clip_norm=None, variable_names: Optional[VariableNames] = None,
                 gradient_multiplier: Optional[Callable[[str], float]] = None, name="Adam",
                 **kwargs):
        kwargs.pop("weight_decay_rate", None)
        kwargs.pop("exclude_from_weight_decay", None)
        kwargs.pop("include_in_weight_decay", None)
        super().__init__(learning_rate=learning_rate, weight_decay_rate=0.0, beta_1=beta_1,
                         beta_2=beta_2, epsilon=epsilon, clip_norm=clip_norm,
                         variable_names=variable_names, gradient_multiplier=gradient_multiplier,
                         name=name, **kwargs)

    def build(self, var_list):
        """Creates the m / v slots and the two beta-power scalars."""
        if self.built:
            return
        super().build(var_list)
        self._beta1_power = self.add_variable(
            shape=(), initializer=keras.initializers.Constant(self.beta_1), dtype="float32",
            name="beta1_power")
        self._beta2_power = self.add_variable(
            shape=(), initializer=keras.initializers.Constant(self.beta_2), dtype="float32",
            name="beta2_power")

    def update_step(self, gradient, variable, learning_rate):
        """One TF1 Adam update of one variable (see the class docstring)."""
        index = self._get_variable_index(variable)
        m = self._adam_m[index]
        v = self._adam_v[index]
        dtype = variable.dtype
        t = tf.cast(self.iterations + 1, dtype)
        lr = tf.cast(learning_rate, dtype)
        lr_t = lr * tf.sqrt(1.0 - tf.pow(tf.cast(self.beta_2, dtype), t)) / (
            1.0 - tf.pow(tf.cast(self.beta_1, dtype), t))
        grad = tf.cast(gradient, dtype)
        next_m = m + (grad - m) * (1.0 - self.beta_1)
        next_v = v + (tf.square(grad) - v) * (1.0 - self.beta_2)
        self.assign(variable, variable - lr_t * next_m / (tf.sqrt(next_v) + self.epsilon))
        self.assign(m, next_m)
        self.assign(v, next_v)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        super()._backend_update_step(grads, trainable_variables, learning_rate)
        # TF1's _finish: beta powers for the next update (iterations not yet incremented).
        t_next = tf.cast(self.iterations, tf.float32) + 2.0

        def assign_powers(*_):
            self._beta1_power.assign(tf.pow(tf.constant(self.beta_1, tf.float32), t_next))
            self._beta2_power.assign(tf.pow(tf.constant(self.beta_2, tf.float32), t_next))

        replica_ctx = tf.distribute.get_replica_context()
        if replica_ctx is None:
            assign_powers()
        else:
            replica_ctx.merge_call(assign_powers)

    def slot_variables(self):
        """``{"<name>/Adam": m, "<name>/Adam_1": v, "beta1_power": ..., "beta2_power": ...}``.

        Raises:
          ValueError: the optimizer is not built yet.
        """
        if not self.built:
            raise ValueError("TF1Adam: slot_variables() needs a built optimizer; call "
                             "optimizer.build(model.trainable_variables) first")
        out = {}
        for name, m, v in zip(self._names, self._adam_m, self._adam_v):
            out[name + "/Adam"] = m
            out[name + "/Adam_1"] = v
        out["beta1_power"] = self._beta1_power
        out["beta2_power"] = self._beta2_power
        return out


def layer_decay_multiplier(names: Iterable[str], rate: float) -> Optional[Callable[[str], float]]:
    """Layer-wise gradient scaling of the original (spec 7.3 step 4), or None when ``rate == 1``.

    ``n_layer`` = 1 + the largest ``l`` in names containing ``model/transformer/layer_<l>/``;
    the returned function maps such a name to ``rate ** (n_layer - 1 - l)`` and every other
    name (embeddings, ``r_*_bias``, ``seg_embed``, heads) to 1.0.
    """
    if rate == 1.0:
        return None
    layers = [int(m.group(1)) for m in (_LAYER_RE.search(n) for n in names) if m]
    if not layers:
        return None
    n_layer = max(layers) + 1

    def multiplier(name: str) -> float:
        m = _LAYER_RE.search(name)
        return rate ** (n_layer - 1 - int(m.group(1))) if m else 1.0

    return multiplier


def check_optimizer_flags(weight_decay: float, clip: float, adam_epsilon: float) -> None:
    """``--weight_decay`` >= 0, ``--clip`` > 0 and ``--adam_epsilon`` > 0 (bert_tf: the
    original took any value).

    Raises:
      FlagError: naming the flag and its value.
    """
    if weight_decay < 0:
        raise FlagError(f"--weight_decay={weight_decay}: must be >= 0")
    if clip <= 0:
        raise FlagError(f"--clip={clip}: must be > 0")
    if adam_epsilon <= 0:
        raise FlagError(f"--adam_epsilon={adam_epsilon}: must be > 0")


def create_xlnet_optimizer(learning_rate: float, train_steps: int, warmup_steps: int = 0,
                           decay_method: str = "poly", min_lr_ratio: float = 0.0,
                           weight_decay: float = 0.0, adam_epsilon: float = 1e-8,
                           clip: float = 1.0, lr_layer_decay_rate: float = 1.0,
                           variable_names: Optional[VariableNames] = None):
    """The optimizer and schedule of the original ``get_train_op`` (spec 7.3).

    Args:
      learning_rate, train_steps, warmup_steps, decay_method, min_lr_ratio: the schedule
        (:class:`XLNetLearningRate`).
      weight_decay: 0 -> :class:`TF1Adam`; > 0 -> :class:`AdamWeightDecay` with XLNet's
        include/exclude lists.
      adam_epsilon: epsilon of either optimizer.
      clip: global-norm clip of all gradients (the original always clips).
      lr_layer_decay_rate: layer-wise gradient factor (:func:`layer_decay_multiplier`).
      variable_names: original name -> variable (the checkpoint map); needed for the decay
        lists, the layer factors and the slot names.

    Returns:
      ``(optimizer, schedule)``.

    Raises:
      FlagError: a bad schedule (see :class:`XLNetLearningRate`), negative weight decay, or a
        non-positive clip / epsilon.
    """
    check_optimizer_flags(weight_decay, clip, adam_epsilon)
    schedule = XLNetLearningRate(learning_rate, train_steps, warmup_steps, decay_method,
                                 min_lr_ratio)
    names = list(variable_names) if variable_names is not None and not callable(variable_names) \
        else []
    multiplier = layer_decay_multiplier(names, lr_layer_decay_rate)
    if weight_decay > 0:
        optimizer = AdamWeightDecay(
            learning_rate=schedule, weight_decay_rate=weight_decay, beta_1=0.9, beta_2=0.999,
            epsilon=adam_epsilon, exclude_from_weight_decay=list(XLNET_EXCLUDE_FROM_WEIGHT_DECAY),
            include_in_weight_decay=list(XLNET_INCLUDE_IN_WEIGHT_DECAY), clip_norm=clip,
            variable_names=variable_names, gradient_multiplier=multiplier)
    else:
        optimizer = TF1Adam(learning_rate=schedule, epsilon=adam_epsilon, clip_norm=clip,
                            variable_names=variable_names, gradient_multiplier=multiplier)
    return optimizer, schedule
