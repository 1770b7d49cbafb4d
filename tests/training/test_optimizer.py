"""AdamWeightDecay and create_optimizer against spec bert.md 7.1, 7.2 and 12.3.

The expected values come from ``spec_*`` below: the spec's formulas restated in numpy.
"""
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.optimizer import (BERT_EXCLUDE_FROM_WEIGHT_DECAY, AdamWeightDecay,
                                        create_optimizer, inner_optimizer)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from tests.training.spec_formulas import spec_adam_step, spec_clip, spec_lr  # noqa: E402


# ---- fixtures -----------------------------------------------------------------------------------

NAMES = {
    # original name: (shape, decayed per spec 7.2)
    "bert/embeddings/word_embeddings": ((5, 3), True),
    "bert/encoder/layer_0/output/dense/kernel": ((3, 2), True),
    "bert/encoder/layer_0/output/dense/bias": ((2,), False),
    "bert/encoder/layer_0/output/LayerNorm/gamma": ((2,), False),
    "xlnet/layer_norm/beta": ((2,), False),
    "output_weights": ((2, 3), True),
    "output_bias": ((2,), False),
}


def make_variables(seed=0):
    rng = np.random.RandomState(seed)
    name_map = {}
    for i, (name, (shape, _)) in enumerate(NAMES.items()):
        # Keras names unrelated to the original ones: the decision must use the map.
        name_map[name] = keras.Variable(rng.uniform(-1, 1, shape).astype(np.float32),
                                        name=f"w{i}", dtype="float32")
    return name_map


def grads_for(step, shapes, scale):
    rng = np.random.RandomState(100 + step)
    return [(rng.uniform(-1, 1, s) * scale).astype(np.float32) for s in shapes]


# ---- tests --------------------------------------------------------------------------------------

def test_create_optimizer_defaults():
    opt, sched = create_optimizer(2e-5, num_train_steps=100, num_warmup_steps=10)
    assert isinstance(opt, AdamWeightDecay)
    assert (opt.weight_decay_rate, opt.beta_1, opt.beta_2, opt.epsilon, opt.clip_norm) == (
        0.01, 0.9, 0.999, 1e-6, 1.0)
    assert opt.exclude_from_weight_decay_patterns == ["LayerNorm", "layer_norm", "bias"]
    assert opt.name == "AdamWeightDecayOptimizer"
    assert sched.get_config()["init_lr"] == 2e-5
    plain = AdamWeightDecay(learning_rate=0.1)
    assert (plain.weight_decay_rate, plain.beta_1, plain.beta_2, plain.epsilon,
            plain.clip_norm) == (0.0, 0.9, 0.999, 1e-6, None)


def test_decay_table_uses_original_names():
    opt = AdamWeightDecay(0.1, weight_decay_rate=0.01,
                          exclude_from_weight_decay=BERT_EXCLUDE_FROM_WEIGHT_DECAY)
    for name, expected in [
            ("bert/embeddings/word_embeddings", True),
            ("bert/embeddings/token_type_embeddings", True),
            ("bert/embeddings/position_embeddings", True),
            ("bert/embeddings/LayerNorm/gamma", False),
            ("bert/encoder/layer_8/intermediate/dense/kernel", True),
            ("bert/encoder/layer_8/intermediate/dense/bias", False),
            ("bert/pooler/dense/kernel", True),
            ("cls/predictions/output_bias", False),
            ("cls/predictions/transform/LayerNorm/beta", False),
            ("cls/seq_relationship/output_weights", True),
            ("output_weights", True),
            ("output_bias", False),
            ("cls/squad/output_weights", True)]:
        assert opt.do_use_weight_decay(name) is expected, name
    assert AdamWeightDecay(0.1).do_use_weight_decay("output_weights") is False  # rate 0


def test_include_list_checked_before_exclude():
    # XLNet passes include_in_weight_decay=["r_s_bias", "r_r_bias", "r_w_bias"].
    opt = AdamWeightDecay(0.1, weight_decay_rate=0.01, exclude_from_weight_decay=["bias"],
                          include_in_weight_decay=["r_w_bias"])
    assert opt.do_use_weight_decay("model/transformer/r_w_bias") is True
    assert opt.do_use_weight_decay("model/transformer/layer_0/ff/layer_1/bias") is False


def test_steps_match_spec_with_schedule_decay_and_clipping():
    """Six updates through create_optimizer: lr 0 at step 0, warmup, decay, clipping, decay."""
    name_map = make_variables()
    names = list(name_map)
    shapes = [NAMES[n][0] for n in names]
    decayed = [NAMES[n][1] for n in names]
    opt, _ = create_optimizer(0.1, num_train_steps=8, num_warmup_steps=2, variable_names=name_map)
    variables = list(name_map.values())

    params = [v.numpy().astype(np.float64) for v in variables]
    ms = [np.zeros(s) for s in shapes]
    vs = [np.zeros(s) for s in shapes]
    # Steps 0, 2 and 4 have a global norm below 1 (no clipping), the others above.
    scales = [0.05, 3.0, 0.1, 5.0, 0.2, 2.0]
    for step, scale in enumerate(scales):
        grads = grads_for(step, shapes, scale)
        norm = np.sqrt(sum(np.sum(np.square(g.astype(np.float64))) for g in grads))
        assert (norm > 1.0) == (scale >= 2.0)
        opt.apply(grads, variables)
        lr = spec_lr(step, 0.1, 8, 2)
        clipped = spec_clip([g.astype(np.float64) for g in grads], 1.0)
        for i in range(len(params)):
            params[i], ms[i], vs[i] = spec_adam_step(params[i], clipped[i], ms[i], vs[i], lr,
                                                    decayed[i])
        slots = opt.slot_variables()
        for i, name in enumerate(names):
            np.testing.assert_allclose(variables[i].numpy(), params[i], rtol=2e-5, atol=1e-6,
                                       err_msg=f"{name} after step {step}")
            np.testing.assert_allclose(slots[name + "/adam_m"].numpy(), ms[i], rtol=2e-5,
                                       atol=1e-7, err_msg=f"{name}/adam_m after step {step}")
            np.testing.assert_allclose(slots[name + "/adam_v"].numpy(), vs[i], rtol=2e-5,
                                       atol=1e-9, err_msg=f"{name}/adam_v after step {step}")
        if step == 0:  # lr 0: parameters unchanged, moments updated
            np.testing.assert_array_equal(variables[0].numpy(), make_variables()[names[0]].numpy())
            assert np.all(slots[names[0] + "/adam_m"].numpy() != 0)
    assert int(opt.iterations.numpy()) == len(scales)
    assert opt.variable_decay_table() == {n: NAMES[n][1] for n in names}


def test_first_step_has_no_bias_correction_hand_values():
    # g = 0.5: m = 0.05, v = 0.00025, u = 0.05 / (sqrt(0.00025) + 1e-6) = 3.16207...
    # With bias correction (Keras Adam/AdamW) u would be about 1.0.
    w = keras.Variable(np.array([1.0, 2.0], np.float32))
    b = keras.Variable(np.array([1.0, 2.0], np.float32))
    opt = AdamWeightDecay(0.01, weight_decay_rate=0.1, exclude_from_weight_decay=["bias"],
                          variable_names={"dense/kernel": w, "dense/bias": b})
    g = np.array([0.5, -0.5], np.float32)
    opt.apply([g, g], [w, b])
    u = 0.05 / (np.sqrt(0.00025) + 1e-6)
    np.testing.assert_allclose(u, 3.162077, rtol=1e-6)
    # kernel decays: 1 - 0.01 * (3.162077 + 0.1 * 1) = 0.96737923; 2 - 0.01 * (-3.162077 + 0.2)
    np.testing.assert_allclose(w.numpy(), [0.96737923, 2.02962077], rtol=1e-6)
    # bias does not: 1 - 0.01 * 3.162077 = 0.96837923
    np.testing.assert_allclose(b.numpy(), [0.96837923, 2.03162077], rtol=1e-6)
    slots = opt.slot_variables()
    np.testing.assert_allclose(slots["dense/kernel/adam_m"].numpy(), [0.05, -0.05], rtol=1e-6)
    np.testing.assert_allclose(slots["dense/kernel/adam_v"].numpy(), [0.00025, 0.00025],
                               rtol=1e-5)
    assert sorted(slots) == ["dense/bias/adam_m", "dense/bias/adam_v",
                             "dense/kernel/adam_m", "dense/kernel/adam_v"]
    assert all(s.dtype == "float32" for s in slots.values())


def test_clipping_by_global_norm_hand_values():
    # grads [3] and [4]: global norm 5 -> clipped to 0.6 and 0.8; m = 0.1 * clipped.
    a = keras.Variable(np.zeros([1], np.float32))
    b = keras.Variable(np.zeros([1], np.float32))
    opt = AdamWeightDecay(0.0, clip_norm=1.0, variable_names={"a": a, "b": b})
    opt.apply([np.array([3.0], np.float32), np.array([4.0], np.float32)], [a, b])
    slots = opt.slot_variables()
    np.testing.assert_allclose(slots["a/adam_m"].numpy(), [0.06], rtol=1e-6)
    np.testing.assert_allclose(slots["b/adam_m"].numpy(), [0.08], rtol=1e-6)
    # Norm 0.5 < 1: unchanged.
    opt2 = AdamWeightDecay(0.0, clip_norm=1.0, variable_names={"a": a, "b": b})
    opt2.apply([np.array([0.3], np.float32), np.array([0.4], np.float32)], [a, b])
    np.testing.assert_allclose(opt2.slot_variables()["a/adam_m"].numpy(), [0.03], rtol=1e-6)


def test_original_optimization_test_adam():
    """Spec 12.3: w -> x within 1e-2 after 100 updates with lr 0.2 (decay 0, no clipping)."""
    w = tf.Variable([0.1, -0.2, -0.1], dtype=tf.float32, name="w")
    x = tf.constant([0.4, 0.2, -0.5])
    opt = AdamWeightDecay(learning_rate=0.2)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w))
        opt.apply(tape.gradient(loss, [w]), [w])

    for _ in range(100):
        step()
    np.testing.assert_allclose(w.numpy(), [0.4, 0.2, -0.5], rtol=1e-2, atol=1e-2)
    assert sorted(opt.slot_variables()) == ["w/adam_m", "w/adam_v"]  # tf name fallback


def test_names_from_callable_and_keras_path_fallback():
    layer = keras.layers.Dense(2, name="dense")
    layer.build((None, 3))
    opt = AdamWeightDecay(0.1, weight_decay_rate=0.01, exclude_from_weight_decay=["bias"],
                          variable_names=lambda v: "k" if v is layer.kernel else None)
    opt.build(layer.trainable_variables)
    assert sorted(opt.slot_variables()) == sorted(["k/adam_m", "k/adam_v", "dense/bias/adam_m",
                                                   "dense/bias/adam_v"])
    assert opt.variable_decay_table() == {"k": True, "dense/bias": False}
    with pytest.raises(ValueError, match="before"):
        opt.set_variable_names({})


def test_sparse_gradient_is_applied_densely():
    table_a = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    table_b = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3))
    opt_a = AdamWeightDecay(0.1, weight_decay_rate=0.01, variable_names={"emb": table_a})
    opt_b = AdamWeightDecay(0.1, weight_decay_rate=0.01, variable_names={"emb": table_b})
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(table_a, [1, 3]) * 0.5)
        sparse = tape.gradient(loss, table_a)
        assert isinstance(sparse, tf.IndexedSlices)
        opt_a.apply([sparse], [table_a])
        opt_b.apply([tf.convert_to_tensor(sparse)], [table_b])
    np.testing.assert_allclose(table_a.numpy(), table_b.numpy(), rtol=1e-7)
    # Row 0 has zero gradient but is still decayed: 0 - 0.1 * 0.01 * 0 twice -> 0; row 2 decays.
    expected_row2 = np.arange(6, 9, dtype=np.float64)
    for _ in range(2):
        expected_row2 = expected_row2 - 0.1 * 0.01 * expected_row2
    np.testing.assert_allclose(table_a.numpy()[2], expected_row2, rtol=1e-6)


def test_gradient_multiplier_after_clipping():
    a = keras.Variable(np.zeros([1], np.float32))
    b = keras.Variable(np.zeros([1], np.float32))
    opt = AdamWeightDecay(0.0, clip_norm=1.0, variable_names={"layer_0/w": a, "emb": b},
                          gradient_multiplier=lambda n: 0.5 if n.startswith("layer_0") else None)
    opt.apply([np.array([3.0], np.float32), np.array([4.0], np.float32)], [a, b])
    slots = opt.slot_variables()
    np.testing.assert_allclose(slots["layer_0/w/adam_m"].numpy(), [0.1 * 0.6 * 0.5], rtol=1e-6)
    np.testing.assert_allclose(slots["emb/adam_m"].numpy(), [0.08], rtol=1e-6)


def test_loss_scaling_wrapper_matches_unscaled_and_skips_non_finite():
    w1 = keras.Variable(np.array([1.0, -1.0], np.float32))
    w2 = keras.Variable(np.array([1.0, -1.0], np.float32))
    scaled_opt, _ = create_optimizer(0.1, 10, 0, variable_names={"w": w1}, loss_scale=True)
    plain_opt, _ = create_optimizer(0.1, 10, 0, variable_names={"w": w2})
    assert isinstance(scaled_opt, keras.optimizers.LossScaleOptimizer)
    assert isinstance(inner_optimizer(scaled_opt), AdamWeightDecay)
    assert inner_optimizer(plain_opt) is plain_opt
    for _ in range(2):
        with tf.GradientTape() as tape:
            loss = scaled_opt.scale_loss(tf.reduce_sum(tf.square(w1)))
        scaled_opt.apply(tape.gradient(loss, [w1]), [w1])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(w2))
        plain_opt.apply(tape.gradient(loss, [w2]), [w2])
    np.testing.assert_allclose(w1.numpy(), w2.numpy(), rtol=1e-6)
    inner = inner_optimizer(scaled_opt)
    np.testing.assert_allclose(inner.slot_variables()["w/adam_m"].numpy(),
                               plain_opt.slot_variables()["w/adam_m"].numpy(), rtol=1e-6)
    before = w1.numpy().copy()
    scaled_opt.apply([tf.constant([np.inf, 1.0])], [w1])
    np.testing.assert_array_equal(w1.numpy(), before)
    assert int(inner.iterations.numpy()) == 2


def test_get_config_round_trips():
    opt = AdamWeightDecay(0.25, weight_decay_rate=0.01, epsilon=1e-8,
                          exclude_from_weight_decay=["bias"], include_in_weight_decay=["r_w"],
                          clip_norm=1.0)
    config = opt.get_config()
    again = AdamWeightDecay.from_config(config)
    assert again.get_config() == config
    assert config["epsilon"] == 1e-8 and config["clip_norm"] == 1.0
    opt2, _ = create_optimizer(1e-4, 100, 10)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(opt2))
    assert isinstance(restored, AdamWeightDecay)
    np.testing.assert_allclose(float(restored.learning_rate), 0.0)  # step 0: warmup lr 0


def test_rejects_keras_weight_decay_and_accumulation():
    with pytest.raises(ValueError, match="weight_decay_rate"):
        AdamWeightDecay(0.1, weight_decay=0.01)
    with pytest.raises(ValueError, match="gradient_accumulation_steps"):
        AdamWeightDecay(0.1, gradient_accumulation_steps=2)


MIRRORED_SCRIPT = textwrap.dedent("""
    import json, numpy as np, tensorflow as tf, keras
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from bert_tf.training.optimizer import create_optimizer
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        k = keras.Variable(np.array([1.0, 2.0], np.float32), name="k")
        b = keras.Variable(np.array([0.5], np.float32), name="b")
        opt, _ = create_optimizer(0.1, 10, 0, variable_names={"dense/kernel": k, "dense/bias": b})
        opt.build([k, b])  # slots are created outside the tf.function
    # Replica r gets gradients (r + 1) * [3, 0], [4]: sum over replicas = [9, 0], [12] -> norm 15.
    @tf.function
    def step():
        def fn():
            r = tf.cast(tf.distribute.get_replica_context().replica_id_in_sync_group, tf.float32)
            opt.apply([(r + 1.0) * tf.constant([3.0, 0.0]), (r + 1.0) * tf.constant([4.0])], [k, b])
        strategy.run(fn)
    step()
    slots = opt.slot_variables()
    print("RESULT " + json.dumps([k.numpy().tolist(), b.numpy().tolist(),
          slots["dense/kernel/adam_m"].numpy().tolist(), slots["dense/bias/adam_m"].numpy().tolist(),
          int(opt.iterations.numpy())]))
""")


def test_mirrored_strategy_sums_replicas_then_clips():
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT], capture_output=True, text=True,
                          env=env, timeout=120, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT")][0]
    k, b, m_k, m_b, iterations = json.loads(line[len("RESULT "):])
    # Summed grads [9, 0], [12], global norm 15 -> clipped [0.6, 0], [0.8]; lr at step 0 = 0.1
    # (no warmup). m = 0.1 * g, v = 0.001 * g^2.
    np.testing.assert_allclose(m_k, [0.06, 0.0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(m_b, [0.08], rtol=1e-6)
    u_k0 = 0.06 / (np.sqrt(0.001 * 0.36) + 1e-6)
    # kernel decayed (0.01 * param), bias not; the zero-gradient entry moves by decay only.
    np.testing.assert_allclose(k, [1.0 - 0.1 * (u_k0 + 0.01 * 1.0), 2.0 - 0.1 * 0.01 * 2.0],
                               rtol=1e-6)
    u_b = 0.08 / (np.sqrt(0.001 * 0.64) + 1e-6)
    np.testing.assert_allclose(b, [0.5 - 0.1 * u_b], rtol=1e-6)
    assert iterations == 1


def test_clipping_norm_counts_repeated_sparse_rows_unsummed_as_the_original():
    """The original clips ``tf.gradients`` as they come (``tf.clip_by_global_norm`` in
    ``optimization.py``): an ``IndexedSlices`` gradient's norm is over its rows, a repeated id
    counted once per row. Hand case: id 0 twice, each row [3, 3]:
    unsummed norm sqrt(4 * 9) = 6 (the original); summed row [6, 6]: sqrt(72) = 8.485.
    Clipped to 1: each row [0.5, 0.5], summed into row 0 -> [1, 1]; m = (1 - 0.9) * 1 = 0.1."""
    table = keras.Variable(np.zeros([2, 2], np.float32))
    opt = AdamWeightDecay(0.0, clip_norm=1.0, variable_names={"emb": table})
    grad = tf.IndexedSlices(values=tf.constant([[3.0, 3.0], [3.0, 3.0]]),
                            indices=tf.constant([0, 0]), dense_shape=tf.constant([2, 2]))
    opt.apply([grad], [table])
    assert opt.global_norm == pytest.approx(6.0, rel=1e-6)
    np.testing.assert_allclose(opt.slot_variables()["emb/adam_m"].numpy(),
                               [[0.1, 0.1], [0.0, 0.0]], rtol=1e-6)


def test_token_type_gradient_is_dense_as_the_original_one_hot_matmul():
    """The original looks token types up with a one-hot matmul (dense gradient, norm over the
    summed table); only the word embeddings' gather gives IndexedSlices."""
    from bert_tf.bert.layers import BertEmbeddings
    layer = BertEmbeddings(vocab_size=5, hidden_size=2, type_vocab_size=2,
                           max_position_embeddings=4, hidden_dropout_prob=0.0)
    ids = tf.constant([[1, 1, 2]])
    layer(ids, tf.constant([[0, 0, 1]]))
    with tf.GradientTape() as tape:
        out = layer(ids, tf.constant([[0, 0, 1]]))
        loss = tf.reduce_sum(out * tf.constant([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]]))
    word, token_type = tape.gradient(loss, [layer.word_embeddings, layer.token_type_embeddings])
    assert isinstance(word, tf.IndexedSlices)
    assert not isinstance(token_type, tf.IndexedSlices)
