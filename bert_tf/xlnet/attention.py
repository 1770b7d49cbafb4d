"""The Transformer-XL tensor functions of XLNet's relative attention (spec `xlnet.md` 3.4-3.12):
the positional encoding, the masks, the segment matrix, the memory, `rel_shift` and the
attention core. Functions of tensors only, no weights; the layers that hold the weights and
call them are :mod:`bert_tf.xlnet.layers` (:class:`~bert_tf.xlnet.layers.RelativeAttention`)
and :mod:`bert_tf.xlnet.model` (``XLNetModel``).

Layout. The original **time-major** layout: sequence tensors are ``[len, batch, ...]`` and
the masks, the positional encoding and :func:`rel_shift` are the original's. The core,
:func:`rel_attn_core_batch_major`, takes batch-major heads ``[B, N, len, Dh]`` so that each
score is one batched matmul with the softmax on the last axis (the same sums as the
original's einsum ``rel_attn_core``).

Shapes: L = qlen (current segment), M = mlen (memory), K = M + L (klen), R = relative
positions (K + L for ``bi``, K + 1 for ``uni``), B = batch, N = n_head, Dh = d_head,
D = d_model.
Masks: 1 = blocked / padding, 0 = visible (XLNet polarity, the opposite of BERT's).

Numerics (spec 3.1): masked scores get ``- 1e30 * mask`` (65500 in float16,
:func:`mask_value`).
"""

from typing import Optional

import numpy as np
import tensorflow as tf

MASK_VALUE = 1e30
MASK_VALUE_FLOAT16 = 65500.0


def mask_value(dtype) -> float:
    """The constant masked scores are lowered by: 1e30, or 65500 for float16 (spec 3.1)."""
    return MASK_VALUE_FLOAT16 if tf.as_dtype(dtype) == tf.float16 else MASK_VALUE


def relative_positional_encoding(qlen, klen, d_model: int, clamp_len: int = -1,
                                 attn_type: str = "bi", bi_data: bool = False, bsz=None,
                                 dtype=tf.float32):
    """Sinusoid relative positional encoding (original `relative_positional_encoding`, 3.7).

    Positions run downwards from ``klen``: to ``-qlen + 1`` for ``"bi"`` (R = K + L rows) or to
    ``0`` for ``"uni"`` (R = K + 1 rows); clamped to ``[-clamp_len, clamp_len]`` when
    ``clamp_len > 0``. Row p is ``[sin(pos_p * inv_freq), cos(pos_p * inv_freq)]`` (halves
    concatenated, not interleaved), ``inv_freq[k] = 1 / 10000^(2k / D)``. With ``bi_data`` the
    first half of the batch gets the forward positions and the second half the negated
    (backward) ones.

    Args:
      qlen, klen: int or scalar int tensors (L, K).
      d_model: D (even).
      bsz: batch size B (int or scalar tensor); required with ``bi_data``. None gives a
        batch axis of 1.
      dtype: output dtype (computed in float32, then cast).

    Returns:
      float ``[R, B, D]`` (``[R, 1, D]`` when ``bsz`` is None).

    Raises:
      ValueError: ``bi_data`` with a static odd or missing ``bsz``, or a bad ``attn_type``.
      tf.errors.InvalidArgumentError: ``bi_data`` with a dynamic odd ``bsz``.
    """
    freq_seq = tf.range(0, d_model, 2.0, dtype=tf.float32)
    inv_freq = 1.0 / (10000.0 ** (freq_seq / float(d_model)))
    klen_f = tf.cast(klen, tf.float32)
    qlen_f = tf.cast(qlen, tf.float32)
    if attn_type == "bi":
        beg, end = klen_f, -qlen_f
    elif attn_type == "uni":
        beg, end = klen_f, tf.constant(-1.0)
    else:
        raise ValueError(f"Unknown `attn_type` {attn_type}.")

    def embed(pos_seq, batch):
        if clamp_len > 0:
            pos_seq = tf.clip_by_value(pos_seq, -float(clamp_len), float(clamp_len))
        sinusoid_inp = tf.einsum("i,d->id", pos_seq, inv_freq)
        pos_emb = tf.concat([tf.sin(sinusoid_inp), tf.cos(sinusoid_inp)], -1)[:, None, :]
        if batch is not None:
            pos_emb = tf.tile(pos_emb, [1, batch, 1])
        return tf.cast(pos_emb, dtype)

    fwd_pos_seq = tf.range(beg, end, -1.0)
    if not bi_data:
        return embed(fwd_pos_seq, bsz)
    if bsz is None:
        raise ValueError("bi_data=True needs the batch size (first half forward, second half "
                         "backward)")
    if isinstance(bsz, (int, np.integer)):
        if bsz % 2:
            raise ValueError(f"bi_data=True needs an even batch size, got {bsz}")
        half = bsz // 2
    else:
        tf.debugging.assert_equal(bsz % 2, 0, message="bi_data=True needs an even batch size")
        half = bsz // 2
    bwd_pos_seq = tf.range(-beg, -end, 1.0)
    return tf.concat([embed(fwd_pos_seq, half), embed(bwd_pos_seq, half)], axis=1)


def rel_shift(x, klen):
    """The original `rel_shift`: ``[L, R, B, N]`` -> ``[L, K, B, N]`` (spec 3.8).

    Reinterprets the buffer as ``[R, L, B, N]``, drops the first row, reinterprets as
    ``[L, R - 1, B, N]`` and keeps the first ``klen`` columns, so that
    ``out[i, j] = x[i, L - i + j]`` (relative distance ``M + i - j``).
    """
    # Letters as in the module docstring: L queries, R relative positions, K keys, B, N.
    x_size = tf.shape(x)  # x: [L, R, B, N]
    x = tf.reshape(x, [x_size[1], x_size[0], x_size[2], x_size[3]])  # [R, L, B, N]
    x = x[1:]  # [R - 1, L, B, N]
    x = tf.reshape(x, [x_size[0], x_size[1] - 1, x_size[2], x_size[3]])  # [L, R - 1, B, N]
    return x[:, :klen]  # [L, K, B, N]


def causal_mask(qlen, mlen, same_length: bool = False, dtype=tf.float32):
    """The ``uni`` mask of the original `_create_mask` (spec 3.4 item 1).

    Returns:
      float ``[L, K]``: 0 for the M memory columns and for current keys ``j <= i``, 1 for
      strictly-future keys; with ``same_length`` also 1 on the strictly-lower triangle of the
      first L columns, so every query sees exactly M + 1 keys.
    """
    ones = tf.ones([qlen, qlen], dtype=dtype)
    mask_u = tf.linalg.band_part(ones, 0, -1)
    mask_dia = tf.linalg.band_part(ones, 0, 0)
    pad = tf.zeros([qlen, mlen], dtype=dtype)
    ret = tf.concat([pad, mask_u - mask_dia], 1)
    if same_length:
        mask_l = tf.linalg.band_part(ones, -1, 0)
        ret = tf.concat([ret[:, :qlen] + mask_l - mask_dia, ret[:, qlen:]], 1)
    return ret


def attention_masks(qlen, mlen, input_mask=None, perm_mask=None, attn_type: str = "bi",
                    same_length: bool = False, dtype=tf.float32):
    """Query-stream and content-stream masks of the original `transformer_xl` (spec 3.4).

    Args:
      qlen, mlen: L and M (ints or scalar tensors).
      input_mask: float ``[L, B]``, 1 = padding key, or None.
      perm_mask: float ``[L, L, B]``, ``perm_mask[i, j, b] = 1``: query i may not see key j;
        or None.
      attn_type: ``"uni"`` adds the causal mask.

    Returns:
      ``(attn_mask, non_tgt_mask)``, each float ``[L or 1, K, B or 1, 1]`` of 0/1, or both None
      when nothing is masked. ``attn_mask`` is for the query stream (a target cannot see
      itself); ``non_tgt_mask`` = ``attn_mask`` with the diagonal of the current block opened,
      for the content stream and single-stream attention (every position sees itself).
    """
    attn_mask = None
    if attn_type == "uni":
        attn_mask = causal_mask(qlen, mlen, same_length, dtype)[:, :, None, None]
    elif attn_type != "bi":
        raise ValueError(f"Unsupported attention type: {attn_type}")

    if input_mask is not None and perm_mask is not None:
        data_mask = tf.cast(input_mask, dtype)[None] + tf.cast(perm_mask, dtype)
    elif input_mask is not None:
        data_mask = tf.cast(input_mask, dtype)[None]
    elif perm_mask is not None:
        data_mask = tf.cast(perm_mask, dtype)
    else:
        data_mask = None

    if data_mask is not None:
        dm_shape = tf.shape(data_mask)
        mems_mask = tf.zeros([dm_shape[0], mlen, dm_shape[2]], dtype=dtype)
        data_mask = tf.concat([mems_mask, data_mask], 1)
        if attn_mask is None:
            attn_mask = data_mask[:, :, :, None]
        else:
            attn_mask += data_mask[:, :, :, None]

    if attn_mask is None:
        return None, None
    attn_mask = tf.cast(attn_mask > 0, dtype)
    non_tgt_mask = -tf.eye(qlen, dtype=dtype)
    non_tgt_mask = tf.concat([tf.zeros([qlen, mlen], dtype=dtype), non_tgt_mask], axis=-1)
    non_tgt_mask = tf.cast((attn_mask + non_tgt_mask[:, :, None, None]) > 0, dtype)
    return attn_mask, non_tgt_mask


def relative_segment_matrix(seg_id, mlen, dtype=tf.float32):
    """One-hot "different segment" matrix (original `transformer_xl`, spec 3.6).

    Memory positions count as segment 0. Index 0 = same segment, 1 = different.

    Args:
      seg_id: int ``[L, B]``.
      mlen: M.

    Returns:
      float ``[L, K, B, 2]``.
    """
    seg_id = tf.cast(seg_id, tf.int32)
    mem_pad = tf.zeros([mlen, tf.shape(seg_id)[1]], dtype=tf.int32)
    cat_ids = tf.concat([mem_pad, seg_id], 0)
    seg_mat = tf.cast(tf.logical_not(tf.equal(seg_id[:, None], cat_ids[None, :])), tf.int32)
    return tf.one_hot(seg_mat, 2, dtype=dtype)


def cache_mem(curr_out, prev_mem, mem_len: Optional[int], reuse_len: Optional[int] = None):
    """Memory for the next segment (original `_cache_mem`, spec 3.12).

    Args:
      curr_out: ``[L, B, D]`` input of a layer for the current segment.
      prev_mem: ``[M, B, D]`` or None.
      mem_len: cached length; None or 0 disables memory.
      reuse_len: if > 0 only the first ``reuse_len`` positions of ``curr_out`` are cached.

    Returns:
      ``stop_gradient`` of the last ``mem_len`` rows of ``[prev_mem; curr_out[:reuse_len]]``
      (may be shorter than mem_len), or None when memory is disabled.
    """
    if mem_len is None or mem_len == 0:
        return None
    if reuse_len is not None and reuse_len > 0:
        curr_out = curr_out[:reuse_len]
    if prev_mem is None:
        new_mem = curr_out[-mem_len:]
    else:
        new_mem = tf.concat([tf.cast(prev_mem, curr_out.dtype), curr_out], 0)[-mem_len:]
    return tf.stop_gradient(new_mem)


def rel_shift_bnij(x, klen):
    """`rel_shift` on batch-major scores: ``[B, N, L, R]`` -> ``[B, N, L, K]``.

    The original's reshape trick (spec 3.8) on the last two axes, ``out[..., i, j] =
    x[..., i, L - i + j]``: the same buffer reinterpretation as :func:`rel_shift` with the
    query / position axes innermost instead of outermost.
    """
    s = tf.shape(x)  # [B, N, L, R]
    x = tf.reshape(x, [s[0], s[1], s[3], s[2]])  # [B, N, R, L]
    x = x[:, :, 1:]  # [B, N, R - 1, L]
    x = tf.reshape(x, [s[0], s[1], s[2], s[3] - 1])  # [B, N, L, R - 1]
    return x[:, :, :, :klen]  # [B, N, L, K]


def rel_attn_core_batch_major(q_head, k_head_h, v_head_h, k_head_r, seg_embed, seg_diff,
                              r_w_bias, r_r_bias, r_s_bias, attn_mask, scale: float,
                              dropatt_fn=None):
    """The original's ``rel_attn_core`` with batch-major heads, by batched matmuls (spec 3.8).

    The same sums as the original's einsums (``ac + bd + ef``, times ``scale``, minus
    ``mask_value * mask``, softmax over the keys), laid out ``[B, N, L, K]`` so that every
    product is one batched matmul and the softmax runs over the last axis (the original
    layout ``[L, K, B, N]`` makes TF transpose around each einsum and the softmax). The
    segment term picks, per (query, key), the "same" or "different" score with ``tf.where``:
    the value the original's one-hot einsum gives (``1 * x + 0 * y``).

    Args:
      q_head: ``[B, N, L, Dh]``; k_head_h, v_head_h: ``[B, N, K, Dh]``;
      k_head_r: ``[B or 1, N, R, Dh]`` (1: one positional encoding for the whole batch);
      seg_embed: ``[2, N, Dh]`` or None; seg_diff: bool ``[B, 1, L, K]`` (True = different
      segment) or None; r_w_bias, r_r_bias, r_s_bias: ``[N, Dh]``;
      attn_mask: ``[B or 1, 1, L or 1, K]`` (1 = blocked) or None; scale: ``1 / sqrt(Dh)``;
      dropatt_fn: dropout applied to the probabilities, or None.

    Returns:
      ``[B, N, L, Dh]``.
    """
    # content score (a) + (c): query + r_w_bias against the content keys
    ac = tf.matmul(q_head + r_w_bias[:, None, :], k_head_h, transpose_b=True)  # [B, N, L, K]
    # position score (b) + (d): query + r_r_bias against the relative-position keys
    bd = tf.matmul(q_head + r_r_bias[:, None, :], k_head_r, transpose_b=True)  # [B, N, L, R]
    bd = rel_shift_bnij(bd, klen=tf.shape(ac)[3])  # [B, N, L, K]
    if seg_diff is None:
        score = ac + bd
    else:
        # segment score: query + r_s_bias against the 2 segment embeddings [N, Dh, 2]
        ef = tf.matmul(q_head + r_s_bias[:, None, :], tf.transpose(seg_embed, [1, 2, 0]))
        ef = tf.where(seg_diff, ef[..., 1:], ef[..., :1])  # [B, N, L, K]
        score = ac + bd + ef
    score = score * scale
    if attn_mask is not None:
        score = score - mask_value(score.dtype) * attn_mask
    prob = tf.nn.softmax(score, axis=-1)  # [B, N, L, K]
    if dropatt_fn is not None:
        prob = dropatt_fn(prob)
    return tf.matmul(prob, v_head_h)  # [B, N, L, Dh]
