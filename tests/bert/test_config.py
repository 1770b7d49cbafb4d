"""BertConfig mirrors the original modeling.BertConfig (spec bert.md 2.1)."""
import json

import pytest

from bert_tf.bert.config import BertConfig
from bert_tf.errors import ConfigError

# The size keys every released config file holds (issue 27: required in a file); FULL opens a
# JSON object holding them, to which a test appends the key it checks (the last value wins).
SIZES = {"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
         "intermediate_size": 16, "max_position_embeddings": 32, "type_vocab_size": 2}
FULL = json.dumps(SIZES)[:-1] + ", "


def test_constructor_defaults_are_the_originals():
    c = BertConfig(vocab_size=99)
    assert (c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.intermediate_size) == (768, 12, 12, 3072)
    assert c.type_vocab_size == 16  # the constructor's default, not the released configs' 2
    assert c.hidden_act == "gelu" and c.initializer_range == 0.02
    assert c.hidden_dropout_prob == 0.1 and c.attention_probs_dropout_prob == 0.1
    assert c.max_position_embeddings == 512


def test_to_json_string_round_trip_as_original_test():
    # original modeling_test.test_config_to_json_string
    c = BertConfig(vocab_size=99, hidden_size=37)
    obj = json.loads(c.to_json_string())
    assert obj["vocab_size"] == 99 and obj["hidden_size"] == 37


def test_unknown_keys_are_kept_and_output_is_sorted_indented(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**SIZES, "pooler_type": "first_token_transform",
                                "directionality": "bidi"}))
    c = BertConfig.from_json_file(str(path))
    assert c.pooler_type == "first_token_transform" and c.directionality == "bidi"
    text = c.to_json_string()
    assert text.endswith("}\n")
    assert text.splitlines()[1] == '  "attention_probs_dropout_prob": 0.1,'
    keys = list(json.loads(text))
    assert keys == sorted(keys) and "pooler_type" in keys


def test_golden_minilm_config_round_trips_byte_identical(golden_dir):
    path = f"{golden_dir}/bert/minilm/bert_config.json"
    c = BertConfig.from_json_file(path)
    assert c.to_json_string() == open(path, encoding="utf-8").read()


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"hidden_size": 8}', "missing required key 'vocab_size'$"),
    # a new user's ALBERT and XLNet configs as --bert_config_file
    (FULL + '"num_hidden_groups": 1, "inner_group_num": 1}', "this looks like an ALBERT config "
     "\\(has 'num_hidden_groups', 'inner_group_num'\\): give it as --albert_config_file$"),
    ('{"n_token": 32000, "d_model": 8}', "missing required key 'vocab_size'; this looks like an "
                                         "XLNet config \\(has 'n_token'\\): give it as "
                                         "--model_config_path"),
    (FULL + '"hidden_size": 10, "num_attention_heads": 3}', "not a multiple"),
    (FULL + '"vocab_size": -1}', "'vocab_size' must be a positive integer"),
    # issue 27 item 4: every key the model reads, before any work
    (FULL + '"hidden_act": "swish"}', "'hidden_act' must be one of gelu, relu"),
    (FULL + '"hidden_act": 3}', "'hidden_act' must be one of"),
    (FULL + '"hidden_dropout_prob": 1.0}',
     r"'hidden_dropout_prob' must be a number in \[0, 1\), got 1.0"),
    (FULL + '"attention_probs_dropout_prob": -0.1}',
     "'attention_probs_dropout_prob' must be a number in"),
    (FULL + '"hidden_dropout_prob": NaN}', "'hidden_dropout_prob' must be a number"),
    (FULL + '"hidden_dropout_prob": "0.1"}', "'hidden_dropout_prob' must be a"),
    (FULL + '"initializer_range": "0.02"}',
     "'initializer_range' must be a positive number, got '0.02'"),
    (FULL + '"initializer_range": Infinity}', "'initializer_range' must be a"),
])
def test_bad_config_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "bert_config.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as e:
        BertConfig.from_json_file(str(path))
    assert str(path) in str(e.value)


def test_the_released_keys_and_cases_pass():
    BertConfig.from_dict({"vocab_size": 10, "hidden_act": "GELU", "hidden_dropout_prob": 0,
                          "initializer_range": 1}).validate()
    for act in ("relu", "tanh", "linear", "gelu_exact", "", None):
        BertConfig(vocab_size=10, hidden_act=act).validate()


def test_albert_config_is_checked_the_same_way(tmp_path):
    from bert_tf.albert.config import AlbertConfig
    path = tmp_path / "albert_config.json"
    path.write_text(FULL + '"embedding_size": 8, "hidden_act": "gelu_new"}')
    with pytest.raises(ConfigError, match=str(path) + ": 'hidden_act' must be one of"):
        AlbertConfig.from_json_file(str(path))


def test_type_vocab_size_1_is_refused_for_pairs_only():
    from types import SimpleNamespace
    from bert_tf.bert.config import check_pair_segments
    config = BertConfig(vocab_size=10, type_vocab_size=1)
    single = [SimpleNamespace(text_b=None)] * 2
    check_pair_segments(config, "c.json", "task CoLA", single)
    with pytest.raises(ConfigError, match=r"^c\.json: 'type_vocab_size' is 1 but task MRPC has "
                                          r"sentence pairs \(segment id 1\): it needs 2"):
        check_pair_segments(config, "c.json", "task MRPC", single + [SimpleNamespace(text_b="b")])
    with pytest.raises(ConfigError, match="SQuAD"):
        check_pair_segments(config, "c.json", "SQuAD")
    check_pair_segments(BertConfig(vocab_size=10, type_vocab_size=2), "c.json", "SQuAD")


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read BERT config"):
        BertConfig.from_json_file(str(tmp_path / "nope.json"))


@pytest.mark.parametrize("key", ["hidden_size", "num_hidden_layers", "num_attention_heads",
                                 "intermediate_size", "max_position_embeddings",
                                 "type_vocab_size"])
def test_a_missing_size_key_is_refused_naming_file_and_key(tmp_path, key):
    """Issue 27 fresh round: a config without hidden_size trained a 768-wide model (the
    original's constructor default) without a word."""
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({k: v for k, v in SIZES.items() if k != key}))
    with pytest.raises(ConfigError) as e:
        BertConfig.from_json_file(str(path))
    assert str(e.value).startswith(f"{path}: missing required BERT config key(s) '{key}' ")


def test_a_misspelt_size_key_is_named_beside_the_missing_one(tmp_path):
    """Fresh-user check: "hiden_size" was refused as hidden_size missing, without naming the
    misspelt key the file does hold."""
    path = tmp_path / "bert_config.json"
    config = {k: v for k, v in SIZES.items() if k != "hidden_size"}
    config["hiden_size"] = SIZES["hidden_size"]
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigError) as e:
        BertConfig.from_json_file(str(path))
    assert str(e.value).startswith(f"{path}: missing required BERT config key(s) 'hidden_size' ")
    assert str(e.value).endswith("; it has the unknown key(s) 'hiden_size' (a typo?)")


def test_missing_activation_dropout_and_initializer_take_the_released_values(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(SIZES))
    c = BertConfig.from_json_file(str(path))
    assert (c.hidden_act, c.hidden_dropout_prob, c.attention_probs_dropout_prob,
            c.initializer_range) == ("gelu", 0.1, 0.1, 0.02)


def test_unknown_keys_are_named_in_one_warning(tmp_path, caplog):
    """A typo ("hiden_size") was silent; the released files' extra keys do not warn."""
    import logging
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({**SIZES, "hiden_size": 256, "pooler_fc_size": 768,
                                "pooler_num_attention_heads": 12, "pooler_num_fc_layers": 3,
                                "pooler_size_per_head": 128, "pooler_type": "x",
                                "directionality": "bidi"}))
    with caplog.at_level(logging.WARNING):
        c = BertConfig.from_json_file(str(path))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}: unknown BERT config key(s) 'hiden_size', ignored")
    assert c.hiden_size == 256  # still kept and written back, as the original
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        BertConfig.from_json_file(_write(tmp_path / "ok.json", SIZES))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def _write(path, obj):
    path.write_text(json.dumps(obj))
    return str(path)
