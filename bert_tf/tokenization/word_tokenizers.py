"""BasicTokenizer and WordpieceTokenizer of the original `tokenization.py`: the two steps that
:class:`bert_tf.tokenization.wordpiece.FullTokenizer` chains (spec `bert.md` 4.1, 4.4, 4.5).

:class:`BasicTokenizer` (text -> words: cleaning, CJK spacing, whitespace split, lower-casing and
accent stripping, punctuation split), :class:`WordpieceTokenizer` (a word -> greedy
longest-match-first pieces), the character classes they use (:func:`is_whitespace`,
:func:`is_control`, :func:`is_punctuation`, the CJK ranges) and :func:`convert_to_unicode` /
:func:`printable_text`, with the original's behaviour exactly.

The per-character passes of ``BasicTokenizer`` are ``str.translate`` over lazily filled tables
whose entries come from the same character-class functions as the original; the search of
``WordpieceTokenizer`` starts at the longest vocab entry that begins with the character there
(see :mod:`bert_tf.tokenization.wordpiece` for why neither changes an output). The original
module's names of all of these are importable from :mod:`bert_tf.tokenization.wordpiece`.
"""

import unicodedata
from typing import Dict, List, Mapping, Union

TextLike = Union[str, bytes]

# CJK Unified Ideographs blocks that get spaces around each character (spec 4.4 step 3).
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


# ---------------------------------------------------------------------------------------------
# Unicode helpers (spec 4.1)
# ---------------------------------------------------------------------------------------------

def convert_to_unicode(text: TextLike) -> str:
    """Returns ``text`` as ``str``: a ``str`` as is, ``bytes`` decoded as UTF-8.

    Invalid UTF-8 bytes are dropped silently (``errors="ignore"``), as in the original.
    Raises ValueError for any other type. Source: original ``convert_to_unicode`` (spec 4.1).
    """
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)} (expected str or bytes)")


def printable_text(text: TextLike) -> str:
    """Returns ``text`` as the native ``str`` type, for logging (original ``printable_text``).

    Same conversions and errors as :func:`convert_to_unicode` on Python 3.
    """
    return convert_to_unicode(text)


# ---------------------------------------------------------------------------------------------
# Character classes (spec 4.4)
# ---------------------------------------------------------------------------------------------

def _is_whitespace(char: str) -> bool:
    """Space, tab, newline, carriage return, or Unicode category Zs (U+00A0, U+3000...)."""
    if char == " " or char == "\t" or char == "\n" or char == "\r":
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char: str) -> bool:
    """Category Cc or Cf, except tab, newline and carriage return (which are whitespace)."""
    if char == "\t" or char == "\n" or char == "\r":
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char: str) -> bool:
    """All 32 printable non-alphanumeric ASCII characters, or any Unicode category P*."""
    cp = ord(char)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(char).startswith("P")


# The three character classes under public names: :mod:`bert_tf.tokenization.wordpiece` gives
# them the original module's names (``tokenization._is_control``...) and
# :mod:`bert_tf.bert.tokenization` exports them.
is_whitespace, is_control, is_punctuation = _is_whitespace, _is_control, _is_punctuation


def _is_chinese_char(cp: int) -> bool:
    """True for a code point in the CJK Unified Ideographs blocks of spec 4.4 step 3."""
    for low, high in _CJK_RANGES:
        if low <= cp <= high:
            return True
    return False


class _LazyCharTable(dict):
    """A ``str.translate`` table filled on first sight of each code point by ``fn(char)``.

    ``fn`` returns the replacement string, or None to delete the character.
    """

    def __init__(self, fn):
        super().__init__()
        self._fn = fn

    def __missing__(self, cp):
        value = self._fn(chr(cp))
        self[cp] = value
        return value


def _clean_and_space_cjk(char: str):
    # Original _clean_text: drop NUL, U+FFFD and controls; whitespace -> " ". Then
    # _tokenize_chinese_chars: " c " around CJK ideographs (never controls or whitespace).
    cp = ord(char)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        return None
    if _is_whitespace(char):
        return " "
    if _is_chinese_char(cp):
        return " " + char + " "
    return char


def _split_punctuation(char: str) -> str:
    return " " + char + " " if _is_punctuation(char) else char


def _drop_nonspacing_mark(char: str):
    return None if unicodedata.category(char) == "Mn" else char


_CLEAN_TABLE = _LazyCharTable(_clean_and_space_cjk)
_PUNCT_TABLE = _LazyCharTable(_split_punctuation)
_MN_TABLE = _LazyCharTable(_drop_nonspacing_mark)


def _strip_accents(text: str) -> str:
    """NFD, then delete every category Mn character (original ``_run_strip_accents``)."""
    if text.isascii():  # NFD of ASCII is itself and ASCII has no Mn
        return text
    return unicodedata.normalize("NFD", text).translate(_MN_TABLE)


# ---------------------------------------------------------------------------------------------
# Tokenizers (spec 4.3 - 4.5)
# ---------------------------------------------------------------------------------------------

class BasicTokenizer:
    """Text cleaning, CJK spacing, whitespace split, (lower + accent strip), punctuation split.

    Source: original ``BasicTokenizer`` (spec 4.4). There is no "never split" list: ``[CLS]`` in
    the input becomes ``[``, ``cls``, ``]``.
    """

    def __init__(self, do_lower_case: bool = True):
        self.do_lower_case = do_lower_case

    def tokenize(self, text: TextLike) -> List[str]:
        """Splits ``text`` (str, or UTF-8 bytes) into basic tokens (list of str)."""
        output = []
        for word in self.split_words(convert_to_unicode(text)):
            output.extend(self.tokenize_word(word))
        return output

    def split_words(self, text: str) -> List[str]:
        """Spec 4.4 steps 2-4: clean text, space out CJK characters, whitespace split."""
        return text.translate(_CLEAN_TABLE).split()

    def tokenize_word(self, word: str) -> List[str]:
        """Spec 4.4 steps 5-6 for one word of :meth:`split_words` (no whitespace inside)."""
        if self.do_lower_case:
            word = _strip_accents(word.lower())
        # Each punctuation char becomes " p "; the split also does step 6 (join, re-split).
        return word.translate(_PUNCT_TABLE).split()

    # Original private helpers, kept for code written against them.
    def _run_strip_accents(self, text: str) -> str:
        return _strip_accents(text)

    def _run_split_on_punc(self, text: str) -> List[str]:
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append(char)
                start_new_word = True
            elif start_new_word:
                output.append(char)
                start_new_word = False
            else:
                output[-1] += char
        return output

    def _tokenize_chinese_chars(self, text: str) -> str:
        return "".join(" " + c + " " if _is_chinese_char(ord(c)) else c for c in text)

    def _is_chinese_char(self, cp: int) -> bool:
        return _is_chinese_char(cp)

    def _clean_text(self, text: str) -> str:
        return "".join(
            " " if _is_whitespace(c) else c for c in text
            if not (ord(c) == 0 or ord(c) == 0xFFFD or _is_control(c)))


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece over a vocab (original ``WordpieceTokenizer``).

    A word of more than ``max_input_chars_per_word`` code points, or with any part that has no
    match, becomes a single ``unk_token`` (pieces already matched are dropped). Spec 4.5.

    Args:
      vocab: mapping token -> id (only membership is used).
      unk_token: the token emitted for a word that cannot be split.
      max_input_chars_per_word: longest word (in code points) that is split.
    """

    def __init__(self, vocab: Mapping[str, int], unk_token: str = "[UNK]",
                 max_input_chars_per_word: int = 200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        # Longest vocab entry starting with a given character, as a word-initial piece
        # ("abc", also "##abc" read literally) and as a "##" continuation (keyed on the char
        # after "##"): no longer candidate can match, so none is tried.
        self._max_initial_chars: Dict[str, int] = {}
        self._max_suffix_chars: Dict[str, int] = {}
        for token in vocab:
            if token and len(token) > self._max_initial_chars.get(token[0], 0):
                self._max_initial_chars[token[0]] = len(token)
            if len(token) > 2 and token.startswith("##"):
                if len(token) - 2 > self._max_suffix_chars.get(token[2], 0):
                    self._max_suffix_chars[token[2]] = len(token) - 2

    def tokenize(self, text: TextLike) -> List[str]:
        """Whitespace-splits ``text`` (str or UTF-8 bytes) and returns the word pieces.

        Example: ``"unaffable"`` -> ``["un", "##aff", "##able"]``; ``""`` -> ``[]``.
        """
        output = []
        for token in convert_to_unicode(text).split():
            output.extend(self.tokenize_word(token))
        return output

    def tokenize_word(self, token: str) -> List[str]:
        """Word pieces of one whitespace-free token."""
        n = len(token)
        if n > self.max_input_chars_per_word:
            return [self.unk_token]
        if n == 0:
            return []
        if token in self.vocab:  # the whole word: the first candidate the original tries
            return [token]
        vocab = self.vocab
        # Word-initial piece: longest match of token[0:end].
        end = min(n, self._max_initial_chars.get(token[0], 0))
        while end > 0 and token[:end] not in vocab:
            end -= 1
        if end == 0:
            return [self.unk_token]
        pieces = [token[:end]]
        # Continuation pieces: longest match of "##" + token[start:end].
        max_suffix = self._max_suffix_chars
        start = end
        while start < n:
            end = start + max_suffix.get(token[start], 0)
            if end > n:
                end = n
            while end > start:
                piece = "##" + token[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return [self.unk_token]
            pieces.append(piece)
            start = end
        return pieces
