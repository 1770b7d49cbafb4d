"""Atomic output files: written under a temporary name in the target folder, renamed at the end.

Every output of the scripts (JSON lines, TFRecords, result files, checkpoint state files) goes
through here, so a failed or killed run never leaves a partial file and never damages the
previous one. The renamed file gets the permissions a plain ``open(path, "w")`` would give it
(``0o666`` minus the umask), not the ``0o600`` of ``tempfile.mkstemp``.
"""

import contextlib
import os
import tempfile
from typing import Iterator, TextIO


def current_umask() -> int:
    """The process umask, read without changing it (``os.umask`` is not thread-safe);
    ``0o022`` if unknown."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


@contextlib.contextmanager
def atomic_path(path: str, suffix: str = "") -> Iterator[str]:
    """Yields a temporary path next to ``path``; renames it to ``path`` if the block succeeds.

    On an exception the temporary file is removed and ``path`` is left as it was.

    Raises:
      OSError: the folder does not exist or is not writable.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_text_writer(path: str) -> Iterator[TextIO]:
    """A UTF-8 text file object for ``path``, written atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            yield f


def atomic_write_text(path: str, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically."""
    with atomic_text_writer(path) as f:
        f.write(text)
