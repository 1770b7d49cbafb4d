"""Atomic output files: written under a temporary name in the target folder, renamed at the end.

Every output of the scripts (JSON lines, TFRecords, result files, checkpoint state files) goes
through here, so a failed or killed run never leaves a partial file and never damages the
previous one. Temporary files are named ``.tmp-<pid>-...``: one left by a process that no longer
runs (``kill -9``) is removed by the next write into the same folder. The renamed file gets the permissions a plain ``open(path, "w")`` would give it
(``0o666`` minus the umask), not the ``0o600`` of ``tempfile.mkstemp``.

Remote paths (any ``scheme://``: ``gs://`` as the original's ``tf.gfile`` outputs, ``ram://`` in
the tests) go through ``tf.io.gfile`` (GFile, ``rename(overwrite=True)``, ``exists``, ``remove``,
``makedirs``), as the original's outputs did (spec: every path is a ``tf.gfile`` path). There
the temporary name also carries the host (``.tmp-<pid>-h<host>-...``) because several hosts
may write into one bucket folder: the sweep removes only this host's temporary files of dead
processes. A remote folder cannot be checked for write access before writing (GCS has no
permissions per folder), and a remote file keeps the bucket's permissions (no chmod).
"""

import contextlib
import os
import posixpath
import re
import socket
import stat
import tempfile
import uuid
from typing import Iterator, List, Sequence, TextIO, Tuple

from absl import logging

from bert_tf.errors import FlagError, OutputPathError


class CommitOnExit:
    """Context-manager protocol of the atomic writers: leaving a ``with`` block without an
    error calls ``self.close()`` (the file appears at its final path), with an error
    ``self.abort()`` (the temporary file is dropped, the final path is left as it was). The
    exception is never swallowed. Subclasses define ``close`` and ``abort``."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False


def exit_atomic_context(context) -> None:
    """Leaves an entered :func:`atomic_path` context as after an error: the temporary file is
    removed and the final path is not touched."""
    err = RuntimeError("aborted")
    try:
        context.__exit__(RuntimeError, err, None)
    except RuntimeError:
        pass


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


def is_remote(path: str) -> bool:
    """True for a ``scheme://`` path (``gs://``, ``ram://``, ...), handled by ``tf.io.gfile``."""
    return "://" in path


def display_path(path: str) -> str:
    """``os.path.abspath(path)`` for a local path; a remote path unchanged (``abspath`` would
    turn ``gs://b/x`` into ``<cwd>/gs:/b/x``)."""
    return path if is_remote(path) else os.path.abspath(path)


def _gfile():
    import tensorflow as tf  # only for remote paths: the local path stays TensorFlow-free
    return tf.io.gfile


def _check_remote_output_path(path: str, create_parent: bool) -> str:
    gfile = _gfile()
    if path.endswith("/") or gfile.isdir(path):
        raise OutputPathError(f"{display_path(path)}: is a folder, expected an output file name")
    folder = posixpath.dirname(path)
    if create_parent and not gfile.isdir(folder):
        try:
            gfile.makedirs(folder)
        except Exception as e:  # tf.errors.OpError and friends
            raise OutputPathError(f"{path}: cannot create the folder {folder} ({e})") from e
    if gfile.exists(folder) and not gfile.isdir(folder):
        raise OutputPathError(f"{path}: output folder {folder} is not a folder")
    return path


def check_output_path(path: str, create_parent: bool = False) -> str:
    """Checks that ``path`` can become an output file; call it before any long work.

    Args:
      create_parent: create a missing parent folder (else it is an error).

    Returns:
      ``path``.

    Raises:
      OutputPathError: ``path`` is empty, ends with a slash or is a folder, exists but is not a
        regular file (``/dev/full``, ``/dev/null``, a FIFO: the final rename would replace
        it), or its parent is missing (and not created), not a folder, or not writable
        (names the path). For a
        remote path (:func:`is_remote`) only "is a folder" and "parent is a file" can be known
        before writing: a bucket has no folders to be missing, and write access shows at the
        first write.
    """
    if path and is_remote(path):
        return _check_remote_output_path(path, create_parent)
    if not path or path.endswith(os.sep) or os.path.isdir(path):
        raise OutputPathError(f"{display_path(path)}: is a folder, expected an output file name")
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        # The rename at the end would replace a device such as /dev/full or /dev/null (or a
        # FIFO) by a regular file: refused instead.
        raise OutputPathError(
            f"{path}: is a device, pipe or socket, not a regular file; outputs are written to a "
            "temporary file and renamed, so the output must be a regular file path")
    folder = os.path.dirname(os.path.abspath(path))
    if create_parent and not os.path.exists(folder):
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as e:
            raise OutputPathError(f"{path}: cannot create the folder {folder} ({e.strerror or e})") from e
    if not os.path.isdir(folder):
        what = "does not exist" if not os.path.exists(folder) else "is not a folder"
        raise OutputPathError(f"{path}: output folder {folder} {what}")
    _probe_folder(path, folder)  # (os.access says yes to root on /sys)
    return path


def _probe_folder(path: str, folder: str) -> None:
    """Creates and removes an empty ``.tmp-<pid>-`` file in ``folder``: ``os.access`` says
    yes to root on a read-only or pseudo file system (``/sys``, ``/proc``), where the output's
    temporary file would then fail only after the long work (bert_tf; a ``kill -9`` between
    the two steps leaves an empty file that :func:`remove_stale_temp_files` removes)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=f".tmp-{os.getpid()}-probe-", dir=folder)
    except OSError as e:
        raise OutputPathError(f"{path}: output folder {folder} is not writable "
                              f"({e.strerror or e})") from e
    os.close(fd)
    try:
        os.remove(probe)
    except OSError:
        pass


_TEMP_NAME = re.compile(r"^\.tmp-(\d+)-")
_REMOTE_TEMP_NAME = re.compile(r"^\.tmp-(\d+)-h([A-Za-z0-9]*)-")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def remove_stale_temp_files(folder: str, quiet: bool = False) -> List[str]:
    """Removes ``.tmp-<pid>-*`` files in ``folder`` whose process no longer runs.

    In a remote folder, only ``.tmp-<pid>-h<host>-*`` files of this host (a pid says nothing
    about another host's processes). Folders (a ``kill -9``'d export's ``.tmp-`` folder) and
    a missing or unreadable ``folder`` are left alone. Unless ``quiet``, one absl WARNING line
    says what was removed (count, bytes, folder, first name) when anything was
    (issue 15 item 5: a killed run's temporary file can reach GBs).

    Returns:
      the paths removed.
    """
    if is_remote(folder):
        removed = _remove_stale_remote_temp_files(folder)
        sizes = None
    else:
        removed, sizes = [], 0
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            names = []
        for name in names:
            m = _TEMP_NAME.match(name)
            if m and int(m.group(1)) != os.getpid() and not _process_alive(int(m.group(1))):
                path = os.path.join(folder, name)
                try:
                    if not os.path.isfile(path) or os.path.islink(path):
                        continue
                    size = os.path.getsize(path)
                    os.remove(path)
                except OSError:
                    continue
                removed.append(path)
                sizes += size
    if removed and not quiet:
        amount = f", {sizes} bytes" if sizes is not None else ""
        logging.warning("removed %d stale temporary file(s) of processes that no longer run "
                        "from %s (%s%s)", len(removed), folder,
                        os.path.basename(removed[0]) + (", ..." if len(removed) > 1 else ""),
                        amount)
    return removed


def _remove_stale_remote_temp_files(folder: str) -> List[str]:
    gfile = _gfile()
    try:
        names = gfile.listdir(folder)
    except Exception:  # missing folder (nothing to sweep) or unreadable listing
        return []
    host = _host()
    removed = []
    for name in sorted(names):
        m = _REMOTE_TEMP_NAME.match(name)
        if (m and m.group(2) == host and int(m.group(1)) != os.getpid()
                and not _process_alive(int(m.group(1)))):
            try:
                gfile.remove(posixpath.join(folder, name))
            except Exception:
                continue
            removed.append(posixpath.join(folder, name))
    return removed


@contextlib.contextmanager
def _atomic_remote_path(path: str, suffix: str) -> Iterator[str]:
    gfile = _gfile()
    folder = posixpath.dirname(path)
    remove_stale_temp_files(folder)
    tmp = posixpath.join(folder, f".tmp-{os.getpid()}-h{_host()}-{uuid.uuid4().hex}{suffix}")
    try:
        yield tmp
        gfile.rename(tmp, path, overwrite=True)
    finally:
        if gfile.exists(tmp):
            gfile.remove(tmp)


def write_through(path: str) -> str:
    """The file an output ``path`` names: the target of a symlink (followed to the end), else
    ``path``. Outputs are written through a symlink to its target, so the link stays a link
    (the rename of a temporary file onto the link itself replaced it by a regular file;
    bert_tf, issue 27: the originals opened the path and wrote through the link)."""
    return os.path.realpath(path) if os.path.islink(path) else path


@contextlib.contextmanager
def atomic_path(path: str, suffix: str = "") -> Iterator[str]:
    """Yields a temporary path next to ``path``; renames it to ``path`` if the block succeeds
    (a symlink ``path``: next to and onto its target, :func:`write_through`).

    On an exception the temporary file is removed and ``path`` is left as it was. For a
    remote ``path`` the temporary file is not created in advance (the caller writes it with
    ``tf.io.gfile`` or a TensorFlow writer) and the rename is ``tf.io.gfile.rename(...,
    overwrite=True)``: on GCS a copy then delete, so the target appears whole, never partial.

    Raises:
      OutputPathError: see :func:`check_output_path`.
    """
    check_output_path(path)
    if is_remote(path):
        with _atomic_remote_path(path, suffix) as tmp:
            yield tmp
        return
    path = write_through(path)
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
    """A UTF-8 text file object for ``path``, written atomically (see :func:`atomic_path`);
    a ``tf.io.gfile.GFile`` for a remote path (it takes ``str`` and writes UTF-8)."""
    with atomic_path(path) as tmp:
        if is_remote(path):
            with _gfile().GFile(tmp, "w") as f:
                yield f
        else:
            try:
                with open(tmp, "w", encoding="utf-8") as f:
                    yield f
            except OSError as e:
                # a full disk fails the close too, while the block's own error unwinds: that
                # first error (e.g. write_error's one line) is the one to report
                if isinstance(e.__context__, Exception):
                    raise e.__context__ from None
                raise


def write_error(path: str, error: Exception) -> OutputPathError:
    """The one-line error of a write that failed (a full disk, a quota, an I/O error):
    ``<path>: cannot write it (No space left on device); nothing of it was kept``.

    ``error``: an OSError (its ``strerror``), a ``tf.errors.OpError`` (its message after the
    temporary file's name: "<tmp>; No space left on device") or another library's error."""
    reason = getattr(error, "strerror", None)
    if not reason:
        message = str(getattr(error, "message", None) or error)
        reason = (message.split("; ", 1)[-1].strip().splitlines() or [type(error).__name__])[0]
    return OutputPathError(f"{display_path(path)}: cannot write it ({reason}); nothing of it "
                           "was kept")


def atomic_write_text(path: str, text: str) -> None:
    """Writes ``text`` (UTF-8) to ``path`` atomically.

    Raises:
      OutputPathError: the folder cannot be written, or the write failed (a full disk:
        :func:`write_error`); ``path`` is left as it was.
    """
    try:
        with atomic_text_writer(path) as f:
            f.write(text)
    except OSError as e:
        raise write_error(path, e) from e


def atomic_write_texts(items: Sequence[Tuple[str, str]]) -> None:
    """Writes each ``(path, text)`` atomically, all together: every text is written to its
    temporary file first, then all are renamed, so a failed write (a full disk) leaves every
    ``path`` as it was (e.g. ``predictions.json`` never without ``nbest_predictions.json``).

    Raises:
      OutputPathError: as :func:`atomic_write_text`, naming the file that failed.
    """
    with contextlib.ExitStack() as stack:
        for path, text in items:
            # each file written and closed here (a full disk may fail only the close); the
            # renames come when the stack exits, once every file is whole
            tmp = stack.enter_context(atomic_path(path))
            try:
                with (_gfile().GFile(tmp, "w") if is_remote(path)
                      else open(tmp, "w", encoding="utf-8")) as f:
                    f.write(text)
            except OSError as e:
                raise write_error(path, e) from e


def move_folder(src: str, dst: str, last_file: str = "") -> None:
    """Moves the finished folder ``src`` to the new name ``dst`` (both in one file system).

    Local: one ``os.replace`` (atomic). Remote: every file is copied under ``dst`` and then
    ``src`` is removed, as ``gs://``'s own folder rename does object by object (``ram://``
    renames only the folder's entry and loses its files); ``last_file`` (a name relative to
    ``src``, e.g. ``saved_model.pb``) is copied last, so a reader that waits for it never
    sees a partial folder.

    Raises:
      OSError (local) or ``tf.errors.OpError`` (remote) from the file system.
    """
    if not is_remote(src):
        os.replace(src, dst)
        return
    gfile = _gfile()
    files = []
    for folder, _, names in gfile.walk(src):
        files.extend(posixpath.join(folder, name) for name in names)
    last = posixpath.join(src, last_file) if last_file else None
    files.sort(key=lambda f: f == last)
    for f in files:
        target = dst + f[len(src):]
        gfile.makedirs(posixpath.dirname(target))
        gfile.copy(f, target, overwrite=True)
    gfile.rmtree(src)


def file_in_the_way(path: str):
    """The first of a local ``path`` and its parents that exists but is not a folder, or None.

    ``os.makedirs`` on such a path fails with "File exists" or "Not a directory" and TensorFlow's
    ``makedirs`` with a FailedPreconditionError traceback; this names the file instead.
    """
    p = os.path.abspath(path)
    while True:
        if os.path.lexists(p):
            return None if os.path.isdir(p) else p
        parent = os.path.dirname(p)
        if parent == p:
            return None
        p = parent


def make_output_dir(output_dir: str, flag: str = "output_dir", files: Sequence[str] = (),
                    folders: Sequence[str] = ()) -> str:
    """Creates the folder ``--<flag>`` names and checks it is writable (bert_tf: fail before any
    work). Used for every family's output folder (``--output_dir``, ``--model_dir``,
    ``--save_dir``, ``--predict_dir``).

    A remote folder (``gs://``, ``ram://``) is made with ``tf.io.gfile.makedirs`` and probed
    by writing and removing a ``.tmp-`` file there (the original's ``tf.gfile.MakeDirs``;
    ``os.makedirs`` would make a local ``gs:`` folder in the working directory).

    ``files``: names the run will write in the folder; one that is a folder there is refused
    now (bert_tf: it failed after training, when the file was written). ``folders``: names of
    the folders it will write in it (e.g. the evaluation summaries' ``eval``); one that is a
    file there is refused now.

    Raises:
      FlagError: the flag is empty; a name of ``files`` is a folder there, or one of
        ``folders`` a file; the path holds ``[`` (TensorFlow's ``CheckpointReader``
        and ``RestoreV2`` glob the prefix, so nothing written there could be read back);
        the path or one of its parents is a file (names it); the folder cannot be created or
        written (names it).
    """
    if not output_dir:
        raise FlagError(f"--{flag} is required")
    if "[" in output_dir:
        raise FlagError(f"--{flag}={output_dir}: a path holding '[' cannot be read back "
                        "(TensorFlow's checkpoint readers take it as a glob pattern); choose a "
                        "name without '['")
    if is_remote(output_dir):
        import tensorflow as tf  # tf.io.gfile: remote paths
        probe = posixpath.join(output_dir, f".tmp-{os.getpid()}-probe-{uuid.uuid4().hex}")
        try:
            tf.io.gfile.makedirs(output_dir)
            with tf.io.gfile.GFile(probe, "w") as f:
                f.write("")
            tf.io.gfile.remove(probe)
        except Exception as e:  # tf.errors.OpError: permission denied, no such bucket, ...
            raise FlagError(f"--{flag}={output_dir} is not writable ({e})") from e
        check_output_names(output_dir, flag, files, folders)
        return output_dir
    blocker = file_in_the_way(output_dir)
    if blocker is not None:
        what = "it" if blocker == os.path.abspath(output_dir) else blocker
        kind = "a broken symlink" if not os.path.exists(blocker) else "a file, not a folder"
        raise FlagError(f"--{flag}={output_dir} is not writable: {what} is {kind}")
    try:
        os.makedirs(output_dir, exist_ok=True)
        with tempfile.TemporaryFile(dir=output_dir):
            pass
    except OSError as e:
        raise FlagError(f"--{flag}={output_dir} is not writable ({e.strerror or e})") from e
    check_output_names(output_dir, flag, files, folders)
    return output_dir


def check_output_names(output_dir: str, flag: str, files: Sequence[str] = (),
                       folders: Sequence[str] = ()) -> None:
    """Refuses a folder of ``--<flag>=<output_dir>`` that holds a folder named like one of the
    ``files`` the run writes there, or a file named like one of its ``folders`` (the check of
    :func:`make_output_dir`, which creates nothing; an absent folder passes).

    Raises:
      FlagError: naming the flag, the path in the way and what the run writes there.
    """
    remote = is_remote(output_dir)
    for name in list(files) + list(folders):
        path = posixpath.join(output_dir, name) if remote else os.path.join(output_dir, name)
        is_dir = _gfile().isdir(path) if remote else os.path.isdir(path)
        if name in files and is_dir:
            raise FlagError(f"--{flag}={output_dir}: {path} is a folder, but the run writes the "
                            f"file {name} there; remove or rename that folder")
        if name in folders and not is_dir and (_gfile().exists(path) if remote
                                               else os.path.lexists(path)):
            raise FlagError(f"--{flag}={output_dir}: {path} is a file, but the run writes the "
                            f"folder {name} there; remove or rename that file")
