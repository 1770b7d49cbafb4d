"""HF -> original converter: the golden README records the sha256 of the original-layout files
that the reference converter wrote with TF 2.15 for MiniLM; ours must write the same bytes."""
import hashlib
import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from bert_tf.bert.hf_mapping import convert_hf_config, convert_hf_weights
from bert_tf.convert import convert_hf_folder, main
from bert_tf.errors import ConfigError

# golden/bert/README.md, "Weights, vocabulary and configs used" and section G
MINILM_SHA256 = {
    "bert_model.ckpt.data-00000-of-00001": "566c7697a88815eb119f96f37c0f69894cfcc5849dea67fe24b650403dbff679",
    "bert_model.ckpt.index": "30f61411c6694922dde5b00c5b19f43b762826256bf07f9d9c14f97a925a1f15",
}
CLASSIFIER_SHA256 = {
    "bert_model.ckpt.data-00000-of-00001": "3d1dbe905faa4881bb601931dfb19de0bfe69580f77eb7d5af86a09c76f89f1e",
    "bert_model.ckpt.index": "2e0dacb32108e2dfccfdc31f5d486eb64bc9fb9b681e2f7c9780a86f4917f7dc",
}


def _sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_minilm_conversion_is_byte_identical_to_the_reference(minilm_checkpoint_dir, golden_dir, minilm_dir):
    for name, sha in MINILM_SHA256.items():
        assert _sha(os.path.join(minilm_checkpoint_dir, name)) == sha, name
    assert (open(os.path.join(minilm_checkpoint_dir, "bert_config.json")).read()
            == open(os.path.join(golden_dir, "bert", "minilm", "bert_config.json")).read())
    assert (open(os.path.join(minilm_checkpoint_dir, "vocab.txt"), "rb").read()
            == open(os.path.join(minilm_dir, "vocab.txt"), "rb").read())


def test_classifier_checkpoint_with_extra_npz(minilm_dir, golden_dir, tmp_path):
    rc = main(["--hf_dir", minilm_dir, "--out_dir", str(tmp_path),
               "--extra_npz", os.path.join(golden_dir, "bert", "classifier", "classifier_head.npz")])
    assert rc == 0
    for name, sha in CLASSIFIER_SHA256.items():
        assert _sha(os.path.join(tmp_path, name)) == sha, name


def test_weight_mapping_transposes_linear_weights_and_keeps_nsp_layout():
    rng = np.random.RandomState(0)
    hf = {"bert.encoder.layer.3.intermediate.dense.weight": rng.rand(6, 4).astype(np.float32),
          "cls.seq_relationship.weight": rng.rand(2, 4).astype(np.float32),
          "cls.predictions.bias": rng.rand(9).astype(np.float32),
          "cls.predictions.decoder.weight": rng.rand(9, 4).astype(np.float32),
          "bert.embeddings.LayerNorm.gamma": rng.rand(4).astype(np.float32)}
    out, ignored = convert_hf_weights(hf)
    np.testing.assert_array_equal(out["bert/encoder/layer_3/intermediate/dense/kernel"],
                                  hf["bert.encoder.layer.3.intermediate.dense.weight"].T)
    np.testing.assert_array_equal(out["cls/seq_relationship/output_weights"], hf["cls.seq_relationship.weight"])
    np.testing.assert_array_equal(out["cls/predictions/output_bias"], hf["cls.predictions.bias"])
    assert "bert/embeddings/LayerNorm/gamma" in out
    assert ignored == ["cls.predictions.decoder.weight"]


def test_unknown_tensor_is_named():
    with pytest.raises(ConfigError, match="encoder.layer.0.crossattention.weight"):
        convert_hf_weights({"encoder.layer.0.crossattention.weight": np.zeros((2, 2), np.float32)})


def test_config_errors():
    base = json.load(open(os.path.join(os.path.dirname(__file__), "..", "golden", "bert", "minilm",
                                       "bert_config.json")))
    with pytest.raises(ConfigError, match="position_embedding_type 'relative_key'"):
        convert_hf_config(dict(base, position_embedding_type="relative_key"))
    with pytest.raises(ConfigError, match="hidden_act 'silu'"):
        convert_hf_config(dict(base, hidden_act="silu"))
    with pytest.raises(ConfigError, match="missing BERT config keys"):
        convert_hf_config({"vocab_size": 3})


def test_missing_input_files_fail_cleanly(tmp_path, capsys):
    assert main(["--hf_dir", str(tmp_path), "--out_dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "config.json: not found" in err
    assert not (tmp_path / "out").exists()


def test_a_config_json_that_is_a_list_is_named(tmp_path, capsys):
    # issue 27 item 4: a JSON list was a Python traceback
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text("[1, 2]")
    (hf / "model.safetensors").write_bytes(b"")
    (hf / "vocab.txt").write_text("[PAD]\n")
    assert main(["--hf_dir", str(hf), "--out_dir", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "config.json: expected a JSON object" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_config_that_does_not_fit_the_weights_is_refused(minilm_dir, tmp_path):
    import shutil
    hf = tmp_path / "hf"
    shutil.copytree(minilm_dir, hf)
    config = json.load(open(hf / "config.json"))
    config["num_hidden_layers"] = 12
    json.dump(config, open(hf / "config.json", "w"))
    with pytest.raises(ConfigError, match=r"lacks: bert/encoder/layer_6/.*\(96 in all; num_hidden_layers=12\)"):
        convert_hf_folder(str(hf), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_out_dir_under_a_file(minilm_dir, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    assert main(["--hf_dir", minilm_dir, "--out_dir", str(tmp_path / "afile" / "sub")]) == 1
    assert "--out_dir=" in capsys.readouterr().err


def test_config_with_fewer_layers_than_the_weights_is_refused(minilm_dir, tmp_path):
    import shutil
    hf = tmp_path / "hf"
    shutil.copytree(minilm_dir, hf)
    config = json.load(open(hf / "config.json"))
    config["num_hidden_layers"] = 4
    json.dump(config, open(hf / "config.json", "w"))
    with pytest.raises(ConfigError, match=r"does not describe: bert/encoder/layer_4/.*\(32 in all; num_hidden_layers=4\)"):
        convert_hf_folder(str(hf), str(tmp_path / "out"))


def test_hf_dir_that_is_not_a_folder_is_named_by_its_flag(tmp_path, capsys):
    # the user gave --hf_dir, so the one-line error names --hf_dir (it named --in_dir)
    missing = str(tmp_path / "nonexist")
    assert main(["--hf_dir", missing, "--out_dir", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err.strip() == f"error: --hf_dir={missing}: not a folder"
    assert not (tmp_path / "out").exists()


def test_help_and_flag_errors_do_not_import_tensorflow():
    # `python -m bert_tf.convert --help` waited ~9 s for TensorFlow's import before printing
    import subprocess
    import sys
    code = ("import sys\nfrom bert_tf.convert import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "main(['--from', 'hf', '--to', 'keras_hub', '--in_dir', '.', '--out_dir', 'x'])\n"
            "print('tensorflow' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ), check=True)
    assert "usage: python -m bert_tf.convert" in out.stdout
    assert "not a conversion" in out.stderr
    assert out.stdout.strip().splitlines()[-1] == "False"
