"""`AlbertPretrainer`: :class:`AlbertModel` with its masked-LM and sentence-order heads.

The model of the original ALBERT ``run_pretraining.py`` ``model_fn``: ``AlbertModel`` (scope
`bert`), ``get_masked_lm_output`` and ``get_sentence_order_output`` (scope `cls`); total
loss = masked LM + sentence order. The outputs use BERT's pretrainer keys as well
(``nsp_log_probs`` = ``sop_log_probs``), so BERT's losses and eval sums
(`bert_tf.bert.pretrainer.pretraining_losses`) serve both: the SOP label is read from the
records' ``next_sentence_labels``, the name the original keeps for it.
"""

import collections

import keras
import tensorflow as tf

from bert_tf.albert.checkpoint_map import albert_model_map, pretraining_heads_map
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel, AlbertPretrainingHeads


class AlbertPretrainer(keras.Model):
    """ALBERT pre-training model.

    Args:
      config: an :class:`AlbertConfig`; use_one_hot_embeddings: the TPU lookup.

    Call args:
      features: dict with int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[B, S]`` and
        ``masked_lm_positions`` ``[B, K]`` (other keys ignored); training: dropout.

    Returns:
      dict with ``mlm_log_probs`` float32 ``[B*K, V]``, ``sop_log_probs`` and (the same
      tensor) ``nsp_log_probs`` float32 ``[B, 2]``.

    Raises:
      ConfigError: an invalid config.
    """

    def __init__(self, config: AlbertConfig, use_one_hot_embeddings: bool = False, **kwargs):
        kwargs.setdefault("name", "albert_pretrainer")
        super().__init__(**kwargs)
        self.config = config
        self.bert = AlbertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
        self.heads = AlbertPretrainingHeads(self.bert)

    def call(self, features, training=False):
        out = self.bert({"input_ids": features["input_ids"],
                         "input_mask": features["input_mask"],
                         "segment_ids": features["segment_ids"]}, training=training)
        heads = self.heads(out["sequence_output"], out["pooled_output"],
                           features["masked_lm_positions"])
        return {**heads, "nsp_log_probs": heads["sop_log_probs"]}

    def build_with_dummy_input(self) -> "AlbertPretrainer":
        """Creates every weight with a batch of one 2-token sequence; returns self."""
        ids = tf.zeros([1, 2], tf.int32)
        self({"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": ids,
              "masked_lm_positions": tf.zeros([1, 1], tf.int32)})
        return self

    def name_map(self) -> "collections.OrderedDict":
        """Original name -> variable: the `bert/*` names, then the 7 `cls/*` names."""
        table = albert_model_map(self.bert)
        table.update(pretraining_heads_map(self.heads))
        return table

    def get_config(self):
        return {"config": self.config.to_dict(),
                "use_one_hot_embeddings": self.bert.use_one_hot_embeddings, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(AlbertConfig.from_dict(config["config"]),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   name=config.get("name", "albert_pretrainer"))
