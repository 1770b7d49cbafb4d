"""BERT WordPiece tokenization, with the API and exact behaviour of the original `tokenization.py`.

Spec `bert.md` section 4. The public names are those of the original module (the two
tokenizers, the character classes and the Unicode helpers are defined in
:mod:`bert_tf.tokenization.word_tokenizers` and importable from here):
:func:`convert_to_unicode`, :func:`printable_text`, :func:`load_vocab`, :func:`convert_by_vocab`,
:func:`convert_tokens_to_ids`, :func:`convert_ids_to_tokens`, :func:`whitespace_tokenize`,
:class:`FullTokenizer`, :class:`BasicTokenizer`, :class:`WordpieceTokenizer`,
:func:`validate_case_matches_checkpoint`; plus the character classes :func:`_is_whitespace`,
:func:`_is_control`, :func:`_is_punctuation`.

Additions of bert_tf: :meth:`FullTokenizer.tokenize_to_ids` (text -> ids in one pass),
:meth:`FullTokenizer.tokenize_to_ids_batch` (many lines -> ids, through tf.text where exact:
:mod:`bert_tf.tokenization.batch_wordpiece`),
:func:`vocab_looks_cased` and :func:`check_vocab_matches_case` (refuse a
cased vocab with ``--do_lower_case=True``), and clearer errors (:class:`CaseMismatchError`,
:class:`UnknownTokenError`, :class:`bert_tf.errors.ConfigError` for a bad vocab file).

How it is made fast without changing a single output:

* The per-character passes of ``BasicTokenizer`` (clean text, CJK spacing, accent stripping,
  punctuation splitting) are done with ``str.translate`` over lazily filled tables whose entries
  come from the same character-class functions as the original (:func:`_is_control`,
  :func:`_is_whitespace`, :func:`_is_punctuation`, the CJK ranges, category ``Mn``). A table entry
  is computed the first time a character is seen, with the running Python's ``unicodedata``.
* Everything after the first whitespace split depends only on the word, so
  :class:`FullTokenizer` caches word -> word pieces and word -> ids (``cache_size`` words
  each; a full cache is emptied and refilled), and :meth:`FullTokenizer.tokenize_to_ids`
  gives the ids without a second pass over the tokens.
* The whitespace split is done on the raw line with ``str.split()``, before cleaning: that is
  the original's split of the cleaned line whenever the line has none of the few characters
  that ``str.split()`` splits on but cleaning deletes (:data:`SPLIT_DELETED_CHARS`: the
  controls ``\x0b \x0c \x1c-\x1f \x85``), because cleaning maps every other whitespace
  character to a space (or keeps it, U+2028/U+2029, which ``str.split()`` splits on too) and
  is otherwise a per-character map that adds only spaces. A line with one of those characters
  has them deleted first (what cleaning does to them anyway). Each word is then cleaned,
  CJK-spaced and split on its own, by the original steps, when it is first seen.
* A word that is ASCII without control characters takes a shortcut that is the same
  algorithm: cleaning, CJK spacing and accent stripping leave it unchanged, lower-casing is
  ``str.lower``, and its punctuation (all non-alphanumeric printable ASCII, the original's
  ASCII ranges) is split off by one regex.
* The greedy longest-match-first search at each position starts with the longest vocab entry
  that begins with the character there: a longer candidate cannot be in the vocab, so the
  result is unchanged.

The vocab dict is treated as read-only once a tokenizer is built (the cache and the match
length bound are computed from it).
"""

import collections
import itertools
import re
import sys
from typing import Callable, Iterable, List, Mapping, Optional, Sequence, Tuple

from bert_tf.errors import ConfigError, FlagError, InputDataError
# The original module's names, defined with the two tokenizers FullTokenizer chains.
from bert_tf.tokenization.word_tokenizers import (BasicTokenizer, TextLike, WordpieceTokenizer,
                                                  convert_to_unicode, is_control,
                                                  is_punctuation, is_whitespace, printable_text)

__all__ = [
    "CaseMismatchError", "UnknownTokenError", "BasicTokenizer", "FullTokenizer",
    "WordpieceTokenizer", "check_vocab_matches_case", "convert_by_vocab",
    "convert_ids_to_tokens", "convert_to_unicode", "convert_tokens_to_ids", "load_vocab",
    "printable_text", "validate_case_matches_checkpoint", "vocab_looks_cased",
    "whitespace_tokenize", "is_whitespace", "is_control", "is_punctuation",
    "SPLIT_DELETED_CHARS",
]

# The original module's private names for the three character classes
# (``tokenization._is_control``...), kept for code written against it.
_is_whitespace, _is_control, _is_punctuation = is_whitespace, is_control, is_punctuation

# Checkpoint directory names of the released models and the casing they were trained with
# (spec 4.6). Note that the Chinese model counts as lower-cased.
_LOWER_CASED_MODELS = frozenset([
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
])
_CASED_MODELS = frozenset([
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
])
# The last path component ([A-Za-z0-9_-]) right before "/bert_model.ckpt", anchored at the start
# with a lazy prefix. The "." is a regex wildcard, exactly as in the original pattern.
_MODEL_NAME_RE = re.compile(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt")

# The characters that str.split() splits on but the original's _clean_text deletes (they are
# controls, category Cc): exactly {c : c.isspace() and c is deleted by cleaning} over all of
# Unicode (tests/tokenization/test_wordpiece_fast_path.py checks this with the running Python). Every
# other str.isspace() character is a space after cleaning, or is kept and split on later
# (U+2028, U+2029: the original's whitespace_tokenize is str.split() too).
SPLIT_DELETED_CHARS = "\x0b\x0c\x1c\x1d\x1e\x1f\x85"
_SPLIT_DELETED_RE = re.compile("[" + SPLIT_DELETED_CHARS + "]")
# The original's punctuation split of a printable-ASCII word: every non-alphanumeric
# character (33-47, 58-64, 91-96, 123-126) is a piece of its own.
_ASCII_BASIC_RE = re.compile("[A-Za-z0-9]+|[^A-Za-z0-9]")
# FullTokenizer.tokenize_to_ids_batch uses tf.text by itself (when TensorFlow is already
# imported) from _MIN_BUILD_LINES lines on, which pay building the tf.text tokenizer (~0.23 s
# of CPU for a 30k vocab; the per-line path costs ~19 us a line more: even at ~19k lines), and once it is built from _MIN_FAST_LINES lines on, which pay a
# tf.text call over the cached per-line path (bench/bench_tokenizer.py: small_batches and
# construction_cpu_s_median measure both).
_MIN_FAST_LINES = 256
_MIN_BUILD_LINES = 32768


class CaseMismatchError(FlagError, ValueError):
    """``--do_lower_case`` does not fit the checkpoint or the vocab.

    A :class:`bert_tf.errors.FlagError` (scripts print it as one line and exit 1) and a
    ``ValueError`` (what the original raised).
    """


class UnknownTokenError(KeyError, InputDataError):
    """A token (or id) is not in the vocab; ``args[0]`` is the missing item, as in the original.

    The original raised a bare ``KeyError(token)``; this subclass keeps that (``except KeyError``
    still works) and adds a message that says what was missing and why, naming the vocab file
    when a :class:`FullTokenizer` raised it. It is also an
    :class:`bert_tf.errors.InputDataError`, so the scripts print it as one ``error:`` line.
    """

    def __init__(self, item, kind: str = "token", vocab_size: int = 0, vocab_file: str = ""):
        super().__init__(item)
        self.item = item
        self.kind = kind
        self.vocab_size = vocab_size
        self.vocab_file = vocab_file

    def __str__(self):
        where = f"{self.vocab_file}: " if self.vocab_file else ""
        return where + self._what()

    def _what(self) -> str:
        if self.vocab_size == 0:
            return f"{self.kind} {self.item!r} is not in the vocabulary: the vocab is empty"
        if self.kind == "token" and self.item == "[UNK]":
            return (f"token '[UNK]' is not in the vocabulary ({self.vocab_size} entries): "
                    "tokenize() gives [UNK] for a word it cannot split, so the vocab needs an "
                    "[UNK] line")
        return (f"{self.kind} {self.item!r} is not in the vocabulary ({self.vocab_size} entries); "
                "conversion has no [UNK] fallback (as in the original), so every token "
                "converted must be a vocab line")


# ---------------------------------------------------------------------------------------------
# Vocabulary (spec 4.2)
# ---------------------------------------------------------------------------------------------

def _read_bytes(vocab_file: str) -> bytes:
    """Whole file as bytes; ``tf.io.gfile`` for URLs (gs://...), plain ``open`` otherwise."""
    if "://" in vocab_file:
        import tensorflow as tf  # only needed for remote file systems
        with tf.io.gfile.GFile(vocab_file, "rb") as reader:
            return reader.read()
    with open(vocab_file, "rb") as reader:
        return reader.read()


def load_vocab(vocab_file: str) -> "collections.OrderedDict[str, int]":
    """Loads a WordPiece vocab file into an ordered dict token -> id.

    Each ``\\n``-terminated line is decoded as UTF-8 and ``.strip()``-ed; its 0-based line number
    is the token's id. A blank line is stored as the token ``""`` and still uses an id. If a token
    appears twice the later id wins, at the first insertion position. Source: original
    ``load_vocab`` (spec 4.2).

    Raises:
      ConfigError: the file is missing, unreadable or empty (the original failed later with a
        bare ``KeyError: '[UNK]'``), or a line is not valid UTF-8 (names the path and the line).
    """
    try:
        data = _read_bytes(vocab_file)
    except (OSError, ValueError, TypeError) as e:
        raise ConfigError(f"cannot read vocab file {vocab_file!r}: {e}") from e
    except Exception as e:  # tf.errors.* for remote paths
        if type(e).__module__.startswith("tensorflow"):
            raise ConfigError(f"cannot read vocab file {vocab_file!r}: {e}") from e
        raise
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # text after the last "\n" is empty: end of file, not a blank line
    vocab = collections.OrderedDict()
    for index, raw in enumerate(lines):
        try:
            token = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError(
                f"vocab file {vocab_file!r} line {index + 1} is not valid UTF-8: {e}") from e
        vocab[token.strip()] = index
    if not vocab:
        raise ConfigError(f"vocab file {vocab_file!r} is empty: a WordPiece vocab has one token "
                          f"per line ([PAD], [UNK], [CLS], [SEP], [MASK], ...)")
    return vocab


def _lookup(vocab: Mapping, items: Iterable, kind: str) -> list:
    try:
        return list(map(vocab.__getitem__, items))
    except KeyError as e:
        raise UnknownTokenError(e.args[0], kind, len(vocab)) from None


def convert_by_vocab(vocab: Mapping, items: Iterable) -> list:
    """``[vocab[item] for item in items]``; a missing item raises :class:`UnknownTokenError`.

    :class:`UnknownTokenError` is a ``KeyError`` whose ``args[0]`` is the item, like the
    original's plain dict lookup. Source: original ``convert_by_vocab`` (spec 4.2).
    """
    return _lookup(vocab, items, "item")


def convert_tokens_to_ids(vocab: Mapping[str, int], tokens: Iterable[str]) -> List[int]:
    """Token strings -> ids (python ints); raises :class:`UnknownTokenError` (a KeyError)."""
    return _lookup(vocab, tokens, "token")


def convert_ids_to_tokens(inv_vocab: Mapping[int, str], ids: Iterable[int]) -> List[str]:
    """Ids -> token strings via the inverted vocab; raises :class:`UnknownTokenError`."""
    return _lookup(inv_vocab, ids, "id")


def whitespace_tokenize(text: str) -> List[str]:
    """``text.strip().split()``: splits on any Unicode whitespace Python knows (spec 4.4 step 4).

    The original strips first and returns [] for an empty result; ``str.split()`` with no
    arguments does both.
    """
    return text.split()


class _WordCache(dict):
    """``key -> fn(key)``, computed on the first lookup of a key; at most ``max_size`` keys
    (when full, it is emptied before the next key is stored).

    A hit is a plain ``dict`` lookup (``map(cache.__getitem__, words)`` runs in C). ``fn``
    raising stores nothing.
    """

    __slots__ = ("_fn", "_max_size")

    def __init__(self, fn: Callable, max_size: int):
        super().__init__()
        self._fn = fn
        self._max_size = max_size

    def __missing__(self, key):
        value = self._fn(key)
        if len(self) >= self._max_size:
            self.clear()
        self[key] = value
        return value


class FullTokenizer:
    """BasicTokenizer then WordpieceTokenizer, with the vocab read from ``vocab_file``.

    Attributes (as in the original): ``vocab`` (OrderedDict token -> id), ``inv_vocab``
    (dict id -> token), ``basic_tokenizer``, ``wordpiece_tokenizer``. Spec 4.3.

    Args:
      vocab_file: path of a WordPiece vocab (one token per line; gs:// etc. via tf.io.gfile).
      do_lower_case: lower-case and strip accents (True for uncased models).
      cache_size: (bert_tf) words whose pieces (and ids) are cached; 0 disables the caches.
        The caches assume ``vocab`` and the two sub-tokenizers are not changed after
        construction.

    Raises:
      ConfigError: the vocab file is missing or unreadable.
    """

    def __init__(self, vocab_file: str, do_lower_case: bool = True, *, cache_size: int = 1 << 16):
        self.vocab_file = vocab_file
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {v: k for k, v in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(do_lower_case=do_lower_case)
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)
        self._cache_size = cache_size
        self._batch = None  # the tf.text batch tokenizer, built on first use
        self._make_cache()

    def _make_cache(self):
        wordpiece = self.wordpiece_tokenizer.tokenize_word
        if not self._cache_size:
            self._tokens_of_basic = wordpiece
            self._ids_of_basic = self._uncached_basic_ids
            self._word_pieces = self._uncached_word_pieces
            self._word_ids = self._uncached_word_ids
            return
        size = self._cache_size
        # Basic token (after the punctuation split) -> pieces / ids, shared by the words
        # (``said`` in ``said``, ``Said`` and ``said,``).
        tokens_of_basic = _WordCache(lambda token: tuple(wordpiece(token)), size)
        ids_of_basic = _WordCache(self._uncached_basic_ids, size)
        self._tokens_of_basic = tokens_of_basic.__getitem__
        self._ids_of_basic = ids_of_basic.__getitem__
        # Raw word of str.split() -> pieces / ids.
        self._word_pieces = _WordCache(self._make_word_fn(self._tokens_of_basic), size).__getitem__
        self._word_ids = _WordCache(self._make_word_fn(self._ids_of_basic), size).__getitem__

    def _make_word_fn(self, of_basic: Callable) -> Callable:
        """``word -> tuple(chain(map(of_basic, basic tokens of word)))`` (see
        :meth:`_basic_tokens`), written out with local names: it runs once per new word."""
        lower = self.basic_tokenizer.do_lower_case
        findall = _ASCII_BASIC_RE.findall
        chain = itertools.chain.from_iterable
        exact_basic_tokens = self._exact_basic_tokens

        def word_fn(word: str) -> tuple:
            if word.isascii() and word.isprintable():  # as in _basic_tokens
                if lower:
                    word = word.lower()
                if word.isalnum():
                    return of_basic(word)
                return tuple(chain(map(of_basic, findall(word))))
            return tuple(chain(map(of_basic, exact_basic_tokens(word))))
        return word_fn

    def __getstate__(self):  # the caches hold bound methods: drop them for pickling
        state = self.__dict__.copy()
        for name in ("_word_pieces", "_word_ids", "_tokens_of_basic", "_ids_of_basic"):
            state.pop(name, None)
        state["_batch"] = None  # holds TF objects: rebuilt on first use
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._make_cache()

    def _basic_tokens(self, word: str) -> Sequence[str]:
        """The original BasicTokenizer's tokens of one word of ``str.split()`` (a word with no
        ``str.isspace()`` character; it is cleaned, CJK-spaced and split here)."""
        if word.isascii() and word.isprintable():
            # Printable ASCII (no space: it is a word): cleaning, CJK spacing and accent
            # stripping change nothing, lower-casing is str.lower, and every non-alphanumeric
            # character is punctuation: the same steps, done by str.lower and one regex.
            if self.basic_tokenizer.do_lower_case:
                word = word.lower()
            return (word,) if word.isalnum() else _ASCII_BASIC_RE.findall(word)
        return self._exact_basic_tokens(word)

    def _exact_basic_tokens(self, word: str) -> List[str]:
        basic = self.basic_tokenizer
        tokens = []
        for part in basic.split_words(word):
            tokens.extend(basic.tokenize_word(part))
        return tokens

    def _uncached_basic_ids(self, token: str) -> Tuple[int, ...]:
        pieces = self.wordpiece_tokenizer.tokenize_word(token)
        try:
            return tuple(map(self.vocab.__getitem__, pieces))
        except KeyError:
            pass
        self.convert_tokens_to_ids(pieces)  # raises the UnknownTokenError (names the vocab)
        raise AssertionError("unreachable: a piece was not in the vocab")

    def _uncached_word_pieces(self, word: str) -> Tuple[str, ...]:
        return tuple(itertools.chain.from_iterable(
            map(self._tokens_of_basic, self._basic_tokens(word))))

    def _uncached_word_ids(self, word: str) -> Tuple[int, ...]:
        return tuple(itertools.chain.from_iterable(
            map(self._ids_of_basic, self._basic_tokens(word))))

    # The words of the original's whitespace split of the cleaned text, each still to be
    # cleaned (see the module docstring), are those of str.split() of the raw text once the
    # characters that str.split() splits on but cleaning deletes are deleted:
    #     if _SPLIT_DELETED_RE.search(text) is not None: text = _SPLIT_DELETED_RE.sub("", text)
    #     words = text.split()
    # (written out in tokenize and tokenize_to_ids: a call per line costs ~5% here).

    def tokenize(self, text: TextLike) -> List[str]:
        """Text (str or UTF-8 bytes) -> list of WordPiece token strings, all in the vocab.

        Invalid UTF-8 bytes are dropped; any other input type raises ValueError. Source:
        original ``FullTokenizer.tokenize`` (spec 4.3).
        """
        if not isinstance(text, str):
            text = convert_to_unicode(text)
        if _SPLIT_DELETED_RE.search(text) is not None:
            text = _SPLIT_DELETED_RE.sub("", text)
        return list(itertools.chain.from_iterable(map(self._word_pieces, text.split())))

    def tokenize_to_ids(self, text: TextLike) -> List[int]:
        """(bert_tf) ``convert_tokens_to_ids(tokenize(text))`` in one pass (python ints).

        Raises:
          UnknownTokenError: a token is not in the vocab (only ``[UNK]`` can be missing: a
            vocab without an ``[UNK]`` line), as ``convert_tokens_to_ids`` would.
          ValueError: ``text`` is neither str nor bytes.
        """
        if not isinstance(text, str):
            text = convert_to_unicode(text)
        if _SPLIT_DELETED_RE.search(text) is not None:
            text = _SPLIT_DELETED_RE.sub("", text)
        return list(itertools.chain.from_iterable(map(self._word_ids, text.split())))

    def _batch_tokenizer(self, texts: Sequence[TextLike], use_tf_text):
        """The :class:`~bert_tf.tokenization.batch_wordpiece.BatchWordpieceTokenizer` to use
        for ``texts``, or None for the per-line path (see :meth:`tokenize_to_ids_batch`)."""
        if use_tf_text is None:
            built = getattr(self, "_batch", None) is not None
            use_tf_text = ("tensorflow" in sys.modules
                           and len(texts) >= (_MIN_FAST_LINES if built else _MIN_BUILD_LINES))
        if not use_tf_text:
            return None
        if getattr(self, "_batch", None) is None:
            from bert_tf.tokenization.batch_wordpiece import BatchWordpieceTokenizer
            self._batch = BatchWordpieceTokenizer(self)
        return self._batch

    def tokenize_to_ids_batch(self, texts: Sequence[TextLike],
                              use_tf_text: Optional[bool] = None) -> List[List[int]]:
        """(bert_tf) ``[self.tokenize_to_ids(t) for t in texts]``, the same ids, faster.

        With tf.text (``use_tf_text`` True, or None while TensorFlow is already imported and
        there are at least 32768 lines, or 256 once its tf.text tokenizer is built), the
        printable-ASCII lines go to one batched tf.text
        ``FastBertTokenizer`` call per 8192 lines and the rest to the exact path; see
        :mod:`bert_tf.tokenization.batch_wordpiece` for why that is exact. ``use_tf_text=False``:
        the per-line path only (TensorFlow is never imported by it).

        Returns one list of python-int ids per line, in input order. Raises as
        :meth:`tokenize_to_ids`.
        """
        batch = self._batch_tokenizer(texts, use_tf_text)
        if batch is None:
            return list(map(self.tokenize_to_ids, texts))
        return batch.tokenize_to_ids(texts)

    def tokenize_batch(self, texts: Sequence[TextLike]) -> List[List[str]]:
        """(bert_tf) ``[self.tokenize(t) for t in texts]``. (Token strings through tf.text plus
        ``inv_vocab`` measured 0.87-0.98x of this on MRPC+STS-B: only ids take tf.text.)"""
        return [self.tokenize(text) for text in texts]

    def convert_tokens_to_ids(self, tokens: Iterable[str]) -> List[int]:
        """Tokens -> ids; raises :class:`UnknownTokenError` (a KeyError) for an unknown token."""
        try:
            return convert_tokens_to_ids(self.vocab, tokens)
        except UnknownTokenError as e:
            e.vocab_file = self.vocab_file
            raise

    def convert_ids_to_tokens(self, ids: Iterable[int]) -> List[str]:
        """Ids -> tokens; raises :class:`UnknownTokenError` (a KeyError) for an unknown id."""
        try:
            return convert_ids_to_tokens(self.inv_vocab, ids)
        except UnknownTokenError as e:
            e.vocab_file = self.vocab_file
            raise


# ---------------------------------------------------------------------------------------------
# Case checks (spec 4.6, plus the bert_tf vocab check)
# ---------------------------------------------------------------------------------------------

def validate_case_matches_checkpoint(do_lower_case: bool, init_checkpoint: str) -> None:
    """Checks ``do_lower_case`` against the released model named in ``init_checkpoint``.

    The model name is the path component right before ``/bert_model.ckpt``. Uncased,
    multilingual (uncased) and Chinese models need ``do_lower_case=True``; cased and
    multi_cased models need False. Any other name, a path that does not match (e.g.
    ``model.ckpt-1000``) or an empty checkpoint is not checked. Source: original
    ``validate_case_matches_checkpoint`` (spec 4.6).

    Raises:
      CaseMismatchError: (a FlagError and a ValueError) the flag contradicts the model name.
    """
    if not init_checkpoint:
        return
    match = _MODEL_NAME_RE.match(init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)
    if model_name in _LOWER_CASED_MODELS and not do_lower_case:
        given, case_name, wanted = "False", "lowercased", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        given, case_name, wanted = "True", "cased", "False"
    else:
        return
    raise CaseMismatchError(
        f"--do_lower_case={given} does not fit --init_checkpoint={init_checkpoint}: "
        f"`{model_name}` seems to be a {case_name} model, so pass --do_lower_case={wanted} "
        "to fine-tune it the way it was pre-trained. (The check reads only the folder name "
        "before /bert_model.ckpt: for a renamed or re-trained model, put the checkpoint in a "
        "folder with another name.)")


def _is_special_token(token: str) -> bool:
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


def vocab_looks_cased(vocab: Iterable[str]) -> bool:
    """(bert_tf) Heuristic: True when more than 1% of the vocab's tokens have upper case.

    A token counts when ``token.lower() != token``; bracketed special tokens (``[UNK]``,
    ``[unused0]``) are ignored. The bert-base-uncased vocab has 0 such tokens out of 30522
    (``ℝ`` has no lower-case form), a cased vocab has thousands.
    """
    total = cased = 0
    for token in vocab:
        if _is_special_token(token):
            continue
        total += 1
        if token.lower() != token:
            cased += 1
    return total > 0 and cased * 100 > total


def check_vocab_matches_case(vocab: Iterable[str], do_lower_case: bool,
                             vocab_file: str = "") -> None:
    """(bert_tf) Refuses a cased vocab with ``do_lower_case=True``, for the scripts.

    Lower-cased input can never produce the vocab's capitalised tokens, so such a run silently
    wastes the cased model. (An uncased vocab with ``do_lower_case=False`` is allowed, as in the
    original.)

    Raises:
      CaseMismatchError: ``do_lower_case`` is True and :func:`vocab_looks_cased` is True.
    """
    if do_lower_case and vocab_looks_cased(vocab):
        where = f" --vocab_file={vocab_file}" if vocab_file else ""
        raise CaseMismatchError(
            f"a cased vocab{where} with --do_lower_case=True: lower-cased text cannot match its "
            "capitalised tokens; pass --do_lower_case=False for a cased model")
