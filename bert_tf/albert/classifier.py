"""`AlbertClassifier`: ALBERT's encoder plus the head of the original ALBERT `classifier_utils.py`.

The head is BERT's (`bert_tf.bert.classifier.BertClassifier`): ALBERT's ``create_model`` has
the same top-level `output_weights [num_labels, H]` / `output_bias [num_labels]`, truncated-
normal(0.02) initialisation (not ``initializer_range``), zero bias, dropout 0.1 on the pooled
output in training, softmax probabilities (STS-B: the raw score, squared-error loss). Only the
encoder differs: an :class:`AlbertModel` under scope `bert`, named by
`bert_tf.albert.checkpoint_map`.

Inputs: dict of int32 ``[batch_size, seq_length]`` `input_ids`, `input_mask`, `segment_ids`.
Outputs: ``logits`` / ``probabilities`` float32 ``[batch_size, num_labels]``.
"""

from bert_tf.albert.checkpoint_map import albert_model_map
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.model import AlbertModel
from bert_tf.bert.classifier import BertClassifier, classifier_loss

__all__ = ["AlbertClassifier", "classifier_loss"]


class AlbertClassifier(BertClassifier):
    """ALBERT sentence(-pair) classifier or regressor (original ALBERT ``create_model``).

    Args:
      config: the encoder's :class:`AlbertConfig`.
      num_labels: classes (1 for regression); is_regression: STS-B.
      use_one_hot_embeddings: the original TPU lookup (same numbers).

    Raises:
      ConfigError: an invalid ``config``.
    """

    config_class = AlbertConfig

    def __init__(self, config: AlbertConfig, num_labels: int, is_regression: bool = False,
                 use_one_hot_embeddings: bool = False, **kwargs):
        # kwargs: BertClassifier's (feature_layers, feature_combine: bert_tf, issue 26)
        super().__init__(config, num_labels, is_regression=is_regression,
                         use_one_hot_embeddings=use_one_hot_embeddings,
                         encoder=AlbertModel(config,
                                             use_one_hot_embeddings=use_one_hot_embeddings),
                         **kwargs)

    def encoder_name_map(self):
        """`bert/embeddings/*`, `bert/encoder/embedding_hidden_mapping_in/*`,
        `bert/encoder/transformer/group_<g>/inner_group_<k>/*`, `bert/pooler/dense/*`."""
        return albert_model_map(self.bert)
