"""Raw text -> masked-LM + next-sentence TFRecords (the original `create_pretraining_data.py`).

Instance-identical to the original: every random decision is taken from ONE
``random.Random(random_seed)`` in the original's exact call order (spec ``bert.md`` 5.3-5.5):

1. ``rng.shuffle`` over the documents;
2. ``dupe_factor`` passes over the documents, each running :func:`create_instances_from_document`
   (``random``/``randint`` for lengths, random-next, truncation; ``shuffle``/``random``/``randint``
   in :func:`create_masked_lm_predictions`);
3. ``rng.shuffle`` over all the instances, then round-robin writing over the output files.

Two entry points:

* The original API, kept for tests and readers: :func:`create_training_instances` (returns all
  :class:`TrainingInstance` s, in memory) and :func:`write_instance_to_example_files`.
* :func:`create_pretraining_data`, used by the root script: the same records, plus parallel
  tokenization (``num_workers`` processes) and bounded memory (documents are held as int32 token
  ids, instances are spilled to a temporary file; see its docstring for the bound).

Reading the corpus into documents (input files, tokenization workers, the compact document
store) is :mod:`bert_tf.data.pretraining_corpus`; this module is the algorithm on top of it.

Pure Python. The root script's path (:func:`create_pretraining_data`) runs the algorithm on
token ids and writes the record bytes itself (:mod:`bert_tf.data.tfrecord_bytes`), so local
files need no TensorFlow import; the original API (:func:`instance_to_example`) builds
``tf.train.Example`` protos and imports TensorFlow when called.
"""

import array
import collections
import contextlib
import mmap
import os
import random
import tempfile
from typing import Iterator, List, MutableSequence, Optional, Sequence, Tuple

from absl import logging

from bert_tf.atomic_files import check_output_path
from bert_tf.data import tfrecord_bytes
from bert_tf.data.pretraining_corpus import (expand_input_patterns, id_to_token_list,
                                             make_worker_pool, read_documents)
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.progress import ProgressReporter

# Tokens the algorithm looks up by name (spec 2.1): [CLS]/[SEP] frame every instance, [MASK]
# replaces 80% of the predicted pieces.
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
REQUIRED_TOKENS = (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

# How many instances are logged in full when written (original: 20).
NUM_LOGGED_INSTANCES = 20
# Worker processes tokenize only from this much local input on (bytes). Measured (issue 16,
# read_documents alone, 2 rounds, 2-core machine under load): 2 workers on 2.4 MB took 1.5x the
# CPU of tokenizing here (1.17 vs 0.79 s: pool start, a tokenizer per worker, pickling) and
# were slower (2.9 vs 1.9 s wall); on 19 MB 1.2x the CPU (6.0 vs 5.0 s), still no faster. They
# can pay off only with idle cores and a large input; the instance loop stays serial either
# way (one rng, the original's order).
MIN_INPUT_BYTES_FOR_WORKERS = 16 * 1024 * 1024
# The order in which the original's records hold their features on the wire. A protobuf map
# has no defined wire order; the original run (TF 2.15.1, protobuf 4.25.9 upb; the golden
# tests/golden/bert/pretraining_data/*.tfrecord) writes the OrderedDict built in
# write_instance_to_example_files (input_ids, input_mask, segment_ids, masked_lm_positions,
# masked_lm_ids, masked_lm_weights, next_sentence_labels) in this order, every record.
# (protobuf 5+ upb hashes with a per-process seed: its SerializeToString order changes from run
# to run, so it cannot give byte-identical files.)
ORIGINAL_WIRE_ORDER = ("masked_lm_ids", "input_ids", "masked_lm_positions",
                       "next_sentence_labels", "input_mask", "masked_lm_weights", "segment_ids")

MaskedLmInstance = collections.namedtuple("MaskedLmInstance", ["index", "label"])


class TrainingInstance:
    """One pretraining example before conversion to ids (original ``TrainingInstance``).

    Attributes:
      tokens: list of str, ``[CLS] A [SEP] B [SEP]`` after masking, at most max_seq_length.
      segment_ids: list of int (0 for [CLS], A and the first [SEP]; 1 for B and the last [SEP]).
      is_random_next: bool, True when B was taken from a random document (NSP label 1).
      masked_lm_positions: list of int, ascending positions of the predicted tokens.
      masked_lm_labels: list of str, the ORIGINAL tokens at those positions.
    """

    def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels, is_random_next):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.masked_lm_positions = masked_lm_positions
        self.masked_lm_labels = masked_lm_labels

    def __str__(self):
        return ("tokens: %s\nsegment_ids: %s\nis_random_next: %s\nmasked_lm_positions: %s\n"
                "masked_lm_labels: %s\n\n" % (
                    " ".join(self.tokens), " ".join(str(x) for x in self.segment_ids),
                    self.is_random_next, " ".join(str(x) for x in self.masked_lm_positions),
                    " ".join(self.masked_lm_labels)))

    def __repr__(self):
        return self.__str__()


# ---------------------------------------------------------------------------------------------
# Instances (spec 5.3-5.5)
# ---------------------------------------------------------------------------------------------

def truncate_seq_pair(tokens_a: MutableSequence, tokens_b: MutableSequence, max_num_tokens: int,
                      rng: random.Random) -> None:
    """Truncates a pair in place to ``max_num_tokens`` in total (original ``truncate_seq_pair``).

    While too long: take the longer list (``tokens_b`` on a tie), and remove its FIRST token if
    ``rng.random() < 0.5``, else its last one (spec 5.4 step c). One draw per removed token.

    The original deletes the first token of a Python list one at a time, which is quadratic in
    the length (a one-line 10 MB document, 2.6 M tokens, ran for minutes, issue 15). Here the
    same draws move two bounds per list and each list is cut once at the end: linear, with the
    same tokens kept and the same ``rng`` state after (so identical records).

    Args:
      tokens_a, tokens_b: lists of tokens, changed in place.
      max_num_tokens: the total length to truncate to.
      rng: the run's ``random.Random``; one ``rng.random()`` per removed token.
    """
    lo_a, hi_a = 0, len(tokens_a)
    lo_b, hi_b = 0, len(tokens_b)
    draw = rng.random
    while (hi_a - lo_a) + (hi_b - lo_b) > max_num_tokens:
        if hi_a - lo_a > hi_b - lo_b:
            if draw() < 0.5:
                lo_a += 1
            else:
                hi_a -= 1
        else:
            assert hi_b - lo_b >= 1
            if draw() < 0.5:
                lo_b += 1
            else:
                hi_b -= 1
    for tokens, lo, hi in ((tokens_a, lo_a, hi_a), (tokens_b, lo_b, hi_b)):
        if hi < len(tokens):
            del tokens[hi:]
        if lo:
            del tokens[:lo]


def masked_token(token: str, vocab_words: Sequence[str], rng: random.Random) -> str:
    """What a predicted piece becomes (spec 5.5; BERT's and ALBERT's original
    ``create_masked_lm_predictions``): 80% ``[MASK]``, 10% ``token`` kept, 10%
    ``vocab_words[randint]`` (any entry); one ``rng.random()``, a second only past the 80%, and
    a ``randint`` only for the last case, as the original draws them."""
    if rng.random() < 0.8:
        return MASK_TOKEN
    if rng.random() < 0.5:
        return token
    return vocab_words[rng.randint(0, len(vocab_words) - 1)]


def create_masked_lm_predictions(tokens: Sequence[str], masked_lm_prob: float,
                                 max_predictions_per_seq: int, vocab_words: Sequence[str],
                                 rng: random.Random, do_whole_word_mask: bool = False
                                 ) -> Tuple[List[str], List[int], List[str]]:
    """Chooses and applies the masked-LM predictions (original ``create_masked_lm_predictions``).

    Candidates are all positions but [CLS]/[SEP]; with ``do_whole_word_mask`` a ``##`` piece
    joins the previous candidate. ``rng.shuffle`` the candidates; predict
    ``min(max_predictions_per_seq, max(1, round(len(tokens) * masked_lm_prob)))`` positions
    (Python 3 ``round``: halves to even), skipping candidates that would overshoot. Each predicted
    piece: 80% ``[MASK]``, 10% kept, 10% ``vocab_words[randint]`` (any entry). Spec 5.5.

    Args:
      tokens: ``[CLS] A [SEP] B [SEP]`` token strings.
      vocab_words: the vocab's tokens in file order (``list(tokenizer.vocab.keys())``).

    Returns:
      ``(output_tokens, masked_lm_positions, masked_lm_labels)``: the masked copy of ``tokens``,
      ascending positions, and the original tokens at those positions.
    """
    cand_indexes = []
    for (i, token) in enumerate(tokens):
        if token == CLS_TOKEN or token == SEP_TOKEN:
            continue
        if do_whole_word_mask and cand_indexes and token.startswith("##"):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)
    output_tokens = list(tokens)
    num_to_predict = min(max_predictions_per_seq,
                         max(1, int(round(len(tokens) * masked_lm_prob))))

    masked_lms = []
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        # Skip a whole word that would exceed the maximum number of predictions.
        if len(masked_lms) + len(index_set) > num_to_predict:
            continue
        if any(index in covered_indexes for index in index_set):
            continue
        for index in index_set:
            covered_indexes.add(index)
            output_tokens[index] = masked_token(tokens[index], vocab_words, rng)
            masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict
    masked_lms.sort(key=lambda x: x.index)
    return (output_tokens, [p.index for p in masked_lms], [p.label for p in masked_lms])


def iter_sequence_pairs(all_documents: Sequence, document_index: int, max_seq_length: int,
                        short_seq_prob: float, rng: random.Random,
                        sentence_order: bool = False, cls_token=CLS_TOKEN, sep_token=SEP_TOKEN
                        ) -> Iterator[Tuple[List[str], List[int], bool]]:
    """The ``[CLS] A [SEP] B [SEP]`` pairs of one document, in order (the chunking loop of the
    original ``create_instances_from_document``, BERT's and ALBERT's).

    Spec 5.4: one ``target_seq_length`` per document and pass (``short_seq_prob``); segments are
    gathered into a chunk until it reaches the target; the chunk is split at a random ``a_end``;
    B is segments of a random other document (always for a one-segment chunk, which makes no
    draw; then the unused segments are put back), or the rest of the chunk; then
    :func:`truncate_seq_pair` to ``max_seq_length - 3``.

    A generator: the caller masks each pair (drawing from ``rng``) before the next one is cut,
    so the draws keep the original's order.

    Args:
      all_documents: sequence of documents; a document is a sequence of segments, a segment a
        list of token strings (a list of lists, or a :class:`DocumentStore`).
      document_index: the document to cut into pairs.
      sentence_order: False: BERT's next sentence (B random with probability 0.5); True:
        ALBERT's sentence order (``not random_next_sentence``: A and B swapped with
        probability 0.5, label True). Each ``rng.random()`` is drawn only where the original's
        short-circuit draws it.
      cls_token, sep_token: what frames the pair: the strings, or their ids when the segments
        hold token ids (:meth:`DocumentStore.as_ids`).

    Yields:
      ``(tokens, segment_ids, is_random_next)``: the token strings with [CLS] and the two
      [SEP], their segment ids (0 up to the first [SEP], then 1), and the label.
    """
    document = all_documents[document_index]
    max_num_tokens = max_seq_length - 3  # room for [CLS], [SEP], [SEP]

    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])

                tokens_b = []
                if len(current_chunk) == 1 or (not sentence_order and rng.random() < 0.5):
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    # After 10 tries the last draw is used, even if it is this document.
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    # Put the unused segments back so they are not wasted.
                    i -= len(current_chunk) - a_end
                elif sentence_order and rng.random() < 0.5:
                    is_random_next = True
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                    tokens_a, tokens_b = tokens_b, tokens_a
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                assert len(tokens_a) >= 1
                assert len(tokens_b) >= 1

                tokens = [cls_token] + tokens_a + [sep_token] + tokens_b + [sep_token]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                yield tokens, segment_ids, is_random_next
            current_chunk = []
            current_length = 0
        i += 1


def create_instances_from_document(all_documents: Sequence, document_index: int,
                                   max_seq_length: int, short_seq_prob: float,
                                   masked_lm_prob: float, max_predictions_per_seq: int,
                                   vocab_words: Sequence[str], rng: random.Random,
                                   do_whole_word_mask: bool = False) -> List[TrainingInstance]:
    """All instances of one document in one pass (original ``create_instances_from_document``).

    Spec 5.4: the pairs of :func:`iter_sequence_pairs` (B random with probability 0.5), each
    masked by :func:`create_masked_lm_predictions` before the next pair is cut.

    Args:
      all_documents: sequence of documents; a document is a sequence of segments, a segment a
        list of token strings (a list of lists, or a :class:`DocumentStore`).
      document_index: the document to cut into instances.

    Returns:
      list of :class:`TrainingInstance`, in order.
    """
    instances = []
    for tokens, segment_ids, is_random_next in iter_sequence_pairs(
            all_documents, document_index, max_seq_length, short_seq_prob, rng):
        (tokens, masked_lm_positions, masked_lm_labels) = create_masked_lm_predictions(
            tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
            do_whole_word_mask=do_whole_word_mask)
        instances.append(TrainingInstance(
            tokens=tokens, segment_ids=segment_ids, is_random_next=is_random_next,
            masked_lm_positions=masked_lm_positions, masked_lm_labels=masked_lm_labels))
    return instances


def iter_training_instances(all_documents: Sequence, vocab_words: Sequence[str],
                            rng: random.Random, max_seq_length: int, dupe_factor: int,
                            short_seq_prob: float, masked_lm_prob: float,
                            max_predictions_per_seq: int, do_whole_word_mask: bool = False
                            ) -> Iterator[TrainingInstance]:
    """Yields the instances of ``dupe_factor`` passes over the (already shuffled) documents.

    This is spec 5.3 step 3, in creation order, BEFORE the final ``rng.shuffle``. Logs
    progress lines over the ``dupe_factor * len(all_documents)`` documents
    (:class:`bert_tf.progress.ProgressReporter`; the original was silent).
    """
    bar = ProgressReporter("create_pretraining_data", dupe_factor * len(all_documents),
                           "documents")
    done = 0
    for _ in range(dupe_factor):
        for document_index in range(len(all_documents)):
            yield from create_instances_from_document(
                all_documents, document_index, max_seq_length, short_seq_prob, masked_lm_prob,
                max_predictions_per_seq, vocab_words, rng, do_whole_word_mask=do_whole_word_mask)
            done += 1
            bar.update(done)
    bar.finish()


def create_training_instances(input_files: Sequence[str], tokenizer, max_seq_length: int,
                              dupe_factor: int, short_seq_prob: float, masked_lm_prob: float,
                              max_predictions_per_seq: int, rng: random.Random,
                              do_whole_word_mask: bool = False, num_workers: int = 1,
                              vocab_file: Optional[str] = None, do_lower_case: bool = True
                              ) -> List[TrainingInstance]:
    """Reads the inputs and returns all shuffled instances (original ``create_training_instances``).

    Spec 5.2-5.3: read documents, ``rng.shuffle`` them, ``dupe_factor`` passes, ``rng.shuffle``
    the instances. Holds every instance in memory, like the original; the root script uses
    :func:`create_pretraining_data` instead. ``num_workers``/``vocab_file``/``do_lower_case``: see
    :func:`read_documents`.
    """
    all_documents = read_documents(input_files, tokenizer, num_workers=num_workers,
                                   vocab_file=vocab_file, do_lower_case=do_lower_case)
    all_documents.shuffle(rng)
    vocab_words = list(tokenizer.vocab.keys())
    instances = list(iter_training_instances(
        all_documents, vocab_words, rng, max_seq_length, dupe_factor, short_seq_prob,
        masked_lm_prob, max_predictions_per_seq, do_whole_word_mask))
    rng.shuffle(instances)
    return instances


# ---------------------------------------------------------------------------------------------
# Output (spec 5.6)
# ---------------------------------------------------------------------------------------------

def instance_to_example(instance: TrainingInstance, vocab, max_seq_length: int,
                        max_predictions_per_seq: int):
    """The ``tf.train.Example`` of one instance (spec 5.6), features in the original order.

    ``input_ids``/``input_mask``/``segment_ids``: int64 [max_seq_length], zero-padded;
    ``masked_lm_positions``/``masked_lm_ids``: int64 [max_predictions_per_seq], zero-padded;
    ``masked_lm_weights``: float [max_predictions_per_seq], 1.0 real / 0.0 padding;
    ``next_sentence_labels``: int64 [1], 1 = random next, 0 = actual next.

    Args:
      vocab: token -> id mapping (``tokenizer.vocab``).

    Returns:
      a ``tf.train.Example`` (TensorFlow is imported here).

    Raises:
      ValueError: the instance is longer than ``max_seq_length`` or has too many predictions.
    """
    import tensorflow as tf

    from bert_tf.data import tfrecord
    input_ids = [vocab[t] for t in instance.tokens]
    n = len(input_ids)
    if n > max_seq_length:
        raise ValueError(f"instance has {n} tokens > max_seq_length {max_seq_length}")
    k = len(instance.masked_lm_positions)
    if k > max_predictions_per_seq:
        raise ValueError(f"instance has {k} predictions > max_predictions_per_seq "
                         f"{max_predictions_per_seq}")
    pad = [0] * (max_seq_length - n)
    pad_k = [0] * (max_predictions_per_seq - k)
    int_features = collections.OrderedDict()
    int_features["input_ids"] = input_ids + pad
    int_features["input_mask"] = [1] * n + pad
    int_features["segment_ids"] = list(instance.segment_ids) + pad
    int_features["masked_lm_positions"] = list(instance.masked_lm_positions) + pad_k
    int_features["masked_lm_ids"] = [vocab[t] for t in instance.masked_lm_labels] + pad_k
    float_features = {"masked_lm_weights": [1.0] * k + [0.0] * (max_predictions_per_seq - k)}
    # The original inserts next_sentence_labels last, after the float feature.
    feats = collections.OrderedDict()
    for name, values in int_features.items():
        feats[name] = tfrecord.create_int_feature(values)
    feats["masked_lm_weights"] = tfrecord.create_float_feature(float_features["masked_lm_weights"])
    feats["next_sentence_labels"] = tfrecord.create_int_feature(
        [1 if instance.is_random_next else 0])
    return tf.train.Example(features=tf.train.Features(feature=feats))


def _log_example(serialized: bytes, id_to_token: Sequence[str]) -> None:
    features = tfrecord_bytes.decode_example_bytes(serialized)
    n = sum(features["input_mask"])
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(id_to_token[i] for i in features["input_ids"][:n]))
    for name in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"):
        logging.info("%s: %s", name, " ".join(str(x) for x in features[name]))


_FLOAT_ONE = b"\x00\x00\x80\x3f"   # 1.0 as a little-endian float32
_FLOAT_ZERO = b"\x00\x00\x00\x00"


class RecordBuilder:
    """The serialized record of one instance given as token ids: the bytes of
    ``instance_to_example(...).SerializeToString()`` with the map written in
    :data:`ORIGINAL_WIRE_ORDER`, as the original's files hold them (spec 5.6), built from
    byte tables (:mod:`bert_tf.data.tfrecord_bytes`) without protobuf objects.

    Args:
      max_id: the largest token id of the vocab.
      max_seq_length, max_predictions_per_seq: the padded lengths.
    """

    def __init__(self, max_id: int, max_seq_length: int, max_predictions_per_seq: int):
        tb = tfrecord_bytes
        self._varints = tb.varint_table(max(max_id, max_seq_length) + 1)
        self._max_seq_length = max_seq_length
        self._max_predictions = max_predictions_per_seq
        p = {k: tb.map_entry_prefix(k) for k in ORIGINAL_WIRE_ORDER}
        self._prefixes = p
        # The fixed-length lists have constant heads (0/1 and 1.0/0.0 are one varint byte and
        # four float bytes each); next_sentence_labels is one of two whole entries.
        self._mask_head = tb.entry_head(p["input_mask"], tb.INT64_LIST_TAG, max_seq_length)
        self._segment_head = tb.entry_head(p["segment_ids"], tb.INT64_LIST_TAG, max_seq_length)
        self._weights_head = tb.entry_head(p["masked_lm_weights"], tb.FLOAT_LIST_TAG,
                                           4 * max_predictions_per_seq)
        nsl_head = tb.entry_head(p["next_sentence_labels"], tb.INT64_LIST_TAG, 1)
        self._nsl = (nsl_head + b"\x00", nsl_head + b"\x01")
        # The fields written in ORIGINAL_WIRE_ORDER (checked here, built in build()).
        assert ORIGINAL_WIRE_ORDER == ("masked_lm_ids", "input_ids", "masked_lm_positions",
                                       "next_sentence_labels", "input_mask",
                                       "masked_lm_weights", "segment_ids")

    def build(self, input_ids: Sequence[int], num_segment_a: int,
              masked_lm_positions: Sequence[int], masked_lm_ids: Sequence[int],
              is_random_next: bool) -> bytes:
        """One record.

        Args:
          input_ids: the ``[CLS] A [SEP] B [SEP]`` ids after masking (at most max_seq_length).
          num_segment_a: how many leading positions have segment id 0 (``len(A) + 2``).
          masked_lm_positions, masked_lm_ids: ascending positions and the original ids there.
          is_random_next: the next-sentence label (1 when True).

        Raises:
          ValueError: more than max_seq_length ids or max_predictions_per_seq predictions.
        """
        n, k = len(input_ids), len(masked_lm_positions)
        pad, pad_k = self._max_seq_length - n, self._max_predictions - k
        if pad < 0:
            raise ValueError(f"instance has {n} tokens > max_seq_length {self._max_seq_length}")
        if pad_k < 0:
            raise ValueError(f"instance has {k} predictions > max_predictions_per_seq "
                             f"{self._max_predictions}")
        vb, p = self._varints, self._prefixes
        head = tfrecord_bytes.entry_head
        int64 = tfrecord_bytes.INT64_LIST_TAG
        zeros, zeros_k = b"\x00" * pad, b"\x00" * pad_k
        labels = b"".join([vb[i] for i in masked_lm_ids]) + zeros_k
        ids = b"".join([vb[i] for i in input_ids]) + zeros
        positions = b"".join([vb[i] for i in masked_lm_positions]) + zeros_k
        return tfrecord_bytes.example_from_entry_bytes(b"".join((
            head(p["masked_lm_ids"], int64, len(labels)), labels,
            head(p["input_ids"], int64, len(ids)), ids,
            head(p["masked_lm_positions"], int64, len(positions)), positions,
            self._nsl[1 if is_random_next else 0],
            self._mask_head, b"\x01" * n, zeros,
            self._weights_head, _FLOAT_ONE * k, _FLOAT_ZERO * pad_k,
            self._segment_head, b"\x00" * num_segment_a, b"\x01" * (n - num_segment_a), zeros,
        )))

    def from_instance(self, instance: TrainingInstance, vocab) -> bytes:
        """The record of a :class:`TrainingInstance` (token strings; ``vocab`` token -> id)."""
        segment_ids = list(instance.segment_ids)
        num_a = segment_ids.index(1) if 1 in segment_ids else len(segment_ids)
        if segment_ids != [0] * num_a + [1] * (len(segment_ids) - num_a):
            raise ValueError("segment_ids are not 0...0 1...1")
        return self.build([vocab[t] for t in instance.tokens], num_a,
                          list(instance.masked_lm_positions),
                          [vocab[t] for t in instance.masked_lm_labels],
                          instance.is_random_next)


def _bit_lengths(n: int) -> List[int]:
    return [m.bit_length() for m in range(n)]


def _inline_shuffle(rng: random.Random, x: list, bit_lengths: List[int]) -> None:
    """``rng.shuffle(x)`` of CPython 3.11-3.13 (Fisher-Yates from the end, ``_randbelow`` by
    ``getrandbits`` rejection), the same draws and result, without two Python calls per
    element. ``bit_lengths[m]`` is ``m.bit_length()`` for every ``m <= len(x)``."""
    getrandbits = rng.getrandbits
    for i in range(len(x) - 1, 0, -1):
        k = bit_lengths[i + 1]
        j = getrandbits(k)
        while j > i:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


_SHUFFLE_CHECKED = {}


def _shuffle_for(rng: random.Random):
    """:func:`_inline_shuffle` where it is proven equal to ``rng.shuffle`` in this Python (on
    lists of 1..300 items from a fixed seed, checked once), else ``rng.shuffle`` itself."""
    if type(rng) is not random.Random:
        return lambda x, bit_lengths: rng.shuffle(x)
    ok = _SHUFFLE_CHECKED.get("ok")
    if ok is None:
        a, b = random.Random(20240), random.Random(20240)
        lengths = _bit_lengths(302)
        ok = True
        for n in list(range(1, 40)) + [127, 128, 129, 255, 256, 300]:
            x, y = list(range(n)), list(range(n))
            a.shuffle(x)
            _inline_shuffle(b, y, lengths)
            ok = ok and x == y and a.getstate() == b.getstate()
        _SHUFFLE_CHECKED["ok"] = ok
    if ok:
        return lambda x, bit_lengths: _inline_shuffle(rng, x, bit_lengths)
    return lambda x, bit_lengths: rng.shuffle(x)


def iter_records(documents: Sequence, vocab, rng: random.Random, max_seq_length: int,
                 dupe_factor: int, short_seq_prob: float, masked_lm_prob: float,
                 max_predictions_per_seq: int, do_whole_word_mask: bool = False
                 ) -> Iterator[bytes]:
    """The serialized records of :func:`iter_training_instances`, in creation order (before
    the final shuffle), computed on token ids: the same ``rng`` draws in the same order, the
    same bytes as :class:`RecordBuilder` of each instance (issue 16: no token strings, no
    :class:`TrainingInstance`, no protobuf objects).

    Masking (spec 5.5, :func:`create_masked_lm_predictions`) on ids: candidates are the
    positions whose id is not ``[CLS]``/``[SEP]``'s; with ``do_whole_word_mask`` a piece whose
    token starts with ``##`` joins the previous candidate; a random replacement is
    ``vocab[vocab_words[randint]]``.

    Args:
      documents: :meth:`DocumentStore.as_ids` of the shuffled documents (segments of ids).
      vocab: token -> id (``tokenizer.vocab``), in vocab file order.
    """
    vocab_words = list(vocab.keys())
    word_ids = [vocab[w] for w in vocab_words]
    num_words = len(word_ids)
    cls_id, sep_id, mask_id = vocab[CLS_TOKEN], vocab[SEP_TOKEN], vocab[MASK_TOKEN]
    max_id = max(word_ids)
    continuation = bytearray(max_id + 1)
    if do_whole_word_mask:
        for w, i in vocab.items():
            if w.startswith("##"):
                continuation[i] = 1
    builder = RecordBuilder(max_id, max_seq_length, max_predictions_per_seq)
    build = builder.build
    shuffle = _shuffle_for(rng)
    bit_lengths = _bit_lengths(max_seq_length + 2)
    draw = rng.random
    randint = rng.randint
    bar = ProgressReporter("create_pretraining_data", dupe_factor * len(documents), "documents")
    done = 0
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            for tokens, segment_ids, is_random_next in iter_sequence_pairs(
                    documents, document_index, max_seq_length, short_seq_prob, rng,
                    cls_token=cls_id, sep_token=sep_id):
                n = len(tokens)
                num_a = n - sum(segment_ids)
                if do_whole_word_mask:
                    cand = []
                    for i, t in enumerate(tokens):
                        if t == cls_id or t == sep_id:
                            continue
                        if cand and continuation[t]:
                            cand[-1].append(i)
                        else:
                            cand.append([i])
                elif tokens.count(cls_id) == 1 and tokens.count(sep_id) == 2:
                    # only the frame: every position of A and B is a candidate
                    cand = list(range(1, num_a - 1))
                    cand.extend(range(num_a, n - 1))
                else:
                    cand = [i for i, t in enumerate(tokens) if t != cls_id and t != sep_id]
                if len(bit_lengths) <= len(cand):
                    bit_lengths = _bit_lengths(len(cand) + 1)
                shuffle(cand, bit_lengths)
                num_to_predict = min(max_predictions_per_seq,
                                     max(1, int(round(n * masked_lm_prob))))
                if do_whole_word_mask:
                    chosen, covered = [], set()
                    for index_set in cand:
                        if len(chosen) >= num_to_predict:
                            break
                        if len(chosen) + len(index_set) > num_to_predict:
                            continue
                        if any(index in covered for index in index_set):
                            continue
                        covered.update(index_set)
                        chosen.extend(index_set)
                else:
                    chosen = cand[:num_to_predict]
                output = list(tokens)
                # masked_token's draws, in the order the pieces were chosen.
                for index in chosen:
                    if draw() < 0.8:
                        output[index] = mask_id
                    elif draw() < 0.5:
                        pass
                    else:
                        output[index] = word_ids[randint(0, num_words - 1)]
                chosen.sort()
                yield build(output, num_a, chosen, [tokens[p] for p in chosen], is_random_next)
            done += 1
            bar.update(done)
    bar.finish()


def _split_output_files(output_file) -> List[str]:
    files = output_file.split(",") if isinstance(output_file, str) else list(output_file)
    files = [f.strip() for f in files if f.strip()]
    if not files:
        raise FlagError(f"no output file given (--output_file={output_file!r})")
    for f in files:
        if "://" not in f:  # local files: fail now, not after the corpus is processed
            check_output_path(f, create_parent=True)
    return files


def write_instance_to_example_files(instances: Sequence[TrainingInstance], tokenizer,
                                    max_seq_length: int, max_predictions_per_seq: int,
                                    output_files) -> int:
    """Writes instances round-robin over the output files (original function of the same name).

    Instance n goes to ``output_files[n % len(output_files)]``; each file is written atomically.
    The records are the bytes of :class:`RecordBuilder` (the original's map order, so the
    files equal the original's byte for byte). Logs the first 20 instances and the total.
    Returns the number written.
    """
    output_files = _split_output_files(output_files)
    id_to_token = id_to_token_list(tokenizer.vocab)
    builder = RecordBuilder(max(tokenizer.vocab.values()), max_seq_length,
                            max_predictions_per_seq)
    with contextlib.ExitStack() as stack:
        writers = [stack.enter_context(tfrecord_bytes.open_record_writer(f))
                   for f in output_files]
        for n, instance in enumerate(instances):
            data = builder.from_instance(instance, tokenizer.vocab)
            writers[n % len(writers)].write(data)
            if n < NUM_LOGGED_INSTANCES:
                _log_example(data, id_to_token)
    logging.info("Wrote %d total instances", len(instances))
    return len(instances)


# ---------------------------------------------------------------------------------------------
# The whole pipeline, as the root script runs it
# ---------------------------------------------------------------------------------------------

def check_settings(max_seq_length: int, max_predictions_per_seq: int, masked_lm_prob: float,
                   short_seq_prob: float, dupe_factor: int, num_workers: int) -> None:
    """Validates the flags; warns when ``max_predictions_per_seq`` caps the masking rate.

    Raises:
      FlagError: a value outside its range (names the flag).
    """
    if max_seq_length < 5:
        raise FlagError(f"max_seq_length={max_seq_length}: needs at least 5 "
                        "([CLS] a [SEP] b [SEP] with one token per segment)")
    if max_predictions_per_seq < 1:
        raise FlagError(f"max_predictions_per_seq={max_predictions_per_seq}: must be >= 1")
    if not 0.0 <= masked_lm_prob <= 1.0:
        raise FlagError(f"masked_lm_prob={masked_lm_prob}: must be in [0, 1]")
    if not 0.0 <= short_seq_prob <= 1.0:
        raise FlagError(f"short_seq_prob={short_seq_prob}: must be in [0, 1]")
    if dupe_factor < 1:
        raise FlagError(f"dupe_factor={dupe_factor}: must be >= 1")
    if num_workers < 1:
        raise FlagError(f"num_workers={num_workers}: must be >= 1")
    implied = int(round(max_seq_length * masked_lm_prob))
    if max_predictions_per_seq < implied:
        logging.warning(
            "max_predictions_per_seq=%d is smaller than round(max_seq_length * masked_lm_prob) = "
            "round(%d * %g) = %d: full-length sequences get only %d masked tokens (%.1f%% instead "
            "of %.1f%%). Set max_predictions_per_seq to about %d (and pass the same value to "
            "run_pretraining.py).", max_predictions_per_seq, max_seq_length, masked_lm_prob,
            implied, max_predictions_per_seq, 100.0 * max_predictions_per_seq / max_seq_length,
            100.0 * masked_lm_prob, implied)


def _worker_count(num_workers: int, input_files: Sequence[str]) -> int:
    """``num_workers``, or 1 when the local input is under :data:`MIN_INPUT_BYTES_FOR_WORKERS`
    (said in one log line); remote inputs count as large."""
    if num_workers <= 1 or any("://" in f for f in input_files):
        return num_workers
    size = sum(os.path.getsize(f) for f in input_files)
    if size < MIN_INPUT_BYTES_FOR_WORKERS:
        logging.info("num_workers=%d: the input is %.1f MB (< %d MB), tokenizing in this "
                     "process: worker processes cannot pay off below that", num_workers,
                     size / 1e6, MIN_INPUT_BYTES_FOR_WORKERS // (1024 * 1024))
        return 1
    return num_workers


def load_tokenizer(vocab_file: str, do_lower_case: bool):
    """A FullTokenizer whose vocab has [CLS], [SEP] and [MASK].

    Raises:
      ConfigError: the vocab file is missing/unreadable, or lacks one of those tokens (names the
        file and the tokens).
    """
    from bert_tf.tokenization.wordpiece import FullTokenizer
    if not vocab_file:
        raise ConfigError("vocab_file is required")
    tokenizer = FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    missing = [t for t in REQUIRED_TOKENS if t not in tokenizer.vocab]
    if missing:
        raise ConfigError(f"vocab file {vocab_file} has no {', '.join(missing)} token "
                          f"({len(tokenizer.vocab)} entries); create_pretraining_data needs "
                          f"{', '.join(REQUIRED_TOKENS)}")
    return tokenizer


def create_pretraining_data(input_file, output_file, vocab_file: str, do_lower_case: bool = True,
                            do_whole_word_mask: bool = False, max_seq_length: int = 128,
                            max_predictions_per_seq: int = 20, random_seed: int = 12345,
                            dupe_factor: int = 10, masked_lm_prob: float = 0.15,
                            short_seq_prob: float = 0.1, num_workers: int = 1) -> int:
    """The whole ``create_pretraining_data.py`` run; returns the number of instances written.

    Writes the same records, in the same files and order, as the original with the same flags
    (spec 5), for any ``num_workers``.

    Args:
      input_file: comma-separated list of files or globs (str), or a list of them.
      output_file: comma-separated list of output TFRecord paths (str), or a list. Instance n
        (after the final shuffle) goes to file n mod len(files); files are written atomically.
      num_workers: (bert_tf) processes that tokenize the input in parallel, from
        :data:`MIN_INPUT_BYTES_FOR_WORKERS` of local input on (below that: this process).
      other args: the original flags (spec 5.1), same defaults.

    Memory bound (the original holds every document and every instance as Python lists of
    strings, roughly 100 bytes per token times (1 + dupe_factor)):
      * documents: 4 bytes per corpus token + 8 bytes per line + 8 bytes per document;
      * instances: 16 bytes each (offset into a temporary spill file next to the first output
        file, plus the shuffle permutation); the serialized records themselves are on disk
        (about ``10 * max_seq_length`` bytes each) until they are copied to the outputs;
      * tokenization: at most ``2 * num_workers`` chunks of 2000 lines in flight, the
        tokenizer's word cache, and the vocab;
      * the current document and random document as token strings.
      So about 4 bytes per corpus token + 16 bytes per instance, e.g. ~3 GB for a 500M-token
      corpus with dupe_factor 10 at max_seq_length 128.

    Raises:
      InputDataError: no input pattern matches, an input cannot be read, or the input holds no
        document. ConfigError: bad vocab (see :func:`load_tokenizer`). FlagError: see
        :func:`check_settings`.
    """
    check_settings(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                   dupe_factor, num_workers)
    tokenizer = load_tokenizer(vocab_file, do_lower_case)
    if isinstance(input_file, str):
        input_files = expand_input_patterns(input_file)
    else:
        input_files = [f for item in input_file for f in expand_input_patterns(item)]
    output_files = _split_output_files(output_file)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    spill_dir = None if "://" in output_files[0] else \
        os.path.dirname(os.path.abspath(output_files[0]))
    if spill_dir:
        os.makedirs(spill_dir, exist_ok=True)
    with contextlib.ExitStack() as stack:
        with contextlib.ExitStack() as pool_stack:  # the workers only tokenize
            pool = make_worker_pool(_worker_count(num_workers, input_files), vocab_file,
                                    do_lower_case)
            if pool is not None:
                pool_stack.enter_context(pool)
            all_documents = read_documents(input_files, tokenizer, vocab_file=vocab_file,
                                           pool=pool)
        if len(all_documents) == 0:
            raise InputDataError(f"no document in the input ({', '.join(input_files)}): every "
                                 "line is empty or gives no token")
        logging.info("Read %d documents, %d tokens", len(all_documents),
                     all_documents.num_tokens)

        rng = random.Random(random_seed)
        all_documents.shuffle(rng)
        vocab = tokenizer.vocab
        records = iter_records(all_documents.as_ids(), vocab, rng, max_seq_length, dupe_factor,
                               short_seq_prob, masked_lm_prob, max_predictions_per_seq,
                               do_whole_word_mask)
        spill = stack.enter_context(tempfile.TemporaryFile(prefix=".tmp-instances-",
                                                           dir=spill_dir))
        offsets = array.array("q", [0])
        end = 0
        for data in records:
            spill.write(data)
            end += len(data)
            offsets.append(end)
        num_instances = len(offsets) - 1
        order = array.array("q", range(num_instances))
        rng.shuffle(order)  # same draws as rng.shuffle(instances)

        logging.info("*** Writing to output files ***")
        for path in output_files:
            logging.info("  %s", path)
        id_to_token = id_to_token_list(vocab)
        spill.flush()
        spilled = stack.enter_context(mmap.mmap(spill.fileno(), 0, access=mmap.ACCESS_READ)) \
            if end else b""
        writers = [stack.enter_context(tfrecord_bytes.open_record_writer(f))
                   for f in output_files]
        num_writers = len(writers)
        for n, index in enumerate(order):
            data = spilled[offsets[index]:offsets[index + 1]]
            writers[n % num_writers].write(data)
            if n < NUM_LOGGED_INSTANCES:
                _log_example(data, id_to_token)
    logging.info("Wrote %d total instances", num_instances)
    return num_instances
