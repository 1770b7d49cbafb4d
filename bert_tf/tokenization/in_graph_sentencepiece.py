"""XLNet text preprocessing, SentencePiece and the classifier layout as TF ops (a Keras layer).

:class:`XLNetTextPreprocessor` gives, for raw text in the graph, exactly the features of the
original XLNet ``classifier_utils.convert_single_example`` with ``run_classifier.tokenize_fn``
(``encode_ids(sp, preprocess_text(text, lower=uncased))``), i.e. what
:func:`bert_tf.xlnet.data.classifier.convert_single_example` builds in Python (spec ``xlnet.md``
5.1-5.4, golden ``xlnet/prepro.jsonl`` and ``classifier_features.jsonl``):

1. ``preprocess_text``: strip and collapse every run of Python whitespace to one space; ````` ``
   ````` and ``''`` -> ``"``; NFKD and removal of combining characters (``unicodedata.combining``),
   then ``str.lower`` when ``uncased``, through
   :class:`bert_tf.tokenization.in_graph_text.ExactStringMap` (tf.text's ICU with Python's
   result wherever their Unicode versions disagree);
2. SentencePiece pieces (``tf_text.FastSentencepieceTokenizer`` on the model bytes, no
   sampling: it breaks exact score ties as sentencepiece 0.2.3 does, the older
   ``tf_text.SentencepieceTokenizer`` does not);
3. ``encode_pieces``' digit-comma fix: a piece ending in ``<digit>,`` is re-encoded without the
   comma and without ``▁``, the added leading ``▁`` removed (the piece dropped when it was a bare
   ``▁``) if the piece had none, then a separate ``,`` piece;
4. ids (``PieceToId``: ``<unk>`` = 0 for unknown pieces);
5. ``A <sep> B <sep> <cls>`` with segments 0 / 1 / 2 (``<sep>`` in its sentence's segment),
   ``_truncate_seq_pair`` to ``max_seq_length - 3`` or a single sentence cut to
   ``max_seq_length - 2``, LEFT padding with id 0, ``input_mask`` 1.0 and segment 4.

Invalid UTF-8 bytes are dropped (``errors="ignore"``, as ``BertTextPreprocessor`` and the
original BERT's ``convert_to_unicode``): one bad row of a served batch gets the features of
its valid bytes instead of failing the whole request (bert_tf; the original XLNet took Python
``str`` and never saw bytes).
"""

import functools
import unicodedata
from typing import Dict, Optional

import keras
import tensorflow as tf

from bert_tf.errors import ConfigError
from bert_tf.tokenization import sentencepiece_prepro
from bert_tf.tokenization.in_graph_text import (ExactStringMap, all_codepoints, codepoint_class,
                                                kept_pair, python_whitespace)

__all__ = ["XLNetTextPreprocessor", "pack_xlnet_inputs"]

SPIECE_UNDERLINE = sentencepiece_prepro.SPIECE_UNDERLINE
_NO_AUTOGRAPH = tf.autograph.experimental.do_not_convert  # plain ops: skip autograph's cost


@functools.lru_cache(maxsize=None)
def _classes() -> Dict[str, str]:
    combining, digits = [], []
    for cp in all_codepoints():
        char = chr(cp)
        if unicodedata.combining(char):
            combining.append(cp)
        if char.isdigit():
            digits.append(cp)
    return {"space": codepoint_class(python_whitespace()),
            "combining": codepoint_class(combining), "digit": codepoint_class(digits)}


def _py_accents_lower(lower: bool):
    def py_fn(text: str) -> str:
        # preprocess_text's steps 4 and 5 (the earlier ones do not depend on Unicode data).
        text = unicodedata.normalize("NFKD", text)
        text = "".join(c for c in text if not unicodedata.combining(c))
        return text.lower() if lower else text
    return py_fn


@functools.lru_cache(maxsize=None)
def _accents_lower_map(lower: bool) -> ExactStringMap:
    import tensorflow_text as tf_text

    combining = _classes()["combining"]

    def tf_fn(strings):
        text = tf.strings.regex_replace(tf_text.normalize_utf8(strings, "NFKD"), combining, "")
        return tf.strings.lower(text, encoding="utf-8") if lower else text

    name = "xlnet_nfkd_strip_combining" + ("_lower" if lower else "")
    return ExactStringMap(name, tf_fn, _py_accents_lower(lower))


@_NO_AUTOGRAPH
def pack_xlnet_inputs(ids_a: tf.RaggedTensor, ids_b: Optional[tf.RaggedTensor],
                      max_seq_length: int, sep_id: int = sentencepiece_prepro.SEP_ID,
                      cls_id: int = sentencepiece_prepro.CLS_ID) -> Dict[str, tf.Tensor]:
    """``A <sep> (B <sep>) <cls>``, truncated and LEFT padded, as ``convert_single_example``.

    A row whose B has no ids (or ``ids_b`` None) is a single sentence cut to
    ``max_seq_length - 2``; otherwise ``_truncate_seq_pair`` to ``max_seq_length - 3``, and B's
    ``<sep>`` only when B keeps an id (the original tests ``if tokens_b:`` after truncating).
    Segments: 0 for ``A <sep>``, 1 for ``B <sep>``, 2 for ``<cls>``, 4 for padding
    (SEG_ID_SEP = 3 is never emitted). Source: XLNet ``classifier_utils.py``.

    Args:
      ids_a, ids_b: int ragged ``[batch, (ids)]``.
      max_seq_length: python int >= 3.
      sep_id, cls_id: python ints (4 and 3 in XLNet's vocab).

    Returns:
      dict ``input_ids`` int32, ``input_mask`` float32 (1.0 = padding), ``segment_ids`` int32,
      each ``[batch, max_seq_length]``.
    """
    keep_a, keep_b, dense_a, dense_b = kept_pair(ids_a, ids_b, max_seq_length)
    # Core (unpadded) layout: A [0, keep_a), <sep> at keep_a, B from keep_a+1 for keep_b
    # positions, B's <sep> when keep_b > 0, <cls> last. q = position in the core.
    core_length = keep_a + 2 + keep_b + tf.cast(keep_b > 0, tf.int32)  # [batch, 1]
    q = tf.range(max_seq_length)[None, :] - (max_seq_length - core_length)
    b_start = keep_a + 1
    from_a = tf.gather(dense_a, tf.clip_by_value(q, 0, max_seq_length - 1), batch_dims=1)
    from_b = tf.gather(dense_b, tf.clip_by_value(q - b_start, 0, max_seq_length - 1),
                       batch_dims=1)
    is_pad = q < 0
    in_a = (q >= 0) & (q < keep_a)
    in_b = (q >= b_start) & (q < b_start + keep_b)
    is_cls = q == core_length - 1
    input_ids = tf.where(is_pad, 0,
                tf.where(in_a, from_a,
                tf.where(in_b, from_b,
                tf.where(is_cls, cls_id, sep_id))))
    segment_ids = tf.where(is_pad, 4, tf.where(is_cls, 2, tf.where(q >= b_start, 1, 0)))
    return {"input_ids": input_ids, "input_mask": tf.cast(is_pad, tf.float32),
            "segment_ids": segment_ids}


class XLNetTextPreprocessor(keras.layers.Layer):
    """Raw text -> XLNet classifier inputs, equal to the original ``convert_single_example``.

    The SentencePiece model's bytes are held in the graph (a SavedModel needs no model file).

    Args:
      spm_model_file: SentencePiece model (``spiece.model``).
      uncased: lower-case in ``preprocess_text`` (``--uncased``).
      max_seq_length: length of each output row (>= 3).

    Raises:
      ConfigError: the model file is unreadable or not a SentencePiece model, or
        ``max_seq_length < 3``.

    Call:
      ``layer(text_a, text_b=None)`` with ``tf.string [batch]`` -> dict ``input_ids`` int32,
      ``input_mask`` float32 (1.0 = padding), ``segment_ids`` int32, each
      ``[batch, max_seq_length]``.
    """

    def __init__(self, spm_model_file: str, uncased: bool, max_seq_length: int, **kwargs):
        super().__init__(trainable=False, **kwargs)
        import tensorflow_text as tf_text

        if max_seq_length < 3:
            raise ConfigError(f"max_seq_length={max_seq_length}: XLNetTextPreprocessor needs at "
                              "least 3 positions (A <sep> <cls>)")
        self.spm_model_file = spm_model_file
        self.uncased = bool(uncased)
        self.max_seq_length = int(max_seq_length)
        sp = sentencepiece_prepro.load_sp_model(spm_model_file)  # ConfigError for a bad file
        with tf.io.gfile.GFile(spm_model_file, "rb") as f:
            model = f.read()
        # FastSentencepieceTokenizer segments as sentencepiece 0.2.3 does, also on exact score
        # ties (e.g. "666" -> "6 66" vs "66 6" inside a longer text), where the older
        # SentencepieceTokenizer picks the other one; the latter maps ids <-> pieces.
        self._fast_sp = tf_text.FastSentencepieceTokenizer(model)
        self._sp = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        self._comma_id = int(sp.PieceToId(","))
        self._classes = _classes()
        self._accents_lower = _accents_lower_map(self.uncased)

    @_NO_AUTOGRAPH
    def preprocess_text(self, text: tf.Tensor) -> tf.Tensor:
        """``preprocess_text(text, lower=uncased)``: ``tf.string [batch]`` -> same shape."""
        space = self._classes["space"]
        text = tf.convert_to_tensor(text, tf.string)
        text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="ignore")
        text = tf.strings.regex_replace(text, f"^{space}+|{space}+$", "")
        text = tf.strings.regex_replace(text, f"{space}+", " ")
        text = tf.strings.regex_replace(text, "``", '"')
        text = tf.strings.regex_replace(text, "''", '"')
        return self._accents_lower(text)

    @_NO_AUTOGRAPH
    def piece_ids(self, text: tf.Tensor) -> tf.RaggedTensor:
        """``tokenize_fn``'s ids (``encode_ids(sp, preprocess_text(text))``): ``tf.string
        [batch]`` -> int32 ragged ``[batch, (ids)]``."""
        ids = self._fast_sp.tokenize(self.preprocess_text(text)).with_row_splits_dtype(tf.int64)
        flat_ids = ids.flat_values  # [n]
        flat = self._sp.id_to_string(flat_ids)  # "<unk>" for unknown pieces: never fixed
        fix = tf.strings.regex_full_match(flat, "(?s).*" + self._classes["digit"] + ",")
        inner = tf.strings.regex_replace(tf.strings.regex_replace(flat, ",$", ""),
                                         SPIECE_UNDERLINE, "")
        sub = self._fast_sp.tokenize(tf.where(fix, inner, "")).with_row_splits_dtype(tf.int64)
        # sub: [n, (ids)], empty where not fix
        values = self._sp.id_to_string(sub.flat_values)
        rows = sub.value_rowids()
        first = tf.range(tf.size(values, out_type=tf.int64)) == tf.gather(sub.row_starts(), rows)
        piece_had_none = tf.strings.substr(flat, 0, 3) != SPIECE_UNDERLINE  # 3 UTF-8 bytes
        strip = (first & tf.gather(piece_had_none, rows)
                 & (tf.strings.substr(values, 0, 3) == SPIECE_UNDERLINE))
        stripped = tf.strings.regex_replace(values, "^" + SPIECE_UNDERLINE, "")
        sub_ids = tf.where(strip, self._sp.string_to_id(stripped), sub.flat_values)
        sub = tf.ragged.boolean_mask(sub.with_flat_values(sub_ids),
                                     sub.with_flat_values(~(strip & (stripped == ""))))
        fix64 = tf.cast(fix, tf.int64)
        commas = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.reduce_sum(fix64)], self._comma_id), fix64)
        kept = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(flat_ids, ~fix), 1 - fix64)
        per_piece = tf.concat([tf.cast(sub, tf.int32), commas, tf.cast(kept, tf.int32)],
                              axis=1)  # [n, (ids)]
        return tf.RaggedTensor.from_row_splits(per_piece, ids.row_splits).merge_dims(1, 2)

    @_NO_AUTOGRAPH
    def pieces(self, text: tf.Tensor) -> tf.RaggedTensor:
        """The pieces of :meth:`piece_ids` as strings (``<unk>`` for an unknown piece, whose
        text ``encode_pieces`` keeps): ``tf.string [batch]`` -> ragged ``tf.string``."""
        return self._sp.id_to_string(self.piece_ids(text))

    @_NO_AUTOGRAPH
    def call(self, text_a, text_b=None):
        ids_a = self.piece_ids(text_a)
        ids_b = None if text_b is None else self.piece_ids(text_b)
        return pack_xlnet_inputs(ids_a, ids_b, self.max_seq_length)

    def get_config(self):
        config = super().get_config()
        config.update({"spm_model_file": self.spm_model_file, "uncased": self.uncased,
                       "max_seq_length": self.max_seq_length})
        config.pop("trainable", None)
        return config
