"""Original BERT checkpoint names <-> `keras_hub.models.BertBackbone` weights, both ways.

keras-hub 0.32's `BertBackbone` (`keras_hub/src/models/bert/bert_backbone.py`) is the
original BERT encoder: post-LayerNorm blocks with epsilon 1e-12 everywhere (spec 2.8), the
tanh GELU (`gelu_approximate`, spec 2.7), learned absolute positions sliced to the sequence
length (`PositionEmbedding`), a segment table of `num_segments` rows (= `type_vocab_size`),
and a tanh pooler on position 0 (spec 2.10). Its attention is Keras `MultiHeadAttention`,
whose kernels keep the heads on their own axis:

* query/key/value kernel ``[H, N, Dh]`` and bias ``[N, Dh]`` (original ``[H, H]``, ``[H]``);
* attention output kernel ``[N, Dh, H]`` (original ``[H, H]``).

The original splits heads by reshaping ``[B, S, H]`` to ``[B, S, N, Dh]`` (spec 2.5), so
column ``n * Dh + d`` of an original kernel is head ``n``, unit ``d``: a C-order reshape is the
exact map, and reshaping back returns the same bits.

:data:`KERAS_HUB_NAMES` is THE table (original suffix, keras-hub weight path, reshape kind),
read forwards by :func:`original_to_keras_hub` and backwards by :func:`keras_hub_to_original`.
The keras-hub config keeps fewer keys than `bert_config.json`: one `dropout` (both dropout
probabilities), no activation (always the tanh GELU), no `initializer_range` (its
initializer's stddev is 0.02), see :func:`keras_hub_config` / :func:`bert_config_from_keras_hub`.
"""

from typing import Dict, Mapping, Tuple

import numpy as np

from bert_tf.bert.config import BertConfig
from bert_tf.errors import ConfigError

# (original name, keras-hub weight path, reshape). reshape: None (same shape), "heads"
# (q/k/v kernel [H, H] <-> [H, N, Dh] and bias [H] <-> [N, Dh]), "out_heads" ([H, H] <-> [N, Dh, H]).
EMBEDDING_NAMES: Tuple[Tuple[str, str, object], ...] = (
    ("bert/embeddings/word_embeddings", "token_embedding/embeddings", None),
    ("bert/embeddings/position_embeddings", "position_embedding/embeddings", None),
    ("bert/embeddings/token_type_embeddings", "segment_embedding/embeddings", None),
    ("bert/embeddings/LayerNorm/gamma", "embeddings_layer_norm/gamma", None),
    ("bert/embeddings/LayerNorm/beta", "embeddings_layer_norm/beta", None),
)

LAYER_NAMES: Tuple[Tuple[str, str, object], ...] = (
    ("attention/self/query/kernel", "self_attention_layer/query/kernel", "heads"),
    ("attention/self/query/bias", "self_attention_layer/query/bias", "heads"),
    ("attention/self/key/kernel", "self_attention_layer/key/kernel", "heads"),
    ("attention/self/key/bias", "self_attention_layer/key/bias", "heads"),
    ("attention/self/value/kernel", "self_attention_layer/value/kernel", "heads"),
    ("attention/self/value/bias", "self_attention_layer/value/bias", "heads"),
    ("attention/output/dense/kernel", "self_attention_layer/attention_output/kernel", "out_heads"),
    ("attention/output/dense/bias", "self_attention_layer/attention_output/bias", None),
    ("attention/output/LayerNorm/gamma", "self_attention_layer_norm/gamma", None),
    ("attention/output/LayerNorm/beta", "self_attention_layer_norm/beta", None),
    ("intermediate/dense/kernel", "feedforward_intermediate_dense/kernel", None),
    ("intermediate/dense/bias", "feedforward_intermediate_dense/bias", None),
    ("output/dense/kernel", "feedforward_output_dense/kernel", None),
    ("output/dense/bias", "feedforward_output_dense/bias", None),
    ("output/LayerNorm/gamma", "feedforward_layer_norm/gamma", None),
    ("output/LayerNorm/beta", "feedforward_layer_norm/beta", None),
)

POOLER_NAMES: Tuple[Tuple[str, str, object], ...] = (
    ("bert/pooler/dense/kernel", "pooled_dense/kernel", None),
    ("bert/pooler/dense/bias", "pooled_dense/bias", None),
)

KERAS_HUB_INITIALIZER_STDDEV = 0.02  # bert_backbone.bert_kernel_initializer's default


def keras_hub_names(num_layers: int) -> Tuple[Tuple[str, str, object], ...]:
    """THE table for ``num_layers`` blocks: ``(original name, keras-hub path, reshape)``,
    5 + 16 L + 2 rows in the original order."""
    rows = list(EMBEDDING_NAMES)
    for i in range(num_layers):
        rows += [(f"bert/encoder/layer_{i}/{o}", f"transformer_layer_{i}/{k}", r)
                 for o, k, r in LAYER_NAMES]
    rows += list(POOLER_NAMES)
    return tuple(rows)


def keras_hub_config(config: BertConfig, source: str = "bert_config.json") -> Dict:
    """`BertBackbone` constructor arguments for ``config``.

    Raises:
      ConfigError: a config keras-hub's backbone cannot express: ``hidden_act`` other than
        ``"gelu"`` (it always uses the tanh GELU), or two different dropout probabilities
        (it has one `dropout`); names ``source`` and the keys.
    """
    if config.hidden_act != "gelu":
        raise ConfigError(f"{source}: hidden_act {config.hidden_act!r}: keras-hub's BertBackbone "
                          f"always uses the tanh GELU (\"gelu\")")
    if config.hidden_dropout_prob != config.attention_probs_dropout_prob:
        raise ConfigError(
            f"{source}: hidden_dropout_prob {config.hidden_dropout_prob} != "
            f"attention_probs_dropout_prob {config.attention_probs_dropout_prob}: keras-hub's "
            f"BertBackbone has one dropout for both")
    return {"vocabulary_size": config.vocab_size, "num_layers": config.num_hidden_layers,
            "num_heads": config.num_attention_heads, "hidden_dim": config.hidden_size,
            "intermediate_dim": config.intermediate_size, "dropout": config.hidden_dropout_prob,
            "max_sequence_length": config.max_position_embeddings,
            "num_segments": config.type_vocab_size}


def bert_config_from_keras_hub(backbone_config: Mapping, source: str = "config.json") -> BertConfig:
    """The `bert_config.json` of a `BertBackbone` config dict (its ``config`` entry).

    `hidden_act` is ``"gelu"`` (the tanh form, as keras-hub's), both dropouts are its
    `dropout`, `initializer_range` its initializer's 0.02.

    Raises:
      ConfigError: a key is missing (names ``source`` and the key).
    """
    keys = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim",
            "dropout", "max_sequence_length", "num_segments")
    missing = [k for k in keys if k not in backbone_config]
    if missing:
        raise ConfigError(f"{source}: missing BertBackbone config key(s) {', '.join(missing)}")
    c = backbone_config
    config = BertConfig(
        vocab_size=c["vocabulary_size"], hidden_size=c["hidden_dim"],
        num_hidden_layers=c["num_layers"], num_attention_heads=c["num_heads"],
        intermediate_size=c["intermediate_dim"], hidden_act="gelu",
        hidden_dropout_prob=c["dropout"], attention_probs_dropout_prob=c["dropout"],
        max_position_embeddings=c["max_sequence_length"], type_vocab_size=c["num_segments"],
        initializer_range=KERAS_HUB_INITIALIZER_STDDEV)
    config.validate(source)
    return config


def _to_keras_hub(value: np.ndarray, reshape, num_heads: int) -> np.ndarray:
    if reshape == "heads":
        hidden = value.shape[-1]
        return value.reshape(value.shape[:-1] + (num_heads, hidden // num_heads))
    if reshape == "out_heads":
        hidden = value.shape[0]
        return value.reshape((num_heads, hidden // num_heads) + value.shape[1:])
    return value


def _to_original(value: np.ndarray, reshape) -> np.ndarray:
    if reshape == "heads":
        return value.reshape(value.shape[:-2] + (value.shape[-2] * value.shape[-1],))
    if reshape == "out_heads":
        return value.reshape((value.shape[0] * value.shape[1],) + value.shape[2:])
    return value


def original_to_keras_hub(arrays: Mapping[str, np.ndarray], config: BertConfig,
                          source: str = "checkpoint") -> Dict[str, np.ndarray]:
    """keras-hub weight path -> array for the `bert/*` variables of an original checkpoint.

    Args:
      arrays: original name -> float32 array (other entries, e.g. heads, are not read).
      config: the checkpoint's config (for L and N).
      source: the checkpoint, for error messages.

    Raises:
      ConfigError: a `bert/*` variable the config implies is missing (names it).
    """
    out = {}
    for name, path, reshape in keras_hub_names(config.num_hidden_layers):
        if name not in arrays:
            raise ConfigError(f"{source}: lacks {name} (num_hidden_layers="
                              f"{config.num_hidden_layers})")
        out[path] = np.ascontiguousarray(
            _to_keras_hub(np.asarray(arrays[name]), reshape, config.num_attention_heads))
    return out


def keras_hub_to_original(weights: Mapping[str, np.ndarray], num_layers: int,
                          source: str = "BertBackbone") -> Dict[str, np.ndarray]:
    """Original name -> array from keras-hub weight path -> array (the table read backwards).

    Raises:
      ConfigError: a weight the table needs is missing, or the backbone has a weight the
        table does not know (names it).
    """
    rows = keras_hub_names(num_layers)
    known = {path for _, path, _ in rows}
    extra = sorted(p for p in weights if p not in known)
    if extra:
        raise ConfigError(f"{source}: weight(s) {', '.join(extra[:4])} have no original BERT name")
    out = {}
    for name, path, reshape in rows:
        if path not in weights:
            raise ConfigError(f"{source}: lacks weight {path} (for {name})")
        out[name] = np.ascontiguousarray(_to_original(np.asarray(weights[path]), reshape))
    return out
