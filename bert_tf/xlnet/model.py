"""`XLNetModel` (the original `transformer_xl` under scope `model`) and its task models.

Mirrors `modeling.transformer_xl` / `xlnet.XLNetModel` (spec `xlnet.md` 2.3, 3) and the heads
of `function_builder.py` (`two_stream_loss`, `get_classification_loss`,
`get_regression_loss`; spec 3.13-3.15) as Keras 3 models.

Layout: the public API is **batch-major** (Keras convention, and what the input pipelines
yield); the Transformer-XL maths inside is the original's time-major code, and the inputs are
transposed at the edge. Inputs of :class:`XLNetModel` (a dict):

  ``input_ids``       int32 ``[B, L]``
  ``segment_ids``     int32 ``[B, L]`` or absent (then no segment term)
  ``input_mask``      float ``[B, L]``, **1 = padding** (XLNet polarity), or absent
  ``mems``            list of n_layer float ``[B, M, D]`` or absent
  ``perm_mask``       float ``[B, L, L]``: ``perm_mask[b, i, j] = 1`` -> query i cannot see j
  ``target_mapping``  float ``[B, P, L]`` one-hot rows
  ``input_q``         float ``[B, L]``, 1 = prediction target (enables two-stream mode)

Outputs (a dict):

  ``sequence_output``    float ``[B, L, D]``: content stream h after the last layer
  ``query_output``       float ``[B, P or L, D]``: query stream g (two-stream mode only)
  ``new_mems``           list of n_layer float ``[B, M', D]`` (empty when mem_len is 0/None)
  ``all_layer_outputs``  list of n_layer + 1 float ``[B, L, D]``: the embedding output then
                         every layer's content-stream output (for extract_features)

Note: the original ``get_sequence_output()`` returns the query stream in two-stream mode;
here that is ``query_output``.
Dropout is active when called with ``training=True`` (default: ``run_config.is_training``).
With ``recompute_grad`` set (``--recompute_grad``; bert_tf, beyond the original) a training
call keeps only each layer's inputs for the backward pass and recomputes the rest there, with
the same dropout masks (:mod:`bert_tf.recompute`).
Checkpoint names are in `bert_tf/xlnet/checkpoint_map.py`.
"""

import functools
from typing import Dict, Optional

import keras
import tensorflow as tf

from bert_tf.dropout import built_dropout
from bert_tf.recompute import call_recomputed
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.attention import (attention_masks, cache_mem, relative_positional_encoding,
                                     relative_segment_matrix)
from bert_tf.xlnet.layers import (LMHead, LogitHead, SequenceSummary, XLNetLayer,
                                  get_initializer)


def _layer_outputs(layer, training, *args):
    """``layer(*args[:-1], target_mapping=args[-1])`` as tensors only: ``output_h``, or
    ``(output_h, output_g)`` in two-stream mode (what :func:`call_recomputed` runs)."""
    output_h, output_g = layer(*args[:-1], target_mapping=args[-1], training=training)
    return output_h if output_g is None else (output_h, output_g)


def _static_or_dynamic(x, axis):
    static = x.shape[axis]
    return static if static is not None else tf.shape(x)[axis]


class XLNetModel(keras.Model):
    """The XLNet encoder (original `transformer_xl` under scope `model/transformer`).

    Args:
      config: an :class:`XLNetConfig` (checkpoint hyper-parameters).
      run_config: a :class:`RunConfig` (dropout, memory, bi_data, clamp_len, attn_type...);
        default ``RunConfig()``.
      with_mask_emb: create `mask_emb` ``[1, 1, D]`` (needed for two-stream pretraining; the
        original creates it only when ``inp_q`` is given, so fine-tuned checkpoints lack it).
      recompute_grad: (bert_tf) in training calls, recompute each layer's activations in the
        backward pass (:func:`bert_tf.recompute.call_recomputed`); same values and gradients,
        less memory. An attribute: the training loop sets it from ``--recompute_grad``.

    Weights (spec 3.3): `lookup_table` ``[V, D]``; `r_w_bias`, `r_r_bias`, `r_s_bias`
    ``[NL, N, Dh]`` if ``untie_r`` else ``[N, Dh]``; `seg_embed` ``[NL, 2, N, Dh]``;
    `mask_emb` ``[1, 1, D]``; and n_layer :class:`XLNetLayer` in :attr:`transformer_layers`.

    Call args / returns: see the module docstring.

    Raises:
      ValueError: two-stream inputs without `mask_emb`; ``mems`` of the wrong count;
        ``bi_data`` with an odd batch.
    """

    def __init__(self, config: XLNetConfig, run_config: Optional[RunConfig] = None,
                 with_mask_emb: bool = False, recompute_grad: bool = False, **kwargs):
        kwargs.setdefault("name", "transformer")
        super().__init__(**kwargs)
        run_config = run_config or RunConfig()
        self.config = config
        self.run_config = run_config
        self.with_mask_emb = with_mask_emb
        self.recompute_grad = recompute_grad
        initializer = get_initializer(run_config.init, run_config.init_range, run_config.init_std)
        self.initializer = initializer
        d, n, dh, nl = config.d_model, config.n_head, config.d_head, config.n_layer
        bias_shape = (nl, n, dh) if config.untie_r else (n, dh)
        # autocast=False: a call gathers float32 rows instead of casting the [V, D] table
        self.lookup_table = self.add_weight(name="lookup_table", shape=(config.n_token, d),
                                            initializer=initializer, autocast=False)
        self.r_w_bias = self.add_weight(name="r_w_bias", shape=bias_shape, initializer=initializer)
        self.r_r_bias = self.add_weight(name="r_r_bias", shape=bias_shape, initializer=initializer)
        self.r_s_bias = self.add_weight(name="r_s_bias", shape=bias_shape, initializer=initializer)
        self.seg_embed = self.add_weight(name="seg_embed", shape=(nl, 2, n, dh),
                                         initializer=initializer)
        # No explicit initializer in the original: TF1's default glorot_uniform.
        self.mask_emb = (self.add_weight(name="mask_emb", shape=(1, 1, d),
                                         initializer="glorot_uniform")
                         if with_mask_emb else None)
        self.transformer_layers = [
            XLNetLayer(d, n, dh, config.d_inner, config.ff_activation, run_config.dropout,
                       run_config.dropatt, initializer, name=f"layer_{i}")
            for i in range(nl)
        ]
        self.dropout = built_dropout(run_config.dropout)
        # every weight exists: no symbolic run of `call` to build (issue 24, start-up)
        self.built = True

    #: Project one positional encoding row for the whole batch when that is exact (see call).
    share_positional_encoding = True

    def _layer_biases(self, i):
        if self.config.untie_r:
            return self.r_w_bias[i], self.r_r_bias[i], self.r_s_bias[i]
        return (tf.convert_to_tensor(self.r_w_bias), tf.convert_to_tensor(self.r_r_bias),
                tf.convert_to_tensor(self.r_s_bias))

    def call(self, inputs, training=None) -> Dict[str, object]:
        if training is None:
            training = self.run_config.is_training
        if not isinstance(inputs, dict):
            inputs = {"input_ids": inputs}
        rc, cfg = self.run_config, self.config
        dtype = self.compute_dtype
        # The residual streams h and g (and the memory) in the variable dtype: float32 also
        # under mixed_bfloat16 (bert_tf, beyond the original, whose bfloat16 ran everything in
        # bfloat16): each layer casts its matmul inputs to the compute dtype, its sums and
        # LayerNorms stay float32, as for BERT (bert_tf.bert.layers.TransformerBlock).
        stream = self.variable_dtype

        # Batch-major -> time-major (the original layout).
        inp_k = tf.transpose(tf.cast(inputs["input_ids"], tf.int32), [1, 0])
        seg_id = inputs.get("segment_ids")
        seg_id = None if seg_id is None else tf.transpose(tf.cast(seg_id, tf.int32), [1, 0])
        input_mask = inputs.get("input_mask")
        input_mask = None if input_mask is None else tf.transpose(tf.cast(input_mask, dtype), [1, 0])
        perm_mask = inputs.get("perm_mask")
        perm_mask = None if perm_mask is None else tf.transpose(tf.cast(perm_mask, dtype), [1, 2, 0])
        target_mapping = inputs.get("target_mapping")
        target_mapping = (None if target_mapping is None
                          else tf.transpose(tf.cast(target_mapping, dtype), [1, 2, 0]))
        inp_q = inputs.get("input_q")
        inp_q = None if inp_q is None else tf.transpose(tf.cast(inp_q, stream), [1, 0])
        mems = inputs.get("mems")
        if mems is not None:
            if len(mems) != cfg.n_layer:
                raise ValueError(f"mems: expected {cfg.n_layer} tensors (one per layer), got {len(mems)}")
            mems = [tf.transpose(tf.cast(m, stream), [1, 0, 2]) for m in mems]

        qlen = _static_or_dynamic(inp_k, 0)
        bsz = _static_or_dynamic(inp_k, 1)
        mlen = _static_or_dynamic(mems[0], 0) if mems is not None else 0
        klen = mlen + qlen

        attn_mask, non_tgt_mask = attention_masks(qlen, mlen, input_mask, perm_mask,
                                                  rc.attn_type, rc.same_length, dtype)

        word_emb_k = tf.cast(tf.gather(self.lookup_table, inp_k), stream)
        output_h = self.dropout(word_emb_k, training=training)
        output_g = None
        if inp_q is not None:
            if self.mask_emb is None:
                raise ValueError("two-stream inputs (input_q) need mask_emb: build XLNetModel "
                                 "with with_mask_emb=True")
            mask_emb = tf.cast(self.mask_emb, stream)
            if target_mapping is not None:
                word_emb_q = tf.tile(mask_emb, [tf.shape(target_mapping)[0], bsz, 1])
            else:
                inp_q_ext = inp_q[:, :, None]
                word_emb_q = inp_q_ext * mask_emb + (1 - inp_q_ext) * word_emb_k
            output_g = self.dropout(word_emb_q, training=training)

        seg_mat = None if seg_id is None else relative_segment_matrix(seg_id, mlen, dtype)

        # The original tiles the encoding over the batch ([R, B, D]) and projects every copy.
        # Without bi_data the copies are equal, so unless dropout will draw a different mask
        # for each, one [R, 1, D] row is projected and broadcast over the batch.
        share = (self.share_positional_encoding and not rc.bi_data
                 and (rc.dropout == 0 or training is False))
        pos_emb = relative_positional_encoding(qlen, klen, cfg.d_model, rc.clamp_len,
                                               rc.attn_type, rc.bi_data,
                                               bsz=None if share else bsz, dtype=dtype)
        pos_emb = self.dropout(pos_emb, training=training)

        new_mems = []
        all_layer_outputs = [output_h]
        for i, layer in enumerate(self.transformer_layers):
            mem_i = None if mems is None else mems[i]
            new_mem = cache_mem(output_h, mem_i, rc.mem_len, rc.reuse_len)
            if new_mem is not None:
                new_mems.append(new_mem)
            r_w_bias_i, r_r_bias_i, r_s_bias_i = self._layer_biases(i)
            seg_embed_i = None if seg_id is None else self.seg_embed[i]
            args = [output_h, output_g, pos_emb, mem_i, r_w_bias_i, r_r_bias_i, r_s_bias_i,
                    seg_mat, seg_embed_i, non_tgt_mask, attn_mask, target_mapping]
            run_layer = functools.partial(_layer_outputs, layer, training)
            if self.recompute_grad and training:
                outputs = call_recomputed(layer, run_layer, args)
            else:
                outputs = run_layer(*args)
            output_h, output_g = outputs if output_g is not None else (outputs, None)
            all_layer_outputs.append(output_h)

        output_h = self.dropout(output_h, training=training)
        outputs = {
            "sequence_output": tf.transpose(output_h, [1, 0, 2]),
            "new_mems": [tf.transpose(m, [1, 0, 2]) for m in new_mems],
            "all_layer_outputs": [tf.transpose(h, [1, 0, 2]) for h in all_layer_outputs],
        }
        if output_g is not None:
            output_g = self.dropout(output_g, training=training)
            outputs["query_output"] = tf.transpose(output_g, [1, 0, 2])
        return outputs

    def get_embedding_table(self):
        """The ``[V, D]`` `lookup_table` variable (tied to the LM head)."""
        return self.lookup_table

    def get_config(self):
        return {"config": self.config.to_dict(), "run_config": self.run_config.to_dict(),
                "with_mask_emb": self.with_mask_emb, "recompute_grad": self.recompute_grad,
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(XLNetConfig.from_dict(config["config"]), RunConfig(**config["run_config"]),
                   with_mask_emb=config.get("with_mask_emb", False),
                   recompute_grad=config.get("recompute_grad", False),
                   name=config.get("name", "transformer"))


# ------------------------------------------------------------------------------------------
# Losses (function_builder.py / modeling.py)
# ------------------------------------------------------------------------------------------

def lm_loss(logits, target, target_mask=None):
    """Per-token cross entropy and its masked mean (original `lm_loss` + `two_stream_loss`).

    Args:
      logits: float ``[B, P, V]``; target: int ``[B, P]``; target_mask: float ``[B, P]``
        (1 = real target) or None (all real).

    Returns:
      ``(per_token_loss [B, P] float32, total_loss scalar float32)`` with
      ``total = sum(loss * mask) / sum(mask)``.
    """
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=tf.cast(target, tf.int32), logits=tf.cast(logits, tf.float32))
    if target_mask is None:
        return loss, tf.reduce_mean(loss)
    target_mask = tf.cast(target_mask, tf.float32)
    return loss, tf.reduce_sum(loss * target_mask) / tf.reduce_sum(target_mask)


def classification_loss(logits, labels, n_class: int):
    """``-sum(log_softmax(logits) * one_hot(label))`` per example and its mean (spec 3.15).

    Args:
      logits: float ``[B, n_class]``; labels: int ``[B]``.

    Returns:
      ``(per_example_loss [B], total_loss scalar)``, float32.
    """
    one_hot = tf.one_hot(tf.cast(labels, tf.int32), n_class, dtype=tf.float32)
    per_example = -tf.reduce_sum(tf.nn.log_softmax(tf.cast(logits, tf.float32), -1) * one_hot, -1)
    return per_example, tf.reduce_mean(per_example)


def regression_loss(logits, labels):
    """``(logit - label)^2`` per example and its mean (spec 3.15).

    Args:
      logits: float ``[B]`` (squeezed); labels: float ``[B]``.

    Returns:
      ``(per_example_loss [B], total_loss scalar)``, float32.
    """
    per_example = tf.square(tf.cast(logits, tf.float32) - tf.cast(labels, tf.float32))
    return per_example, tf.reduce_mean(per_example)


# ------------------------------------------------------------------------------------------
# Task models
# ------------------------------------------------------------------------------------------

class XLNetPretrainingModel(keras.Model):
    """Two-stream XLNet with the tied LM head (original `function_builder.two_stream_loss`).

    Holds :attr:`xlnet` (an :class:`XLNetModel` with `mask_emb`) and :attr:`lm_head`
    (`model/lm_loss/bias`).

    Call args:
      features: dict of batch-major tensors as the pretraining input pipeline yields them:
        ``input_k`` int ``[B, L]``, ``seg_id`` int ``[B, L]``, ``perm_mask`` float
        ``[B, L, L]``, ``target_mapping`` float ``[B, P, L]``, ``input_q`` float ``[B, L]``,
        ``target`` int ``[B, P]``, ``target_mask`` float ``[B, P]``.
      mems: list of n_layer ``[B, M, D]`` or None.
      training: enables dropout.

    Returns:
      dict: ``query_output [B, P, D]``, ``logits [B, P, V]``, ``per_token_loss [B, P]``,
      ``total_loss`` scalar, ``new_mems`` (list of ``[B, M', D]``).
    """

    def __init__(self, config: XLNetConfig, run_config: Optional[RunConfig] = None, **kwargs):
        kwargs.setdefault("name", "model")
        super().__init__(**kwargs)
        self.xlnet = XLNetModel(config, run_config, with_mask_emb=True)
        self.lm_head = LMHead(config.n_token)

    def call(self, features, mems=None, training=None):
        inputs = {"input_ids": features["input_k"], "segment_ids": features["seg_id"],
                  "perm_mask": features["perm_mask"], "target_mapping": features["target_mapping"],
                  "input_q": features["input_q"]}
        if mems is not None:
            inputs["mems"] = mems
        out = self.xlnet(inputs, training=training)
        logits = self.lm_head(out["query_output"], self.xlnet.lookup_table)
        per_token, total = lm_loss(logits, features["target"], features.get("target_mask"))
        return {"query_output": out["query_output"], "logits": logits,
                "per_token_loss": per_token, "total_loss": total, "new_mems": out["new_mems"]}


def classification_scope(task_name: Optional[str] = None, cls_scope: Optional[str] = None,
                         is_regression: bool = False) -> str:
    """The original head scope under `model/` (spec 3.15).

    ``classification_{cls_scope}`` if ``cls_scope`` is non-empty, else
    ``classification_{task_name.lower()}``; regression: ``regression_{task_name.lower()}``
    (cls_scope ignored; e.g. ``regression_sts-b``).

    Raises:
      ValueError: neither name is given.
    """
    if is_regression:
        if not task_name:
            raise ValueError("regression head needs task_name (scope regression_<task>)")
        return f"regression_{task_name.lower()}"
    if cls_scope:
        return f"classification_{cls_scope}"
    if not task_name:
        raise ValueError("classification head needs cls_scope or task_name")
    return f"classification_{task_name.lower()}"


class XLNetClassifier(keras.Model):
    """XLNet + sequence summary + classification or regression head (spec 3.14, 3.15).

    Mirrors `get_classification_loss` / `get_regression_loss` of the original
    `function_builder.py`. Holds :attr:`xlnet`, :attr:`sequence_summary` (scope
    `model/sequnece_summary`) and :attr:`head` (scope `model/classification_<x>` or
    `model/regression_<task>`, layer `logit`).

    Args:
      config, run_config: as :class:`XLNetModel` (fine-tuning: no memory).
      n_class: number of labels (ignored for regression, which has 1 output).
      summary_type: ``last`` (default of run_classifier), ``first``, ``mean``, ``attn``.
      use_summ_proj: tanh projection `summary` after the summary.
      task_name, cls_scope, is_regression: name the head (:func:`classification_scope`).

    Call args:
      inputs: dict with ``input_ids``, ``segment_ids``, ``input_mask`` (``[B, L]``; mask 1 =
        padding).
      training: enables dropout.

    Returns:
      dict: ``logits`` float ``[B, n_class]`` (regression: ``[B]``), ``pooled_output``
      ``[B, D]``, ``sequence_output`` ``[B, L, D]``.
    """

    def __init__(self, config: XLNetConfig, run_config: Optional[RunConfig] = None,
                 n_class: int = 2, summary_type: str = "last", use_summ_proj: bool = True,
                 task_name: Optional[str] = None, cls_scope: Optional[str] = None,
                 is_regression: bool = False, **kwargs):
        kwargs.setdefault("name", "model")
        super().__init__(**kwargs)
        run_config = run_config or RunConfig()
        self.xlnet = XLNetModel(config, run_config)
        self.n_class = 1 if is_regression else n_class
        self.is_regression = is_regression
        self.sequence_summary = SequenceSummary(config.d_model, config.n_head, config.d_head, summary_type,
                                       use_summ_proj, run_config.dropout, run_config.dropatt,
                                       self.xlnet.initializer)
        self.head = LogitHead(self.n_class, config.d_model,
                              classification_scope(task_name, cls_scope, is_regression),
                              self.xlnet.initializer)

    def call(self, inputs, training=None):
        if training is None:
            training = self.xlnet.run_config.is_training
        out = self.xlnet(inputs, training=training)
        pooled = self.sequence_summary(out["sequence_output"], inputs.get("input_mask"), training=training)
        logits = self.head(pooled)
        if self.is_regression:
            logits = tf.squeeze(logits, axis=-1)
        return {"logits": logits, "pooled_output": pooled,
                "sequence_output": out["sequence_output"]}

    def task_loss(self, logits, labels):
        """``(per_example_loss [B], total_loss)``: cross entropy, or squared error, in float32
        (``logits`` of a ``mixed_bfloat16`` model are cast first)."""
        logits = tf.cast(logits, tf.float32)
        if self.is_regression:
            return regression_loss(logits, labels)
        return classification_loss(logits, labels, self.n_class)
