"""`BertSquad`: the encoder plus the span head of the original `run_squad.py`.

The model owns a :class:`BertModel` (scope `bert`) and one :class:`TransposedOutput` head
`cls/squad/output_weights [2, H]`, `cls/squad/output_bias [2]` (`run_squad.create_model`, spec
`bert.md` 3.3, 9.4) applied to every position of the sequence output, truncated-normal(0.02)
init whatever `initializer_range` says. :meth:`BertSquad.name_map` gives original checkpoint
name -> variable, so checkpoints fine-tuned by the original code load here and the other way
round.

Inputs are dicts of int32 ``[batch_size, seq_length]`` `input_ids`, `input_mask`, `segment_ids`.
"""

import keras
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map, output_head_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.layers import TransposedOutput
from bert_tf.bert.model import BertModel, build_task_model, encoder_inputs

SQUAD_SCOPE = "cls/squad"
SQUAD_INIT_STDDEV = 0.02  # hard-coded in the original run_squad.create_model


class BertSquad(keras.Model):
    """Span start/end logits on every position (original `run_squad.create_model`, spec 9.4).

    Args:
      config: the encoder's :class:`BertConfig`.
      use_one_hot_embeddings: the original TPU lookup (same numbers).
      encoder: (bert_tf) another encoder under scope `bert` with the same call contract
        (dict of inputs -> dict with ``sequence_output [B, S, H]``), e.g. ALBERT's
        (:class:`bert_tf.albert.squad.AlbertSquadV1`); default a :class:`BertModel`.

    Call returns a dict of ``start_logits`` and ``end_logits``, float32 ``[B, S]``.

    Raises:
      ConfigError: an invalid ``config`` (see :meth:`BertConfig.validate`).
    """

    config_class = BertConfig  # what from_config rebuilds the config with (ALBERT: its own)

    def __init__(self, config: BertConfig, use_one_hot_embeddings: bool = False, encoder=None,
                 feature_layers=None, feature_combine: str = "concat", **kwargs):
        super().__init__(**kwargs)
        self.config = config
        # (bert_tf, issue 26) --feature_layers: the head reads those layers' per-token outputs
        # (concatenated: output_weights [2, k*H]; or summed); --freeze_encoder: no dropout
        self.feature_layers = tuple(feature_layers) if feature_layers else None
        self.feature_combine = feature_combine
        self.encoder_dropout = True
        self.bert = encoder if encoder is not None else BertModel(
            config, use_one_hot_embeddings=use_one_hot_embeddings)
        width = config.hidden_size
        if self.feature_layers and feature_combine == "concat":
            width *= len(self.feature_layers)
        # float32 under --dtype=bfloat16 too: start/end logits not rounded to bf16 (ties in the
        # n-best ranking, null-odds steps of 0.1-0.3 in the fresh-user test of 2026-12-02)
        self.head = TransposedOutput(2, width, SQUAD_INIT_STDDEV, name="squad", dtype="float32")

    def call(self, features, training=False):
        outputs = self.bert(encoder_inputs(features), training=training and self.encoder_dropout)
        sequence = outputs["sequence_output"]
        if self.feature_layers:
            layers = [outputs["all_encoder_layers"][i] for i in self.feature_layers]
            sequence = (tf.add_n(layers) if self.feature_combine == "sum"
                        else tf.concat(layers, axis=-1))
        logits = tf.cast(self.head(sequence), tf.float32)  # [B, S, 2]
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    def build_with_dummy_input(self, seq_length: int = 2) -> "BertSquad":
        """Creates every weight (:func:`bert_tf.bert.model.build_task_model`); returns self."""
        return build_task_model(self, seq_length)

    def encoder_name_map(self):
        """Original names of the encoder's variables (`bert/*`)."""
        return bert_model_map(self.bert)

    def name_map(self):
        """Original names: `bert/*` plus `cls/squad/output_weights` / `output_bias`."""
        table = self.encoder_name_map()
        table.update(output_head_map(self.head, SQUAD_SCOPE))
        return table

    def get_config(self):
        """The constructor arguments (``config`` as its dict) and the model name."""
        return {"config": self.config.to_dict(),
                "use_one_hot_embeddings": self.bert.use_one_hot_embeddings, "name": self.name,
                "feature_layers": self.feature_layers, "feature_combine": self.feature_combine}

    @classmethod
    def from_config(cls, config):
        """Rebuilds (unbuilt, new weights) the model :meth:`get_config` describes."""
        return cls(cls.config_class.from_dict(config["config"]),
                   use_one_hot_embeddings=config.get("use_one_hot_embeddings", False),
                   name=config.get("name"), feature_layers=config.get("feature_layers"),
                   feature_combine=config.get("feature_combine", "concat"))


def squad_loss(start_logits, end_logits, start_positions, end_positions):
    """``(CE(start) + CE(end)) / 2``, each the batch mean of ``-log_softmax[position]``
    (original `run_squad.model_fn`'s ``compute_loss``).

    Args: logits float32 ``[B, S]``; positions int32 ``[B]`` (0 = [CLS] for no answer).

    Returns: the float32 scalar loss.
    """
    def ce(logits, positions):
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        one_hot = tf.one_hot(tf.cast(tf.reshape(positions, [-1]), tf.int32), tf.shape(logits)[-1])
        return -tf.reduce_mean(tf.reduce_sum(one_hot * log_probs, axis=-1))

    return (ce(start_logits, start_positions) + ce(end_logits, end_positions)) / 2.0
