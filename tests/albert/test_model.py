"""AlbertModel and its pre-training heads against outputs of the ORIGINAL ALBERT modeling.py.

Bounds (issue 14): every tensor within 2e-5 at real positions (padding within 1e-4, the golden
README's suggested float32 tolerance), log-probs and losses within 1e-5, integer and lookup
outputs exact. The original's float32 outputs agree with a float64 restatement to about 2e-6
(golden README section B), so a wrong formula fails these bounds (see the erf-GELU test).
"""
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel, masked_lm_loss, sentence_order_loss
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from tests.albert.conftest import BATCHES

REAL_ATOL = 2e-5
PAD_ATOL = 1e-4
HEAD_ATOL = 1e-5


def assert_close_by_mask(ours, gold, input_mask, name):
    """[..., B, S, X] arrays: real positions within 2e-5, padding positions within 1e-4."""
    ours, gold = np.asarray(ours), np.asarray(gold)
    assert ours.shape == gold.shape, name
    mask = np.broadcast_to(input_mask.astype(bool)[..., None], gold.shape)
    diff = np.abs(ours - gold)
    assert diff[mask].max() <= REAL_ATOL, f"{name}: real max diff {diff[mask].max()}"
    if (~mask).any():
        assert diff[~mask].max() <= PAD_ATOL, f"{name}: padding max diff {diff[~mask].max()}"


def _inputs(g):
    return {"input_ids": g["input_ids"], "input_mask": g["input_mask"],
            "segment_ids": g["segment_ids"]}


def test_golden_checkpoint_loads_every_variable(albert_golden_model):
    _, _, _, report = albert_golden_model
    assert len(report.loaded) == 32  # 25 bert/* + 7 cls/* (golden README section B)
    assert report.missing == [] and report.unused == [] and report.skipped == []


@pytest.mark.parametrize("batch", BATCHES)
def test_outputs_match_original(albert_golden_model, albert_outputs, batch):
    model, heads, _, _ = albert_golden_model
    g = albert_outputs[batch]
    out = model(_inputs(g))
    mask = g["input_mask"]
    # the raw lookup is a gather: bit-identical
    np.testing.assert_array_equal(out["word_embedding_output"].numpy(), g["word_embedding_output"])
    assert out["embedding_output"].shape[-1] == 16  # E wide: before embedding_hidden_mapping_in
    assert_close_by_mask(out["embedding_output"], g["embedding_output"], mask, "embedding_output")
    assert len(out["all_encoder_layers"]) == 3  # L * inner_group_num
    assert_close_by_mask(np.stack([x.numpy() for x in out["all_encoder_layers"]]),
                         g["all_encoder_layers"], mask, "all_encoder_layers")
    assert_close_by_mask(out["sequence_output"], g["sequence_output"], mask, "sequence_output")
    np.testing.assert_allclose(out["pooled_output"], g["pooled_output"], rtol=0, atol=REAL_ATOL)

    h = heads(out["sequence_output"], out["pooled_output"], g["masked_lm_positions"])
    np.testing.assert_allclose(h["mlm_log_probs"], g["mlm_log_probs"], rtol=0, atol=HEAD_ATOL)
    np.testing.assert_allclose(h["sop_log_probs"], g["sop_log_probs"], rtol=0, atol=HEAD_ATOL)
    mlm_loss, mlm_per_example = masked_lm_loss(h["mlm_log_probs"], g["masked_lm_ids"],
                                               g["masked_lm_weights"])
    sop_loss, sop_per_example = sentence_order_loss(h["sop_log_probs"], g["sentence_order_labels"])
    np.testing.assert_allclose(mlm_per_example, g["mlm_per_example_loss"], rtol=0, atol=HEAD_ATOL)
    np.testing.assert_allclose(float(mlm_loss), g["mlm_loss"], rtol=0, atol=HEAD_ATOL)
    np.testing.assert_allclose(sop_per_example, g["sop_per_example_loss"], rtol=0, atol=HEAD_ATOL)
    np.testing.assert_allclose(float(sop_loss), g["sop_loss"], rtol=0, atol=HEAD_ATOL)
    np.testing.assert_allclose(float(mlm_loss + sop_loss), g["total_loss"], rtol=0, atol=HEAD_ATOL)


def test_erf_gelu_would_fail_the_bound(albert_golden_model, albert_outputs, monkeypatch):
    """The bound is tight enough to catch the exact-erf GELU in the shared block."""
    model, _, _, _ = albert_golden_model
    g = albert_outputs["b0"]
    monkeypatch.setattr(model.block(0, 0).intermediate, "activation",
                        lambda x: tf.nn.gelu(x, approximate=False))
    out = model(_inputs(g))
    real = g["input_mask"].astype(bool)
    assert np.abs(out["sequence_output"].numpy() - g["sequence_output"])[real].max() > REAL_ATOL


def _randomize(model, seed):
    rng = np.random.RandomState(seed)
    model.set_weights([rng.normal(0.0, 0.3, w.shape).astype(np.float32)
                       for w in model.get_weights()])


@pytest.mark.parametrize("layers, groups, inner, expected_groups", [
    (3, 2, 2, [0, 0, 1]),      # int(0/3*2), int(1/3*2), int(2/3*2)
    (4, 3, 1, [0, 0, 1, 2]),   # int(0), int(0.75), int(1.5), int(2.25)
    (3, 3, 1, [0, 1, 2]),      # no sharing: BERT with E = H
    (3, 1, 1, [0, 0, 0]),      # one group shared by all layers
])
def test_encoder_is_bert_with_the_group_weights_repeated(layers, groups, inner, expected_groups):
    """ALBERT with E == H is BERT whose block l*K + k has the weights of group_<g(l)>/
    inner_group_<k>: checks the layer-to-group rule and the per-inner-block outputs against the
    BERT model (itself checked against the original BERT's goldens)."""
    config = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=16,
                          num_hidden_layers=layers, num_hidden_groups=groups,
                          inner_group_num=inner, num_attention_heads=2, intermediate_size=24,
                          max_position_embeddings=12, type_vocab_size=2)
    assert [config.group_of_layer(i) for i in range(layers)] == expected_groups
    albert = AlbertModel(config).build_with_dummy_input()
    assert albert.embedding_hidden_mapping_in is None
    _randomize(albert, 0)
    bert = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=layers * inner,
                                num_attention_heads=2, intermediate_size=24,
                                max_position_embeddings=12, type_vocab_size=2))
    bert.build_with_dummy_input()
    bert.embeddings.set_weights(albert.embeddings.get_weights())
    bert.pooler.set_weights(albert.pooler.get_weights())
    for layer_idx, group_idx in enumerate(expected_groups):
        for k in range(inner):
            bert.encoder_layers[layer_idx * inner + k].set_weights(
                albert.block(group_idx, k).get_weights())
    rng = np.random.RandomState(1)
    inputs = {"input_ids": rng.randint(0, 50, (3, 9)).astype(np.int32),
              "input_mask": np.array([[1] * 9, [1] * 6 + [0] * 3, [1] * 2 + [0] * 7], np.int32),
              "segment_ids": np.array([[0] * 5 + [1] * 4] * 3, np.int32)}
    a, b = albert(inputs), bert(inputs)
    assert len(a["all_encoder_layers"]) == layers * inner
    for x, y in zip(a["all_encoder_layers"], b["all_encoder_layers"]):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(a["pooled_output"], b["pooled_output"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(a["embedding_output"], b["embedding_output"], rtol=0, atol=0)


def test_get_config_round_trips(albert_golden_model, albert_outputs):
    model, _, _, _ = albert_golden_model
    config = model.get_config()
    clone = AlbertModel.from_config(config).build_with_dummy_input()
    assert clone.get_config() == config and clone.config == model.config
    clone.set_weights(model.get_weights())
    g = albert_outputs["b2"]
    np.testing.assert_array_equal(clone(_inputs(g))["sequence_output"].numpy(),
                                  model(_inputs(g))["sequence_output"].numpy())


def test_dropout_only_in_training():
    config = AlbertConfig(vocab_size=20, embedding_size=4, hidden_size=8, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=16, hidden_dropout_prob=0.5)
    model = AlbertModel(config)
    ids = np.arange(12, dtype=np.int32).reshape(2, 6)
    a = model({"input_ids": ids})["sequence_output"].numpy()
    b = model({"input_ids": ids})["sequence_output"].numpy()
    c = model({"input_ids": ids}, training=True)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-3


def test_missing_mask_and_segments_default_to_ones_and_zeros(albert_golden_model, albert_outputs):
    model, _, _, _ = albert_golden_model
    ids = albert_outputs["b0"]["input_ids"][1:2]  # row 2: a full 48-token row, two segments
    full = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                  "segment_ids": np.zeros_like(ids)})
    bare = model(ids)
    np.testing.assert_array_equal(full["sequence_output"].numpy(), bare["sequence_output"].numpy())


def test_sequence_longer_than_max_position_embeddings_fails(albert_golden_model):
    model, _, _, _ = albert_golden_model
    with pytest.raises(ValueError, match="longer than max_position_embeddings 128"):
        model({"input_ids": np.zeros((1, 129), np.int32)})


def test_initial_weights_follow_initializer_range():
    config = AlbertConfig(vocab_size=4000, embedding_size=32, hidden_size=64, num_hidden_layers=1,
                          num_attention_heads=4, intermediate_size=64, initializer_range=0.5)
    model = AlbertModel(config).build_with_dummy_input()
    w = model.embeddings.word_embeddings.numpy()
    assert w.shape == (4000, 32)
    assert np.abs(w).max() <= 2 * 0.5 + 1e-6  # truncated normal: redrawn beyond 2 sigma
    assert 0.8 * 0.5 < w.std() < 0.95 * 0.5  # truncation leaves ~0.88 sigma
    assert np.all(model.embedding_hidden_mapping_in.bias.numpy() == 0)
    assert tuple(model.embedding_hidden_mapping_in.kernel.shape) == (32, 64)


def test_mlm_head_config_round_trips_given_the_shared_embeddings(albert_golden_model,
                                                                 albert_outputs):
    from bert_tf.albert.layers import AlbertMaskedLMHead
    model, heads, _, _ = albert_golden_model
    config = heads.predictions.get_config()
    assert (config["hidden_size"], config["embedding_size"]) == (64, 16)
    clone = AlbertMaskedLMHead.from_config(dict(config, embeddings=model.embeddings))
    assert clone.get_config() == config
    clone.set_weights(heads.predictions.get_weights())
    g = albert_outputs["b2"]
    seq = model({k: g[k] for k in ("input_ids", "input_mask", "segment_ids")})["sequence_output"]
    np.testing.assert_array_equal(clone(seq, g["masked_lm_positions"]).numpy(),
                                  heads.predictions(seq, g["masked_lm_positions"]).numpy())
    # the decoder is the model's [V, E] word-embedding variable itself, not a copy
    assert clone.embeddings.word_embeddings is model.get_embedding_table()
