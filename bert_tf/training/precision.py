"""``--dtype``: mixed precision for the task models (bert_tf, beyond the original).

``float32`` is the original's arithmetic. ``bfloat16`` and ``float16`` build the layers with
Keras' ``mixed_bfloat16`` / ``mixed_float16`` policy: variables (and so checkpoints) stay
float32, matmuls run in the lower precision, log-probs and losses are cast to float32.
``float16`` also needs loss scaling (see :meth:`bert_tf.training.loop.TrainConfig.flag_settings`).
Without a GPU, ``float16`` is emulated: training ran about 30x slower than float32 on 2 CPU
cores (issue 27's report); one warning line says so and suggests bfloat16 or float32.
"""

import contextlib
from typing import Iterator, List, Optional

import keras
from absl import logging

from bert_tf.errors import FlagError

POLICIES = {"float32": "float32", "float16": "mixed_float16", "bfloat16": "mixed_bfloat16"}


# the dtype of matmul kernels built inside dtype_policy(..., inference_only=True) blocks
_MATMUL_WEIGHTS: List[Optional[str]] = []
_SAID = set()  # the lower precisions dtype_policy has named in the log


@contextlib.contextmanager
def dtype_policy(dtype: str, inference_only: bool = False) -> Iterator[None]:
    """Builds the layers created inside the block with the policy of ``dtype``.

    The global Keras policy is restored afterwards (layers keep the policy they were built with).

    ``inference_only`` (bert_tf, issue 25): the model built inside only predicts (no training,
    no export), so with ``bfloat16`` / ``float16`` its matmul kernels and biases may be held in
    that dtype (:func:`matmul_weight_dtype`): the float32 checkpoint values are cast once when
    restored (:func:`bert_tf.checkpoint_io.assign_from_checkpoint`) instead of on every call.
    The products are the same numbers (one round-to-nearest-even cast either way), the
    kernels take half the memory, and a forward at predict's [8, 64] batches ran 1.08x faster
    (MiniLM, bfloat16, 2-vCPU EPYC with avx512_bf16). Embedding tables, LayerNorm weights and
    the task heads stay float32, as under ``mixed_*``. No effect with ``float32``.

    Raises:
      FlagError: ``dtype`` is not float32, float16 or bfloat16.
    """
    if dtype not in POLICIES:
        raise FlagError(f"--dtype={dtype}: expected one of {', '.join(POLICIES)}")
    if dtype == "float16":
        warn_float16_without_gpu()
    said = (dtype, inference_only)
    if dtype != "float32" and said not in _SAID:  # one line per process says the precision
        _SAID.add(said)
        logging.info("computing in %s (Keras' %s: %s)", dtype, POLICIES[dtype],
                     f"float32 checkpoints, the matmul kernels held in {dtype} to predict"
                     if inference_only else "float32 variables and checkpoints")
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(POLICIES[dtype])
    _MATMUL_WEIGHTS.append(dtype if inference_only and dtype != "float32" else None)
    try:
        yield
    finally:
        _MATMUL_WEIGHTS.pop()
        keras.config.set_dtype_policy(previous)


def matmul_weight_dtype() -> Optional[str]:
    """The dtype for a matmul kernel built now: ``"bfloat16"`` / ``"float16"`` inside a
    ``dtype_policy(..., inference_only=True)`` block of that dtype, else None (the Keras
    policy's variable dtype, float32)."""
    return _MATMUL_WEIGHTS[-1] if _MATMUL_WEIGHTS else None


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
