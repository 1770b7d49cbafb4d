"""Cached TFRecords carry a fingerprint; a stale one is rewritten, said in one line (issue 15)."""
import hashlib
import json
import logging
import os

import pytest

from bert_tf.data import record_cache


class Example:
    def __init__(self, guid, text_a, label):
        self.guid, self.text_a, self.label = guid, text_a, label


def test_fingerprint_hashes_examples_files_and_settings(tmp_path):
    spm = tmp_path / "spiece.model"
    spm.write_bytes(b"model bytes")
    fp = record_cache.fingerprint({"max_seq_length": 16, "uncased": False},
                                  [Example("train-1", "A man.", "1.0")], files=[str(spm)])
    line = '{"guid": "train-1", "label": "1.0", "text_a": "A man."}\n'
    assert fp == {"settings": {"max_seq_length": 16, "uncased": False},
                  "examples": {"count": 1, "sha256": hashlib.sha256(line.encode()).hexdigest()},
                  "files": {"spiece.model": hashlib.sha256(b"model bytes").hexdigest()}}


def test_stale_cache_is_removed_and_said_fresh_one_reused(tmp_path, caplog):
    record = str(tmp_path / "spiece.model.len-16.train.tf_record")
    old = record_cache.fingerprint({"max_seq_length": 16}, [Example("1", "A man.", "1.0")])
    assert not record_cache.reuse_cached(record, old, overwrite=False)  # nothing cached
    with open(record, "wb") as f:
        f.write(b"records")
    record_cache.write_fingerprint(record, old)
    with open(record + ".fingerprint.json") as f:
        assert json.load(f) == old
    assert record_cache.reuse_cached(record, old, overwrite=False)
    assert not record_cache.reuse_cached(record, old, overwrite=True)
    assert os.path.exists(record)  # --overwrite_data: the writer replaces it
    # same row count, other text: the case the original (and the record checks) missed
    new = record_cache.fingerprint({"max_seq_length": 16}, [Example("1", "A dog.", "1.0")])
    with caplog.at_level(logging.INFO):
        assert not record_cache.reuse_cached(record, new, overwrite=False)
    assert not os.path.exists(record) and not os.path.exists(record + ".fingerprint.json")
    said = [r.getMessage() for r in caplog.records if "written for other data" in r.getMessage()]
    assert said == [f"the cached {record} was written for other data or flags (the examples "
                    f"changed (same count, 1, other content)): writing it again"]


def test_other_flags_are_named(tmp_path, caplog):
    record = str(tmp_path / "r.tf_record")
    with open(record, "wb") as f:
        f.write(b"x")
    record_cache.write_fingerprint(record, record_cache.fingerprint({"uncased": False}, []))
    with caplog.at_level(logging.INFO):
        record_cache.reuse_cached(record, record_cache.fingerprint({"uncased": True}, []), False)
    assert "(uncased False -> True)" in caplog.text


def test_file_without_fingerprint_is_checked_then_reused(tmp_path):
    record = str(tmp_path / "r.tf_record")
    with open(record, "wb") as f:
        f.write(b"x")
    assert record_cache.reuse_cached(record, record_cache.fingerprint({}, []), False)
    assert os.path.exists(record)


def test_race_check_uses_the_fingerprint(tmp_path):
    import types
    from bert_tf.xlnet.data import race_records as xlnet_race_records
    spm = tmp_path / "spiece.model"
    spm.write_bytes(b"m")
    args = types.SimpleNamespace(max_seq_length=8, max_qa_length=4, uncased=False,
                                 original_context_mutation=True, random_seed=1,
                                 eval_batch_size=2, spiece_model_file=str(spm))
    record = str(tmp_path / "spiece.model.len-8.train.tf_record")
    with open(record, "wb") as f:
        f.write(b"not even records: the fingerprint decides")
    same = xlnet_race_records.cache_fingerprint(args, [{"id": "high/1.txt"}], "train")
    record_cache.write_fingerprint(record, same)
    xlnet_race_records.check_cached_records(record, "train", 8, 1, fingerprint=same)
    assert os.path.exists(record)  # reused
    args.uncased = True
    other = xlnet_race_records.cache_fingerprint(args, [{"id": "high/1.txt"}], "train")
    xlnet_race_records.check_cached_records(record, "train", 8, 1, fingerprint=other)
    assert not os.path.exists(record)  # stale: removed, to be written again


def test_a_cached_file_cut_inside_a_header_is_not_reused(tmp_path):
    # issue 27 item 2: TensorFlow reads a file cut inside a record header as a shorter file.
    from bert_tf.data.tfrecord_bytes import tfrecord_frames
    from bert_tf.errors import FlagError
    path = tmp_path / "train.tf_record"
    data = tfrecord_frames([b"abc"] * 3)  # 3 records of 12 + 3 + 4 = 19 bytes
    path.write_bytes(data[:19 * 2 + 6])
    checked = []
    with pytest.raises(FlagError) as caught:
        record_cache.check_cached_file(str(path), False, checked.append, fix="; rewrite it")
    assert str(caught.value) == (
        f"--output_dir: the cached {path} does not fit this run (it would be reused): cut short "
        "inside the header of record 2 (byte 38 of 44): a copy interrupted mid-way?; rewrite it")
    assert checked == []
    path.write_bytes(data)
    record_cache.check_cached_file(str(path), False, checked.append)
    assert len(checked) == 1
