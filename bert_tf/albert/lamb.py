"""``Lamb``: the original ALBERT ``lamb_optimizer.LAMBOptimizer`` as a Keras 3 optimizer.

Mirrors google-research/albert@b772393 ``lamb_optimizer.py`` (used by its ``optimization.
create_optimizer(..., optimizer="lamb")``). Per variable, with gradient g (after the global-
norm clip to 1.0 of ``create_optimizer``):

    m <- beta_1 * m + (1 - beta_1) * g
    v <- beta_2 * v + (1 - beta_2) * g^2
    u  = m / (sqrt(v) + epsilon)              # no bias correction, as AdamWeightDecay
    u  = u + weight_decay_rate * param        # unless the original name is excluded
    r  = ||param||_2 / ||u||_2  if both norms > 0, else 1.0   # unless excluded from
                                                              # layer adaptation
    param <- param - r * lr * u

The norms are over the whole variable (``linalg_ops.norm(param, ord=2)``: the Frobenius norm
of a matrix). ``exclude_from_layer_adaptation`` defaults to ``exclude_from_weight_decay``
(``LayerNorm``, ``layer_norm``, ``bias`` in ``create_optimizer``): those variables get the plain
AdamWeightDecay step. Slots, names, clipping and checkpoints are
:class:`bert_tf.training.optimizer.AdamWeightDecay`'s (``<name>/adam_m``, ``<name>/adam_v``,
as the original LAMB's), so a training checkpoint has the original layout either way.
"""

import re
from typing import Optional, Sequence, Tuple

import keras
import tensorflow as tf

from bert_tf.training.optimizer import (BERT_EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay,
                                        VariableNames)
from bert_tf.training.schedule import WarmupLinearDecay


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(AdamWeightDecay):
    """LAMB: AdamWeightDecay's update scaled per variable by ``||w|| / ||u||``.

    Args:
      exclude_from_layer_adaptation: regex patterns searched in the original variable name;
        a match turns the ratio off (1.0). None/empty: ``exclude_from_weight_decay``'s
        patterns (the original's fallback).
      name: ``LAMBOptimizer`` as the original.
      other args: :class:`AdamWeightDecay`'s.
    """

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=None,
                 exclude_from_layer_adaptation=None, name="LAMBOptimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, weight_decay_rate=weight_decay_rate,
                         beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                         exclude_from_weight_decay=exclude_from_weight_decay, name=name,
                         **kwargs)
        self.exclude_from_layer_adaptation_patterns = list(
            exclude_from_layer_adaptation or exclude_from_weight_decay or [])
        self._adapt = []

    def do_layer_adaptation(self, name: str) -> bool:
        """Whether the variable with original ``name`` gets the trust ratio."""
        return not any(re.search(p, name) is not None
                       for p in self.exclude_from_layer_adaptation_patterns)

    def build(self, var_list):
        """AdamWeightDecay's slots, plus the layer-adaptation decision per variable."""
        if self.built:
            return
        super().build(var_list)
        self._adapt = [self.do_layer_adaptation(n) for n in self._names]

    def scale_update(self, update, variable, index: int):
        """LAMB's trust ratio (module docstring): ``update * ||w|| / ||update||`` for a variable
        with layer adaptation (1 where either norm is 0); AdamWeightDecay's update otherwise.
        :meth:`AdamWeightDecay.update_step` does the rest (moments, weight decay, assign)."""
        if not self._adapt[index]:
            return update
        w_norm = tf.norm(tf.convert_to_tensor(variable), ord=2)
        g_norm = tf.norm(update, ord=2)
        one = tf.constant(1.0, variable.dtype)
        ratio = tf.where(w_norm > 0, tf.where(g_norm > 0, w_norm / g_norm, one), one)
        return ratio * update

    def layer_adaptation_table(self):
        """Original name -> whether it gets the trust ratio (after build)."""
        return dict(zip(self._names, self._adapt))

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(
            self.exclude_from_layer_adaptation_patterns)
        return config


def create_albert_optimizer(init_lr: float, num_train_steps: int, num_warmup_steps: int,
                            optimizer: str = "lamb", poly_power: float = 1.0,
                            start_warmup_step: int = 0,
                            variable_names: Optional[VariableNames] = None,
                            exclude_from_weight_decay: Sequence[str] =
                            BERT_EXCLUDE_FROM_WEIGHT_DECAY,
                            loss_scale: bool = False, schedule=None
                            ) -> Tuple[keras.optimizers.Optimizer, WarmupLinearDecay]:
    """The original ALBERT ``optimization.create_optimizer`` settings.

    Polynomial decay of ``init_lr`` to 0 over ``num_train_steps`` with ``poly_power``, linear
    warmup over ``num_warmup_steps`` counted from ``start_warmup_step``; ``"adamw"``
    (:class:`AdamWeightDecay`) or ``"lamb"`` (:class:`Lamb`), both with weight decay 0.01,
    beta1 0.9, beta2 0.999, epsilon 1e-6, ``LayerNorm``/``layer_norm``/``bias`` excluded, and
    gradients clipped to global norm 1.0.

    Args:
      loss_scale: wrap in ``keras.optimizers.LossScaleOptimizer`` (float16 compute).
      schedule: (bert_tf, ``--lr_schedule``) another learning-rate schedule; None: the
        original's polynomial decay with warmup.

    Returns:
      ``(optimizer, schedule)``.

    Raises:
      FlagError: ``num_train_steps`` <= 0 (from the schedule). ValueError: another optimizer.
    """
    if schedule is None:
        schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps,
                                     power=poly_power, start_warmup_step=start_warmup_step)
    kinds = {"adamw": AdamWeightDecay, "lamb": Lamb}
    if optimizer not in kinds:
        raise ValueError(f"Not supported optimizer: {optimizer!r} (adamw, lamb)")
    opt = kinds[optimizer](learning_rate=schedule, weight_decay_rate=0.01, beta_1=0.9,
                           beta_2=0.999, epsilon=1e-6,
                           exclude_from_weight_decay=list(exclude_from_weight_decay),
                           clip_norm=1.0, variable_names=variable_names)
    if loss_scale:
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt, schedule
