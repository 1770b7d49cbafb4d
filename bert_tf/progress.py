"""Progress lines (done/total, rate, ETA) for training, evaluation and prediction.

Beyond the original: its Estimator logged ``global_step/sec`` every 100 steps and nothing
during ``evaluate``/``predict``, so long runs looked hung (issue 15 item 7). A
:class:`ProgressReporter` logs one absl INFO line (:func:`format_progress`) each time another
tenth of the work is done or ``every_s`` seconds have passed since the last line, and once at
the end. On a terminal (stderr is a tty) it draws one bar line instead, redrawn in place
(``\r``) at each hundredth of the work or every second (:func:`format_bar`), and ends it with
a newline at the end; a log file gets the lines.
"""

import math
import sys
import time
from typing import Optional, TextIO

from absl import logging

__all__ = ["ProgressReporter", "format_bar", "format_duration", "format_progress"]

BAR_WIDTH = 24


_DAY = 86400
_YEAR = 365.25 * _DAY


def format_duration(seconds: float) -> str:
    """``H:MM:SS`` of a non-negative number of seconds (rounded to the nearest second;
    hours may exceed 24: ``90061`` -> ``25:01:01``) below 1000 hours; then whole days
    (``"41 days"``) below 1000 days, then years (``"78,767,123 years"``: an absurd
    ``--num_train_epochs`` gave "ETA 690000000000:..." hours); ``?`` for NaN/inf."""
    if not math.isfinite(seconds):
        return "?"
    total = int(round(max(0.0, seconds)))
    if total >= 1000 * _DAY:
        return f"{total / _YEAR:,.0f} years"
    if total >= 1000 * 3600:
        return f"{total / _DAY:,.0f} days"
    return f"{total // 3600}:{total % 3600 // 60:02d}:{total % 60:02d}"


def format_progress(label: str, done: int, total: Optional[int], seconds: float,
                    unit: str = "examples", examples: Optional[int] = None,
                    start: int = 0) -> str:
    """One progress line.

    ``<label>: <done>/<total> <unit> (<pct>%), <rate> <unit>/s[, <ex> examples/s],
    elapsed H:MM:SS, ETA H:MM:SS``; without a ``total`` (unknown length):
    ``<label>: <done> <unit>, <rate> <unit>/s[, ...], elapsed H:MM:SS``.

    Args:
      label: what runs (``train``, ``eval``, ``predict``).
      done: units done since the start of the timing (int >= 0).
      total: units in all, or None when unknown.
      seconds: time since the start (float; clamped to >= 1e-9).
      unit: ``examples`` or ``steps``.
      examples: (``unit="steps"``) examples done since the start, for an ``examples/s``
        rate.
      start: the count the timing started at (a resumed training's step): the rate is
        ``(done - start) / seconds``.

    Returns:
      the line (str). ETA = remaining units / rate; ``?`` before the first unit.
    """
    seconds = max(float(seconds), 1e-9)
    rate = (done - start) / seconds
    head = f"{label}: {done}/{total} {unit} ({100.0 * done / max(total, 1):.0f}%)" \
        if total is not None else f"{label}: {done} {unit}"
    parts = [head, f"{rate:.1f} {unit}/s"]
    if examples is not None:
        parts.append(f"{examples / seconds:.1f} examples/s")
    parts.append(f"elapsed {format_duration(seconds)}")
    if total is not None:
        eta = (total - done) / rate if rate > 0 else math.inf
        parts.append(f"ETA {format_duration(eta)}")
    return ", ".join(parts)


def format_bar(label: str, done: int, total: Optional[int], seconds: float,
               unit: str = "examples", examples: Optional[int] = None, start: int = 0,
               width: int = BAR_WIDTH) -> str:
    """The terminal bar: ``<label> [####......] `` then :func:`format_progress`'s numbers
    (the line without its ``<label>: ``); ``#`` fills ``round(width * done / total)`` of the
    ``width`` cells. Without a ``total``: :func:`format_progress`'s line unchanged."""
    line = format_progress(label, done, total, seconds, unit, examples, start)
    if total is None:
        return line
    filled = min(width, max(0, int(round(width * done / max(total, 1)))))
    return f"{label} [{'#' * filled}{'.' * (width - filled)}] {line[len(label) + 2:]}"


class ProgressReporter:
    """Logs :func:`format_progress` lines for one loop, at a sensible interval.

    Args:
      label, unit: as :func:`format_progress`.
      total: units in all (None: unknown; then only the time interval applies).
      start: the count at which this run starts (a resumed training's global step); rates
        and the ETA count from it.
      every_fraction: log when another this fraction of ``total`` is done (0.1: 10%).
      every_s: log when this many seconds passed since the last line.
      stream: where a terminal bar goes (None: ``sys.stderr``, where absl logs).
      tty: draw the bar (None: when ``stream.isatty()``); then ``every_fraction`` is 0.01 and
        ``every_s`` 1 s, and no absl lines are logged.
    """

    def __init__(self, label: str, total: Optional[int], unit: str = "examples",
                 start: int = 0, every_fraction: float = 0.1, every_s: float = 30.0,
                 stream: Optional[TextIO] = None, tty: Optional[bool] = None):
        self.label, self.total, self.unit, self.start = label, total, unit, int(start)
        self.stream = stream if stream is not None else sys.stderr
        if tty is None:
            try:
                tty = bool(self.stream.isatty())
            except (AttributeError, ValueError):  # no isatty, or a closed stream
                tty = False
        self.tty = tty
        if tty:
            every_fraction, every_s = min(every_fraction, 0.01), min(every_s, 1.0)
        self.every_s = float(every_s)
        self.stride = (max(1, int(math.ceil((total - start) * every_fraction)))
                       if total is not None and total > start else None)
        self.begin = self.last = time.time()
        self.done = self.examples = 0
        self.logged_at = int(start)

    @property
    def next_count(self) -> Optional[int]:
        """The count at which the next fractional line is due (None: no total)."""
        if self.stride is None:
            return None
        return min(self.total, self.start + (
            (self.logged_at - self.start) // self.stride + 1) * self.stride)

    def update(self, count: int, examples: Optional[int] = None) -> bool:
        """Records that ``count`` units are done in all (and ``examples`` more examples, for
        steps); logs when due. Returns whether a line was logged."""
        self.done = int(count)
        if examples is not None:
            self.examples += int(examples)
        now = time.time()
        due = now - self.last >= self.every_s
        if self.stride is not None and self.done >= self.next_count:
            due = True
        if due and self.done != self.logged_at:
            self._log(now)
            return True
        return False

    def finish(self) -> None:
        """Logs the final line unless the last line already showed the final count; ends a
        terminal bar with a newline."""
        if self.done != self.logged_at or self.done == self.start:
            self._log(time.time())
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

    def _log(self, now: float) -> None:
        self.last, self.logged_at = now, self.done
        args = (self.label, self.done, self.total, now - self.begin, self.unit,
                self.examples if self.unit == "steps" else None, self.start)
        if self.tty:  # redrawn in place; "\x1b[K" clears what a longer bar left
            self.stream.write(f"\r{format_bar(*args)}\x1b[K")
            self.stream.flush()
        else:
            logging.info("%s", format_progress(*args))
