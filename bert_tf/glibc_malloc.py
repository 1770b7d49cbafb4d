"""glibc's allocator settings for bert_tf's processes, in one place (issues 24, 25).

TensorFlow's CPU tensors come from the C library's ``malloc``. :func:`tune_malloc` (every entry
point, :func:`bert_tf.flags.run_main`) keeps freed batch buffers for reuse and large ones
mmapped; :func:`release_freed_memory` (checkpoint restore) hands the heaps' free pages back after
tensor-sized frees. Off glibc (musl, macOS) both do nothing.
"""

import ctypes
import ctypes.util
import os

# glibc mallopt parameters (malloc.h) and the values tune_malloc sets
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD_BYTES = 16 << 20  # blocks from 16 MiB are mmapped, and unmapped when freed
TRIM_THRESHOLD_BYTES = 256 << 20
MALLOC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
              "MALLOC_MMAP_MAX_")
# A tensor this large read from a checkpoint is followed by a malloc_trim.
_TRIM_BYTES = 1 << 20


def libc_function(name):
    """The C library's function ``name`` (None where there is none: not glibc), for the
    process settings of this module and :mod:`bert_tf.library_pages`."""
    try:
        return getattr(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6"), name)
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = libc_function("malloc_trim")


def tune_malloc() -> bool:
    """Lets glibc's ``malloc`` keep freed memory for the next batch (bert_tf, issue 25).

    Each batch allocates and frees the same large buffers (TensorFlow's tensors, the JSON
    lines of extract_features); with glibc's defaults, blocks from 128 KB are mmap'ed and
    unmapped on free and the top of the heap is returned above a small threshold, so every
    batch faults its pages in again: 1.2 million minor page faults and 4.0 s of system CPU
    time of an 18 s ``extract_features.py`` run of 400 lines (MiniLM, AMD EPYC 2 vCPUs), 0.16
    million and 1.1 s with these settings, peak RSS unchanged. Sets ``M_MMAP_THRESHOLD`` to
    16 MiB and ``M_TRIM_THRESHOLD`` to 256 MB with ``mallopt``. Blocks from 16 MiB stay
    mmapped (unmapped when freed): at 32 MiB (glibc's largest rising threshold) ALBERT-xxlarge's
    [2, 512, 4096] hidden states came from the heaps and its first batch peaked at 1.62 GB
    anonymous, 1.33 GB at 16 MiB (the original: 1.47-1.61), for no more page faults in MiniLM's
    [32, 128] forward (issue 24).

    Returns:
      True when set; False (nothing changed) off glibc, or when the user set one of
      :data:`MALLOC_ENV` (theirs wins).
    """
    if any(name in os.environ for name in MALLOC_ENV):
        return False
    mallopt = libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES))


def release_freed_memory(nbytes: int) -> None:
    """After a buffer of ``nbytes`` was freed: hands the C heap's free pages back to the
    system (glibc ``malloc_trim``; nothing elsewhere or for small buffers).

    Filling variables from a checkpoint frees tensor-sized buffers (an allocated variable's
    old value, the float32 read of a bfloat16 variable); glibc keeps such frees (below its adaptive mmap threshold, up to
    32 MiB) in its heaps, which grew BERT-Large's restore peak by ~270 MiB over the weights
    themselves (issue 24).
    """
    if _MALLOC_TRIM is not None and nbytes >= _TRIM_BYTES:
        _MALLOC_TRIM(0)
