"""XLNet RACE model: 4-way multiple choice (original ``function_builder.get_race_loss``, spec
``xlnet.md`` 3.17).

A ``[B, 4 * S]`` feature is run as ``4 B`` sequences (choice index fastest); each is summarised
(:class:`bert_tf.xlnet.layers.SequenceSummary`, scope ``model/sequnece_summary``) and scored by
one dense unit (scope ``logits``, layer ``dense``, at the top of the checkpoint); the 4 scores
of a question are its logits.
"""

from typing import Optional

import keras
import tensorflow as tf

from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.layers import SequenceSummary, dense_layer
from bert_tf.xlnet.model import XLNetModel, classification_loss

NUM_CHOICES = 4


class XLNetRace(keras.Model):
    """XLNet + sequence summary + the RACE ``logits/dense`` layer.

    Args:
      config, run_config: as :class:`bert_tf.xlnet.model.XLNetModel` (fine-tuning: no memory).
      summary_type, use_summ_proj: the summary (run_race defaults ``last``, True).

    Call args:
      features: ``input_ids``, ``segment_ids`` int and ``input_mask`` float (1 = padding), each
        ``[B, 4 * S]`` (the 4 choices one after the other).
      training: enables dropout.

    Returns:
      dict: ``logits`` float ``[B, 4]``.
    """

    def __init__(self, config: XLNetConfig, run_config: Optional[RunConfig] = None,
                 summary_type: str = "last", use_summ_proj: bool = True, **kwargs):
        kwargs.setdefault("name", "xlnet_race")
        super().__init__(**kwargs)
        run_config = run_config or RunConfig()
        self.xlnet = XLNetModel(config, run_config)
        self.sequence_summary = SequenceSummary(
            config.d_model, config.n_head, config.d_head, summary_type, use_summ_proj,
            run_config.dropout, run_config.dropatt, self.xlnet.initializer)
        self.race_logits = dense_layer(1, config.d_model, self.xlnet.initializer, "logits_dense")
        self._summary_args = (summary_type, use_summ_proj)

    def call(self, features, training=None):
        if training is None:
            training = self.xlnet.run_config.is_training
        bsz = tf.shape(features["input_ids"])[0]

        def per_choice(x):                                       # [B, 4S] -> [4B, S]
            return tf.reshape(x, [bsz * NUM_CHOICES, -1])

        inputs = {k: per_choice(features[k]) for k in ("input_ids", "segment_ids", "input_mask")}
        out = self.xlnet(inputs, training=training)
        summary = self.sequence_summary(out["sequence_output"], inputs["input_mask"],
                                        training=training)       # [4B, D]
        logits = tf.reshape(self.race_logits(summary), [bsz, NUM_CHOICES])
        logits = tf.cast(logits, tf.float32)  # float32 also from a mixed_bfloat16 model
        return {"logits": logits}

    def task_loss(self, logits, labels):
        """``(per_example_loss [B], mean)``: ``-log_softmax(logits)[label]``."""
        return classification_loss(logits, labels, NUM_CHOICES)

    def get_config(self):
        return {"config": self.xlnet.config.to_dict(),
                "run_config": self.xlnet.run_config.to_dict(),
                "summary_type": self._summary_args[0], "use_summ_proj": self._summary_args[1],
                "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(XLNetConfig.from_dict(config["config"]), RunConfig(**config["run_config"]),
                   config["summary_type"], config["use_summ_proj"], name=config.get("name"))
