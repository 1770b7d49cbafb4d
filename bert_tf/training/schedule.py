"""The original BERT learning-rate schedule: linear warmup, then linear decay counted from step 0.

Mirrors the learning-rate part of ``create_optimizer`` in the original ``optimization.py``
(spec `bert.md` section 7.1):

* ``lr_decay(step) = init_lr * (1 - min(step, num_train_steps) / num_train_steps)``
  (TF1 ``polynomial_decay`` with ``end_learning_rate=0.0``, ``power=1.0``, ``cycle=False``),
  computed in float32;
* when ``num_warmup_steps`` is truthy: ``lr = init_lr * step / num_warmup_steps`` while
  ``step < num_warmup_steps`` (integer comparison), else ``lr_decay(step)``.

The decay is counted from step 0, not from the end of warmup, so at
``step == num_warmup_steps`` the rate jumps from about ``init_lr`` down to
``init_lr * (1 - num_warmup_steps / num_train_steps)``; the first update (step 0) uses lr 0.
"""

import keras
import tensorflow as tf

from bert_tf.errors import FlagError

# The most steps a schedule can count: the original's warmup casts the step to int32
# (``tf.cast(global_step, tf.int32)``), so beyond 2**31 - 1 it wraps; bert_tf refuses more.
MAX_STEPS = 2 ** 31 - 1


def check_step_count(steps: int, made_of: str) -> int:
    """Returns ``steps`` (an int), or raises when it exceeds :data:`MAX_STEPS` (bert_tf: an
    absurd ``--num_train_epochs=1e30`` gave an OverflowError traceback).

    Args:
      steps: a step count worked out from the flags; made_of: how, naming the flags
        (e.g. ``"3668 examples / --train_batch_size=32 x --num_train_epochs=1e+30"``).

    Raises:
      FlagError: ``<made_of> gives <steps> steps: more than 2147483647 ...``.
    """
    if steps > MAX_STEPS:
        raise FlagError(f"{made_of} gives {steps} training steps: more than {MAX_STEPS} (the "
                        "original's schedule counts steps in int32); lower the flag")
    return steps


@keras.saving.register_keras_serializable(package="bert_tf")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0, then linear decay to 0 counted from step 0 (spec 7.1).

    Args:
      init_lr: peak learning rate (float; the ``learning_rate`` flag).
      num_train_steps: steps over which the rate decays to 0 (int > 0). Beyond it the rate
        stays 0.
      num_warmup_steps: warmup length in steps; 0 or None turns warmup off.
      name: optional name, kept in the config.
      power: (ALBERT ``--poly_power``) the decay is ``init_lr * (1 - p) ** power``; BERT's 1.0.
      start_warmup_step: (ALBERT) warmup counts ``step - start_warmup_step`` (the original
        ALBERT ``create_optimizer``); the decay still counts from step 0. BERT's 0.

    Calling the schedule with ``step`` (scalar int32/int64 tensor or Python int, the
    optimizer's update count before the increment) returns a float32 scalar tensor.

    Raises:
      FlagError: ``num_train_steps`` is not positive, ``num_warmup_steps`` is negative, or
        either is above :data:`MAX_STEPS`.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, name=None, power=1.0,
                 start_warmup_step=0):
        super().__init__()
        if num_train_steps is None or int(num_train_steps) <= 0:
            raise FlagError(f"num_train_steps must be > 0 for the learning-rate schedule, "
                            f"got {num_train_steps}")
        if num_warmup_steps is not None and int(num_warmup_steps) < 0:
            raise FlagError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
        for flag, steps in (("num_train_steps", num_train_steps),
                            ("num_warmup_steps", num_warmup_steps or 0),
                            ("start_warmup_step", start_warmup_step or 0)):
            check_step_count(int(steps), f"--{flag}={steps}")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps or 0)
        self.name = name
        self.power = float(power)
        self.start_warmup_step = int(start_warmup_step or 0)

    def __call__(self, step):
        with tf.name_scope(self.name or "WarmupLinearDecay"):
            init_lr = tf.constant(self.init_lr, dtype=tf.float32)
            # TF1 polynomial_decay(init_lr, step, num_train_steps, end_learning_rate=0.0,
            # power=1.0, cycle=False), in float32.
            step_float = tf.cast(step, tf.float32)
            decay_steps = tf.constant(float(self.num_train_steps), dtype=tf.float32)
            p = tf.minimum(step_float, decay_steps) / decay_steps
            lr = init_lr * tf.pow(1.0 - p, self.power)
            if not self.num_warmup_steps:
                return lr
            # Warmup, as the original: int32 step, float32 fraction, float mask.
            step_int = tf.cast(step, tf.int32) - tf.constant(self.start_warmup_step, tf.int32)
            warmup_steps_int = tf.constant(self.num_warmup_steps, dtype=tf.int32)
            warmup_percent_done = (tf.cast(step_int, tf.float32)
                                   / tf.cast(warmup_steps_int, tf.float32))
            warmup_lr = init_lr * warmup_percent_done
            is_warmup = tf.cast(step_int < warmup_steps_int, tf.float32)
            return (1.0 - is_warmup) * lr + is_warmup * warmup_lr

    def get_config(self):
        """Returns the constructor arguments (round-trips through ``from_config``)."""
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "name": self.name,
            "power": self.power,
            "start_warmup_step": self.start_warmup_step,
        }


@keras.saving.register_keras_serializable(package="bert_tf")
class SlantedTriangular(keras.optimizers.schedules.LearningRateSchedule):
    """ULMFiT's slanted triangular learning rate (Howard & Ruder 2018, eq. 3); bert_tf,
    beyond the original (``--lr_schedule=slanted_triangular``).

    With ``T = num_train_steps``, ``cut = max(1, floor(T * cut_frac))`` and the update count
    ``t`` (before the increment)::

        p  = t / cut                                    if t < cut
           = 1 - (t - cut) / (cut * (1 / cut_frac - 1))  otherwise (not below 0)
        lr = init_lr * (1 + p * (ratio - 1)) / ratio

    so the rate rises linearly from ``init_lr / ratio`` to ``init_lr`` over the first ``cut``
    updates, then falls linearly back to ``init_lr / ratio`` at ``T``.

    Args:
      init_lr: the peak rate (``--learning_rate``); num_train_steps: ``T`` (int > 0);
      cut_frac: in (0, 1) (``--slanted_cut_frac``, ULMFiT's 0.1); ratio: >= 1
        (``--slanted_ratio``, ULMFiT's 32).

    Raises:
      FlagError: ``num_train_steps`` <= 0, ``cut_frac`` not in (0, 1), ``ratio`` < 1.
    """

    def __init__(self, init_lr, num_train_steps, cut_frac=0.1, ratio=32.0, name=None):
        super().__init__()
        if num_train_steps is None or int(num_train_steps) <= 0:
            raise FlagError(f"num_train_steps must be > 0 for the learning-rate schedule, "
                            f"got {num_train_steps}")
        if not 0.0 < float(cut_frac) < 1.0:
            raise FlagError(f"--slanted_cut_frac={cut_frac}: must be in (0, 1)")
        if float(ratio) < 1.0:
            raise FlagError(f"--slanted_ratio={ratio}: must be >= 1")
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.cut_frac = float(cut_frac)
        self.ratio = float(ratio)
        self.name = name
        self.cut = max(1, int(self.num_train_steps * self.cut_frac))

    def __call__(self, step):
        with tf.name_scope(self.name or "SlantedTriangular"):
            t = tf.cast(step, tf.float32)
            cut = float(self.cut)
            rise = t / cut
            fall = 1.0 - (t - cut) / (cut * (1.0 / self.cut_frac - 1.0))
            p = tf.maximum(tf.where(t < cut, rise, fall), 0.0)
            return self.init_lr * (1.0 + p * (self.ratio - 1.0)) / self.ratio

    def get_config(self):
        """Returns the constructor arguments (round-trips through ``from_config``)."""
        return {"init_lr": self.init_lr, "num_train_steps": self.num_train_steps,
                "cut_frac": self.cut_frac, "ratio": self.ratio, "name": self.name}


def create_schedule(kind: str, init_lr: float, num_train_steps: int, num_warmup_steps: int = 0,
                    cut_frac: float = 0.1, ratio: float = 32.0, **warmup_kwargs):
    """``--lr_schedule``: ``"warmup_linear"`` (the original, :class:`WarmupLinearDecay` with
    ``warmup_kwargs``: ALBERT's ``power``, ``start_warmup_step``) or ``"slanted_triangular"``
    (:class:`SlantedTriangular`).

    Raises:
      FlagError: another kind, or the schedule's own errors.
    """
    if kind in (None, "", "warmup_linear"):
        return WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps, **warmup_kwargs)
    if kind == "slanted_triangular":
        return SlantedTriangular(init_lr, num_train_steps, cut_frac, ratio)
    raise FlagError(f"--lr_schedule={kind}: use warmup_linear or slanted_triangular")
