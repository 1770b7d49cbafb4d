"""Sentence (pair) classification data: examples -> features -> TFRecords.

The original `run_classifier.py` data half (spec ``bert.md`` 8.4, 8.5, 8.7): ``InputExample``,
``PaddingInputExample``, ``InputFeatures``, ``convert_single_example``, ``_truncate_seq_pair``
and ``file_based_convert_examples_to_features``; plus (bert_tf) long examples as windows and
errors that name the example. The GLUE/XNLI TSV files become examples in
:mod:`bert_tf.data.classifier_processors` (``DataProcessor``, the processors, ``get_processor``).

Regression (``sts-b``): pass ``label_list=None`` to the conversion functions: the label is
then ``float(example.label)`` and the TFRecord feature ``label_ids`` is a FLOAT list of one value
(every classification feature file has it as an int64 list, as the original).

Pure Python; TensorFlow is used only for `tf.io.gfile` and `tf.train.Example`.
"""

import collections
import math
import os
from typing import Callable, List, Optional, Sequence, Tuple

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
# Features (spec 8.4, 8.5)
# ---------------------------------------------------------------------------------------------

_truncate_seq_pair = truncate_seq_pair  # the original's name (spec 8.4)


def _label_id(example, label_list):
    if label_list is None:  # regression
        try:
            label = float(example.label)
        except (TypeError, ValueError):
            raise InputDataError(f"example {example.guid}: label {example.label!r} is not a "
                                 "number (regression task)") from None
        if not math.isfinite(label):
            raise InputDataError(f"example {example.guid}: label {example.label!r} is not a "
                                 "finite number (regression task)")
        return label
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
