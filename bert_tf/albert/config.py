"""`AlbertConfig`: the `albert_config.json` of the original ALBERT release.

Mirrors `modeling.AlbertConfig` of google-research/albert: the constructor defaults are the
original's (those of `albert_xxlarge`: E 128, H 4096, 64 heads, I 16384, dropout 0,
`type_vocab_size` 2), `from_dict` keeps every key including unknown ones, `to_json_string`
writes 2-space indented, key-sorted JSON with a trailing newline (golden
`albert/model/albert_config.json` is such a file).

`down_scale_factor` is kept and written back but, as in the original `modeling.py`, no model
code reads it.
"""

import copy
import json
from typing import Any, Dict

from bert_tf.atomic_files import atomic_write_text
from bert_tf.errors import ConfigError
from bert_tf.json_files import read_json_object

_POSITIVE_INT_KEYS = ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers",
                      "num_hidden_groups", "inner_group_num", "num_attention_heads",
                      "intermediate_size", "max_position_embeddings", "type_vocab_size")


class AlbertConfig:
    """Configuration of an `AlbertModel` (keys of `albert_config.json`).

    Args:
      vocab_size: V, rows of the word-embedding table.
      embedding_size: E, width of the embeddings (factorised: E < H, projected to H by
        `embedding_hidden_mapping_in`; no projection when E == H).
      hidden_size: H, width of the encoder and the pooler.
      num_hidden_layers: L, layers run by the encoder.
      num_hidden_groups: G, parameter groups; layer l uses group
        ``int(l / L * G)`` (1 = every layer shares one group).
      num_attention_heads: N; H must be a multiple of N.
      intermediate_size: I, width of the feed-forward inner layer.
      inner_group_num: K, attention+FFN blocks run one after another inside each layer.
      down_scale_factor: kept for the file format; unused by the model (as the original).
      hidden_act: activation of the FFN and the MLM transform ("gelu" = tanh approximation,
        "relu", "tanh", "linear").
      hidden_dropout_prob: dropout on embeddings and residual branches (training only).
      attention_probs_dropout_prob: dropout on attention probabilities (training only).
      max_position_embeddings: P, rows of the position table = the largest seq_length.
      type_vocab_size: T, rows of the segment table.
      initializer_range: stddev of the truncated-normal initializer.
      **extra: unknown keys, kept and written back (the original keeps them too).
    """

    def __init__(self, vocab_size=None, embedding_size=128, hidden_size=4096,
                 num_hidden_layers=12, num_hidden_groups=1, num_attention_heads=64,
                 intermediate_size=16384, inner_group_num=1, down_scale_factor=1,
                 hidden_act="gelu", hidden_dropout_prob=0, attention_probs_dropout_prob=0,
                 max_position_embeddings=512, type_vocab_size=2, initializer_range=0.02,
                 **extra):
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_hidden_groups = num_hidden_groups
        self.num_attention_heads = num_attention_heads
        self.inner_group_num = inner_group_num
        self.down_scale_factor = down_scale_factor
        self.hidden_act = hidden_act
        self.intermediate_size = intermediate_size
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        for k, v in extra.items():
            setattr(self, k, v)

    @classmethod
    def from_dict(cls, json_object: Dict[str, Any]) -> "AlbertConfig":
        """Builds a config from a dict, keeping unknown keys (original `from_dict`)."""
        config = cls(vocab_size=None)
        for key, value in json_object.items():
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file: str) -> "AlbertConfig":
        """Reads `albert_config.json` and validates it.

        Raises:
          ConfigError: the file is missing, unreadable, not JSON, not an object, lacks
            `vocab_size`, or fails :meth:`validate` (names the file and the key).
        """
        obj = read_json_object(json_file, "ALBERT config")
        config = cls.from_dict(obj)
        if config.vocab_size is None:
            raise ConfigError(f"{json_file}: missing required key 'vocab_size'")
        config.validate(source=json_file)
        return config

    def validate(self, source: str = "albert config") -> None:
        """Checks sizes are positive ints and H % N == 0 (original `transformer_model` check).

        Raises:
          ConfigError: naming ``source`` and the key.
        """
        for key in _POSITIVE_INT_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{source}: '{key}' must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ConfigError(
                f"{source}: The hidden size ({self.hidden_size}) is not a multiple of the number "
                f"of attention heads ({self.num_attention_heads})")

    def group_of_layer(self, layer_idx: int) -> int:
        """The parameter group of layer ``layer_idx``: ``int(layer_idx / L * G)``.

        Source: `transformer_model` of the original `modeling.py` (golden README surprise 6).
        E.g. L 12, G 2: layers 0-5 -> group 0, 6-11 -> group 1; L 3, G 2: 0, 0, 1.
        """
        return int(layer_idx / self.num_hidden_layers * self.num_hidden_groups)

    @property
    def used_groups(self):
        """Sorted group ids that some layer uses (all of ``range(G)`` when G <= L); the
        original creates variables only for these."""
        return sorted({self.group_of_layer(i) for i in range(self.num_hidden_layers)})

    @property
    def size_per_head(self) -> int:
        """d = H / N."""
        return self.hidden_size // self.num_attention_heads

    def to_dict(self) -> Dict[str, Any]:
        """A deep copy of every attribute, unknown keys included."""
        return copy.deepcopy(self.__dict__)

    def to_json_string(self) -> str:
        """JSON with 2-space indent, sorted keys and a trailing newline (as the original)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path: str) -> None:
        """Writes :meth:`to_json_string` atomically."""
        atomic_write_text(path, self.to_json_string())

    def __eq__(self, other):
        return isinstance(other, AlbertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"AlbertConfig({self.to_dict()})"
