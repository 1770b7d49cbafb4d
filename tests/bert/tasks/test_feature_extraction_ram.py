"""extract_features with every path on ``ram://`` (TensorFlow's in-memory file system, the
``tf.io.gfile`` API of ``gs://``) writes the bytes of a local-disk run (issue 17, deliverable 2).

Tiny model: tests/golden/bert/tiny_random (config + checkpoint) with the bert-base-uncased vocab;
input: the golden section D input.txt, whose tokens the ORIGINAL script wrote to output.jsonl.gz.
"""
import gzip
import json
import os
import uuid

import pytest
import tensorflow as tf

from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features

gfile = tf.io.gfile


def _args(folder, vocab_file, out_name):
    return ExtractFeaturesArgs(
        input_file=f"{folder}/input.txt", output_file=f"{folder}/out/{out_name}",
        vocab_file=vocab_file, bert_config_file=f"{folder}/bert_config.json",
        init_checkpoint=f"{folder}/bert_model.ckpt", layers="-1,-2", max_seq_length=128,
        batch_size=8, pooling="mean")


def _read(path):
    with gfile.GFile(path, "rb") as f:
        return f.read()


def test_every_path_on_ram_gives_the_local_bytes(golden_dir, uncased_vocab_file, tmp_path,
                                                  monkeypatch):
    sources = {"input.txt": os.path.join(golden_dir, "bert", "extract_features", "input.txt"),
               "vocab.txt": uncased_vocab_file}
    tiny = os.path.join(golden_dir, "bert", "tiny_random")
    for name in ("bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        sources[name] = os.path.join(tiny, name)
    local, ram = str(tmp_path), f"ram://ef-{uuid.uuid4().hex}"
    gfile.makedirs(f"{local}/out")
    gfile.makedirs(f"{ram}/out")
    for name, src in sources.items():
        gfile.copy(src, f"{local}/{name}")
        gfile.copy(src, f"{ram}/{name}")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    try:
        local_summary = extract_features(_args(local, f"{local}/vocab.txt", "o.jsonl"))
        monkeypatch.chdir(cwd)
        ram_summary = extract_features(_args(ram, f"{ram}/vocab.txt", "o.jsonl"))
        assert os.listdir(cwd) == []  # nothing local made under a "ram:" folder
        assert ram_summary.output_file == f"{ram}/out/o.jsonl"  # not abspath'ed into cwd
        assert ram_summary.embeddings_file == f"{ram}/out/o.jsonl.embeddings.jsonl"
        for name in ("o.jsonl", "o.jsonl.embeddings.jsonl"):
            assert _read(f"{ram}/out/{name}") == _read(f"{local}/out/{name}"), name
        assert sorted(gfile.listdir(f"{ram}/out")) == ["o.jsonl", "o.jsonl.embeddings.jsonl"]
        # the tokens are the ORIGINAL script's (golden D: 226 tokens), so the run is a real one
        with gzip.open(os.path.join(golden_dir, "bert", "extract_features", "output.jsonl.gz"), "rt",
                       encoding="utf-8") as f:
            golden = [[t["token"] for t in json.loads(line)["features"]] for line in f]
        ours = [[t["token"] for t in json.loads(line)["features"]]
                for line in _read(f"{ram}/out/o.jsonl").decode("utf-8").splitlines()]
        assert ours == golden and sum(map(len, golden)) == 226
        assert ram_summary.num_tokens == local_summary.num_tokens == 226
    finally:
        gfile.rmtree(ram)
