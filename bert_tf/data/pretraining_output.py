"""Pre-training instances -> ``tf.train.Example`` records (spec ``bert.md`` 5.6; the output half of
the original `create_pretraining_data.py`).

:func:`instance_to_example` (the original's ``tf.train.Example``, imports TensorFlow when
called), :class:`RecordBuilder` (the same bytes, built from byte tables without protobuf objects
or TensorFlow: the writer of the root script), :func:`write_instance_to_example_files` (the
original function: instances round-robin over the output files), :func:`log_example` (the
original's log of the first instances) and :func:`split_output_files` (the ``--output_file``
list, checked before the corpus is read).
"""

import collections
import os
from typing import List, Sequence

from absl import logging

from bert_tf.atomic_files import check_output_path
from bert_tf.data import tfrecord_bytes
from bert_tf.data.pretraining_corpus import id_to_token_list
from bert_tf.data.pretraining_instances import TrainingInstance
from bert_tf.errors import FlagError

# How many instances are logged in full when written (original: 20).
NUM_LOGGED_INSTANCES = 20
# The order in which the original's records hold their features on the wire. A protobuf map
# has no defined wire order; the original run (TF 2.15.1, protobuf 4.25.9 upb; the golden
# tests/golden/bert/pretraining_data/*.tfrecord) writes the OrderedDict built in
# write_instance_to_example_files (input_ids, input_mask, segment_ids, masked_lm_positions,
# masked_lm_ids, masked_lm_weights, next_sentence_labels) in this order, every record.
# (protobuf 5+ upb hashes with a per-process seed: its SerializeToString order changes from run
# to run, so it cannot give byte-identical files.)
ORIGINAL_WIRE_ORDER = ("masked_lm_ids", "input_ids", "masked_lm_positions",
                       "next_sentence_labels", "input_mask", "masked_lm_weights", "segment_ids")


def instance_to_example(instance: TrainingInstance, vocab, max_seq_length: int,
                        max_predictions_per_seq: int):
    """The ``tf.train.Example`` of one instance (spec 5.6), features in the original order.

    ``input_ids``/``input_mask``/``segment_ids``: int64 [max_seq_length], zero-padded;
    ``masked_lm_positions``/``masked_lm_ids``: int64 [max_predictions_per_seq], zero-padded;
    ``masked_lm_weights``: float [max_predictions_per_seq], 1.0 real / 0.0 padding;
    ``next_sentence_labels``: int64 [1], 1 = random next, 0 = actual next.

    Args:
      vocab: token -> id mapping (``tokenizer.vocab``).

    Returns:
      a ``tf.train.Example`` (TensorFlow is imported here).

    Raises:
      ValueError: the instance is longer than ``max_seq_length`` or has too many predictions.
    """
    import tensorflow as tf

    from bert_tf.data import tfrecord
    input_ids = [vocab[t] for t in instance.tokens]
    n = len(input_ids)
    if n > max_seq_length:
        raise ValueError(f"instance has {n} tokens > max_seq_length {max_seq_length}")
    k = len(instance.masked_lm_positions)
    if k > max_predictions_per_seq:
        raise ValueError(f"instance has {k} predictions > max_predictions_per_seq "
                         f"{max_predictions_per_seq}")
    pad = [0] * (max_seq_length - n)
    pad_k = [0] * (max_predictions_per_seq - k)
    int_features = collections.OrderedDict()
    int_features["input_ids"] = input_ids + pad
    int_features["input_mask"] = [1] * n + pad
    int_features["segment_ids"] = list(instance.segment_ids) + pad
    int_features["masked_lm_positions"] = list(instance.masked_lm_positions) + pad_k
    int_features["masked_lm_ids"] = [vocab[t] for t in instance.masked_lm_labels] + pad_k
    float_features = {"masked_lm_weights": [1.0] * k + [0.0] * (max_predictions_per_seq - k)}
    # The original inserts next_sentence_labels last, after the float feature.
    feats = collections.OrderedDict()
    for name, values in int_features.items():
        feats[name] = tfrecord.create_int_feature(values)
    feats["masked_lm_weights"] = tfrecord.create_float_feature(float_features["masked_lm_weights"])
    feats["next_sentence_labels"] = tfrecord.create_int_feature(
        [1 if instance.is_random_next else 0])
    return tf.train.Example(features=tf.train.Features(feature=feats))


def log_example(serialized: bytes, id_to_token: Sequence[str]) -> None:
    features = tfrecord_bytes.decode_example_bytes(serialized)
    n = sum(features["input_mask"])
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(id_to_token[i] for i in features["input_ids"][:n]))
    for name in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions",
                 "masked_lm_ids", "masked_lm_weights", "next_sentence_labels"):
        logging.info("%s: %s", name, " ".join(str(x) for x in features[name]))


_FLOAT_ONE = b"\x00\x00\x80\x3f"   # 1.0 as a little-endian float32
_FLOAT_ZERO = b"\x00\x00\x00\x00"


class RecordBuilder:
    """The serialized record of one instance given as token ids: the bytes of
    ``instance_to_example(...).SerializeToString()`` with the map written in
    :data:`ORIGINAL_WIRE_ORDER`, as the original's files hold them (spec 5.6), built from
    byte tables (:mod:`bert_tf.data.tfrecord_bytes`) without protobuf objects.

    Args:
      max_id: the largest token id of the vocab.
      max_seq_length, max_predictions_per_seq: the padded lengths.
    """

    def __init__(self, max_id: int, max_seq_length: int, max_predictions_per_seq: int):
        tb = tfrecord_bytes
        self._varints = tb.varint_table(max(max_id, max_seq_length) + 1)
        self._max_seq_length = max_seq_length
        self._max_predictions = max_predictions_per_seq
        p = {k: tb.map_entry_prefix(k) for k in ORIGINAL_WIRE_ORDER}
        self._prefixes = p
        # The fixed-length lists have constant heads (0/1 and 1.0/0.0 are one varint byte and
        # four float bytes each); next_sentence_labels is one of two whole entries.
        self._mask_head = tb.entry_head(p["input_mask"], tb.INT64_LIST_TAG, max_seq_length)
        self._segment_head = tb.entry_head(p["segment_ids"], tb.INT64_LIST_TAG, max_seq_length)
        self._weights_head = tb.entry_head(p["masked_lm_weights"], tb.FLOAT_LIST_TAG,
                                           4 * max_predictions_per_seq)
        nsl_head = tb.entry_head(p["next_sentence_labels"], tb.INT64_LIST_TAG, 1)
        self._nsl = (nsl_head + b"\x00", nsl_head + b"\x01")
        # The fields written in ORIGINAL_WIRE_ORDER (checked here, built in build()).
        assert ORIGINAL_WIRE_ORDER == ("masked_lm_ids", "input_ids", "masked_lm_positions",
                                       "next_sentence_labels", "input_mask",
                                       "masked_lm_weights", "segment_ids")

    def build(self, input_ids: Sequence[int], num_segment_a: int,
              masked_lm_positions: Sequence[int], masked_lm_ids: Sequence[int],
              is_random_next: bool) -> bytes:
        """One record.

        Args:
          input_ids: the ``[CLS] A [SEP] B [SEP]`` ids after masking (at most max_seq_length).
          num_segment_a: how many leading positions have segment id 0 (``len(A) + 2``).
          masked_lm_positions, masked_lm_ids: ascending positions and the original ids there.
          is_random_next: the next-sentence label (1 when True).

        Raises:
          ValueError: more than max_seq_length ids or max_predictions_per_seq predictions.
        """
        n, k = len(input_ids), len(masked_lm_positions)
        pad, pad_k = self._max_seq_length - n, self._max_predictions - k
        if pad < 0:
            raise ValueError(f"instance has {n} tokens > max_seq_length {self._max_seq_length}")
        if pad_k < 0:
            raise ValueError(f"instance has {k} predictions > max_predictions_per_seq "
                             f"{self._max_predictions}")
        vb, p = self._varints, self._prefixes
        head = tfrecord_bytes.entry_head
        int64 = tfrecord_bytes.INT64_LIST_TAG
        zeros, zeros_k = b"\x00" * pad, b"\x00" * pad_k
        labels = b"".join([vb[i] for i in masked_lm_ids]) + zeros_k
        ids = b"".join([vb[i] for i in input_ids]) + zeros
        positions = b"".join([vb[i] for i in masked_lm_positions]) + zeros_k
        return tfrecord_bytes.example_from_entry_bytes(b"".join((
            head(p["masked_lm_ids"], int64, len(labels)), labels,
            head(p["input_ids"], int64, len(ids)), ids,
            head(p["masked_lm_positions"], int64, len(positions)), positions,
            self._nsl[1 if is_random_next else 0],
            self._mask_head, b"\x01" * n, zeros,
            self._weights_head, _FLOAT_ONE * k, _FLOAT_ZERO * pad_k,
            self._segment_head, b"\x00" * num_segment_a, b"\x01" * (n - num_segment_a), zeros,
        )))

    def from_instance(self, instance: TrainingInstance, vocab) -> bytes:
        """The record of a :class:`TrainingInstance` (token strings; ``vocab`` token -> id)."""
        segment_ids = list(instance.segment_ids)
        num_a = segment_ids.index(1) if 1 in segment_ids else len(segment_ids)
        if segment_ids != [0] * num_a + [1] * (len(segment_ids) - num_a):
            raise ValueError("segment_ids are not 0...0 1...1")
        return self.build([vocab[t] for t in instance.tokens], num_a,
                          list(instance.masked_lm_positions),
                          [vocab[t] for t in instance.masked_lm_labels],
                          instance.is_random_next)


def split_output_files(output_file) -> List[str]:
    """The files of ``--output_file`` (comma-separated), each checked writable (local files:
    now, not after the corpus is processed).

    Raises:
      FlagError: no file given; one file named twice (bert_tf: the original wrote both
        shares of the round-robin into it, the second writer replacing the first, and logged
        every instance as written).
      OutputPathError: a file that cannot be written.
    """
    files = output_file.split(",") if isinstance(output_file, str) else list(output_file)
    files = [f.strip() for f in files if f.strip()]
    if not files:
        raise FlagError(f"no output file given (--output_file={output_file!r})")
    seen = {}
    for f in files:
        key = f if "://" in f else os.path.realpath(f)
        if key in seen:
            also = f" (also as {f})" if f != seen[key] else ""
            raise FlagError(f"--output_file names {seen[key]} twice{also}: each file gets its "
                            "own share of the instances")
        seen[key] = f
        if "://" not in f:
            check_output_path(f, create_parent=True)
    return files


def write_instance_to_example_files(instances: Sequence[TrainingInstance], tokenizer,
                                    max_seq_length: int, max_predictions_per_seq: int,
                                    output_files) -> int:
    """Writes instances round-robin over the output files (original function of the same name).

    Instance n goes to ``output_files[n % len(output_files)]``; each file is written atomically.
    The records are the bytes of :class:`RecordBuilder` (the original's map order, so the
    files equal the original's byte for byte). Logs the first 20 instances and the total.
    Returns the number written.
    """
    output_files = split_output_files(output_files)
    id_to_token = id_to_token_list(tokenizer.vocab)
    builder = RecordBuilder(max(tokenizer.vocab.values()), max_seq_length,
                            max_predictions_per_seq)
    with tfrecord_bytes.RecordFilesTogether(output_files) as together:  # all files or none
        writers = together.writers
        for n, instance in enumerate(instances):
            data = builder.from_instance(instance, tokenizer.vocab)
            writers[n % len(writers)].write(data)
            if n < NUM_LOGGED_INSTANCES:
                log_example(data, id_to_token)
    logging.info("Wrote %d total instances", len(instances))
    return len(instances)

