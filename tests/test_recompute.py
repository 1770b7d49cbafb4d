"""Per-block gradient recomputation (``--recompute_grad``, :mod:`bert_tf.recompute`).

The reference is the same model trained without recomputation: one forward/backward on the
same batch must give the same loss and the same gradient for every trainable variable. With
dropout off the two compute the same function, so equal gradients show that nothing is lost
(the weights read inside each block, the tensors passed in, the per-layer biases of XLNet
sliced outside its layers). With dropout on, equal gradients show that the backward pass
recomputed the masks the loss was computed with; :func:`test_without_pinned_seeds_the_gradients_differ`
shows the same comparison fails when the seeds are not pinned.

Bounds: equal within 1e-5 relative to the largest gradient entry (float32: the recomputed
forward is the same ops on the same inputs; the sums of the backward pass may be ordered
differently). Measured: equal to the last bit, in eager and in a ``tf.function``.

The default suite runs every family eagerly with dropout off, BERT with dropout on and the
failing counterpart; the traced step (as ``TrainStep`` runs it), XLNet with dropout on and
ALBERT's shared block with dropout on are ``slow`` (20-70 s each on the loaded 2-core machine).
"""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import dropout as dropout_module
from bert_tf import recompute
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.model import XLNetModel, XLNetPretrainingModel

BATCH, SEQ, VOCAB = 2, 8, 50
RTOL = 1e-5


def bert(dropout):
    return BertModel(BertConfig(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32,
                                max_position_embeddings=32, hidden_dropout_prob=dropout,
                                attention_probs_dropout_prob=dropout))


def albert(dropout):
    # one group shared by 3 layers: the same block (and its dropout layers) called 3 times
    return AlbertModel(AlbertConfig(vocab_size=VOCAB, embedding_size=8, hidden_size=16,
                                    num_hidden_layers=3, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=32,
                                    hidden_dropout_prob=dropout,
                                    attention_probs_dropout_prob=dropout))


def xlnet(dropout):
    return XLNetModel(XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32,
                                  ff_activation="gelu", untie_r=True, n_token=VOCAB),
                      RunConfig(dropout=dropout, dropatt=dropout))


def xlnet_two_stream(dropout):
    return XLNetPretrainingModel(XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8,
                                             d_inner=32, ff_activation="relu", untie_r=False,
                                             n_token=VOCAB),
                                 RunConfig(dropout=dropout, dropatt=dropout))


FAMILIES = {"bert": bert, "albert": albert, "xlnet": xlnet, "xlnet_two_stream": xlnet_two_stream}


def batch(family):
    rng = np.random.RandomState(0)
    ids = tf.constant(rng.randint(0, VOCAB, (BATCH, SEQ)), tf.int32)
    segments = tf.constant([[0] * 5 + [1] * 3, [0] * 4 + [1] * 4], tf.int32)
    if family == "xlnet_two_stream":
        perm = (rng.rand(BATCH, SEQ, SEQ) < 0.5).astype(np.float32)
        return {"input_k": ids, "seg_id": segments, "perm_mask": tf.constant(perm),
                "target_mapping": tf.constant(np.eye(SEQ, dtype=np.float32)[None, :3]
                                              .repeat(BATCH, 0)),
                "input_q": tf.constant((rng.rand(BATCH, SEQ) < 0.4).astype(np.float32)),
                "target": ids[:, :3], "target_mask": tf.ones([BATCH, 3])}
    mask = tf.constant([[1] * SEQ, [1] * 6 + [0] * 2], tf.int32)
    if family == "xlnet":  # XLNet's input_mask: 1 = padding
        return {"input_ids": ids, "segment_ids": segments, "input_mask": 1 - mask}
    return {"input_ids": ids, "segment_ids": segments, "input_mask": mask}


def loss_of(family, model, features):
    if family == "xlnet_two_stream":
        return model(features, training=True)["total_loss"]
    out = model(features, training=True)
    weights = tf.constant(np.random.RandomState(1).randn(BATCH, SEQ, 16), tf.float32)
    return tf.reduce_sum(out["sequence_output"] * weights)


def seed_states(model):
    return [g.state for layer in model._flatten_layers()
            for g in recompute.dropout_seed_generators(layer) if layer is not model]


def loss_and_gradients(family, model, features, recompute_grad, traced=True):
    """One training forward/backward (in a ``tf.function`` like TrainStep's, autograph off)
    from the dropout seed states the model has now; the states are put back afterwards."""
    states = seed_states(model)
    saved = [s.numpy() for s in states]
    recompute.set_recompute_grad(model, recompute_grad)

    def step():
        with tf.GradientTape() as tape:
            loss = loss_of(family, model, features)
        return loss, tape.gradient(loss, model.trainable_variables)

    if traced:
        step = tf.function(step, autograph=False)
    loss, grads = step()
    for state, value in zip(states, saved):
        state.assign(value)
    return float(loss), [None if g is None else tf.convert_to_tensor(g).numpy() for g in grads]


def assert_equal_gradients(plain, recomputed):
    loss0, grads0 = plain
    loss1, grads1 = recomputed
    assert loss1 == pytest.approx(loss0, rel=RTOL)
    assert len(grads0) == len(grads1)
    scale = max(np.abs(g).max() for g in grads0 if g is not None)
    for g0, g1 in zip(grads0, grads1):
        assert (g0 is None) == (g1 is None)
        if g0 is not None:
            np.testing.assert_allclose(g1, g0, rtol=0, atol=RTOL * scale)


def built(family, dropout):
    model = FAMILIES[family](dropout)
    features = batch(family)
    loss_of(family, model, features)  # creates every weight
    return model, features


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("traced", [pytest.param(True, marks=pytest.mark.slow), False],
                         ids=["tf_function", "eager"])
def test_equal_loss_and_gradients_dropout_off(family, traced):
    model, features = built(family, 0.0)
    plain = loss_and_gradients(family, model, features, False, traced)
    assert sum(g is not None for g in plain[1]) >= 20  # the blocks' weights have gradients
    assert_equal_gradients(plain, loss_and_gradients(family, model, features, True, traced))


@pytest.mark.parametrize("family", ["bert", pytest.param("xlnet", marks=pytest.mark.slow),
                                    pytest.param("xlnet_two_stream", marks=pytest.mark.slow)])
def test_equal_loss_and_gradients_dropout_on(family):
    # each block is called once per step: the pinned seeds are the states a run without
    # recomputation draws from, so even the masks are the same
    model, features = built(family, 0.3)
    plain = loss_and_gradients(family, model, features, False)
    assert_equal_gradients(plain, loss_and_gradients(family, model, features, True))


@pytest.mark.slow
def test_albert_shared_block_dropout_on_recomputes_its_masks(monkeypatch):
    # ALBERT calls one block 3 times; with recomputation each call draws its own pinned
    # stream. Reference: the same pinned streams without recomputation (tf.recompute_grad
    # replaced by the function itself: a plain forward and backward).
    model, features = built("albert", 0.3)
    recomputed = loss_and_gradients("albert", model, features, True)
    monkeypatch.setattr(recompute.tf, "recompute_grad", lambda f: f)
    assert_equal_gradients(loss_and_gradients("albert", model, features, True), recomputed)


@pytest.mark.parametrize("family", ["bert", pytest.param("albert", marks=pytest.mark.slow)])
def test_without_pinned_seeds_the_gradients_differ(family, monkeypatch):
    # the comparison above can fail: recomputing without pinning the seeds draws new masks
    # in the backward pass, and the gradients belong to another network
    model, features = built(family, 0.3)
    plain = loss_and_gradients(family, model, features, False)
    monkeypatch.setattr(recompute, "dropout_seed_generators", lambda block: [])
    with pytest.raises(AssertionError):
        assert_equal_gradients(plain, loss_and_gradients(family, model, features, True))


def test_seed_streams_never_repeat_across_steps():
    # a shared block (ALBERT) called 3 times a step: after each step the generator is left at
    # the first call's state + [0, draws], so the next step's seeds are all new
    model, features = built("albert", 0.3)
    recompute.set_recompute_grad(model, True)
    generators = recompute.dropout_seed_generators(model.transformer_blocks[0])
    seen = []
    original = dropout_module.random_uint16

    def record(shape, key, counter):
        seen.append(tuple(key.numpy()) + tuple(counter.numpy()))
        return original(shape, key, counter)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dropout_module, "random_uint16", record)
        for _ in range(3):
            with tf.GradientTape() as tape:
                loss = loss_of("albert", model, features)
            tape.gradient(loss, model.trainable_variables)
    assert generators
    forward_and_recomputed = len(seen)
    assert forward_and_recomputed > 0
    # every seed is used exactly twice: the forward and its recomputation
    counts = {}
    for s in seen:
        counts[s] = counts.get(s, 0) + 1
    embedding_seeds = {s for s, n in counts.items() if n == 1}  # embeddings: not recomputed
    assert all(n == 2 for s, n in counts.items() if s not in embedding_seeds)
    assert len(embedding_seeds) == 3  # one per step


def test_set_recompute_grad_finds_the_encoders():
    from bert_tf.bert.classifier import BertClassifier
    classifier = BertClassifier(bert(0.0).config, 2)
    assert recompute.set_recompute_grad(classifier, True) == 1
    assert classifier.bert.recompute_grad is True
    assert classifier.bert.get_config()["recompute_grad"] is True
    assert recompute.set_recompute_grad(tf.keras.layers.Dense(2), True) == 0


@pytest.mark.slow
def test_train_loop_sets_the_flag_and_trains_the_same_weights(tmp_path):
    # --recompute_grad reaches the encoder through TrainConfig; two updates of a tiny
    # classifier (encoder dropout off; the head's fixed 0.1 dropout drawn from the same seed
    # states) with and without it end at the same weights
    from bert_tf.bert.checkpoint_map import bert_model_map
    from bert_tf.bert.classifier import BertClassifier
    from bert_tf.training import loop

    features = batch("bert")
    labels = tf.constant([0, 1], tf.int32)
    dataset = tf.data.Dataset.from_tensors((features, labels))

    def loss_fn(model, f, l):
        logits = tf.cast(model(f, training=True)["logits"], tf.float32)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(l, logits))

    finals, flags = [], []
    initial = None
    for on in (False, True):
        model = BertClassifier(bert(0.0).config, 2)
        model.build_with_dummy_input()
        state = model.weights + seed_states(model)
        if initial is None:
            initial = [v.numpy() for v in state]
        for v, value in zip(state, initial):
            v.assign(value)
        config = loop.TrainConfig(str(tmp_path / str(on)), num_train_steps=2,
                                  learning_rate=1e-2, write_summaries=False, recompute_grad=on)
        loop.train(model, loss_fn, dataset, model.name_map(), config)
        flags.append(model.bert.recompute_grad)
        finals.append([v.numpy() for v in model.trainable_variables])
    assert flags == [False, True]
    assert sum(not np.array_equal(a, b) for a, b in zip(initial, finals[0])) > 20  # it trained
    for a, b in zip(*finals):
        np.testing.assert_allclose(b, a, rtol=0, atol=1e-6)


def test_train_loop_refuses_recompute_without_an_encoder(tmp_path):
    from bert_tf.training import loop
    dense = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    config = loop.TrainConfig(str(tmp_path), num_train_steps=1, recompute_grad=True)
    with pytest.raises(ValueError, match="holds no encoder with transformer blocks"):
        loop.train(dense, None, None, {}, config)
