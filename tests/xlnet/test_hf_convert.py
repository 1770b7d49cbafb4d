"""Original XLNet -> HF `XLNetModel` folder and back (`python -m bert_tf.convert --from original
--to hf`, `--hf_dir`): tensor layout worked out from HF's `XLNetRelativeAttention` (every layer
holds its own biases and seg_embed; nn.Linear [out, in]), transformer variables bit-exact on
the way back, the heads listed as left out. No torch needed (HF's model runs in
tests/test_convert_transformers.py)."""
import json
import os
import shutil

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from bert_tf.checkpoint_io import read_checkpoint
from bert_tf.convert import main
from bert_tf.errors import ConfigError
from bert_tf.xlnet.config import XLNetConfig
from bert_tf.xlnet.hf_mapping import convert_hf_weights, hf_config_dict

VARIANTS = ("tiny_random", "tiny_random_tied")


@pytest.fixture(params=VARIANTS)
def golden_folder(request, golden_dir, tmp_path):
    """A golden tiny XLNet folder (xlnet_config.json + xlnet_model.ckpt) plus the real spiece.model."""
    folder = tmp_path / request.param
    folder.mkdir()
    src = os.path.join(golden_dir, "xlnet", request.param)
    for name in ("xlnet_config.json", "xlnet_model.ckpt.index", "xlnet_model.ckpt.data-00000-of-00001"):
        shutil.copyfile(os.path.join(src, name), folder / name)
    shutil.copyfile(os.path.join(golden_dir, "xlnet", "spiece.model"), folder / "spiece.model")
    return folder


def test_layout_of_the_hf_tensors(golden_folder, tmp_path, capsys):
    hf = tmp_path / "hf"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(golden_folder), "--out_dir", str(hf)]) == 0
    out = capsys.readouterr().out
    # lm_loss/bias + the 2 sequence-summary variables: XLNetModel has no head.
    assert "not converted (3, no counterpart in --to=hf): model/lm_loss/bias, model/sequnece_summary/summary/bias" in out
    assert sorted(os.listdir(hf)) == ["config.json", "model.safetensors", "spiece.model"]
    orig = read_checkpoint(str(golden_folder / "xlnet_model.ckpt"))
    config = XLNetConfig.from_json_file(str(golden_folder / "xlnet_config.json"))
    t = load_file(str(hf / "model.safetensors"))
    assert len(t) == 2 + 2 * 17  # word_embedding, mask_emb; per layer 13 + 3 biases + seg_embed
    tm = "model/transformer/"
    for i in range(2):
        for b in ("r_w_bias", "r_r_bias", "r_s_bias"):
            expected = orig[tm + b][i] if config.untie_r else orig[tm + b]
            np.testing.assert_array_equal(t[f"layer.{i}.rel_attn.{b}"], expected)
        np.testing.assert_array_equal(t[f"layer.{i}.rel_attn.seg_embed"], orig[tm + "seg_embed"][i])
        np.testing.assert_array_equal(t[f"layer.{i}.rel_attn.o"], orig[f"{tm}layer_{i}/rel_attn/o/kernel"])
        np.testing.assert_array_equal(t[f"layer.{i}.ff.layer_1.weight"], orig[f"{tm}layer_{i}/ff/layer_1/kernel"].T)
        assert t[f"layer.{i}.ff.layer_1.weight"].shape == (128, 64)  # nn.Linear(d_model, d_inner)
    np.testing.assert_array_equal(t["word_embedding.weight"], orig[tm + "word_embedding/lookup_table"])
    hf_config = json.loads((hf / "config.json").read_text())
    assert hf_config["ff_activation"] == {"gelu": "gelu_new", "relu": "relu"}[config.ff_activation]
    assert (hf_config["vocab_size"], hf_config["d_model"], hf_config["n_layer"], hf_config["n_head"],
            hf_config["d_head"], hf_config["d_inner"]) == (8000, 64, 2, 4, 16, 128)
    assert hf_config["untie_r"] == config.untie_r and hf_config["mem_len"] is None
    assert hf_config["layer_norm_eps"] == 1e-12 and hf_config["attn_type"] == "bi"


def test_round_trip_is_bit_exact(golden_folder, tmp_path):
    hf, back = tmp_path / "hf", tmp_path / "back"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(golden_folder), "--out_dir", str(hf)]) == 0
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 0
    before = read_checkpoint(str(golden_folder / "xlnet_model.ckpt"), include_optimizer=True)
    after = read_checkpoint(str(back / "xlnet_model.ckpt"), include_optimizer=True)
    transformer = sorted(n for n in before if n.startswith("model/transformer/"))
    assert sorted(after) == transformer and len(transformer) == 5 + 1 + 13 * 2
    for name in transformer:
        assert after[name].dtype == before[name].dtype and after[name].shape == before[name].shape
        assert after[name].tobytes() == before[name].tobytes(), name
    assert ((back / "xlnet_config.json").read_text()
            == (golden_folder / "xlnet_config.json").read_text())
    assert (back / "spiece.model").read_bytes() == (golden_folder / "spiece.model").read_bytes()


def test_d_head_that_hf_cannot_hold_is_refused():
    config = XLNetConfig(n_layer=1, d_model=8, n_head=2, d_head=3, d_inner=16, ff_activation="gelu",
                         untie_r=True, n_token=10)
    with pytest.raises(ConfigError, match=r"d_head 3 != d_model // n_head \(8 // 2\)"):
        hf_config_dict(config)


def test_tied_biases_that_differ_per_layer_are_refused():
    config = XLNetConfig(n_layer=2, d_model=4, n_head=2, d_head=2, d_inner=8, ff_activation="relu",
                         untie_r=False, n_token=5)
    rng = np.random.RandomState(0)
    tensors = {"word_embedding.weight": rng.rand(5, 4).astype(np.float32)}
    for i in range(2):
        for b in ("r_w_bias", "r_r_bias", "r_s_bias"):
            tensors[f"layer.{i}.rel_attn.{b}"] = np.ones((2, 2), np.float32) * (1 if b != "r_s_bias" else i)
    with pytest.raises(ConfigError, match="untie_r is false but layer.1.rel_attn.r_s_bias differs"):
        convert_hf_weights(tensors, config)


def test_hf_head_tensors_and_erf_gelu_are_refused(golden_folder, tmp_path, capsys):
    hf, back = tmp_path / "hf", tmp_path / "back"
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(golden_folder), "--out_dir", str(hf)]) == 0
    t = load_file(str(hf / "model.safetensors"))
    save_file(dict(t, **{"lm_loss.bias": np.zeros(8000, np.float32)}), str(hf / "model.safetensors"))
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 1
    err = capsys.readouterr().err
    assert "lm_loss.bias have no original XLNet transformer name" in err and err.count("\n") == 1
    config = json.loads((hf / "config.json").read_text())
    (hf / "config.json").write_text(json.dumps(dict(config, ff_activation="gelu")))
    assert main(["--hf_dir", str(hf), "--out_dir", str(back)]) == 1
    assert "ff_activation 'gelu' has no original XLNet equivalent" in capsys.readouterr().err
    assert not back.exists()


def test_shape_mismatch_and_missing_checkpoint_are_named(golden_folder, tmp_path, capsys):
    from bert_tf.checkpoint_io import write_checkpoint
    config = json.loads((golden_folder / "xlnet_config.json").read_text())
    (golden_folder / "xlnet_config.json").write_text(json.dumps(dict(config, d_inner=256)))
    out = tmp_path / "hf"
    argv = ["--from", "original", "--to", "hf", "--in_dir", str(golden_folder), "--out_dir", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "model/transformer/layer_0/ff/layer_1/kernel has shape [64, 128] but the config implies [64, 256]" in err
    (golden_folder / "xlnet_config.json").write_text(json.dumps(config))
    for f in golden_folder.glob("xlnet_model.ckpt*"):
        f.unlink()
    assert main(argv) == 1
    assert "checkpoint not found" in capsys.readouterr().err
    assert not out.exists()
