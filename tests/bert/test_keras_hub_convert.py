"""Original BERT <-> keras-hub `BertBackbone` preset (`python -m bert_tf.convert --to keras_hub`
/ `--from keras_hub`): keras-hub's own model on the converted preset gives the original code's
outputs (goldens) and ours within 1e-5, and the way back is bit-exact."""
import json
import os
import shutil

import numpy as np
import pytest

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.checkpoint_io import read_checkpoint
from bert_tf.convert import main

keras_hub = pytest.importorskip("keras_hub")

OURS_ATOL = 1e-5     # keras-hub vs our BertModel, same float32 weights
GOLDEN_ATOL = 2e-5   # vs the original code (tests/bert/test_model.py's REAL_ATOL)
PAD_ATOL = 1e-4      # padding positions of sequence_output (attend to real tokens only)
MINILM_PAIRS = 6     # of the 16 golden pairs (14 MRPC dev, 2 SQuAD): keeps the test short


def _ours(folder):
    config = BertConfig.from_json_file(os.path.join(folder, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    load_bert_checkpoint(bert_model_map(model), os.path.join(folder, "bert_model.ckpt"), require_all=True)
    return model


def _keras_hub_outputs(backbone, g):
    return backbone({"token_ids": g["input_ids"], "segment_ids": g["segment_ids"],
                     "padding_mask": g["input_mask"]})


def _to_keras_hub(src, out):
    assert main(["--from", "original", "--to", "keras_hub", "--in_dir", str(src), "--out_dir", str(out)]) == 0
    return keras_hub.models.BertBackbone.from_preset(str(out))


@pytest.fixture(scope="module")
def minilm_keras_hub(minilm_checkpoint_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("kh_minilm")
    return out, _to_keras_hub(minilm_checkpoint_dir, out)


@pytest.mark.slow  # ~60 s on the shared 2-core machine (MiniLM conversion + two models)
def test_minilm_on_mrpc_lines_equals_ours_and_the_original(minilm_keras_hub, minilm_checkpoint_dir, golden_dir):
    """The first MRPC dev pairs of the golden MiniLM inputs (golden README section C), 128 tokens."""
    _, backbone = minilm_keras_hub
    with np.load(os.path.join(golden_dir, "bert", "minilm", "outputs.npz")) as d:
        g = dict(d)
    g = {k: v[:MINILM_PAIRS] for k, v in g.items()}
    kh = _keras_hub_outputs(backbone, g)
    ours = _ours(minilm_checkpoint_dir)(g)
    real = g["input_mask"].astype(bool)
    seq_kh, seq_ours = np.asarray(kh["sequence_output"]), ours["sequence_output"].numpy()
    np.testing.assert_allclose(seq_kh[real], seq_ours[real], rtol=0, atol=OURS_ATOL)
    np.testing.assert_allclose(np.asarray(kh["pooled_output"]), ours["pooled_output"].numpy(),
                               rtol=0, atol=OURS_ATOL)
    # Padding positions: float32 noise is larger there (golden README: 8.6e-5 vs float64).
    np.testing.assert_allclose(seq_kh[~real], seq_ours[~real], rtol=0, atol=PAD_ATOL)
    np.testing.assert_allclose(seq_kh[real], g["sequence_output"][real], rtol=0, atol=GOLDEN_ATOL)
    np.testing.assert_allclose(np.asarray(kh["pooled_output"]), g["pooled_output"], rtol=0, atol=GOLDEN_ATOL)


@pytest.mark.slow
def test_minilm_preset_and_way_back(minilm_keras_hub, minilm_checkpoint_dir, tmp_path):
    out, backbone = minilm_keras_hub
    assert sorted(os.listdir(out)) == ["assets", "config.json", "metadata.json", "model.weights.h5",
                                       "tokenizer.json"]
    config = json.loads((out / "config.json").read_text())["config"]
    assert (config["num_layers"], config["hidden_dim"], config["num_heads"], config["intermediate_dim"],
            config["max_sequence_length"], config["num_segments"]) == (6, 384, 12, 1536, 512, 2)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(out))
    # "[CLS] hello world [SEP]" ids in the bert-base-uncased vocab: 101 7592 2088 102
    assert np.asarray(tokenizer("hello world")).tolist() == [7592, 2088]
    back = tmp_path / "back"
    assert main(["--from", "keras_hub", "--to", "original", "--in_dir", str(out), "--out_dir", str(back)]) == 0
    before = read_checkpoint(os.path.join(minilm_checkpoint_dir, "bert_model.ckpt"), include_optimizer=True)
    after = read_checkpoint(str(back / "bert_model.ckpt"), include_optimizer=True)
    assert sorted(after) == sorted(before) and len(after) == 103
    for name in before:
        assert after[name].dtype == before[name].dtype and after[name].tobytes() == before[name].tobytes(), name
    # MiniLM's config is one keras-hub can hold whole (initializer_range 0.02, equal dropouts).
    assert ((back / "bert_config.json").read_text()
            == open(os.path.join(minilm_checkpoint_dir, "bert_config.json")).read())
    assert (back / "vocab.txt").read_bytes() == open(os.path.join(minilm_checkpoint_dir, "vocab.txt"), "rb").read()


@pytest.fixture(scope="module")
def tiny_keras_hub(golden_dir, uncased_vocab_file, tmp_path_factory):
    src = tmp_path_factory.mktemp("tiny_orig")
    gold = os.path.join(golden_dir, "bert", "tiny_random")
    for name in ("bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copyfile(os.path.join(gold, name), src / name)
    shutil.copyfile(uncased_vocab_file, src / "vocab.txt")
    out = tmp_path_factory.mktemp("kh_tiny")
    return src, out, _to_keras_hub(src, out)


@pytest.mark.parametrize("batch", ["b0", "b1", "b2", "b3"])
def test_tiny_random_equals_ours_and_the_original(tiny_keras_hub, tiny_random_outputs, batch):
    src, _, backbone = tiny_keras_hub
    g = {k[len(batch) + 1:]: v for k, v in tiny_random_outputs.items() if k.startswith(batch + "_")}
    kh = _keras_hub_outputs(backbone, g)
    ours = _ours(src)(g)
    real = g["input_mask"].astype(bool)
    seq_kh, seq_ours = np.asarray(kh["sequence_output"]), ours["sequence_output"].numpy()
    np.testing.assert_allclose(seq_kh[real], seq_ours[real], rtol=0, atol=OURS_ATOL)
    np.testing.assert_allclose(seq_kh[~real], seq_ours[~real], rtol=0, atol=PAD_ATOL)
    np.testing.assert_allclose(np.asarray(kh["pooled_output"]), ours["pooled_output"].numpy(),
                               rtol=0, atol=OURS_ATOL)
    np.testing.assert_allclose(np.asarray(kh["sequence_output"])[real], g["sequence_output"][real],
                               rtol=0, atol=GOLDEN_ATOL)
    np.testing.assert_allclose(np.asarray(kh["pooled_output"]), g["pooled_output"], rtol=0, atol=GOLDEN_ATOL)


def test_tiny_random_way_back(tiny_keras_hub, tmp_path, capsys):
    src, out, _ = tiny_keras_hub
    back = tmp_path / "back"
    assert main(["--from", "keras_hub", "--to", "original", "--in_dir", str(out), "--out_dir", str(back)]) == 0
    before = read_checkpoint(str(src / "bert_model.ckpt"))
    after = read_checkpoint(str(back / "bert_model.ckpt"))
    bert = sorted(n for n in before if n.startswith("bert/"))
    assert sorted(after) == bert and len(bert) == 39  # the 7 cls/* heads have no keras-hub slot
    for name in bert:
        assert after[name].tobytes() == before[name].tobytes(), name
    config = json.loads((back / "bert_config.json").read_text())
    original = json.loads((src / "bert_config.json").read_text())
    # keras-hub keeps no initializer_range (its initializer's stddev is 0.02)
    assert config == dict(original, initializer_range=0.02)


def test_configs_keras_hub_cannot_hold_are_refused(tiny_keras_hub, tmp_path, capsys):
    src = tmp_path / "src"
    shutil.copytree(tiny_keras_hub[0], src)
    config = json.loads((src / "bert_config.json").read_text())
    (src / "bert_config.json").write_text(json.dumps(dict(config, hidden_act="relu")))
    assert main(["--from", "original", "--to", "keras_hub", "--in_dir", str(src), "--out_dir", str(tmp_path / "o")]) == 1
    assert "hidden_act 'relu': keras-hub's BertBackbone always uses the tanh GELU" in capsys.readouterr().err
    (src / "bert_config.json").write_text(json.dumps(dict(config, attention_probs_dropout_prob=0.0)))
    assert main(["--from", "original", "--to", "keras_hub", "--in_dir", str(src), "--out_dir", str(tmp_path / "o")]) == 1
    assert "has one dropout for both" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_not_a_bert_preset_is_refused(tiny_keras_hub, tmp_path, capsys):
    preset = tmp_path / "preset"
    shutil.copytree(tiny_keras_hub[1], preset)
    config = json.loads((preset / "config.json").read_text())
    (preset / "config.json").write_text(json.dumps(dict(config, class_name="GPT2Backbone")))
    assert main(["--from", "keras_hub", "--to", "original", "--in_dir", str(preset), "--out_dir", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "class_name 'GPT2Backbone', expected 'BertBackbone'" in err and err.count("\n") == 1
    os.remove(preset / "config.json")
    assert main(["--from", "keras_hub", "--to", "original", "--in_dir", str(preset), "--out_dir", str(tmp_path / "o")]) == 1
    assert "config.json: not found" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
