"""Keras layers of BERT: weights and math only (spec `bert.md` 2.3-2.12).

Each layer mirrors one TF1 variable scope of the original `modeling.py` /
`run_pretraining.py`; the weight shapes and layouts are the original's so checkpoints map
one to one (the name table is `bert_tf/bert/checkpoint_map.py`):

* kernels are ``[in, out]`` (y = x W + b), except the `output_weights` of the NSP, classifier
  and SQuAD heads, which are ``[out, in]`` and used transposed (:class:`TransposedOutput`);
* LayerNorm normalizes the last axis with population variance and epsilon 1e-12;
* GELU is the tanh approximation; the attention mask adds -10000 at padded keys.

Shapes: B = batch_size, S = seq_length, H = hidden_size, N = num_attention_heads,
d = H / N, I = intermediate_size, V = vocab_size, K = max_predictions_per_seq.
"""

import math

import keras
import tensorflow as tf

from bert_tf.bert.config import GELU_EXACT
from bert_tf.dropout import built_dropout as dropout
from bert_tf.fused_layer_norm import normalize
from bert_tf.training.precision import matmul_weight_dtype

LAYER_NORM_EPSILON = 1e-12
MASK_ADDER = -10000.0


def gelu(x):
    """GELU, tanh approximation (original `modeling.gelu` since 2019-02-07; spec 2.7)."""
    return tf.nn.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU, exact form ``x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))`` (HF ``"gelu"``, torch
    ``nn.GELU()``); bert_tf's ``hidden_act = "gelu_exact"``, not an original value."""
    return tf.nn.gelu(x, approximate=False)


def get_activation(name):
    """Maps an activation name to a function (original `modeling.get_activation`).

    Non-strings are returned unchanged; None, "" and "linear" mean no activation; "relu",
    "gelu" (tanh approximation) and "tanh" are matched case-insensitively, as the original;
    bert_tf adds "gelu_exact" (:func:`gelu_exact`), which the original rejects.

    Raises:
      ValueError: any other string ("Unsupported activation: ...").
    """
    if not isinstance(name, str):
        return name
    if not name:
        return None
    act = name.lower()
    if act == "linear":
        return None
    if act == "relu":
        return tf.nn.relu
    if act == "gelu":
        return gelu
    if act == "tanh":
        return tf.tanh
    if act == GELU_EXACT:
        return gelu_exact
    raise ValueError(f"Unsupported activation: {act}")


def create_initializer(initializer_range=0.02):
    """Truncated normal(stddev) with redraws beyond 2 stddev, as TF1's initializer."""
    return keras.initializers.TruncatedNormal(stddev=initializer_range)


def layer_norm(name):
    """LayerNorm over the last axis, epsilon 1e-12 (TF1 `contrib.layers.layer_norm`)."""
    return keras.layers.LayerNormalization(axis=-1, epsilon=LAYER_NORM_EPSILON, name=name)


def dense(units, initializer_range, activation=None, name=None):
    """A dense layer with a truncated-normal kernel ``[in, units]`` and zero bias.

    Its weights are float32 (the policy's), or bfloat16 / float16 in a model built to predict
    only (:func:`bert_tf.training.precision.matmul_weight_dtype`, bert_tf): cast once at the
    restore instead of on every call."""
    weight_dtype = matmul_weight_dtype()
    return keras.layers.Dense(units, activation=activation, name=name,
                              kernel_initializer=create_initializer(initializer_range),
                              **({"dtype": weight_dtype} if weight_dtype else {}))


def dense_2d(layer, x):
    """Applies a built Keras ``Dense`` to a 2-D ``[M, in]`` tensor as one fused matmul + bias.

    Same weights and numbers as ``layer(x)``; on 3-D input Keras goes through ``tensordot``
    and a separate add, which the grappler cannot fuse. The original `modeling.py` reshapes to
    ``[B*S, H]`` (`reshape_to_matrix`) for the same reason.

    Args:
      layer: a built ``keras.layers.Dense`` (kernel ``[in, out]``, bias ``[out]``).
      x: float ``[M, in]``.

    Returns:
      float ``[M, out]`` in ``x.dtype``: ``activation(x @ kernel + bias)``.
    """
    kernel = tf.cast(tf.convert_to_tensor(layer.kernel), x.dtype)
    y = tf.matmul(x, kernel)
    if layer.use_bias:
        y = tf.nn.bias_add(y, tf.cast(tf.convert_to_tensor(layer.bias), x.dtype))
    return layer.activation(y)


class BertEmbeddings(keras.layers.Layer):
    """Word + segment + position embeddings, LayerNorm, dropout (scope `bert/embeddings`).

    Call args:
      input_ids: int32 ``[B, S]``.
      segment_ids: int32 ``[B, S]`` (token type ids), values in ``[0, T)``.
      training: bool, enables dropout.

    Returns:
      float32 ``[B, S, H]`` (the variable dtype, also under ``mixed_bfloat16``):
      ``Dropout(LN(word + type + position))`` (spec 2.3).

    Raises:
      ValueError: S > max_position_embeddings (the original asserts S <= P).
    """

    def __init__(self, vocab_size, hidden_size, type_vocab_size, max_position_embeddings,
                 initializer_range=0.02, hidden_dropout_prob=0.1, use_one_hot_embeddings=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.type_vocab_size = type_vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.initializer_range = initializer_range
        self.hidden_dropout_prob = hidden_dropout_prob
        self.use_one_hot_embeddings = use_one_hot_embeddings
        init = create_initializer(initializer_range)
        # autocast=False: under mixed_bfloat16 a call reads the float32 tables and gathers
        # B*S rows, instead of casting the whole [V, H] table to bfloat16 on every call; the
        # sum and LayerNorm run in float32 and only the result is cast (see `call`)
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(vocab_size, hidden_size), initializer=init,
            autocast=False)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(type_vocab_size, hidden_size), initializer=init,
            autocast=False)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(max_position_embeddings, hidden_size),
            initializer=init, autocast=False)
        self.layer_norm = layer_norm("LayerNorm")
        self.layer_norm.build((None, None, hidden_size))
        self.dropout = dropout(hidden_dropout_prob)
        self.built = True  # every weight exists (see `dropout`)

    def call(self, input_ids, segment_ids, training=False):
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                f"seq_length {seq_length} is longer than max_position_embeddings "
                f"{self.max_position_embeddings}")
        table = tf.convert_to_tensor(self.word_embeddings)  # float32 [V, H]
        if self.use_one_hot_embeddings:  # a [B*S, V] x [V, H] matmul: in the compute dtype
            dtype = self.compute_dtype
            word = tf.einsum("bsv,vh->bsh", tf.one_hot(input_ids, self.vocab_size, dtype=dtype),
                             tf.cast(table, dtype))
            word = tf.cast(word, table.dtype)
        else:
            word = tf.gather(table, input_ids)
        # The original always looks up token types with a one-hot matmul: the same numbers as
        # a gather, and a dense gradient, which clipping by global norm takes as it is (a
        # gather's IndexedSlices would count each of the B*S rows; issue 27).
        type_table = tf.convert_to_tensor(self.token_type_embeddings)
        token_type = tf.einsum("bst,th->bsh", tf.one_hot(segment_ids, self.type_vocab_size,
                                                         dtype=type_table.dtype), type_table)
        position = tf.convert_to_tensor(self.position_embeddings)[: tf.shape(input_ids)[1]]
        x = word + token_type + position[tf.newaxis]  # float32 [B, S, H]
        # float32 out in every policy: under mixed_bfloat16 the residual stream stays float32
        # (see TransformerBlock); each block casts its matmul inputs to bfloat16
        x = normalize(self.layer_norm, x, training=training, out_dtype=self.variable_dtype)
        return self.dropout(x, training=training)

    def get_config(self):
        config = super().get_config()
        config.update(vocab_size=self.vocab_size, hidden_size=self.hidden_size,
                      type_vocab_size=self.type_vocab_size,
                      max_position_embeddings=self.max_position_embeddings,
                      initializer_range=self.initializer_range,
                      hidden_dropout_prob=self.hidden_dropout_prob,
                      use_one_hot_embeddings=self.use_one_hot_embeddings)
        return config


def attention_mask_adder(input_mask, dtype=tf.float32):
    """``(1 - input_mask) * -10000`` shaped ``[B, 1, 1, T]`` (spec 2.4).

    Args:
      input_mask: int ``[B, T]``, 1 for real tokens and 0 for padding.

    Only keys are masked; padded query rows are still computed, as in the original.
    """
    mask = tf.cast(input_mask, dtype)[:, tf.newaxis, tf.newaxis, :]
    return (1.0 - mask) * MASK_ADDER


class SelfAttention(keras.layers.Layer):
    """Multi-head scaled dot-product self-attention (scope `attention/self`, spec 2.5).

    Weights: `query`, `key`, `value` dense layers with kernels ``[H, N*d]``.

    Call args:
      hidden_states: float ``[B, S, H]``.
      mask_adder: float ``[B, 1, 1, S]`` from :func:`attention_mask_adder`.
      training: enables dropout on the attention probabilities.

    Returns:
      context: float ``[B, S, H]`` (heads concatenated, head n in columns n*d..(n+1)*d-1).
    """

    def __init__(self, hidden_size, num_attention_heads, initializer_range=0.02,
                 attention_probs_dropout_prob=0.1, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.size_per_head = hidden_size // num_attention_heads
        self.initializer_range = initializer_range
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.query = dense(hidden_size, initializer_range, name="query")
        self.key = dense(hidden_size, initializer_range, name="key")
        self.value = dense(hidden_size, initializer_range, name="value")
        for d in (self.query, self.key, self.value):
            d.build((None, None, hidden_size))
        self.dropout = dropout(attention_probs_dropout_prob)
        self.built = True  # every weight exists; TransformerBlock calls attend_2d directly

    def _split_heads(self, x, batch, seq):
        """``[B*S, H]`` -> ``[B, N, S, d]`` (head n = columns n*d..(n+1)*d-1)."""
        x = tf.reshape(x, [batch, seq, self.num_attention_heads, self.size_per_head])
        return tf.transpose(x, [0, 2, 1, 3])

    def call(self, hidden_states, mask_adder, training=False):
        shape = tf.shape(hidden_states)
        context = self.attend_2d(tf.reshape(hidden_states, [-1, self.hidden_size]), shape[0],
                                 shape[1], mask_adder, training=training)
        return tf.reshape(context, [shape[0], shape[1], self.hidden_size])  # [B, F, H]

    def attend_2d(self, hidden_2d, batch, seq, mask_adder, training=False):
        """The attention on a ``[B*S, H]`` matrix (rows batch-major), as the original's
        `attention_layer` runs it: 2-D projections with fused bias, transpose + batched matmul.

        Args:
          hidden_2d: float ``[B*S, H]``; batch, seq: B and S (ints or scalar tensors);
          mask_adder: float ``[B, 1, 1, S]``; training: enables dropout.

        Returns:
          context: float ``[B*S, H]`` (heads concatenated).
        """
        # Shape letters (as the original `attention_layer`):
        #   B = batch size, F = "from" (query) positions, T = "to" (key) positions
        #   (F = T = seq_length in self-attention), N = num_attention_heads,
        #   d = size_per_head, H = N * d = hidden_size.
        q = self._split_heads(dense_2d(self.query, hidden_2d), batch, seq)  # [B, N, F, d]
        k = self._split_heads(dense_2d(self.key, hidden_2d), batch, seq)  # [B, N, T, d]
        v = self._split_heads(dense_2d(self.value, hidden_2d), batch, seq)  # [B, N, T, d]
        scores = tf.matmul(q, k, transpose_b=True)  # [B, N, F, T]
        scores = scores * (1.0 / math.sqrt(float(self.size_per_head)))  # [B, N, F, T]
        scores = scores + tf.cast(mask_adder, scores.dtype)  # [B, N, F, T]
        probs = tf.nn.softmax(scores, axis=-1)  # [B, N, F, T], sums to 1 over T
        probs = self.dropout(probs, training=training)  # [B, N, F, T]
        context = tf.matmul(probs, v)  # [B, N, F, d]
        context = tf.transpose(context, [0, 2, 1, 3])  # [B, F, N, d]
        return tf.reshape(context, [-1, self.hidden_size])  # [B*F, H]

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_attention_heads=self.num_attention_heads,
                      initializer_range=self.initializer_range,
                      attention_probs_dropout_prob=self.attention_probs_dropout_prob)
        return config


class TransformerBlock(keras.layers.Layer):
    """One post-LayerNorm encoder block (scope `bert/encoder/layer_k`, spec 2.6).

    ``a = LN(Dropout(Dense_H(SelfAttention(x))) + x)``;
    ``y = LN(Dropout(Dense_H(act(Dense_I(a)))) + a)``.

    Under ``mixed_bfloat16`` (bert_tf, beyond the original) the residual stream stays in
    ``hidden_states``' dtype, float32 from :class:`BertEmbeddings`: the attention and the FFN
    run in bfloat16 on a bfloat16 copy of their input, and their outputs are added to the
    float32 residual and normalized in float32, as ``torch.autocast`` runs HF's BERT. The
    bfloat16 residual of Keras' policy moved the real MiniLM's outputs about ten times as far
    from float32.

    Call args:
      hidden_states: float ``[B, S, H]`` (float32, or the compute dtype);
      mask_adder: ``[B, 1, 1, S]``; training: bool.

    Returns:
      ``[B, S, H]`` in ``hidden_states``' dtype.
    """

    def __init__(self, hidden_size, num_attention_heads, intermediate_size, hidden_act="gelu",
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        # autocast=False: a float32 residual stream stays float32 under mixed_bfloat16
        kwargs.setdefault("autocast", False)
        super().__init__(**kwargs)
        self._config = dict(hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                            intermediate_size=intermediate_size, hidden_act=hidden_act,
                            hidden_dropout_prob=hidden_dropout_prob,
                            attention_probs_dropout_prob=attention_probs_dropout_prob,
                            initializer_range=initializer_range)
        self.attention = SelfAttention(hidden_size, num_attention_heads, initializer_range,
                                       attention_probs_dropout_prob, name="self")
        self.attention_output = dense(hidden_size, initializer_range, name="attention_output_dense")
        self.attention_output.build((None, None, hidden_size))
        self.attention_layer_norm = layer_norm("attention_output_LayerNorm")
        self.attention_layer_norm.build((None, None, hidden_size))
        self.intermediate = dense(intermediate_size, initializer_range,
                                  activation=get_activation(hidden_act), name="intermediate_dense")
        self.intermediate.build((None, None, hidden_size))
        self.output_dense = dense(hidden_size, initializer_range, name="output_dense")
        self.output_dense.build((None, None, intermediate_size))
        self.output_layer_norm = layer_norm("output_LayerNorm")
        self.output_layer_norm.build((None, None, hidden_size))
        self.dropout = dropout(hidden_dropout_prob)
        self.built = True  # every weight exists (see `dropout`)

    def call(self, hidden_states, mask_adder, training=False):
        # on [B*S, H] rows, as the original's transformer_model: every dense is one fused
        # matmul + bias (no tensordot)
        shape = tf.shape(hidden_states)
        hidden_size = self._config["hidden_size"]
        compute, residual = self.compute_dtype, hidden_states.dtype  # bf16 / f32 under mixed
        x = tf.reshape(hidden_states, [-1, hidden_size])  # [B*S, H] residual dtype
        attention = self.attention.attend_2d(tf.cast(x, compute), shape[0], shape[1],
                                             mask_adder, training=training)  # [B*S, H] compute
        attention = self.dropout(dense_2d(self.attention_output, attention), training=training)
        attention = normalize(self.attention_layer_norm, tf.cast(attention, residual) + x,
                              training, out_dtype=residual)  # [B*S, H] residual dtype
        intermediate = dense_2d(self.intermediate, tf.cast(attention, compute))  # [B*S, I]
        output = self.dropout(dense_2d(self.output_dense, intermediate), training=training)
        output = normalize(self.output_layer_norm, tf.cast(output, residual) + attention,
                           training, out_dtype=residual)  # [B*S, H] residual dtype
        return tf.reshape(output, [shape[0], shape[1], hidden_size])

    def get_config(self):
        config = super().get_config()
        config.update(self._config)
        return config


class TransposedOutput(keras.layers.Layer):
    """Logits from ``output_weights [num_outputs, H]`` and ``output_bias [num_outputs]``.

    The layout of the NSP head (`cls/seq_relationship`), the classifier head (top-level
    `output_weights`/`output_bias` in `run_classifier.py`) and the SQuAD head (`cls/squad`):
    ``logits = x @ output_weights^T + output_bias`` (spec 2.12, 8.6, 9.4).

    Call args:
      x: float ``[..., H]``.

    Returns:
      float ``[..., num_outputs]``.
    """

    def __init__(self, num_outputs, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_outputs = num_outputs
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.output_weights = self.add_weight(
            name="output_weights", shape=(num_outputs, hidden_size),
            initializer=create_initializer(initializer_range))
        self.output_bias = self.add_weight(name="output_bias", shape=(num_outputs,),
                                           initializer="zeros")
        self.built = True  # every weight exists (see `dropout`)

    def call(self, x):
        w = tf.cast(tf.convert_to_tensor(self.output_weights), x.dtype)
        b = tf.cast(tf.convert_to_tensor(self.output_bias), x.dtype)
        return tf.einsum("...h,oh->...o", x, w) + b

    def get_config(self):
        config = super().get_config()
        config.update(num_outputs=self.num_outputs, hidden_size=self.hidden_size,
                      initializer_range=self.initializer_range)
        return config


class MaskedLMHead(keras.layers.Layer):
    """Masked-LM head with weights tied to the word embeddings (scope `cls/predictions`).

    Mirrors `get_masked_lm_output` of the original `run_pretraining.py` (spec 2.11):
    gather at positions, Dense(H, hidden_act) + LayerNorm (`transform/...`), then
    ``logits = h @ word_embeddings^T + output_bias``.

    Args:
      embeddings: the model's :class:`BertEmbeddings` (its `word_embeddings` is shared).

    Call args:
      sequence_output: float ``[B, S, H]``.
      masked_lm_positions: int32 ``[B, K]``.

    Returns:
      log_probs: float32 ``[B*K, V]`` (log-softmax over the vocab), row r = (r // K, r % K).
    """

    def __init__(self, embeddings, hidden_size, hidden_act="gelu", initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.transform = dense(hidden_size, initializer_range,
                               activation=get_activation(hidden_act), name="transform_dense")
        self.transform.build((None, hidden_size))
        self.transform_layer_norm = layer_norm("transform_LayerNorm")
        self.transform_layer_norm.build((None, hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(embeddings.vocab_size,),
                                           initializer="zeros")
        self.built = True  # every weight exists (see `dropout`)

    def call(self, sequence_output, masked_lm_positions):
        hidden = gather_indexes(sequence_output, masked_lm_positions)
        hidden = self.transform_layer_norm(self.transform(hidden))
        table = tf.cast(tf.convert_to_tensor(self.embeddings.word_embeddings), hidden.dtype)
        logits = tf.matmul(hidden, table, transpose_b=True)
        logits = logits + tf.cast(tf.convert_to_tensor(self.output_bias), logits.dtype)
        return tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)


def gather_indexes(sequence_tensor, positions):
    """Vectors at ``positions`` (original `gather_indexes`).

    Args:
      sequence_tensor: float ``[B, S, H]``.
      positions: int32 ``[B, K]``.

    Returns:
      float ``[B*K, H]``, rows ordered batch-major.
    """
    hidden = sequence_tensor.shape[-1]
    gathered = tf.gather(sequence_tensor, tf.cast(positions, tf.int32), batch_dims=1)
    return tf.reshape(gathered, [-1, hidden])
