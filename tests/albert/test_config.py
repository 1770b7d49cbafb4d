"""AlbertConfig mirrors the original ALBERT modeling.AlbertConfig."""
import json
import os

import pytest

from bert_tf.albert.config import AlbertConfig
from bert_tf.errors import ConfigError

# The size keys every released config file holds (issue 27: required in a file); FULL opens a
# JSON object holding them, to which a test appends the key it checks (the last value wins).
SIZES = {"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
         "intermediate_size": 16, "max_position_embeddings": 32, "type_vocab_size": 2, "embedding_size": 8}
FULL = json.dumps(SIZES)[:-1] + ", "


def test_constructor_defaults_are_the_originals():
    # original AlbertConfig.__init__ defaults (those of albert_xxlarge)
    c = AlbertConfig(vocab_size=99)
    assert (c.embedding_size, c.hidden_size, c.num_hidden_layers) == (128, 4096, 12)
    assert c.num_hidden_groups == 1
    assert (c.num_attention_heads, c.intermediate_size, c.inner_group_num) == (64, 16384, 1)
    assert c.down_scale_factor == 1 and c.hidden_act == "gelu"
    assert c.hidden_dropout_prob == 0 and c.attention_probs_dropout_prob == 0
    assert (c.max_position_embeddings, c.type_vocab_size, c.initializer_range) == (512, 2, 0.02)


def test_golden_config_round_trips_byte_identical(albert_model_dir):
    path = f"{albert_model_dir}/albert_config.json"
    c = AlbertConfig.from_json_file(path)
    assert (c.vocab_size, c.embedding_size, c.hidden_size) == (30522, 16, 64)
    assert c.num_hidden_layers == 3
    assert c.to_json_string() == open(path, encoding="utf-8").read()


def test_to_json_file_and_back(tmp_path):
    c = AlbertConfig(vocab_size=30000, num_hidden_groups=2, net_structure_type=0)
    path = str(tmp_path / "albert_config.json")
    c.to_json_file(path)
    assert AlbertConfig.from_json_file(path) == c
    assert json.load(open(path))["net_structure_type"] == 0  # unknown keys are kept


@pytest.mark.parametrize("layers, groups, expected", [
    (12, 1, [0] * 12),
    (12, 2, [0] * 6 + [1] * 6),
    (3, 2, [0, 0, 1]),
    (4, 3, [0, 0, 1, 2]),
    (2, 3, [0, 1]),  # more groups than layers: group 2 unused
])
def test_layer_to_group_rule(layers, groups, expected):
    c = AlbertConfig(vocab_size=10, num_hidden_layers=layers, num_hidden_groups=groups)
    assert [c.group_of_layer(i) for i in range(layers)] == expected
    assert c.used_groups == sorted(set(expected))


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"hidden_size": 8}', "missing required key 'vocab_size'"),
    (FULL + '"hidden_size": 10, "num_attention_heads": 3}', "not a multiple"),
    (FULL + '"embedding_size": 0}', "'embedding_size' must be a positive integer"),
    (FULL + '"num_hidden_groups": 1.5}', "'num_hidden_groups' must be a positive"),
    (FULL + '"inner_group_num": true}', "'inner_group_num' must be a positive"),
])
def test_bad_config_files_name_the_file(tmp_path, content, message):
    path = tmp_path / "albert_config.json"
    path.write_text(content)
    with pytest.raises(ConfigError, match=message) as e:
        AlbertConfig.from_json_file(str(path))
    assert str(path) in str(e.value)


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read ALBERT config"):
        AlbertConfig.from_json_file(str(tmp_path / "nope.json"))


def test_a_bert_config_given_as_albert_config_is_refused_naming_embedding_size(tmp_path,
                                                                            golden_dir):
    """Issue 27 fresh round: a BERT config as --albert_config_file trained an ALBERT model
    with the original's default embedding_size (128) without a word."""
    bert = os.path.join(golden_dir, "bert", "tiny_random", "bert_config.json")
    with pytest.raises(ConfigError) as e:
        AlbertConfig.from_json_file(bert)
    assert str(e.value).startswith(f"{bert}: missing required ALBERT config key(s) "
                                   "'embedding_size' ")


def test_the_released_files_extra_keys_do_not_warn_a_typo_does(tmp_path, albert_model_dir,
                                                               caplog):
    """The albert_base v2 file's keys (net_structure_type, gap_size, num_memory_blocks,
    down_scale_factor, inner_group_num) and layers_to_keep are known; "hiden_size" is named."""
    import logging
    obj = json.load(open(os.path.join(albert_model_dir, "albert_config.json")))
    obj.update(net_structure_type=0, gap_size=0, num_memory_blocks=0, layers_to_keep=[])
    path = tmp_path / "albert_config.json"
    path.write_text(json.dumps(obj))
    with caplog.at_level(logging.WARNING):
        AlbertConfig.from_json_file(str(path))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    path.write_text(json.dumps(dict(obj, hiden_size=8)))
    with caplog.at_level(logging.WARNING):
        AlbertConfig.from_json_file(str(path))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"{path}: unknown ALBERT config key(s) 'hiden_size', ignored")
