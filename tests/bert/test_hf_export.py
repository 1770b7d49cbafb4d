"""Original BERT -> Hugging Face folder (`python -m bert_tf.convert --from original --to hf`),
and back: bit-exact round trips, the real MiniLM safetensors as the independent reference for
names and layouts, one-line errors. No torch needed (tests with `transformers` are in
tests/test_convert_transformers.py)."""
import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file

from bert_tf.checkpoint_io import read_checkpoint, write_checkpoint
from bert_tf.convert import main


def _checkpoint_bits(prefix):
    """name -> (dtype, shape, bytes) of every entry, optimizer state included."""
    return {n: (a.dtype.str, a.shape, a.tobytes())
            for n, a in read_checkpoint(prefix, include_optimizer=True).items()}


@pytest.fixture()
def tiny_original(golden_dir, uncased_vocab_file, tmp_path):
    """The golden tiny_random checkpoint (39 bert/* + 7 cls/*) with the uncased vocab."""
    folder = tmp_path / "orig"
    folder.mkdir()
    src = os.path.join(golden_dir, "bert", "tiny_random")
    for name in ("bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copyfile(os.path.join(src, name), folder / name)
    shutil.copyfile(uncased_vocab_file, folder / "vocab.txt")
    return folder


def test_tiny_random_round_trip_is_bit_exact(tiny_original, tmp_path, capsys):
    hf, back = tmp_path / "hf", tmp_path / "back"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                 "--out_dir", str(hf)]) == 0
    assert sorted(os.listdir(hf)) == ["config.json", "model.safetensors", "tokenizer_config.json",
                                      "vocab.txt"]
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 0
    before = _checkpoint_bits(str(tiny_original / "bert_model.ckpt"))
    after = _checkpoint_bits(str(back / "bert_model.ckpt"))
    assert len(before) == 46  # 5 + 16*2 + 2 + 7 cls/* (golden README section B)
    assert sorted(after) == sorted(before)
    for name in before:
        assert after[name] == before[name], name
    assert (back / "bert_config.json").read_text() == (tiny_original / "bert_config.json").read_text()
    assert (back / "vocab.txt").read_bytes() == (tiny_original / "vocab.txt").read_bytes()


def test_pretraining_heads_layout_and_config(tiny_original, tmp_path):
    hf = tmp_path / "hf"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                 "--out_dir", str(hf)]) == 0
    t = load_file(str(hf / "model.safetensors"))
    orig = read_checkpoint(str(tiny_original / "bert_model.ckpt"))
    assert len(t) == 46
    # BertForPreTraining names: "bert." prefix, nn.Linear [out, in], NSP [2, H] as stored.
    np.testing.assert_array_equal(t["bert.encoder.layer.1.intermediate.dense.weight"],
                                  orig["bert/encoder/layer_1/intermediate/dense/kernel"].T)
    np.testing.assert_array_equal(t["cls.seq_relationship.weight"], orig["cls/seq_relationship/output_weights"])
    np.testing.assert_array_equal(t["cls.predictions.bias"], orig["cls/predictions/output_bias"])
    assert "cls.predictions.decoder.weight" not in t  # tied to the word embeddings
    config = json.loads((hf / "config.json").read_text())
    assert config["architectures"] == ["BertForPreTraining"]
    assert config["hidden_act"] == "gelu_new"  # HF's name for the original's tanh GELU
    assert config["layer_norm_eps"] == 1e-12 and config["initializer_range"] == 0.2
    tok = json.loads((hf / "tokenizer_config.json").read_text())
    assert tok["do_lower_case"] is True and tok["tokenizer_class"] == "BertTokenizer"


def test_minilm_export_equals_the_real_hf_file(minilm_checkpoint_dir, minilm_dir, tmp_path):
    """Original MiniLM -> HF gives back every tensor of the package's own model.safetensors."""
    hf = tmp_path / "hf"
    assert main(["--from", "original", "--to", "hf", "--in_dir", minilm_checkpoint_dir,
                 "--out_dir", str(hf)]) == 0
    ours = load_file(str(hf / "model.safetensors"))
    real = load_file(os.path.join(minilm_dir, "model.safetensors"))
    assert sorted(ours) == sorted(k for k in real if k != "embeddings.position_ids")
    for name, value in ours.items():
        assert value.dtype == real[name].dtype and value.tobytes() == real[name].tobytes(), name
    config = json.loads((hf / "config.json").read_text())
    real_config = json.load(open(os.path.join(minilm_dir, "config.json")))
    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size",
                "layer_norm_eps", "architectures", "position_embedding_type"):
        assert config[key] == real_config[key], key
    # The package says "gelu" (erf); the converted checkpoint is the original's tanh GELU.
    assert real_config["hidden_act"] == "gelu" and config["hidden_act"] == "gelu_new"


def test_classifier_head_round_trip(minilm_dir, golden_dir, tmp_path):
    orig, hf, back = tmp_path / "orig", tmp_path / "hf", tmp_path / "back"
    head = os.path.join(golden_dir, "bert", "classifier", "classifier_head.npz")
    assert main(["--hf_dir", minilm_dir, "--out_dir", str(orig), "--extra_npz", head]) == 0
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(orig), "--out_dir", str(hf)]) == 0
    config = json.loads((hf / "config.json").read_text())
    assert config["architectures"] == ["BertForSequenceClassification"]
    assert config["id2label"] == {"0": "LABEL_0", "1": "LABEL_1"}
    t = load_file(str(hf / "model.safetensors"))
    with np.load(head) as h:
        np.testing.assert_array_equal(t["classifier.weight"], h["output_weights"])  # [2, H] both
        np.testing.assert_array_equal(t["classifier.bias"], h["output_bias"])
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 0
    assert _checkpoint_bits(str(back / "bert_model.ckpt")) == _checkpoint_bits(str(orig / "bert_model.ckpt"))


def test_squad_head_round_trip(tiny_original, tmp_path):
    arrays = {n: a for n, a in read_checkpoint(str(tiny_original / "bert_model.ckpt")).items()
              if n.startswith("bert/")}
    rng = np.random.RandomState(3)
    arrays["cls/squad/output_weights"] = rng.rand(2, 64).astype(np.float32)
    arrays["cls/squad/output_bias"] = rng.rand(2).astype(np.float32)
    write_checkpoint(str(tiny_original / "bert_model.ckpt"), arrays)
    hf, back = tmp_path / "hf", tmp_path / "back"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original), "--out_dir", str(hf)]) == 0
    assert json.loads((hf / "config.json").read_text())["architectures"] == ["BertForQuestionAnswering"]
    np.testing.assert_array_equal(load_file(str(hf / "model.safetensors"))["qa_outputs.weight"],
                                  arrays["cls/squad/output_weights"])
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 0
    assert _checkpoint_bits(str(back / "bert_model.ckpt")) == _checkpoint_bits(str(tiny_original / "bert_model.ckpt"))


def test_training_checkpoint_leaves_out_optimizer_state(shared_data_dir, tmp_path, capsys):
    """The original run_pretraining.py checkpoint (139 entries): the 46 model variables go to
    HF and come back bit-exact; global_step and the 92 Adam slots are listed as left out."""
    src = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining")
    hf, back = tmp_path / "hf", tmp_path / "back"
    assert main(["--from", "original", "--to", "hf", "--in_dir", src, "--out_dir", str(hf),
                 "--do_lower_case", "false"]) == 0
    out = capsys.readouterr().out
    assert "not converted (93, no counterpart in --to=hf)" in out
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 0
    before = _checkpoint_bits(os.path.join(src, "bert_model.ckpt"))
    assert len(before) == 139
    model_vars = {n: v for n, v in before.items() if not n.endswith(("adam_m", "adam_v")) and n != "global_step"}
    assert _checkpoint_bits(str(back / "bert_model.ckpt")) == model_vars


def _error(argv, capsys):
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err
    return err


def test_shape_mismatch_names_the_variable(tiny_original, tmp_path, capsys):
    arrays = read_checkpoint(str(tiny_original / "bert_model.ckpt"))
    arrays["bert/encoder/layer_1/output/dense/kernel"] = np.zeros((64, 64), np.float32)
    write_checkpoint(str(tiny_original / "bert_model.ckpt"), arrays)
    err = _error(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                  "--out_dir", str(tmp_path / "hf")], capsys)
    assert "bert/encoder/layer_1/output/dense/kernel has shape [64, 64]" in err and "[128, 64]" in err
    assert not (tmp_path / "hf").exists()


def test_unknown_variable_is_named(tiny_original, tmp_path, capsys):
    arrays = read_checkpoint(str(tiny_original / "bert_model.ckpt"))
    arrays["my_head/kernel"] = np.zeros((64, 3), np.float32)
    write_checkpoint(str(tiny_original / "bert_model.ckpt"), arrays)
    err = _error(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                  "--out_dir", str(tmp_path / "hf")], capsys)
    assert "my_head/kernel [64, 3] has no Hugging Face BERT name" in err
    assert not (tmp_path / "hf").exists()


def test_input_errors(tiny_original, tmp_path, capsys):
    out = str(tmp_path / "out")
    os.remove(tiny_original / "vocab.txt")
    assert "vocab.txt: not found" in _error(["--from", "original", "--to", "hf", "--in_dir",
                                             str(tiny_original), "--out_dir", out], capsys)
    assert "expected one of bert_config.json or xlnet_config.json" in _error(
        ["--from", "original", "--to", "hf", "--in_dir", str(tmp_path), "--out_dir", out], capsys)
    assert "--hf_dir is the input of --from=hf" in _error(
        ["--from", "original", "--hf_dir", str(tiny_original), "--out_dir", out], capsys)
    assert "--from=hf --to=keras_hub: not a conversion" in _error(
        ["--from", "hf", "--to", "keras_hub", "--in_dir", str(tiny_original), "--out_dir", out], capsys)
    assert not os.path.exists(out)


def test_cased_vocab_with_do_lower_case_is_refused(tiny_original, tmp_path, capsys):
    words = [f"Word{i}" for i in range(30522 - 5)]
    (tiny_original / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    err = _error(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                  "--out_dir", str(tmp_path / "hf")], capsys)
    assert "--do_lower_case=False" in err
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(tiny_original),
                 "--out_dir", str(tmp_path / "hf"), "--do_lower_case", "false"]) == 0
    assert json.loads((tmp_path / "hf" / "tokenizer_config.json").read_text())["do_lower_case"] is False


def test_source_activation_exports_back_to_hf_gelu(minilm_dir, tmp_path):
    """HF -> original with --hidden_act=source writes "gelu_exact"; exporting that back gives
    HF's "gelu" (the erf form it stands for): the package's own config.json value."""
    orig, hf = tmp_path / "orig", tmp_path / "hf"
    assert main(["--hf_dir", minilm_dir, "--out_dir", str(orig), "--hidden_act=source"]) == 0
    assert json.loads((orig / "bert_config.json").read_text())["hidden_act"] == "gelu_exact"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(orig),
                 "--out_dir", str(hf)]) == 0
    real_config = json.load(open(os.path.join(minilm_dir, "config.json")))
    assert json.loads((hf / "config.json").read_text())["hidden_act"] == real_config["hidden_act"]
    assert real_config["hidden_act"] == "gelu"
    ours = load_file(str(hf / "model.safetensors"))
    real = load_file(os.path.join(minilm_dir, "model.safetensors"))
    for name, value in ours.items():
        assert value.tobytes() == real[name].tobytes(), name
