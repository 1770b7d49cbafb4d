"""XLNet building blocks against hand-worked values of the spec formulas (xlnet.md 3.1-3.14)."""
import math

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.xlnet import attention, layers


def test_gelu_is_the_tanh_form():
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) at x = 1, -2 worked by hand.
    got = layers.gelu(tf.constant([1.0, -2.0], tf.float64)).numpy()
    np.testing.assert_allclose(got, [0.8411919906082768, -0.04540230591222], rtol=1e-12)


def test_rel_shift_index_identity():
    # out[i, j] = x[i, L - i + j]; x[i, p] = 100 i + p.
    qlen, mlen = 3, 2
    klen, rlen = qlen + mlen, 2 * qlen + mlen
    x = np.array([[100 * i + p for p in range(rlen)] for i in range(qlen)], np.float32)
    out = attention.rel_shift(tf.constant(x[:, :, None, None]), klen).numpy()[:, :, 0, 0]
    expected = [[100 * i + qlen - i + j for j in range(klen)] for i in range(qlen)]
    np.testing.assert_array_equal(out, expected)


def test_rel_shift_batch_major_index_identity():
    # The same identity on [B, N, L, R] scores: out[b, n, i, j] = x[b, n, i, L - i + j],
    # x[b, n, i, p] = 1000 b + 100 i + p (b over 2 rows, n over 3 heads).
    qlen, mlen = 3, 2
    klen, rlen = qlen + mlen, 2 * qlen + mlen
    x = np.array([[[[1000 * b + 100 * i + p for p in range(rlen)] for i in range(qlen)]] * 3
                  for b in range(2)], np.float32)
    out = attention.rel_shift_bnij(tf.constant(x), klen).numpy()
    expected = [[[[1000 * b + 100 * i + qlen - i + j for j in range(klen)] for i in range(qlen)]] * 3
                for b in range(2)]
    np.testing.assert_array_equal(out, expected)


def _sinusoid(pos, d_model):
    inv_freq = np.array([1.0 / 10000 ** (k / d_model) for k in range(0, d_model, 2)])
    inp = np.outer(pos, inv_freq)
    return np.concatenate([np.sin(inp), np.cos(inp)], -1)


@pytest.mark.parametrize("attn_type,clamp_len,positions", [
    ("bi", -1, [5, 4, 3, 2, 1, 0, -1, -2]),   # K .. -L+1
    ("uni", -1, [5, 4, 3, 2, 1, 0]),          # K .. 0
    ("bi", 2, [2, 2, 2, 2, 1, 0, -1, -2]),
])
def test_positional_encoding(attn_type, clamp_len, positions):
    pos_emb = attention.relative_positional_encoding(3, 5, 8, clamp_len, attn_type, bsz=2).numpy()
    assert pos_emb.shape == (len(positions), 2, 8)
    expected = _sinusoid(np.array(positions, np.float64), 8)
    np.testing.assert_allclose(pos_emb[:, 0], expected, atol=1e-6)
    np.testing.assert_array_equal(pos_emb[:, 0], pos_emb[:, 1])


def test_positional_encoding_bi_data_halves():
    pos_emb = attention.relative_positional_encoding(2, 3, 4, bi_data=True, bsz=4).numpy()
    fwd = _sinusoid(np.array([3, 2, 1, 0, -1], np.float64), 4)
    bwd = _sinusoid(np.array([-3, -2, -1, 0, 1], np.float64), 4)
    for b, expected in enumerate((fwd, fwd, bwd, bwd)):
        np.testing.assert_allclose(pos_emb[:, b], expected, atol=1e-6)
    with pytest.raises(ValueError, match="even batch size"):
        attention.relative_positional_encoding(2, 3, 4, bi_data=True, bsz=3)


def test_causal_mask_and_same_length():
    mask = attention.causal_mask(3, 2).numpy()
    np.testing.assert_array_equal(mask, [[0, 0, 0, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]])
    same = attention.causal_mask(3, 2, same_length=True).numpy()
    np.testing.assert_array_equal(same, [[0, 0, 0, 1, 1], [1, 0, 0, 0, 1], [1, 1, 0, 0, 0]])
    assert list((same == 0).sum(1)) == [3, 3, 3]  # every query sees M + 1 keys


def test_attention_masks_input_mask_and_diagonal():
    input_mask = tf.constant([[0.0], [0.0], [1.0]])  # [L=3, B=1], last position padded
    attn_mask, non_tgt = attention.attention_masks(3, 1, input_mask=input_mask)
    attn_mask, non_tgt = attn_mask.numpy()[..., 0, 0], non_tgt.numpy()[..., 0, 0]
    np.testing.assert_array_equal(attn_mask, [[0, 0, 0, 1]])  # broadcast over queries
    # Every position may attend to itself in the content stream, even the padded one.
    np.testing.assert_array_equal(non_tgt, [[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 0, 0]])
    assert attention.attention_masks(3, 1) == (None, None)


def test_attention_masks_perm_and_uni():
    perm = np.zeros((2, 2, 1), np.float32)
    perm[0, 1, 0] = 1.0  # query 0 may not see key 1
    perm[1, 1, 0] = 1.0  # query 1 is a target: cannot see itself in the query stream
    attn_mask, non_tgt = attention.attention_masks(2, 0, perm_mask=tf.constant(perm))
    np.testing.assert_array_equal(attn_mask.numpy()[..., 0, 0], [[0, 1], [0, 1]])
    np.testing.assert_array_equal(non_tgt.numpy()[..., 0, 0], [[0, 1], [0, 0]])
    uni, uni_non_tgt = attention.attention_masks(2, 1, attn_type="uni")
    np.testing.assert_array_equal(uni.numpy()[..., 0, 0], [[0, 0, 1], [0, 0, 0]])
    np.testing.assert_array_equal(uni_non_tgt.numpy(), uni.numpy())


def test_relative_segment_matrix_memory_is_segment_0():
    seg_id = tf.constant([[0], [0], [1]])
    seg_mat = attention.relative_segment_matrix(seg_id, 1).numpy()
    assert seg_mat.shape == (3, 4, 1, 2)
    different = seg_mat[:, :, 0, 1]
    np.testing.assert_array_equal(different, [[0, 0, 0, 1], [0, 0, 0, 1], [1, 1, 1, 0]])
    np.testing.assert_array_equal(seg_mat[:, :, 0, 0], 1 - different)


def test_cache_mem():
    curr = tf.reshape(tf.range(6, dtype=tf.float32), [6, 1, 1])
    prev = tf.constant([[[-2.0]], [[-1.0]]])
    assert attention.cache_mem(curr, prev, None) is None and attention.cache_mem(curr, prev, 0) is None
    np.testing.assert_array_equal(attention.cache_mem(curr, None, 4).numpy().ravel(), [2, 3, 4, 5])
    np.testing.assert_array_equal(attention.cache_mem(curr, prev, 4, reuse_len=3).numpy().ravel(),
                                  [-1, 0, 1, 2])
    # Shorter than mem_len when there is not enough: [first reuse_len of current].
    np.testing.assert_array_equal(attention.cache_mem(curr, None, 4, reuse_len=2).numpy().ravel(), [0, 1])
    with tf.GradientTape() as tape:
        tape.watch(curr)
        total = tf.reduce_sum(attention.cache_mem(curr, None, 4))
    assert tape.gradient(total, curr) is None  # stop_gradient


def test_sequence_summary_first_last_mean_without_proj():
    hidden = tf.constant(np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4))
    for kind, expected in (("first", hidden[:, 0]), ("last", hidden[:, -1]),
                           ("mean", tf.reduce_mean(hidden, 1))):
        summary = layers.SequenceSummary(4, 2, 2, kind, use_proj=False)
        np.testing.assert_allclose(summary(hidden).numpy(), expected.numpy())
    with pytest.raises(ValueError, match="Unsupported summary type"):
        layers.SequenceSummary(4, 2, 2, "max")


def test_sequence_summary_attn_single_visible_key():
    """With only key 1 visible the attention is one-hot: LN(o . v(h_1)), no residual."""
    rng = np.random.RandomState(0)
    d, n, dh = 4, 2, 2
    summary = layers.SequenceSummary(d, n, dh, "attn", use_proj=False)
    hidden = rng.randn(1, 3, d).astype(np.float32)
    mask = np.array([[1.0, 0.0, 1.0]], np.float32)
    got = summary(tf.constant(hidden), tf.constant(mask)).numpy()
    v = np.einsum("h,hnd->nd", hidden[0, 1], summary.abs_attn.v_kernel.numpy())
    o = np.einsum("nd,hnd->h", v, summary.abs_attn.o_kernel.numpy())
    expected = (o - o.mean()) / np.sqrt(o.var() + 1e-12)  # gamma 1, beta 0
    np.testing.assert_allclose(got[0], expected, atol=1e-5)


def test_position_wise_ffn_relu_by_hand():
    ffn = layers.PositionwiseFFN(2, 3, "relu")
    ffn.layer_1.kernel.assign([[1.0, -1.0, 0.5], [0.0, 2.0, -1.0]])
    ffn.layer_1.bias.assign([0.0, 0.0, 0.0])
    ffn.layer_2.kernel.assign([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    ffn.layer_2.bias.assign([0.5, -0.5])
    x = np.array([[1.0, 1.0]], np.float32)
    # layer_1: [1, 1, -0.5] -> relu [1, 1, 0]; layer_2: [1.5, 0.5]; + x = [2.5, 1.5]; LN -> [1, -1]
    np.testing.assert_allclose(ffn(tf.constant(x)).numpy(), [[1.0, -1.0]], atol=1e-5)
    with pytest.raises(ValueError, match="Unsupported activation"):
        layers.PositionwiseFFN(2, 3, "swish")


def test_mask_value_per_dtype():
    assert attention.mask_value(tf.float32) == 1e30
    assert attention.mask_value(tf.bfloat16) == 1e30
    assert attention.mask_value(tf.float16) == 65500.0
    assert math.isclose(layers.LAYER_NORM_EPSILON, 1e-12)
