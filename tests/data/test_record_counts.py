"""The record count stamped on the TFRecord files bert_tf writes (issue 27 item 2): a file cut
exactly at a record boundary has sound framing, and only the count tells."""
import os
import shutil
import struct

import pytest
import tensorflow as tf

from bert_tf.data import record_counts
from bert_tf.data.tfrecord_bytes import RecordFilesTogether, count_framed_records
from bert_tf.errors import InputDataError

RECORDS = [b"first", b"second record", b"3", b"fourth!", b"the fifth and last"]


def _write(path, records=RECORDS):
    with RecordFilesTogether([str(path)]) as together:
        for r in records:
            together.writers[0].write(r)


def _ends(data):
    ends, pos = [], 0
    while pos < len(data):
        pos += 12 + int.from_bytes(data[pos:pos + 8], "little") + 4
        ends.append(pos)
    return ends


def test_the_stamp_holds_the_count_size_and_first_record_crc(tmp_path):
    path = tmp_path / "a.tfrecord"
    _write(path)
    data = path.read_bytes()
    # by hand: each record is 8 + 4 + len + 4 bytes; record 0's data CRC follows its 5 bytes
    assert len(data) == sum(16 + len(r) for r in RECORDS) == 124  # 5 x 16 + (5 + 13 + 1 + 7 + 18)
    (first_crc,) = struct.unpack("<I", data[12 + 5:12 + 5 + 4])
    assert record_counts.read_stamp(str(path)) == record_counts.RecordStamp(5, 124, first_crc)
    assert count_framed_records(str(path)) == 5


def test_a_file_cut_at_a_record_boundary_is_refused_naming_both_counts(tmp_path):
    path = tmp_path / "a.tfrecord"
    _write(path)
    ends = _ends(path.read_bytes())
    with open(path, "r+b") as f:  # in place: the attribute stays with the file
        f.truncate(ends[2])
    assert sum(1 for _ in tf.data.TFRecordDataset(str(path))) == 3  # TF: a clean, short file
    with pytest.raises(InputDataError) as caught:
        count_framed_records(str(path))
    assert str(caught.value) == (
        f"{path}: 3 records, but bert_tf wrote 5 into it ({ends[2]} of 124 bytes left): cut "
        "short at a record boundary, a copy interrupted mid-way? (a file rewritten in place by "
        "another program: setfattr -x user.bert_tf.records <file> drops the count)")
    with open(path, "r+b") as f:
        f.truncate(0)
    with pytest.raises(InputDataError, match=r": 0 records, but bert_tf wrote 5 into it"):
        count_framed_records(str(path))


def test_a_copy_that_keeps_attributes_is_checked_and_a_plain_copy_as_before(tmp_path):
    path = tmp_path / "a.tfrecord"
    _write(path)
    kept, plain = tmp_path / "kept.tfrecord", tmp_path / "plain.tfrecord"
    shutil.copy2(path, kept)  # copies the attributes (as cp -a)
    shutil.copyfile(path, plain)  # the bytes only (as cp)
    for copy in (kept, plain):
        with open(copy, "r+b") as f:
            f.truncate(_ends(path.read_bytes())[3])
    with pytest.raises(InputDataError, match=r"kept\.tfrecord: 4 records, but bert_tf wrote 5"):
        count_framed_records(str(kept))
    assert count_framed_records(str(plain)) == 4  # no stamp: read as before


def test_a_file_rewritten_in_place_by_another_writer_is_read_as_before(tmp_path):
    # tf.io.TFRecordWriter (the original's writer) opens the same inode: the stamp stays
    path = tmp_path / "a.tfrecord"
    _write(path)
    with tf.io.TFRecordWriter(str(path)) as w:
        for r in (b"other", b"records"):
            w.write(r)
    assert record_counts.read_stamp(str(path)) is not None
    assert count_framed_records(str(path)) == 2


def test_the_originals_file_has_no_stamp_and_reads_as_before(golden_dir, tmp_path):
    src = os.path.join(golden_dir, "bert", "pretraining_data", "tf_examples.tfrecord")
    copy = tmp_path / "orig.tfrecord"
    data = open(src, "rb").read()
    copy.write_bytes(data[:_ends(data)[9]])
    assert record_counts.read_stamp(str(copy)) is None
    assert count_framed_records(str(copy)) == 10


def test_no_attributes_on_the_file_system_writes_the_file_without_a_stamp(tmp_path,
                                                                          monkeypatch):
    def refuse(*args):
        raise OSError(95, "Operation not supported")
    monkeypatch.setattr(os, "setxattr", refuse)
    path = tmp_path / "a.tfrecord"
    _write(path)
    assert record_counts.read_stamp(str(path)) is None
    assert count_framed_records(str(path)) == 5
