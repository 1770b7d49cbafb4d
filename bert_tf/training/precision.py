"""``--dtype``: mixed precision for the task models (bert_tf, beyond the original).

``float32`` is the original's arithmetic. ``bfloat16`` and ``float16`` build the layers with
Keras' ``mixed_bfloat16`` / ``mixed_float16`` policy: variables (and so checkpoints) stay
float32, matmuls run in the lower precision, log-probs and losses are cast to float32.
``float16`` also needs loss scaling (see :meth:`bert_tf.training.loop.TrainConfig.flag_settings`).
"""

import contextlib
from typing import Iterator

import keras

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
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICIES[dtype])
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)
