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
