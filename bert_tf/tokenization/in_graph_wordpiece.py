"""BERT WordPiece tokenization and `[CLS] A [SEP] B [SEP]` packing as TF ops (a Keras layer).

:class:`BertTextPreprocessor` gives, for raw text in the graph, exactly the ids that
:class:`bert_tf.tokenization.wordpiece.FullTokenizer` plus :func:`bert_tf.data.sequence_pairs.
build_bert_inputs` give in Python (the original ``tokenization.py`` and ``convert_single_example``
of ``run_classifier.py`` / ``extract_features.py``; spec ``bert.md`` sections 4 and 8.4).

The steps mirror ``BasicTokenizer`` then ``WordpieceTokenizer`` (spec 4.4, 4.5):

1. invalid UTF-8 bytes are dropped (``convert_to_unicode``'s ``errors="ignore"``);
2. ``_clean_text``: NUL, U+FFFD and every Cc/Cf character except tab/newline/CR are *removed*;
   whitespace (space, tab, newline, CR, Zs) becomes a space, as do U+2028/U+2029 (which the
   original's ``str.split()`` splits on);
3. ``_tokenize_chinese_chars``: spaces around each CJK ideograph;
4. with ``do_lower_case``: ``str.lower`` then NFD then removal of category Mn, through
   :class:`bert_tf.tokenization.in_graph_text.ExactStringMap` (ICU's lower/NFD, with Python's
   result for each code point where ICU's Unicode version disagrees);
5. ``_run_split_on_punc``: spaces around each punctuation character (ASCII symbols and P*);
6. whitespace split; a word over 200 code points -> ``[UNK]``; ``tf_text.
   FastWordpieceTokenizer`` on each word (LinMaxMatch: the same pieces as the original's greedy
   longest match first with ``##`` continuations; a word with an unmatched part -> ``[UNK]``).

Every character class is an explicit RE2 class built from Python's ``unicodedata`` with the same
predicates as :mod:`bert_tf.tokenization.wordpiece`, so no RE2 or ICU Unicode table decides a
class. This is why tf.text's own ``BertTokenizer`` / ``FastBertTokenizer`` differ from the
original: they lower-case with NFKC case folding (``½`` -> ``1⁄2``, full-width -> ASCII, ``´``
-> space + U+0301), and turn control characters such as U+0012 into word breaks instead of
removing them.
"""

import functools
from typing import Dict, Optional

import keras
import tensorflow as tf
import unicodedata

from bert_tf.errors import ConfigError
from bert_tf.tokenization import wordpiece
from bert_tf.tokenization.in_graph_text import (ExactStringMap, all_codepoints, codepoint_class,
                                                kept_pair, python_whitespace,
                                                truncated_pair_lengths)

__all__ = ["BertTextPreprocessor", "bert_char_classes", "pack_bert_inputs",
           "truncated_pair_lengths"]

MAX_INPUT_CHARS_PER_WORD = 200

# Plain TF ops without Python control flow on tensors: autograph would only cost seconds of
# source transformation each time a caller's tf.function traces them.
_NO_AUTOGRAPH = tf.autograph.experimental.do_not_convert  # WordpieceTokenizer.max_input_chars_per_word of the original


@functools.lru_cache(maxsize=None)
def bert_char_classes() -> Dict[str, str]:
    """RE2 classes of ``BasicTokenizer``'s character tests, from Python's ``unicodedata``.

    Returns a dict with keys ``removed`` (``_clean_text`` deletes), ``space`` (becomes a space:
    ``_is_whitespace`` plus what ``str.split`` splits on), ``cjk`` (``_is_chinese_char``),
    ``mn`` (category Mn, removed by ``_run_strip_accents``), ``punct`` (``_is_punctuation``).
    """
    removed, space, mn, punct = [], [], [], []
    splits = set(python_whitespace())
    for cp in all_codepoints():
        char = chr(cp)
        if cp == 0 or cp == 0xFFFD or wordpiece.is_control(char):
            removed.append(cp)
        elif wordpiece.is_whitespace(char) or cp in splits:
            space.append(cp)
        if unicodedata.category(char) == "Mn":
            mn.append(cp)
        if wordpiece.is_punctuation(char):
            punct.append(cp)
    cjk = codepoint_class(cp for low, high in _CJK_RANGES for cp in range(low, high + 1))
    return {"removed": codepoint_class(removed), "space": codepoint_class(space), "cjk": cjk,
            "mn": codepoint_class(mn), "punct": codepoint_class(punct)}


# The original's _is_chinese_char blocks (same table as bert_tf.tokenization.wordpiece).
_CJK_RANGES = (
    (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F),
)


def _py_lower_strip_accents(text: str) -> str:
    # The original's `token.lower()` then `_run_strip_accents` (NFD, drop category Mn).
    text = unicodedata.normalize("NFD", text.lower())
    return "".join(char for char in text if unicodedata.category(char) != "Mn")


@functools.lru_cache(maxsize=None)
def _lower_strip_accents_map() -> ExactStringMap:
    import tensorflow_text as tf_text

    mn = bert_char_classes()["mn"]

    def tf_fn(strings):
        lowered = tf.strings.lower(strings, encoding="utf-8")
        return tf.strings.regex_replace(tf_text.normalize_utf8(lowered, "NFD"), mn, "")

    return ExactStringMap("bert_lower_nfd_strip_mn", tf_fn, _py_lower_strip_accents)


@_NO_AUTOGRAPH
def pack_bert_inputs(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
                     max_seq_length: int, cls_id: int, sep_id: int) -> Dict[str, tf.Tensor]:
    """`[CLS] A [SEP] (B [SEP])`, truncated and zero-padded, as ``convert_single_example``.

    A row whose B has no pieces (or ``ids_b`` None) is a single sentence cut to
    ``max_seq_length - 2``; otherwise the pair is cut by ``_truncate_seq_pair`` to
    ``max_seq_length - 3`` (:func:`truncated_pair_lengths`), and B's `[SEP]` is only added
    when B keeps a piece (the original tests ``if tokens_b:`` after truncating). Segment ids are 0 for
    `[CLS] A [SEP]` and 1 for `B [SEP]`; padding has id 0, mask 0, segment 0.

    Args:
      ids_a, ids_b: int32 ragged ``[batch, (pieces)]`` word-piece ids.
      max_seq_length: python int >= 3 (>= 2 without B).
      cls_id, sep_id: python ints, the ids of `[CLS]` and `[SEP]`.

    Returns:
      dict ``input_ids``, ``input_mask``, ``segment_ids``: int32 ``[batch, max_seq_length]``.
    """
    keep_a, keep_b, dense_a, dense_b = kept_pair(ids_a, ids_b, max_seq_length)
    # Output position p holds: [CLS] at 0, A[p-1] for p in [1, keep_a], [SEP] at keep_a+1,
    # B[p-keep_a-2] for the next keep_b positions, then B's [SEP] when keep_b > 0.
    positions = tf.range(max_seq_length)[None, :]
    b_start = keep_a + 2
    length = b_start + keep_b + tf.cast(keep_b > 0, tf.int32)  # [batch, 1]
    index_a = tf.clip_by_value(positions - 1 + 0 * keep_a, 0, max_seq_length - 1)
    from_a = tf.gather(dense_a, index_a, batch_dims=1)
    from_b = tf.gather(dense_b, tf.clip_by_value(positions - b_start, 0, max_seq_length - 1),
                       batch_dims=1)
    is_sep = (positions == keep_a + 1) | ((keep_b > 0) & (positions == length - 1))
    input_ids = tf.where(positions == 0, cls_id,
                tf.where(is_sep, sep_id,
                tf.where(positions <= keep_a, from_a,
                tf.where(positions < b_start + keep_b, from_b, 0))))
    input_mask = tf.cast(positions < length, tf.int32)
    segment_ids = tf.cast((positions >= b_start) & (positions < length), tf.int32)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}


class BertTextPreprocessor(keras.layers.Layer):
    """Raw text -> BERT model inputs, equal to ``FullTokenizer`` + ``convert_single_example``.

    The vocab is read once (with :func:`bert_tf.tokenization.wordpiece.load_vocab`: stripped
    lines, the last id of a duplicate wins) and held in the graph (FastWordpieceTokenizer's
    model, a constant), so a SavedModel holding this layer needs no vocab file.

    Args:
      vocab_file: WordPiece vocab (one token per line); must hold `[UNK]`, `[CLS]`, `[SEP]`.
      do_lower_case: lower-case and strip accents (uncased models).
      max_seq_length: length of each output row (>= 3).

    Raises:
      ConfigError: the vocab is unreadable or lacks a special token, or ``max_seq_length < 3``.

    Call:
      ``layer(text_a, text_b=None)`` with ``tf.string [batch]`` (UTF-8) ->
      dict ``input_ids``, ``input_mask``, ``segment_ids``: int32 ``[batch, max_seq_length]``.
    """

    def __init__(self, vocab_file: str, do_lower_case: bool, max_seq_length: int, **kwargs):
        super().__init__(trainable=False, **kwargs)
        import tensorflow_text as tf_text

        if max_seq_length < 3:
            raise ConfigError(f"max_seq_length={max_seq_length}: BertTextPreprocessor needs at "
                              "least 3 positions ([CLS] A [SEP] needs 3 with one piece)")
        self.vocab_file = vocab_file
        self.do_lower_case = bool(do_lower_case)
        self.max_seq_length = int(max_seq_length)
        vocab = wordpiece.load_vocab(vocab_file)
        for token in ("[UNK]", "[CLS]", "[SEP]"):
            if token not in vocab:
                raise ConfigError(f"vocab file {vocab_file!r} has no {token} line")
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        # FastWordpieceTokenizer's id of a token is its index in the list: list index = vocab
        # id, with a never-matching placeholder (words hold no space) for a blank line or for
        # the earlier line of a duplicated token (load_vocab keeps the later id).
        by_id = [" unused %d" % i for i in range(max(vocab.values()) + 1)]
        for token, index in vocab.items():
            if token:
                by_id[index] = token
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            by_id, suffix_indicator="##", max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD,
            token_out_type=tf.int32, unknown_token="[UNK]", no_pretokenization=True)
        self._classes = bert_char_classes()
        self._lower = _lower_strip_accents_map() if self.do_lower_case else None

    @_NO_AUTOGRAPH
    def basic_tokens(self, text: tf.Tensor) -> tf.RaggedTensor:
        """``BasicTokenizer.tokenize`` of each string: ``tf.string [batch]`` -> ragged
        ``tf.string [batch, (words)]`` (UTF-8)."""
        classes = self._classes
        text = tf.convert_to_tensor(text, tf.string)
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore")
        text = tf.strings.regex_replace(text, classes["removed"], "")
        text = tf.strings.regex_replace(text, classes["space"], " ")
        text = tf.strings.regex_replace(text, "(" + classes["cjk"] + ")", " \\1 ")
        if self._lower is not None:
            text = self._lower(text)
        text = tf.strings.regex_replace(text, "(" + classes["punct"] + ")", " \\1 ")
        return _split_spaces(text)

    @_NO_AUTOGRAPH
    def word_piece_ids(self, text: tf.Tensor) -> tf.RaggedTensor:
        """``FullTokenizer`` ids of each string, unpacked: ``tf.string [batch]`` -> int32 ragged
        ``[batch, (pieces)]``."""
        words = self.basic_tokens(text)
        # The original's max_input_chars_per_word counts code points (tf_text counts bytes).
        too_long = tf.strings.length(words, unit="UTF8_CHAR") > MAX_INPUT_CHARS_PER_WORD
        words = words.with_flat_values(tf.where(too_long.flat_values, "[UNK]", words.flat_values))
        pieces = self._wordpiece.tokenize(words.flat_values)  # int32 [n_words, (pieces)]
        return words.with_flat_values(pieces).merge_dims(1, 2)

    @_NO_AUTOGRAPH
    def word_piece_ids_of_words(self, words: tf.RaggedTensor) -> tf.RaggedTensor:
        """Ids of each word on its own: ragged ``tf.string [batch, (words)]`` -> int32 ragged
        ``[batch, (words), (pieces)]``.

        For run_squad's layout, where every whitespace-separated ``doc_token`` of the context
        is tokenized separately and ``tok_to_orig_index`` is the word of each piece
        (``result.value_rowids()`` of the inner dimension). The byte offsets of the words in
        the context come from whatever split made them (e.g.
        ``tf_text.regex_split_with_offsets``); this layer gives no offsets of single pieces.
        """
        return words.with_flat_values(self.word_piece_ids(words.flat_values))

    @_NO_AUTOGRAPH
    def call(self, text_a, text_b=None):
        ids_a = self.word_piece_ids(text_a)
        ids_b = None if text_b is None else self.word_piece_ids(text_b)
        return pack_bert_inputs(ids_a, ids_b, self.max_seq_length, self.cls_id, self.sep_id)

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_file": self.vocab_file, "do_lower_case": self.do_lower_case,
                       "max_seq_length": self.max_seq_length})
        config.pop("trainable", None)
        return config


@_NO_AUTOGRAPH
def _split_spaces(text: tf.Tensor) -> tf.RaggedTensor:
    """Splits on runs of ASCII spaces, dropping empty words: ``[batch]`` -> ``[batch, (words)]``."""
    words = tf.strings.split(text, sep=" ")
    return tf.ragged.boolean_mask(words, words != "")
