"""One-op LayerNorm for reduced-precision inference on CPU (bert_tf, beyond the original).

Keras' ``LayerNormalization`` under the ``mixed_bfloat16`` policy runs about ten ops per call
(cast to float32, two means, a squared difference, the scale and shift, a cast back), each a
full pass over the ``[B*S, H]`` activations; the grappler's LayerNorm fusion (remapper) fused
none of the forms tried (Keras', its own "custom layer-norm" pattern, a FusedBatchNorm
form). TensorFlow's oneDNN build registers ``_MklLayerNorm`` (the op the grappler itself emits
when it does fuse a LayerNorm): one pass, statistics in float32 also for a bfloat16
input, one rounding of the output. This module builds that op directly, when this TensorFlow
has it and can run it on this machine, and gives it a gradient.

:func:`normalize` is what the encoders call: the float32 model never comes here (its numbers
are pinned to the original's), nor does training.
"""

import contextlib
import functools
import os
import threading

import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2

OP_NAME = "_MklLayerNorm"

_LOCK = threading.Lock()
_AVAILABLE = []
_PORTABLE = threading.local()


def _build(x, gamma, beta, epsilon):
    graph = tf.compat.v1.get_default_graph()
    op = graph.create_op(
        OP_NAME, [x, gamma, beta], [x.dtype], name="FusedLayerNorm",
        attrs={"T": attr_value_pb2.AttrValue(type=x.dtype.as_datatype_enum),
               "epsilon": attr_value_pb2.AttrValue(f=epsilon)})
    y = op.outputs[0]
    y.set_shape(x.shape)
    return y


@functools.cache
def _eager_build():
    """One ``tf.function`` of :func:`_build` for eager calls (one per call retraced every time:
    TensorFlow warned of retracing in XLNet's bf16 runs)."""
    return tf.function(_build, autograph=False, reduce_retracing=True)


def fused_layer_norm(x, gamma, beta, epsilon):
    """LayerNorm over the last axis in one ``_MklLayerNorm`` op (call only if :func:`available`).

    Same math as TF1's `contrib.layers.layer_norm` (population variance, ``epsilon`` inside
    the square root): ``(x - mean) * rsqrt(var + epsilon) * gamma + beta``, statistics in
    float32 whatever the dtype of ``x``.

    Args:
      x: float32 or bfloat16 ``[M, H]`` or ``[B, S, H]`` (the op takes rank 2 or 3).
      gamma, beta: ``[H]``, cast to ``x.dtype`` here.
      epsilon: python float.

    Returns:
      ``x.dtype``, ``x``'s shape.
    """
    gamma = tf.cast(tf.convert_to_tensor(gamma), x.dtype)
    beta = tf.cast(tf.convert_to_tensor(beta), x.dtype)
    if tf.executing_eagerly():
        return _eager_build()(x, gamma, beta, epsilon)
    return _build(x, gamma, beta, epsilon)


def available():
    """Whether this process uses ``_MklLayerNorm``: the op is registered (oneDNN build),
    ``TF_ENABLE_ONEDNN_OPTS`` is not ``0`` (the user turned oneDNN's ops off), no GPU is
    visible (it has a CPU kernel only) and it computes a small float32 and bfloat16 input
    right. Probed once per process, eagerly (also when first asked while tracing)."""
    with _LOCK:
        if not _AVAILABLE:
            _AVAILABLE.append(_probe())
        return _AVAILABLE[0]


def _probe():
    from tensorflow.python.framework import op_def_registry

    if op_def_registry.get(OP_NAME) is None:
        return False
    if os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").strip().lower() in ("0", "false"):
        return False
    with tf.init_scope():
        if tf.config.list_physical_devices("GPU"):
            return False
        try:
            for dtype in (tf.float32, tf.bfloat16):
                x = tf.constant([[1.0, 2.0, 3.0, 6.0]], dtype)
                y = fused_layer_norm(x, tf.ones([4]), tf.zeros([4]), 1e-12)
                # (x - 3) / sqrt(3.5): -1.069, -0.535, 0, 1.604 (by hand)
                if abs(float(tf.cast(y, tf.float32)[0, 3]) - 1.6036) > 0.02:
                    return False
        except (tf.errors.OpError, ValueError, TypeError):
            return False
    return True


@contextlib.contextmanager
def portable_graphs():
    """Graphs traced inside (in this thread) get Keras' LayerNorm, standard ops only: a
    SavedModel must load where oneDNN's private ops do not exist (TF Serving, a GPU, another
    build). :func:`bert_tf.run.serving.write_saved_model` traces its endpoints in here."""
    depth = getattr(_PORTABLE, "depth", 0)
    _PORTABLE.depth = depth + 1
    try:
        yield
    finally:
        _PORTABLE.depth = depth


def in_xla_compilation():
    """Whether the graph being traced (or one it is nested in) is compiled by XLA
    (``tf.function(jit_compile=True)``)."""
    if tf.executing_eagerly():
        return False
    from tensorflow.python.ops import control_flow_util

    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def normalize(layer, x, training=False, out_dtype=None):
    """Applies the Keras ``LayerNormalization`` ``layer`` (last axis) to ``x``.

    A ``mixed_bfloat16`` layer in an inference call runs it as one fused op when this
    TensorFlow and machine can (:func:`fused_layer_norm`; bert_tf, beyond the original): a
    cast of ``x`` to float32 (none for a float32 ``x``), the op, a cast of the output to
    ``out_dtype``; three ops instead of Keras' ten, the same math (float32 statistics, float32
    gamma and beta). Float32 layers run ``layer(x)``, Keras' ops (the original's arithmetic,
    pinned by the goldens), and so do float16 layers. A ``mixed_bfloat16`` layer that cannot
    take the fused op (training calls, ``x`` of rank other than 2 or 3, traces for XLA
    (``jit_compile``: the op has no XLA kernel) and for a SavedModel (:func:`portable_graphs`))
    runs Keras' ops, or with ``out_dtype="float32"`` the same float32 math in standard ops
    (:func:`layer_norm_float32`), as Keras would round its output to bfloat16.

    Used by BERT's and ALBERT's blocks and embeddings (`bert_tf.bert.layers`, which keep the
    residual stream in float32 under ``mixed_bfloat16``) and XLNet's blocks
    (`bert_tf.xlnet.layers`).

    Args:
      layer: a built ``keras.layers.LayerNormalization`` over the last axis.
      x: float ``[M, H]`` or ``[B, S, H]``.
      training: bool.
      out_dtype: the output dtype; default ``layer.compute_dtype``.

    Returns:
      ``out_dtype``, ``x``'s shape.
    """
    out_dtype = tf.as_dtype(out_dtype or layer.compute_dtype)
    if layer.compute_dtype != "bfloat16" or x.dtype not in (tf.bfloat16, tf.float32):
        return tf.cast(layer(x), out_dtype)
    if (training or x.shape.rank not in (2, 3) or getattr(_PORTABLE, "depth", 0)
            or in_xla_compilation() or not available()):
        if out_dtype == tf.float32:
            return layer_norm_float32(layer, x)
        return layer(x)
    # in float32 as Keras' mixed policy does (gamma and beta unrounded): the op on the bf16
    # sum would round them to 8 bits; on the real MiniLM its mean error vs float32 was 19%
    # larger, for 0-4% of the forward (bench/results/bf16_layer_norm_variants_*.json)
    y = fused_layer_norm(tf.cast(x, tf.float32), layer.gamma, layer.beta, layer.epsilon)
    return tf.cast(y, out_dtype)


def layer_norm_float32(layer, x):
    """The LayerNorm of ``layer`` (last axis) on ``x`` in float32 standard ops, float32 out:
    population variance, ``epsilon`` inside the square root, float32 gamma and beta (the math
    of TF1's `contrib.layers.layer_norm` and of Keras' mixed-precision LayerNorm, without its
    final cast to the compute dtype).

    Args:
      layer: a built ``keras.layers.LayerNormalization`` over the last axis.
      x: float ``[..., H]``.

    Returns:
      float32, ``x``'s shape.
    """
    x = tf.cast(x, tf.float32)
    mean, variance = tf.nn.moments(x, axes=[-1], keepdims=True)
    inv = tf.math.rsqrt(variance + layer.epsilon) * tf.convert_to_tensor(layer.gamma)
    return x * inv + (tf.convert_to_tensor(layer.beta) - mean * inv)


def _layer_norm_grad(op, dy):
    """Gradient of ``_MklLayerNorm`` (TensorFlow registers none): the LayerNorm backward in
    float32, ``dx = inv * (g*dy - mean(g*dy) - xhat * mean(g*dy * xhat))``."""
    x, gamma, _ = op.inputs
    epsilon = op.get_attr("epsilon")
    xf = tf.cast(x, tf.float32)
    dyf = tf.cast(dy, tf.float32)
    mean = tf.reduce_mean(xf, axis=-1, keepdims=True)
    centered = xf - mean
    inv = tf.math.rsqrt(tf.reduce_mean(tf.square(centered), axis=-1, keepdims=True) + epsilon)
    xhat = centered * inv
    g = dyf * tf.cast(gamma, tf.float32)
    dx = inv * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
                - xhat * tf.reduce_mean(g * xhat, axis=-1, keepdims=True))
    width = tf.shape(dyf)[-1]
    dgamma = tf.reduce_sum(tf.reshape(dyf * xhat, [-1, width]), axis=0)
    dbeta = tf.reduce_sum(tf.reshape(dyf, [-1, width]), axis=0)
    return (tf.cast(dx, x.dtype), tf.cast(dgamma, gamma.dtype),
            tf.cast(dbeta, op.inputs[2].dtype))


try:
    tf.RegisterGradient(OP_NAME)(_layer_norm_grad)
except KeyError:  # a TensorFlow that registers its own
    pass
