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
      FlagError: ``num_train_steps`` is not positive, or ``num_warmup_steps`` is negative.
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, name=None, power=1.0,
                 start_warmup_step=0):
        super().__init__()
        if num_train_steps is None or int(num_train_steps) <= 0:
            raise FlagError(f"num_train_steps must be > 0 for the learning-rate schedule, "
                            f"got {num_train_steps}")
        if num_warmup_steps is not None and int(num_warmup_steps) < 0:
            raise FlagError(f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
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
