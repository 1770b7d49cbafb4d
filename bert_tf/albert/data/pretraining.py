"""Raw text -> ALBERT's masked-LM + sentence-order TFRecords (ALBERT's `create_pretraining_data.py`).

Record-identical to the original google-research/albert ``create_pretraining_data.py``
(b772393; golden README ``albert`` section C and surprise 4) when numpy is seeded as well:

* documents are read as BERT's (:func:`bert_tf.data.pretraining_corpus.read_documents`), except
  that with a SentencePiece model each line goes through ALBERT's ``preprocess_text`` (lower-
  casing with ``do_lower_case``) instead of ``strip()``;
* pairs: as BERT's, but a negative of a chunk with two or more segments is the same chunk with
  A and B **swapped** (sentence-order prediction), unless ``random_next_sentence``; a
  one-segment chunk always takes B from a random document (:func:`create_instances_from_document`);
* masking is n-gram masking (:func:`create_masked_lm_predictions`): the n-gram length is drawn
  with ``numpy``'s ``choice`` (p proportional to 1/n with ``favor_shorter_ngram``), every
  other choice from the one ``random.Random``;
* records carry ``token_boundary`` and the SOP label under the name ``next_sentence_labels``.

Random draws: one ``random.Random(random_seed)`` in the original's call order, and one
``numpy.random.RandomState(random_seed)`` for the n-gram lengths. The original draws those
from numpy's global RNG, which it never seeds, so its output differs run to run (golden README
C); seeding it is bert_tf's fix, and gives the original's records for that seed.

Everything is held in memory, as in the original (BERT's pipeline spills; ALBERT corpora for
this script are per-shard files). Pure Python + numpy; TensorFlow only for the record files.
"""

import collections
import random
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data import tfrecord, tfrecord_bytes
from bert_tf.data.pretraining import check_settings
from bert_tf.data.pretraining_corpus import expand_input_patterns, read_documents
from bert_tf.data.pretraining_output import split_output_files
from bert_tf.data.pretraining_instances import MaskedLmInstance, iter_sequence_pairs, masked_token
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.albert import tokenization as albert_tokenization

CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
NUM_LOGGED_INSTANCES = 20

# The original _is_start_piece_sp's punctuation set, character for character (it has no "'"),
# and its English letters. Its "€"/"£" entries are UTF-8 bytes and never match a str piece
# (golden README surprise 3), so they are left out with the same result.
_SP_SPECIAL_PIECES = frozenset('!"#$%&"()*+,-./:;?@[\\]^_`{|}~')
_SP_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz") | _SP_SPECIAL_PIECES


class AlbertTrainingInstance:
    """One ALBERT pretraining example before conversion to ids (original ``TrainingInstance``).

    Attributes:
      tokens: list of str, ``[CLS] A [SEP] B [SEP]`` after masking.
      segment_ids: list of int, 0 up to the first [SEP], 1 after.
      is_random_next: bool, the sentence-order label (True: A and B swapped, or B random).
      token_boundary: list of int, 1 for [CLS]/[SEP] and word-start pieces, else 0.
      masked_lm_positions: list of int, ascending. masked_lm_labels: list of str (originals).
    """

    def __init__(self, tokens, segment_ids, masked_lm_positions, masked_lm_labels,
                 is_random_next, token_boundary):
        self.tokens = tokens
        self.segment_ids = segment_ids
        self.is_random_next = is_random_next
        self.token_boundary = token_boundary
        self.masked_lm_positions = masked_lm_positions
        self.masked_lm_labels = masked_lm_labels


def is_start_piece_sp(piece: str) -> bool:
    """Original ``_is_start_piece_sp``: a piece starting with ``▁`` or ``<``, a single
    punctuation piece, or one with any character outside a-z/A-Z and that punctuation set
    (digits, accents, other scripts) starts a word."""
    return (piece.startswith("\u2581") or piece.startswith("<") or piece in _SP_SPECIAL_PIECES
            or not all(c.lower() in _SP_WORD_CHARS for c in piece))


def is_start_piece_bert(piece: str) -> bool:
    """Original ``_is_start_piece_bert``: every WordPiece but a ``##`` continuation."""
    return not piece.startswith("##")


def masking_candidates(tokens: Sequence[str], do_whole_word_mask: bool,
                       is_start_piece: Callable[[str], bool]) -> Tuple[List[List[int]], List[int]]:
    """Step 1 of :func:`create_masked_lm_predictions`: the candidates and ``token_boundary``.

    Returns:
      ``(cand_indexes, token_boundary)``: lists of positions (every position but [CLS]/[SEP];
      with ``do_whole_word_mask`` a piece that is not a word start joins the previous
      candidate), and 1 at [CLS]/[SEP] and at the word-start pieces that open a candidate, else
      0 (list of int, ``len(tokens)``).
    """
    cand_indexes = []
    token_boundary = [0] * len(tokens)
    for (i, token) in enumerate(tokens):
        if token == CLS_TOKEN or token == SEP_TOKEN:
            token_boundary[i] = 1
            continue
        if do_whole_word_mask and cand_indexes and not is_start_piece(token):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])
            if is_start_piece(token):
                token_boundary[i] = 1
    return cand_indexes, token_boundary


class NgramLengths(NamedTuple):
    """The n-gram lengths of ALBERT's masking and their probabilities.

    Attributes:
      ngrams: int64 [ngram], ``1 .. ngram``.
      pvals: float64 [ngram], proportional to ``1/n`` and summing to 1 (reversed without
        ``favor_shorter_ngram``).
    """
    ngrams: np.ndarray
    pvals: np.ndarray


def ngram_lengths(ngram: int, favor_shorter_ngram: bool = True) -> NgramLengths:
    """The :class:`NgramLengths` of ``ngram`` (original ALBERT ``create_masked_lm_predictions``)."""
    ngrams = np.arange(1, ngram + 1, dtype=np.int64)
    pvals = 1. / np.arange(1, ngram + 1)
    pvals /= pvals.sum(keepdims=True)
    if not favor_shorter_ngram:
        pvals = pvals[::-1]
    return NgramLengths(ngrams, pvals)


def pick_ngram(cand_index_set: Sequence[List[List[int]]], taken: int, num_to_predict: int,
               lengths: NgramLengths, np_rng: np.random.RandomState) -> Optional[List[int]]:
    """The flattened slice to use (or None), drawing its length from np_rng.

    ``n = np_rng.choice(1..k, p)`` over the ``k`` slices of one candidate (``p`` the first
    ``k`` of ``lengths.pvals``, renormalised), then n is shortened while the slice would take
    more than ``num_to_predict - taken`` positions; None when even the shortest does.

    Args:
      cand_index_set: the slices ``cand[k:k+1] .. cand[k:k+ngram]`` of one candidate.
      taken: how many positions are already chosen.
    """
    ngrams, pvals = lengths
    k = len(cand_index_set)
    n = np_rng.choice(ngrams[:k], p=pvals[:k] / pvals[:k].sum(keepdims=True))
    index_set = sum(cand_index_set[n - 1], [])
    n -= 1
    while taken + len(index_set) > num_to_predict:
        if n == 0:
            break
        index_set = sum(cand_index_set[n - 1], [])
        n -= 1
    if taken + len(index_set) > num_to_predict:
        return None
    return index_set


def permute_ngrams(ngram_indexes: Sequence, output_tokens: List[str], covered_indexes: set,
                   num_to_predict: int, pick: Callable, rng: random.Random
                   ) -> List[MaskedLmInstance]:
    """Step 5 with ``do_permutation`` (original ALBERT): a second set of slices, chosen as the
    masked ones (``pick``, skipping covered positions), has its tokens permuted
    (``rng.shuffle``) in ``output_tokens`` (changed in place).

    Returns:
      the :class:`MaskedLmInstance` s of the permuted positions (the tokens before the
      permutation), in position order.
    """
    masked_lms = []
    select_indexes = set()
    for cand_index_set in ngram_indexes:
        if len(select_indexes) >= num_to_predict:
            break
        if not cand_index_set:
            continue
        index_set = pick(cand_index_set, len(select_indexes))
        if index_set is None or any(index in covered_indexes or index in select_indexes
                                    for index in index_set):
            continue
        select_indexes.update(index_set)
    assert len(select_indexes) <= num_to_predict
    select_indexes = sorted(select_indexes)
    permute_indexes = list(select_indexes)
    rng.shuffle(permute_indexes)
    orig_token = list(output_tokens)
    for src_i, tgt_i in zip(select_indexes, permute_indexes):
        output_tokens[src_i] = orig_token[tgt_i]
        masked_lms.append(MaskedLmInstance(index=src_i, label=orig_token[src_i]))
    return masked_lms


def create_masked_lm_predictions(tokens: Sequence[str], masked_lm_prob: float,
                                 max_predictions_per_seq: int, vocab_words: Sequence[str],
                                 rng: random.Random, np_rng: np.random.RandomState,
                                 ngram: int = 3, favor_shorter_ngram: bool = True,
                                 do_whole_word_mask: bool = True, do_permutation: bool = False,
                                 is_start_piece: Callable[[str], bool] = is_start_piece_bert
                                 ) -> Tuple[List[str], List[int], List[str], List[int]]:
    """N-gram masking (original ALBERT ``create_masked_lm_predictions``), same draws.

    1. Candidates (:func:`masking_candidates`): every position but [CLS]/[SEP]; with
       ``do_whole_word_mask`` a piece that is not a word start joins the previous candidate.
       ``token_boundary`` marks [CLS]/[SEP] and the word-start pieces that open a candidate.
    2. ``masked_lm_prob == 0``: nothing masked, no draw.
    3. ``num_to_predict = min(max_predictions_per_seq, max(1, round(len(tokens) * prob)))``.
    4. For each candidate k, its ``ngram`` slices ``cand[k:k+1] .. cand[k:k+ngram]`` (shorter
       near the end; always ``ngram`` of them: surprise 4). ``rng.shuffle`` them; for each
       until enough: ``n = np_rng.choice(1..ngram, p ∝ 1/n)`` (reversed without
       ``favor_shorter_ngram``; :func:`ngram_lengths`), shorten n while the slice overshoots
       (:func:`pick_ngram`), skip it if it still overshoots or touches a covered position,
       else mask each of its positions: 80%
       ``[MASK]``, 10% kept, 10% ``vocab_words[randint]``. (The original's "skip covered
       pieces" loop at the top does nothing and is left out.)
    5. ``rng.shuffle`` the slices again (always). With ``do_permutation`` a second set of
       slices is chosen the same way and its tokens permuted (``rng.shuffle``;
       :func:`permute_ngrams`).

    Args:
      tokens: ``[CLS] A [SEP] B [SEP]`` token strings.
      vocab_words: ``list(tokenizer.vocab.keys())``.
      rng: the Python RNG; np_rng: the numpy RNG of the n-gram lengths.
      is_start_piece: :func:`is_start_piece_bert` (WordPiece) or :func:`is_start_piece_sp`.

    Returns:
      ``(output_tokens, masked_lm_positions, masked_lm_labels, token_boundary)``.
    """
    cand_indexes, token_boundary = masking_candidates(tokens, do_whole_word_mask,
                                                      is_start_piece)
    output_tokens = list(tokens)
    if masked_lm_prob == 0:
        return output_tokens, [], [], token_boundary

    num_to_predict = min(max_predictions_per_seq,
                         max(1, int(round(len(tokens) * masked_lm_prob))))
    lengths = ngram_lengths(ngram, favor_shorter_ngram)
    ngram_indexes = [[cand_indexes[idx:idx + n] for n in lengths.ngrams]
                     for idx in range(len(cand_indexes))]
    rng.shuffle(ngram_indexes)

    def pick(cand_index_set, taken: int):
        return pick_ngram(cand_index_set, taken, num_to_predict, lengths, np_rng)

    masked_lms = []
    covered_indexes = set()
    for cand_index_set in ngram_indexes:
        if len(masked_lms) >= num_to_predict:
            break
        if not cand_index_set:
            continue
        index_set = pick(cand_index_set, len(masked_lms))
        if index_set is None or any(index in covered_indexes for index in index_set):
            continue
        for index in index_set:
            covered_indexes.add(index)
            output_tokens[index] = masked_token(tokens[index], vocab_words, rng)
            masked_lms.append(MaskedLmInstance(index=index, label=tokens[index]))
    assert len(masked_lms) <= num_to_predict

    rng.shuffle(ngram_indexes)

    if do_permutation:
        masked_lms.extend(permute_ngrams(ngram_indexes, output_tokens, covered_indexes,
                                         num_to_predict, pick, rng))

    masked_lms = sorted(masked_lms, key=lambda x: x.index)
    return (output_tokens, [p.index for p in masked_lms], [p.label for p in masked_lms],
            token_boundary)


def create_instances_from_document(all_documents: Sequence, document_index: int,
                                   max_seq_length: int, short_seq_prob: float,
                                   masked_lm_prob: float, max_predictions_per_seq: int,
                                   vocab_words: Sequence[str], rng: random.Random,
                                   np_rng: np.random.RandomState,
                                   random_next_sentence: bool = False, **masking
                                   ) -> List[AlbertTrainingInstance]:
    """All instances of one document in one pass (original ALBERT
    ``create_instances_from_document``).

    BERT's pairs (:func:`bert_tf.data.pretraining_instances.iter_sequence_pairs`, ``bert.md``
    5.4: target length, chunks, random ``a_end``, truncation), except the label: a one-segment
    chunk always takes B from a random document (label 1, unused segments put back); else with
    ``random_next_sentence`` B is random with probability 0.5 (BERT's NSP), and without it A
    and B are **swapped** with probability 0.5 (label 1, SOP). Each
    ``rng.random()`` is drawn only where the original's short-circuit draws it.

    Args:
      all_documents: documents (sequences of segments, a segment a list of token strings).
      masking: keyword arguments of :func:`create_masked_lm_predictions` (``ngram``, ...).

    Returns:
      list of :class:`AlbertTrainingInstance`, in order.
    """
    instances = []
    for tokens, segment_ids, is_random_next in iter_sequence_pairs(
            all_documents, document_index, max_seq_length, short_seq_prob, rng,
            sentence_order=not random_next_sentence):
        (tokens, positions, labels, token_boundary) = create_masked_lm_predictions(
            tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng, np_rng,
            **masking)
        instances.append(AlbertTrainingInstance(
            tokens=tokens, segment_ids=segment_ids, masked_lm_positions=positions,
            masked_lm_labels=labels, is_random_next=is_random_next,
            token_boundary=token_boundary))
    return instances


def load_albert_tokenizer(vocab_file: Optional[str], do_lower_case: bool,
                          spm_model_file: Optional[str]):
    """ALBERT's FullTokenizer for the script (WordPiece needs [CLS], [SEP], [MASK]).

    With a SentencePiece model lacking those pieces, the original writes id 0 (``<unk>``) for
    them (golden README "Inputs"); that is kept, with a warning.

    Raises:
      ConfigError: no vocab and no model, an unreadable file, or a WordPiece vocab without
        those tokens (names the file).
    """
    if not spm_model_file and not vocab_file:
        raise ConfigError("--vocab_file (WordPiece) or --spm_model_file (SentencePiece) is "
                          "required")
    tokenizer = albert_tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case,
                                                  spm_model_file=spm_model_file)
    missing = [t for t in (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN) if t not in tokenizer.vocab]
    if missing and not spm_model_file:
        raise ConfigError(f"vocab file {vocab_file} has no {', '.join(missing)} token; "
                          "create_pretraining_data needs [CLS], [SEP] and [MASK]")
    if missing:
        logging.warning("SentencePiece model %s has no %s piece: written as id 0 (<unk>), as "
                        "the original does", spm_model_file, ", ".join(missing))
    return tokenizer


def instance_to_features(instance: AlbertTrainingInstance, to_ids: Callable, max_seq_length: int,
                         max_predictions_per_seq: int, do_permutation: bool = False
                         ) -> "collections.OrderedDict":
    """The record features of one instance, in the original's order and layout.

    ``input_ids``/``input_mask``/``segment_ids``/``token_boundary``: int64 [max_seq_length],
    zero-padded; ``masked_lm_positions``/``masked_lm_ids``: int64 [P] and
    ``masked_lm_weights``: float [P] with P = ``max_predictions_per_seq`` (twice that with
    ``do_permutation``); ``next_sentence_labels``: int64 [1], the SOP label (1 = swapped).

    Args:
      to_ids: ``tokenizer.convert_tokens_to_ids``.

    Returns:
      name -> ``tf.train.Feature``.

    Raises:
      ValueError: the instance is longer than ``max_seq_length``.
    """
    input_ids = list(to_ids(instance.tokens))
    n = len(input_ids)
    if n > max_seq_length:
        raise ValueError(f"instance has {n} tokens > max_seq_length {max_seq_length}")
    pad = [0] * (max_seq_length - n)
    slots = max_predictions_per_seq * (1 + int(do_permutation))
    k = len(instance.masked_lm_positions)
    pad_k = [0] * (slots - k)
    feats = collections.OrderedDict()
    feats["input_ids"] = tfrecord.create_int_feature(input_ids + pad)
    feats["input_mask"] = tfrecord.create_int_feature([1] * n + pad)
    feats["segment_ids"] = tfrecord.create_int_feature(list(instance.segment_ids) + pad)
    feats["token_boundary"] = tfrecord.create_int_feature(list(instance.token_boundary) + pad)
    feats["masked_lm_positions"] = tfrecord.create_int_feature(
        list(instance.masked_lm_positions) + pad_k)
    feats["masked_lm_ids"] = tfrecord.create_int_feature(
        list(to_ids(instance.masked_lm_labels)) + pad_k)
    feats["masked_lm_weights"] = tfrecord.create_float_feature([1.0] * k + [0.0] * (slots - k))
    feats["next_sentence_labels"] = tfrecord.create_int_feature(
        [1 if instance.is_random_next else 0])
    return feats


class _PieceIds(dict):
    """piece -> id of a SentencePiece model; a piece outside it (the surface text SentencePiece
    gives an unknown character) is the model's ``<unk>`` id, as the original's ``PieceToId``."""

    def __init__(self, vocab, unk_id: int):
        super().__init__(vocab)
        self.unk_id = unk_id

    def __missing__(self, piece):
        return self.unk_id


class _SentencePieceLines:
    """The tokenizer :func:`read_documents` sees on ALBERT's SentencePiece path: the same
    pieces, with unknown pieces stored as ``<unk>`` (their only use is their id, 0, and
    :func:`is_start_piece_sp`, which is True for both)."""

    def __init__(self, tokenizer):
        self.tokenize = tokenizer.tokenize
        self.vocab = _PieceIds(tokenizer.vocab, tokenizer.sp_model.unk_id())


def create_training_instances(input_files: Sequence[str], tokenizer, max_seq_length: int,
                              dupe_factor: int, short_seq_prob: float, masked_lm_prob: float,
                              max_predictions_per_seq: int, rng: random.Random,
                              np_rng: np.random.RandomState, do_lower_case: bool = True,
                              random_next_sentence: bool = False, **masking
                              ) -> List[AlbertTrainingInstance]:
    """Reads the inputs and returns all shuffled instances (original ``create_training_instances``).

    Documents as BERT's (``bert.md`` 5.2) but, with a SentencePiece tokenizer, each line is
    ``preprocess_text(line, lower=do_lower_case)`` instead of stripped; ``rng.shuffle`` the
    documents; ``dupe_factor`` passes of :func:`create_instances_from_document`; ``rng.shuffle``
    the instances.

    Raises:
      InputDataError: an input cannot be read, or holds no document.
    """
    normalize, line_tokenizer = None, tokenizer
    if tokenizer.sp_model is not None:
        def normalize(text):
            return albert_tokenization.preprocess_text(text, lower=do_lower_case)
        line_tokenizer = _SentencePieceLines(tokenizer)
    all_documents = read_documents(input_files, line_tokenizer, normalize=normalize)
    if len(all_documents) == 0:
        raise InputDataError(f"no document in the input ({', '.join(input_files)}): every "
                             "line is empty or gives no token")
    all_documents.shuffle(rng)
    vocab_words = list(tokenizer.vocab.keys())
    masking.setdefault("is_start_piece", is_start_piece_sp if tokenizer.sp_model is not None
                       else is_start_piece_bert)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(all_documents)):
            instances.extend(create_instances_from_document(
                all_documents, document_index, max_seq_length, short_seq_prob, masked_lm_prob,
                max_predictions_per_seq, vocab_words, rng, np_rng,
                random_next_sentence=random_next_sentence, **masking))
    rng.shuffle(instances)
    return instances


def create_albert_pretraining_data(input_file: str, output_file: str,
                                   vocab_file: Optional[str] = None,
                                   spm_model_file: Optional[str] = None,
                                   do_lower_case: bool = True, do_whole_word_mask: bool = True,
                                   do_permutation: bool = False, favor_shorter_ngram: bool = True,
                                   random_next_sentence: bool = False, max_seq_length: int = 512,
                                   ngram: int = 3, max_predictions_per_seq: int = 20,
                                   random_seed: int = 12345, dupe_factor: int = 40,
                                   masked_lm_prob: float = 0.15, short_seq_prob: float = 0.1
                                   ) -> int:
    """The whole ALBERT ``create_pretraining_data.py`` run; returns the number of records.

    Same flags and defaults as the original; instance n (after the final shuffle) goes to
    output file n mod len(files), each written atomically; the first 20 are logged
    (``tokens: ...`` after masking, then each feature). ``random_seed`` seeds Python's random
    and numpy's RandomState (see the module docstring).

    Raises:
      FlagError: a value out of range (names the flag). ConfigError: see
      :func:`load_albert_tokenizer`. InputDataError: no input file / document.
    """
    check_settings(max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                   dupe_factor, 1)
    if ngram < 1:
        raise FlagError(f"--ngram={ngram}: must be >= 1")
    tokenizer = load_albert_tokenizer(vocab_file, do_lower_case, spm_model_file)
    input_files = expand_input_patterns(input_file)
    output_files = split_output_files(output_file or "")
    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)

    rng = random.Random(random_seed)
    np_rng = np.random.RandomState(random_seed)
    instances = create_training_instances(
        input_files, tokenizer, max_seq_length, dupe_factor, short_seq_prob, masked_lm_prob,
        max_predictions_per_seq, rng, np_rng, do_lower_case=do_lower_case,
        random_next_sentence=random_next_sentence, ngram=ngram,
        favor_shorter_ngram=favor_shorter_ngram, do_whole_word_mask=do_whole_word_mask,
        do_permutation=do_permutation)
    logging.info("number of instances: %i", len(instances))

    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)
    with tfrecord_bytes.RecordFilesTogether(output_files) as together:  # all files or none
        writers = together.writers
        for n, instance in enumerate(instances):
            feats = instance_to_features(instance, tokenizer.convert_tokens_to_ids,
                                         max_seq_length, max_predictions_per_seq, do_permutation)
            example = tf.train.Example(features=tf.train.Features(feature=feats))
            writers[n % len(writers)].write(example.SerializeToString())
            if n < NUM_LOGGED_INSTANCES:
                logging.info("*** Example ***")
                logging.info("tokens: %s", " ".join(instance.tokens))
                for name, feature in feats.items():
                    values = feature.int64_list.value or feature.float_list.value
                    logging.info("%s: %s", name, " ".join(str(x) for x in values))
    logging.info("Wrote %d total instances", len(instances))
    return len(instances)
