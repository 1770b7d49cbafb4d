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


def test_a_record_file_cut_anywhere_is_refused_before_training(golden_dir, tmp_path):
    # issue 27 item 2: BERT pretraining trained on 10 of 35 records of a file cut inside the
    # 11th record's header, exit 0 (TensorFlow's reader takes that for the end of the file).
    from bert_tf.data.pretraining_record_checks import checked_input_files
    from bert_tf.data.tfrecord_bytes import count_framed_records
    src = os.path.join(golden_dir, "bert", "pretraining_data", "tf_examples.tfrecord")
    data = open(src, "rb").read()
    ends, pos = [], 0
    while pos < len(data):
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
        ends.append(pos)
    assert count_framed_records(src) == len(ends)
    cut = tmp_path / "cut.tfrecord"
    cut.write_bytes(data[:ends[9] + 7])
    assert sum(1 for _ in tf.data.TFRecordDataset(str(cut))) == 10  # TF: a clean, short file
    with pytest.raises(InputDataError) as caught:
        checked_input_files(str(cut), 128, 20, 30522, "bert_config.json")
    assert str(caught.value) == (f"{cut}: cut short inside the header of record 10 (byte "
                                 f"{ends[9]} of {ends[9] + 7}): a copy interrupted mid-way?")
