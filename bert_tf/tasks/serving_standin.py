"""TEMPORARY stand-in for ``bert_tf.tokenization.in_graph.BertTextPreprocessor`` (branch tok).

Same interface, built on ``tf_text.BertTokenizer`` (which differs from FullTokenizer on some
code points); removed when the tok branch's layer is merged.
"""

import keras
import tensorflow as tf
import tensorflow_text as tf_text


class BertTextPreprocessor(keras.layers.Layer):
    """tf.string ``text_a`` (, ``text_b``) ``[batch]`` -> int32 ``input_ids``, ``input_mask``,
    ``segment_ids`` ``[batch, max_seq_length]``: ``[CLS] A [SEP] (B [SEP])``, the pair
    truncated as the original's ``_truncate_seq_pair`` (pop from the longer, B on ties)."""

    def __init__(self, vocab_file, do_lower_case, max_seq_length, **kwargs):
        super().__init__(trainable=False, **kwargs)
        with open(vocab_file, encoding="utf-8") as f:
            tokens = [line.strip() for line in f]
        self._vocab = tokens
        self.max_seq_length = max_seq_length
        init = tf.lookup.KeyValueTensorInitializer(
            tf.constant(tokens), tf.range(len(tokens), dtype=tf.int64))
        self.table = tf.lookup.StaticHashTable(init, default_value=tokens.index("[UNK]"))
        self.tokenizer = tf_text.BertTokenizer(self.table, lower_case=do_lower_case,
                                               token_out_type=tf.int64)
        self.cls_id, self.sep_id = tokens.index("[CLS]"), tokens.index("[SEP]")

    def _ids(self, text):
        return tf.cast(self.tokenizer.tokenize(text).merge_dims(-2, -1), tf.int32)

    def call(self, text_a, text_b=None):
        a = self._ids(text_a)
        batch = tf.shape(text_a)[0]
        cls = tf.fill([batch, 1], self.cls_id)
        sep = tf.fill([batch, 1], self.sep_id)
        if text_b is None:
            a = a[:, :self.max_seq_length - 2]
            ids = tf.concat([cls, a, sep], axis=1)
            segs = tf.zeros_like(ids)
        else:
            b = self._ids(text_b)
            budget = self.max_seq_length - 3
            la, lb = a.row_lengths(), b.row_lengths()
            keep_a = tf.minimum(la, tf.maximum(budget - lb, (budget + 1) // 2))
            keep_b = tf.minimum(lb, tf.maximum(budget - la, budget // 2))
            a = tf.ragged.boolean_mask(a, tf.ragged.range(la) < keep_a[:, None])
            b = tf.ragged.boolean_mask(b, tf.ragged.range(lb) < keep_b[:, None])
            first = tf.concat([cls, a, sep], axis=1)
            second = tf.concat([b, sep], axis=1)
            ids = tf.concat([first, second], axis=1)
            segs = tf.concat([tf.zeros_like(first), tf.ones_like(second)], axis=1)
        shape = [None, self.max_seq_length]
        return {"input_ids": ids.to_tensor(0, shape=shape),
                "input_mask": tf.ones_like(ids).to_tensor(0, shape=shape),
                "segment_ids": segs.to_tensor(0, shape=shape)}


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
