"""Probes of a task's start from a checkpoint (issue 24 item 1): which weights drew random
initial values, and the same run with every weight built plainly (random, then overwritten by
the restore: the path before issue 24), for a parity check."""
import contextlib

import keras
import tensorflow as tf

from bert_tf import pending_variables

# The random initializers the families use; only those defining __call__ themselves are
# patched, so a subclass (GlorotUniform of VarianceScaling) is counted once.
_RANDOM = (keras.initializers.TruncatedNormal, keras.initializers.RandomNormal,
           keras.initializers.RandomUniform, keras.initializers.VarianceScaling)


def record_random_draws(monkeypatch):
    """The shapes of the random initial values computed eagerly from now on (a list that
    fills as the run goes; a traced initializer that never runs is not listed)."""
    drawn = []
    for cls in _RANDOM:
        original = cls.__dict__["__call__"]

        def record(self, shape, dtype=None, _original=original):
            value = _original(self, shape, dtype=dtype)
            if tf.executing_eagerly():
                drawn.append(tuple(int(d) for d in shape))
            return value

        monkeypatch.setattr(cls, "__call__", record)
    return drawn


def build_plainly(monkeypatch):
    """From now on models are built with their random initial values and then restored (the
    path before issue 24): ``building_empty`` does nothing."""
    monkeypatch.setattr(pending_variables, "building_empty", contextlib.nullcontext)


def checkpoint_arrays(prefix):
    """name -> array of every tensor of a checkpoint."""
    reader = tf.train.load_checkpoint(prefix)
    return {n: reader.get_tensor(n) for n in reader.get_variable_to_shape_map()}
