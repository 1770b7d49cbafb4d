"""ALBERT SQuAD v1.1 / v2.0 features (the original google-research/albert ``squad_utils.py``,
b772393: ``read_squad_examples``, ``convert_examples_to_features``, ``FeatureWriter``).

ALBERT tokenizes as XLNet's run_squad does and lays the window out as BERT's:

* the question is ``encode_ids(sp, preprocess_text(question, lower=do_lower_case))`` cut to
  ``max_query_length``; the paragraph is ALBERT's ``encode_pieces`` of the preprocessed text
  (its digit-comma rule, golden README ``albert`` surprise 3), aligned to the raw characters
  by XLNet's banded LCS (:func:`bert_tf.xlnet.data.squad.align_text`): every piece has a first
  and last character in ``paragraph_text``, answers are character spans;
* the window is ``[CLS] Q [SEP] P-span [SEP]`` then zero padding, ``[CLS]``/``[SEP]`` the ids
  ``sp.PieceToId("[CLS]")`` / ``sp.PieceToId("[SEP]")`` (ALBERT's 30k model has them; a model
  without them, as the XLNet one the tests use, gives 0 = ``<unk>``, as the original);
  ``segment_ids`` 0 for ``[CLS] Q [SEP]``, 1 for ``P [SEP]``, 0 for padding; ``input_mask``
  1 real / 0 pad; ``p_mask`` 0 for ``[CLS]`` and the paragraph pieces, 1 elsewhere (also
  padding);
* training labels are window positions (query length + 2 + piece offset); an impossible
  question or an answer outside the window labels position 0 (``[CLS]``) and the window
  impossible;
* ``paragraph_len`` is the real length of the whole window (the original stores
  ``len(tokens)`` there, not the paragraph's length; nothing reads it).

Records (``FeatureWriter``): every field int64: ``unique_ids``, ``input_ids``, ``input_mask``,
``segment_ids``, ``p_mask`` (+ ``start_positions``, ``end_positions``, ``is_impossible`` in
training); v1 reads no ``p_mask``.
"""

from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from bert_tf.data.squad import UNIQUE_ID_START, check_is_max_context, make_doc_spans
from bert_tf.xlnet.data import squad as xlnet_squad
from bert_tf.xlnet.data.squad import XLNetSquadExample, align_text
from bert_tf.albert.tokenization import encode_ids, encode_pieces, preprocess_text

__all__ = ["AlbertSquadFeatures", "SquadExample", "convert_examples_to_features",
           "feature_record", "read_squad_examples", "record_schema", "write_feature_records"]

# The original reader is XLNet's, field for field (qas_id, question_text, paragraph_text,
# orig_answer_text, start_position in characters, is_impossible read in training only).
SquadExample = XLNetSquadExample


def read_squad_examples(input_file: str, is_training: bool) -> List[SquadExample]:
    """Reads a SQuAD JSON file (original ALBERT ``read_squad_examples``, the same as XLNet's).

    Raises:
      InputDataError: unreadable JSON, missing keys, a training question that is not
        impossible and has not exactly one answer, an answer outside its context (each
        naming the file and question).
    """
    return xlnet_squad.read_squad_examples(input_file, is_training)


@dataclass
class AlbertSquadFeatures:
    """One window (original ALBERT ``InputFeatures``); int lists of ``max_seq_length`` unless
    noted.

    Attributes:
      tok_start_to_orig_index, tok_end_to_orig_index: per paragraph piece of the window: its
        first / last character in ``paragraph_text``.
      token_is_max_context: WINDOW position (query length + 2 + i) -> max-context flag.
      tokens: ``sp.IdToPiece`` of the real ids (the original's ``tokens``).
      example_index: None for training features (as the original).
      start_position, end_position: training labels (window positions, 0 when impossible);
        None for prediction.
    """

    unique_id: int
    example_index: Optional[int]
    doc_span_index: int
    tok_start_to_orig_index: List[int]
    tok_end_to_orig_index: List[int]
    token_is_max_context: Dict[int, bool]
    tokens: List[str]
    input_ids: List[int]
    input_mask: List[int]
    segment_ids: List[int]
    paragraph_len: int
    p_mask: List[int]
    start_position: Optional[int] = None
    end_position: Optional[int] = None
    is_impossible: bool = False

    @property
    def doc_offset(self) -> int:
        """Window position of the first paragraph piece (the original's
        ``tokens.index("[SEP]") + 1``; computed from the layout here, so that a model without
        a ``[SEP]`` piece works)."""
        return self.paragraph_len - 1 - len(self.tok_start_to_orig_index)


def convert_examples_to_features(examples: Sequence[SquadExample], sp_model,
                                 max_seq_length: int, doc_stride: int, max_query_length: int,
                                 is_training: bool, do_lower_case: bool,
                                 on_mismatch: Optional[Callable[[SquadExample], None]] = None
                                 ) -> Iterator[AlbertSquadFeatures]:
    """Windows of every example (original ALBERT ``convert_examples_to_features``; layout in
    the module docstring), ``unique_id`` from 1000000000 in order.

    Args:
      sp_model: the loaded SentencePiece model (``FullTokenizer.sp_model``).
      on_mismatch: called for an example whose paragraph cannot be aligned (the original
        logs "MISMATCH DETECTED!" and skips it; so do we, after the call).
    """
    cls_id, sep_id = sp_model.PieceToId("[CLS]"), sp_model.PieceToId("[SEP]")
    unique_id = UNIQUE_ID_START
    for example_index, example in enumerate(examples):
        query = encode_ids(sp_model, preprocess_text(example.question_text, lower=do_lower_case))
        query = query[:max_query_length]
        pieces = encode_pieces(sp_model, preprocess_text(example.paragraph_text,
                                                         lower=do_lower_case))
        alignment = align_text(pieces, example.paragraph_text, do_lower_case)
        if alignment is None:
            if on_mismatch is not None:
                on_mismatch(example)
            continue
        tok_start = tok_end = None
        if is_training and example.is_impossible:
            tok_start = tok_end = 0
        elif is_training:
            tok_start, tok_end = xlnet_squad.answer_piece_span(alignment, example)
        doc_ids = [sp_model.PieceToId(p) for p in alignment.pieces]
        doc_spans = make_doc_spans(len(doc_ids), max_seq_length - len(query) - 3, doc_stride)
        doc_offset = len(query) + 2
        for doc_span_index, span in enumerate(doc_spans):
            positions = range(span.start, span.start + span.length)
            ids = [cls_id] + query + [sep_id] + [doc_ids[p] for p in positions] + [sep_id]
            segment_ids = [0] * doc_offset + [1] * (span.length + 1)
            p_mask = [0] + [1] * (len(query) + 1) + [0] * span.length + [1]
            pad = max_seq_length - len(ids)
            feature = AlbertSquadFeatures(
                unique_id=unique_id, example_index=None if is_training else example_index,
                doc_span_index=doc_span_index,
                tok_start_to_orig_index=[alignment.tok_start_to_orig_index[p] for p in positions],
                tok_end_to_orig_index=[alignment.tok_end_to_orig_index[p] for p in positions],
                token_is_max_context={doc_offset + i: check_is_max_context(
                    doc_spans, doc_span_index, p) for i, p in enumerate(positions)},
                tokens=[sp_model.IdToPiece(i) for i in ids],
                input_ids=ids + [0] * pad, input_mask=[1] * len(ids) + [0] * pad,
                segment_ids=segment_ids + [0] * pad, paragraph_len=len(ids),
                p_mask=p_mask + [1] * pad, is_impossible=example.is_impossible)
            if is_training:
                doc_end = span.start + span.length - 1
                if example.is_impossible or not (span.start <= tok_start and tok_end <= doc_end):
                    feature.start_position = feature.end_position = 0
                    feature.is_impossible = True
                else:
                    feature.start_position = tok_start - span.start + doc_offset
                    feature.end_position = tok_end - span.start + doc_offset
            yield feature
            unique_id += 1


def feature_record(feature: AlbertSquadFeatures, is_training: bool) -> Dict[str, List[int]]:
    """The int64 lists of the original ``FeatureWriter.process_feature``."""
    ints = {"unique_ids": [feature.unique_id], "input_ids": feature.input_ids,
            "input_mask": feature.input_mask, "segment_ids": feature.segment_ids,
            "p_mask": feature.p_mask}
    if is_training:
        ints["start_positions"] = [feature.start_position]
        ints["end_positions"] = [feature.end_position]
        ints["is_impossible"] = [1 if feature.is_impossible else 0]
    return ints


def write_feature_records(features, path: str, is_training: bool) -> int:
    """Writes the features as the original's TFRecord, atomically; returns the count."""
    from bert_tf.data.tfrecord import AtomicTFRecordWriter, make_example

    with AtomicTFRecordWriter(path) as writer:
        for feature in features:
            writer.write(make_example(feature_record(feature, is_training)))
        return writer.count


def record_schema(max_seq_length: int, is_training: bool):
    """Parse schema of those records (the original ``input_fn_builder``, with ``p_mask``)."""
    import tensorflow as tf

    schema = {"unique_ids": tf.io.FixedLenFeature([], tf.int64),
              "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
              "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
              "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
              "p_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64)}
    if is_training:
        schema.update(start_positions=tf.io.FixedLenFeature([], tf.int64),
                      end_positions=tf.io.FixedLenFeature([], tf.int64),
                      is_impossible=tf.io.FixedLenFeature([], tf.int64))
    return schema
