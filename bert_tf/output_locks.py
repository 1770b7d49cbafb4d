"""One run per output: an exclusive lock file next to each output file or folder.

Beyond the originals (issue 15 item 5): two runs writing the same ``--output_file`` or
``--output_dir`` both reported success while one result was gone. :func:`flags.run_main` takes
an :func:`output_lock` on every output the command line names before the script's work starts;
a second run on the same output fails at once with one line naming the other run's pid.

The lock of ``<folder>/<name>`` is the file ``<folder>/.<name>.bert_tf-lock`` holding the owner's
pid, locked with ``fcntl.flock(LOCK_EX | LOCK_NB)``. The kernel releases a ``flock`` when its
process dies, so a ``kill -9`` never leaves a lock that blocks: the next run takes the lock over
and says so in one line (the file still names the dead pid). The file is removed when the run
ends.

Not locked: a remote path (``gs://``, ``ram://``: ``tf.io.gfile`` has no exclusive create), an
output whose folder does not exist yet (nothing there to lock: the run either creates the folder
or fails on it), and a file system without ``flock`` (locking is then skipped with one line).
"""

import contextlib
import errno
import fcntl
import os
from typing import Iterator, List, Optional, Sequence

from absl import logging

from bert_tf.errors import OutputPathError

LOCK_SUFFIX = ".bert_tf-lock"


def lock_path(path: str) -> str:
    """The lock file of output ``path`` (a file or a folder; a trailing slash is ignored):
    ``<folder>/.<name>.bert_tf-lock`` beside it."""
    path = os.path.abspath(path.rstrip(os.sep) or os.sep)
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}{LOCK_SUFFIX}")


def _read_pid(fd: int) -> Optional[int]:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        return int(text) if text else None
    except (OSError, ValueError):
        return None


class OutputLock:
    """A held lock (see :func:`acquire`): ``path`` the output, ``file`` the lock file,
    ``took_over_pid`` the pid of a dead run whose lock file was found (else None)."""

    def __init__(self, path: str, file: str, fd: int, took_over_pid: Optional[int]):
        self.path, self.file, self.fd, self.took_over_pid = path, file, fd, took_over_pid

    def release(self) -> None:
        """Removes the lock file and releases the lock (idempotent)."""
        if self.fd < 0:
            return
        try:
            os.remove(self.file)  # removed while held: no other run holds this inode
        except OSError:
            pass
        os.close(self.fd)
        self.fd = -1


def acquire(path: str, what: str = "") -> Optional[OutputLock]:
    """Takes the lock of output ``path`` for this process.

    Args:
      path: the output file or folder (local; see the module docstring for what is skipped).
      what: how the command line named it, for messages (``"--output_file"``).

    Returns:
      the held :class:`OutputLock`, or None where nothing is locked (remote path, missing
      folder, no ``flock`` support).

    Raises:
      OutputPathError: another running process holds the lock (names the output, the flag,
        the other run's pid and the lock file).
    """
    if not path or "://" in path:
        return None
    file = lock_path(path)
    if not os.path.isdir(os.path.dirname(file)):
        return None
    for _ in range(10):  # retried only when a finishing run removed the file under us
        try:
            fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            if e.errno in (errno.EACCES, errno.EROFS, errno.EPERM, errno.ENOENT):
                # a read-only folder, or one that takes no new file (/proc): the run's own
                # write check reports it (bert_tf.atomic_files.check_output_path)
                return None
            raise OutputPathError(f"{path}: cannot create the lock file {file} "
                                  f"({e.strerror or e})") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            owner = _read_pid(fd)
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                flag = f" ({what})" if what else ""
                pid = f"pid {owner}" if owner else "another process"
                raise OutputPathError(
                    f"{path}{flag}: another run ({pid}) is writing this output; wait for it "
                    f"to end or choose another output (lock file {file})") from None
            logging.warning("%s: no lock taken (%s: flock not supported here)", path, file)
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(file).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the holder removed the file between our open and flock: retry
            os.close(fd)
            continue
        stale = _read_pid(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        if stale is not None and stale != os.getpid():
            logging.warning("%s: took over the lock of pid %d, which no longer runs (%s)",
                            path, stale, file)
        return OutputLock(path, file, fd, stale if stale != os.getpid() else None)
    raise OutputPathError(f"{path}: cannot take the lock file {file} (it keeps changing)")


@contextlib.contextmanager
def output_locks(paths: Sequence[Sequence[str]]) -> Iterator[List[OutputLock]]:
    """Holds the locks of ``paths`` (``(path, what)`` pairs, duplicates taken once) for the
    block; all are released at its end, also on an exception.

    Raises:
      OutputPathError: see :func:`acquire` (locks already taken are released).
    """
    held: List[OutputLock] = []
    seen = set()
    try:
        for path, what in paths:
            key = lock_path(path) if path and "://" not in path else path
            if key in seen:
                continue
            seen.add(key)
            lock = acquire(path, what)
            if lock is not None:
                held.append(lock)
        yield held
    finally:
        for lock in reversed(held):
            lock.release()
