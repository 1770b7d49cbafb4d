"""run_pretraining's input records: a damaged file is one line naming it (issue 15 item 3)."""
import os

import pytest
import tensorflow as tf

from bert_tf.data import pretraining_records, tfrecord
from bert_tf.errors import InputDataError


def _records(path, n):
    lengths = pretraining_records.feature_lengths(8, 2)
    ints = {k: [1] * n_ for k, (n_, kind, _) in lengths.items() if kind == "int64_list"}
    floats = {k: [1.0] * n_ for k, (n_, kind, _) in lengths.items() if kind == "float_list"}
    with tfrecord.AtomicTFRecordWriter(path) as writer:
        for _ in range(n):
            writer.write(tfrecord.make_example(ints, floats))


def test_truncated_file_is_named_in_one_line(tmp_path):
    good, cut = str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")
    _records(good, 3)
    _records(cut, 3)
    with open(cut, "r+b") as f:
        f.truncate(os.path.getsize(cut) - 5)
    with pytest.raises(tf.errors.DataLossError) as raised:
        for _ in tf.data.TFRecordDataset([good, cut]):
            pass
    # what the training loop catches: TF's message names no file
    assert cut not in raised.value.message
    assert pretraining_records.is_parse_error(raised.value)
    error = pretraining_records.explain_parse_error(raised.value, [good, cut], 8, 2)
    assert isinstance(error, InputDataError)
    msg = str(error)
    assert msg.startswith(cut + ": truncated TFRecord file (truncated record at ")
    assert "\n" not in msg and "{{node" not in msg
