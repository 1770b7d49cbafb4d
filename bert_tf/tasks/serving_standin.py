"""TEMPORARY stand-in for the tok branch's in-graph ``XLNetTextPreprocessor`` (issue 12,
deliverable 1): same interface, ``tf_text.SentencepieceTokenizer`` after an approximate
``preprocess_text``, WITHOUT the original's digit-comma re-encoding; removed when tok's layer
is merged.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text


class XLNetTextPreprocessor(keras.layers.Layer):
    """tf.string ``text_a`` (, ``text_b``) ``[batch]`` -> XLNet's classifier features
    ``[batch, max_seq_length]``: ``A <sep> (B <sep>) <cls>`` LEFT padded (int32 ``input_ids``
    pad 0, float32 ``input_mask`` 1 = pad, int32 ``segment_ids`` A 0, B 1, <cls> 2, pad 4).
    No digit-comma re-encoding (the tok branch's layer has it)."""

    def __init__(self, spm_model_file, uncased, max_seq_length, **kwargs):
        super().__init__(trainable=False, **kwargs)
        with open(spm_model_file, "rb") as f:
            self.tokenizer = tf_text.SentencepieceTokenizer(model=f.read(), out_type=tf.int32)
        self.uncased, self.max_seq_length = uncased, max_seq_length

    def _ids(self, text):
        text = tf.strings.regex_replace(tf.strings.strip(text), r"\s+", " ")
        text = tf.strings.regex_replace(text, "``|''", '"')
        text = tf_text.normalize_utf8(text, "NFKD")
        text = tf.strings.regex_replace(text, r"\p{Mn}", "")
        if self.uncased:
            text = tf.strings.lower(text, encoding="utf-8")
        return self.tokenizer.tokenize(text)

    def call(self, text_a, text_b=None):
        a = self._ids(text_a)
        batch = tf.shape(text_a)[0]
        sep, cls = tf.fill([batch, 1], 4), tf.fill([batch, 1], 3)
        if text_b is None:
            a = a[:, :self.max_seq_length - 2]
            ids = tf.concat([a, sep, cls], axis=1)
            segs = tf.concat([tf.zeros_like(a), tf.zeros_like(sep), cls * 0 + 2], axis=1)
        else:
            b = self._ids(text_b)
            budget = self.max_seq_length - 3
            la, lb = a.row_lengths(), b.row_lengths()
            keep_a = tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2))
            keep_b = tf.minimum(lb, tf.maximum(budget - la, budget // 2))
            a = tf.ragged.boolean_mask(a, tf.ragged.range(la) < keep_a[:, None])
            b = tf.ragged.boolean_mask(b, tf.ragged.range(lb) < keep_b[:, None])
            ids = tf.concat([a, sep, b, sep, cls], axis=1)
            segs = tf.concat([tf.zeros_like(a), tf.zeros_like(sep), tf.ones_like(b),
                              tf.ones_like(sep), cls * 0 + 2], axis=1)
        pad = self.max_seq_length - ids.row_lengths()

        def left(values, fill):
            padding = tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(pad)], tf.constant(fill, values.dtype)), pad)
            return tf.concat([padding, values], axis=1).to_tensor(shape=[None, self.max_seq_length])

        return {"input_ids": left(ids, 0), "segment_ids": left(segs, 4),
                "input_mask": left(tf.zeros_like(ids, tf.float32), 1.0)}
