"""Hugging Face BERT names -> original BERT checkpoint names (spec `bert.md` 3.2).

A HF BERT folder (`config.json` + `model.safetensors`) holds the same tensors as an original
checkpoint under other names, with every `nn.Linear` weight stored ``[out, in]`` (the original
dense kernels are ``[in, out]``, so they are transposed). The NSP weight keeps its ``[2, H]``
layout (the original `output_weights` is ``[out, in]`` too). HF buffers such as
`embeddings.position_ids` and the tied MLM decoder weight have no original counterpart.

This module is a table plus the arithmetic; file handling is in `bert_tf/convert.py`.
"""

import re
from typing import Dict, List, Mapping, Tuple

import numpy as np

from bert_tf.bert.config import GELU_EXACT, BertConfig
from bert_tf.errors import ConfigError

# (HF suffix regex, original name template, transpose). "{i}" is the layer number.
_ENCODER_RULES: Tuple[Tuple[str, str, bool], ...] = (
    (r"embeddings\.word_embeddings\.weight", "bert/embeddings/word_embeddings", False),
    (r"embeddings\.token_type_embeddings\.weight", "bert/embeddings/token_type_embeddings", False),
    (r"embeddings\.position_embeddings\.weight", "bert/embeddings/position_embeddings", False),
    (r"embeddings\.LayerNorm\.(?:weight|gamma)", "bert/embeddings/LayerNorm/gamma", False),
    (r"embeddings\.LayerNorm\.(?:bias|beta)", "bert/embeddings/LayerNorm/beta", False),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.weight",
     "bert/encoder/layer_{i}/attention/self/{m}/kernel", True),
    (r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.bias",
     "bert/encoder/layer_{i}/attention/self/{m}/bias", False),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.weight",
     "bert/encoder/layer_{i}/attention/output/dense/kernel", True),
    (r"encoder\.layer\.(\d+)\.attention\.output\.dense\.bias",
     "bert/encoder/layer_{i}/attention/output/dense/bias", False),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(?:weight|gamma)",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma", False),
    (r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(?:bias|beta)",
     "bert/encoder/layer_{i}/attention/output/LayerNorm/beta", False),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.weight",
     "bert/encoder/layer_{i}/intermediate/dense/kernel", True),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.bias",
     "bert/encoder/layer_{i}/intermediate/dense/bias", False),
    (r"encoder\.layer\.(\d+)\.output\.dense\.weight", "bert/encoder/layer_{i}/output/dense/kernel", True),
    (r"encoder\.layer\.(\d+)\.output\.dense\.bias", "bert/encoder/layer_{i}/output/dense/bias", False),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(?:weight|gamma)",
     "bert/encoder/layer_{i}/output/LayerNorm/gamma", False),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(?:bias|beta)",
     "bert/encoder/layer_{i}/output/LayerNorm/beta", False),
    (r"pooler\.dense\.weight", "bert/pooler/dense/kernel", True),
    (r"pooler\.dense\.bias", "bert/pooler/dense/bias", False),
)

_HEAD_RULES: Tuple[Tuple[str, str, bool], ...] = (
    (r"cls\.predictions\.transform\.dense\.weight", "cls/predictions/transform/dense/kernel", True),
    (r"cls\.predictions\.transform\.dense\.bias", "cls/predictions/transform/dense/bias", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(?:weight|gamma)", "cls/predictions/transform/LayerNorm/gamma", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(?:bias|beta)", "cls/predictions/transform/LayerNorm/beta", False),
    (r"cls\.predictions\.bias", "cls/predictions/output_bias", False),
    (r"cls\.seq_relationship\.weight", "cls/seq_relationship/output_weights", False),
    (r"cls\.seq_relationship\.bias", "cls/seq_relationship/output_bias", False),
    # run_classifier.py's head ([num_labels, H], as nn.Linear) and run_squad.py's ([2, H]).
    (r"classifier\.weight", "output_weights", False),
    (r"classifier\.bias", "output_bias", False),
    (r"qa_outputs\.weight", "cls/squad/output_weights", False),
    (r"qa_outputs\.bias", "cls/squad/output_bias", False),
)

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
    if act not in _HF_ACTIVATIONS:
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
