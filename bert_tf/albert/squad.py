"""ALBERT SQuAD models: the heads of the original google-research/albert ``squad_utils.py``.

* :class:`AlbertSquadV1` (``create_v1_model``): BERT's span head on the sequence output,
  ``cls/squad/output_weights [2, H]`` / ``cls/squad/output_bias [2]``, truncated normal with
  std 0.02 (not ``initializer_range``), zero bias; start / end logits ``[B, S]``.
* :class:`AlbertSquadV2` (``create_v2_model``): XLNet's heads
  (:class:`bert_tf.xlnet.squad.QAHeads`, same names at the top of the checkpoint:
  ``start_logits/dense``, ``end_logits/dense_0``, ``end_logits/LayerNorm``,
  ``end_logits/dense_1``, ``answer_class/dense_0``, ``answer_class/dense_1`` without bias),
  kernels truncated normal with std ``initializer_range`` (ALBERT's ``create_initializer``),
  dropout ``--dropout_prob`` after ``answer_class/dense_0``; the class token is position 0
  (``[CLS]``), where XLNet's is the last. Training: the end head sees the gold start;
  inference: beam of ``start_n_top`` starts x ``end_n_top`` ends.

Both take a dict of int32 ``[B, S]`` ``input_ids``, ``input_mask`` (1 real), ``segment_ids``
(v2 also ``p_mask`` ``[B, S]``, 1 = not an answer boundary, and in training
``start_positions`` ``[B]``) and own an :class:`AlbertModel` under scope ``bert``.
"""

from typing import Optional

import keras
import tensorflow as tf

from bert_tf.albert.checkpoint_map import albert_model_map
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.bert.model import encoder_inputs
from bert_tf.bert.squad import BertSquad, squad_loss
from bert_tf.training.precision import dtype_policy
from bert_tf.xlnet.checkpoint_map import qa_heads_map
from bert_tf.xlnet.squad import QAHeads, qa_loss

__all__ = ["AlbertSquadV1", "AlbertSquadV2", "qa_loss", "squad_loss"]


class AlbertSquadV1(BertSquad):
    """ALBERT encoder + the v1 span head (original ``create_v1_model``): BERT's
    :class:`bert_tf.bert.squad.BertSquad` (``cls/squad/output_weights [2, H]`` /
    ``output_bias``, truncated-normal(0.02)) on an :class:`AlbertModel` under scope ``bert``.

    Args:
      config: an :class:`AlbertConfig`; use_one_hot_embeddings: the TPU lookup (same numbers).

    Call returns ``start_logits``, ``end_logits`` float32 ``[B, S]``.

    Raises:
      ConfigError: an invalid config.
    """

    config_class = AlbertConfig

    def __init__(self, config: AlbertConfig, use_one_hot_embeddings: bool = False, **kwargs):
        kwargs.setdefault("name", "albert_squad_v1")
        super().__init__(config, use_one_hot_embeddings=use_one_hot_embeddings,
                         encoder=AlbertModel(config,
                                             use_one_hot_embeddings=use_one_hot_embeddings),
                         **kwargs)

    def encoder_name_map(self):
        """`bert/embeddings/*`, `bert/encoder/embedding_hidden_mapping_in/*`,
        `bert/encoder/transformer/group_<g>/inner_group_<k>/*`, `bert/pooler/dense/*`."""
        return albert_model_map(self.bert)


class AlbertSquadV2(keras.Model):
    """ALBERT encoder + the v2 start / end (beam) / answer-class heads (``create_v2_model``).

    Args:
      config: an :class:`AlbertConfig`. start_n_top, end_n_top: beam sizes (flags, 5 / 5).
      dropout_prob: ``--dropout_prob`` of the answer-class head (0.1).

    The heads are float32 under any ``--dtype`` (as BERT's SQuAD head).

    Call returns :class:`bert_tf.xlnet.squad.QAHeads`' dict (inference:
    ``start_top_log_probs``, ``start_top_index`` ``[B, k_s]``, ``end_top_log_probs``,
    ``end_top_index`` ``[B, k_s * k_e]``, ``cls_logits`` ``[B]``; training with
    ``start_positions``: ``start_log_probs``, ``end_log_probs`` ``[B, S]``, ``cls_logits``).

    Raises:
      ConfigError: an invalid config.
    """

    def __init__(self, config: AlbertConfig, start_n_top: int = 5, end_n_top: int = 5,
                 dropout_prob: float = 0.1, use_one_hot_embeddings: bool = False, **kwargs):
        kwargs.setdefault("name", "albert_squad_v2")
        super().__init__(**kwargs)
        self.config = config
        self.bert = AlbertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
        # float32 under --dtype=bfloat16 too, as BERT's SQuAD head: log-probs and null odds
        # not rounded to bfloat16 (ties and another n-best order in a user's test)
        with dtype_policy("float32"):
            self.qa_heads = QAHeads(config.hidden_size, dropout_prob, start_n_top, end_n_top,
                                    keras.initializers.TruncatedNormal(
                                        stddev=config.initializer_range))

    def call(self, features, training=False):
        sequence = self.bert(encoder_inputs(features), training=training)["sequence_output"]
        sequence = tf.cast(sequence, tf.float32)  # the heads' dtype
        cls_index = tf.zeros([tf.shape(sequence)[0]], tf.int32)  # [CLS] is position 0
        start_positions: Optional[tf.Tensor] = (features.get("start_positions") if training
                                                else None)
        return self.qa_heads(sequence, tf.cast(features["p_mask"], sequence.dtype), cls_index,
                             start_positions, training=training)

    def build_with_dummy_input(self, seq_length: int = 2) -> "AlbertSquadV2":
        ids = tf.zeros([1, seq_length], tf.int32)
        self({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": ids,
              "p_mask": tf.zeros_like(ids)})
        return self

    def name_map(self):
        """Original names: ``bert/*`` plus the 11 head names (``start_logits/dense/kernel``...)."""
        table = albert_model_map(self.bert)
        table.update(qa_heads_map(self.qa_heads))
        return table
