"""`AlbertPretrainer`: :class:`AlbertModel` with its masked-LM and sentence-order heads.

The model of the original ALBERT ``run_pretraining.py`` ``model_fn``: ``AlbertModel`` (scope
`bert`), ``get_masked_lm_output`` and ``get_sentence_order_output`` (scope `cls`); total
loss = masked LM + sentence order. The outputs use BERT's pretrainer keys as well
(``nsp_log_probs`` = ``sop_log_probs``), so BERT's losses and eval sums
(`bert_tf.bert.pretrainer.pretraining_losses`) serve both: the SOP label is read from the
records' ``next_sentence_labels``, the name the original keeps for it. The model is
`bert_tf.bert.pretrainer.BertPretrainer` with ALBERT's encoder, heads and name maps.
"""

from bert_tf.albert.checkpoint_map import albert_model_map, pretraining_heads_map
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel, AlbertPretrainingHeads
from bert_tf.bert.pretrainer import BertPretrainer


class AlbertPretrainer(BertPretrainer):
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

    config_class = AlbertConfig
    encoder_class = AlbertModel
    heads_class = AlbertPretrainingHeads
    encoder_map = staticmethod(albert_model_map)
    heads_map = staticmethod(pretraining_heads_map)
    default_name = "albert_pretrainer"

    def call(self, features, training=False):
        heads = super().call(features, training=training)
        return {**heads, "nsp_log_probs": heads["sop_log_probs"]}
