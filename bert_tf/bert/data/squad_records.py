"""SQuAD features -> model inputs: the training ``tf.data`` pipeline and prediction arrays.

The training records are `train.tf_record` of :class:`bert_tf.data.squad.FeatureWriter`
(original `run_squad.py`, spec `bert.md` 9.3, 9.4): int64 ``unique_ids``, ``input_ids``,
``input_mask``, ``segment_ids`` ``[max_seq_length]``, ``start_positions``, ``end_positions``.
Prediction keeps its features in memory and stacks them with :func:`feature_arrays`.
TensorFlow is imported only when a pipeline is built (as :mod:`bert_tf.data.squad`).
"""

from typing import Dict, Optional, Sequence

import numpy as np

from bert_tf.data.squad import InputFeatures, tfrecord_int_lengths

TRAIN_SHUFFLE_SEED = 12345  # random.Random(12345) of the original main
TRAIN_SHUFFLE_BUFFER = 100  # d.shuffle(buffer_size=100) of the original input_fn


def train_dataset(filename: str, max_seq_length: int, batch_size: int,
                  seed: Optional[int] = None):
    """The original training input pipeline on ``train.tf_record``.

    repeat -> shuffle(100) -> decode -> batch(``batch_size``, drop_remainder=True). The shuffle
    is seeded (12345, or ``seed``: bert_tf's ``--seed``) so that a resumed run sees the same
    batches as an uninterrupted one.

    Returns:
      A ``tf.data.Dataset`` of ``(features, labels)``: features ``unique_ids`` int32 ``[B]``
      and ``input_ids``, ``input_mask``, ``segment_ids`` int32 ``[B, max_seq_length]``; labels
      ``start_positions``, ``end_positions`` int32 ``[B]``.
    """
    import tensorflow as tf

    from bert_tf.data import tfrecord

    schema = tfrecord.fixed_len_schema(tfrecord_int_lengths(max_seq_length, True))

    def split(record):
        ex = tfrecord.decode_record(record, schema)
        features = {k: ex[k] for k in ("input_ids", "input_mask", "segment_ids")}
        features["unique_ids"] = ex["unique_ids"][0]
        labels = {"start_positions": ex["start_positions"][0],
                  "end_positions": ex["end_positions"][0]}
        return features, labels

    d = tf.data.TFRecordDataset(filename).repeat()
    d = d.shuffle(buffer_size=TRAIN_SHUFFLE_BUFFER,
                  seed=TRAIN_SHUFFLE_SEED if seed is None else seed)
    return d.map(split).batch(batch_size, drop_remainder=True)


def feature_arrays(features: Sequence[InputFeatures]) -> Dict[str, np.ndarray]:
    """Stacks features into arrays: ``unique_ids`` int64 ``[N]``, ``input_ids``,
    ``input_mask``, ``segment_ids`` int32 ``[N, max_seq_length]``."""
    return {"unique_ids": np.asarray([f.unique_id for f in features], np.int64),
            "input_ids": np.asarray([f.input_ids for f in features], np.int32),
            "input_mask": np.asarray([f.input_mask for f in features], np.int32),
            "segment_ids": np.asarray([f.segment_ids for f in features], np.int32)}
