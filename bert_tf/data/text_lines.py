"""Text lines -> examples for feature extraction (original `extract_features.py`, spec 10).

Each line is one example: stripped, and split at the LAST ``" ||| "`` into text_a and text_b
(the original's greedy regex ``^(.*) \\|\\|\\| (.*)$``). Empty lines still give an example
(``[CLS] [SEP]``). ``unique_id`` is the 0-based line number.

Non-UTF-8 bytes are dropped as the original's `convert_to_unicode` does, and a warning names
the file and line so nothing is lost silently.
"""

import errno
import os
import re
from typing import Iterable, Iterator, List, NamedTuple, Optional

import tensorflow as tf
from absl import logging

from bert_tf.errors import InputDataError

_PAIR_RE = re.compile(r"^(.*) \|\|\| (.*)$")


class TextExample(NamedTuple):
    """One input line: ``unique_id`` (line number), ``text_a``, ``text_b`` (None if single)."""

    unique_id: int
    text_a: str
    text_b: Optional[str]


def parse_line(unique_id: int, line: str) -> TextExample:
    """Strips ``line`` and splits it at the last ``" ||| "``."""
    line = line.strip()
    m = _PAIR_RE.match(line)
    if m is None:
        return TextExample(unique_id, line, None)
    return TextExample(unique_id, m.group(1), m.group(2))


def check_input_file(input_file: str) -> str:
    """Raises InputDataError unless ``input_file`` is a readable file (not a folder)."""
    if not input_file:
        raise InputDataError("no --input_file given")
    if tf.io.gfile.isdir(input_file):
        raise InputDataError(f"{input_file}: is a folder, expected a text file with one example per line")
    if not tf.io.gfile.exists(input_file):
        raise InputDataError(missing_input_message(input_file))
    try:  # a file without read permission: one line now, not a TensorFlow trace later
        with tf.io.gfile.GFile(input_file, "rb") as f:
            f.read(1)
    except (tf.errors.OpError, OSError) as e:
        raise unreadable_input(input_file, e) from e
    return input_file


def missing_input_message(path: str) -> str:
    """Why the input ``path`` that does not exist cannot be read: ``<path>: input file not
    found``, or, for a local symlink, its loop or its missing target (bert_tf: a symlink
    loop was said to be missing)."""
    if "://" not in path and os.path.islink(path):
        try:
            os.stat(path)
        except OSError as e:
            if e.errno == errno.ELOOP:
                return (f"{path}: cannot open it: too many levels of symbolic links (a symlink "
                        "loop)")
        return f"{path}: a symlink to {os.readlink(path)}, which does not exist"
    return f"{path}: input file not found"


def unreadable_input(path: str, error: Exception) -> InputDataError:
    """``<path>: cannot read it (permission denied)``, from a ``tf.io.gfile`` or OS error."""
    if isinstance(error, (tf.errors.PermissionDeniedError, PermissionError)):
        reason = "permission denied"
    else:
        message = getattr(error, "message", None) or str(error)
        reason = (message.strip().splitlines() or [type(error).__name__])[0]
    return InputDataError(f"{path}: cannot read it ({reason})")


def read_utf8_lines(path: str) -> Iterator[str]:
    """The lines of ``path`` (any ``tf.io.gfile`` path), ending at ``\\n`` only (as
    `GFile.readline`), decoded as UTF-8 with invalid bytes dropped and a warning naming the
    file and line, as the originals' `convert_to_unicode(..., "ignore")`.

    Raises:
      InputDataError: the file cannot be read (:func:`unreadable_input`).
    """
    try:
        f = tf.io.gfile.GFile(path, "rb")
        f.size()
    except (tf.errors.OpError, OSError) as e:
        raise unreadable_input(path, e) from e
    with f:
        line_number = 0
        while True:
            try:
                raw = f.readline()
            except (tf.errors.OpError, OSError) as e:
                raise unreadable_input(path, e) from e
            if not raw:
                break
            line_number += 1
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                logging.warning("%s:%d: invalid UTF-8 byte(s) dropped (%s)", path, line_number,
                                e.reason)
                yield raw.decode("utf-8", errors="ignore")


def read_text_examples(input_file: str) -> Iterator[TextExample]:
    """Yields one :class:`TextExample` per line of ``input_file``, in order.

    Lines end at ``\\n`` only (as `GFile.readline`); a ``\\r`` is removed by the strip. The
    first blank line is named in one warning (it still gives its example, as the original).

    Raises:
      InputDataError: the file is missing or unreadable (names it).
    """
    check_input_file(input_file)
    blank_seen = False
    for line_number, line in enumerate(read_utf8_lines(input_file)):
        if not blank_seen and not line.strip():
            blank_seen = True  # bert_tf, beyond the original: named once, not silent
            logging.warning("%s:%d: blank line; it gives a [CLS] [SEP] row, as the original "
                            "(one output row per input line; later blank lines are not named)",
                            input_file, line_number + 1)
        yield parse_line(line_number, line)


def chunks(items: Iterable, size: int) -> Iterator[List]:
    """Consecutive lists of ``size`` items (the last one shorter), in order."""
    chunk = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
