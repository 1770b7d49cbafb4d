"""Sentence (pair) classification data: GLUE/XNLI TSV -> examples -> features -> TFRecords.

The original `run_classifier.py` data half (spec ``bert.md`` 8.2-8.5, 8.7): ``InputExample``,
``PaddingInputExample``, ``InputFeatures``, ``DataProcessor`` and its ``_read_tsv`` (tab
separated, NO quoting), the processors ``cola``, ``mnli``, ``mrpc``, ``xnli`` with the original
columns, ``convert_single_example``, ``_truncate_seq_pair`` and
``file_based_convert_examples_to_features``. Beyond the original: processors for ``sst-2``,
``qnli``, ``qqp``, ``rte``, ``wnli`` and ``sts-b`` (GLUE layouts), and errors that name the file
and line for bad rows.

Regression (``sts-b``): the processor has ``is_regression = True`` and ``get_labels()`` returns
None; ``num_labels`` is 1. Pass ``label_list=None`` to the conversion functions: the label is
then ``float(example.label)`` and the TFRecord feature ``label_ids`` is a FLOAT list of one value
(every classification feature file has it as an int64 list, as the original).

Pure Python; TensorFlow is used only for `tf.io.gfile` and `tf.train.Example`.
"""

import collections
import csv
import os
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Type

import tensorflow as tf
from absl import logging

from bert_tf.data import tfrecord
from bert_tf.data.sequence_pairs import TruncationCount, build_bert_inputs, truncate_seq_pair
from bert_tf.data.windows import split_into_windows
from bert_tf.errors import FlagError, InputDataError

# Examples logged in full by convert_single_example (original: ex_index < 5).
NUM_LOGGED_EXAMPLES = 5


class InputExample:
    """A single training/test example (original ``InputExample``).

    Args:
      guid: unique id, e.g. ``"train-1"``.
      text_a: str, the first sequence (untokenized).
      text_b: optional str, the second sequence (pair tasks only).
      label: str label (classification), a numeric str or float (regression), or None.
    """

    def __init__(self, guid, text_a, text_b=None, label=None):
        self.guid = guid
        self.text_a = text_a
        self.text_b = text_b
        self.label = label

    def __repr__(self):
        return (f"InputExample(guid={self.guid!r}, text_a={self.text_a!r}, "
                f"text_b={self.text_b!r}, label={self.label!r})")


class PaddingInputExample:
    """A fake example that pads an eval/predict set to a multiple of the batch size (TPU).

    It becomes all-zero features with ``is_real_example=False``, so metrics weight it out
    (original ``PaddingInputExample``, spec 8.4 step 1 and 8.7).
    """


class InputFeatures:
    """The features of one example (original ``InputFeatures``).

    Attributes:
      input_ids, input_mask, segment_ids: lists of int, each of length max_seq_length.
      label_id: int index into the label list, or float (regression).
      is_real_example: False for a :class:`PaddingInputExample`.
    """

    def __init__(self, input_ids, input_mask, segment_ids, label_id, is_real_example=True):
        self.input_ids = input_ids
        self.input_mask = input_mask
        self.segment_ids = segment_ids
        self.label_id = label_id
        self.is_real_example = is_real_example


# ---------------------------------------------------------------------------------------------
# Processors (spec 8.2, 8.3)
# ---------------------------------------------------------------------------------------------

def _check_columns(row: Sequence[str], needed: int, path: str, line: int) -> None:
    if len(row) < needed:
        raise InputDataError(f"{path} line {line}: {len(row)} tab-separated column(s), expected "
                             f"at least {needed}")


def _check_label(label: str, labels: Sequence[str], path: str, line: int) -> None:
    if label not in labels:
        raise InputDataError(f"{path} line {line}: unknown label {label!r}; valid labels: "
                             f"{', '.join(repr(x) for x in labels)}")


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
        path, rows = self._read_rows(data_dir, self.test_file[0])
        return [row[0] if row else "" for _, _, row in self._data_rows(rows, path)]

    def _examples_of(self, data_dir: str, filename: str, set_type: str) -> List[InputExample]:
        return self._create_examples(*self._read_rows(data_dir, filename), set_type)

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


def warn_stsb_score_outside_range(score: float, path: str, line: int) -> None:
    """One warning line for an STS-B score outside 0..5 (GLUE's range): the score is kept as
    it is (the originals train on it), but it is most likely a wrong column or a typo."""
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
                warn_stsb_score_outside_range(label, path, line)
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


# ---------------------------------------------------------------------------------------------
# Features (spec 8.4, 8.5)
# ---------------------------------------------------------------------------------------------

_truncate_seq_pair = truncate_seq_pair  # the original's name (spec 8.4)


def _label_id(example, label_list):
    if label_list is None:  # regression
        try:
            return float(example.label)
        except (TypeError, ValueError):
            raise InputDataError(f"example {example.guid}: label {example.label!r} is not a "
                                 "number (regression task)") from None
    label_map = {label: i for (i, label) in enumerate(label_list)}
    if example.label not in label_map:
        raise InputDataError(f"example {example.guid}: unknown label {example.label!r}; valid "
                             f"labels: {', '.join(repr(x) for x in label_list)}")
    return label_map[example.label]


def convert_single_example(ex_index: int, example, label_list: Optional[Sequence[str]],
                           max_seq_length: int, tokenizer,
                           truncation: Optional[TruncationCount] = None) -> InputFeatures:
    """Converts one example into :class:`InputFeatures` (original ``convert_single_example``).

    Spec 8.4: ``[CLS] A [SEP]`` (+ ``B [SEP]`` when B gives tokens), segment ids 0 up to and
    including the first [SEP] then 1; pairs are cut with :func:`_truncate_seq_pair` to
    ``max_seq_length - 3``, single sentences keep their first ``max_seq_length - 2`` tokens;
    ``input_ids``/``input_mask``/``segment_ids`` zero-padded to ``max_seq_length`` (lists of
    int). A :class:`PaddingInputExample` gives all zeros, label 0, ``is_real_example=False``.
    Examples with ``ex_index < 5`` are logged.

    Args:
      label_list: the labels (id = index), or None for regression (label id = float(label)).
      truncation: (bert_tf) counts the examples cut to ``max_seq_length``.

    Raises:
      InputDataError: the label is not in ``label_list`` (names the guid and the valid labels).
    """
    if isinstance(example, PaddingInputExample):
        return InputFeatures(input_ids=[0] * max_seq_length, input_mask=[0] * max_seq_length,
                             segment_ids=[0] * max_seq_length,
                             label_id=0.0 if label_list is None else 0, is_real_example=False)

    label_id = _label_id(example, label_list)
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    if truncation is not None:
        truncation.add(tokens_a, tokens_b)
    tokens, input_ids, input_mask, segment_ids = build_bert_inputs(
        tokens_a, tokens_b, max_seq_length, tokenizer)

    if ex_index < NUM_LOGGED_EXAMPLES:
        log_example(example, input_ids, input_mask, segment_ids, label_id, tokens=tokens)

    return InputFeatures(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                         label_id=label_id, is_real_example=True)


def log_example(example, input_ids, input_mask, segment_ids, label_id,
                tokens: Optional[Sequence[str]] = None) -> None:
    """The original ``convert_single_example``'s log of one of the first examples (BERT
    ``run_classifier.py``; XLNet ``classifier_utils.py``, which logs no ``tokens`` line):
    ``*** Example ***``, ``guid``, ``tokens`` (when given), ``input_ids``, ``input_mask``,
    ``segment_ids`` (space-separated ints), ``label: <label> (id = <id>)``."""
    logging.info("*** Example ***")
    logging.info("guid: %s", example.guid)
    if tokens is not None:
        logging.info("tokens: %s", " ".join(tokens))
    logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
    logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
    logging.info("label: %s (id = %s)", example.label, label_id)


def convert_examples_to_features(examples, label_list, max_seq_length: int, tokenizer
                                 ) -> List[InputFeatures]:
    """:func:`convert_single_example` over a list (original, kept for the Colab/TF Hub flow).

    The original logs ``Writing example <i> of <n>`` every 10000 examples.
    """
    features = []
    truncation = TruncationCount(max_seq_length)
    for (ex_index, example) in enumerate(examples):
        if ex_index % 10000 == 0:
            logging.info("Writing example %d of %d", ex_index, len(examples))
        features.append(convert_single_example(ex_index, example, label_list, max_seq_length,
                                               tokenizer, truncation))
    if truncation.summary():
        logging.warning("%s", truncation.summary())
    return features


def convert_example_windows(ex_index: int, example, label_list: Optional[Sequence[str]],
                            max_seq_length: int, tokenizer, doc_stride: int,
                            where: str = "") -> List[InputFeatures]:
    """One example as sliding windows (``--doc_stride``; bert_tf, beyond the original, issue 13).

    The tokens are cut by :func:`bert_tf.data.windows.split_into_windows` (run_squad's stride
    rule; a pair keeps its shorter side whole); each window is laid out and padded as
    :func:`convert_single_example` lays out an example that fits (``[CLS] A [SEP] (B
    [SEP])``, same segment ids), with the example's label. An example that fits in
    ``max_seq_length`` gives one window, the very features of :func:`convert_single_example`.
    A :class:`PaddingInputExample` gives its one all-zero feature. The first 5 examples'
    windows are logged.

    Args:
      doc_stride: the flag (checked by :func:`bert_tf.data.windows.check_window_flags`).
      where: names the example in errors (e.g. the file).

    Returns:
      the windows' :class:`InputFeatures`, in order (at least one).

    Raises:
      InputDataError: an unknown label; a pair whose shorter side leaves fewer than
        ``doc_stride`` tokens per window (names the example).
    """
    if isinstance(example, PaddingInputExample):
        return [convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer)]
    label_id = _label_id(example, label_list)
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    windows = split_into_windows(tokens_a, tokens_b, max_seq_length, doc_stride,
                                 where=f"{where}example {example.guid}")
    return window_features(
        ex_index, example, label_id, windows,
        lambda part_a, part_b: build_bert_inputs(part_a, part_b, max_seq_length, tokenizer),
        "tokens")


def window_features(ex_index: int, example, label_id, windows, layout: Callable,
                    logged_name: str) -> List[InputFeatures]:
    """The :class:`InputFeatures` of an example's ``--doc_stride`` windows (bert_tf, issue
    13), shared by the BERT and XLNet ``convert_example_windows``.

    Args:
      ex_index: the example's index (the first :data:`NUM_LOGGED_EXAMPLES` are logged).
      example: the :class:`InputExample` (``guid``, ``label`` for the log).
      label_id: its label id (int, float for regression).
      windows: :func:`bert_tf.data.windows.split_into_windows`' result (``pieces``: the
        ``(part_a, part_b)`` of each window).
      layout: ``(part_a, part_b) -> (logged, input_ids, input_mask, segment_ids)``: the
        family's layout of one window, padded to ``max_seq_length``; ``logged``: what the log
        shows of it.
      logged_name: the log line's name of ``logged`` (``tokens`` / ``input_ids``).

    Returns:
      one :class:`InputFeatures` per window, in order, all with ``label_id``.
    """
    features = []
    for window_index, (part_a, part_b) in enumerate(windows.pieces):
        logged, input_ids, input_mask, segment_ids = layout(part_a, part_b)
        if ex_index < NUM_LOGGED_EXAMPLES:
            logging.info("*** Example ***")
            logging.info("guid: %s (window %d of %d)", example.guid, window_index + 1,
                         len(windows.pieces))
            logging.info("%s: %s", logged_name, " ".join(str(x) for x in logged))
            logging.info("label: %s (id = %s)", example.label, label_id)
        features.append(InputFeatures(input_ids=input_ids, input_mask=input_mask,
                                      segment_ids=segment_ids, label_id=label_id,
                                      is_real_example=True))
    return features


def feature_to_example(feature: InputFeatures, regression: bool = False,
                       example_index: Optional[int] = None) -> tf.train.Example:
    """The ``tf.train.Example`` of one feature (spec 8.5), in the original feature order.

    ``input_ids``/``input_mask``/``segment_ids``: int64 [max_seq_length]; ``label_ids``: int64
    [1], or float [1] when ``regression``; ``is_real_example``: int64 [1], 1 or 0. With
    ``example_index`` (``--doc_stride`` windows, bert_tf) a last int64 [1] ``example_index``:
    the example the window belongs to (-1 for TPU padding).
    """
    feats = collections.OrderedDict()
    feats["input_ids"] = tfrecord.create_int_feature(feature.input_ids)
    feats["input_mask"] = tfrecord.create_int_feature(feature.input_mask)
    feats["segment_ids"] = tfrecord.create_int_feature(feature.segment_ids)
    if regression:
        feats["label_ids"] = tfrecord.create_float_feature([float(feature.label_id)])
    else:
        feats["label_ids"] = tfrecord.create_int_feature([feature.label_id])
    feats["is_real_example"] = tfrecord.create_int_feature([int(feature.is_real_example)])
    if example_index is not None:
        feats["example_index"] = tfrecord.create_int_feature([int(example_index)])
    return tf.train.Example(features=tf.train.Features(feature=feats))


def file_based_convert_examples_to_features(examples, label_list, max_seq_length: int,
                                            tokenizer, output_file: str,
                                            doc_stride: Optional[int] = None,
                                            pad_to_multiple: Optional[int] = None) -> int:
    """Converts examples and writes them to a TFRecord file (original function of that name).

    One record per example, in order (features: see :func:`feature_to_example`; label_ids is a
    float list when ``label_list`` is None, i.e. regression). Written atomically; logs
    ``Writing example <i> of <n>`` every 10000 examples. Returns the number of records.

    bert_tf: one warning line counts the examples truncated to ``max_seq_length`` (with the
    longest length), which the original cut silently.

    bert_tf, ``doc_stride`` (issue 13): one record per WINDOW
    (:func:`convert_example_windows`), each with the ``example_index`` of its example (its
    position in ``examples``); nothing is truncated. ``pad_to_multiple`` (TPU eval/predict)
    then appends all-zero records (``is_real_example`` 0, ``example_index`` -1) until the
    number of records is a multiple of it (the windows, not the examples, fill the batches).

    Raises:
      InputDataError: see :func:`convert_single_example` / :func:`convert_example_windows`.
    """
    if doc_stride is not None:
        return _write_window_records(examples, label_list, max_seq_length, tokenizer,
                                     output_file, doc_stride, pad_to_multiple)
    truncation = TruncationCount(max_seq_length)
    with tfrecord.AtomicTFRecordWriter(output_file) as writer:
        for (ex_index, example) in enumerate(examples):
            if ex_index % 10000 == 0:
                logging.info("Writing example %d of %d", ex_index, len(examples))
            feature = convert_single_example(ex_index, example, label_list, max_seq_length,
                                             tokenizer, truncation)
            writer.write(feature_to_example(feature, regression=label_list is None))
    if truncation.summary():
        logging.warning("%s: %s", os.path.basename(output_file), truncation.summary())
    return len(examples)


def _write_window_records(examples, label_list, max_seq_length, tokenizer, output_file,
                          doc_stride, pad_to_multiple) -> int:
    regression = label_list is None
    where = f"{os.path.basename(output_file)}: "
    count = windowed = 0
    with tfrecord.AtomicTFRecordWriter(output_file) as writer:
        for (ex_index, example) in enumerate(examples):
            if ex_index % 10000 == 0:
                logging.info("Writing example %d of %d", ex_index, len(examples))
            features = convert_example_windows(ex_index, example, label_list, max_seq_length,
                                               tokenizer, doc_stride, where)
            windowed += len(features) > 1
            for feature in features:
                writer.write(feature_to_example(feature, regression, example_index=ex_index))
                count += 1
        while pad_to_multiple and count % pad_to_multiple:
            padding = convert_single_example(count, PaddingInputExample(), label_list,
                                             max_seq_length, tokenizer)
            writer.write(feature_to_example(padding, regression, example_index=-1))
            count += 1
    logging.info("%s: %d records: %d examples, %d of them longer than --max_seq_length=%d cut "
                 "into windows of --doc_stride=%d", os.path.basename(output_file), count,
                 len(examples), windowed, max_seq_length, doc_stride)
    return count


def classifier_schema(max_seq_length: int, regression: bool = False, windowed: bool = False):
    """The parse schema of these TFRecords (original ``name_to_features``), for
    :func:`bert_tf.data.tfrecord.decode_record`. ``label_ids`` is a scalar (shape []);
    ``windowed`` (``--doc_stride`` records, bert_tf) adds the scalar ``example_index``."""
    schema = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }
    if windowed:
        schema["example_index"] = tf.io.FixedLenFeature([], tf.int64)
    return schema


def add_tpu_padding(examples: Sequence, batch_size: int, use_tpu: bool = True
                    ) -> Tuple[list, int]:
    """Pads an eval/predict set with :class:`PaddingInputExample` s (original run flow, spec 8.7).

    With ``use_tpu``, appends padding examples until ``len % batch_size == 0`` (TPUs need fixed
    batches); without, returns the examples unchanged.

    Returns:
      ``(examples, num_actual)``: a new list, and the number of real examples.

    Raises:
      FlagError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise FlagError(f"batch size must be >= 1, got {batch_size}")
    out = list(examples)
    num_actual = len(out)
    if use_tpu:
        while len(out) % batch_size != 0:
            out.append(PaddingInputExample())
    return out, num_actual
