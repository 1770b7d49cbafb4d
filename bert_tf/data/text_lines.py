"""Text lines -> examples for feature extraction (original `extract_features.py`, spec 10).

Each line is one example: stripped, and split at the LAST ``" ||| "`` into text_a and text_b
(the original's greedy regex ``^(.*) \\|\\|\\| (.*)$``). Empty lines still give an example
(``[CLS] [SEP]``). ``unique_id`` is the 0-based line number.

Non-UTF-8 bytes are dropped as the original's `convert_to_unicode` does, and a warning names
the file and line so nothing is lost silently.
"""

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
        raise InputDataError(f"{input_file}: input file not found")
    return input_file


def read_text_examples(input_file: str) -> Iterator[TextExample]:
    """Yields one :class:`TextExample` per line of ``input_file``, in order.

    Lines end at ``\\n`` only (as `GFile.readline`); a ``\\r`` is removed by the strip.

    Raises:
      InputDataError: the file is missing or unreadable (names it).
    """
    check_input_file(input_file)
    try:
        f = tf.io.gfile.GFile(input_file, "rb")
        f.size()
    except Exception as e:
        raise InputDataError(f"{input_file}: cannot read input file ({type(e).__name__}: {e})") from e
    with f:
        line_number = 0
        while True:
            raw = f.readline()
            if not raw:
                break
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                line = raw.decode("utf-8", errors="ignore")
                logging.warning("%s:%d: invalid UTF-8 byte(s) dropped (%s)", input_file,
                                line_number + 1, e.reason)
            yield parse_line(line_number, line)
            line_number += 1


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
