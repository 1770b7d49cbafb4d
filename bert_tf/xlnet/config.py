"""`XLNetConfig` (the checkpoint's `xlnet_config.json`) and `RunConfig` (per-run settings).

Mirrors `XLNetConfig`, `RunConfig` and `create_run_config` of the original `xlnet.py`
(spec `xlnet.md` 2.1, 2.2). `XLNetConfig` reads and writes exactly the eight JSON keys of the
released files; `to_json_string` writes 4-space indented, key-sorted JSON without a trailing
newline, byte-identical to the original `XLNetConfig.to_json`.

`RunConfig` adds `attn_type` to the original's fields: the original `XLNetModel` hard-codes
`attn_type="bi"`, but `modeling.transformer_xl` also supports `"uni"` (the keras-xlnet test
checkpoints were recorded with it), so it is a setting here with the original default `"bi"`.
"""

import json
from dataclasses import asdict, dataclass
from typing import Any, Dict, Optional


from bert_tf.errors import ConfigError
from bert_tf.json_files import read_json_object, warn_unknown_keys
from bert_tf.tokenization.sentencepiece_prepro import CLS_ID, SEP_ID

CONFIG_KEYS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation", "untie_r",
               "n_token")
_INT_KEYS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token")
FF_ACTIVATIONS = ("relu", "gelu")
ATTN_TYPES = ("bi", "uni")
INITS = ("normal", "uniform")


class XLNetConfig:
    """Checkpoint hyper-parameters: the eight keys of `xlnet_config.json` (spec 2.1).

    Args:
      n_layer: NL, number of Transformer layers.
      d_model: D, hidden size (= embedding size).
      n_head: N, attention heads.
      d_head: Dh, size per head (not necessarily D / N).
      d_inner: F, FFN inner size.
      ff_activation: ``"relu"`` or ``"gelu"`` (tanh approximation).
      untie_r: if true the biases ``r_w_bias``, ``r_r_bias``, ``r_s_bias`` are per layer
        (``[NL, N, Dh]``), else shared (``[N, Dh]``).
      n_token: V, vocabulary size.

    Raises:
      ConfigError: a key is missing or has a bad value (see :meth:`validate`).
    """

    def __init__(self, n_layer: int, d_model: int, n_head: int, d_head: int, d_inner: int,
                 ff_activation: str, untie_r: bool, n_token: int):
        self.n_layer = n_layer
        self.d_model = d_model
        self.n_head = n_head
        self.d_head = d_head
        self.d_inner = d_inner
        self.ff_activation = ff_activation
        self.untie_r = untie_r
        self.n_token = n_token
        self.validate()

    @classmethod
    def from_dict(cls, obj: Dict[str, Any], source: str = "xlnet config") -> "XLNetConfig":
        """Builds a config from a dict holding the eight keys (other keys are ignored, as the
        original reads only these eight).

        Raises:
          ConfigError: a key is missing (names ``source`` and the key) or invalid.
        """
        missing = [k for k in CONFIG_KEYS if k not in obj]
        if missing:
            raise ConfigError(f"{source}: missing XLNet config key(s) {', '.join(missing)} "
                              f"(expected {', '.join(CONFIG_KEYS)})")
        config = cls.__new__(cls)
        for k in CONFIG_KEYS:
            setattr(config, k, obj[k])
        config.validate(source)
        return config

    @classmethod
    def from_json_file(cls, json_path: str) -> "XLNetConfig":
        """Reads `xlnet_config.json` (original ``XLNetConfig(json_path=...)``).

        Keys other than the eight are ignored as by the original, but named in one warning
        (bert_tf, beyond the original: a typo such as ``"d_modle"`` was silent).

        Raises:
          ConfigError: the file is missing, unreadable, not a JSON object, looks like a BERT
            config, or lacks a key (names the file).
        """
        obj = read_json_object(json_path, "XLNet config")
        if "hidden_size" in obj and "d_model" not in obj:
            raise ConfigError(f"{json_path}: this looks like a BERT config (has 'hidden_size'), "
                              f"not an XLNet config (keys {', '.join(CONFIG_KEYS)})")
        config = cls.from_dict(obj, source=json_path)
        warn_unknown_keys(obj, CONFIG_KEYS, json_path, "XLNet config")  # bert_tf: typos named
        return config

    def validate(self, source: str = "xlnet config") -> None:
        """Checks the value of every key.

        Raises:
          ConfigError: naming ``source`` and the key.
        """
        for key in _INT_KEYS:
            value = getattr(self, key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{source}: '{key}' must be a positive integer, got {value!r}")
        if self.d_model % 2:
            raise ConfigError(f"{source}: 'd_model' must be even for the sinusoid positional "
                              f"encoding, got {self.d_model}")
        if self.ff_activation not in FF_ACTIVATIONS:
            raise ConfigError(f"{source}: 'ff_activation' must be one of {FF_ACTIVATIONS}, got "
                              f"{self.ff_activation!r} (the original raises too)")
        if not isinstance(self.untie_r, bool):
            raise ConfigError(f"{source}: 'untie_r' must be true or false, got {self.untie_r!r}")

    def to_dict(self) -> Dict[str, Any]:
        """The eight keys."""
        return {k: getattr(self, k) for k in CONFIG_KEYS}

    def to_json_string(self) -> str:
        """JSON as the original ``to_json``: indent 4, sorted keys, no trailing newline."""
        return json.dumps(self.to_dict(), indent=4, sort_keys=True)

    def to_json_file(self, json_path: str) -> None:
        """Writes :meth:`to_json_string` atomically (original ``XLNetConfig.to_json``)."""
        from bert_tf.atomic_files import atomic_write_text
        atomic_write_text(json_path, self.to_json_string())

    def __eq__(self, other):
        return isinstance(other, XLNetConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"XLNetConfig({self.to_dict()})"


@dataclass
class RunConfig:
    """Run-specific settings of the model (original ``xlnet.RunConfig``, spec 2.2).

    Attributes:
      is_training: default of the Keras ``training`` argument when a call does not pass one
        (dropout is active only in training).
      use_tpu: the original's TPU path (one-hot embedding lookup / LM loss); same numbers.
      use_bfloat16: the original's bfloat16 compute; here the compute dtype follows the Keras
        dtype policy and this flag is only recorded.
      dropout: dropout rate on activations.
      dropatt: dropout rate on attention probabilities.
      init: ``"normal"`` or ``"uniform"`` initializer of kernels, embeddings and biases.
      init_range: uniform init in ``[-init_range, init_range]``.
      init_std: normal init stddev.
      mem_len: tokens cached as memory (None or 0 = no memory).
      reuse_len: leading tokens of the current segment that are cached (None = all).
      bi_data: forward + backward positional encodings (first / second half of the batch).
      clamp_len: clamp relative distances to ``[-clamp_len, clamp_len]`` when > 0.
      same_length: every query sees the same number of keys (only with ``attn_type="uni"``).
      attn_type: ``"bi"`` (XLNet, the original `XLNetModel`) or ``"uni"`` (causal,
        Transformer-XL); not a field of the original RunConfig (see the module docstring).

    Raises:
      ConfigError: an invalid ``init`` or ``attn_type`` (at construction).
    """

    is_training: bool = False
    use_tpu: bool = False
    use_bfloat16: bool = False
    dropout: float = 0.0
    dropatt: float = 0.0
    init: str = "normal"
    init_range: float = 0.1
    init_std: float = 0.02
    mem_len: Optional[int] = None
    reuse_len: Optional[int] = None
    bi_data: bool = False
    clamp_len: int = -1
    same_length: bool = False
    attn_type: str = "bi"

    def __post_init__(self):
        if self.init not in INITS:
            raise ConfigError(f"run config: init must be one of {INITS}, got {self.init!r}")
        if self.attn_type not in ATTN_TYPES:
            raise ConfigError(f"run config: attn_type must be one of {ATTN_TYPES}, got {self.attn_type!r}")
        for name in ("dropout", "dropatt"):
            rate = getattr(self, name)
            if not 0.0 <= rate < 1.0:
                raise ConfigError(f"run config: {name} must be in [0, 1), got {rate!r}")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def create_run_config(is_training: bool, is_finetune: bool, flags_obj) -> RunConfig:
    """RunConfig from FLAGS, as the original ``xlnet.create_run_config`` (spec 2.2).

    ``use_tpu, use_bfloat16, dropout, dropatt, init, init_range, init_std, clamp_len`` always
    come from ``flags_obj``; ``mem_len, reuse_len, bi_data, same_length`` only when
    ``is_finetune`` is false (so fine-tuning never uses memory). Attributes absent from
    ``flags_obj`` keep the RunConfig default.

    Args:
      is_training: enables dropout.
      is_finetune: fine-tuning (no memory, no bi_data) versus pretraining.
      flags_obj: absl ``FLAGS`` or any object with those attributes.
    """
    def get(name, default):
        try:
            value = getattr(flags_obj, name)
        except AttributeError:
            return default
        return default if value is None and default is not None else value

    defaults = RunConfig()
    kwargs = dict(is_training=is_training)
    for name in ("use_tpu", "use_bfloat16", "dropout", "dropatt", "init", "init_range",
                 "init_std", "clamp_len"):
        kwargs[name] = get(name, getattr(defaults, name))
    if not is_finetune:
        for name in ("mem_len", "reuse_len", "bi_data", "same_length"):
            kwargs[name] = get(name, getattr(defaults, name))
    return RunConfig(**kwargs)


def check_spiece_matches_config(sp_model, config: XLNetConfig, spiece_model_file: str,
                                model_config_path: str) -> None:
    """The SentencePiece model must fit the config: same vocabulary size (``n_token``) and
    XLNet's hard-coded ``<sep>`` = 4, ``<cls>`` = 3 (spec 5.3); bert_tf's check, before any
    file is written (the original fails later or computes with wrong ids).

    Args:
      sp_model: a loaded ``SentencePieceProcessor``; config: the model config;
      spiece_model_file, model_config_path: their paths, for the message.

    Raises:
      ConfigError: naming both files and both values.
    """
    size = sp_model.GetPieceSize()
    if size != config.n_token:
        raise ConfigError(
            f"{spiece_model_file} has {size} pieces but {model_config_path} says "
            f"n_token={config.n_token}: the SentencePiece model and the config must come from "
            f"the same model (ids >= n_token have no embedding)")
    for symbol, expected in (("<sep>", SEP_ID), ("<cls>", CLS_ID)):
        got = sp_model.PieceToId(symbol)
        if got != expected or sp_model.IdToPiece(expected) != symbol:
            raise ConfigError(f"{spiece_model_file}: {symbol} has id {got}, but XLNet's code "
                              f"hard-codes {symbol}={expected} (spec 5.3); not an XLNet "
                              "SentencePiece model")
