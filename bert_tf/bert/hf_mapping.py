"""Hugging Face BERT names -> original BERT checkpoint names (spec `bert.md` 3.2).

A HF BERT folder (`config.json` + `model.safetensors`) holds the same tensors as an original
checkpoint under other names, with every `nn.Linear` weight stored ``[out, in]`` (the original
dense kernels are ``[in, out]``, so they are transposed). The NSP weight keeps its ``[2, H]``
layout (the original `output_weights` is ``[out, in]`` too). HF buffers such as
`embeddings.position_ids` and the tied MLM decoder weight have no original counterpart.

Its name tables (:data:`ENCODER_NAMES`, :data:`HEAD_NAMES`) are THE BERT <-> HF names, read
both ways: `hf_export.py` reads them original -> HF. This module is the tables plus the
arithmetic; file handling is in `bert_tf/convert.py`.
"""

import re
from typing import Dict, List, Mapping, Tuple

import numpy as np

from bert_tf.bert.config import GELU_EXACT, BertConfig
from bert_tf.errors import ConfigError

# THE table of BERT names, read both ways (`hf_export.py` reads it original -> HF): (original
# name template, HF name template without the `bert.` prefix, transpose). "{i}" is the layer
# number, "{m}" the query/key/value projection.
ENCODER_NAMES: Tuple[Tuple[str, str, bool], ...] = (
    ("bert/embeddings/word_embeddings", "embeddings.word_embeddings.weight", False),
    ("bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings.weight", False),
    ("bert/embeddings/position_embeddings", "embeddings.position_embeddings.weight", False),
    ("bert/embeddings/LayerNorm/gamma", "embeddings.LayerNorm.weight", False),
    ("bert/embeddings/LayerNorm/beta", "embeddings.LayerNorm.bias", False),
    ("bert/encoder/layer_{i}/attention/self/{m}/kernel",
     "encoder.layer.{i}.attention.self.{m}.weight", True),
    ("bert/encoder/layer_{i}/attention/self/{m}/bias",
     "encoder.layer.{i}.attention.self.{m}.bias", False),
    ("bert/encoder/layer_{i}/attention/output/dense/kernel",
     "encoder.layer.{i}.attention.output.dense.weight", True),
    ("bert/encoder/layer_{i}/attention/output/dense/bias",
     "encoder.layer.{i}.attention.output.dense.bias", False),
    ("bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
     "encoder.layer.{i}.attention.output.LayerNorm.weight", False),
    ("bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
     "encoder.layer.{i}.attention.output.LayerNorm.bias", False),
    ("bert/encoder/layer_{i}/intermediate/dense/kernel",
     "encoder.layer.{i}.intermediate.dense.weight", True),
    ("bert/encoder/layer_{i}/intermediate/dense/bias",
     "encoder.layer.{i}.intermediate.dense.bias", False),
    ("bert/encoder/layer_{i}/output/dense/kernel", "encoder.layer.{i}.output.dense.weight", True),
    ("bert/encoder/layer_{i}/output/dense/bias", "encoder.layer.{i}.output.dense.bias", False),
    ("bert/encoder/layer_{i}/output/LayerNorm/gamma",
     "encoder.layer.{i}.output.LayerNorm.weight", False),
    ("bert/encoder/layer_{i}/output/LayerNorm/beta",
     "encoder.layer.{i}.output.LayerNorm.bias", False),
    ("bert/pooler/dense/kernel", "pooler.dense.weight", True),
    ("bert/pooler/dense/bias", "pooler.dense.bias", False),
)

# The task heads, by the HF architecture that holds them: (original name, HF name, transpose).
# run_classifier.py's head is [num_labels, H] and run_squad.py's [2, H], as nn.Linear's.
HEAD_NAMES: Dict[str, Tuple[Tuple[str, str, bool], ...]] = {
    "BertForPreTraining": (
        ("cls/predictions/transform/dense/kernel", "cls.predictions.transform.dense.weight", True),
        ("cls/predictions/transform/dense/bias", "cls.predictions.transform.dense.bias", False),
        ("cls/predictions/transform/LayerNorm/gamma", "cls.predictions.transform.LayerNorm.weight",
         False),
        ("cls/predictions/transform/LayerNorm/beta", "cls.predictions.transform.LayerNorm.bias",
         False),
        ("cls/predictions/output_bias", "cls.predictions.bias", False),
        ("cls/seq_relationship/output_weights", "cls.seq_relationship.weight", False),
        ("cls/seq_relationship/output_bias", "cls.seq_relationship.bias", False),
    ),
    "BertForSequenceClassification": (
        ("output_weights", "classifier.weight", False),
        ("output_bias", "classifier.bias", False),
    ),
    "BertForQuestionAnswering": (
        ("cls/squad/output_weights", "qa_outputs.weight", False),
        ("cls/squad/output_bias", "qa_outputs.bias", False),
    ),
}


def name_pattern(template: str, hf_aliases: bool = False) -> str:
    """The regex of a name template of :data:`ENCODER_NAMES` / :data:`HEAD_NAMES`: the text
    escaped, ``{i}`` -> ``(\\d+)`` (the layer), ``{m}`` -> ``(query|key|value)``; with
    ``hf_aliases`` (a HF name) a LayerNorm ``weight`` / ``bias`` also matches the older
    ``gamma`` / ``beta`` spelling of HF files."""
    pattern = re.escape(template).replace(r"\{i\}", r"(\d+)")
    pattern = pattern.replace(r"\{m\}", "(query|key|value)")
    if hf_aliases:
        pattern = pattern.replace(r"LayerNorm\.weight", r"LayerNorm\.(?:weight|gamma)")
        pattern = pattern.replace(r"LayerNorm\.bias", r"LayerNorm\.(?:bias|beta)")
    return pattern


# (HF suffix regex, original name template, transpose), read from the tables above.
_ENCODER_RULES: Tuple[Tuple[str, str, bool], ...] = tuple(
    (name_pattern(hf, hf_aliases=True), original, transpose)
    for original, hf, transpose in ENCODER_NAMES)
_HEAD_RULES: Tuple[Tuple[str, str, bool], ...] = tuple(
    (name_pattern(hf, hf_aliases=True), original, transpose)
    for rows in HEAD_NAMES.values() for original, hf, transpose in rows)

# HF entries with no original variable: buffers and the decoder tied to word_embeddings.
_IGNORED = (r"(?:bert\.)?embeddings\.position_ids", r"cls\.predictions\.decoder\.(?:weight|bias)")

# Original config keys and where they come from in a HF config.json.
CONFIG_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
               "intermediate_size", "hidden_act", "hidden_dropout_prob",
               "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
               "initializer_range")
_HF_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu", "gelu_pytorch_tanh": "gelu",
                   "relu": "relu", "tanh": "tanh"}
# With keep_source_activation: HF's activation itself. Only the exact GELU differs, and its
# value is one the original code rejects (bert_tf.bert.layers.GELU_EXACT).
_HF_SOURCE_ACTIVATIONS = {**_HF_ACTIVATIONS, "gelu": GELU_EXACT}


def convert_hf_config(hf_config: Mapping, source: str = "config.json",
                      keep_source_activation: bool = False) -> BertConfig:
    """The original `bert_config.json` keys from a HF BERT `config.json` dict.

    By default HF ``"gelu"`` (exact erf) becomes the original ``"gelu"`` (tanh
    approximation): the original code has only the tanh form, so outputs move by up to
    ~6e-3 on MiniLM's last layer relative to a HF run (see the golden README); this is the
    documented behaviour. With ``keep_source_activation`` (bert_tf, issue 13) it becomes
    ``"gelu_exact"`` instead: bert_tf then runs the model's own activation (outputs equal a
    HF / sentence-transformers run), and the original code refuses the config
    ("Unsupported activation") rather than running another function silently.

    Raises:
      ConfigError: a key is missing, or the model uses a feature the original BERT lacks
        (non-absolute position embeddings, an activation the original does not know).
    """
    missing = [k for k in CONFIG_KEYS if k not in hf_config]
    if missing:
        raise ConfigError(f"{source}: missing BERT config keys {missing}")
    pos = hf_config.get("position_embedding_type", "absolute")
    if pos != "absolute":
        raise ConfigError(f"{source}: position_embedding_type {pos!r} is not original BERT (absolute only)")
    act = hf_config["hidden_act"]
    if not isinstance(act, str) or act not in _HF_ACTIVATIONS:
        raise ConfigError(f"{source}: hidden_act {act!r} has no original BERT equivalent "
                          f"(known: {sorted(_HF_ACTIVATIONS)})")
    eps = hf_config.get("layer_norm_eps", 1e-12)
    if eps != 1e-12:
        raise ConfigError(f"{source}: layer_norm_eps {eps} differs from the original's 1e-12")
    values = {k: hf_config[k] for k in CONFIG_KEYS}
    table = _HF_SOURCE_ACTIVATIONS if keep_source_activation else _HF_ACTIVATIONS
    values["hidden_act"] = table[act]
    config = BertConfig.from_dict(values)
    config.validate(source)
    return config


def convert_hf_weights(hf_tensors: Mapping[str, np.ndarray], source: str = "model.safetensors"
                       ) -> Tuple[Dict[str, np.ndarray], List[str]]:
    """Renames (and transposes) HF BERT tensors to the original layout.

    Args:
      hf_tensors: HF name -> array, with or without the `bert.` prefix of
        `BertForPreTraining`/`BertForMaskedLM` files.
      source: file name for error messages.

    Returns:
      (original name -> float32 array, list of HF names that were ignored).

    Raises:
      ConfigError: a tensor that is neither mapped nor known to be ignorable (names it).
    """
    out: Dict[str, np.ndarray] = {}
    ignored: List[str] = []
    for name in sorted(hf_tensors):
        value = np.asarray(hf_tensors[name])
        if any(re.fullmatch(p, name) for p in _IGNORED):
            ignored.append(name)
            continue
        key = name[len("bert."):] if name.startswith("bert.") else name
        target = None
        for pattern, template, transpose in _ENCODER_RULES + _HEAD_RULES:
            m = re.fullmatch(pattern, key)
            if m:
                groups = m.groups()
                target = template.format(i=groups[0] if groups else "",
                                         m=groups[1] if len(groups) > 1 else "")
                if transpose:
                    value = value.T
                break
        if target is None:
            raise ConfigError(f"{source}: tensor {name} {list(value.shape)} has no original BERT name")
        out[target] = np.ascontiguousarray(value.astype(np.float32))
    return out, ignored
