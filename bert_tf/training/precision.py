"""``--dtype``: mixed precision for the task models (bert_tf, beyond the original).

``float32`` is the original's arithmetic. ``bfloat16`` and ``float16`` build the layers with
Keras' ``mixed_bfloat16`` / ``mixed_float16`` policy: variables (and so checkpoints) stay
float32, matmuls run in the lower precision, log-probs and losses are cast to float32.
``float16`` also needs loss scaling (see :meth:`bert_tf.training.loop.TrainConfig.flag_settings`).
Without a GPU, ``float16`` is emulated: training ran about 30x slower than float32 on 2 CPU
cores (issue 27's report); one warning line says so and suggests bfloat16 or float32.
"""

import contextlib
from typing import Iterator

import keras
from absl import logging

from bert_tf.errors import FlagError

POLICIES = {"float32": "float32", "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}


@contextlib.contextmanager
def dtype_policy(dtype: str) -> Iterator[None]:
    """Builds the layers created inside the block with the policy of ``dtype``.

    The global Keras policy is restored afterwards (layers keep the policy they were built with).

    Raises:
      FlagError: ``dtype`` is not float32, float16 or bfloat16.
    """
    if dtype not in POLICIES:
        raise FlagError(f"--dtype={dtype}: expected one of {', '.join(POLICIES)}")
    if dtype == "float16":
        warn_float16_without_gpu()
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICIES[dtype])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


_WARNED = []


def warn_float16_without_gpu() -> bool:
    """One warning line per process when ``--dtype=float16`` runs without a GPU (CPUs emulate
    float16 matmuls: about 30x slower than float32); returns whether it warned."""
    import tensorflow as tf

    if _WARNED or tf.config.list_physical_devices("GPU"):
        return False
    _WARNED.append(True)
    logging.warning("--dtype=float16 without a GPU: CPUs emulate float16, so this runs many "
                    "times slower than float32 (about 30x when training on 2 CPU cores); use "
                    "--dtype=bfloat16 or float32 on a CPU")
    return True
