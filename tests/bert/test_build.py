"""The BERT models are complete once constructed: ``build_with_dummy_input`` creates no weight;
the encoder, the classifier and the SQuAD model run no block at all (issue 25: their weights all
exist, a dummy trace only cost start-up time), the pre-trainer's dummy call runs each
transformer block once (Keras builds no layer by a throw-away symbolic run of its ``call``)."""
import pytest

from bert_tf.bert import layers
from bert_tf.bert.classifier import BertClassifier
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.bert.pretrainer import BertPretrainer
from bert_tf.bert.squad import BertSquad
from tests.bert.conftest import TINY_CONFIG


def _all_layers(layer):
    yield layer
    for sub in layer._layers:
        yield from _all_layers(sub)


def _variables(model):
    return [(v.path, tuple(v.shape)) for v in model.variables]


@pytest.mark.parametrize("make,runs_blocks", [(BertModel, False),
                                               (lambda c: BertClassifier(c, 3), False),
                                               (BertSquad, False), (BertPretrainer, True)],
                         ids=["encoder", "classifier", "squad", "pretrainer"])
def test_dummy_build_runs_blocks_at_most_once_and_creates_no_weight(make, runs_blocks,
                                                                    monkeypatch):
    config = BertConfig(**TINY_CONFIG)
    model = make(config)
    # every layer below the model (the model itself may build on its first call, trivially)
    assert [lr.name for lr in _all_layers(model) if not lr.built and lr is not model] == []
    before = _variables(model)
    calls = []
    original_call = layers.TransformerBlock.call

    def counting_call(self, *args, **kwargs):
        calls.append(self.name)
        return original_call(self, *args, **kwargs)

    monkeypatch.setattr(layers.TransformerBlock, "call", counting_call)
    model.build_with_dummy_input()
    # before issue 16: each block 3 times (two symbolic builds + the eager call); before
    # issue 25 once for every model
    expected = [f"layer_{i}" for i in range(config.num_hidden_layers)] if runs_blocks else []
    assert calls == expected
    assert _variables(model) == before
