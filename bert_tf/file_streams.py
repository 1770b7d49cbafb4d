"""Reading text files (plain or ``.gz``) from local disk or any ``tf.io.gfile`` path.

The original scripts opened every input with ``tf.gfile.Open``, so ``gs://`` inputs worked;
a builtin ``open`` does not (issue 17, deliverable 2). Local paths keep the builtin ``open`` /
``gzip.open`` (TensorFlow not needed); remote paths (``scheme://``) are read through
``tf.io.gfile.GFile``, and a missing remote file raises ``FileNotFoundError`` as a local one
does, so callers keep one ``except`` clause.
"""

import errno
import gzip
import io
from typing import IO

from bert_tf.atomic_files import is_remote


def open_text(path: str) -> IO[str]:
    """A UTF-8 text reader of ``path``; gunzipped when the name ends with ``.gz``.

    Raises:
      FileNotFoundError: no such file (local or remote).
      OSError, ``tf.errors.OpError``: unreadable.
    """
    if not is_remote(path):
        if path.endswith(".gz"):
            return gzip.open(path, "rt", encoding="utf-8")
        return open(path, "r", encoding="utf-8")
    if path.endswith(".gz"):
        return io.TextIOWrapper(open_binary(path), encoding="utf-8")  # over a GzipFile
    open_binary(path).close()  # FileNotFoundError for a missing file
    import tensorflow as tf

    return tf.io.gfile.GFile(path, "r")  # text mode: UTF-8 str


def open_binary(path: str) -> IO[bytes]:
    """A byte reader of ``path`` (gunzipped for ``.gz``), local or remote.

    Raises:
      FileNotFoundError: no such file.
    """
    if not is_remote(path):
        return gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    import tensorflow as tf  # remote paths only

    if not tf.io.gfile.exists(path):
        raise FileNotFoundError(errno.ENOENT, "No such file", path)
    raw = tf.io.gfile.GFile(path, "rb")
    return gzip.GzipFile(fileobj=raw, mode="rb") if path.endswith(".gz") else raw
