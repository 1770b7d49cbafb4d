"""Reading TensorBoard event files in tests (tf.compat.v1.train.summary_iterator)."""

import glob
import os

import tensorflow as tf


def read_scalars(folder):
    """tag -> {step: value} of every event file directly in ``folder``."""
    out = {}
    for path in glob.glob(os.path.join(folder, "events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                out.setdefault(value.tag, {})[event.step] = float(
                    tf.make_ndarray(value.tensor))
    return out
