"""GLUE/XNLI TSV -> examples: the processors of the original `run_classifier.py` (spec ``bert.md``
8.2, 8.3).

``DataProcessor`` and its ``_read_tsv`` (tab separated, NO quoting), the processors ``cola``,
``mnli``, ``mrpc``, ``xnli`` with the original columns; beyond the original, processors for
``sst-2``, ``qnli``, ``qqp``, ``rte``, ``wnli`` and ``sts-b`` (GLUE layouts), and errors that name
the file and line for bad rows. :func:`get_processor` maps ``--task_name`` to its processor.

Regression (``sts-b``): the processor has ``is_regression = True`` and ``get_labels()`` returns
None; ``num_labels`` is 1.

The examples become features and TFRecords in :mod:`bert_tf.data.classifier`. TensorFlow is
used only for `tf.io.gfile`.
"""

import csv
import math
import os
from typing import Dict, List, Optional, Sequence, Tuple, Type

import tensorflow as tf
from absl import logging

from bert_tf.data.classifier import InputExample
from bert_tf.errors import FlagError, InputDataError

def _check_columns(row: Sequence[str], needed: int, path: str, line: int) -> None:
    if len(row) < needed:
        raise InputDataError(f"{path} line {line}: {len(row)} tab-separated column(s), expected "
                             f"at least {needed}")


def _check_label(label: str, labels: Sequence[str], path: str, line: int) -> None:
    if label not in labels:
        raise InputDataError(f"{path} line {line}: unknown label {label!r}; valid labels: "
                             f"{', '.join(repr(x) for x in labels)}")


def warn_empty_sentences(examples: Sequence[InputExample], path: str) -> int:
    """One warning line for the examples of ``path`` whose sentence (``text_a``, or a
    ``text_b`` the task reads) is empty or blank; returns how many (bert_tf, beyond the
    original, which trains on such a row without a word: ``[CLS] [SEP]`` for an empty A).
    They are kept, as the original keeps them."""
    empty = [e for e in examples
             if not (e.text_a or "").strip() or (e.text_b is not None and not e.text_b.strip())]
    if empty:
        logging.warning("%s: %d example(s) with an empty sentence (first: %s); kept, as the "
                        "original (an empty sentence gives no tokens)", path,
                        len(empty), empty[0].guid)
    return len(empty)


class DataProcessor:
    """Base class of the data converters of sequence classification data sets.

    Subclasses read ``<data_dir>/<file>.tsv`` into :class:`InputExample` s. ``is_regression``
    (bert_tf) is True for a real-valued label (then ``get_labels()`` returns None).
    """

    is_regression = False
    # (file name, set type) of each split; a subclass with the GLUE layout only sets these
    # and implements ``_create_examples(path, rows, set_type)``.
    train_file = ("train.tsv", "train")
    dev_file = ("dev.tsv", "dev")
    test_file = ("test.tsv", "test")

    def get_train_examples(self, data_dir: str) -> List[InputExample]:
        """Examples of the train set."""
        return self._examples_of(data_dir, *self.train_file)

    def get_dev_examples(self, data_dir: str) -> List[InputExample]:
        """Examples of the dev set."""
        return self._examples_of(data_dir, *self.dev_file)

    def get_test_examples(self, data_dir: str) -> List[InputExample]:
        """Examples of the test set (for prediction; labels are placeholders)."""
        return self._examples_of(data_dir, *self.test_file)

    def get_test_ids(self, data_dir: str) -> List[str]:
        """(bert_tf) Column 0 of each data row of the test file, in example order: the index a
        GLUE submission uses (the original ALBERT's guid of a test example).

        Raises:
          InputDataError: the file is missing, unreadable or has no data row.
        """
        return self.get_ids(data_dir, self.test_file[0])

    def get_ids(self, data_dir: str, filename: str) -> List[str]:
        """(bert_tf) Column 0 of each data row of ``<data_dir>/<filename>``, in example order
        (the original ALBERT's guids; :meth:`get_test_ids` for the test file).

        Raises:
          InputDataError: the file is missing, unreadable or has no data row.
        """
        path, rows = self._read_rows(data_dir, filename)
        return [row[0] if row else "" for _, _, row in self._data_rows(rows, path)]

    def _examples_of(self, data_dir: str, filename: str, set_type: str) -> List[InputExample]:
        path, rows = self._read_rows(data_dir, filename)
        examples = self._create_examples(path, rows, set_type)
        warn_empty_sentences(examples, path)
        return examples

    def _create_examples(self, path: str, rows: List[List[str]], set_type: str) -> List[InputExample]:
        raise NotImplementedError()

    def get_labels(self) -> Optional[List[str]]:
        """The label list (its index order gives the label ids); None for regression."""
        raise NotImplementedError()

    @property
    def num_labels(self) -> int:
        """(bert_tf) Width of the classifier output: the number of labels, 1 for regression."""
        return 1 if self.is_regression else len(self.get_labels())

    @classmethod
    def _read_tsv(cls, input_file: str, quotechar=None) -> List[List[str]]:
        """Reads a tab-separated file into rows (lists of str), one row per line.

        As the original (``csv.reader(delimiter="\\t", quotechar=None)`` on ``tf.gfile`` lines):
        lines end at ``\\n``; quote characters are literal (no quoting); a UTF-8 BOM is kept (it
        ends up in the header's first field). Row ``i`` (0-based) is line ``i + 1`` of the file.

        Raises:
          InputDataError: the file is missing or empty, a line is not valid UTF-8, or a line
            holds a stray carriage return (names the file and line).
        """
        try:
            with tf.io.gfile.GFile(input_file, "rb") as f:
                data = f.read()
        except tf.errors.OpError as e:
            # TF's message is "<path>; <reason>": name the file once
            reason = e.message.split("; ", 1)[1] if e.message.startswith(f"{input_file}; ") \
                else e.message
            raise InputDataError(f"cannot read data file {input_file} ({reason})") from e
        raw_lines = data.split(b"\n")
        if raw_lines and not raw_lines[-1]:
            raw_lines.pop()  # the piece after the final "\n" is end of file
        if not raw_lines:
            raise InputDataError(f"data file {input_file} is empty")
        lines = []
        for number, raw in enumerate(raw_lines, 1):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError as e:
                raise InputDataError(
                    f"{input_file} line {number}: not valid UTF-8 (byte {e.start} of the line: "
                    f"{e.reason})") from None
        kwargs = dict(delimiter="\t", quoting=csv.QUOTE_NONE)
        if quotechar is not None:
            kwargs = dict(delimiter="\t", quotechar=quotechar)
        reader = csv.reader(iter(lines), **kwargs)
        rows = []
        try:
            for row in reader:
                rows.append(row)
        except csv.Error as e:
            raise InputDataError(f"{input_file} line {reader.line_num}: {e}") from None
        return rows

    def _read_rows(self, data_dir: str, filename: str) -> Tuple[str, List[List[str]]]:
        path = os.path.join(data_dir, filename)
        return path, self._read_tsv(path)

    @staticmethod
    def _data_rows(rows, path: str, skip_header: bool = True):
        """Yields ``(i, line_number, row)`` for the data rows; errors if there are none."""
        start = 1 if skip_header else 0
        if len(rows) <= start:
            raise InputDataError(f"data file {path} has no data rows (only a header)")
        for i in range(start, len(rows)):
            yield i, i + 1, rows[i]


class XnliProcessor(DataProcessor):
    """XNLI (original ``XnliProcessor``): language hard-coded to ``zh``; no test set.

    train: ``multinli/multinli.train.zh.tsv`` cols 0/1/2 (``contradictory`` -> ``contradiction``),
    guid ``train-<i>``; dev: ``xnli.dev.tsv`` rows whose col 0 is ``zh``, cols 6/7, label col 1,
    guid ``dev-<i>``.
    """

    language = "zh"

    def get_train_examples(self, data_dir):
        path, rows = self._read_rows(data_dir, os.path.join(
            "multinli", "multinli.train.%s.tsv" % self.language))
        examples = []
        for i, line, row in self._data_rows(rows, path):
            _check_columns(row, 3, path, line)
            label = row[2]
            if label == "contradictory":
                label = "contradiction"
            _check_label(label, self.get_labels(), path, line)
            examples.append(InputExample("train-%d" % i, row[0], row[1], label))
        return examples

    def get_dev_examples(self, data_dir):
        path, rows = self._read_rows(data_dir, "xnli.dev.tsv")
        examples = []
        for i, line, row in self._data_rows(rows, path):
            _check_columns(row, 1, path, line)
            if row[0] != self.language:
                continue
            _check_columns(row, 8, path, line)
            _check_label(row[1], self.get_labels(), path, line)
            examples.append(InputExample("dev-%d" % i, row[6], row[7], row[1]))
        return examples

    def get_test_examples(self, data_dir):
        raise NotImplementedError("XNLI has no test set in the original run_classifier.py")

    def get_labels(self):
        return ["contradiction", "entailment", "neutral"]


class MnliProcessor(DataProcessor):
    """MultiNLI matched (original ``MnliProcessor``): cols 8/9, label = last col (test:
    ``contradiction``), guid ``<set>-<col 0>``."""

    dev_file = ("dev_matched.tsv", "dev_matched")
    test_file = ("test_matched.tsv", "test")

    def get_labels(self):
        return ["contradiction", "entailment", "neutral"]

    def _create_examples(self, path, rows, set_type):
        examples = []
        for _, line, row in self._data_rows(rows, path):
            _check_columns(row, 10, path, line)
            if set_type == "test":
                label = "contradiction"
            else:
                label = row[-1]
                _check_label(label, self.get_labels(), path, line)
            examples.append(InputExample("%s-%s" % (set_type, row[0]), row[8], row[9], label))
        return examples


class MrpcProcessor(DataProcessor):
    """MRPC (original ``MrpcProcessor``): cols 3/4, label col 0 (test: ``"0"``), guid
    ``<set>-<i>``."""

    def get_labels(self):
        return ["0", "1"]

    def _create_examples(self, path, rows, set_type):
        examples = []
        for i, line, row in self._data_rows(rows, path):
            _check_columns(row, 5, path, line)
            if set_type == "test":
                label = "0"
            else:
                label = row[0]
                _check_label(label, self.get_labels(), path, line)
            examples.append(InputExample("%s-%s" % (set_type, i), row[3], row[4], label))
        return examples


class ColaProcessor(DataProcessor):
    """CoLA (original ``ColaProcessor``): train/dev have NO header (col 3, label col 1); test has
    one (col 1, label ``"0"``). guid ``<set>-<i>``."""

    def get_labels(self):
        return ["0", "1"]

    def _create_examples(self, path, rows, set_type):
        examples = []
        for i, line, row in self._data_rows(rows, path, skip_header=(set_type == "test")):
            guid = "%s-%s" % (set_type, i)
            if set_type == "test":
                _check_columns(row, 2, path, line)
                examples.append(InputExample(guid, row[1], None, "0"))
            else:
                _check_columns(row, 4, path, line)
                _check_label(row[1], self.get_labels(), path, line)
                examples.append(InputExample(guid, row[3], None, row[1]))
        return examples


class Sst2Processor(DataProcessor):
    """(bert_tf) SST-2, GLUE layout: train/dev ``sentence<TAB>label``; test ``index<TAB>sentence``
    (label ``"0"``). guid ``<set>-<i>``."""

    def get_labels(self):
        return ["0", "1"]

    def _create_examples(self, path, rows, set_type):
        examples = []
        for i, line, row in self._data_rows(rows, path):
            _check_columns(row, 2, path, line)
            guid = "%s-%s" % (set_type, i)
            if set_type == "test":
                examples.append(InputExample(guid, row[1], None, "0"))
            else:
                _check_label(row[1], self.get_labels(), path, line)
                examples.append(InputExample(guid, row[0], None, row[1]))
        return examples


class _IndexedPairProcessor(DataProcessor):
    """GLUE layout ``index, text_a, text_b[, label]`` (QNLI, RTE, WNLI): cols 1/2, label = last
    col (test: the first label), guid ``<set>-<col 0>``."""

    labels: List[str] = []

    def get_labels(self):
        return list(self.labels)

    def _create_examples(self, path, rows, set_type):
        examples = []
        for _, line, row in self._data_rows(rows, path):
            if set_type == "test":
                _check_columns(row, 3, path, line)
                label = self.labels[0]
            else:
                _check_columns(row, 4, path, line)
                label = row[-1]
                _check_label(label, self.labels, path, line)
            examples.append(InputExample("%s-%s" % (set_type, row[0]), row[1], row[2], label))
        return examples


class QnliProcessor(_IndexedPairProcessor):
    """(bert_tf) QNLI (GLUE): question/sentence, labels entailment / not_entailment."""

    labels = ["entailment", "not_entailment"]


class RteProcessor(_IndexedPairProcessor):
    """(bert_tf) RTE (GLUE): sentence1/sentence2, labels entailment / not_entailment."""

    labels = ["entailment", "not_entailment"]


class WnliProcessor(_IndexedPairProcessor):
    """(bert_tf) WNLI (GLUE): sentence1/sentence2, labels "0" / "1"."""

    labels = ["0", "1"]


class QqpProcessor(DataProcessor):
    """(bert_tf) QQP (GLUE): train/dev ``id qid1 qid2 question1 question2 is_duplicate`` (cols
    3/4/5); test ``id question1 question2`` (cols 1/2, label ``"0"``). guid ``<set>-<col 0>``."""

    def get_labels(self):
        return ["0", "1"]

    def _create_examples(self, path, rows, set_type):
        examples = []
        for _, line, row in self._data_rows(rows, path):
            guid = "%s-%s" % (set_type, row[0])
            if set_type == "test":
                _check_columns(row, 3, path, line)
                examples.append(InputExample(guid, row[1], row[2], "0"))
            else:
                _check_columns(row, 6, path, line)
                _check_label(row[5], self.get_labels(), path, line)
                examples.append(InputExample(guid, row[3], row[4], row[5]))
        return examples


STSB_SCORE_RANGE = (0.0, 5.0)


def check_stsb_score(score: float, path: str, line: int) -> None:
    """Refuses a NaN or infinite STS-B score (bert_tf, beyond the original, which trained NaN
    weights on it); one warning line for a score outside 0..5 (GLUE's range): that score is
    kept as it is (the originals train on it), but it is most likely a wrong column or a typo.

    Raises:
      InputDataError: ``<path> line <line>: score nan is not a finite number``.
    """
    if not math.isfinite(score):
        raise InputDataError(f"{path} line {line}: score {score} is not a finite number "
                             "(STS-B labels are floats)")
    low, high = STSB_SCORE_RANGE
    if not low <= score <= high:
        logging.warning("%s line %d: STS-B score %s is outside %g-%g (kept as it is; another "
                        "column or a typo?)", path, line, score, low, high)


class StsbProcessor(DataProcessor):
    """(bert_tf) STS-B (GLUE), a REGRESSION task: sentence1/sentence2 = cols 7/8, label = the
    last col (``score``, 0..5) as a float; test (9 cols) gets 0.0. guid ``<set>-<col 0>``.

    ``get_labels()`` is None and ``num_labels`` is 1; see the module docstring.
    """

    is_regression = True

    def get_labels(self):
        return None

    def _create_examples(self, path, rows, set_type):
        examples = []
        for _, line, row in self._data_rows(rows, path):
            if set_type == "test":
                _check_columns(row, 9, path, line)
                label = 0.0
            else:
                _check_columns(row, 10, path, line)
                try:
                    label = float(row[-1])
                except ValueError:
                    raise InputDataError(f"{path} line {line}: label {row[-1]!r} is not a number "
                                         "(STS-B scores are floats)") from None
                check_stsb_score(label, path, line)
            examples.append(InputExample("%s-%s" % (set_type, row[0]), row[7], row[8], label))
        return examples


# Task name (lower case) -> processor class. The first four are the original's.
PROCESSORS: Dict[str, Type[DataProcessor]] = {
    "cola": ColaProcessor,
    "mnli": MnliProcessor,
    "mrpc": MrpcProcessor,
    "xnli": XnliProcessor,
    "sst-2": Sst2Processor,
    "qnli": QnliProcessor,
    "qqp": QqpProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "sts-b": StsbProcessor,
}


def get_processor(task_name: str) -> DataProcessor:
    """The processor of ``task_name`` (case-insensitive, as ``--task_name``).

    Raises:
      FlagError: unknown task (lists the valid names).
    """
    name = (task_name or "").lower()
    if name not in PROCESSORS:
        raise FlagError(f"Task not found: {task_name!r} (--task_name); valid tasks: "
                        f"{', '.join(PROCESSORS)}")
    return PROCESSORS[name]()
