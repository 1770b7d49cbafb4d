"""XLNet sentence (pair) classification data: processors -> examples -> features -> TFRecords.

The data half of the original XLNet `run_classifier.py` and `classifier_utils.py` (spec
`xlnet.md` 5.4, 8.2, 8.3):

* processors of the original (``mnli_matched``, ``mnli_mismatched``, ``sts-b``, ``imdb``,
  ``yelp5``) with the original columns, guids (``<set>-<row index>``) and file names; every
  other task name falls back to the GLUE processors of the BERT path
  (:data:`bert_tf.data.classifier_processors.PROCESSORS`: cola, mnli, mrpc, xnli, sst-2, qnli,
  qqp, rte, wnli);
* :func:`convert_single_example` in the XLNet layout: ``A <sep> [B <sep>] <cls>``, the
  separator in the segment of its sentence, `<cls>` in segment 2, **left** padding with id 0,
  ``input_mask`` 1 and segment 4 (1 = padding, the XLNet polarity);
* TFRecords as the original writes them: ``input_mask`` is a FLOAT list, ``label_ids`` an
  int64 list (a float list for regression), file names
  ``{spm_basename}.len-{S}.{train|<split>.eval|<split>.predict}.tf_record``.

Beyond the original: rows the original skipped silently or crashed on (too few columns, a
label not in the label list, a non-numeric STS-B score) are reported with file and line;
special symbols written literally in the text (``<cls>``, ``<eop>``...) are reported (they are
kept and tokenized exactly as the original does: control symbols such as ``<cls>`` are split
into ordinary pieces, user-defined ones such as ``<eop>`` become their symbol id).

Pure Python; TensorFlow only for `tf.io.gfile` and `tf.train.Example`.
"""

import csv
import io
import math
import os
from typing import Callable, Dict, List, Optional, Sequence, Type

import tensorflow as tf
from absl import logging

from bert_tf.data import classifier as bert_classifier
from bert_tf.data import classifier_processors as bert_processors
from bert_tf.data import tfrecord
from bert_tf.data.classifier import InputExample, InputFeatures, PaddingInputExample
from bert_tf.data.classifier_processors import DataProcessor
from bert_tf.data.sequence_pairs import truncate_seq_pair
from bert_tf.data.windows import split_into_windows
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.sentencepiece_prepro import CLS_ID, SEP_ID, encode_pieces, special_symbols

# Segment ids of classifier_utils (spec 5.4). SEG_ID_SEP is defined but never emitted.
SEG_ID_A = 0
SEG_ID_B = 1
SEG_ID_CLS = 2
SEG_ID_SEP = 3
SEG_ID_PAD = 4

NUM_LOGGED_EXAMPLES = 5


# ---------------------------------------------------------------------------------------------
# Processors (spec 8.2)
# ---------------------------------------------------------------------------------------------

def _incomplete(path: str, line: int, needed_column: int, row: Sequence[str]) -> None:
    """The original's silent skip of a short line, said (``needed_column``: the 0-based index
    read; the line names columns from 1)."""
    logging.warning("%s line %d: incomplete line ignored (%d column(s); column %d is read)",
                    path, line, len(row), needed_column + 1)


class XLNetGlueProcessor(DataProcessor):
    """The original XLNet ``GLUEProcessor``: a TSV per split with text/label columns.

    ``train.tsv`` / ``dev.tsv`` / ``test.tsv`` read without quoting, empty rows dropped, the
    header row (row 0) skipped, guid ``<set>-<row index>``; a row too short for a needed column
    is skipped with a warning naming the file and line; test labels are the first label.
    Subclasses set the columns (``label_column`` may be negative, e.g. -1 = last).
    """

    train_file = "train.tsv"
    dev_file = "dev.tsv"
    test_file = "test.tsv"
    label_column: int = None
    text_a_column: int = None
    text_b_column: Optional[int] = None
    contains_header = True
    test_text_a_column: Optional[int] = None
    test_text_b_column: Optional[int] = None
    test_contains_header = True

    def get_train_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, self.train_file), "train")

    def get_dev_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, self.dev_file), "dev")

    def get_test_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, self.test_file), "test")

    def get_labels(self):
        return ["0", "1"]

    def _label(self, value: str, path: str, line: int):
        labels = self.get_labels()
        if value not in labels:
            raise InputDataError(f"{path} line {line}: unknown label {value!r}; valid labels: "
                                 f"{', '.join(repr(x) for x in labels)}")
        return value

    def _create_examples(self, path: str, set_type: str) -> List[InputExample]:
        rows = [(number, row) for number, row in enumerate(self._read_tsv(path), 1) if row]
        header = self.test_contains_header if set_type == "test" else self.contains_header
        a_column = self.text_a_column
        b_column = self.text_b_column
        if set_type == "test":
            a_column = self.test_text_a_column if self.test_text_a_column is not None else a_column
            b_column = self.test_text_b_column if self.test_text_b_column is not None else b_column
        examples = []
        for i, (line, row) in enumerate(rows):
            if i == 0 and header:
                continue
            if len(row) <= a_column:
                _incomplete(path, line, a_column, row)
                continue
            text_b = None
            if b_column is not None:
                if len(row) <= b_column:
                    _incomplete(path, line, b_column, row)
                    continue
                text_b = row[b_column]
            if set_type == "test":
                label = self.get_labels()[0]
            else:
                if len(row) <= self.label_column:
                    _incomplete(path, line, self.label_column, row)
                    continue
                label = self._label(row[self.label_column], path, line)
            examples.append(InputExample("%s-%s" % (set_type, i), row[a_column], text_b, label))
        if not examples:
            raise InputDataError(f"data file {path} has no usable rows")
        return examples


class MnliMatchedProcessor(XLNetGlueProcessor):
    """MNLI matched (original): cols 8/9, label = last col; dev ``dev_matched.tsv``."""

    dev_file = "dev_matched.tsv"
    test_file = "test_matched.tsv"
    label_column = -1
    text_a_column = 8
    text_b_column = 9

    def get_labels(self):
        return ["contradiction", "entailment", "neutral"]


class MnliMismatchedProcessor(MnliMatchedProcessor):
    """MNLI mismatched (original): dev ``dev_mismatched.tsv``, test ``test_mismatched.tsv``."""

    dev_file = "dev_mismatched.tsv"
    test_file = "test_mismatched.tsv"


class StsbProcessor(XLNetGlueProcessor):
    """STS-B (original XLNet): cols 7/8, label = ``float(col 9)``; labels ``[0.0]``.

    A regression task: run it with ``--is_regression=True`` (label list None, one output).
    """

    is_regression = True
    label_column = 9
    text_a_column = 7
    text_b_column = 8

    def get_labels(self):
        return [0.0]

    def _label(self, value, path, line):
        try:
            score = float(value)
        except ValueError:
            raise InputDataError(f"{path} line {line}: score {value!r} is not a number "
                                 "(STS-B labels are floats)") from None
        bert_processors.check_stsb_score(score, path, line)
        return score


class ImdbProcessor(DataProcessor):
    """IMDB (original): ``train/{neg,pos}/*.txt``, dev = ``test/{neg,pos}/*.txt``.

    Each file is one example (text stripped, ``<br />`` -> space, guid ``unused_id`` as the
    original). Files are read in sorted order (the original used the directory listing order).
    No test split.
    """

    def get_labels(self):
        return ["neg", "pos"]

    def get_train_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, "train"))

    def get_dev_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, "test"))

    def get_test_examples(self, data_dir):
        raise FlagError("imdb has no test split in the original run_classifier.py "
                        "(--eval_split=dev evaluates test/{neg,pos})")

    def _create_examples(self, data_dir):
        examples = []
        for label in ["neg", "pos"]:
            cur_dir = os.path.join(data_dir, label)
            if not tf.io.gfile.isdir(cur_dir):
                raise InputDataError(f"{cur_dir}: IMDB folder not found (expected "
                                     f"<data_dir>/{{train,test}}/{{neg,pos}}/*.txt)")
            for filename in sorted(tf.io.gfile.listdir(cur_dir)):
                if not filename.endswith("txt"):
                    continue
                path = os.path.join(cur_dir, filename)
                try:
                    with tf.io.gfile.GFile(path, "rb") as f:
                        text = f.read().decode("utf-8")
                except UnicodeDecodeError as e:
                    raise InputDataError(f"{path}: not valid UTF-8 ({e.reason} at byte "
                                         f"{e.start})") from None
                text = text.strip().replace("<br />", " ")
                examples.append(InputExample("unused_id", text, None, label))
        return examples


class Yelp5Processor(DataProcessor):
    """Yelp-5 (original): ``train.csv``, dev = ``test.csv``; csv rows ``label,text``.

    ``""`` and ``\\"`` in the text become ``"``; guid = row index. No test split.
    """

    def get_labels(self):
        return ["1", "2", "3", "4", "5"]

    def get_train_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, "train.csv"))

    def get_dev_examples(self, data_dir):
        return self._create_examples(os.path.join(data_dir, "test.csv"))

    def get_test_examples(self, data_dir):
        raise FlagError("yelp5 has no test split in the original run_classifier.py "
                        "(--eval_split=dev evaluates test.csv)")

    def _create_examples(self, input_file):
        try:
            with tf.io.gfile.GFile(input_file, "rb") as f:
                data = f.read().decode("utf-8")
        except tf.errors.OpError as e:
            # TF's message is "<path>; <reason>": name the file once
            reason = e.message.split("; ", 1)[1] if e.message.startswith(f"{input_file}; ") \
                else e.message
            raise InputDataError(f"cannot read data file {input_file} ({reason})") from e
        except UnicodeDecodeError as e:
            raise InputDataError(f"{input_file}: not valid UTF-8 ({e.reason} at byte "
                                 f"{e.start})") from None
        examples = []
        reader = csv.reader(io.StringIO(data, newline=""))
        try:
            for i, row in enumerate(reader):
                if len(row) < 2:
                    raise InputDataError(f"{input_file} line {reader.line_num}: expected "
                                         f"label,text, got {len(row)} field(s)")
                label = row[0]
                if label not in self.get_labels():
                    raise InputDataError(f"{input_file} line {reader.line_num}: unknown label "
                                         f"{label!r}; valid labels: 1..5")
                text_a = row[1].replace('""', '"').replace('\\"', '"')
                examples.append(InputExample(str(i), text_a, None, label))
        except csv.Error as e:
            raise InputDataError(f"{input_file} line {reader.line_num}: {e}") from None
        return examples


# Task name (lower case) -> processor class: the original five.
XLNET_PROCESSORS: Dict[str, Type[DataProcessor]] = {
    "mnli_matched": MnliMatchedProcessor,
    "mnli_mismatched": MnliMismatchedProcessor,
    "sts-b": StsbProcessor,
    "imdb": ImdbProcessor,
    "yelp5": Yelp5Processor,
}


def task_names() -> List[str]:
    """Every task name the XLNet path accepts: the original five, then the BERT path's."""
    return list(XLNET_PROCESSORS) + [n for n in bert_processors.PROCESSORS
                                     if n not in XLNET_PROCESSORS]


def get_processor(task_name: str) -> DataProcessor:
    """The processor of ``task_name`` (case-insensitive, ``--task_name``).

    The original five first; other names use the GLUE processors of the BERT path
    (``bert_tf.data.classifier``).

    Raises:
      FlagError: unknown task (lists the valid names).
    """
    name = (task_name or "").lower()
    if name in XLNET_PROCESSORS:
        return XLNET_PROCESSORS[name]()
    if name in bert_processors.PROCESSORS:
        return bert_processors.PROCESSORS[name]()
    raise FlagError(f"Task not found: {task_name!r} (--task_name); valid tasks: "
                    f"{', '.join(task_names())}")


# ---------------------------------------------------------------------------------------------
# Special symbols written literally (bert_tf report; the tokenization is the original's)
# ---------------------------------------------------------------------------------------------

def literal_special_symbols(text: Optional[str]) -> List[str]:
    """The special symbols (``<cls>``, ``<eop>``...) written as text in ``text``, in id order."""
    if not text or "<" not in text:
        return []
    return [s for s in special_symbols if s in text]


def symbol_treatment(sp_model, symbol: str) -> str:
    """How SentencePiece treats ``symbol`` written in text, in words (for messages).

    User-defined symbols (XLNet's ``<eop>``) are matched and become their id; control symbols
    (``<cls>``, ``<sep>``, ``<pad>``, ``<mask>``, ``<eod>``) and ``<unk> <s> </s>`` are never
    matched in text and are split into ordinary pieces.
    """
    pieces = encode_pieces(sp_model, symbol)
    if symbol in pieces:
        return (f"encoded as the symbol {symbol} itself (id {sp_model.PieceToId(symbol)}, a "
                f"user-defined piece of the SentencePiece model), as in the original")
    ids = [sp_model.PieceToId(p) for p in pieces]
    return (f"NOT the {symbol} symbol: SentencePiece never matches it in text, it becomes the "
            f"pieces {pieces} (ids {ids}), as in the original")


class LiteralSymbolReport:
    """Counts examples whose text holds special symbols written literally and logs them.

    The first ``max_logged`` examples are logged one by one (guid, field, symbol and how it is
    tokenized); :meth:`summary` gives the total. Nothing is changed or dropped.
    """

    def __init__(self, sp_model, source: str, max_logged: int = 5):
        self.sp_model = sp_model
        self.source = source
        self.max_logged = max_logged
        self.count = 0
        self.symbols: Dict[str, int] = {}
        self._treatment: Dict[str, str] = {}

    def check(self, where: str, field: str, text: Optional[str]) -> None:
        """Looks at one text field; ``where`` names the example (``example train-3``,
        ``line 7``)."""
        found = literal_special_symbols(text)
        if not found:
            return
        self.count += 1
        for symbol in found:
            self.symbols[symbol] = self.symbols.get(symbol, 0) + 1
            if symbol not in self._treatment:
                self._treatment[symbol] = symbol_treatment(self.sp_model, symbol)
        if self.count <= self.max_logged:
            for symbol in found:
                logging.warning("%s: %s, %s contains %r written literally: %s",
                                self.source, where, field, symbol, self._treatment[symbol])

    def summary(self) -> Optional[str]:
        """One line for the log, or None when no example had a literal symbol."""
        if not self.count:
            return None
        counts = ", ".join(f"{s} x{n}" for s, n in self.symbols.items())
        return (f"{self.source}: {self.count} text field(s) contain special symbols written "
                f"literally ({counts}); they were kept and tokenized as the original does")


# ---------------------------------------------------------------------------------------------
# Features (spec 5.4)
# ---------------------------------------------------------------------------------------------

def _label_id(example, label_list):
    if label_list is None:  # regression: the raw value (the original passes it through)
        try:
            label = float(example.label)
        except (TypeError, ValueError):
            raise InputDataError(f"example {example.guid}: label {example.label!r} is not a "
                                 "number (regression task)") from None
        if not math.isfinite(label):
            raise InputDataError(f"example {example.guid}: label {example.label!r} is not a "
                                 "finite number (regression task)")
        return label
    label_map = {label: i for i, label in enumerate(label_list)}
    if example.label not in label_map:
        raise InputDataError(f"example {example.guid}: unknown label {example.label!r}; valid "
                             f"labels: {', '.join(repr(x) for x in label_list)}")
    return label_map[example.label]


def convert_single_example(ex_index: int, example, label_list: Optional[Sequence],
                           max_seq_length: int, tokenize_fn: Callable[[str], List[int]]
                           ) -> InputFeatures:
    """One example -> :class:`InputFeatures` in the XLNet layout (original
    ``classifier_utils.convert_single_example``, spec 5.4).

    ``A <sep>`` (segment 0), ``B <sep>`` (segment 1) when B gives tokens, ``<cls>`` (segment 2);
    a pair is cut with ``truncate_seq_pair`` (the original's ``_truncate_seq_pair``) to
    ``max_seq_length - 3``, a single sentence to its first ``max_seq_length - 2`` ids;
    ``input_mask`` 0 for these; then LEFT padding to ``max_seq_length`` with id 0, mask 1,
    segment 4. A :class:`PaddingInputExample` gives ids 0, mask 1, segments 0, label 0,
    ``is_real_example=False``.

    Args:
      ex_index: position in the data set (the first 5 are logged).
      label_list: labels (id = index) or None for regression (label id = float(label)).
      max_seq_length: S.
      tokenize_fn: text -> list of int ids (``preprocess_text`` + ``encode_ids``).

    Returns:
      :class:`InputFeatures` with int lists of length S (``input_mask``: 1 = padding).

    Raises:
      InputDataError: the label is not in ``label_list`` / not a number (names the guid).
      ValueError: ``max_seq_length`` < 3.
    """
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length {max_seq_length} leaves no room for <sep> <sep> <cls>")
    if isinstance(example, PaddingInputExample):
        return InputFeatures(input_ids=[0] * max_seq_length, input_mask=[1] * max_seq_length,
                             segment_ids=[0] * max_seq_length, label_id=0,
                             is_real_example=False)

    label_id = _label_id(example, label_list)
    tokens_a = list(tokenize_fn(example.text_a))
    tokens_b = None
    if example.text_b:
        tokens_b = list(tokenize_fn(example.text_b))
    if tokens_b:
        truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)  # <sep> <sep> <cls>
    elif len(tokens_a) > max_seq_length - 2:  # <sep> <cls>
        tokens_a = tokens_a[:max_seq_length - 2]

    input_ids, input_mask, segment_ids = _layout(tokens_a, tokens_b, max_seq_length)

    if ex_index < NUM_LOGGED_EXAMPLES:
        bert_classifier.log_example(example, input_ids, input_mask, segment_ids, label_id)

    return InputFeatures(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                         label_id=label_id, is_real_example=True)


def _layout(tokens_a: List[int], tokens_b: Optional[List[int]], max_seq_length: int):
    """``A <sep> [B <sep>] <cls>`` ids that fit, left-padded: ``(input_ids, input_mask,
    segment_ids)`` int lists of length ``max_seq_length`` (spec 5.4)."""
    input_ids = list(tokens_a) + [SEP_ID]
    segment_ids = [SEG_ID_A] * len(input_ids)
    if tokens_b:
        input_ids += list(tokens_b) + [SEP_ID]
        segment_ids += [SEG_ID_B] * (len(tokens_b) + 1)
    input_ids.append(CLS_ID)
    segment_ids.append(SEG_ID_CLS)
    input_mask = [0] * len(input_ids)
    delta = max_seq_length - len(input_ids)
    if delta > 0:
        input_ids = [0] * delta + input_ids
        input_mask = [1] * delta + input_mask
        segment_ids = [SEG_ID_PAD] * delta + segment_ids
    return input_ids, input_mask, segment_ids


def convert_example_windows(ex_index: int, example, label_list: Optional[Sequence],
                            max_seq_length: int, tokenize_fn: Callable[[str], List[int]],
                            doc_stride: int, where: str = "") -> List[InputFeatures]:
    """One example as ``--doc_stride`` sliding windows in the XLNet layout (bert_tf, beyond
    the original, issue 13).

    The ids are cut by :func:`bert_tf.data.windows.split_into_windows` (run_squad's stride
    rule, windows of ``max_seq_length - 2`` / ``- 3 - len(shorter side)``; a pair keeps its
    shorter side whole), each window laid out and left-padded as :func:`convert_single_example`
    lays out an example that fits, with the example's label. An example that fits gives one
    window equal to :func:`convert_single_example`'s features. A
    :class:`PaddingInputExample` gives its one padding feature.

    Raises:
      InputDataError: an unknown label; a pair whose shorter side leaves fewer than
        ``doc_stride`` ids per window (names the example).
    """
    if isinstance(example, PaddingInputExample):
        return [convert_single_example(ex_index, example, label_list, max_seq_length,
                                       tokenize_fn)]
    label_id = _label_id(example, label_list)
    tokens_a = list(tokenize_fn(example.text_a))
    tokens_b = list(tokenize_fn(example.text_b)) if example.text_b else None
    windows = split_into_windows(tokens_a, tokens_b, max_seq_length, doc_stride,
                                 where=f"{where}example {example.guid}")

    def layout(part_a, part_b):
        input_ids, input_mask, segment_ids = _layout(part_a, part_b, max_seq_length)
        return input_ids, input_ids, input_mask, segment_ids

    return bert_classifier.window_features(ex_index, example, label_id, windows, layout,
                                           "input_ids")


def feature_to_example(feature: InputFeatures, regression: bool = False,
                       example_index: Optional[int] = None) -> tf.train.Example:
    """The ``tf.train.Example`` of one feature as the original XLNet writes it (spec 8.3).

    ``input_ids`` int64 ``[S]``, ``input_mask`` FLOAT ``[S]``, ``segment_ids`` int64 ``[S]``,
    ``label_ids`` int64 ``[1]`` (float ``[1]`` when ``regression``), ``is_real_example``
    int64 ``[1]``; with ``example_index`` (``--doc_stride`` windows, bert_tf) also int64
    ``[1]`` ``example_index`` (-1 for padding).
    """
    feats = {
        "input_ids": tfrecord.create_int_feature(feature.input_ids),
        "input_mask": tfrecord.create_float_feature([float(x) for x in feature.input_mask]),
        "segment_ids": tfrecord.create_int_feature(feature.segment_ids),
        "label_ids": (tfrecord.create_float_feature([float(feature.label_id)]) if regression
                      else tfrecord.create_int_feature([feature.label_id])),
        "is_real_example": tfrecord.create_int_feature([int(feature.is_real_example)]),
    }
    if example_index is not None:
        feats["example_index"] = tfrecord.create_int_feature([int(example_index)])
    return tf.train.Example(features=tf.train.Features(feature=feats))


def record_schema(max_seq_length: int, regression: bool = False, windowed: bool = False):
    """Parse schema of these TFRecords (original ``name_to_features``); ``label_ids`` scalar;
    ``windowed`` (``--doc_stride`` records) adds the scalar ``example_index``."""
    schema = {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.float32 if regression else tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }
    if windowed:
        schema["example_index"] = tf.io.FixedLenFeature([], tf.int64)
    return schema


def record_file_name(spm_basename: str, max_seq_length: int, kind: str,
                     eval_split: str = "dev") -> str:
    """``{spm}.len-{S}.train.tf_record``, ``{spm}.len-{S}.{split}.eval.tf_record`` or
    ``{spm}.len-{S}.{split}.predict.tf_record`` (spec 8.3).

    Raises:
      ValueError: ``kind`` is not train / eval / predict.
    """
    if kind == "train":
        return f"{spm_basename}.len-{max_seq_length}.train.tf_record"
    if kind in ("eval", "predict"):
        return f"{spm_basename}.len-{max_seq_length}.{eval_split}.{kind}.tf_record"
    raise ValueError(f"unknown record kind {kind!r}")


def file_based_convert_examples_to_features(examples: Sequence, label_list: Optional[Sequence],
                                            max_seq_length: int, tokenize_fn, output_file: str,
                                            num_passes: int = 1, overwrite: bool = False,
                                            symbol_report: Optional[LiteralSymbolReport] = None,
                                            doc_stride: Optional[int] = None,
                                            pad_to_multiple: Optional[int] = None
                                            ) -> Optional[int]:
    """Writes the examples (``num_passes`` times over) to a TFRecord file, as the original.

    An existing ``output_file`` is reused unless ``overwrite`` (the original's
    ``--overwrite_data``): then nothing is written and None is returned. The file is written
    atomically (no partial file after an error).

    Args:
      symbol_report: optional :class:`LiteralSymbolReport` told about every text field.
      doc_stride: (bert_tf, issue 13) one record per window (:func:`convert_example_windows`)
        with the ``example_index`` of its example (its position in ``examples`` of one pass).
      pad_to_multiple: with ``doc_stride``, padding records (``example_index`` -1) until the
        number of records is a multiple of it (eval batches of windows).

    Returns:
      the number of records written, or None when an existing file was kept.

    Raises:
      InputDataError: see :func:`convert_single_example`.
    """
    if tf.io.gfile.exists(output_file) and not overwrite:
        logging.info("Do not overwrite tfrecord %s exists.", output_file)
        return None
    logging.info("Create new tfrecord %s.", output_file)
    examples = list(examples)
    per_pass = max(len(examples), 1)  # the example_index of a window: its example in one pass
    examples = examples * num_passes
    count = 0
    with tfrecord.AtomicTFRecordWriter(output_file) as writer:
        for ex_index, example in enumerate(examples):
            if ex_index % 10000 == 0:
                logging.info("Writing example %d of %d", ex_index, len(examples))
            if symbol_report is not None and not isinstance(example, PaddingInputExample) \
                    and ex_index < len(examples) // num_passes:
                symbol_report.check(f"example {example.guid}", "text_a", example.text_a)
                symbol_report.check(f"example {example.guid}", "text_b", example.text_b)
            if doc_stride is None:
                feature = convert_single_example(ex_index, example, label_list, max_seq_length,
                                                 tokenize_fn)
                writer.write(feature_to_example(feature, regression=label_list is None))
                continue
            for feature in convert_example_windows(
                    ex_index, example, label_list, max_seq_length, tokenize_fn, doc_stride,
                    where=f"{os.path.basename(output_file)}: "):
                writer.write(feature_to_example(feature, regression=label_list is None,
                                                example_index=ex_index % per_pass))
                count += 1
        while doc_stride is not None and pad_to_multiple and count % pad_to_multiple:
            padding = convert_single_example(count, PaddingInputExample(), label_list,
                                             max_seq_length, tokenize_fn)
            writer.write(feature_to_example(padding, regression=label_list is None,
                                            example_index=-1))
            count += 1
    if doc_stride is not None:
        logging.info("%s: %d window records of %d examples (--doc_stride=%d)",
                     os.path.basename(output_file), count, len(examples), doc_stride)
        if symbol_report is not None and symbol_report.summary():
            logging.warning("%s", symbol_report.summary())
        return count
    if symbol_report is not None and symbol_report.summary():
        logging.warning("%s", symbol_report.summary())
    return len(examples)
