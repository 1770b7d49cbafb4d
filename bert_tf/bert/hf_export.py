"""Original BERT checkpoint names -> Hugging Face names (the way back of `hf_mapping.py`).

An original checkpoint (spec `bert.md` 3.2, 3.3) becomes the tensors of a HF BERT folder:
dense kernels ``[in, out]`` are transposed to `nn.Linear`'s ``[out, in]``; embeddings, layer
norms, biases and the ``[out, in]`` head weights (NSP `output_weights`, the classifier's
`output_weights`, SQuAD's `cls/squad/output_weights`) keep their layout. The heads decide the
HF architecture:

* no head: ``BertModel`` (names without a prefix);
* `cls/predictions/*` + `cls/seq_relationship/*`: ``BertForPreTraining`` (``bert.`` prefix;
  the MLM decoder weight and bias are tied to `word_embeddings` and `cls.predictions.bias`, so
  they are not stored, as HF's own `save_pretrained` does);
* top-level `output_weights` / `output_bias` (`run_classifier.py`):
  ``BertForSequenceClassification`` (`classifier.*`);
* `cls/squad/*` (`run_squad.py`): ``BertForQuestionAnswering`` (`qa_outputs.*`).

`global_step` and optimizer slots have no HF counterpart and are left out (listed, never
silently); any other name is an error. The activation: the original has only the tanh GELU
(spec 2.7), which HF calls ``"gelu_new"`` (`transformers.activations.NewGELUActivation`,
``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``); HF's ``"gelu"`` is the exact erf form.

This module is a table plus the arithmetic; file handling is in `bert_tf/convert.py`.
"""

import re
from typing import Dict, List, Mapping, Tuple

import numpy as np

from bert_tf.bert.config import GELU_EXACT, BertConfig
from bert_tf.bert.hf_mapping import ENCODER_NAMES, HEAD_NAMES, name_pattern
from bert_tf.checkpoint_io import is_optimizer_entry
from bert_tf.errors import ConfigError

# (original name regex, HF name template, transpose), from hf_mapping.py's table read the other
# way. "{i}" is the layer number, "{m}" the query/key/value projection.
_ENCODER_TO_HF: Tuple[Tuple[str, str, bool], ...] = tuple(
    (name_pattern(original), hf, transpose) for original, hf, transpose in ENCODER_NAMES)

# Heads: (original name, HF name, transpose), by HF architecture.
_HEADS_TO_HF: Dict[str, Tuple[Tuple[str, str, bool], ...]] = HEAD_NAMES

# Original hidden_act -> HF hidden_act with the same function (spec 2.7 for "gelu"); bert_tf's
# "gelu_exact" (written by `convert --hidden_act=source`) is HF's "gelu", the erf form.
HF_HIDDEN_ACT = {"gelu": "gelu_new", GELU_EXACT: "gelu", "relu": "relu", "tanh": "tanh",
                 "linear": "linear"}

LAYER_NORM_EPS = 1e-12  # the original's LayerNorm epsilon (spec 2.8)


def hf_architecture(names) -> str:
    """The HF class whose names cover the heads among the original ``names``.

    Raises:
      ConfigError: the heads of two tasks at once, or half a head (names the missing ones).
    """
    found = []
    for arch, rows in _HEADS_TO_HF.items():
        head_names = [r[0] for r in rows]
        present = [n for n in head_names if n in names]
        if present:
            missing = [n for n in head_names if n not in names]
            if missing:
                raise ConfigError(f"checkpoint has {', '.join(present)} but not {', '.join(missing)}"
                                  f" (needed for HF {arch})")
            found.append(arch)
    if len(found) > 1:
        raise ConfigError(f"checkpoint holds the heads of {' and '.join(found)}; HF folders "
                          f"hold one")
    return found[0] if found else "BertModel"


def convert_original_weights(arrays: Mapping[str, np.ndarray], source: str = "checkpoint"
                             ) -> Tuple[Dict[str, np.ndarray], str, List[str]]:
    """Renames (and transposes) original BERT variables to HF names.

    Args:
      arrays: original name -> array (float32 weights; `global_step` int64 and `*/adam_m`,
        `*/adam_v` slots are accepted and left out).
      source: the checkpoint, for error messages.

    Returns:
      (HF name -> contiguous array of the same dtype, HF architecture, the names left out).

    Raises:
      ConfigError: a variable without a HF name (names it), or an incomplete/mixed head.
    """
    skipped = sorted(n for n in arrays if is_optimizer_entry(n))
    names = [n for n in sorted(arrays) if n not in skipped]
    arch = hf_architecture(names)
    prefix = "" if arch == "BertModel" else "bert."
    head_rows = {r[0]: r for r in _HEADS_TO_HF.get(arch, ())}
    out: Dict[str, np.ndarray] = {}
    for name in names:
        value = np.asarray(arrays[name])
        if name in head_rows:
            _, target, transpose = head_rows[name]
        else:
            target = None
            for pattern, template, transpose in _ENCODER_TO_HF:
                m = re.fullmatch(pattern, name)
                if m:
                    groups = m.groups()
                    target = prefix + template.format(i=groups[0] if groups else "",
                                                      m=groups[1] if len(groups) > 1 else "")
                    break
            if target is None:
                raise ConfigError(f"{source}: variable {name} {list(value.shape)} has no Hugging "
                                  f"Face BERT name")
        out[target] = np.ascontiguousarray(value.T if transpose else value)
    return out, arch, skipped


def hf_config_dict(config: BertConfig, architecture: str = "BertModel", num_labels: int = 2,
                   source: str = "bert_config.json") -> Dict:
    """A HF `config.json` dict for ``config`` (the original's 11 keys, HF's spelling of them).

    ``hidden_act`` maps through :data:`HF_HIDDEN_ACT` (``"gelu"`` -> ``"gelu_new"``, the tanh
    form; ``"gelu_exact"`` -> ``"gelu"``, the erf form); `layer_norm_eps` is the original's 1e-12, `position_embedding_type` absolute. Other
    keys of ``config`` (e.g. the multilingual configs' `directionality`, `pooler_*`) are kept,
    as HF keeps unknown keys.

    Raises:
      ConfigError: an activation HF's BERT does not have (names ``source``).
    """
    values = config.to_dict()
    act = values["hidden_act"]
    if act not in HF_HIDDEN_ACT:
        raise ConfigError(f"{source}: hidden_act {act!r} has no Hugging Face equivalent "
                          f"(known: {sorted(HF_HIDDEN_ACT)})")
    out = {"architectures": [architecture], "model_type": "bert"}
    out.update(values)
    out.update({"hidden_act": HF_HIDDEN_ACT[act], "layer_norm_eps": LAYER_NORM_EPS,
                "position_embedding_type": "absolute", "pad_token_id": 0})
    if architecture == "BertForSequenceClassification":
        out["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        out["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
    return out


def hf_tokenizer_config(do_lower_case: bool, max_position_embeddings: int) -> Dict:
    """`tokenizer_config.json` for HF's `BertTokenizer` on the original vocab.

    ``strip_accents`` is left unset, which in HF means "strip when lower-casing", the
    original `BasicTokenizer` rule (spec 4.4); Chinese characters are split as in the original.
    """
    return {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(do_lower_case),
            "tokenize_chinese_chars": True, "strip_accents": None,
            "model_max_length": int(max_position_embeddings),
            "unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
            "cls_token": "[CLS]", "mask_token": "[MASK]"}
