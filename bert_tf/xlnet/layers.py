"""Keras layers of XLNet: weights and math only (spec `xlnet.md` 3).

Each layer mirrors one TF1 variable scope of the original `modeling.py`, with the original
weight shapes, so checkpoints map one to one (the name table is
`bert_tf/xlnet/checkpoint_map.py`).

Layout. The Transformer-XL core keeps the original **time-major** layout between layers:
sequence tensors are ``[len, batch, ...]`` and the masks, the positional encoding and
`rel_shift` are the original's (spec 3.4-3.12; the tensor functions of
:mod:`bert_tf.xlnet.attention`). Inside :class:`RelativeAttention` the heads are
batch-major ``[B, N, len, Dh]`` so that each score is one batched matmul with the softmax on
the last axis (:func:`bert_tf.xlnet.attention.rel_attn_core_batch_major`: the same sums as
the original's einsum ``rel_attn_core``). `XLNetModel` (model.py) transposes its
batch-major inputs at the edge. The heads (:class:`SequenceSummary`, :class:`LMHead`,
:class:`LogitHead`) take batch-major tensors.

Shapes: L = qlen (current segment), M = mlen (memory), K = M + L (klen), R = relative
positions (K + L for ``bi``, K + 1 for ``uni``), B = batch, N = n_head, Dh = d_head,
D = d_model, F = d_inner, P = num_predict, V = n_token.
Masks: 1 = blocked / padding, 0 = visible (XLNet polarity, the opposite of BERT's).

Numerics (spec 3.1): LayerNorm epsilon 1e-12, GELU tanh approximation, masked scores get
``- 1e30 * mask`` (65500 in float16), no bias in the q/k/v/r/o projections, post-LN.
"""

import math
from typing import Sequence

import keras
import tensorflow as tf

from bert_tf.dropout import built_dropout
from bert_tf.fused_layer_norm import normalize
from bert_tf.training.precision import matmul_weight_dtype
from bert_tf.xlnet.attention import mask_value, rel_attn_core_batch_major

LAYER_NORM_EPSILON = 1e-12


# ------------------------------------------------------------------------------------------
# Functions
# ------------------------------------------------------------------------------------------

def gelu(x):
    """GELU, tanh approximation (original `modeling.gelu`, spec 3.1).

    ``0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))``, any shape and float dtype.
    """
    cdf = 0.5 * (1.0 + tf.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * tf.pow(x, 3))))
    return x * cdf


def ff_activation(name: str):
    """``"relu"`` -> relu, ``"gelu"`` -> :func:`gelu`.

    Raises:
      ValueError: any other name (the original `positionwise_ffn` raises too).
    """
    if name == "relu":
        return tf.nn.relu
    if name == "gelu":
        return gelu
    raise ValueError(f"Unsupported activation type {name!r}")


def get_initializer(init: str = "normal", init_range: float = 0.1, init_std: float = 0.02):
    """Kernel/embedding/bias initializer of the original ``xlnet._get_initializer``.

    ``"uniform"``: U(-init_range, init_range); ``"normal"``: N(0, init_std).

    Raises:
      ValueError: another ``init``.
    """
    if init == "uniform":
        return keras.initializers.RandomUniform(minval=-init_range, maxval=init_range)
    if init == "normal":
        return keras.initializers.RandomNormal(stddev=init_std)
    raise ValueError(f"Initializer {init} not supported")


# ------------------------------------------------------------------------------------------
# Layers
# ------------------------------------------------------------------------------------------

def _layer_norm(d_model: int, name: str = "LayerNorm"):
    ln = keras.layers.LayerNormalization(axis=-1, epsilon=LAYER_NORM_EPSILON, name=name)
    ln.build((None, None, d_model))
    return ln


def _dense(units: int, in_dim: int, initializer, name: str, activation=None, use_bias=True,
           weight_dtype=None):
    """A built Keras ``Dense`` (kernel ``[in_dim, units]``); ``weight_dtype``: its variables'
    dtype (None: the policy's, float32)."""
    layer = keras.layers.Dense(units, activation=activation, use_bias=use_bias,
                               kernel_initializer=initializer, name=name,
                               **({"dtype": weight_dtype} if weight_dtype else {}))
    layer.build((None, in_dim))
    return layer


class HeadProjections(keras.layers.Layer):
    """Bias-free ``[D, N, Dh]`` projection kernels (``q``, ``k``, ``v``, ``o``, optionally
    ``r``) and the post-attention LayerNorm, shared by relative and absolute attention.

    Weights: ``{name}_kernel`` ``[D, N, Dh]`` for each name (float32, or bfloat16 in a model
    built to predict only: :func:`bert_tf.training.precision.matmul_weight_dtype`, cast once
    at the restore); `LayerNorm` gamma/beta ``[D]``.
    """

    def __init__(self, d_model: int, n_head: int, d_head: int, dropout: float = 0.0,
                 dropatt: float = 0.0, initializer=None, names: Sequence[str] = ("q", "k", "v", "o"),
                 **kwargs):
        # autocast=False: under mixed_bfloat16 the residual streams (h, g) stay float32; the
        # projections cast their inputs to the compute dtype themselves
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self.d_model, self.n_head, self.d_head = d_model, n_head, d_head
        self.rate_dropout, self.rate_dropatt = dropout, dropatt
        self.kernel_names = tuple(names)
        initializer = initializer or get_initializer()
        for name in self.kernel_names:
            setattr(self, f"{name}_kernel", self.add_weight(
                name=f"{name}_kernel", shape=(d_model, n_head, d_head), initializer=initializer,
                dtype=matmul_weight_dtype()))
        self.layer_norm = _layer_norm(d_model)
        self.dropout = built_dropout(dropout)
        self.dropatt = built_dropout(dropatt)
        self.scale = 1.0 / math.sqrt(d_head)
        self.built = True  # every weight exists

    def head_projection(self, x, name):
        """``[len, B, D] -> [len, B, N, Dh]`` with kernel ``name`` (original `head_projection`)."""
        kernel = tf.cast(getattr(self, f"{name}_kernel"), x.dtype)  # [D, N, Dh]
        return tf.einsum("ibh,hnd->ibnd", x, kernel)  # [len, B, N, Dh]

    def post_attention(self, h, attn_vec, residual=True, training=False):
        """``LN(dropout(attn_vec . o) [+ h])`` (original `post_attention`); ``[len, B, D]``."""
        kernel = tf.cast(self.o_kernel, attn_vec.dtype)  # [D, N, Dh]
        attn_out = tf.einsum("ibnd,hnd->ibh", attn_vec, kernel)  # [len, B, D]
        attn_out = self.dropout(attn_out, training=training)
        if residual:
            attn_out = attn_out + h
        return normalize(self.layer_norm, attn_out, training)

    def batch_major_heads(self, x, names):
        """``[len, B, D]`` -> a list of ``[B, N, len, Dh]``, one per kernel of ``names``.

        Each head is the original `head_projection` (``einsum("ibh,hnd->ibnd")``) as one
        matmul ``[len * B, D] x [D, N * Dh]``, laid out batch-major. (One matmul over the
        q/k/v kernels concatenated was measured 2-6% slower on CPU: the concatenation and the
        slices cost more than the larger matmul saves; bench/results/xlnet_peers_*.json.)
        """
        d, n, dh = self.d_model, self.n_head, self.d_head
        s = tf.shape(x)
        x2 = tf.reshape(x, [-1, d])  # [len * B, D]
        heads = []
        for k in names:
            kernel = tf.reshape(tf.cast(getattr(self, f"{k}_kernel"), x.dtype), [d, n * dh])
            y = tf.reshape(tf.matmul(x2, kernel), [s[0], s[1], n, dh])  # [len, B, N, Dh]
            heads.append(tf.transpose(y, [1, 2, 0, 3]))  # [B, N, len, Dh]
        return heads

    def post_attention_batch_major(self, h, attn_vec, training=False):
        """:meth:`post_attention` (with residual) of batch-major heads ``[B, N, len, Dh]``:
        one matmul ``[len * B, N * Dh] x [N * Dh, D]``; returns ``[len, B, D]``."""
        d, n, dh = self.d_model, self.n_head, self.d_head
        kernel = tf.reshape(tf.cast(self.o_kernel, attn_vec.dtype), [d, n * dh])
        vec = tf.reshape(tf.transpose(attn_vec, [2, 0, 1, 3]), [-1, n * dh])  # [len * B, N * Dh]
        attn_out = tf.reshape(tf.matmul(vec, kernel, transpose_b=True), tf.shape(h))
        attn_out = self.dropout(attn_out, training=training)  # compute dtype
        # the sum and the LayerNorm in h's dtype (float32 under mixed_bfloat16)
        return normalize(self.layer_norm, tf.cast(attn_out, h.dtype) + h, training,
                         out_dtype=h.dtype)


class RelativeAttention(HeadProjections):
    """Relative multi-head attention, single- and two-stream (scope `layer_i/rel_attn`).

    Mirrors the original `rel_multihead_attn` and `two_stream_rel_attn` (spec 3.9, 3.10).
    Weights: `q`, `k`, `v`, `r`, `o` kernels ``[D, N, Dh]`` (no biases) and
    `LayerNorm` gamma/beta ``[D]``. The per-layer biases and `seg_embed` slice are owned by
    `XLNetModel` (global variables of `model/transformer`) and passed in.

    Call args:
      h: content stream ``[L, B, D]``.
      g: query stream ``[P or L, B, D]`` or None (single stream).
      r: positional encoding ``[R, B, D]``.
      mems: memory ``[M, B, D]`` or None.
      r_w_bias, r_r_bias, r_s_bias: ``[N, Dh]``.
      seg_mat: ``[L, K, B, 2]`` or None; seg_embed: ``[2, N, Dh]`` or None.
      attn_mask_h: content-stream mask (``non_tgt_mask``); attn_mask_g: query-stream mask
        (``attn_mask``); each ``[L or 1, K, B or 1, 1]`` or None.
      target_mapping: ``[P, L, B]`` one-hot rows or None.
      training: enables dropout.

    Returns:
      ``(output_h [L, B, D], output_g [P or L, B, D] or None)``.
    """

    def __init__(self, d_model, n_head, d_head, dropout=0.0, dropatt=0.0, initializer=None,
                 **kwargs):
        kwargs.setdefault("name", "rel_attn")
        super().__init__(d_model, n_head, d_head, dropout, dropatt, initializer,
                         names=("q", "k", "v", "r", "o"), **kwargs)

    def call(self, h, g, r, mems, r_w_bias, r_r_bias, r_s_bias, seg_mat, seg_embed,
             attn_mask_h, attn_mask_g, target_mapping=None, training=False):
        # Letters as in :func:`rel_attn_core_batch_major`; P = num_predict (two-stream targets).
        # Heads are batch-major [B, N, len, Dh] (:func:`rel_attn_core_batch_major`).
        # h, g: the residual streams (float32 under mixed_bfloat16); the heads, scores and
        # attention vectors in the compute dtype.
        dtype = self.compute_dtype
        h_c = tf.cast(h, dtype)
        cat = h_c if mems is None else tf.concat([tf.cast(mems, dtype), h_c], 0)  # [K, B, D]
        k_head_h, v_head_h = self.batch_major_heads(cat, ("k", "v"))  # [B, N, K, Dh]
        q_head_h, = self.batch_major_heads(h_c, ("q",))  # [B, N, L, Dh]
        k_head_r, = self.batch_major_heads(tf.cast(r, dtype), ("r",))  # [B or 1, N, R, Dh]
        r_w_bias = tf.cast(r_w_bias, dtype)
        r_r_bias = tf.cast(r_r_bias, dtype)
        seg_diff = None
        if seg_embed is not None:
            r_s_bias = tf.cast(r_s_bias, dtype)
            seg_embed = tf.cast(seg_embed, dtype)
            seg_diff = tf.transpose(seg_mat[..., 1] > 0, [2, 0, 1])[:, None]  # [B, 1, L, K]

        def batch_major_mask(mask):  # [L or 1, K, B or 1, 1] -> [B or 1, 1, L or 1, K]
            return None if mask is None else tf.transpose(tf.cast(mask, dtype), [2, 3, 0, 1])

        def dropatt(x):
            return self.dropatt(x, training=training)

        def core(q_head, mask):
            return rel_attn_core_batch_major(q_head, k_head_h, v_head_h, k_head_r, seg_embed,
                                             seg_diff, r_w_bias, r_r_bias, r_s_bias, mask,
                                             self.scale, dropatt)

        attn_vec_h = core(q_head_h, batch_major_mask(attn_mask_h))  # [B, N, L, Dh]
        output_h = self.post_attention_batch_major(h, attn_vec_h, training)  # [L, B, D]
        if g is None:
            return output_h, None

        q_head_g, = self.batch_major_heads(tf.cast(g, dtype), ("q",))  # [B, N, P or L, Dh]
        mask_g = batch_major_mask(attn_mask_g)
        if target_mapping is not None:
            target_mapping = tf.cast(target_mapping, dtype)  # [P, L, B]
            q_head_g = tf.einsum("bnmd,mlb->bnld", q_head_g, target_mapping)  # [B, N, L, Dh]
            attn_vec_g = core(q_head_g, mask_g)  # [B, N, L, Dh]
            attn_vec_g = tf.einsum("bnld,mlb->bnmd", attn_vec_g, target_mapping)  # [B, N, P, Dh]
        else:
            attn_vec_g = core(q_head_g, mask_g)  # [B, N, L, Dh]
        output_g = self.post_attention_batch_major(g, attn_vec_g, training)  # [P or L, B, D]
        return output_h, output_g

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, n_head=self.n_head, d_head=self.d_head,
                      dropout=self.rate_dropout, dropatt=self.rate_dropatt)
        return config


class PositionwiseFFN(keras.layers.Layer):
    """Position-wise feed-forward block (scope `layer_i/ff`, original `positionwise_ffn`).

    ``y = LN(dropout(layer_2(dropout(act(layer_1(x))))) + x)`` (spec 3.11).
    Weights: `layer_1` kernel ``[D, F]`` / bias ``[F]``, `layer_2` kernel ``[F, D]`` / bias
    ``[D]``, `LayerNorm` gamma/beta ``[D]``.

    Call args: x float ``[..., D]`` (the residual stream: float32, or the compute dtype);
    training. Returns ``[..., D]`` in ``x``'s dtype; the matmuls run in the compute dtype.

    Raises:
      ValueError: ``activation`` is not ``"relu"`` or ``"gelu"`` (at construction).
    """

    def __init__(self, d_model: int, d_inner: int, activation: str = "relu", dropout: float = 0.0,
                 initializer=None, **kwargs):
        kwargs.setdefault("name", "ff")
        kwargs.setdefault("autocast", False)  # x: the residual stream, float32 under mixed
        super().__init__(**kwargs)
        self.d_model, self.d_inner, self.activation = d_model, d_inner, activation
        self.rate_dropout = dropout
        initializer = initializer or get_initializer()
        # float32, or the compute dtype in a model that only predicts (cast once at the restore)
        weight_dtype = matmul_weight_dtype()
        self.layer_1 = _dense(d_inner, d_model, initializer, "layer_1",
                              activation=ff_activation(activation), weight_dtype=weight_dtype)
        self.layer_2 = _dense(d_model, d_inner, initializer, "layer_2", weight_dtype=weight_dtype)
        self.layer_norm = _layer_norm(d_model)
        self.drop_1 = built_dropout(dropout)
        self.drop_2 = built_dropout(dropout)
        self.built = True  # every weight exists

    def call(self, x, training=False):
        # Each dense as one matmul + bias_add on [tokens, D] (TF1's tf.layers.dense does the
        # same reshape; Keras' Dense on 3-D input goes through tensordot and an unfused add).
        d = self.d_model
        dtype = self.compute_dtype
        x2 = tf.cast(tf.reshape(x, [-1, d]), dtype)  # [tokens, D] compute dtype
        y = tf.nn.bias_add(tf.matmul(x2, tf.cast(self.layer_1.kernel, dtype)),
                           tf.cast(self.layer_1.bias, dtype))  # [tokens, F]
        y = self.drop_1(self.layer_1.activation(y), training=training)
        y = tf.nn.bias_add(tf.matmul(y, tf.cast(self.layer_2.kernel, dtype)),
                           tf.cast(self.layer_2.bias, dtype))  # [tokens, D]
        y = self.drop_2(y, training=training)
        # the sum and the LayerNorm in x's dtype (float32 under mixed_bfloat16)
        return normalize(self.layer_norm, tf.cast(tf.reshape(y, tf.shape(x)), x.dtype) + x,
                         training, out_dtype=x.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, d_inner=self.d_inner, activation=self.activation,
                      dropout=self.rate_dropout)
        return config


class XLNetLayer(keras.layers.Layer):
    """One Transformer-XL layer (scope `model/transformer/layer_i`): `rel_attn` then `ff`.

    In two-stream mode the FFN (same weights) is applied to the query stream, then to the
    content stream (spec 3.12). Call args as :class:`RelativeAttention`; returns
    ``(output_h, output_g or None)``.
    """

    def __init__(self, d_model, n_head, d_head, d_inner, ff_activation="relu", dropout=0.0,
                 dropatt=0.0, initializer=None, **kwargs):
        kwargs.setdefault("autocast", False)  # h, g: the residual streams (see XLNetModel)
        super().__init__(**kwargs)
        self._cfg = dict(d_model=d_model, n_head=n_head, d_head=d_head, d_inner=d_inner,
                         ff_activation=ff_activation, dropout=dropout, dropatt=dropatt)
        self.rel_attn = RelativeAttention(d_model, n_head, d_head, dropout, dropatt, initializer)
        self.ff = PositionwiseFFN(d_model, d_inner, ff_activation, dropout, initializer)
        self.built = True  # every weight exists

    def call(self, h, g, r, mems, r_w_bias, r_r_bias, r_s_bias, seg_mat, seg_embed,
             attn_mask_h, attn_mask_g, target_mapping=None, training=False):
        output_h, output_g = self.rel_attn(
            h, g, r, mems, r_w_bias, r_r_bias, r_s_bias, seg_mat, seg_embed, attn_mask_h,
            attn_mask_g, target_mapping=target_mapping, training=training)
        if output_g is not None:
            output_g = self.ff(output_g, training=training)
        output_h = self.ff(output_h, training=training)
        return output_h, output_g

    def get_config(self):
        config = super().get_config()
        config.update(self._cfg)
        return config


# ------------------------------------------------------------------------------------------
# Heads (batch-major)
# ------------------------------------------------------------------------------------------

class AbsoluteAttention(HeadProjections):
    """Standard multi-head attention of the `attn` summary (scope `abs_attn`).

    Mirrors the original `multihead_attn(..., residual=False)` (spec 3.14): q/k/v/o kernels
    ``[D, N, Dh]``, scale ``1 / sqrt(Dh)``, ``-1e30`` at padded keys, dropatt, o-projection,
    dropout, then ``LayerNorm(attn_out)`` **without** residual.

    Call args:
      q: ``[B, Lq, D]``; kv: ``[B, L, D]``; input_mask: float ``[B, L]`` (1 = padding) or None.

    Returns:
      ``[B, Lq, D]``.
    """

    def __init__(self, d_model, n_head, d_head, dropout=0.0, dropatt=0.0, initializer=None,
                 **kwargs):
        kwargs.setdefault("name", "abs_attn")
        super().__init__(d_model, n_head, d_head, dropout, dropatt, initializer,
                         names=("q", "k", "v", "o"), **kwargs)

    def call(self, q, kv, input_mask=None, training=False):
        dtype = q.dtype
        # Time-major as in the original: [len, B, ...].
        q_tm = tf.transpose(q, [1, 0, 2])
        kv_tm = tf.transpose(kv, [1, 0, 2])
        q_head = self.head_projection(q_tm, "q")
        k_head = self.head_projection(kv_tm, "k")
        v_head = self.head_projection(kv_tm, "v")
        score = tf.einsum("ibnd,jbnd->ijbn", q_head, k_head) * self.scale
        if input_mask is not None:
            mask = tf.transpose(tf.cast(input_mask, dtype), [1, 0])[None, :, :, None]
            score = score - mask_value(dtype) * mask
        prob = tf.nn.softmax(score, axis=1)
        prob = self.dropatt(prob, training=training)
        attn_vec = tf.einsum("ijbn,jbnd->ibnd", prob, v_head)
        out = self.post_attention(q_tm, attn_vec, residual=False, training=training)
        return tf.transpose(out, [1, 0, 2])

    def get_config(self):
        config = super().get_config()
        config.update(d_model=self.d_model, n_head=self.n_head, d_head=self.d_head,
                      dropout=self.rate_dropout, dropatt=self.rate_dropatt)
        return config


SUMMARY_TYPES = ("last", "first", "mean", "attn")


class SequenceSummary(keras.layers.Layer):
    """Sequence summary (scope `model/sequnece_summary`, misspelt as in the original).

    Mirrors `modeling.summarize_sequence` (spec 3.14): ``last`` = last position (XLNet's CLS,
    left padding), ``first`` = first position, ``mean`` = mean over all positions including
    padding, ``attn`` = a learned query `summary_bias` ``[D]`` attending over the sequence
    (:class:`AbsoluteAttention`). Then, if ``use_proj``, ``tanh(dense_D(summary))`` (layer
    `summary`: kernel ``[D, D]``, bias ``[D]``), then dropout.

    Call args:
      hidden: float ``[B, L, D]`` (batch-major sequence output).
      input_mask: float ``[B, L]`` (1 = padding) or None; only used by ``attn``.
      training: enables dropout.

    Returns:
      float ``[B, D]``.

    Raises:
      ValueError: unknown ``summary_type`` (at construction).
    """

    def __init__(self, d_model: int, n_head: int, d_head: int, summary_type: str = "last",
                 use_proj: bool = True, dropout: float = 0.0, dropatt: float = 0.0,
                 initializer=None, **kwargs):
        kwargs.setdefault("name", "sequnece_summary")
        super().__init__(**kwargs)
        if summary_type not in SUMMARY_TYPES:
            raise ValueError(f"Unsupported summary type {summary_type!r} "
                             f"(one of {', '.join(SUMMARY_TYPES)})")
        self._cfg = dict(d_model=d_model, n_head=n_head, d_head=d_head,
                         summary_type=summary_type, use_proj=use_proj, dropout=dropout,
                         dropatt=dropatt)
        self.summary_type, self.use_proj = summary_type, use_proj
        initializer = initializer or get_initializer()
        self.summary_bias = None
        self.abs_attn = None
        if summary_type == "attn":
            self.summary_bias = self.add_weight(name="summary_bias", shape=(d_model,),
                                                initializer=initializer)
            self.abs_attn = AbsoluteAttention(d_model, n_head, d_head, dropout, dropatt,
                                              initializer)
        self.summary = (_dense(d_model, d_model, initializer, "summary", activation="tanh")
                        if use_proj else None)
        self.dropout = built_dropout(dropout)

    def call(self, hidden, input_mask=None, training=False):
        if self.summary_type == "last":
            summary = hidden[:, -1]
        elif self.summary_type == "first":
            summary = hidden[:, 0]
        elif self.summary_type == "mean":
            summary = tf.reduce_mean(hidden, axis=1)
        else:
            bsz = tf.shape(hidden)[0]
            query = tf.tile(tf.cast(self.summary_bias, hidden.dtype)[None, None, :], [bsz, 1, 1])
            summary = self.abs_attn(query, hidden, input_mask, training=training)[:, 0]
        if self.summary is not None:
            summary = self.summary(summary)
        return self.dropout(summary, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(self._cfg)
        return config


class LMHead(keras.layers.Layer):
    """LM output with tied embeddings (scope `model/lm_loss`, original `lm_loss`, spec 3.13).

    ``logits = hidden . lookup_table^T + bias``; the only weight is `bias` ``[V]`` (zeros).

    Call args:
      hidden: float ``[B, P, D]``; lookup_table: ``[V, D]`` (the model's word embedding).

    Returns:
      float ``[B, P, V]``.
    """

    def __init__(self, n_token: int, **kwargs):
        kwargs.setdefault("name", "lm_loss")
        super().__init__(**kwargs)
        self.n_token = n_token
        self.bias = self.add_weight(name="bias", shape=(n_token,), initializer="zeros")

    def call(self, hidden, lookup_table):
        logits = tf.einsum("bid,nd->bin", hidden, tf.cast(lookup_table, hidden.dtype))
        return logits + tf.cast(self.bias, hidden.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(n_token=self.n_token)
        return config


class LogitHead(keras.layers.Layer):
    """Dense layer `logit` of the classification / regression heads (spec 3.15).

    Weights: `logit` kernel ``[D, n_out]``, bias ``[n_out]``. The original scope is
    ``model/classification_{cls_scope or task}`` or ``model/regression_{task}``; it is held in
    :attr:`scope` (e.g. ``"classification_mnli_matched"``, ``"regression_sts-b"``) and used by
    the checkpoint name table.

    Call args: summary float ``[B, D]``. Returns float ``[B, n_out]``.
    """

    def __init__(self, n_out: int, d_model: int, scope: str, initializer=None, **kwargs):
        kwargs.setdefault("name", scope.replace("-", "_"))
        super().__init__(**kwargs)
        self.n_out, self.d_model, self.scope = n_out, d_model, scope
        self.logit = _dense(n_out, d_model, initializer or get_initializer(), "logit")

    def call(self, summary):
        return self.logit(summary)

    def get_config(self):
        config = super().get_config()
        config.update(n_out=self.n_out, d_model=self.d_model, scope=self.scope)
        return config


# Public names of the two builders, for the task heads of other modules (bert_tf.xlnet.squad).
dense_layer = _dense
layer_norm_layer = _layer_norm
