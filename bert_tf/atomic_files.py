"""Atomic output files: written under a temporary name in the target folder, renamed at the end.

Every output of the scripts (JSON lines, TFRecords, result files, checkpoint state files) goes
through here, so a failed or killed run never leaves a partial file and never damages the
previous one. Temporary files are named ``.tmp-<pid>-...``: one left by a process that no longer
runs (``kill -9``) is removed by the next write into the same folder. The renamed file gets the permissions a plain ``open(path, "w")`` would give it
(``0o666`` minus the umask), not the ``0o600`` of ``tempfile.mkstemp``.
"""

import contextlib
import os
import re
import tempfile
from typing import Iterator, TextIO

from bert_tf.errors import OutputPathError


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


def check_output_path(path: str, create_parent: bool = False) -> str:
    """Checks that ``path`` can become an output file; call it before any long work.

    Args:
      create_parent: create a missing parent folder (else it is an error).

    Returns:
      ``path``.

    Raises:
      OutputPathError: ``path`` is empty, ends with a slash or is a folder, or its parent is
        missing (and not created), not a folder, or not writable (names the path).
    """
    if not path or path.endswith(os.sep) or os.path.isdir(path):
        raise OutputPathError(f"{path!r}: is a folder, expected an output file name")
    folder = os.path.dirname(os.path.abspath(path))
    if create_parent and not os.path.exists(folder):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise OutputPathError(f"{path}: cannot create the folder {folder} ({e.strerror or e})") from e
    if not os.path.isdir(folder):
        what = "does not exist" if not os.path.exists(folder) else "is not a folder"
        raise OutputPathError(f"{path}: output folder {folder} {what}")
    if not os.access(folder, os.W_OK):
        raise OutputPathError(f"{path}: output folder {folder} is not writable")
    return path


_TEMP_NAME = re.compile(r"^\.tmp-(\d+)-")


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temp_files(folder: str) -> None:
    """Removes ``.tmp-<pid>-*`` files in ``folder`` whose process no longer runs."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = _TEMP_NAME.match(name)
        if m and int(m.group(1)) != os.getpid() and not _process_alive(int(m.group(1))):
            try:
                os.remove(os.path.join(folder, name))
            except OSError:
                pass


@contextlib.contextmanager
def atomic_path(path: str, suffix: str = "") -> Iterator[str]:
    """Yields a temporary path next to ``path``; renames it to ``path`` if the block succeeds.

    On an exception the temporary file is removed and ``path`` is left as it was.

    Raises:
      OutputPathError: see :func:`check_output_path`.
    """
    check_output_path(path)
    folder = os.path.dirname(os.path.abspath(path))
    remove_stale_temp_files(folder)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-", suffix=suffix, dir=folder)
    except OSError as e:
        raise OutputPathError(f"{path}: cannot write in {folder} ({e.strerror or e})") from e
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
