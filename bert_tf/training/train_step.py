"""The input iterator and the update step of the training loop.

* :func:`distributed_iterator`: the training data repeated forever, distributed by the
  strategy, with the batches already trained on skipped;
* :class:`TrainStep`: ``n`` optimizer updates in one ``tf.function`` call (the original's
  ``iterations_per_loop``), each the mean gradient of ``gradient_accumulation_steps`` batches,
  with the loss divided by the number of replicas (the original's ``CrossShardOptimizer``)
  and optionally scaled (float16 loss scaling). Clipping by global norm 1.0 (spec `bert.md`
  7.1 step 5) is done by the optimizer (:class:`AdamWeightDecay`'s ``clip_norm``).
"""

import functools
from typing import Any, Callable, Iterator, Tuple, Union

import keras
import tensorflow as tf
from absl import logging

from bert_tf.dropout import StepSeeds

DatasetOrFn = Union[tf.data.Dataset, Callable[[tf.distribute.InputContext], tf.data.Dataset]]


def distributed_iterator(strategy: tf.distribute.Strategy, dataset: DatasetOrFn,
                         skip: int = 0) -> Iterator:
    """An iterator over ``dataset`` repeated forever, under ``strategy``, from batch ``skip``.

    The original's training input functions repeat the data forever (``d.repeat()``); the
    skip is bert_tf's (on resume the Estimator restarted the input from the beginning).

    Args:
      strategy: the ``tf.distribute`` strategy.
      dataset: a ``tf.data.Dataset`` batched with the GLOBAL batch size (split across the
        replicas by ``strategy.experimental_distribute_dataset``), or a function
        ``input_context -> dataset`` batched per replica (run by
        ``strategy.distribute_datasets_from_function``, each worker its own pipeline).
      skip: batches to drop first (int; per input pipeline), counted in the repeated data.

    Returns:
      An iterator of distributed elements (``next`` inside ``strategy``'s functions).
    """
    skip = int(skip)
    if callable(dataset) and not isinstance(dataset, tf.data.Dataset):
        dataset_fn = dataset
        dist_dataset = strategy.distribute_datasets_from_function(
            lambda ctx: dataset_fn(ctx).repeat().skip(skip))
    else:
        dist_dataset = strategy.experimental_distribute_dataset(dataset.repeat().skip(skip))
    if skip:
        logging.info("Skipping the first %d batches (already trained on)", skip)
    return iter(dist_dataset)


class TrainStep:
    """Runs optimizer updates: forward/backward, gradient accumulation, loss scaling.

    Create it under ``strategy.scope()`` (the accumulators are variables). Calling it runs
    ``n`` updates; each update takes ``accumulation`` elements from the iterator, computes
    ``loss = mean(float32(loss_fn(model, features, labels)))`` on each replica, takes the
    gradients of ``loss / num_replicas_in_sync`` (times the loss scale when ``optimizer`` is
    a ``keras.optimizers.LossScaleOptimizer``), sums them over the replicas (the strategy's
    all-reduce), averages them over the ``accumulation`` batches and applies them with
    ``optimizer.apply``. An element that is not a 2-tuple is passed as ``features`` with
    ``labels=None``.

    The step is traced once (one ``tf.function``, autograph off, the update loop an explicit
    ``tf.while_loop``), so ``loss_fn`` and the model's ``call`` must not branch on tensor
    values in Python (use ``tf.cond`` / ``tf.where``): such code raises at the first call.

    Args:
      model: the Keras model (its ``trainable_variables`` are updated).
      loss_fn: ``loss_fn(model, features, labels) -> loss``: the mean loss of the replica's
        batch (float scalar, any float dtype; a vector is averaged).
      optimizer: a Keras optimizer built for ``model.trainable_variables``.
      strategy: the ``tf.distribute`` strategy the iterator belongs to.
      accumulation: batches per update (int >= 1), the original's missing
        ``gradient_accumulation_steps``: the update uses the mean of their gradients.
      use_xla: compile the forward and backward pass with XLA (``jit_compile=True``).

    Dropout (bert_tf): before each update every ``Dropout`` of ``model`` is keyed on the
    optimizer's ``iterations`` (:class:`bert_tf.dropout.StepSeeds`), so the masks of update
    ``k`` are the same whether the run got there uninterrupted or resumed from a checkpoint.

    A call can be cut short (bert_tf): :meth:`request_stop` (from any thread; the training
    loop's SIGTERM / Ctrl-C watcher, :mod:`bert_tf.stop_requests`) ends it after the update
    that is running, where the original ran all of its ``iterations_per_loop`` first; the
    loss returned is then the mean over the updates run. Not under ``TPUStrategy`` or
    ``MultiWorkerMirroredStrategy`` (one worker ending its loop early would leave the others
    waiting in an all-reduce): there a call always runs its ``n`` updates.

    Raises:
      ValueError: ``accumulation`` < 1.
    """

    def __init__(self, model: keras.Model, loss_fn: Callable[[keras.Model, Any, Any], tf.Tensor],
                 optimizer: keras.optimizers.Optimizer, strategy: tf.distribute.Strategy,
                 accumulation: int = 1, use_xla: bool = False):
        if int(accumulation) < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got {accumulation}")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.strategy, self.accumulation = strategy, int(accumulation)
        self.trainable = list(model.trainable_variables)
        self.scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
        self.accumulators = []
        if self.accumulation > 1:
            self.accumulators = [
                tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                            synchronization=tf.VariableSynchronization.ON_READ,
                            aggregation=tf.VariableAggregation.SUM, name="gradient_accumulator")
                for v in self.trainable]
        # each update's dropout masks keyed on global_step (a resumed run draws the
        # uninterrupted run's masks; bert_tf.dropout.StepSeeds)
        self.seeds = StepSeeds(model)
        self._forward_backward = (tf.function(self.forward_backward, jit_compile=True)
                                  if use_xla else self.forward_backward)
        # read by the update loop's condition before each update (request_stop)
        self.stop = (None if isinstance(strategy, (tf.distribute.TPUStrategy,
                                                   tf.distribute.MultiWorkerMirroredStrategy))
                     else tf.Variable(False, trainable=False, name="stop_requested",
                                      aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA))
        # autograph off: the loop below is an explicit ``tf.while_loop`` and nothing traced
        # inside (model call, loss, optimizer) branches on tensors in Python; converting the
        # ~90 functions reached from the step was about half of the first trace's seconds.
        self._steps = tf.function(self._run, autograph=False)

    def __call__(self, iterator: Iterator, n: int) -> Tuple[tf.Tensor, tf.Tensor]:
        """Runs ``n`` updates (int or int32 scalar tensor).

        Returns:
          ``(mean_loss, examples)``: the mean over replicas and batches of the unscaled loss
          (float32 scalar) and the number of examples consumed (int32 scalar, all replicas).
        """
        return self._steps(iterator, tf.constant(n, tf.int32))

    def request_stop(self) -> None:
        """Ends the running call (and any later one) after the update it is running: callable
        from any thread. Does nothing where calls cannot be cut short (see the class)."""
        if self.stop is not None:
            self.stop.assign(True)

    def stop_requested(self) -> bool:
        """Whether :meth:`request_stop` was called since the last :meth:`clear_stop`."""
        return self.stop is not None and bool(self.stop.numpy())

    def clear_stop(self) -> None:
        """Lets calls run all their updates again."""
        if self.stop is not None:
            self.stop.assign(False)

    def forward_backward(self, features, labels):
        """One replica's ``(loss, gradients)``: float32 scalar loss, one gradient per
        trainable variable (None where it does not depend on the loss)."""
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.cast(self.loss_fn(self.model, features, labels),
                                          tf.float32))
            replica_loss = loss / self.strategy.num_replicas_in_sync
            if self.scaled:
                replica_loss = self.optimizer.scale_loss(replica_loss)
        return loss, tape.gradient(replica_loss, self.trainable)

    def _apply(self, grads):
        """Applies one update; the variables without a gradient (BERT's pooler under the SQuAD
        loss) are left out, as the original's ``AdamWeightDecayOptimizer.apply_gradients``
        skips them (``if grad is None: continue``), without Keras' "Gradients do not exist"
        warning on every run. Their slots exist (the optimizer is built on every trainable
        variable) and keep their zeros, as before."""
        pairs = [(g, v) for g, v in zip(grads, self.trainable) if g is not None]
        self.optimizer.apply([g for g, _ in pairs], [v for _, v in pairs])

    def _micro_step(self, features, labels, after, apply):
        """One batch's forward/backward; accumulates its gradients, or applies the mean.
        ``after``: a tensor the forward waits for (the previous batch's ``done``). Returns
        ``(loss, batch, done)``, ``done`` computed once this batch's gradients are added."""
        if self.accumulation > 1:  # one batch's activations and gradients live at a time
            with tf.control_dependencies([after]):
                features = tf.nest.map_structure(tf.identity, features)
        loss, grads = self._forward_backward(features, labels)
        done = loss
        if self.accumulation == 1:
            self._apply(grads)
        elif not apply:
            added = [acc.assign_add(tf.convert_to_tensor(g))
                     for acc, g in zip(self.accumulators, grads) if g is not None]
            with tf.control_dependencies(added):
                done = tf.identity(loss)
        else:
            grads = [None if g is None else (acc + tf.convert_to_tensor(g)) / self.accumulation
                     for acc, g in zip(self.accumulators, grads)]
            self._apply(grads)
            for acc in self.accumulators:
                acc.assign(tf.zeros_like(acc))
        batch = tf.shape(tf.nest.flatten(features)[0])[0]
        return loss, batch, done

    def _run(self, iterator, n):
        strategy = self.strategy

        def update(i, loss_sum, examples):
            # The batches of one update run one after the other (``after``): traced side by
            # side, TensorFlow ran their forward/backward passes at the same time, so 2
            # batches of 2 accumulated took more memory than one batch of 4 (BERT-Large
            # SQuAD seq 384: over 13 GB vs 12.2 GB).
            self.seeds.key_on(self.optimizer.iterations)
            after = tf.constant(0.0)
            for j in range(self.accumulation):
                element = next(iterator)
                if isinstance(element, tuple) and len(element) == 2:
                    features, labels = element
                else:
                    features, labels = element, None
                fn = functools.partial(self._micro_step, apply=(j == self.accumulation - 1))
                loss, batch, after = strategy.run(fn, args=(features, labels, after))
                loss_sum += strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)
                examples += strategy.reduce(tf.distribute.ReduceOp.SUM, batch, axis=None)
            return i + 1, loss_sum, examples

        def more(i, *_):
            if self.stop is None:
                return i < n
            return tf.logical_and(i < n, tf.logical_not(self.stop.read_value()))

        done, loss_sum, examples = tf.while_loop(
            more, update,
            (tf.constant(0, tf.int32), tf.constant(0.0), tf.constant(0, tf.int32)))
        # the mean over the updates run (all n unless a stop was requested)
        return loss_sum / tf.cast(tf.maximum(done, 1) * self.accumulation, tf.float32), examples
