"""XLNetConfig JSON I/O (original xlnet.XLNetConfig) and RunConfig / create_run_config."""
import json
import os
import types

import pytest

from bert_tf.errors import ConfigError
from bert_tf.xlnet.config import CONFIG_KEYS, RunConfig, XLNetConfig, create_run_config


@pytest.mark.parametrize("name", ["tiny_random", "tiny_random_tied"])
def test_golden_config_round_trip_bytes(golden_dir, name, tmp_path):
    path = os.path.join(golden_dir, "xlnet", name, "xlnet_config.json")
    config = XLNetConfig.from_json_file(path)
    assert config.n_layer == 2 and config.d_model == 64 and config.n_head == 4
    assert config.d_head == 16 and config.d_inner == 128 and config.n_token == 8000
    assert config.untie_r is (name == "tiny_random")
    assert config.ff_activation == ("gelu" if name == "tiny_random" else "relu")
    with open(path, encoding="utf-8") as f:
        original_text = f.read()
    # Written by the original to_json: indent 4, sorted keys, no trailing newline.
    assert config.to_json_string() == original_text
    out = tmp_path / "xlnet_config.json"
    config.to_json_file(str(out))
    assert out.read_text(encoding="utf-8") == original_text


def test_keras_xlnet_config(shared_data_dir):
    path = os.path.join(shared_data_dir, "checkpoints", "xlnet_test_checkpoint_empty", "xlnet_config.json")
    config = XLNetConfig.from_json_file(path)
    assert config.to_dict() == {"n_layer": 2, "d_model": 6, "n_head": 2, "d_head": 3,
                                "d_inner": 12, "ff_activation": "gelu", "untie_r": False,
                                "n_token": 31}


def _write(tmp_path, obj):
    path = tmp_path / "cfg.json"
    path.write_text(json.dumps(obj))
    return str(path)


def _good():
    return {"n_layer": 2, "d_model": 8, "n_head": 2, "d_head": 4, "d_inner": 16,
            "ff_activation": "gelu", "untie_r": True, "n_token": 10}


def test_missing_key_named(tmp_path):
    obj = _good()
    del obj["d_head"]
    with pytest.raises(ConfigError, match=r"cfg.json: missing XLNet config key\(s\) d_head"):
        XLNetConfig.from_json_file(_write(tmp_path, obj))


def test_bad_activation(tmp_path):
    obj = dict(_good(), ff_activation="swish")
    with pytest.raises(ConfigError, match="ff_activation"):
        XLNetConfig.from_json_file(_write(tmp_path, obj))


def test_bert_config_recognised(tmp_path):
    obj = {"hidden_size": 8, "vocab_size": 10, "num_hidden_layers": 1}
    with pytest.raises(ConfigError, match="looks like a BERT config"):
        XLNetConfig.from_json_file(_write(tmp_path, obj))


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigError, match="bad.json: not valid JSON"):
        XLNetConfig.from_json_file(str(bad))
    with pytest.raises(ConfigError, match="absent.json"):
        XLNetConfig.from_json_file(str(tmp_path / "absent.json"))


def test_only_the_eight_keys_are_kept():
    config = XLNetConfig.from_dict(dict(_good(), extra_key=1))
    assert tuple(sorted(config.to_dict())) == tuple(sorted(CONFIG_KEYS))


def test_run_config_defaults_are_the_original():
    rc = RunConfig()
    assert (rc.init, rc.init_range, rc.init_std) == ("normal", 0.1, 0.02)
    assert rc.mem_len is None and rc.reuse_len is None and rc.bi_data is False
    assert rc.clamp_len == -1 and rc.same_length is False and rc.attn_type == "bi"
    with pytest.raises(ConfigError, match="attn_type"):
        RunConfig(attn_type="causal")
    with pytest.raises(ConfigError, match="init"):
        RunConfig(init="xavier")


def test_create_run_config_finetune_ignores_memory_flags():
    flags = types.SimpleNamespace(use_tpu=False, use_bfloat16=False, dropout=0.1, dropatt=0.1,
                                  init="normal", init_range=0.1, init_std=0.02, clamp_len=-1,
                                  mem_len=384, reuse_len=256, bi_data=True, same_length=True)
    finetune = create_run_config(True, True, flags)
    assert finetune.is_training and finetune.dropout == 0.1 and finetune.dropatt == 0.1
    assert finetune.mem_len is None and finetune.reuse_len is None
    assert finetune.bi_data is False and finetune.same_length is False
    pretrain = create_run_config(True, False, flags)
    assert (pretrain.mem_len, pretrain.reuse_len, pretrain.bi_data, pretrain.same_length) == (
        384, 256, True, True)
    # A runner without the memory flags (run_classifier defines none) still works.
    minimal = types.SimpleNamespace(dropout=0.0, dropatt=0.0)
    assert create_run_config(False, False, minimal).mem_len is None


def test_unknown_keys_are_named_in_one_warning(tmp_path, caplog):
    """Issue 27 fresh round: a typo in a config key was silent (the original ignores keys
    other than the eight; bert_tf names them). The eight keys alone do not warn."""
    import logging
    with caplog.at_level(logging.WARNING):
        XLNetConfig.from_json_file(_write(tmp_path, _good()))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    path = _write(tmp_path, dict(_good(), d_modle=16))
    with caplog.at_level(logging.WARNING):
        XLNetConfig.from_json_file(path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}: unknown XLNet config key(s) 'd_modle', ignored")
