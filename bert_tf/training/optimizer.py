"""``AdamWeightDecay``: the original ``AdamWeightDecayOptimizer`` as a Keras 3 optimizer.

Mirrors ``AdamWeightDecayOptimizer`` and ``create_optimizer`` of the original
``optimization.py`` (spec `bert.md` sections 7.1, 7.2, 3.3). Per variable, with gradient g:

    m <- beta_1 * m + (1 - beta_1) * g
    v <- beta_2 * v + (1 - beta_2) * g^2
    u  = m / (sqrt(v) + epsilon)              # no bias correction; epsilon after the sqrt
    u  = u + weight_decay_rate * param        # unless the ORIGINAL name is excluded
    param <- param - lr * u

Keras' ``AdamW`` applies bias correction, so it cannot reproduce this update.

Original names. Decay exclusion (``"LayerNorm"``, ``"layer_norm"``, ``"bias"``) and the slot
names ``<name>/adam_m``, ``<name>/adam_v`` are defined on the TF1 variable names
(``bert/encoder/layer_0/output/LayerNorm/gamma``), not on Keras paths. Give the optimizer a
family's checkpoint map (original name -> variable), or a callable variable -> original name,
as ``variable_names``; variables it does not name fall back to their Keras path.

Clipping. ``clip_norm`` clips all gradients together by their global norm
(``tf.clip_by_global_norm``) as the original does before ``apply_gradients``, on the
gradients as they come: an ``IndexedSlices`` gradient's norm is over its unsummed rows. Under a
``tf.distribute`` strategy the per-replica gradients are summed across replicas first, so
the norm is the one of the whole global batch (the same as on one device).

TensorFlow backend only (``tf.distribute``).
"""

import re
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple, Union

import keras
import tensorflow as tf

from bert_tf.training.schedule import WarmupLinearDecay

if keras.backend.backend() != "tensorflow":  # pragma: no cover - the project pins TF
    raise ImportError("bert_tf.training.optimizer needs the Keras TensorFlow backend "
                      f"(KERAS_BACKEND=tensorflow), found {keras.backend.backend()!r}")

# The original create_optimizer's exclusion list (spec 7.1 step 4).
BERT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")

VariableNames = Union[Mapping[str, object], Callable[[object], Optional[str]]]


def original_name(variable) -> str:
    """Fallback name of a variable that has no entry in the name map.

    The Keras path (``dense/kernel``) for Keras variables, else the TF name without ``:0``.
    """
    path = getattr(variable, "path", None)
    if path:
        return path
    name = getattr(variable, "name", "")
    return name[:-2] if name.endswith(":0") else name


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(keras.optimizers.Optimizer):
    """Adam with decoupled L2 weight decay and no bias correction (spec 7.2).

    Args:
      learning_rate: float, or a ``LearningRateSchedule`` called with the update count
        (``iterations``, int64, before the increment), e.g. :class:`WarmupLinearDecay`.
      weight_decay_rate: decay coefficient (original class default 0.0;
        :func:`create_optimizer` uses 0.01).
      beta_1, beta_2: moment decay rates (0.9, 0.999).
      epsilon: added after the square root (1e-6).
      exclude_from_weight_decay: regex patterns searched (``re.search``) in the original
        variable name; a match turns decay off for that variable.
      include_in_weight_decay: regex patterns checked first; a match turns decay on even if an
        exclude pattern matches (XLNet's ``r_w_bias`` etc.; the BERT original has none).
      clip_norm: clip all gradients together to this global norm (None: no clipping).
      variable_names: original name -> variable (a checkpoint map) or a callable
        variable -> original name (or None). Set before the first ``apply``/``build``; see
        :meth:`set_variable_names`.
      gradient_multiplier: optional callable original name -> float; each gradient is
        multiplied by it after clipping (XLNet's layer-wise decay). None or 1.0: unchanged.
      recipe: (bert_tf, issue 26) None, or an object with ``update_multiplier(name) ->
        float`` (the variable's learning rate is multiplied by it: layer-wise rates) and
        ``train_from_step(name) -> int`` (before that update, ``iterations``, the variable's
        gradient is zeroed before the global norm and its update skipped, so its slots stay
        zero: gradual unfreezing), by original name
        (:class:`bert_tf.training.recipes.LayerRecipe`).
      name: optimizer name (``AdamWeightDecayOptimizer`` as the original).
      **kwargs: other Keras optimizer arguments (``use_ema``, ``loss_scale_factor``...).

    Slots: two float32 zero-initialized variables per trainable variable, the same shape;
    :meth:`slot_variables` returns them as ``{"<name>/adam_m": m, "<name>/adam_v": v}``.

    Raises:
      ValueError: Keras' ``weight_decay`` (use ``weight_decay_rate``) or
        ``gradient_accumulation_steps`` (use ``loop.TrainConfig(gradient_accumulation_steps=
        ...)``, which counts the schedule in updates) is passed, or a Keras clipping argument is
        combined with ``clip_norm``.
    """

    def __init__(self, learning_rate=0.001, weight_decay_rate=0.0, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-6, exclude_from_weight_decay=None, include_in_weight_decay=None,
                 clip_norm=None, variable_names: Optional[VariableNames] = None,
                 gradient_multiplier: Optional[Callable[[str], float]] = None,
                 recipe=None, name="AdamWeightDecayOptimizer", **kwargs):
        if kwargs.get("weight_decay") is not None:
            raise ValueError("AdamWeightDecay: use weight_decay_rate, not Keras' weight_decay "
                             "(the original decays inside the update, scaled by lr)")
        kwargs.pop("weight_decay", None)
        if kwargs.get("gradient_accumulation_steps"):
            raise ValueError("AdamWeightDecay: gradient accumulation is done by "
                             "bert_tf.training.loop.TrainConfig(gradient_accumulation_steps=...), "
                             "so that the schedule counts optimizer updates")
        kwargs.pop("gradient_accumulation_steps", None)
        if clip_norm is not None and any(kwargs.get(k) is not None
                                         for k in ("clipnorm", "clipvalue", "global_clipnorm")):
            raise ValueError("AdamWeightDecay: pass either clip_norm or a Keras clipping "
                             "argument, not both")
        if isinstance(learning_rate, int):
            learning_rate = float(learning_rate)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        self.exclude_from_weight_decay_patterns = list(exclude_from_weight_decay or [])
        self.include_in_weight_decay_patterns = list(include_in_weight_decay or [])
        self.clip_norm = None if clip_norm is None else float(clip_norm)
        self.gradient_multiplier = gradient_multiplier
        self.recipe = recipe
        self._variable_names = variable_names
        self._names = []        # original name per built variable index
        self._decay = []        # bool per built variable index
        self._multipliers = []  # float per built variable index
        self._update_multipliers = []  # float per built variable index (layer-wise rates)
        self._train_from = []  # int per built variable index (gradual unfreezing)

    # ---- names --------------------------------------------------------------------------------

    def set_variable_names(self, variable_names: VariableNames) -> None:
        """Sets the original-name source (a checkpoint map or a callable); before building.

        Raises:
          ValueError: the optimizer is already built (its decay decisions are fixed).
        """
        if self.built:
            raise ValueError("AdamWeightDecay: set_variable_names() must be called before "
                             "the optimizer is built")
        self._variable_names = variable_names

    def set_recipe(self, recipe) -> None:
        """(bert_tf, issue 26) Sets ``recipe`` (see the class docstring) of an optimizer
        created elsewhere (ALBERT's); before building.

        Raises:
          ValueError: the optimizer is already built.
        """
        if self.built:
            raise ValueError("AdamWeightDecay: set_recipe() must be called before the "
                             "optimizer is built")
        self.recipe = recipe

    @property
    def variable_names(self) -> Optional[VariableNames]:
        """The original-name source given to the constructor or :meth:`set_variable_names`."""
        return self._variable_names

    def variable_key(self, variable):
        """A stable key of a model variable (Keras, tf or distributed), as used internally."""
        return self._var_key(variable)

    def _resolve_names(self, variables) -> list:
        source = self._variable_names
        if source is None:
            return [original_name(v) for v in variables]
        if callable(source) and not isinstance(source, Mapping):
            return [source(v) or original_name(v) for v in variables]
        by_key = {}
        for name, var in source.items():
            by_key.setdefault(self._var_key(var), name)
        return [by_key.get(self._var_key(v)) or original_name(v) for v in variables]

    def do_use_weight_decay(self, name: str) -> bool:
        """Whether the variable with original ``name`` is decayed (spec 7.2).

        False when ``weight_decay_rate`` is 0; True when an include pattern matches; False when
        an exclude pattern matches; True otherwise.
        """
        if not self.weight_decay_rate:
            return False
        for pattern in self.include_in_weight_decay_patterns:
            if re.search(pattern, name) is not None:
                return True
        for pattern in self.exclude_from_weight_decay_patterns:
            if re.search(pattern, name) is not None:
                return False
        return True

    # ---- Keras optimizer API -------------------------------------------------------------------

    def build(self, var_list):
        """Creates the ``adam_m`` / ``adam_v`` slots and fixes names and decay decisions."""
        if self.built:
            return
        super().build(var_list)
        # The pre-clip global norm of the last update (the original's `gnorm`, for summaries);
        # not a slot: not checkpointed.
        self._global_norm = tf.Variable(0.0, trainable=False, name="global_norm",
                                        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA)
        self._names = self._resolve_names(var_list)
        self._decay = [self.do_use_weight_decay(n) for n in self._names]
        if self.gradient_multiplier is None:
            self._multipliers = [1.0] * len(var_list)
        else:
            self._multipliers = [float(self.gradient_multiplier(n) or 1.0) for n in self._names]
        recipe = self.recipe
        self._update_multipliers = [1.0 if recipe is None
                                    else float(recipe.update_multiplier(n)) for n in self._names]
        self._train_from = [0 if recipe is None else int(recipe.train_from_step(n) or 0)
                            for n in self._names]
        self._adam_m = []
        self._adam_v = []
        for var in var_list:
            self._adam_m.append(self.add_variable_from_reference(var, "adam_m"))
            self._adam_v.append(self.add_variable_from_reference(var, "adam_v"))

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        # Overrides the Keras TF hook that all-reduces then updates: here the gradients are
        # summed across replicas, clipped by their global norm, scaled, then applied.
        # An IndexedSlices gradient (a gathered embedding table) stays sparse until clipped:
        # the original clips tf.gradients as they come, so its norm counts a repeated id once
        # per row (rows [3, 3] twice: 6.0), not over the summed row ([6, 6]: 8.485). Summing
        # across replicas concatenates the rows of IndexedSlices, so the norm stays the one
        # of the global batch's rows. The dense conversion comes after clipping, as TF1's
        # apply_gradients did.
        trainable_variables = [v.value if isinstance(v, keras.Variable) else v
                               for v in trainable_variables]
        replica_ctx = tf.distribute.get_replica_context()
        if replica_ctx is not None and replica_ctx.num_replicas_in_sync > 1:
            grads = replica_ctx.all_reduce(tf.distribute.ReduceOp.SUM, grads)
        indexes = [self._get_variable_index(v) for v in trainable_variables]
        grads, rates = self._recipe_rates(grads, indexes, learning_rate)
        norm = tf.linalg.global_norm(grads)
        self._global_norm.assign(norm)
        if self.clip_norm is not None:
            grads, _ = tf.clip_by_global_norm(grads, clip_norm=self.clip_norm, use_norm=norm)
        grads = [tf.convert_to_tensor(g) for g in grads]
        multipliers = [self._multipliers[i] for i in indexes]
        grads = [g if m == 1.0 else g * m for g, m in zip(grads, multipliers)]

        def update_all(distribution, grads_and_vars, rates):
            previous = []
            for (grad, var), rate in zip(grads_and_vars, rates):
                # One variable after the other (bert_tf, issue 24): in a traced step the
                # executor would otherwise run every variable's temporaries (next_m, next_v,
                # the update) before their assigns, a model-sized transient. 16 variables of
                # 64 MiB (weights + slots 3.0 GiB): peak 3.93 instead of 4.6-5.5 GiB, same
                # wall, same values (bench/bench_optimizer_memory.py).
                with tf.control_dependencies(previous):
                    # lr goes through args: a per-replica value is unwrapped per device there.
                    distribution.extended.update(
                        var, lambda v, g, lr: self.update_step(g, v, lr),
                        args=(grad, rate), group=False)
                    if tf.inside_function():  # reads after var's assign (automatic control
                        previous = [tf.identity(var)]  # dependencies order one resource's ops)

        grads_and_vars = list(zip(grads, trainable_variables))
        if replica_ctx is None:
            update_all(tf.distribute.get_strategy(), grads_and_vars, rates)
        else:
            replica_ctx.merge_call(update_all, args=(grads_and_vars, rates))

    def _recipe_rates(self, grads, indexes, learning_rate):
        """(bert_tf, issue 26) The gradients with those of still-frozen variables zeroed, and
        each variable's learning rate (``learning_rate * update multiplier``, 0 while frozen).
        Without a recipe: the gradients and ``learning_rate`` for all, unchanged."""
        out_grads, rates = [], []
        for g, i in zip(grads, indexes):
            rate = learning_rate
            multiplier = self._update_multipliers[i] if self._update_multipliers else 1.0
            start = self._train_from[i] if self._train_from else 0
            if multiplier != 1.0:
                rate = rate * multiplier
            if start > 0:
                gate = tf.cast(self.iterations >= start, g.dtype)
                g = (tf.IndexedSlices(g.values * gate, g.indices, g.dense_shape)
                     if isinstance(g, tf.IndexedSlices) else g * gate)  # stays sparse for the norm
                rate = rate * tf.cast(gate, tf.convert_to_tensor(rate).dtype)
            out_grads.append(g)
            rates.append(rate)
        return out_grads, rates

    def update_step(self, gradient, variable, learning_rate):
        """One AdamWeightDecay update of one variable (spec 7.2 steps 1-5); a subclass changes
        only :meth:`scale_update`."""
        index = self._get_variable_index(variable)
        m = self._adam_m[index]
        v = self._adam_v[index]
        dtype = variable.dtype
        lr = tf.cast(learning_rate, dtype)
        grad = tf.cast(gradient, dtype)
        next_m = tf.multiply(self.beta_1, m) + tf.multiply(1.0 - self.beta_1, grad)
        next_v = tf.multiply(self.beta_2, v) + tf.multiply(1.0 - self.beta_2, tf.square(grad))
        update = next_m / (tf.sqrt(next_v) + self.epsilon)
        if self._decay[index]:
            update += self.weight_decay_rate * variable
        update = self.scale_update(update, variable, index)
        self.assign(variable, variable - lr * update)
        self.assign(m, next_m)
        self.assign(v, next_v)

    def scale_update(self, update, variable, index: int):
        """The update as applied (before ``* learning_rate``): here as it is. A subclass
        rescales it (ALBERT's LAMB: the trust ratio, `bert_tf.albert.lamb`).

        Args:
          update: ``m / (sqrt(v) + epsilon)`` (+ weight decay), the variable's shape and dtype;
          variable: the variable updated; index: its slot index.
        """
        return update

    # ---- original-layout slots -----------------------------------------------------------------

    @property
    def global_norm(self) -> float:
        """Global norm of the last update's gradients (summed over replicas), before clipping
        (float; 0.0 before the first update)."""
        return float(self._global_norm.numpy()) if self.built else 0.0

    def slot_variables(self) -> Dict[str, object]:
        """``{"<original name>/adam_m": m, "<original name>/adam_v": v}`` for every variable.

        Names come from ``variable_names`` (Keras path fallback), as in the original
        checkpoints (spec 3.3). Used to save and restore the optimizer state by name.

        Raises:
          ValueError: the optimizer is not built yet (call ``build(trainable_variables)``).
        """
        if not self.built:
            raise ValueError("AdamWeightDecay: slot_variables() needs a built optimizer; "
                             "call optimizer.build(model.trainable_variables) first")
        out = {}
        for name, m, v in zip(self._names, self._adam_m, self._adam_v):
            out[name + "/adam_m"] = m
            out[name + "/adam_v"] = v
        return out

    def variable_decay_table(self) -> Dict[str, bool]:
        """Original name -> whether it is decayed (after build), for logs and tests."""
        return dict(zip(self._names, self._decay))

    def get_config(self):
        """Constructor arguments; ``variable_names`` and ``gradient_multiplier`` are not saved."""
        config = super().get_config()
        config.update({
            "weight_decay_rate": self.weight_decay_rate,
            "beta_1": self.beta_1,
            "beta_2": self.beta_2,
            "epsilon": self.epsilon,
            "exclude_from_weight_decay": list(self.exclude_from_weight_decay_patterns),
            "include_in_weight_decay": list(self.include_in_weight_decay_patterns),
            "clip_norm": self.clip_norm,
        })
        config.pop("weight_decay", None)
        config.pop("gradient_accumulation_steps", None)
        return config


def create_optimizer(init_lr: float, num_train_steps: int, num_warmup_steps: int,
                     weight_decay_rate: float = 0.01,
                     variable_names: Optional[VariableNames] = None,
                     clip_norm: Optional[float] = 1.0,
                     exclude_from_weight_decay: Sequence[str] = BERT_EXCLUDE_FROM_WEIGHT_DECAY,
                     loss_scale: bool = False,
                     schedule: Optional[keras.optimizers.schedules.LearningRateSchedule] = None,
                     recipe=None,
                     ) -> Tuple[keras.optimizers.Optimizer, WarmupLinearDecay]:
    """The original ``create_optimizer`` settings (spec 7.1), without the graph plumbing.

    Args:
      init_lr: peak learning rate.
      num_train_steps: total optimizer updates (decay length).
      num_warmup_steps: warmup updates; 0/None: none.
      weight_decay_rate: 0.01 as the original.
      variable_names: original name -> variable map, or callable (see :class:`AdamWeightDecay`).
      clip_norm: global-norm clip, 1.0 as the original; None turns it off.
      exclude_from_weight_decay: the original's ``["LayerNorm", "layer_norm", "bias"]``.
      loss_scale: wrap in ``keras.optimizers.LossScaleOptimizer`` (dynamic loss scaling for
        float16 compute). The wrapped optimizer is ``.inner_optimizer``.
      schedule: (bert_tf) another learning-rate schedule (``--lr_schedule``); None: the
        original's :class:`WarmupLinearDecay` of ``init_lr``, ``num_train_steps``,
        ``num_warmup_steps``.
      recipe: (bert_tf) layer-wise rates and gradual unfreezing (see :class:`AdamWeightDecay`).

    Returns:
      ``(optimizer, schedule)``; the optimizer's ``iterations`` is the global step (the
      learning rate of an update uses the value before the increment, as the original).

    Raises:
      FlagError: ``num_train_steps`` <= 0 (from the schedule).
    """
    if schedule is None:
        schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    optimizer = AdamWeightDecay(
        learning_rate=schedule, weight_decay_rate=weight_decay_rate, beta_1=0.9, beta_2=0.999,
        epsilon=1e-6, exclude_from_weight_decay=list(exclude_from_weight_decay),
        clip_norm=clip_norm, variable_names=variable_names,
        recipe=recipe)
    if loss_scale:
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer, schedule


def inner_optimizer(optimizer) -> AdamWeightDecay:
    """The :class:`AdamWeightDecay` inside a ``LossScaleOptimizer`` (or the optimizer itself)."""
    return getattr(optimizer, "inner_optimizer", optimizer)
