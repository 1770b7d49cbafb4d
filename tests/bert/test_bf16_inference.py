"""bfloat16 inference: the fused LayerNorm (bert_tf.bert.fused_layer_norm), the float32
embedding lookup, and the bf16 model against the original's float32 goldens."""
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf import fused_layer_norm
from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.training.precision import dtype_policy

from tests.bert.conftest import TINY_CONFIG, TINY_FEATURES

needs_fused = pytest.mark.skipif(not fused_layer_norm.available(),
                                 reason="no oneDNN _MklLayerNorm kernel in this TensorFlow")


def numpy_layer_norm(x, gamma, beta, epsilon=1e-12):
    """TF1 contrib layer_norm in float64: population variance, epsilon inside the sqrt."""
    x = np.asarray(x, np.float64)
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * gamma + beta


def op_types(fn, *args):
    return {op.type for op in fn.get_concrete_function(*args).graph.get_operations()}


@needs_fused
def test_fused_layer_norm_by_hand_and_against_float64():
    # [1, 2, 3, 6]: mean 3, variance (4 + 1 + 0 + 9) / 4 = 3.5 -> (x - 3) / sqrt(3.5)
    y = fused_layer_norm.fused_layer_norm(tf.constant([[1.0, 2.0, 3.0, 6.0]]), tf.ones([4]),
                                          tf.zeros([4]), 1e-12)
    np.testing.assert_allclose(y.numpy(), [[-1.0690450, -0.5345225, 0.0, 1.6035675]], atol=1e-6)
    rng = np.random.RandomState(0)
    x = rng.randn(3, 5, 16).astype(np.float32) * 4 + 2
    gamma = (rng.rand(16) + 0.5).astype(np.float32)
    beta = rng.randn(16).astype(np.float32)
    want = numpy_layer_norm(x, gamma, beta)
    got = fused_layer_norm.fused_layer_norm(tf.constant(x), gamma, beta, 1e-12).numpy()
    np.testing.assert_allclose(got, want, atol=2e-6)
    # bfloat16 input and output: the statistics in float32, the output rounded once (half an
    # ulp, 2^-8 relative), gamma and beta rounded to bfloat16 (as much again): within 2^-7
    # relative + 2^-7 of the float64 LayerNorm of the bf16 input
    xb = tf.cast(x, tf.bfloat16)
    want_b = numpy_layer_norm(tf.cast(xb, tf.float32).numpy(), gamma, beta)
    got_b = tf.cast(fused_layer_norm.fused_layer_norm(xb, gamma, beta, 1e-12), tf.float32).numpy()
    assert np.all(np.abs(got_b - want_b) <= 2.0 ** -7 * np.abs(want_b) + 2.0 ** -7)


@needs_fused
def test_eager_calls_share_one_traced_function():
    # eager calls of several shapes (XLNet's bf16 runs made them): one tf.function, traced at
    # most twice (reduce_retracing: the second trace takes any shape), not once per call
    # (TensorFlow's "triggered tf.function retracing" warning)
    before = fused_layer_norm._eager_build().experimental_get_tracing_count()
    for rows in (1, 2, 3, 5, 8, 13):
        y = fused_layer_norm.fused_layer_norm(tf.ones([rows, 4]) * tf.range(4.0), tf.ones([4]),
                                              tf.zeros([4]), 1e-12)
        # [0, 1, 2, 3]: mean 1.5, variance 1.25 -> (x - 1.5) / sqrt(1.25)
        np.testing.assert_allclose(y.numpy()[-1], [-1.3416408, -0.4472136, 0.4472136, 1.3416408],
                                   atol=1e-6)
    assert fused_layer_norm._eager_build().experimental_get_tracing_count() - before <= 2


@needs_fused
def test_fused_layer_norm_gradient_equals_keras_layer_norm_gradient():
    rng = np.random.RandomState(1)
    x = tf.constant(rng.randn(6, 16).astype(np.float32) * 3)
    dy = tf.constant(rng.randn(6, 16).astype(np.float32))
    ln = keras.layers.LayerNormalization(epsilon=1e-12)
    ln.build((None, 16))
    ln.gamma.assign(rng.rand(16).astype(np.float32) + 0.5)
    ln.beta.assign(rng.randn(16).astype(np.float32))
    gamma, beta = tf.Variable(ln.gamma.numpy()), tf.Variable(ln.beta.numpy())

    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fused_layer_norm.fused_layer_norm(x, gamma, beta, 1e-12)
    got = tape.gradient(y, [x, gamma, beta], output_gradients=dy)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y_keras = ln(x)
    want = tape.gradient(y_keras, [x, ln.gamma, ln.beta], output_gradients=dy)
    np.testing.assert_allclose(y.numpy(), y_keras.numpy(), atol=2e-6)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=2e-5)


def _tiny_model(dtype):
    with dtype_policy(dtype):
        model = BertModel(BertConfig(**TINY_CONFIG)).build_with_dummy_input()
    return model


def test_bfloat16_inference_uses_the_fused_layer_norm_and_training_does_not():
    model = _tiny_model("bfloat16")
    f32 = _tiny_model("float32")
    for a, b in zip(f32.weights, model.weights):
        a.assign(b)
    feats = {k: tf.constant(TINY_FEATURES[k]) for k in ("input_ids", "input_mask", "segment_ids")}
    infer = tf.function(lambda f: model(f, training=False)["sequence_output"])
    train = tf.function(lambda f: model(f, training=True)["sequence_output"])
    if fused_layer_norm.available():
        assert fused_layer_norm.OP_NAME in op_types(infer, feats)
    assert fused_layer_norm.OP_NAME not in op_types(train, feats)
    # the float32 model never takes it (its numbers are the original's)
    assert fused_layer_norm.OP_NAME not in op_types(
        tf.function(lambda f: f32(f, training=False)["sequence_output"]), feats)
    # the embedding tables are read in float32: no Cast of a [V, H] table
    for op in infer.get_concrete_function(feats).graph.get_operations():
        if op.type == "Cast":
            assert op.outputs[0].shape.as_list() != [TINY_CONFIG["vocab_size"],
                                                     TINY_CONFIG["hidden_size"]]
    # a bf16 inference call stays within bf16 reach of the float32 model, same weights
    real = TINY_FEATURES["input_mask"].astype(bool)
    want = f32(feats)["sequence_output"].numpy()[real]
    got = tf.cast(infer(feats), tf.float32).numpy()[real]
    assert got.dtype == np.float32 and np.abs(got - want).max() < 0.05


def test_embeddings_sum_and_normalize_in_float32_under_mixed_bfloat16():
    """Under mixed_bfloat16 the embedding output is the float32 LayerNorm of the float32 sum,
    kept in float32 (the residual stream's dtype; float32 rounding only: 1e-5 of the float64
    LayerNorm), in inference calls (the fused op) and training calls (standard ops), dropout 0."""
    model = _tiny_model("bfloat16")
    emb = model.embeddings
    rng = np.random.RandomState(2)
    emb.layer_norm.gamma.assign(rng.rand(8).astype(np.float32) + 0.5)
    emb.layer_norm.beta.assign(rng.randn(8).astype(np.float32))
    ids, segs = TINY_FEATURES["input_ids"], np.array([[0, 0, 1, 1]], np.int32)
    total = (emb.word_embeddings.numpy()[ids] + emb.token_type_embeddings.numpy()[segs]
             + emb.position_embeddings.numpy()[:4][None])
    want = numpy_layer_norm(total, emb.layer_norm.gamma.numpy(), emb.layer_norm.beta.numpy())
    emb.dropout.rate = 0.0
    for training in (False, True):
        got = emb(tf.constant(ids), tf.constant(segs), training=training)
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)


def test_weights_assigned_or_restored_after_the_first_call_are_used(tiny_random_dir):
    """Nothing is kept between calls: after an assignment, and after a checkpoint restore,
    the function traced before computes exactly what a model built with those weights does."""
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    with dtype_policy("bfloat16"):
        model = BertModel(config).build_with_dummy_input()
        other = BertModel(config).build_with_dummy_input()
        restored = BertModel(config).build_with_dummy_input()
    ids = np.array([[5, 9, 14, 3, 0, 0]], np.int32)
    mask = np.array([[1, 1, 1, 1, 0, 0]], np.int32)
    segs = np.array([[0, 0, 1, 1, 0, 0]], np.int32)

    def traced(m):
        return tf.function(lambda i, k, s: m({"input_ids": i, "input_mask": k,
                                              "segment_ids": s})["sequence_output"])

    infer = traced(model)
    first = infer(ids, mask, segs).numpy()
    for a, b in zip(model.weights, other.weights):
        a.assign(b)
    np.testing.assert_array_equal(infer(ids, mask, segs).numpy(),
                                  traced(other)(ids, mask, segs).numpy())
    ckpt = os.path.join(tiny_random_dir, "bert_model.ckpt")
    load_bert_checkpoint(bert_model_map(model), ckpt)
    load_bert_checkpoint(bert_model_map(restored), ckpt)
    after = infer(ids, mask, segs).numpy()
    np.testing.assert_array_equal(after, traced(restored)(ids, mask, segs).numpy())
    assert not np.array_equal(after, first)


def test_minilm_bfloat16_within_bound_of_the_original_float32(golden_dir,
                                                              minilm_checkpoint_dir):
    """The real all-MiniLM-L6-v2 under mixed_bfloat16, inference, on the golden inputs: the
    sequence output within 0.15 (max) and 0.0045 (mean) of the original's float32 output
    (mean |value| 0.215). Measured on EPYC family 26 (max / mean): oneDNN on, before the
    fused LayerNorm and float32 embeddings 0.044 / 0.00266, after 0.042 / 0.00260;
    TF_ENABLE_ONEDNN_OPTS=0 (eager) 0.095 / 0.00398 before, 0.118 / 0.00391 after."""
    with np.load(os.path.join(golden_dir, "bert", "minilm", "outputs.npz")) as d:
        g = dict(d)
    config = BertConfig.from_json_file(os.path.join(minilm_checkpoint_dir, "bert_config.json"))
    with dtype_policy("bfloat16"):
        model = BertModel(config).build_with_dummy_input()
    load_bert_checkpoint(bert_model_map(model),
                         os.path.join(minilm_checkpoint_dir, "bert_model.ckpt"), require_all=True)
    out = tf.function(lambda i, m, s: model({"input_ids": i, "input_mask": m,
                                             "segment_ids": s})["sequence_output"])(
        g["input_ids"], g["input_mask"], g["segment_ids"])
    real = g["input_mask"].astype(bool)
    diff = np.abs(tf.cast(out, tf.float32).numpy() - g["sequence_output"])[real]
    assert diff.max() < 0.15 and diff.mean() < 0.0045


def test_without_the_fused_op_bfloat16_inference_runs_keras_layer_norm(monkeypatch):
    """Where the op is not available (no oneDNN, a GPU, TF_ENABLE_ONEDNN_OPTS=0) the blocks
    run Keras' LayerNorm; both paths compute LayerNorm in float32, so they agree to bf16
    rounding of the blocks' outputs."""
    model = _tiny_model("bfloat16")
    feats = {k: tf.constant(TINY_FEATURES[k]) for k in ("input_ids", "input_mask", "segment_ids")}
    fused = tf.function(lambda f: model(f, training=False)["sequence_output"])
    got_fused = tf.cast(fused(feats), tf.float32).numpy()
    monkeypatch.setattr(fused_layer_norm, "available", lambda: False)
    plain = tf.function(lambda f: model(f, training=False)["sequence_output"])
    assert fused_layer_norm.OP_NAME not in op_types(plain, feats)
    got_plain = tf.cast(plain(feats), tf.float32).numpy()
    assert np.all(np.abs(got_fused - got_plain) <= 2.0 ** -6 * np.abs(got_plain) + 2.0 ** -6)


def test_onednn_opts_off_means_no_fused_op(monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    monkeypatch.setattr(fused_layer_norm, "_AVAILABLE", [])
    assert not fused_layer_norm.available()


def test_xla_compiled_bfloat16_inference_runs_keras_layer_norm():
    """``_MklLayerNorm`` has no XLA kernel: a ``jit_compile`` trace keeps Keras' LayerNorm
    (it compiles) and agrees with the plain trace to bf16 rounding."""
    model = _tiny_model("bfloat16")
    feats = {k: tf.constant(TINY_FEATURES[k]) for k in ("input_ids", "input_mask", "segment_ids")}
    xla = tf.function(lambda f: model(f, training=False)["sequence_output"], jit_compile=True)
    plain = tf.function(lambda f: model(f, training=False)["sequence_output"])
    got = tf.cast(xla(feats), tf.float32).numpy()
    want = tf.cast(plain(feats), tf.float32).numpy()
    assert np.all(np.abs(got - want) <= 2.0 ** -6 * np.abs(want) + 2.0 ** -6)


def test_a_bfloat16_saved_model_holds_standard_ops_only(tmp_path):
    """write_saved_model traces in portable_graphs(): the SavedModel of a bf16 model has no
    _MklLayerNorm (it must load where oneDNN's private ops do not exist) and serves the
    bf16 model's outputs (to bf16 rounding)."""
    from bert_tf.run.serving import write_saved_model

    model = _tiny_model("bfloat16")
    names = ("input_ids", "input_mask", "segment_ids")
    feats = {k: tf.constant(TINY_FEATURES[k]) for k in names}
    fn = lambda *t: {"sequence_output": tf.cast(  # noqa: E731
        model(dict(zip(names, t)), training=False)["sequence_output"], tf.float32)}
    spec = [tf.TensorSpec([None, None], tf.int32, name=k) for k in names]
    folder = write_saved_model(str(tmp_path), [model], [("serving_ids", fn, spec)])
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(folder, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    ops = {n.op for g in proto.meta_graphs for fdef in g.graph_def.library.function
           for n in fdef.node_def}
    assert "MatMul" in ops or "BatchMatMulV2" in ops
    assert fused_layer_norm.OP_NAME not in ops
    loaded = tf.saved_model.load(folder)
    got = loaded.signatures["serving_ids"](**feats)["sequence_output"].numpy()
    want = tf.cast(tf.function(lambda f: model(f, training=False)["sequence_output"])(feats),
                   tf.float32).numpy()
    assert np.all(np.abs(got - want) <= 2.0 ** -6 * np.abs(want) + 2.0 ** -6)


def test_bfloat16_classifier_and_squad_heads_run_in_float32(tiny_random_dir):
    # --dtype=bfloat16: the encoder in bf16, the task heads in float32, so the logits are the
    # float32 product of the (bf16) encoder output, not rounded to bf16's 8 significant bits
    from bert_tf.bert.classifier import BertClassifier
    from bert_tf.bert.squad import BertSquad

    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    ids = tf.constant(np.random.RandomState(0).randint(1, config.vocab_size, (3, 9)), tf.int32)
    features = {"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": tf.zeros_like(ids)}
    with dtype_policy("bfloat16"):
        classifier = BertClassifier(config, 3)
        squad = BertSquad(config)
    for model in (classifier, squad):
        assert model.bert.compute_dtype == "bfloat16" and model.head.compute_dtype == "float32"
    encoder = classifier.bert(features)
    w = classifier.head.output_weights.numpy().astype(np.float64)
    b = classifier.head.output_bias.numpy().astype(np.float64)
    pooled = tf.cast(encoder["pooled_output"], tf.float64).numpy()
    got = classifier(features)["logits"].numpy()
    np.testing.assert_allclose(got, pooled @ w.T + b, rtol=1e-5, atol=1e-6)
    sequence = tf.cast(squad.bert(features)["sequence_output"], tf.float64).numpy()
    logits = sequence @ squad.head.output_weights.numpy().astype(np.float64).T \
        + squad.head.output_bias.numpy()
    out = squad(features)
    np.testing.assert_allclose(out["start_logits"].numpy(), logits[..., 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out["end_logits"].numpy(), logits[..., 1], rtol=1e-5, atol=1e-6)


def test_a_predict_only_bfloat16_model_holds_its_matmul_kernels_in_bfloat16(tiny_random_dir):
    """``dtype_policy("bfloat16", inference_only=True)`` (issue 25): the dense kernels and
    biases are bfloat16 variables filled once from the float32 checkpoint (each the
    round-to-nearest-even bfloat16 of the stored value), the embedding tables and LayerNorm
    weights stay float32, the traced call casts no kernel, and the outputs equal, bit for bit,
    those of the mixed_bfloat16 model that casts its float32 kernels on every call."""
    config = BertConfig.from_json_file(os.path.join(tiny_random_dir, "bert_config.json"))
    ckpt = os.path.join(tiny_random_dir, "bert_model.ckpt")
    with dtype_policy("bfloat16"):
        mixed = BertModel(config).build_with_dummy_input()
    with dtype_policy("bfloat16", inference_only=True):
        held = BertModel(config).build_with_dummy_input()
    with dtype_policy("float32", inference_only=True):
        f32 = BertModel(config).build_with_dummy_input()
    for m in (mixed, held):
        load_bert_checkpoint(bert_model_map(m), ckpt, require_all=True)
    names = bert_model_map(held)
    stored = tf.train.load_checkpoint(ckpt)
    kernel = "bert/encoder/layer_0/intermediate/dense/kernel"
    assert names[kernel].dtype == tf.bfloat16
    np.testing.assert_array_equal(
        names[kernel].numpy(), tf.cast(stored.get_tensor(kernel), tf.bfloat16).numpy())
    for name, variable in names.items():
        matmul = name.endswith(("/kernel", "/bias")) and "LayerNorm" not in name
        assert variable.dtype == (tf.bfloat16 if matmul else tf.float32), name
    assert all(v.dtype == tf.float32 for v in f32.weights)  # no effect in float32

    ids = np.array([[5, 9, 14, 3, 0, 0], [2, 7, 3, 8, 9, 3]], np.int32)
    mask = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    segs = np.array([[0, 0, 1, 1, 0, 0], [0, 0, 0, 1, 1, 1]], np.int32)

    def traced(m):
        return tf.function(lambda i, k, s: m({"input_ids": i, "input_mask": k,
                                              "segment_ids": s})["sequence_output"])

    infer = traced(held)
    np.testing.assert_array_equal(infer(ids, mask, segs).numpy(),
                                  traced(mixed)(ids, mask, segs).numpy())
    intermediate_kernel = [config.hidden_size, config.intermediate_size]
    for op in infer.get_concrete_function(ids, mask, segs).graph.get_operations():
        if op.type == "Cast":
            assert op.outputs[0].shape.as_list() != intermediate_kernel


def test_matmul_weight_dtype_only_inside_a_predict_only_lower_precision_block():
    from bert_tf.training.precision import matmul_weight_dtype

    assert matmul_weight_dtype() is None
    with dtype_policy("bfloat16", inference_only=True):
        assert matmul_weight_dtype() == "bfloat16"
        with dtype_policy("bfloat16"):  # a model built to train inside: float32 kernels
            assert matmul_weight_dtype() is None
        assert matmul_weight_dtype() == "bfloat16"
    with dtype_policy("float32", inference_only=True):
        assert matmul_weight_dtype() is None
    assert matmul_weight_dtype() is None
