"""SQuAD pre-processing: JSON -> examples -> doc-span features -> TFRecords.

Mirrors ``read_squad_examples``, ``convert_examples_to_features``, ``_improve_answer_span``,
``_check_is_max_context`` and ``FeatureWriter`` of the original ``run_squad.py`` (spec
``bert.md`` 9.2, 9.3). Pure Python: TensorFlow is imported only when a :class:`FeatureWriter` is
made. Post-processing lives in :mod:`bert_tf.data.squad_postprocess` and metrics in
:mod:`bert_tf.data.squad_metrics`; the post-processing names are re-exported here.

Behaviour beyond the original (bad input; the original raised KeyError/IndexError or looped):

* malformed JSON, a missing key, an answer offset outside its context or an empty answer text
  raise :class:`~bert_tf.errors.InputDataError` naming the file and the question
  (``qas id`` and ``data[a].paragraphs[p].qas[q]``);
* an article with an empty ``paragraphs`` list, or a paragraph with no questions, is **logged
  as a warning and skipped**: it is valid SQuAD structure that simply holds no question (the
  original skipped it silently). A file with no question at all is also only a warning;
* flags that cannot work (``doc_stride``, ``max_query_length``, ``max_seq_length``) raise
  :class:`~bert_tf.errors.FlagError` naming the flags.
"""

import collections
import json
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import logging

from bert_tf.atomic_files import CommitOnExit
from bert_tf.errors import FlagError, InputDataError
from bert_tf.file_streams import open_text

UNIQUE_ID_START = 1000000000
"""The first feature's ``unique_id`` (original ``convert_examples_to_features``)."""

_NARROW_NO_BREAK_SPACE = 0x202F


@dataclass
class SquadExample:
    """One SQuAD question with its whitespace-split paragraph (original ``SquadExample``).

    Attributes:
      qas_id: the question id (``qa["id"]``).
      question_text: the question string.
      doc_tokens: the paragraph split on runs of whitespace (space, tab, CR, LF, U+202F).
      orig_answer_text: training only: the answer text ("" for an impossible question);
        None in eval mode.
      start_position, end_position: training only: word indexes into ``doc_tokens``
        (inclusive; -1/-1 for an impossible question); None in eval mode.
      is_impossible: training with ``version_2_with_negative`` only; always False in eval mode
        (the original reads it only when training).
    """

    qas_id: str
    question_text: str
    doc_tokens: List[str]
    orig_answer_text: Optional[str] = None
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: bool = False


@dataclass
class InputFeatures:
    """One doc span of one example (original ``InputFeatures``).

    Attributes:
      unique_id: from 1000000000 up, one per feature over all examples.
      example_index: index of the example in the list given to the converter.
      doc_span_index: index of the span within its example.
      tokens: ``[CLS] query [SEP] span pieces [SEP]`` (unpadded).
      token_to_orig_map: position in ``tokens`` -> word index in ``doc_tokens`` (doc positions only).
      token_is_max_context: position -> whether this span is the max-context span of the piece.
      input_ids, input_mask, segment_ids: int lists of length max_seq_length (zero-padded).
      start_position, end_position: training only: answer positions in ``tokens``, 0/0 for a
        span without the answer or an impossible example; None in eval mode.
      is_impossible: the example's ``is_impossible``.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: List[str]
    token_to_orig_map: Dict[int, int]
    token_is_max_context: Dict[int, bool]
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: bool = False


DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


def is_whitespace(c: str) -> bool:
    """The SQuAD reader's whitespace: space, tab, CR, LF and U+202F (not NBSP, not other Zs)."""
    return c == " " or c == "\t" or c == "\r" or c == "\n" or ord(c) == _NARROW_NO_BREAK_SPACE


def whitespace_tokenize(text: str) -> List[str]:
    """``text.strip().split()``: Python's Unicode whitespace split (original tokenization helper)."""
    text = text.strip()
    return text.split() if text else []


def split_context(paragraph_text: str) -> Tuple[List[str], List[int]]:
    """Splits a context into words and maps each character to its word.

    Returns:
      ``(doc_tokens, char_to_word_offset)``; ``char_to_word_offset[c]`` is the index of the
      word holding character ``c``; whitespace maps to the previous word, or -1 before the
      first word. Length of the map = ``len(paragraph_text)``.
    """
    doc_tokens: List[str] = []
    char_to_word_offset: List[int] = []
    prev_is_whitespace = True
    for c in paragraph_text:
        if is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def load_squad_json(input_file: str):
    """The parsed JSON of a SQuAD file (gzip-compressed if it ends in ``.gz``; gs:// too).

    Raises:
      InputDataError: the file is missing, unreadable or not JSON (names the file, and the line
        and column of a JSON error).
    """
    try:
        with open_text(input_file) as reader:  # gs:// too, as the original's tf.gfile.Open
            input_json = json.load(reader)
    except FileNotFoundError as e:
        raise InputDataError(f"{input_file}: SQuAD file not found") from e
    except json.JSONDecodeError as e:
        raise InputDataError(
            f"{input_file}: invalid JSON at line {e.lineno} column {e.colno}: {e.msg}") from e
    except (UnicodeDecodeError, OSError, EOFError) as e:
        raise InputDataError(f"{input_file}: cannot read the file ({e})") from e
    return input_json


def read_training_answer(qa: Mapping, where: str, input_file: str, paragraph_text: str,
                         doc_tokens: Sequence[str], char_to_word_offset: Sequence[int],
                         version_2_with_negative: bool
                         ) -> Optional[Tuple[str, int, int, bool]]:
    """The answer of one training question (the ``is_training`` branch of the original
    ``read_squad_examples``).

    Args:
      qa: the question's JSON object; where: its position, for errors.
      paragraph_text, doc_tokens, char_to_word_offset: its context and
        :func:`split_context` of it.

    Returns:
      ``(orig_answer_text, start_position, end_position, is_impossible)`` (word positions;
      ``("", -1, -1, True)`` for an impossible question), or None when the whitespace-normalised
      answer text is not found in the words it spans (logged "Could not find answer": the
      question is dropped, as the original).

    Raises:
      InputDataError: a key is missing, the question does not have exactly one answer, the
        answer is empty or its offset lies outside the context.
    """
    is_impossible = False
    if version_2_with_negative:
        is_impossible = require_field(qa, "is_impossible", bool, input_file, where)
    answers = require_field(qa, "answers", list, input_file, where)
    if len(answers) != 1 and not is_impossible:
        raise InputDataError(
            f"{input_file}: {where}: for training, each question should have "
            f"exactly 1 answer, found {len(answers)}")
    if not is_impossible:
        answer = answers[0]
        orig_answer_text = require_field(answer, "text", str, input_file,
                                    f"{where}.answers[0]")
        answer_offset = require_field(answer, "answer_start", int, input_file,
                                 f"{where}.answers[0]")
        answer_length = len(orig_answer_text)
        if answer_length == 0:
            raise InputDataError(f"{input_file}: {where}: the answer text is empty")
        if answer_offset < 0 or answer_offset + answer_length > len(paragraph_text):
            raise InputDataError(
                f"{input_file}: {where}: answer_start {answer_offset} + length "
                f"{answer_length} lies outside the context of "
                f"{len(paragraph_text)} characters")
        start_position = char_to_word_offset[answer_offset]
        end_position = char_to_word_offset[answer_offset + answer_length - 1]
        # Only keep answers whose text can be recovered from the document words
        # (skips odd Unicode or misaligned offsets, as the original).
        actual_text = " ".join(doc_tokens[start_position:(end_position + 1)])
        cleaned_answer_text = " ".join(whitespace_tokenize(orig_answer_text))
        if actual_text.find(cleaned_answer_text) == -1:
            logging.warning("Could not find answer: '%s' vs. '%s'",
                            actual_text, cleaned_answer_text)
            return None
    else:
        start_position = -1
        end_position = -1
        orig_answer_text = ""
    return orig_answer_text, start_position, end_position, is_impossible


def read_squad_examples(input_file: str, is_training: bool,
                        version_2_with_negative: bool = False) -> List[SquadExample]:
    """Reads a SQuAD JSON file into :class:`SquadExample` s (original ``read_squad_examples``).

    Args:
      input_file: path of a SQuAD 1.1/2.0 JSON file, gzip-compressed if it ends in ``.gz`` (``{"data": [{"paragraphs": [{"context",
        "qas": [{"id", "question", "answers": [{"text", "answer_start"}], "is_impossible"}]}]}]}``).
      is_training: read answers (exactly one per answerable question) and, with
        ``version_2_with_negative``, ``is_impossible``.
      version_2_with_negative: SQuAD 2.0 (the original read the flag of that name).

    Returns:
      The examples in file order. In training, an answer whose whitespace-normalised text is not
      found in the words it spans is logged ("Could not find answer") and the question dropped;
      the number dropped is logged at the end.

    Raises:
      InputDataError: the file is missing or not JSON, a key is missing, a training question
        does not have exactly one answer, an answer is empty or its offset lies outside the
        context (names the file, the qas id and its position).
    """
    input_json = load_squad_json(input_file)
    input_data = require_field(input_json, "data", list, input_file, "the top level")
    examples: List[SquadExample] = []
    num_questions = 0
    num_skipped = 0
    for a, entry in enumerate(input_data):
        paragraphs = require_field(entry, "paragraphs", list, input_file, f"data[{a}]")
        if not paragraphs:
            logging.warning("%s: data[%d] (title %r) has an empty 'paragraphs' list; skipped",
                            input_file, a, entry.get("title"))
        for p, paragraph in enumerate(paragraphs):
            where_p = f"data[{a}].paragraphs[{p}]"
            paragraph_text = require_field(paragraph, "context", str, input_file, where_p)
            qas = require_field(paragraph, "qas", list, input_file, where_p)
            if not qas:
                logging.warning("%s: %s has no questions; skipped", input_file, where_p)
            doc_tokens, char_to_word_offset = split_context(paragraph_text)

            for q, qa in enumerate(qas):
                where = f"{where_p}.qas[{q}]"
                qas_id = require_field(qa, "id", (str, int), input_file, where)
                where = f"{where} (id {qas_id})"
                question_text = require_field(qa, "question", str, input_file, where)
                num_questions += 1
                start_position = None
                end_position = None
                orig_answer_text = None
                is_impossible = False
                if is_training:
                    answer = read_training_answer(qa, where, input_file, paragraph_text,
                                                  doc_tokens, char_to_word_offset,
                                                  version_2_with_negative)
                    if answer is None:
                        num_skipped += 1
                        continue
                    orig_answer_text, start_position, end_position, is_impossible = answer

                examples.append(SquadExample(
                    qas_id=qas_id,
                    question_text=question_text,
                    doc_tokens=doc_tokens,
                    orig_answer_text=orig_answer_text,
                    start_position=start_position,
                    end_position=end_position,
                    is_impossible=is_impossible))
    if not is_training:
        check_unique_question_ids([ex.qas_id for ex in examples], input_file)
    if num_skipped:
        logging.warning("%s: skipped %d of %d questions whose answer could not be found in the "
                        "context", input_file, num_skipped, num_questions)
    if num_questions == 0:
        logging.warning("%s: the file holds no question", input_file)
    return examples


def check_unique_question_ids(qas_ids: Sequence, input_file: str) -> None:
    """Raises InputDataError (naming the file, the id and its count) when two questions of a
    predict file share an ``id`` (str or int; 1 and "1" collide as JSON keys): the predictions
    and metrics are keyed by it, the original silently kept one (bert_tf: an error)."""
    counts = collections.Counter(str(qas_id) for qas_id in qas_ids)
    for qas_id in qas_ids:
        if counts[str(qas_id)] > 1:
            raise InputDataError(
                f"{input_file}: question id {qas_id!r} occurs {counts[str(qas_id)]} times; "
                "predictions and metrics are keyed by id, so every question needs its own")


def check_squad_layout(input_json, input_file: str) -> List[Mapping]:
    """Checks the nesting of a parsed SQuAD JSON file (the SQuAD v1.1 / v2.0 layout the
    original ``read_squad_examples`` walks: ``data`` -> ``paragraphs`` -> ``context`` + ``qas``
    -> question objects) and returns its ``data`` list. bert_tf: the original failed with a
    ``TypeError`` / ``AttributeError`` trace on a file of another shape.

    Raises:
      InputDataError: the first place that has another type or lacks a key (names the file and
        the place, e.g. ``data[0].paragraphs[2]``).
    """
    input_data = require_field(input_json, "data", list, input_file, "the top level")
    for a, entry in enumerate(input_data):
        paragraphs = require_field(entry, "paragraphs", list, input_file, f"data[{a}]")
        for p, paragraph in enumerate(paragraphs):
            where_p = f"data[{a}].paragraphs[{p}]"
            require_field(paragraph, "context", str, input_file, where_p)
            for q, qa in enumerate(require_field(paragraph, "qas", list, input_file, where_p)):
                if not isinstance(qa, Mapping):
                    raise InputDataError(f"{input_file}: {where_p}.qas[{q}] is a "
                                         f"{type(qa).__name__}, expected an object")
    return input_data


def require_field(obj, key: str, kinds, input_file: str, where: str):
    """``obj[key]`` checked for presence and type; InputDataError naming file and place otherwise."""
    if not isinstance(obj, Mapping):
        raise InputDataError(f"{input_file}: {where} is a {type(obj).__name__}, expected an object")
    if key not in obj:
        raise InputDataError(f"{input_file}: {where} has no key {key!r}")
    value = obj[key]
    if not isinstance(value, kinds) or (kinds is int and isinstance(value, bool)):
        names = kinds.__name__ if isinstance(kinds, type) else "/".join(k.__name__ for k in kinds)
        raise InputDataError(f"{input_file}: {where}: {key!r} is a {type(value).__name__}, "
                             f"expected {names}")
    return value


def check_feature_flags(max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
    """Validates the window sizes before conversion (spec 9.1 check 5, plus bert_tf checks).

    Raises:
      FlagError: ``max_seq_length <= max_query_length + 3`` (no room for the context: the
        original looped forever), ``doc_stride < 1`` (the original looped forever),
        ``doc_stride > max_seq_length - max_query_length - 3`` (the stride is longer than the
        document window left by a query of ``max_query_length`` pieces, so the pieces
        between two windows would never be seen; this covers ``doc_stride >=
        max_seq_length``), or ``max_query_length < 1``.
    """
    if max_query_length < 1:
        raise FlagError(f"--max_query_length={max_query_length} must be at least 1")
    if max_seq_length - max_query_length - 3 <= 0:
        raise FlagError(
            f"--max_seq_length={max_seq_length} must be greater than --max_query_length="
            f"{max_query_length} + 3, to leave room for the context ([CLS] and two [SEP])")
    if doc_stride < 1:
        raise FlagError(f"--doc_stride={doc_stride} must be at least 1")
    window = max_seq_length - max_query_length - 3  # original max_tokens_for_doc, worst case
    if doc_stride > window:
        raise FlagError(
            f"--doc_stride={doc_stride} is longer than the document window of {window} "
            f"pieces (--max_seq_length={max_seq_length} - --max_query_length="
            f"{max_query_length} - 3 for [CLS] and two [SEP]): the {doc_stride - window} "
            f"pieces between two windows would never be seen; pass --doc_stride <= {window}")


def _improve_answer_span(doc_tokens: Sequence[str], input_start: int, input_end: int,
                         tokenizer, orig_answer_text: str) -> Tuple[int, int]:
    """Tightens a sub-token answer span to the tokenized answer (original ``_improve_answer_span``).

    Scans start upward and end downward (end >= start) for the first span whose space-joined
    pieces equal the space-joined ``tokenizer.tokenize(orig_answer_text)``; keeps the input
    span when none matches. E.g. answer "1895" in "(1895-1943)." -> only the "1895" piece.
    """
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start:(new_end + 1)])
            if text_span == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def check_is_max_context(doc_spans: Sequence[DocSpan], cur_span_index: int, position: int) -> bool:
    """Whether span ``cur_span_index`` is the max-context span for piece ``position``.

    Score of a span holding the piece = min(left context, right context) + 0.01 * span length;
    the best is the first span with the strictly highest score (original
    ``_check_is_max_context``).
    """
    best_score = None
    best_span_index = None
    for span_index, doc_span in enumerate(doc_spans):
        end = doc_span.start + doc_span.length - 1
        if position < doc_span.start:
            continue
        if position > end:
            continue
        num_left_context = position - doc_span.start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


_check_is_max_context = check_is_max_context  # the original's name


def make_doc_spans(num_doc_tokens: int, max_tokens_for_doc: int, doc_stride: int) -> List[DocSpan]:
    """Sliding windows over ``num_doc_tokens`` pieces (original loop in ``convert_examples_to_features``).

    Each window has ``min(remaining, max_tokens_for_doc)`` pieces; the next starts
    ``min(length, doc_stride)`` later; stops once a window reaches the end. No pieces -> [].
    """
    doc_spans = []
    start_offset = 0
    while start_offset < num_doc_tokens:
        length = min(num_doc_tokens - start_offset, max_tokens_for_doc)
        doc_spans.append(DocSpan(start=start_offset, length=length))
        if start_offset + length == num_doc_tokens:
            break
        start_offset += min(length, doc_stride)
    return doc_spans


def tokenize_document(doc_tokens: Sequence[str], tokenizer
                      ) -> Tuple[List[str], List[int], List[int]]:
    """The word pieces of a context's words (the first loop of the original
    ``convert_examples_to_features``).

    Returns:
      ``(all_doc_tokens, tok_to_orig_index, orig_to_tok_index)``: the pieces, the word of each
      piece, and the first piece of each word (lists of int).
    """
    tok_to_orig_index = []
    orig_to_tok_index = []
    all_doc_tokens = []
    for i, token in enumerate(doc_tokens):
        orig_to_tok_index.append(len(all_doc_tokens))
        for sub_token in tokenizer.tokenize(token):
            tok_to_orig_index.append(i)
            all_doc_tokens.append(sub_token)
    return all_doc_tokens, tok_to_orig_index, orig_to_tok_index


def answer_piece_span(example: SquadExample, all_doc_tokens: Sequence[str],
                      orig_to_tok_index: Sequence[int], tokenizer, is_training: bool
                      ) -> Tuple[Optional[int], Optional[int]]:
    """The answer's first and last piece in the context (original
    ``convert_examples_to_features``): ``(None, None)`` outside training, ``(-1, -1)`` for an
    impossible question, else the word span mapped onto pieces and tightened by
    :func:`_improve_answer_span`.

    Raises:
      InputDataError: a training example lacks its answer positions.
    """
    tok_start_position = None
    tok_end_position = None
    if is_training and example.is_impossible:
        tok_start_position = -1
        tok_end_position = -1
    if is_training and not example.is_impossible:
        if example.start_position is None or example.end_position is None:
            raise InputDataError(f"question {example.qas_id}: a training example needs "
                                 "start_position and end_position (read it with is_training=True)")
        tok_start_position = orig_to_tok_index[example.start_position]
        if example.end_position < len(example.doc_tokens) - 1:
            tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
        else:
            tok_end_position = len(all_doc_tokens) - 1
        tok_start_position, tok_end_position = _improve_answer_span(
            all_doc_tokens, tok_start_position, tok_end_position, tokenizer,
            example.orig_answer_text)
    return tok_start_position, tok_end_position


def window_tokens(query_tokens: Sequence[str], all_doc_tokens: Sequence[str],
                  tok_to_orig_index: Sequence[int], doc_spans: Sequence[DocSpan],
                  doc_span_index: int
                  ) -> Tuple[List[str], List[int], Dict[int, int], Dict[int, bool]]:
    """``[CLS] question [SEP] window [SEP]`` of one window (original
    ``convert_examples_to_features``).

    Returns:
      ``(tokens, segment_ids, token_to_orig_map, token_is_max_context)``: the pieces, their
      segment ids (0 up to the first [SEP], 1 after), and for each window position (its index in
      ``tokens``) its context word and whether this window is its max-context window
      (:func:`check_is_max_context`). Not padded.
    """
    doc_span = doc_spans[doc_span_index]
    tokens = ["[CLS]"]
    segment_ids = [0]
    token_to_orig_map = {}
    token_is_max_context = {}
    for token in query_tokens:
        tokens.append(token)
        segment_ids.append(0)
    tokens.append("[SEP]")
    segment_ids.append(0)

    for i in range(doc_span.length):
        split_token_index = doc_span.start + i
        token_to_orig_map[len(tokens)] = tok_to_orig_index[split_token_index]
        token_is_max_context[len(tokens)] = check_is_max_context(
            doc_spans, doc_span_index, split_token_index)
        tokens.append(all_doc_tokens[split_token_index])
        segment_ids.append(1)
    tokens.append("[SEP]")
    segment_ids.append(1)
    return tokens, segment_ids, token_to_orig_map, token_is_max_context


def window_answer_positions(example: SquadExample, doc_span: DocSpan,
                            tok_start_position: Optional[int], tok_end_position: Optional[int],
                            num_query_tokens: int, is_training: bool
                            ) -> Tuple[Optional[int], Optional[int]]:
    """The ``start_position``/``end_position`` labels of one window (original
    ``convert_examples_to_features``): None outside training; the answer's positions in the
    window's ``tokens`` when it lies fully inside the window, else 0/0 ([CLS]); 0/0 for an
    impossible question."""
    start_position = None
    end_position = None
    if is_training and not example.is_impossible:
        # An answer not fully inside this window is labelled with [CLS] (0/0): the
        # window is kept, in v1.1 too.
        doc_start = doc_span.start
        doc_end = doc_span.start + doc_span.length - 1
        if tok_start_position >= doc_start and tok_end_position <= doc_end:
            doc_offset = num_query_tokens + 2
            start_position = tok_start_position - doc_start + doc_offset
            end_position = tok_end_position - doc_start + doc_offset
        else:
            start_position = 0
            end_position = 0
    if is_training and example.is_impossible:
        start_position = 0
        end_position = 0
    return start_position, end_position


def convert_examples_to_features(examples: Sequence[SquadExample], tokenizer, max_seq_length: int,
                                 doc_stride: int, max_query_length: int, is_training: bool,
                                 output_fn: Callable[[InputFeatures], None]) -> int:
    """Turns examples into doc-span features (original ``convert_examples_to_features``).

    Args:
      examples: from :func:`read_squad_examples` with the same ``is_training``.
      tokenizer: a ``FullTokenizer`` (``tokenize``, ``convert_tokens_to_ids``).
      max_seq_length: total tokens per feature (padded with 0).
      doc_stride: offset between windows (capped at the window length).
      max_query_length: question pieces kept (the first ones).
      is_training: compute ``start_position``/``end_position`` labels.
      output_fn: called with each :class:`InputFeatures`, in order.

    Returns:
      The number of features made (the next ``unique_id`` minus 1000000000).

    Raises:
      FlagError: see :func:`check_feature_flags`.
      InputDataError: a training example lacks its answer positions.
    """
    check_feature_flags(max_seq_length, doc_stride, max_query_length)
    unique_id = UNIQUE_ID_START

    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)
        if len(query_tokens) > max_query_length:
            query_tokens = query_tokens[0:max_query_length]

        all_doc_tokens, tok_to_orig_index, orig_to_tok_index = tokenize_document(
            example.doc_tokens, tokenizer)
        tok_start_position, tok_end_position = answer_piece_span(
            example, all_doc_tokens, orig_to_tok_index, tokenizer, is_training)

        # [CLS], [SEP] and [SEP] take 3 positions.
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        doc_spans = make_doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)

        for doc_span_index, doc_span in enumerate(doc_spans):
            tokens, segment_ids, token_to_orig_map, token_is_max_context = window_tokens(
                query_tokens, all_doc_tokens, tok_to_orig_index, doc_spans, doc_span_index)

            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids = list(input_ids) + [0] * padding
            input_mask += [0] * padding
            segment_ids += [0] * padding

            start_position, end_position = window_answer_positions(
                example, doc_span, tok_start_position, tok_end_position, len(query_tokens),
                is_training)

            if example_index < 20:
                _log_feature(unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
                             token_is_max_context, start_position, end_position, is_training,
                             example.is_impossible)

            output_fn(InputFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=doc_span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=example.is_impossible))
            unique_id += 1
    return unique_id - UNIQUE_ID_START


def _log_feature(unique_id, example_index, doc_span_index, tokens, token_to_orig_map,
                 token_is_max_context, start_position, end_position, is_training, is_impossible):
    if not logging.vlog_is_on(1):
        return
    logging.vlog(1, "*** Example ***")
    logging.vlog(1, "unique_id: %s", unique_id)
    logging.vlog(1, "example_index: %s", example_index)
    logging.vlog(1, "doc_span_index: %s", doc_span_index)
    logging.vlog(1, "tokens: %s", " ".join(tokens))
    logging.vlog(1, "token_to_orig_map: %s",
                 " ".join(f"{k}:{v}" for k, v in token_to_orig_map.items()))
    logging.vlog(1, "token_is_max_context: %s",
                 " ".join(f"{k}:{v}" for k, v in token_is_max_context.items()))
    if is_training and is_impossible:
        logging.vlog(1, "impossible example")
    if is_training and not is_impossible:
        answer_text = " ".join(tokens[start_position:(end_position + 1)])
        logging.vlog(1, "start_position: %d end_position: %d answer: %s",
                     start_position, end_position, answer_text)


def tfrecord_int_lengths(max_seq_length: int, is_training: bool) -> Dict[str, int]:
    """Name -> length of the int64 features the original input_fn reads (spec 9.3).

    ``unique_ids`` [1], ``input_ids``, ``input_mask``, ``segment_ids`` [max_seq_length], and in
    training ``start_positions``, ``end_positions`` [1] (``is_impossible`` is written but never
    read). Use with :func:`bert_tf.data.tfrecord.fixed_len_schema`.
    """
    lengths = collections.OrderedDict(
        [("unique_ids", 1), ("input_ids", max_seq_length), ("input_mask", max_seq_length),
         ("segment_ids", max_seq_length)])
    if is_training:
        lengths["start_positions"] = 1
        lengths["end_positions"] = 1
    return lengths


class FeatureWriter(CommitOnExit):
    """Writes :class:`InputFeatures` to a TFRecord file (original ``FeatureWriter``).

    All features are int64 lists: ``unique_ids`` [1], ``input_ids``, ``input_mask``,
    ``segment_ids`` [max_seq_length]; with ``is_training`` also ``start_positions`` [1],
    ``end_positions`` [1] and ``is_impossible`` [1] (0/1). The file is written atomically: it
    appears at ``filename`` on :meth:`close` (or on leaving a ``with`` block without error).
    Pass :meth:`process_feature` as ``output_fn`` of :func:`convert_examples_to_features`.
    """

    def __init__(self, filename: str, is_training: bool):
        from bert_tf.data import tfrecord  # TensorFlow only when writing records.

        self._tfrecord = tfrecord
        self.filename = filename
        self.is_training = is_training
        self.num_features = 0
        self._writer = tfrecord.AtomicTFRecordWriter(filename)

    def process_feature(self, feature: InputFeatures) -> None:
        """Serialises one feature and appends it to the file."""
        self.num_features += 1
        int_features = collections.OrderedDict()
        int_features["unique_ids"] = [feature.unique_id]
        int_features["input_ids"] = feature.input_ids
        int_features["input_mask"] = feature.input_mask
        int_features["segment_ids"] = feature.segment_ids
        if self.is_training:
            int_features["start_positions"] = [feature.start_position]
            int_features["end_positions"] = [feature.end_position]
            int_features["is_impossible"] = [1 if feature.is_impossible else 0]
        self._writer.write(self._tfrecord.make_example(int_features))

    def close(self) -> None:
        """Finishes the file (renames the temporary file to ``filename``)."""
        self._writer.close()

    def abort(self) -> None:
        """Drops the temporary file; ``filename`` is left as it was."""
        self._writer.abort()


# Post-processing, re-exported under the original module's names.
from bert_tf.data.squad_postprocess import (  # noqa: E402  pylint: disable=wrong-import-position
    RawResult, SquadPredictions, compute_predictions, get_final_text, write_predictions)
