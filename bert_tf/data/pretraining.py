"""Raw text -> masked-LM + next-sentence TFRecords (the original `create_pretraining_data.py`).

Instance-identical to the original: every random decision is taken from ONE
``random.Random(random_seed)`` in the original's exact call order (spec ``bert.md`` 5.3-5.5):

1. ``rng.shuffle`` over the documents;
2. ``dupe_factor`` passes over the documents, each running
   :func:`~bert_tf.data.pretraining_instances.create_instances_from_document` (``random``/
   ``randint`` for lengths, random-next, truncation; ``shuffle``/``random``/``randint`` in
   :func:`~bert_tf.data.pretraining_instances.create_masked_lm_predictions`);
3. ``rng.shuffle`` over all the instances, then round-robin writing over the output files.

Two entry points:

* The original API, kept for tests and readers:
  :func:`bert_tf.data.pretraining_instances.create_training_instances` (returns all
  ``TrainingInstance`` s, in memory; the algorithm, :mod:`bert_tf.data.pretraining_instances`)
  and :func:`bert_tf.data.pretraining_output.write_instance_to_example_files` (the records,
  :mod:`bert_tf.data.pretraining_output`).
* :func:`create_pretraining_data`, used by the root script: the same records, plus parallel
  tokenization (``num_workers`` processes) and bounded memory (documents are held as int32 token
  ids, instances are spilled to a temporary file; see its docstring for the bound).

Reading the corpus into documents (input files, tokenization workers, the compact document
store) is :mod:`bert_tf.data.pretraining_corpus`; this module is the run on top of it (the
algorithm on token ids, :func:`iter_records`, and the spill, shuffle and write steps).

Pure Python. The root script's path (:func:`create_pretraining_data`) runs the algorithm on
token ids and writes the record bytes itself (:mod:`bert_tf.data.tfrecord_bytes`), so local
files need no TensorFlow import; the original API
(:func:`~bert_tf.data.pretraining_output.instance_to_example`) builds
``tf.train.Example`` protos and imports TensorFlow when called.
"""

import array
import contextlib
import mmap
import os
import random
import tempfile
from typing import Iterator, List, NamedTuple, Optional, Sequence

from absl import logging

from bert_tf.data import tfrecord_bytes
from bert_tf.data.pretraining_corpus import (expand_input_patterns, id_to_token_list,
                                             make_worker_pool, read_documents)
from bert_tf.data.pretraining_instances import (CLS_TOKEN, MASK_TOKEN, REQUIRED_TOKENS, SEP_TOKEN,
                                                iter_sequence_pairs)
from bert_tf.data.pretraining_output import (NUM_LOGGED_INSTANCES, RecordBuilder, log_example,
                                             split_output_files)
from bert_tf.errors import ConfigError, FlagError, InputDataError, OutputPathError
from bert_tf.progress import ProgressReporter

# Worker processes tokenize only from this much local input on (bytes). Measured (issue 16,
# read_documents alone, 2 rounds, 2-core machine under load): 2 workers on 2.4 MB took 1.5x the
# CPU of tokenizing here (1.17 vs 0.79 s: pool start, a tokenizer per worker, pickling) and
# were slower (2.9 vs 1.9 s wall); on 19 MB 1.2x the CPU (6.0 vs 5.0 s), still no faster. They
# can pay off only with idle cores and a large input; the instance loop stays serial either
# way (one rng, the original's order).
MIN_INPUT_BYTES_FOR_WORKERS = 16 * 1024 * 1024


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


class IdVocab(NamedTuple):
    """The vocab as :func:`iter_records` masks token ids with it.

    Attributes:
      word_ids: the id of each vocab token in vocab file order (``vocab[vocab_words[i]]``, the
        original's ``vocab_words``), where a random replacement is drawn from.
      cls_id, sep_id, mask_id: the ids of ``[CLS]``, ``[SEP]`` and ``[MASK]``.
      max_id: the largest id of the vocab.
      continuation: bytearray [max_id + 1], 1 at the id of a token that starts with ``##``
        (filled only for ``do_whole_word_mask``).
    """
    word_ids: List[int]
    cls_id: int
    sep_id: int
    mask_id: int
    max_id: int
    continuation: bytearray


def id_vocab(vocab, do_whole_word_mask: bool = False) -> IdVocab:
    """The :class:`IdVocab` of ``vocab`` (token -> id, ``tokenizer.vocab``, in file order)."""
    vocab_words = list(vocab.keys())
    word_ids = [vocab[w] for w in vocab_words]
    cls_id, sep_id, mask_id = vocab[CLS_TOKEN], vocab[SEP_TOKEN], vocab[MASK_TOKEN]
    max_id = max(word_ids)
    continuation = bytearray(max_id + 1)
    if do_whole_word_mask:
        for w, i in vocab.items():
            if w.startswith("##"):
                continuation[i] = 1
    return IdVocab(word_ids, cls_id, sep_id, mask_id, max_id, continuation)


def mask_candidates(tokens: Sequence[int], num_a: int, ids: IdVocab,
                    do_whole_word_mask: bool = False) -> list:
    """The masking candidates of one pair of ids, before the shuffle (spec 5.5, the first loop
    of :func:`~bert_tf.data.pretraining_instances.create_masked_lm_predictions`).

    Args:
      tokens: the ``[CLS] A [SEP] B [SEP]`` ids.
      num_a: ``len(A) + 2``, the positions with segment id 0.

    Returns:
      the positions whose id is not ``[CLS]``/``[SEP]``'s (list of int), or with
      ``do_whole_word_mask`` lists of positions (a ``##`` piece joins the previous candidate).
    """
    n = len(tokens)
    cls_id, sep_id = ids.cls_id, ids.sep_id
    if do_whole_word_mask:
        continuation = ids.continuation
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
    return cand


def choose_masked_positions(cand: list, num_to_predict: int,
                            do_whole_word_mask: bool = False) -> List[int]:
    """The positions to predict, in the order chosen from the shuffled candidates (spec 5.5).

    Without ``do_whole_word_mask`` the first ``num_to_predict``; with it, whole words in turn,
    skipping a word that would exceed ``num_to_predict`` (as
    :func:`~bert_tf.data.pretraining_instances.create_masked_lm_predictions`).
    """
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
    return chosen


def mask_ids(tokens: Sequence[int], chosen: Sequence[int], ids: IdVocab,
             rng: random.Random) -> List[int]:
    """A copy of ``tokens`` with each chosen position masked:
    :func:`~bert_tf.data.pretraining_instances.masked_token` on ids (80% ``[MASK]``, 10% kept,
    10% ``word_ids[randint]``), the same ``rng`` draws."""
    draw = rng.random
    randint = rng.randint
    word_ids = ids.word_ids
    num_words = len(word_ids)
    mask_id = ids.mask_id
    output = list(tokens)
    # masked_token's draws, in the order the pieces were chosen.
    for index in chosen:
        if draw() < 0.8:
            output[index] = mask_id
        elif draw() < 0.5:
            pass
        else:
            output[index] = word_ids[randint(0, num_words - 1)]
    return output


def iter_records(documents: Sequence, vocab, rng: random.Random, max_seq_length: int,
                 dupe_factor: int, short_seq_prob: float, masked_lm_prob: float,
                 max_predictions_per_seq: int, do_whole_word_mask: bool = False
                 ) -> Iterator[bytes]:
    """The serialized records of
    :func:`~bert_tf.data.pretraining_instances.iter_training_instances`, in creation order
    (before the final shuffle), computed on token ids: the same ``rng`` draws in the same order,
    the same bytes as :class:`~bert_tf.data.pretraining_output.RecordBuilder` of each instance
    (issue 16: no token strings, no ``TrainingInstance``, no protobuf objects).

    Masking (spec 5.5, :func:`~bert_tf.data.pretraining_instances.create_masked_lm_predictions`)
    on ids, in its steps: :func:`mask_candidates` (positions whose id is not ``[CLS]``/``[SEP]``'s;
    with ``do_whole_word_mask`` a piece whose token starts with ``##`` joins the previous
    candidate), the shuffle, :func:`choose_masked_positions`, :func:`mask_ids` (a random
    replacement is ``vocab[vocab_words[randint]]``).

    Args:
      documents: :meth:`DocumentStore.as_ids` of the shuffled documents (segments of ids).
      vocab: token -> id (``tokenizer.vocab``), in vocab file order.
    """
    ids = id_vocab(vocab, do_whole_word_mask)
    builder = RecordBuilder(ids.max_id, max_seq_length, max_predictions_per_seq)
    build = builder.build
    shuffle = _shuffle_for(rng)
    bit_lengths = _bit_lengths(max_seq_length + 2)
    bar = ProgressReporter("create_pretraining_data", dupe_factor * len(documents), "documents")
    done = 0
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            for tokens, segment_ids, is_random_next in iter_sequence_pairs(
                    documents, document_index, max_seq_length, short_seq_prob, rng,
                    cls_token=ids.cls_id, sep_token=ids.sep_id):
                n = len(tokens)
                num_a = n - sum(segment_ids)
                cand = mask_candidates(tokens, num_a, ids, do_whole_word_mask)
                if len(bit_lengths) <= len(cand):
                    bit_lengths = _bit_lengths(len(cand) + 1)
                shuffle(cand, bit_lengths)
                num_to_predict = min(max_predictions_per_seq,
                                     max(1, int(round(n * masked_lm_prob))))
                chosen = choose_masked_positions(cand, num_to_predict, do_whole_word_mask)
                output = mask_ids(tokens, chosen, ids, rng)
                chosen.sort()
                yield build(output, num_a, chosen, [tokens[p] for p in chosen], is_random_next)
            done += 1
            bar.update(done)
    bar.finish()


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


def input_file_list(input_file) -> List[str]:
    """The input files of ``--input_file``: a comma-separated list of files or globs (str), or
    a list of them, expanded in order
    (:func:`bert_tf.data.pretraining_corpus.expand_input_patterns`).

    Raises:
      InputDataError: a pattern matches no file.
    """
    if isinstance(input_file, str):
        return expand_input_patterns(input_file)
    return [f for item in input_file for f in expand_input_patterns(item)]


def spill_dir_of(output_files: Sequence[str]) -> Optional[str]:
    """The folder of the temporary spill file: that of the first output file (created here),
    or None (the system's temporary folder) when it is remote (``gs://...``)."""
    spill_dir = None if "://" in output_files[0] else \
        os.path.dirname(os.path.abspath(output_files[0]))
    if spill_dir:
        os.makedirs(spill_dir, exist_ok=True)
    return spill_dir


def read_corpus(input_files: Sequence[str], tokenizer, vocab_file: str, do_lower_case: bool,
                num_workers: int):
    """The documents of the input files (spec 5.2), tokenized by ``num_workers`` processes
    (see :func:`_worker_count`) or here; logs the files and the counts.

    Returns:
      the :class:`~bert_tf.data.pretraining_corpus.DocumentStore` (not shuffled yet).

    Raises:
      InputDataError: an input cannot be read, or the input holds no document.
    """
    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
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
    return all_documents


def spill_records(records: Iterator[bytes], spill) -> array.array:
    """Writes the records one after the other to the open binary file ``spill``.

    Returns:
      int64 offsets [num_records + 1]: record i is ``spill[offsets[i]:offsets[i + 1]]``.
    """
    offsets = array.array("q", [0])
    end = 0
    for data in records:
        spill.write(data)
        end += len(data)
        offsets.append(end)
    return offsets


def write_spilled_records(spill, offsets: Sequence[int], order: Sequence[int],
                          output_files: Sequence[str], vocab) -> None:
    """Writes the spilled records in ``order`` round-robin over the output files (spec 5.6):
    the n-th record of ``order`` goes to ``output_files[n % len(output_files)]``, each file is
    written atomically; the first :data:`NUM_LOGGED_INSTANCES` are logged.

    Args:
      spill: the file of :func:`spill_records`; offsets: its offsets.
      order: the record indices after the final shuffle.
      vocab: token -> id (``tokenizer.vocab``), for the logged tokens.
    """
    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)
    id_to_token = id_to_token_list(vocab)
    spill.flush()
    with contextlib.ExitStack() as stack:
        spilled = stack.enter_context(mmap.mmap(spill.fileno(), 0, access=mmap.ACCESS_READ)) \
            if offsets[-1] else b""
        # all files or none (a full disk leaves none of them; the earlier files stay)
        writers = stack.enter_context(tfrecord_bytes.RecordFilesTogether(output_files)).writers
        num_writers = len(writers)
        for n, index in enumerate(order):
            data = spilled[offsets[index]:offsets[index + 1]]
            writers[n % num_writers].write(data)
            if n < NUM_LOGGED_INSTANCES:
                log_example(data, id_to_token)


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
    input_files = input_file_list(input_file)
    output_files = split_output_files(output_file)
    spill_dir = spill_dir_of(output_files)
    all_documents = read_corpus(input_files, tokenizer, vocab_file, do_lower_case, num_workers)

    rng = random.Random(random_seed)
    all_documents.shuffle(rng)
    records = iter_records(all_documents.as_ids(), tokenizer.vocab, rng, max_seq_length,
                           dupe_factor, short_seq_prob, masked_lm_prob, max_predictions_per_seq,
                           do_whole_word_mask)
    spill = tempfile.TemporaryFile(prefix=".tmp-instances-", dir=spill_dir)
    try:
        try:
            offsets = spill_records(records, spill)
            spill.flush()
        except OSError as e:  # a full disk, a file-size limit (EFBIG): one line, no output
            raise OutputPathError(
                f"{', '.join(output_files)}: cannot write the instances' temporary file in "
                f"{spill_dir or tempfile.gettempdir()} ({e.strerror or e}); no output file was "
                "written") from e
        num_instances = len(offsets) - 1
        order = array.array("q", range(num_instances))
        rng.shuffle(order)  # same draws as rng.shuffle(instances)
        write_spilled_records(spill, offsets, order, output_files, tokenizer.vocab)
    finally:
        try:
            spill.close()
        except OSError:  # the buffered bytes of a failed write: the file goes anyway
            pass
    logging.info("Wrote %d total instances", num_instances)
    return num_instances
