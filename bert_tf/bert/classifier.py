"""`BertClassifier`: the encoder plus the head of the original `run_classifier.py`.

The model owns a :class:`BertModel` (scope `bert`) and one :class:`TransposedOutput` head and
exposes :meth:`BertClassifier.name_map` (original checkpoint name -> variable) for checkpoint
I/O and the optimizer. Head names are the original's (spec `bert.md` 3.3, 8.6), so checkpoints
fine-tuned by the original code load here and the other way round: top-level
`output_weights [num_labels, H]`, `output_bias [num_labels]` (`run_classifier.create_model`),
dropout 0.1 on the pooled output in training, truncated-normal(0.02) init whatever
`initializer_range` says.

Inputs are dicts of int32 ``[batch_size, seq_length]`` `input_ids`, `input_mask`, `segment_ids`.
"""

import keras
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map, output_head_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import TransposedOutput, dropout
from bert_tf.bert.model import BertModel, build_task_model, encoder_inputs

CLASSIFIER_DROPOUT = 0.1  # hard-coded in the original create_model
CLASSIFIER_INIT_STDDEV = 0.02  # hard-coded in the original create_model


class BertClassifier(keras.Model):
    """Sentence(-pair) classifier or regressor on the pooled output (spec 8.6).

    Mirrors `create_model` of the original `run_classifier.py`.

    Args:
      config: the encoder's :class:`BertConfig`.
      num_labels: classes (1 for regression).
      is_regression: (bert_tf, for STS-B) a single score instead of class logits.
      use_one_hot_embeddings: the original TPU lookup (same numbers).
      encoder: (bert_tf) another encoder under scope `bert` with the same call contract
        (dict of inputs -> dict with ``pooled_output [B, H]``), e.g. ALBERT's
        (:class:`bert_tf.albert.classifier.AlbertClassifier`); default a :class:`BertModel`.
      feature_layers: (bert_tf, issue 26, ``--feature_layers``) negative encoder layer
        indexes: the head reads those layers' [CLS] vectors (``all_encoder_layers[i][:, 0]``)
        instead of the pooled output, combined by ``feature_combine``: ``"concat"``
        (``output_weights [num_labels, len(feature_layers) * H]``) or ``"sum"`` (``[.., H]``).
        None: the pooled output, as the original.

    Call returns a dict:
      ``logits`` float32 ``[B, num_labels]``; ``probabilities`` float32 ``[B, num_labels]``
      (softmax; for regression the raw score ``[B, 1]``).

    Raises:
      ConfigError: an invalid ``config`` (see :meth:`BertConfig.validate`).
    """

    config_class = BertConfig  # what from_config rebuilds the config with (ALBERT: its own)

    def __init__(self, config: BertConfig, num_labels: int, is_regression: bool = False,
                 use_one_hot_embeddings: bool = False, encoder=None, feature_layers=None,
                 feature_combine: str = "concat", **kwargs):
        super().__init__(**kwargs)
        self.feature_layers = tuple(feature_layers) if feature_layers else None
        self.feature_combine = feature_combine
        # (bert_tf, --freeze_encoder) the encoder runs without dropout while it is frozen
        self.encoder_dropout = True
        self.config = config
        self.num_labels = num_labels
        self.is_regression = is_regression
        self.bert = encoder if encoder is not None else BertModel(
            config, use_one_hot_embeddings=use_one_hot_embeddings)
        self.dropout = dropout(CLASSIFIER_DROPOUT)
        width = config.hidden_size
        if self.feature_layers and feature_combine == "concat":
            width *= len(self.feature_layers)
        # float32 under --dtype=bfloat16 too: logits and probabilities not rounded to bf16's
        # 8 significant bits (a [B, H] x [H, labels] product: no time to save)
        self.head = TransposedOutput(num_labels, width, CLASSIFIER_INIT_STDDEV,
                                     name="classifier", dtype="float32")
        # every weight of ours exists; the encoder builds its own (build_task_model)
        self.built = True

    def call(self, features, training=False):
        outputs = self.bert(encoder_inputs(features),
                            training=training and self.encoder_dropout)
        pooled = outputs["pooled_output"] if not self.feature_layers else \
            self.layer_features(outputs["all_encoder_layers"])
        logits = tf.cast(self.head(self.dropout(pooled, training=training)), tf.float32)
        probabilities = logits if self.is_regression else tf.nn.softmax(logits, axis=-1)
        return {"logits": logits, "probabilities": probabilities}

    def layer_features(self, all_layers):
        """float ``[B, k*H]`` (concat) or ``[B, H]`` (sum): the [CLS] vectors of
        ``feature_layers`` (BERT paper 5.3, feature-based), in the order given."""
        vectors = [all_layers[i][:, 0] for i in self.feature_layers]
        if self.feature_combine == "sum":
            return tf.add_n(vectors)
        return tf.concat(vectors, axis=-1)

    def build_with_dummy_input(self, seq_length: int = 2) -> "BertClassifier":
        """Creates every weight (:func:`bert_tf.bert.model.build_task_model`); returns self."""
        return build_task_model(self, seq_length)

    def name_map(self):
        """Original names: `bert/*` plus top-level `output_weights` / `output_bias`."""
        table = self.encoder_name_map()
        table.update(output_head_map(self.head))
        return table

    def encoder_name_map(self):
        """Original names of the encoder's variables (`bert/*`)."""
        return bert_model_map(self.bert)

    def get_config(self):
        """The constructor arguments (``config`` as its dict) and the model name."""
        return {"config": self.config.to_dict(), "num_labels": self.num_labels,
                "is_regression": self.is_regression,
                "use_one_hot_embeddings": self.bert.use_one_hot_embeddings, "name": self.name,
                "feature_layers": self.feature_layers, "feature_combine": self.feature_combine}

    @classmethod
    def from_config(cls, config):
        """Rebuilds (unbuilt, new weights) the model :meth:`get_config` describes."""
        return cls(cls.config_class.from_dict(config["config"]), config["num_labels"],
                   is_regression=config.get("is_regression", False),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   name=config.get("name"), feature_layers=config.get("feature_layers"),
                   feature_combine=config.get("feature_combine", "concat"))


def classifier_loss(logits, label_ids, is_regression=False, label_weights=None):
    """Per-example and mean loss of the classifier (original `run_classifier.create_model`).

    Classification: ``-sum(one_hot(label) * log_softmax(logits))``; regression: squared error.
    ``label_weights`` (the TPU padding examples' `is_real_example`) weight the mean when given.

    Args:
      logits: float32 ``[B, num_labels]``; label_ids: int32 ``[B]`` (float ``[B]`` for regression).

    Returns:
      (mean loss scalar, per-example loss ``[B]``).
    """
    if is_regression:
        per_example = tf.square(tf.reshape(logits, [-1]) - tf.cast(tf.reshape(label_ids, [-1]), tf.float32))
    else:
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        labels = tf.cast(tf.reshape(label_ids, [-1]), tf.int32)
        per_example = -tf.reduce_sum(tf.one_hot(labels, tf.shape(logits)[-1]) * log_probs, axis=-1)
    if label_weights is None:
        return tf.reduce_mean(per_example), per_example
    w = tf.cast(tf.reshape(label_weights, [-1]), tf.float32)
    return tf.reduce_sum(per_example * w) / tf.maximum(tf.reduce_sum(w), 1e-12), per_example


def classifier_loss_fn(regression: bool):
    """The training loss ``loss_fn(model, features, labels)`` of a classifier run (BERT's or
    ALBERT's): :func:`bert_tf.bert.classifier.classifier_loss` of the model's ``logits``
    float32 ``[B, num_labels]`` in training mode (dropout), a float32 scalar (batch mean)."""
    def loss_fn(model_, features, labels):
        logits = model_(features, training=True)["logits"]
        return classifier_loss(logits, labels, is_regression=regression)[0]

    return loss_fn
