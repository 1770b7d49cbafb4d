"""XLNet SQuAD 2.0 examples and features (the original XLNet ``run_squad.py``, spec ``xlnet.md``
9.2-9.4).

Unlike BERT's whitespace words, XLNet aligns its SentencePiece pieces to the raw paragraph
characters with a banded longest-common-subsequence (:func:`align_pieces`), so every piece has
a first and last character in ``paragraph_text`` and answers are character spans.

Window layout (spec 5.6): ``P-span <sep> Q <sep> <cls>`` then right padding; segment ids 0 (P
and its ``<sep>``), 1 (Q and its ``<sep>``), 2 (``<cls>``), 3 (padding); ``input_mask`` 0 real /
1 pad; ``p_mask`` 0 for paragraph pieces and ``<cls>``, 1 elsewhere.
"""

import functools
import json
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from bert_tf.data.squad import (UNIQUE_ID_START, check_is_max_context, check_squad_layout,
                                check_unique_question_ids, make_doc_spans, require_field)
from bert_tf.errors import InputDataError
from bert_tf.tokenization.sentencepiece_prepro import (CLS_ID, SEP_ID, SPIECE_UNDERLINE,
                                                       encode_ids, encode_pieces,
                                                       preprocess_text)

SEG_ID_P, SEG_ID_Q, SEG_ID_CLS, SEG_ID_PAD = 0, 1, 2, 3


@dataclass
class XLNetSquadExample:
    """One question (original XLNet ``SquadExample``).

    Attributes:
      qas_id, question_text, paragraph_text: as in the JSON.
      orig_answer_text: training only ("" when impossible); None otherwise.
      start_position: training only: the answer's first **character** in ``paragraph_text``
        (-1 when impossible); None otherwise.
      is_impossible: training only (the predict reader never reads it: always False there).
    """

    qas_id: str
    question_text: str
    paragraph_text: str
    orig_answer_text: Optional[str] = None
    start_position: Optional[int] = None
    is_impossible: bool = False


@dataclass
class XLNetSquadFeatures:
    """One window (original XLNet ``InputFeatures``); int lists of length ``max_seq_length``
    unless noted.

    Attributes:
      tok_start_to_orig_index, tok_end_to_orig_index: per paragraph piece of the window
        (``paragraph_len`` entries): its first / last character in ``paragraph_text``.
      token_is_max_context: window position (0..paragraph_len-1) -> max-context flag.
      input_mask, p_mask: 0/1 ints (the TFRecord stores them as floats).
      example_index: the example's index (None for training features, as the original).
      start_position, end_position: training labels, window-relative (``cls_index`` when the
        answer is not in the window or the question is impossible); None for prediction.
    """

    unique_id: int
    example_index: Optional[int]
    doc_span_index: int
    tok_start_to_orig_index: List[int]
    tok_end_to_orig_index: List[int]
    token_is_max_context: Dict[int, bool]
    input_ids: List[int]
    input_mask: List[int]
    p_mask: List[int]
    segment_ids: List[int]
    paragraph_len: int
    cls_index: int
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: bool = False


def read_squad_examples(input_file: str, is_training: bool) -> List[XLNetSquadExample]:
    """Reads a SQuAD JSON file (original XLNet ``read_squad_examples``, spec 9.2).

    Raises:
      InputDataError: unreadable JSON or missing keys (names the file and question); a training
        question that is not impossible and has not exactly one answer (the original's
        ``ValueError`` message, naming the question).
    """
    import tensorflow as tf

    try:
        with tf.io.gfile.GFile(input_file, "r") as f:
            data = json.load(f)
    except (OSError, ValueError, tf.errors.OpError) as e:
        raise InputDataError(f"{input_file}: not a SQuAD JSON file ({e})") from e
    data = check_squad_layout(data, input_file)
    examples = []
    for a, entry in enumerate(data):
        for p, paragraph in enumerate(_get(entry, "paragraphs", list, input_file, "an article")):
            paragraph_text = _get(paragraph, "context", str, input_file, "a paragraph")
            for q, qa in enumerate(_get(paragraph, "qas", list, input_file, "a paragraph")):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"  # the BERT mode's checks
                qas_id = require_field(qa, "id", (str, int), input_file, where)
                question = require_field(qa, "question", str, input_file, f"{where} (id {qas_id})")
                try:
                    example = XLNetSquadExample(qas_id=qas_id, question_text=question,
                                                paragraph_text=paragraph_text)
                    if is_training:
                        example.is_impossible = qa.get("is_impossible", False)
                        if not isinstance(example.is_impossible, bool):
                            raise InputDataError(  # "false" would be True for bool()
                                f"{input_file}: question {qa['id']}: 'is_impossible' is a "
                                f"{type(example.is_impossible).__name__}, expected bool")
                        if not example.is_impossible and len(qa["answers"]) != 1:
                            raise InputDataError(
                                f"{input_file}: question {qa['id']}: For training, each "
                                "question should have exactly 1 answer.")
                        if example.is_impossible:
                            example.start_position, example.orig_answer_text = -1, ""
                        else:
                            answer = qa["answers"][0]
                            where = f"{where} (id {qas_id}).answers[0]"
                            example.orig_answer_text = require_field(answer, "text", str,
                                                                     input_file, where)
                            example.start_position = require_field(answer, "answer_start", int,
                                                                   input_file, where)
                            start, text = example.start_position, example.orig_answer_text
                            if not text or start < 0 or start + len(text) > len(paragraph_text):
                                raise InputDataError(
                                    f"{input_file}: question {qa['id']}: answer_start {start!r} "
                                    f"with text {text!r} is not inside its context "
                                    f"({len(paragraph_text)} characters)")
                except KeyError as e:
                    raise InputDataError(f"{input_file}: question {qa.get('id', '?')} lacks "
                                         f"{e}") from e
                examples.append(example)
    if not is_training:
        check_unique_question_ids([ex.qas_id for ex in examples], input_file)
    return examples


def _get(obj, key: str, kind, input_file: str, where: str):
    """``obj[key]`` of the given type, else InputDataError naming the file and the place."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind):
        raise InputDataError(f"{input_file}: {where} lacks {key!r} (a {kind.__name__})")
    return value


def convert_index(index: Sequence[Optional[int]], pos: int, M: Optional[int] = None,
                  is_start: bool = True) -> int:
    """Fills a gap of a partial index map from its nearest defined neighbours (original
    ``_convert_index``, spec 9.3)."""
    if index[pos] is not None:
        return index[pos]
    N = len(index)
    rear = pos
    while rear < N - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    if index[front] is None:
        if index[rear] >= 1:
            return 0 if is_start else index[rear] - 1
        return index[rear]
    if index[rear] is None:
        if M is not None and index[front] < M - 1:
            return index[front] + 1 if is_start else M - 1
        return index[front]
    if index[rear] > index[front] + 1:
        return index[front] + 1 if is_start else index[rear] - 1
    return index[rear] if is_start else index[front]


def _lcs_backpointers(raw: Sequence[str], cat: str, max_dist: int) -> Tuple[float, Dict]:
    """The original ``_lcs_match``: banded LCS of ``raw`` (preprocessed characters) and
    ``cat``; returns ``(f[N-1, M-1], backpointers)`` (0 up, 1 left, 2 diagonal match)."""
    N, M = len(raw), len(cat)
    if not N or not M:  # no pieces (a blank context): no match, as the original's zero score
        return 0.0, {}  # (its table is at least 1024 wide, so f[N - 1, -1] reads a 0)
    f = np.zeros((N, M), dtype=np.float32)
    g = {}
    for i in range(N):
        for j in range(max(0, i - max_dist), min(M, i + max_dist)):
            if i > 0:
                g[(i, j)] = 0
                f[i, j] = f[i - 1, j]
            if j > 0 and f[i, j - 1] > f[i, j]:
                g[(i, j)] = 1
                f[i, j] = f[i, j - 1]
            f_prev = f[i - 1, j - 1] if i > 0 and j > 0 else 0
            if raw[i] == cat[j] and f_prev + 1 > f[i, j]:
                g[(i, j)] = 2
                f[i, j] = f_prev + 1
    return float(f[N - 1, M - 1]), g


@dataclass
class Alignment:
    """The pieces of a paragraph and where each sits in the raw text (spec 9.3)."""

    pieces: List[str]
    tok_start_to_orig_index: List[int]
    tok_end_to_orig_index: List[int]
    orig_to_chartok_index: List[Optional[int]]
    chartok_to_tok_index: List[int]


@functools.lru_cache(maxsize=64)
def _align_cached(sp_model, paragraph_text: str, uncased: bool) -> Optional[Alignment]:
    return _align(sp_model, paragraph_text, uncased)


def align_pieces(sp_model, paragraph_text: str, uncased: bool) -> Optional[Alignment]:
    """SentencePiece pieces of the paragraph aligned to its characters (spec 9.3), or None
    where the original prints "MISMATCH DETECTED!" and skips the example. The questions of one
    paragraph share one alignment (cached; the same result as computing it each time)."""
    return _align_cached(sp_model, paragraph_text, uncased)


def _align(sp_model, paragraph_text: str, uncased: bool) -> Optional[Alignment]:
    pieces = encode_pieces(sp_model, preprocess_text(paragraph_text, lower=uncased))
    return align_text(pieces, paragraph_text, uncased)


def align_text(pieces: Sequence[str], paragraph_text: str, uncased: bool
               ) -> Optional[Alignment]:
    """Given pieces of the preprocessed paragraph (``str``, "▁" marking word starts) aligned
    to the raw ``paragraph_text`` characters by the original banded LCS (spec 9.3; also the
    original ALBERT ``squad_utils.convert_examples_to_features``, which tokenizes with its own
    ``encode_pieces``), or None where the original prints "MISMATCH DETECTED!"."""
    pieces = list(pieces)
    chartok_to_tok_index, tok_start_chartok, tok_end_chartok = [], [], []
    char_cnt = 0
    for i, piece in enumerate(pieces):
        chartok_to_tok_index.extend([i] * len(piece))
        tok_start_chartok.append(char_cnt)
        char_cnt += len(piece)
        tok_end_chartok.append(char_cnt - 1)
    cat = "".join(pieces).replace(SPIECE_UNDERLINE, " ")
    N, M = len(paragraph_text), len(cat)
    raw = [_char(c, uncased) for c in paragraph_text]
    max_dist = abs(N - M) + 5
    for _ in range(2):
        score, g = _lcs_backpointers(raw, cat, max_dist)
        if score > 0.8 * N:
            break
        max_dist *= 2
    orig_to_chartok: List[Optional[int]] = [None] * N
    chartok_to_orig: List[Optional[int]] = [None] * M
    i, j = N - 1, M - 1
    while i >= 0 and j >= 0 and (i, j) in g:
        if g[(i, j)] == 2:
            orig_to_chartok[i], chartok_to_orig[j] = j, i
            i, j = i - 1, j - 1
        elif g[(i, j)] == 1:
            j -= 1
        else:
            i -= 1
    if all(v is None for v in orig_to_chartok) or score < 0.8 * N:
        return None
    return Alignment(
        pieces=pieces,
        tok_start_to_orig_index=[convert_index(chartok_to_orig, p, N, is_start=True)
                                 for p in tok_start_chartok],
        tok_end_to_orig_index=[convert_index(chartok_to_orig, p, N, is_start=False)
                               for p in tok_end_chartok],
        orig_to_chartok_index=orig_to_chartok, chartok_to_tok_index=chartok_to_tok_index)


@functools.lru_cache(maxsize=4096)
def _char(c: str, uncased: bool) -> str:
    return preprocess_text(c, lower=uncased, remove_space=False)


def answer_piece_span(alignment: Alignment, example) -> Tuple[int, int]:
    """First and last paragraph piece of a training example's answer (the original's
    ``tok_start_position`` / ``tok_end_position``: the answer's first and last character,
    through ``orig_to_chartok_index`` and :func:`convert_index`, to ``chartok_to_tok_index``).

    Shared by XLNet's and ALBERT's ``convert_examples_to_features`` (same code in both
    originals).

    Args:
      alignment: the paragraph's :class:`Alignment`.
      example: a possible example with ``start_position`` (character offset in
        ``paragraph_text``) and ``orig_answer_text``.

    Returns:
      ``(tok_start, tok_end)``: piece indices, inclusive.
    """
    start_char = example.start_position
    end_char = start_char + len(example.orig_answer_text) - 1
    tok_start = alignment.chartok_to_tok_index[
        convert_index(alignment.orig_to_chartok_index, start_char, is_start=True)]
    tok_end = alignment.chartok_to_tok_index[
        convert_index(alignment.orig_to_chartok_index, end_char, is_start=False)]
    return tok_start, tok_end


def convert_examples_to_features(examples: Sequence[XLNetSquadExample], sp_model,
                                 max_seq_length: int, doc_stride: int, max_query_length: int,
                                 is_training: bool, uncased: bool = False,
                                 on_mismatch: Optional[Callable[[XLNetSquadExample], None]] = None
                                 ) -> Iterator[XLNetSquadFeatures]:
    """Windows of every example (original XLNet ``convert_examples_to_features``, spec 9.4),
    ``unique_id`` from 1000000000 in order.

    Args:
      on_mismatch: called for an example whose paragraph cannot be aligned (the original
        prints "MISMATCH DETECTED!" and skips it; so do we, after the call).
    """
    unique_id = UNIQUE_ID_START
    for example_index, example in enumerate(examples):
        query = encode_ids(sp_model, preprocess_text(example.question_text, lower=uncased))
        query = query[:max_query_length]
        alignment = align_pieces(sp_model, example.paragraph_text, uncased)
        if alignment is None:
            if on_mismatch is not None:
                on_mismatch(example)
            continue
        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = -1
        elif is_training:
            tok_start, tok_end = answer_piece_span(alignment, example)
        doc_ids = [sp_model.PieceToId(p) for p in alignment.pieces]
        doc_spans = make_doc_spans(len(doc_ids), max_seq_length - len(query) - 3, doc_stride)
        for doc_span_index, span in enumerate(doc_spans):
            positions = range(span.start, span.start + span.length)
            input_ids = [doc_ids[p] for p in positions] + [SEP_ID] + query + [SEP_ID, CLS_ID]
            segment_ids = ([SEG_ID_P] * (span.length + 1) + [SEG_ID_Q] * (len(query) + 1)
                           + [SEG_ID_CLS])
            p_mask = [0] * span.length + [1] * (len(query) + 2) + [0]
            cls_index = len(input_ids) - 1
            pad = max_seq_length - len(input_ids)
            feature = XLNetSquadFeatures(
                unique_id=unique_id, example_index=None if is_training else example_index,
                doc_span_index=doc_span_index,
                tok_start_to_orig_index=[alignment.tok_start_to_orig_index[p] for p in positions],
                tok_end_to_orig_index=[alignment.tok_end_to_orig_index[p] for p in positions],
                token_is_max_context={i: check_is_max_context(doc_spans, doc_span_index, p)
                                      for i, p in enumerate(positions)},
                input_ids=input_ids + [0] * pad,
                input_mask=[0] * len(input_ids) + [1] * pad,
                p_mask=p_mask + [1] * pad,
                segment_ids=segment_ids + [SEG_ID_PAD] * pad,
                paragraph_len=span.length, cls_index=cls_index,
                is_impossible=example.is_impossible)
            if is_training:
                doc_end = span.start + span.length - 1
                if example.is_impossible or not (span.start <= tok_start and tok_end <= doc_end):
                    feature.start_position = feature.end_position = cls_index
                    feature.is_impossible = True
                else:
                    feature.start_position = tok_start - span.start
                    feature.end_position = tok_end - span.start
            yield feature
            unique_id += 1


def feature_record(feature: XLNetSquadFeatures, is_training: bool):
    """``(int features, float features)`` of the original ``FeatureWriter.process_feature``:
    ``unique_ids, input_ids, segment_ids, cls_index`` (+ ``start_positions, end_positions``)
    as int64; ``input_mask, p_mask`` (+ ``is_impossible``) as float."""
    ints = {"unique_ids": [feature.unique_id], "input_ids": feature.input_ids,
            "segment_ids": feature.segment_ids, "cls_index": [feature.cls_index]}
    floats = {"input_mask": feature.input_mask, "p_mask": feature.p_mask}
    if is_training:
        ints["start_positions"] = [feature.start_position]
        ints["end_positions"] = [feature.end_position]
        floats["is_impossible"] = [1 if feature.is_impossible else 0]
    return ints, floats


def record_file_names(spm_basename: str, max_seq_length: int, max_query_length: int,
                      proc_id: int = 0) -> Tuple[str, str, str]:
    """``(train tf_record, eval tf_record, eval features pickle)`` names of the original
    (spec 9.4), e.g. ``spiece.model.0.slen-192.qlen-64.train.tf_record``."""
    common = f"slen-{max_seq_length}.qlen-{max_query_length}"
    return (f"{spm_basename}.{proc_id}.{common}.train.tf_record",
            f"{spm_basename}.{common}.eval.tf_record",
            f"{spm_basename}.{common}.eval.features.pkl")


def write_feature_records(features, path: str, is_training: bool) -> int:
    """Writes the features as the original's TFRecord (``FeatureWriter``), atomically; returns
    the count. Int fields are int64 lists, ``input_mask``/``p_mask``/``is_impossible`` float
    lists (:func:`feature_record`)."""
    from bert_tf.data.tfrecord import AtomicTFRecordWriter, make_example

    with AtomicTFRecordWriter(path) as writer:
        for feature in features:
            writer.write(make_example(*feature_record(feature, is_training)))
        return writer.count


def record_schema(max_seq_length: int, is_training: bool):
    """Parse schema of those records (the original ``input_fn_builder``'s ``name_to_features``)."""
    import tensorflow as tf

    schema = {"unique_ids": tf.io.FixedLenFeature([], tf.int64),
              "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
              "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32),
              "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
              "cls_index": tf.io.FixedLenFeature([], tf.int64),
              "p_mask": tf.io.FixedLenFeature([max_seq_length], tf.float32)}
    if is_training:
        schema.update(start_positions=tf.io.FixedLenFeature([], tf.int64),
                      end_positions=tf.io.FixedLenFeature([], tf.int64),
                      is_impossible=tf.io.FixedLenFeature([], tf.float32))
    return schema
