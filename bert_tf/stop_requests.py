"""Stop requests (SIGTERM, Ctrl-C) that reach work running inside one long TensorFlow call.

Python runs a signal handler in the main thread only, between bytecodes: a SIGTERM that
arrives while the training loop's ``tf.function`` runs a chunk of steps (up to
``iterations_per_loop``, 34 steps of MiniLM on MRPC: about 30 s on 2 CPU cores) is handled
when the call returns. :func:`watch` has the interpreter's C-level handler also write the
signal's number to a pipe (``signal.set_wakeup_fd``, done for every signal with a Python
handler); a daemon thread reads it and calls the callbacks registered with
:func:`while_watching` (the training loop's sets a variable its loop condition reads, so the
chunk ends after the step that is running). The Python handler still does the exit
(``run_main``'s SIGTERM exit 143, Ctrl-C's ``KeyboardInterrupt``) once the call has returned:
the temporary files are removed, and the training loop saves the step it stopped at, which a
rerun resumes from (:func:`bert_tf.training.loop.train`).

bert_tf, beyond the originals (an Estimator finished its ``iterations_per_loop`` first).
TensorFlow-free (the callbacks bring their own).
"""

import contextlib
import os
import re
import signal
import threading
from typing import Callable, FrozenSet, Iterator, List, Optional

_lock = threading.Lock()
_callbacks: List[Callable[[], None]] = []
_watched: Optional[FrozenSet[int]] = None


def watch(signals=(signal.SIGTERM, signal.SIGINT)) -> bool:
    """Starts passing ``signals`` (each must have a Python handler, e.g. ``run_main``'s) to the
    :func:`while_watching` callbacks as they arrive, even while the main thread is inside a
    long native call. Call from the main thread; once per process (later calls do nothing).

    Returns:
      whether the signals are watched: False off the main thread, or where another wake-up
      file descriptor is already set (an event loop's; it is left as it was).
    """
    global _watched
    if _watched is not None:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except (ValueError, OSError):
        previous = None
    if previous != -1:  # could not set it, or someone else's: theirs stays
        if previous is not None:
            signal.set_wakeup_fd(previous)
        os.close(read_fd)
        os.close(write_fd)
        return False
    _watched = frozenset(int(s) for s in signals)
    os.register_at_fork(after_in_child=_forget_in_child)
    threading.Thread(target=_pass_on, args=(read_fd,), name="bert_tf-stop-requests",
                     daemon=True).start()
    return True


def _forget_in_child() -> None:
    """In a forked child (a ``multiprocessing`` pool worker): no watching thread exists there
    and the pipe is the parent's, whose thread would take the child's signals (a pool's
    ``terminate`` sends its workers SIGTERM) for its own; the child writes no wake-up bytes."""
    global _watched
    _watched = None
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from a thread other than the main one: nothing was set here
        pass


def _pass_on(read_fd: int) -> None:
    """The watching thread: each watched signal number read calls the callbacks."""
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        if any(b in _watched for b in data):
            with _lock:
                callbacks = list(_callbacks)
            for callback in callbacks:
                try:
                    callback()
                except Exception:  # noqa: BLE001 - the Python handler still ends the run
                    pass


@contextlib.contextmanager
def while_watching(callback: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``callback()`` is called (from the watching thread, not the main
    one) when a watched signal arrives (:func:`watch`; without it, never)."""
    with _lock:
        _callbacks.append(callback)
    try:
        yield
    finally:
        with _lock:
            _callbacks.remove(callback)


# pybind11's text when a signal handler raised while TensorFlow's C++ turned an error into a
# Python exception (a SIGTERM during the first step's trace: "MISMATCH of original and
# normalized active exception types: ORIGINAL InvalidArgumentError REPLACED BY SystemExit: 143")
_REPLACED_BY = re.compile(r"REPLACED BY (?:SystemExit: (\d+)|KeyboardInterrupt)")


def signal_exit_of(error: BaseException) -> Optional[BaseException]:
    """The signal exit ``error`` stands for: Ctrl-C's ``KeyboardInterrupt`` and ``run_main``'s
    SIGTERM ``SystemExit(143)`` themselves, and the ``RuntimeError`` pybind11 raises when the
    signal's handler raised inside TensorFlow's C++ error conversion (found by a SIGTERM during
    the first training step's trace, about 1 in 17 tries): a new ``KeyboardInterrupt`` or
    ``SystemExit(code)``. None for any other error.
    """
    if isinstance(error, KeyboardInterrupt):
        return error
    if isinstance(error, SystemExit):
        return error if error.code == 128 + signal.SIGTERM else None
    if not isinstance(error, RuntimeError):
        return None
    m = _REPLACED_BY.search(str(error))
    if m is None:
        return None
    return SystemExit(int(m.group(1))) if m.group(1) else KeyboardInterrupt()


@contextlib.contextmanager
def signals_deferred(signals=(signal.SIGTERM, signal.SIGINT)) -> Iterator[List[int]]:
    """Within the block, ``signals`` are recorded (the yielded list) instead of handled: for
    work that a second Ctrl-C must not cut short (the checkpoint a stop writes). The handlers
    are restored after it. Off the main thread (where handlers cannot be set) nothing is
    deferred."""
    deferred: List[int] = []
    previous = {}
    try:
        for s in signals:
            previous[s] = signal.signal(s, lambda signum, frame: deferred.append(signum))
    except ValueError:  # not the main thread
        pass
    try:
        yield deferred
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
