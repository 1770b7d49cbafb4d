"""The one ALBERT layer whose shapes differ from BERT's: the masked-LM head.

Everything else in ALBERT is BERT's math with other widths or other names, and is built from
`bert_tf.bert.layers` directly (see `bert_tf/albert/model.py`).

Shapes: B = batch_size, S = seq_length, H = hidden_size, E = embedding_size,
V = vocab_size, K = max_predictions_per_seq.
"""

import keras
import tensorflow as tf

from bert_tf.bert.layers import dense, gather_indexes, get_activation, layer_norm


class AlbertMaskedLMHead(keras.layers.Layer):
    """Masked-LM head projecting H -> E, decoder tied to the ``[V, E]`` word embeddings.

    Mirrors `get_masked_lm_output` of the original ALBERT `run_pretraining.py` (scope
    `cls/predictions`): gather at positions, ``Dense(E, hidden_act)`` (kernel ``[H, E]``) and
    LayerNorm (`transform/dense`, `transform/LayerNorm`), then
    ``logits = h @ word_embeddings^T + output_bias``, log-softmax over V.

    BERT's `MaskedLMHead` cannot be reused as is: its transform is built square
    (``[H, H]``), ALBERT's is ``[H, E]``.

    Args:
      embeddings: the model's `BertEmbeddings` (E wide); its `word_embeddings` is the decoder.
      hidden_size: H, width of ``sequence_output``.
      embedding_size: E, width of the transform and of the word embeddings.
      hidden_act: activation of the transform.
      initializer_range: stddev of the truncated-normal kernel initializer.

    Call args:
      sequence_output: float ``[B, S, H]``.
      masked_lm_positions: int32 ``[B, K]``.

    Returns:
      log_probs: float32 ``[B*K, V]``, row r = (batch row r // K, slot r % K).
    """

    def __init__(self, embeddings, hidden_size, embedding_size, hidden_act="gelu",
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_size = hidden_size
        self.embedding_size = embedding_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.transform = dense(embedding_size, initializer_range,
                               activation=get_activation(hidden_act), name="transform_dense")
        self.transform.build((None, hidden_size))
        self.transform_layer_norm = layer_norm("transform_LayerNorm")
        self.transform_layer_norm.build((None, embedding_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(embeddings.vocab_size,),
                                           initializer="zeros")

    def call(self, sequence_output, masked_lm_positions):
        hidden = gather_indexes(sequence_output, masked_lm_positions)  # [B*K, H]
        hidden = self.transform_layer_norm(self.transform(hidden))  # [B*K, E]
        table = tf.cast(tf.convert_to_tensor(self.embeddings.word_embeddings), hidden.dtype)
        logits = tf.matmul(hidden, table, transpose_b=True)  # [B*K, V]
        logits = logits + tf.cast(tf.convert_to_tensor(self.output_bias), logits.dtype)
        return tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)

    def get_config(self):
        # `embeddings` is a shared layer, not config: rebuild through AlbertPretrainingHeads.
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, embedding_size=self.embedding_size,
                      hidden_act=self.hidden_act, initializer_range=self.initializer_range)
        return config
