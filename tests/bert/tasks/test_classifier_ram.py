"""run_classifier's predict path with every path on ``ram://`` (TensorFlow's in-memory file
system, the ``tf.io.gfile`` API of ``gs://``) writes the bytes of a local-disk run (issue 17,
deliverable 2): data_dir, vocab, config, init_checkpoint, output_dir (predict.tf_record,
test_results.tsv), export_dir (the SavedModel).

Tiny model: tests/golden/bert/tiny_random plus a fixed classifier head, the bert-base-uncased
vocab; data: the golden MRPC test.tsv (section G).
"""
import os
import uuid

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.checkpoint_io import read_checkpoint, write_checkpoint
from bert_tf.bert.tasks.classifier import ClassifierArgs, run

gfile = tf.io.gfile


def _args(folder, **kw):
    base = dict(task_name="MRPC", data_dir=f"{folder}/MRPC", output_dir=f"{folder}/out",
                vocab_file=f"{folder}/vocab.txt", bert_config_file=f"{folder}/bert_config.json",
                init_checkpoint=f"{folder}/bert_model.ckpt", do_train=False, do_eval=False,
                do_predict=True, do_lower_case=True, max_seq_length=128, predict_batch_size=8)
    base.update(kw)
    return ClassifierArgs(**base)


def _read(path):
    with gfile.GFile(path, "rb") as f:
        return f.read()


def _prepare(golden_dir, uncased_vocab_file, tmp_path):
    """The same inputs in ``tmp_path`` and in a fresh ``ram://`` folder; returns both folders."""
    tiny = os.path.join(golden_dir, "bert", "tiny_random")
    tensors = read_checkpoint(os.path.join(tiny, "bert_model.ckpt"))
    hidden = tensors["bert/pooler/dense/bias"].shape[0]
    tensors["output_weights"] = np.linspace(-0.5, 0.5, 2 * hidden, dtype=np.float32).reshape(2, hidden)
    tensors["output_bias"] = np.array([0.1, -0.1], np.float32)
    local, ram = str(tmp_path / "local"), f"ram://clf-{uuid.uuid4().hex}"
    write_checkpoint(os.path.join(local, "bert_model.ckpt"), tensors)
    sources = {"vocab.txt": uncased_vocab_file,
               "bert_config.json": os.path.join(tiny, "bert_config.json"),
               "MRPC/test.tsv": os.path.join(golden_dir, "bert", "classifier", "MRPC", "test.tsv")}
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        sources[name] = os.path.join(local, name)
    gfile.makedirs(f"{local}/MRPC")
    gfile.makedirs(f"{ram}/MRPC")
    for name, src in sources.items():
        if not name.startswith("bert_model"):
            gfile.copy(src, f"{local}/{name}")
        gfile.copy(src, f"{ram}/{name}")
    return local, ram


def test_predict_with_every_path_on_ram_gives_the_local_bytes(golden_dir, uncased_vocab_file,
                                                              tmp_path, monkeypatch):
    local, ram = _prepare(golden_dir, uncased_vocab_file, tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    try:
        local_result = run(_args(local))
        monkeypatch.chdir(cwd)
        ram_result = run(_args(ram))
        assert os.listdir(cwd) == []  # no local "ram:" folder made by os.makedirs & co.
        for name in ("predict.tf_record", "test_results.tsv"):
            assert _read(f"{ram}/out/{name}") == _read(f"{local}/out/{name}"), name
        assert not [n for n in gfile.listdir(f"{ram}/out") if n.startswith(".tmp-")]
        # one row per test.tsv example (header skipped), two probabilities that sum to 1
        with open(os.path.join(golden_dir, "bert", "classifier", "MRPC", "test.tsv"),
                  encoding="utf-8") as f:
            num_test = len(f.read().splitlines()) - 1
        rows = _read(f"{ram}/out/test_results.tsv").decode("utf-8").splitlines()
        assert len(rows) == num_test == ram_result.num_predict_examples
        assert all(abs(sum(map(float, r.split("\t"))) - 1.0) < 1e-6 for r in rows)
        np.testing.assert_array_equal(ram_result.predictions, local_result.predictions)
    finally:
        gfile.rmtree(ram)


@pytest.mark.slow  # two SavedModel exports, ~15 s
def test_export_dir_on_ram_holds_the_local_savedmodel(golden_dir, uncased_vocab_file, tmp_path,
                                                       monkeypatch):
    local, ram = _prepare(golden_dir, uncased_vocab_file, tmp_path)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    try:
        local_result = run(_args(local, do_predict=False, export_dir=f"{local}/export"))
        monkeypatch.chdir(cwd)
        ram_result = run(_args(ram, do_predict=False, export_dir=f"{ram}/export"))
        assert os.listdir(cwd) == []
        # <export_dir>/<version>/ with the local export's files (no .tmp- folder left)
        version = os.path.basename(ram_result.export_path)
        assert gfile.listdir(f"{ram}/export") == [version]
        local_files = sorted(os.path.relpath(os.path.join(d, n), local_result.export_path)
                             for d, _, names in os.walk(local_result.export_path) for n in names)
        ram_files = sorted(f"{d}/{n}"[len(ram_result.export_path) + 1:]
                           for d, _, names in gfile.walk(ram_result.export_path) for n in names)
        assert ram_files == local_files and "saved_model.pb" in ram_files
        ids = tf.constant([[101, 2023, 102, 0]], tf.int32)
        mask = tf.constant([[1, 1, 1, 0]], tf.int32)
        outs = [tf.saved_model.load(p).signatures["serving_ids"](
            input_ids=ids, input_mask=mask, segment_ids=tf.zeros_like(ids))["probabilities"].numpy()
            for p in (local_result.export_path, ram_result.export_path)]
        np.testing.assert_array_equal(outs[1], outs[0])
        np.testing.assert_allclose(outs[1].sum(), 1.0, rtol=1e-6)
    finally:
        gfile.rmtree(ram)
