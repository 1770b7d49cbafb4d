"""`BertConfig`: the `bert_config.json` of the original release (spec `bert.md` 2.1).

Mirrors `modeling.BertConfig`: the constructor defaults are the original's (note
`type_vocab_size` 16), `from_dict` keeps every key including unknown ones (the multilingual
configs carry `pooler_*` and `directionality` keys), `to_json_string` writes 2-space indented,
key-sorted JSON with a trailing newline.
"""

import copy
import inspect
import json
import math
from typing import Any, Dict, Iterable


from bert_tf.errors import ConfigError, FlagError
from bert_tf.json_files import read_json_object, warn_unknown_keys

# bert_tf's hidden_act for the exact (erf) GELU of a converted HF model (issue 13). The
# original modeling.get_activation raises "Unsupported activation" on it: a config carrying it
# says plainly that the original code would not run this model as it was trained.
GELU_EXACT = "gelu_exact"

# The hidden_act values the model runs (lower case, as the original's get_activation matches
# them; "" / null mean no activation, as "linear").
HIDDEN_ACTS = ("gelu", "relu", "tanh", "linear", GELU_EXACT)

_KNOWN_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
               "intermediate_size", "hidden_act", "hidden_dropout_prob",
               "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
               "initializer_range")


class BertConfig:
    """Configuration of a `BertModel` (keys of `bert_config.json`).

    Args:
      vocab_size: V, rows of the word-embedding table.
      hidden_size: H, width of every layer.
      num_hidden_layers: L, number of transformer blocks.
      num_attention_heads: N; H must be a multiple of N.
      intermediate_size: I, width of the feed-forward inner layer.
      hidden_act: activation of the FFN and the MLM transform ("gelu" = tanh approximation,
        "relu", "tanh", "linear"; bert_tf's "gelu_exact" = the erf form, which the original
        code rejects, written only by ``python -m bert_tf.convert --hidden_act=source``).
      hidden_dropout_prob: dropout on embeddings and residual branches (training only).
      attention_probs_dropout_prob: dropout on attention probabilities (training only).
      max_position_embeddings: P, rows of the position table = the largest seq_length.
      type_vocab_size: T, rows of the segment table (16 by default as in the original; 2 in
        every released config).
      initializer_range: stddev of the truncated-normal initializer.
      **extra: unknown keys, kept and written back (the original keeps them too).
    """

    # Keys that must be positive integers (validate), and the file's name in messages.
    POSITIVE_INT_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers",
                         "num_attention_heads", "intermediate_size", "max_position_embeddings",
                         "type_vocab_size")
    FILE_KIND = "BERT config"
    # Keys a config file must hold (bert_tf; the original falls back to its constructor
    # defaults): the sizes, which every released bert_config.json holds. Without one the model
    # was silently built BERT-Base wide (768) or with 16 segment rows (the releases have 2).
    REQUIRED_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "type_vocab_size")
    # Keys the released files carry that no model code reads (multilingual / Chinese configs).
    RELEASED_EXTRA_KEYS = ("directionality", "pooler_fc_size", "pooler_num_attention_heads",
                           "pooler_num_fc_layers", "pooler_size_per_head", "pooler_type")

    def __init__(self, vocab_size=None, hidden_size=768, num_hidden_layers=12,
                 num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
                 hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
                 max_position_embeddings=512, type_vocab_size=16, initializer_range=0.02,
                 **extra):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        for k, v in extra.items():
            setattr(self, k, v)

    @classmethod
    def from_dict(cls, json_object: Dict[str, Any]) -> "BertConfig":
        """Builds a config from a dict, keeping unknown keys (original `from_dict`)."""
        config = cls(vocab_size=None)
        for key, value in json_object.items():
            config.__dict__[key] = value
        return config

    @classmethod
    def from_json_file(cls, json_file: str) -> "BertConfig":
        """Reads `bert_config.json`.

        bert_tf, beyond the original: a key of :attr:`REQUIRED_KEYS` missing is an error (the
        original builds its constructor default), and unknown keys are named in one warning
        (:func:`bert_tf.json_files.warn_unknown_keys`; the released files' extra keys do not
        warn). Missing keys outside :attr:`REQUIRED_KEYS` (activation, dropout, initializer
        range) take the original's defaults, which are the released files' values.

        Raises:
          ConfigError: the file is missing, unreadable, not JSON, not an object, lacks
            `vocab_size` or another of :attr:`REQUIRED_KEYS`, or a value is bad (names the
            file and the key).
        """
        obj = read_json_object(json_file, cls.FILE_KIND)
        albert_keys = [k for k in ("num_hidden_groups", "inner_group_num") if k in obj]
        if albert_keys and cls is BertConfig:  # AlbertConfig reads through here too
            raise ConfigError(f"{json_file}: this looks like an ALBERT config (has "
                              f"{', '.join(repr(k) for k in albert_keys)}): give it as "
                              "--albert_config_file")
        config = cls.from_dict(obj)
        if config.vocab_size is None:
            xlnet = ("; this looks like an XLNet config (has 'n_token'): give it as "
                     "--model_config_path" if "n_token" in obj else "")
            raise ConfigError(f"{json_file}: missing required key 'vocab_size'{xlnet}")
        missing = [k for k in cls.REQUIRED_KEYS if k not in obj]
        if missing:
            unknown = sorted(k for k in obj if k not in cls.known_keys())
            typo = (f"; it has the unknown key(s) {', '.join(repr(k) for k in unknown)} (a "
                    "typo?)" if unknown else "")
            raise ConfigError(
                f"{json_file}: missing required {cls.FILE_KIND} key(s) "
                f"{', '.join(repr(k) for k in missing)} (every released {cls.FILE_KIND} file "
                f"has them; bert_tf does not build the original's default sizes in their "
                f"place){typo}")
        config.validate(source=json_file)
        warn_unknown_keys(obj, cls.known_keys(), json_file, cls.FILE_KIND)
        return config

    @classmethod
    def known_keys(cls) -> frozenset:
        """The constructor's keys plus :attr:`RELEASED_EXTRA_KEYS` (no warning for these)."""
        params = inspect.signature(cls.__init__).parameters
        return frozenset(k for k, p in params.items()
                         if p.kind is p.POSITIONAL_OR_KEYWORD and k != "self"
                         ) | frozenset(cls.RELEASED_EXTRA_KEYS)

    def validate(self, source: str = "bert config") -> None:
        """Checks every key the model reads, before any work: sizes are positive ints and
        H % N == 0 (original `transformer_model` check); `hidden_act` one the model runs
        (:data:`HIDDEN_ACTS`, any case; null or "" for none); the two dropout probabilities
        numbers in [0, 1); `initializer_range` a positive number (bert_tf: the original let
        TensorFlow fail on them).

        Raises:
          ConfigError: naming ``source`` and the key.
        """
        for key in self.POSITIVE_INT_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{source}: '{key}' must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads != 0:
            raise ConfigError(
                f"{source}: The hidden size ({self.hidden_size}) is not a multiple of the number "
                f"of attention heads ({self.num_attention_heads})")
        act = self.hidden_act
        if act is not None and not (isinstance(act, str) and act.lower() in HIDDEN_ACTS + ("",)):
            raise ConfigError(f"{source}: 'hidden_act' must be one of {', '.join(HIDDEN_ACTS)}, "
                              f"got {act!r} (the original raises \"Unsupported activation\")")
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, key)
            if not _is_number(value) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{source}: '{key}' must be a number in [0, 1), got {value!r}")
        value = self.initializer_range
        if not _is_number(value) or not 0.0 < value < math.inf:
            raise ConfigError(f"{source}: 'initializer_range' must be a positive number, got "
                              f"{value!r}")

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
        from bert_tf.atomic_files import atomic_write_text
        atomic_write_text(path, self.to_json_string())

    def __eq__(self, other):
        return type(other) is type(self) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"{type(self).__name__}({self.to_dict()})"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not (
        isinstance(value, float) and math.isnan(value))


def check_pair_segments(config: BertConfig, source: str, what: str,
                        examples: Iterable = None) -> None:
    """Refuses ``type_vocab_size`` < 2 where the inputs have a segment B (segment id 1), which
    the segment table then lacks (the original fails in TensorFlow's gather, after writing its
    records).

    Args:
      config: the model config; source: its file (for the message); what: the input, e.g.
        ``"task MRPC"``, ``"SQuAD"``.
      examples: examples with ``text_b`` (None or empty: single sentences); None when every
        input is a pair (SQuAD, pre-training).

    Raises:
      ConfigError: ``<source>: 'type_vocab_size' is 1 but <what> has sentence pairs ...``.
    """
    if config.type_vocab_size >= 2:
        return
    if examples is not None and not any(getattr(ex, "text_b", None) for ex in examples):
        return
    raise ConfigError(f"{source}: 'type_vocab_size' is {config.type_vocab_size} but {what} has "
                      "sentence pairs (segment id 1): it needs 2 or more")


def load_config_for_length(bert_config_file: str, max_seq_length: int) -> BertConfig:
    """Reads the config and checks ``max_seq_length <= max_position_embeddings``.

    Raises:
      ConfigError: unreadable config. FlagError: the sequence is too long for the model
        (the original's "Cannot use sequence length ..." check).
    """
    config = BertConfig.from_json_file(bert_config_file)
    if max_seq_length > config.max_position_embeddings:
        raise FlagError(
            f"Cannot use sequence length {max_seq_length} because the BERT model was only trained "
            f"up to sequence length {config.max_position_embeddings} ({bert_config_file}): lower "
            f"--max_seq_length")
    return config
