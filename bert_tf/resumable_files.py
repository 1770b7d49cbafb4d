"""Outputs written in appended pieces that a rerun can continue after an interruption.

Beyond the originals (issue 15 item 5): a long ``extract_features`` run that is interrupted
(Ctrl-C, SIGTERM, ``kill -9``, a crash) keeps its complete lines, and a rerun with the same
flags and inputs continues after the last complete piece; the finished file is the same as an
uninterrupted run's.

Each output ``<path>`` is written (appended) as ``<path>.partial``; after each complete piece
(a chunk of lines) the caller calls :meth:`ResumableOutputs.checkpoint`, which flushes and
``fsync``\\ s the files and atomically rewrites ``<first path>.partial.state.json``: the run's
key (its flags and input fingerprints, a JSON object), the units done and each partial file's
size. Bytes after the recorded size (a piece cut by a kill) are cut off when resuming. At the
end each ``.partial`` is renamed to its final name and the state file removed.

Local paths only: an appended file cannot be continued on ``gs://`` (the callers keep the
all-or-nothing temporary file there, :mod:`bert_tf.atomic_files`).
"""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, TextIO

from absl import logging

from bert_tf.atomic_files import atomic_write_text, write_through

PARTIAL_SUFFIX = ".partial"
STATE_SUFFIX = ".partial.state.json"


class ResumableOutputs:
    """The ``.partial`` files of one resumable run (see the module docstring).

    Args:
      paths: the final output files (local paths; the first names the state file).
      key: what must be equal for a rerun to continue (JSON-serializable; e.g. the flags and
        the inputs' sizes and modification times).
      unit: what ``done`` counts, for messages (``"lines"``).

    After :meth:`open`: ``files`` (text files in append mode, one per path), ``done`` (units
    already written by an earlier run, 0 for a fresh start), ``extra`` (the mapping the
    earlier run passed to its last :meth:`checkpoint`, else ``{}``) and ``recorded`` (the
    units of the last :meth:`checkpoint`).
    """

    def __init__(self, paths: Sequence[str], key: Mapping[str, Any], unit: str = "lines"):
        self.paths = [write_through(p) for p in paths]  # a symlink: its target
        self.partials = [p + PARTIAL_SUFFIX for p in self.paths]
        self.state_file = self.paths[0] + STATE_SUFFIX
        self.key = json.loads(json.dumps(key))  # as it reads back from the state file
        self.unit = unit
        self.files: List[TextIO] = []
        self.done = self.recorded = 0
        self.extra: Dict[str, Any] = {}

    def _read_state(self) -> Optional[Dict[str, Any]]:
        try:
            with open(self.state_file, encoding="utf-8") as f:
                state = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _resume_point(self) -> int:
        """Units to skip (0: start over), cutting the partial files to the recorded sizes;
        says in one line why an earlier run's files are not continued."""
        state = self._read_state()
        leftovers = [p for p in self.partials if os.path.exists(p)]
        if state is None:
            if leftovers:
                logging.warning("%s: no state file beside it (interrupted before its first "
                                "complete piece); starting over", leftovers[0])
            return 0
        sizes = state.get("sizes")
        if state.get("key") != self.key:
            old = state.get("key") if isinstance(state.get("key"), dict) else {}
            changed = sorted(k for k in set(old) | set(self.key) if old.get(k) != self.key.get(k))
            logging.warning("%s: an interrupted run with other flags or inputs (%s differ); "
                            "starting over", self.partials[0], ", ".join(changed) or "state")
            return 0
        if (not isinstance(sizes, list) or len(sizes) != len(self.partials)
                or not isinstance(state.get("done"), int)):
            logging.warning("%s: unreadable state file; starting over", self.state_file)
            return 0
        for partial, size in zip(self.partials, sizes):
            actual = os.path.getsize(partial) if os.path.exists(partial) else -1
            if actual < size:
                logging.warning("%s: shorter than its state file says (%d < %d bytes); "
                                "starting over", partial, max(actual, 0), size)
                return 0
        for partial, size in zip(self.partials, sizes):
            if os.path.getsize(partial) > size:  # a piece cut by the interruption
                with open(partial, "r+b") as f:
                    f.truncate(size)
        self.extra = dict(state.get("extra") or {})
        return state["done"]

    def open(self) -> List[TextIO]:
        """Opens the ``.partial`` files (continued or new) and returns them; sets ``done``.

        Logs one line when continuing (``resuming <path> after N lines``) or when the files of
        an earlier run are not continued and why (other flags or inputs, no state file, files
        shorter than recorded)."""
        self.done = self.recorded = self._resume_point()
        if self.done:
            logging.warning("resuming %s after %d %s written by an interrupted run with the "
                            "same flags and inputs", self.paths[0], self.done, self.unit)
        else:
            self.extra = {}
        mode = "a" if self.done else "w"
        self.files = [open(p, mode, encoding="utf-8") for p in self.partials]
        if not self.done:
            self.checkpoint(0)
        return self.files

    def checkpoint(self, done: int, extra: Optional[Mapping[str, Any]] = None) -> None:
        """Records that ``done`` units (in all, this run's and earlier ones') are complete in
        the files: flush, ``fsync``, then the state file (written atomically)."""
        sizes = []
        for f in self.files:
            f.flush()
            os.fsync(f.fileno())
            sizes.append(f.tell())
        if extra is not None:
            self.extra = dict(extra)
        atomic_write_text(self.state_file, json.dumps(
            {"key": self.key, "done": int(done), "sizes": sizes, "extra": self.extra}) + "\n")
        self.recorded = int(done)

    def close(self) -> None:
        """Closes the files (kept: a rerun continues them)."""
        for f in self.files:
            f.close()

    def finish(self) -> None:
        """Closes the files and renames each ``.partial`` to its final name, then removes the
        state file."""
        self.close()
        for partial, path in zip(self.partials, self.paths):
            os.replace(partial, path)
        os.remove(self.state_file)

    def discard(self) -> None:
        """Closes and removes the ``.partial`` files and the state file (a run that failed on
        bad input or a full disk leaves nothing)."""
        for f in self.files:
            try:
                f.close()
            except OSError:  # buffered bytes that no longer fit: the file goes anyway
                pass
        for p in self.partials + [self.state_file]:
            try:
                os.remove(p)
            except FileNotFoundError:
                pass
