"""Corpus reading for `create_pretraining_data.py`: input files -> documents of token ids.

The reading half of the original `create_training_instances` (spec `bert.md` 5.2): one
sentence per line, a blank line ends a document, no break between files, invalid UTF-8 bytes
dropped (the original ``convert_to_unicode``). Beyond the original, for large corpora:

* :class:`DocumentStore` holds every document as int32 token ids (about 4 bytes per token
  instead of a list of strings per line) and shuffles them with the original's draws;
* :func:`make_worker_pool` / :func:`ordered_map`: tokenization (and, for
  :mod:`bert_tf.data.pretraining`, serialization) in ``num_workers`` processes, results in
  input order, with a bounded number of work items in flight.

The instance algorithm itself (masking, pairs, records) is :mod:`bert_tf.data.pretraining`.
Pure Python; TensorFlow (`tf.io.gfile`) is imported only for remote paths (``scheme://``) and
glob patterns: a local file named as it is is read with ``open`` (no TensorFlow import, about
5 CPU seconds, issue 16).
"""

import array
import collections
import multiprocessing
import os
import random
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Tuple

from absl import logging

from bert_tf.atomic_files import is_remote
from bert_tf.errors import ConfigError, FlagError, InputDataError

# Lines per tokenization work item, and work items in flight per worker (bounds memory).
LINES_PER_CHUNK = 2000
CHUNKS_IN_FLIGHT_PER_WORKER = 2
# Invalid-UTF-8 lines reported one by one per input file; the rest are only counted.
MAX_BAD_LINE_WARNINGS = 20


def expand_input_patterns(input_file: str) -> List[str]:
    """Splits a comma-separated list and expands each item as a glob (original ``tf.gfile.Glob``).

    Matches of one pattern are sorted by name; patterns keep their order. Paths may be remote
    (gs://...; `tf.io.gfile`).

    Raises:
      InputDataError: the list is empty, or a pattern matches no file or only folders (names
        the pattern).
    """
    patterns = [p.strip() for p in (input_file or "").split(",") if p.strip()]
    if not patterns:
        raise InputDataError(f"no input file given (input_file={input_file!r})")
    files = []
    for pattern in patterns:
        if _is_plain_local_file(pattern):  # what the glob gives for it, without TensorFlow
            files.append(pattern)
            continue
        import tensorflow as tf
        try:
            matches = sorted(tf.io.gfile.glob(pattern))
        except tf.errors.OpError as e:
            raise InputDataError(
                f"input pattern {pattern!r} cannot be expanded: {e.message}") from e
        files_only = [m for m in matches if not tf.io.gfile.isdir(m)]
        if matches and not files_only:
            raise InputDataError(
                f"input pattern {pattern!r} matches only folders, expected text files with one "
                "sentence per line")
        if not files_only:
            hint = ""
            if "[" in pattern and tf.io.gfile.exists(pattern):  # a name holding brackets
                hint = ("; a file of that very name exists, but its '[...]' is read as a glob "
                        "character class (as the original's tf.gfile.Glob): rename it, or "
                        "write '[' as '[[]'")
            raise InputDataError(f"input pattern {pattern!r} matches no file{hint}")
        matches = files_only
        files.extend(matches)
    return files


def _is_plain_local_file(pattern: str) -> bool:
    """True for an existing local file named without glob characters (``*?[``)."""
    return (not is_remote(pattern) and not any(c in pattern for c in "*?[")
            and os.path.isfile(pattern))


def _iter_raw_lines(path: str, block_size: int = 1 << 20) -> Iterator[bytes]:
    """Yields the lines of a file as bytes, split on ``\\n`` only (as ``GFile.readline``).

    The ``\\n`` itself is removed; a final empty piece after the last ``\\n`` is end of file.
    Local files are read with ``open``, remote ones with ``tf.io.gfile.GFile``.
    """
    if is_remote(path):
        import tensorflow as tf
        reader_context = tf.io.gfile.GFile(path, "rb")
    else:
        reader_context = open(path, "rb")
    with reader_context as reader:
        rest = b""
        while True:
            block = reader.read(block_size)
            if not block:
                break
            lines = (rest + block).split(b"\n")
            rest = lines.pop()
            yield from lines
        if rest:
            yield rest


def _read_errors(path: str) -> tuple:
    """The exceptions a failed read of ``path`` raises: ``OSError`` (local), plus
    ``tf.errors.OpError`` for a remote path (read through ``tf.io.gfile``)."""
    if not is_remote(path):
        return (OSError,)
    import tensorflow as tf
    return (OSError, tf.errors.OpError)


def _iter_line_chunks(input_files: Sequence[str], lines_per_chunk: int
                      ) -> Iterator[Tuple[str, int, List[bytes]]]:
    """Yields ``(path, first_line_number, [line bytes])`` work items, 1-based line numbers."""
    for path in input_files:
        chunk, first = [], 1
        try:
            for number, line in enumerate(_iter_raw_lines(path), 1):
                if not chunk:
                    first = number
                chunk.append(line)
                if len(chunk) >= lines_per_chunk:
                    yield path, first, chunk
                    chunk = []
        except _read_errors(path) as e:
            reason = getattr(e, "message", None) or getattr(e, "strerror", None) or str(e)
            raise InputDataError(f"cannot read input file {path}: {reason}") from e
        if chunk:
            yield path, first, chunk


def tokenize_lines(tokenizer, path: str, first_line: int, lines: Sequence[bytes],
                   vocab_file: str = "the vocab", normalize: Optional[Callable[[str], str]] = None
                   ) -> Tuple[array.array, array.array, List[int]]:
    """Tokenizes raw lines into token ids, marking document breaks (spec 5.2).

    Each line is decoded as UTF-8 dropping invalid bytes (the original ``convert_to_unicode``),
    ``strip()``-ed (or passed through ``normalize``, e.g. ALBERT's ``preprocess_text`` for its
    SentencePiece path: a line empty after it is a document break), and tokenized with
    ``tokenizer`` (a FullTokenizer).

    Returns:
      ``(ids, line_lengths, bad_lines)``: ``ids`` is an int32 ``array`` of all token ids in line
      order; ``line_lengths`` has one int per line: -1 for an empty (stripped) line, which starts
      a new document, else the number of tokens of the line (0: the line is not a break but adds
      no segment); ``bad_lines`` are the 1-based numbers of lines that held invalid UTF-8.

    Raises:
      ConfigError: a token is not in the vocab (only possible with a vocab lacking ``[UNK]``).
    """
    vocab = tokenizer.vocab
    ids = array.array("i")
    line_lengths = array.array("i")
    bad_lines = []
    for offset, raw in enumerate(lines):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "ignore")
            bad_lines.append(first_line + offset)
        text = normalize(text) if normalize is not None else text.strip()
        if not text:
            line_lengths.append(-1)
            continue
        tokens = tokenizer.tokenize(text)
        try:
            ids.extend([vocab[t] for t in tokens])
        except KeyError as e:
            raise ConfigError(
                f"{vocab_file}: token {e.args[0]!r} (from {path} line {first_line + offset}) is "
                "not in the vocab; a WordPiece vocab needs [UNK]") from None
        line_lengths.append(len(tokens))
    return ids, line_lengths, bad_lines


class DocumentStore(Sequence):
    """All documents of the corpus as int32 token ids (about 4 bytes per token).

    ``store[d]`` is a lazy view of document ``d``: ``len(view)`` segments, ``view[j]`` a fresh
    list of token strings, which is what the original's list-of-lists held. The store is what
    the original calls ``all_documents``, without its memory cost.

    Args:
      id_to_token: sequence mapping an id to its token string (index = id).
    """

    def __init__(self, id_to_token: Sequence[str]):
        self._id_to_token = id_to_token
        self._ids = array.array("i")          # token ids of every segment, back to back
        self._segment_ends = array.array("q")  # end offset of each segment in _ids
        self._doc_ends = array.array("q")      # end index of each document in _segment_ends
        self._order = None                     # document permutation after shuffle()

    def start_document(self) -> None:
        """Starts a new document unless the current one is empty (original: blank line)."""
        if self._order is not None:
            raise RuntimeError("DocumentStore is frozen after shuffle()")
        if len(self._segment_ends) > (self._doc_ends[-1] if self._doc_ends else 0):
            self._doc_ends.append(len(self._segment_ends))

    def add_segment(self, ids: Iterable[int]) -> None:
        """Appends one non-empty segment (a tokenized line) to the current document."""
        self._ids.extend(ids)
        self._segment_ends.append(len(self._ids))

    def add_tokenized_lines(self, ids: array.array, line_lengths: Sequence[int]) -> None:
        """Adds the output of :func:`tokenize_lines` (breaks and segments) in order."""
        pos = 0
        for n in line_lengths:
            if n < 0:
                self.start_document()
            elif n > 0:
                self.add_segment(ids[pos:pos + n])
                pos += n

    def finish(self) -> None:
        """Closes the last document (empty documents never exist in the store)."""
        self.start_document()
        self._order = array.array("q", range(len(self._doc_ends)))

    def shuffle(self, rng: random.Random) -> None:
        """``rng.shuffle(all_documents)`` with the same draws (shuffles the document order)."""
        if self._order is None:
            self.finish()
        rng.shuffle(self._order)

    def __len__(self) -> int:
        if self._order is None:
            self.finish()
        return len(self._order)

    def __getitem__(self, index: int) -> "_DocumentView":
        if self._order is None:
            self.finish()
        doc = self._order[index]
        first = self._doc_ends[doc - 1] if doc else 0
        return _DocumentView(self, first, self._doc_ends[doc])

    @property
    def num_tokens(self) -> int:
        return len(self._ids)

    def segment_tokens(self, segment: int) -> List[str]:
        start = self._segment_ends[segment - 1] if segment else 0
        id_to_token = self._id_to_token
        return [id_to_token[i] for i in self._ids[start:self._segment_ends[segment]]]

    def segment_ids(self, segment: int) -> array.array:
        """The token ids of segment ``segment`` (a fresh int32 ``array``)."""
        start = self._segment_ends[segment - 1] if segment else 0
        return self._ids[start:self._segment_ends[segment]]

    def as_ids(self) -> "IdDocuments":
        """The same documents (same order, shuffled or not) with segments as token ids."""
        return IdDocuments(self)


class IdDocuments(Sequence):
    """A :class:`DocumentStore` seen with token ids: ``docs[d]`` is a list of the segments of
    document ``d``, segment ``j`` an int32 ``array`` (the ids of the token strings
    ``store[d][j]``), so an algorithm can run on ints without building the strings (issue
    16)."""

    __slots__ = ("_store",)

    def __init__(self, store: DocumentStore):
        self._store = store

    def __len__(self) -> int:
        return len(self._store)

    def __getitem__(self, index: int) -> List[array.array]:
        """Document ``index``: a fresh list of its segments, each an int32 ``array`` (a plain
        list: the pair loop indexes and measures it many times)."""
        store = self._store
        if store._order is None:
            store.finish()
        doc = store._order[index]
        doc_ends, ends, ids = store._doc_ends, store._segment_ends, store._ids
        first = doc_ends[doc - 1] if doc else 0
        start = ends[first - 1] if first else 0
        segments = []
        for end in ends[first:doc_ends[doc]]:
            segments.append(ids[start:end])
            start = end
        return segments


class _DocumentView(Sequence):
    """One document of a :class:`DocumentStore`: a sequence of segments (lists of str)."""

    __slots__ = ("_store", "_first", "_end")

    def __init__(self, store: DocumentStore, first: int, end: int):
        self._store, self._first, self._end = store, first, end

    def __len__(self) -> int:
        return self._end - self._first

    def __getitem__(self, j: int) -> List[str]:
        if not 0 <= j < self._end - self._first:
            raise IndexError(j)
        return self._store.segment_tokens(self._first + j)


_worker_tokenizer = None
_worker_vocab_file = None


def _init_worker(vocab_file: str, do_lower_case: bool) -> None:
    global _worker_tokenizer, _worker_vocab_file
    from bert_tf.tokenization.wordpiece import FullTokenizer
    _worker_tokenizer = FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    _worker_vocab_file = vocab_file


def worker_tokenizer():
    """The FullTokenizer of this worker process (built by the pool's initializer), or None
    outside a :func:`make_worker_pool` worker."""
    return _worker_tokenizer


def _worker_tokenize(item):
    path, first, lines = item
    return tokenize_lines(_worker_tokenizer, path, first, lines, _worker_vocab_file)


def make_worker_pool(num_workers: int, vocab_file: str, do_lower_case: bool):
    """A ``multiprocessing`` pool of ``num_workers`` processes, each with its own FullTokenizer.

    Uses the "fork" start method where it exists (no re-import), else "spawn". Close it with
    ``with``. Returns None when ``num_workers`` <= 1 (everything then runs in this process).
    """
    if num_workers <= 1:
        return None
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    return multiprocessing.get_context(method).Pool(
        num_workers, initializer=_init_worker, initargs=(vocab_file, do_lower_case))


def ordered_map(pool, fn, items: Iterable, local_fn=None) -> Iterator:
    """``map(fn, items)`` in order; on ``pool`` with at most 2 items in flight per worker.

    Without a pool, ``local_fn`` (default ``fn``) runs here. Memory stays bounded because the
    input iterator is consumed only as results are taken. ``fn`` must be picklable by name
    (a module-level function) when ``pool`` is given.
    """
    if pool is None:
        yield from map(local_fn or fn, items)
        return
    max_pending = CHUNKS_IN_FLIGHT_PER_WORKER * pool._processes
    pending = collections.deque()
    for item in items:
        pending.append(pool.apply_async(fn, (item,)))
        if len(pending) >= max_pending:
            yield pending.popleft().get()
    while pending:
        yield pending.popleft().get()


def id_to_token_list(vocab) -> List[str]:
    """``inv_vocab`` (original ``FullTokenizer.inv_vocab``) as a list indexed by id: ``vocab``
    is token -> int id; ids that no token maps to stay None."""
    table = [None] * (max(vocab.values()) + 1 if vocab else 0)
    for token, index in vocab.items():
        table[index] = token
    return table


def read_documents(input_files: Sequence[str], tokenizer, num_workers: int = 1,
                   vocab_file: Optional[str] = None, do_lower_case: bool = True,
                   lines_per_chunk: int = LINES_PER_CHUNK, pool=None,
                   normalize: Optional[Callable[[str], str]] = None) -> DocumentStore:
    """Reads and tokenizes the input files into documents (spec 5.2).

    One sentence per line; a line that is empty after ``strip()`` starts a new document; a line
    that gives no token is skipped (no break); there is NO break between files; empty documents
    are dropped. Invalid UTF-8 bytes are dropped (original ``convert_to_unicode``) and a warning
    names the file and line.

    Args:
      input_files: paths, read in order.
      tokenizer: FullTokenizer (used when no worker pool is used; its ``vocab`` maps ids back).
      num_workers: > 1 tokenizes in that many worker processes (same result, in order); they
        build their own FullTokenizer from ``vocab_file`` and ``do_lower_case``.
      lines_per_chunk: lines per work item. At most ``2 * num_workers`` items are in flight.
      pool: an existing :func:`make_worker_pool` pool to use instead (``num_workers`` ignored).
      normalize: replaces ``strip()`` of each decoded line (see :func:`tokenize_lines`); only
        without workers.

    Returns:
      a :class:`DocumentStore`, not yet shuffled.

    Raises:
      InputDataError: an input file cannot be read. ConfigError: see :func:`tokenize_lines`.
      FlagError: ``num_workers > 1`` without ``vocab_file``.
    """
    if normalize is not None and (pool is not None or num_workers > 1):
        raise FlagError("normalize runs in this process only: use num_workers=1")
    if pool is None and num_workers > 1:
        if not vocab_file:
            raise FlagError("num_workers > 1 needs vocab_file for the worker tokenizers")
        with make_worker_pool(num_workers, vocab_file, do_lower_case) as own_pool:
            return read_documents(input_files, tokenizer, vocab_file=vocab_file,
                                  lines_per_chunk=lines_per_chunk, pool=own_pool)
    store = DocumentStore(id_to_token_list(tokenizer.vocab))
    bad_counts = collections.Counter()
    vocab_name = vocab_file or "the vocab"
    chunks = _iter_line_chunks(input_files, lines_per_chunk)
    paths = collections.deque()

    def tagged(items):
        for item in items:
            paths.append(item[0])
            yield item

    results = ordered_map(pool, _worker_tokenize, tagged(chunks),
                           local_fn=lambda item: tokenize_lines(tokenizer, *item, vocab_name,
                                                                normalize=normalize))
    for ids, line_lengths, bad_lines in results:
        path = paths.popleft()
        for number in bad_lines:
            bad_counts[path] += 1
            if bad_counts[path] <= MAX_BAD_LINE_WARNINGS:
                logging.warning("%s line %d: invalid UTF-8 bytes dropped (original "
                                "convert_to_unicode behaviour)", path, number)
        store.add_tokenized_lines(ids, line_lengths)
    for path, count in bad_counts.items():
        if count > MAX_BAD_LINE_WARNINGS:
            logging.warning("%s: %d lines in all had invalid UTF-8 bytes (dropped)", path, count)
    store.finish()
    return store
