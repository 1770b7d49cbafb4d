"""Freed tensor memory back to the system at once, on request (bert_tf, beyond the originals;
issue 24).

TensorFlow's CPU allocator takes every tensor buffer from the C library's ``malloc``. glibc
serves a block above its *mmap threshold* with a fresh ``mmap`` and returns it with ``munmap`` on
``free``; below, from its heaps, which keep freed blocks for reuse. The threshold starts at
128 KiB and *rises* to the size of each mmapped block freed (up to 32 MiB on 64-bit), so after
the first batch most activation buffers (ALBERT-base at seq 512, batch 2: attention scores of
25 MB per layer) come from the heaps, and what they free stays resident, interleaved with
live blocks, up to the process's end. A fixed threshold keeps every large buffer mmapped:
resident memory then follows the live tensors.

The cost is the page faults of fresh mappings, every time a large buffer is allocated: measured
(AMD EPYC, 2 vCPUs, ``bench/bench_official_sizes.py`` and a forward loop), ALBERT-base at seq 512
batch 2 peaks at 0.33 GB anonymous in its first batch with the threshold fixed at 1 MiB, against
0.39-0.46 GB with glibc's rising one (the original under TF 2.15: 0.37-0.40 GB), for +1.3 s of
system CPU time (+8%); but MiniLM's forward at batch 8, seq 128 takes 1.7x the CPU time
(2.6 M page faults in 30 batches instead of 0.1-0.2 M). So it is a lever for runs that are
bound by memory (official sizes, large batches), not the default.

``BERT_TF_MMAP_THRESHOLD`` (bytes; unset or ``dynamic``: glibc's own rising threshold) chooses;
every entry point applies it (:func:`bert_tf.flags.run_main`), programs using the model API call
:func:`return_freed_memory` themselves. glibc's own ``MALLOC_MMAP_THRESHOLD_``, when set, is left
in charge. Elsewhere than glibc (musl, macOS) nothing changes.
"""

import ctypes
import ctypes.util
import os
from typing import Optional

from bert_tf.errors import FlagError

ENV = "BERT_TF_MMAP_THRESHOLD"
SUGGESTED_THRESHOLD_BYTES = 1 << 20
_M_MMAP_THRESHOLD = -3  # glibc's <malloc.h> parameter number
_GLIBC_MAX_BYTES = 32 << 20  # glibc refuses a threshold above HEAP_MAX_SIZE / 2 on 64-bit


def threshold_from_environment(environ=None) -> Optional[int]:
    """The mmap threshold in bytes that :func:`return_freed_memory` sets, or ``None`` to keep
    glibc's own (``BERT_TF_MMAP_THRESHOLD`` unset or ``dynamic``, or ``MALLOC_MMAP_THRESHOLD_``
    set).

    Raises :class:`bert_tf.errors.FlagError` naming ``BERT_TF_MMAP_THRESHOLD`` for a value that
    is not ``dynamic`` or a whole number of bytes in [0, 32 MiB]."""
    environ = os.environ if environ is None else environ
    if "MALLOC_MMAP_THRESHOLD_" in environ:
        return None
    value = environ.get(ENV, "").strip()
    if not value or value.lower() == "dynamic":
        return None
    try:
        threshold = int(value)
    except ValueError:
        threshold = -1
    if not 0 <= threshold <= _GLIBC_MAX_BYTES:
        raise FlagError(f"environment variable {ENV}={value!r}: expected 'dynamic' or a number "
                        f"of bytes from 0 to {_GLIBC_MAX_BYTES}")
    return threshold


def return_freed_memory(threshold_bytes: Optional[int] = SUGGESTED_THRESHOLD_BYTES) -> bool:
    """Fixes glibc's mmap threshold at ``threshold_bytes`` (``mallopt(M_MMAP_THRESHOLD, n)``),
    so freed buffers larger than it go back to the system at once. Affects the allocations made
    after the call, in the whole process. ``None`` changes nothing.

    Returns True when the threshold was set; False for ``None``, a C library without
    ``mallopt`` (not glibc), or a value glibc refused."""
    if threshold_bytes is None:
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return mallopt(_M_MMAP_THRESHOLD, int(threshold_bytes)) == 1
