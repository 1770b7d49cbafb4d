"""Masked-LM + next-sentence instances: the algorithm of the original `create_pretraining_data.py`.

Every random decision is taken from ONE ``random.Random(random_seed)`` in the original's exact
call order (spec ``bert.md`` 5.3-5.5; the order is listed in :mod:`bert_tf.data.pretraining`):
:func:`iter_sequence_pairs` cuts a document into ``[CLS] A [SEP] B [SEP]`` pairs
(:func:`truncate_seq_pair`), :func:`create_masked_lm_predictions` masks each pair
(:func:`masked_token`), :func:`create_instances_from_document`,
:func:`iter_training_instances` and :func:`create_training_instances` run it over the corpus
(the original API: every :class:`TrainingInstance` in memory, token strings).

Writing the instances is :mod:`bert_tf.data.pretraining_output`; the root script's run on
token ids (:func:`bert_tf.data.pretraining.create_pretraining_data`) is
:mod:`bert_tf.data.pretraining`. ALBERT's create_pretraining_data builds on
:func:`iter_sequence_pairs` and :func:`masked_token`. Pure Python.
"""

import collections
import random
from typing import Iterator, List, MutableSequence, Optional, Sequence, Tuple

from bert_tf.data.pretraining_corpus import read_documents
from bert_tf.progress import ProgressReporter

# Tokens the algorithm looks up by name (spec 2.1): [CLS]/[SEP] frame every instance, [MASK]
# replaces 80% of the predicted pieces.
CLS_TOKEN = "[CLS]"
SEP_TOKEN = "[SEP]"
MASK_TOKEN = "[MASK]"
REQUIRED_TOKENS = (CLS_TOKEN, SEP_TOKEN, MASK_TOKEN)

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


def random_next_tokens(all_documents: Sequence, document_index: int, target_b_length: int,
                       rng: random.Random) -> list:
    """Segment B taken from a random other document (spec 5.4; the random-next branch of the
    original ``create_instances_from_document``).

    Draws ``rng.randint`` over the documents until one is not ``document_index`` (at most 10
    draws; after 10 the last one is used, even if it is this document), then a random start
    segment; B is that segment and the next ones until it holds ``target_b_length`` tokens or
    the document ends.

    Returns:
      list of tokens (token strings, or ids when the segments hold ids).
    """
    tokens_b = []
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
    return tokens_b


def iter_sequence_pairs(all_documents: Sequence, document_index: int, max_seq_length: int,
                        short_seq_prob: float, rng: random.Random,
                        sentence_order: bool = False, cls_token=CLS_TOKEN, sep_token=SEP_TOKEN
                        ) -> Iterator[Tuple[List[str], List[int], bool]]:
    """The ``[CLS] A [SEP] B [SEP]`` pairs of one document, in order (the chunking loop of the
    original ``create_instances_from_document``, BERT's and ALBERT's).

    Spec 5.4: one ``target_seq_length`` per document and pass (``short_seq_prob``); segments are
    gathered into a chunk until it reaches the target; the chunk is split at a random ``a_end``;
    B is segments of a random other document (:func:`random_next_tokens`; always for a
    one-segment chunk, which makes no draw; then the unused segments are put back), or the rest
    of the chunk; then
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
                    tokens_b = random_next_tokens(all_documents, document_index,
                                                  target_b_length, rng)
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

