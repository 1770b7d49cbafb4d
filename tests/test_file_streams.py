"""Inputs read from ``ram://`` (the ``tf.io.gfile`` API of ``gs://``) as from local disk:
plain and ``.gz`` text, a missing file, and the SQuAD readers that use them (issue 17,
deliverable 2)."""
import gzip
import os
import uuid

import pytest
import tensorflow as tf

from bert_tf.data.squad import read_squad_examples
from bert_tf.data.squad_metrics import load_json
from bert_tf.errors import InputDataError
from bert_tf.file_streams import open_binary, open_text

gfile = tf.io.gfile


@pytest.fixture
def ram_dir():
    folder = f"ram://streams-{uuid.uuid4().hex}"
    gfile.makedirs(folder)
    yield folder
    gfile.rmtree(folder)


def test_plain_and_gzip_text_from_ram(ram_dir, tmp_path):
    text = "caf\u00e9\nzwei\n"
    local = tmp_path / "a.txt.gz"
    with gzip.open(local, "wt", encoding="utf-8") as f:
        f.write(text)
    gfile.copy(str(local), f"{ram_dir}/a.txt.gz")
    with gfile.GFile(f"{ram_dir}/a.txt", "w") as f:
        f.write(text)
    for path in (f"{ram_dir}/a.txt", f"{ram_dir}/a.txt.gz", str(local)):
        with open_text(path) as f:
            assert f.read() == text, path
    with open_binary(f"{ram_dir}/a.txt.gz") as f:
        assert f.read() == text.encode("utf-8")


def test_missing_remote_file_is_file_not_found(ram_dir):
    with pytest.raises(FileNotFoundError):
        open_text(f"{ram_dir}/none.json")
    with pytest.raises(InputDataError, match="file not found"):
        load_json(f"{ram_dir}/none.json")
    with pytest.raises(InputDataError, match="SQuAD file not found"):
        read_squad_examples(f"{ram_dir}/none.json", is_training=False)


def test_squad_examples_from_ram_equal_the_local_ones(ram_dir, golden_dir):
    local = os.path.join(golden_dir, "bert", "squad", "v1.1", "dev-subset.json.gz")
    gfile.copy(local, f"{ram_dir}/dev.json.gz")
    ours = read_squad_examples(f"{ram_dir}/dev.json.gz", is_training=False)
    assert ours == read_squad_examples(local, is_training=False) and len(ours) > 0
    assert load_json(f"{ram_dir}/dev.json.gz") == load_json(local)
