"""Atomic outputs on a remote file system: TensorFlow's in-memory ``ram://`` (the ``tf.io.gfile``
API of ``gs://``), issue 17 deliverable 2. The local behaviour is tests/test_atomic_files.py's."""
import os
import re
import socket
import subprocess
import sys
import uuid

import pytest
import tensorflow as tf

from bert_tf.atomic_files import (atomic_path, atomic_text_writer, atomic_write_text,
                                  check_output_path, display_path, is_remote)
from bert_tf.errors import OutputPathError

gfile = tf.io.gfile


@pytest.fixture
def ram_dir():
    """A fresh ``ram://`` folder (the in-memory file system is shared by the whole process)."""
    folder = f"ram://atomic-{uuid.uuid4().hex}"
    gfile.makedirs(folder)
    yield folder
    gfile.rmtree(folder)


def _read(path):
    with gfile.GFile(path, "rb") as f:
        return f.read()


def test_write_and_overwrite(ram_dir):
    path = f"{ram_dir}/out.txt"
    atomic_write_text(path, "old\n")
    atomic_write_text(path, "n\u00e9w\n")  # UTF-8 through GFile, overwrite by rename
    assert _read(path) == "n\u00e9w\n".encode("utf-8")
    assert gfile.listdir(ram_dir) == ["out.txt"]


def test_failure_leaves_the_previous_file_and_no_temp(ram_dir):
    path = f"{ram_dir}/out.txt"
    atomic_write_text(path, "old\n")
    with pytest.raises(RuntimeError):
        with atomic_text_writer(path) as f:
            f.write("new, half written")
            f.flush()
            raise RuntimeError("boom")
    assert _read(path) == b"old\n"
    assert gfile.listdir(ram_dir) == ["out.txt"]


def test_atomic_path_with_a_tensorflow_writer(ram_dir):
    path = f"{ram_dir}/train.tf_record"
    with atomic_path(path, suffix=".tfrecord") as tmp:
        assert tmp.startswith(ram_dir + "/.tmp-") and tmp.endswith(".tfrecord")
        with tf.io.TFRecordWriter(tmp) as w:
            w.write(b"abc")
        assert not gfile.exists(path)  # nothing under the final name before the end
    assert [r.numpy() for r in tf.data.TFRecordDataset(path)] == [b"abc"]
    assert gfile.listdir(ram_dir) == ["train.tf_record"]


def test_stale_temp_files_of_this_host_only_are_removed(ram_dir):
    host = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    names = {"stale": f".tmp-{dead}-h{host}-abc", "other_host": f".tmp-{dead}-hsomeotherhost-abc",
             "mine": f".tmp-{os.getpid()}-h{host}-keep"}
    for name in names.values():
        with gfile.GFile(f"{ram_dir}/{name}", "w") as f:
            f.write("x")
    atomic_write_text(f"{ram_dir}/out.txt", "x")
    left = set(gfile.listdir(ram_dir))
    assert names["stale"] not in left
    assert {names["other_host"], names["mine"], "out.txt"} <= left


def test_bad_remote_output_paths(ram_dir):
    atomic_write_text(f"{ram_dir}/file", "x")
    gfile.makedirs(f"{ram_dir}/dir")
    for bad in (f"{ram_dir}/dir", f"{ram_dir}/dir/", f"{ram_dir}/file/x"):
        with pytest.raises(OutputPathError, match="folder"):
            check_output_path(bad)


def test_missing_remote_parent_created_on_request(ram_dir):
    check_output_path(f"{ram_dir}/new/sub/out.tfrecord", create_parent=True)
    assert gfile.isdir(f"{ram_dir}/new/sub")


def test_paths_shown():
    assert is_remote("gs://bucket/x") and is_remote("ram://x") and not is_remote("/tmp/x")
    assert display_path("gs://bucket/out.jsonl") == "gs://bucket/out.jsonl"
    assert display_path("out.jsonl") == os.path.join(os.getcwd(), "out.jsonl")


def test_move_folder_keeps_every_file(ram_dir, tmp_path):
    from bert_tf.atomic_files import move_folder
    for root in (ram_dir, str(tmp_path)):
        gfile.makedirs(f"{root}/.tmp-1/variables")
        for name, text in (("saved_model.pb", "pb"), ("variables/variables.index", "ix")):
            with gfile.GFile(f"{root}/.tmp-1/{name}", "w") as f:
                f.write(text)
        move_folder(f"{root}/.tmp-1", f"{root}/7", last_file="saved_model.pb")
        assert gfile.listdir(root) == ["7"]
        assert _read(f"{root}/7/saved_model.pb") == b"pb"
        assert _read(f"{root}/7/variables/variables.index") == b"ix"
