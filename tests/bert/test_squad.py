"""BertSquad (bert/squad.py): get_config round-trips to the same model."""
from bert_tf.bert.config import BertConfig
from bert_tf.bert.squad import BertSquad
from tests.bert.conftest import TINY_CONFIG, assert_config_round_trips


def test_get_config_round_trips():
    model = BertSquad(BertConfig(**TINY_CONFIG), name="bert_squad").build_with_dummy_input()
    clone = assert_config_round_trips(model, ["start_logits", "end_logits"])
    assert clone.name == "bert_squad"
    assert "cls/squad/output_weights" in clone.name_map()
