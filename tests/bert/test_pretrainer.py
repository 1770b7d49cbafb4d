"""BertPretrainer (bert/pretrainer.py): get_config round-trips to the same model."""
from bert_tf.bert.config import BertConfig
from bert_tf.bert.pretrainer import BertPretrainer
from tests.bert.conftest import TINY_CONFIG, assert_config_round_trips


def test_get_config_round_trips():
    model = BertPretrainer(BertConfig(**TINY_CONFIG)).build_with_dummy_input()
    clone = assert_config_round_trips(model, ["mlm_log_probs", "nsp_log_probs"])
    assert clone.name == "bert_pretrainer"
    assert len(clone.name_map()) == 5 + 16 + 2 + 7  # 1 layer: bert/* then cls/*
