"""Many lines -> WordPiece ids at once: tf.text's ``FastBertTokenizer`` where it is exact,
the exact Python path (:class:`bert_tf.tokenization.wordpiece.FullTokenizer`) elsewhere.

Issue 16. TensorFlow and tensorflow_text are imported when a :class:`BatchWordpieceTokenizer` is
built, never when this module is imported (create_pretraining_data runs without TensorFlow).
:meth:`FullTokenizer.tokenize_to_ids_batch` builds one only when TensorFlow is already loaded
and the batch has at least ``wordpiece._MIN_FAST_LINES`` lines.

Why the tf.text lines are exact (the original: ``tokenization.py`` of google-research/bert,
spec ``bert.md`` 4.3-4.5). A line goes to tf.text only when every character is printable ASCII
(U+0020-U+007E) or one of tab, newline, carriage return. On such a line:

* the original's ``_clean_text`` deletes nothing (no NUL, U+FFFD, Cc or Cf character is left:
  the only ASCII Cc characters allowed are ``\\t \\n \\r``, which it maps to a space, and which
  tf.text splits words on as whitespace);
* ``_tokenize_chinese_chars`` adds nothing (no CJK ideograph);
* with ``do_lower_case`` the original's ``str.lower`` + NFD + Mn removal is ASCII
  lower-casing (NFD of ASCII is itself, ASCII has no Mn), which is what tf.text's
  ``lower_case_nfd_strip_accents`` (NFKC case folding, NFD, Mn removal) does to ASCII; the
  NFKC/case-folding differences of tf.text (``½ ´ … µ ™ ς``) are all outside ASCII. Cased
  (``do_lower_case=False``): neither side normalizes;
* every non-alphanumeric printable ASCII character is punctuation to both (the original's
  ``_is_punctuation`` takes the ranges 33-47, 58-64, 91-96, 123-126 whole; tf.text uses the
  same BERT definition), so both split the line into the same words; there is no "never
  split" list on either side: ``[UNK]`` in the text is ``[``, ``unk``, ``]``;
* one byte is one character, so tf.text's ``max_bytes_per_word`` set to the original's
  ``max_input_chars_per_word`` (200) gives ``[UNK]`` for exactly the same words (more than
  200 characters);
* the word pieces: tf.text's ``FastWordpieceTokenizer`` (LinMaxMatch) gives the pieces of
  greedy longest-match-first with ``##`` continuations, and ``[UNK]`` for a word with an
  unmatched part, as the original's ``WordpieceTokenizer``.

tf.text is used only with a vocab it sees exactly as ``load_vocab`` does: ids 0..n-1 in line
order (no repeated token, no blank line, no token with whitespace inside) and with the unknown
token in it (else the exact path raises :class:`UnknownTokenError`, as the original). Any
other vocab, and every other line (any non-ASCII or other control character), takes the exact
path. tests/tokenization/test_batch_wordpiece.py checks all of this against the exact path,
the original's golden file and, where ``$BERT_ORIGINAL_DIR`` exists, the original code itself.
"""

import gc
import re
from typing import List, Mapping, Sequence, Union

TextLike = Union[str, bytes]

# Lines per tf.text call (bounds the memory of one ragged result).
CHUNK_LINES = 8192

# Printable ASCII plus tab, newline, carriage return (checked after str.isprintable fails).
_ASCII_TEXT_RE = re.compile(r"[\t\n\r\x20-\x7e]*")


def is_fast_line(text: str) -> bool:
    """True for a line whose characters are all printable ASCII or ``\\t \\n \\r`` (the lines
    tf.text tokenizes exactly, see the module docstring)."""
    return text.isascii() and (text.isprintable() or _ASCII_TEXT_RE.fullmatch(text) is not None)


def vocab_fits_tf_text(vocab: Mapping[str, int], unk_token: str) -> bool:
    """True when tf.text, given ``list(vocab)``, gives every token the id ``vocab`` gives it.

    That is: ids are 0..n-1 in insertion order (``load_vocab`` of a file with no repeated
    token), no token is empty (a blank line) or has whitespace inside, and ``unk_token`` is in
    it (a vocab without it makes the exact path raise, as the original).
    """
    if unk_token not in vocab:
        return False
    for index, (token, token_id) in enumerate(vocab.items()):
        if token_id != index or not token or len(token.split()) != 1:
            return False
    return True


class BatchWordpieceTokenizer:
    """Lists of lines -> lists of ids, equal to ``[tokenizer.tokenize_to_ids(t) for t in texts]``.

    Args:
      tokenizer: a :class:`bert_tf.tokenization.wordpiece.FullTokenizer` (its vocab, casing,
        ``max_input_chars_per_word`` and unknown token are used; its exact path tokenizes the
        lines tf.text is not given). Not changed.

    Imports TensorFlow and tensorflow_text and builds a tf.text ``FastBertTokenizer`` (about
    1 s of CPU for a 30k vocab) when the vocab fits (:func:`vocab_fits_tf_text`); otherwise
    every line takes the exact path. Attribute ``uses_tf_text`` says which.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        wordpiece = tokenizer.wordpiece_tokenizer
        self.uses_tf_text = vocab_fits_tf_text(tokenizer.vocab, wordpiece.unk_token)
        self._fast = None
        if self.uses_tf_text:
            import tensorflow as tf
            import tensorflow_text as tf_text
            self._tf = tf
            self._fast = tf_text.FastBertTokenizer(
                vocab=list(tokenizer.vocab), suffix_indicator="##",
                max_bytes_per_word=wordpiece.max_input_chars_per_word,
                token_out_type=tf.int64, unknown_token=wordpiece.unk_token,
                lower_case_nfd_strip_accents=tokenizer.basic_tokenizer.do_lower_case)

    def tokenize_to_ids(self, texts: Sequence[TextLike]) -> List[List[int]]:
        """``texts`` (str, or UTF-8 bytes; invalid bytes dropped as in ``convert_to_unicode``)
        -> one list of python-int ids per line, in input order (no [CLS]/[SEP]).

        Raises:
          UnknownTokenError: a vocab without the unknown token met a word it cannot split (the
            exact path's error; such a vocab never reaches tf.text).
          ValueError: an item is neither str nor bytes.
        """
        exact = self.tokenizer.tokenize_to_ids
        if self._fast is None:
            return list(map(exact, texts))
        out: List[List[int]] = [None] * len(texts)  # type: ignore[list-item]
        fast_index, fast_texts = [], []
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                text = text.decode("utf-8", "ignore") if isinstance(text, bytes) else text
            if isinstance(text, str) and is_fast_line(text):
                fast_index.append(i)
                fast_texts.append(text)
            else:
                out[i] = exact(text)
        for start in range(0, len(fast_texts), CHUNK_LINES):
            index = fast_index[start:start + CHUNK_LINES]
            ragged = self._fast.tokenize(self._tf.constant(fast_texts[start:start + CHUNK_LINES]))
            flat = ragged.flat_values.numpy().tolist()
            splits = ragged.row_splits.numpy().tolist()
            # Many small int lists: the cyclic GC would scan the heap several times for
            # nothing (ints cannot form cycles); it is paused for this loop only.
            gc_was_enabled = gc.isenabled()
            gc.disable()
            try:
                for k, i in enumerate(index):
                    out[i] = flat[splits[k]:splits[k + 1]]
            finally:
                if gc_was_enabled:
                    gc.enable()
        return out
