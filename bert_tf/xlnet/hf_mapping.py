"""Original XLNet checkpoint names <-> Hugging Face `XLNetModel` names, both ways.

The original keeps the transformer under ``model/transformer/`` (spec `xlnet.md` 4.2) with
the relative-attention biases either shared (``untie_r`` false: `r_w_bias`, `r_r_bias`,
`r_s_bias` ``[N, Dh]``) or per layer (``[NL, N, Dh]``) and the segment embeddings stacked
(`seg_embed` ``[NL, 2, N, Dh]``). HF's `XLNetRelativeAttention` holds all four per layer
(``layer.{i}.rel_attn.r_w_bias`` ``[N, Dh]``, ``seg_embed`` ``[2, N, Dh]``) whatever
`untie_r` says, so a shared bias is written into every layer, and read back only when every
layer holds the same bits. The projections `q`, `k`, `v`, `o`, `r` are ``[D, N, Dh]`` on both
sides (HF's `o` is applied as ``einsum("ibnd,hnd->ibh")``, the original's `o/kernel` the same
way); the FFN kernels ``[in, out]`` become `nn.Linear` ``[out, in]``.

HF's ``ff_activation="gelu"`` is the exact erf GELU; the original's `gelu` is the tanh form
(`modeling.gelu`), HF's ``"gelu_new"``. HF's `XLNetConfig` derives ``d_head = d_model //
n_head`` and refuses any other value, so such checkpoints cannot be converted.

Not converted (listed, never silently): `mask_emb` only when absent from the checkpoint;
the heads (`model/lm_loss/bias`, `model/sequnece_summary/*`, task logits) and optimizer
state, which have no `XLNetModel` counterpart.
"""

from typing import Dict, List, Mapping, Tuple

import numpy as np

from bert_tf.checkpoint_io import is_optimizer_entry
from bert_tf.errors import ConfigError
from bert_tf.xlnet.checkpoint_map import TRANSFORMER_SCOPE
from bert_tf.xlnet.config import XLNetConfig

# Per-layer tensors: (original suffix under layer_{i}/, HF suffix under layer.{i}., transpose).
LAYER_NAMES: Tuple[Tuple[str, str, bool], ...] = (
    ("rel_attn/q/kernel", "rel_attn.q", False),
    ("rel_attn/k/kernel", "rel_attn.k", False),
    ("rel_attn/v/kernel", "rel_attn.v", False),
    ("rel_attn/o/kernel", "rel_attn.o", False),
    ("rel_attn/r/kernel", "rel_attn.r", False),
    ("rel_attn/LayerNorm/gamma", "rel_attn.layer_norm.weight", False),
    ("rel_attn/LayerNorm/beta", "rel_attn.layer_norm.bias", False),
    ("ff/layer_1/kernel", "ff.layer_1.weight", True),
    ("ff/layer_1/bias", "ff.layer_1.bias", False),
    ("ff/layer_2/kernel", "ff.layer_2.weight", True),
    ("ff/layer_2/bias", "ff.layer_2.bias", False),
    ("ff/LayerNorm/gamma", "ff.layer_norm.weight", False),
    ("ff/LayerNorm/beta", "ff.layer_norm.bias", False),
)

# Stacked (or shared) tensors of model/transformer -> per-layer HF names.
BIAS_NAMES: Tuple[Tuple[str, str], ...] = (
    ("r_w_bias", "rel_attn.r_w_bias"),
    ("r_r_bias", "rel_attn.r_r_bias"),
    ("r_s_bias", "rel_attn.r_s_bias"),
)
SEG_EMBED = ("seg_embed", "rel_attn.seg_embed")

TOP_NAMES: Tuple[Tuple[str, str], ...] = (
    ("word_embedding/lookup_table", "word_embedding.weight"),
    ("mask_emb/mask_emb", "mask_emb"),
)

HF_FF_ACTIVATION = {"gelu": "gelu_new", "relu": "relu"}
_FROM_HF_FF_ACTIVATION = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu", "relu": "relu"}
LAYER_NORM_EPS = 1e-12  # the original's tf.contrib.layers.layer_norm epsilon


def hf_config_dict(config: XLNetConfig, source: str = "xlnet_config.json") -> Dict:
    """HF `XLNetModel` `config.json` for ``config``: its keys spelled HF's way, the original
    run defaults where HF has them (`attn_type` bi, `bi_data` false, `clamp_len` -1,
    `same_length` false, no memory), the summary as the original's `summary_type="last"`
    with projection and tanh.

    Raises:
      ConfigError: ``d_head != d_model // n_head`` (HF cannot hold it), names ``source``.
    """
    if config.d_model % config.n_head or config.d_head != config.d_model // config.n_head:
        raise ConfigError(f"{source}: d_head {config.d_head} != d_model // n_head "
                          f"({config.d_model} // {config.n_head}); HF XLNet requires it")
    return {"architectures": ["XLNetModel"], "model_type": "xlnet",
            "vocab_size": config.n_token, "d_model": config.d_model, "n_layer": config.n_layer,
            "n_head": config.n_head, "d_head": config.d_head, "d_inner": config.d_inner,
            "ff_activation": HF_FF_ACTIVATION[config.ff_activation], "untie_r": config.untie_r,
            "attn_type": "bi", "layer_norm_eps": LAYER_NORM_EPS, "dropout": 0.1,
            "mem_len": None, "reuse_len": None, "bi_data": False, "clamp_len": -1,
            "same_length": False, "summary_type": "last", "summary_use_proj": True,
            "summary_activation": "tanh", "summary_last_dropout": 0.1,
            "pad_token_id": 5, "bos_token_id": 1, "eos_token_id": 2}


def xlnet_config_from_hf(hf_config: Mapping, source: str = "config.json") -> XLNetConfig:
    """The original `xlnet_config.json` keys of a HF XLNet `config.json` dict.

    Raises:
      ConfigError: a key is missing, an activation the original lacks (HF ``"gelu"`` is the
        erf form, not the original's), or a setting the original's checkpoint does not hold
        that differs from the original's (``attn_type`` other than bi).
    """
    keys = ("vocab_size", "d_model", "n_layer", "n_head", "d_inner", "ff_activation", "untie_r")
    missing = [k for k in keys if k not in hf_config]
    if missing:
        raise ConfigError(f"{source}: missing HF XLNet config key(s) {', '.join(missing)}")
    act = hf_config["ff_activation"]
    if act not in _FROM_HF_FF_ACTIVATION:
        raise ConfigError(f"{source}: ff_activation {act!r} has no original XLNet equivalent "
                          f"(known: {sorted(_FROM_HF_FF_ACTIVATION)}; HF 'gelu' is the erf form)")
    if hf_config.get("attn_type", "bi") != "bi":
        raise ConfigError(f"{source}: attn_type {hf_config['attn_type']!r}: the original XLNetModel "
                          f"is 'bi'")
    d_head = hf_config.get("d_head") or hf_config["d_model"] // hf_config["n_head"]
    return XLNetConfig.from_dict(
        {"n_layer": hf_config["n_layer"], "d_model": hf_config["d_model"],
         "n_head": hf_config["n_head"], "d_head": d_head, "d_inner": hf_config["d_inner"],
         "ff_activation": _FROM_HF_FF_ACTIVATION[act], "untie_r": hf_config["untie_r"],
         "n_token": hf_config["vocab_size"]}, source=source)


def _layer_shape(suffix: str, config: XLNetConfig) -> Tuple[int, ...]:
    """Shape of a per-layer original variable (spec `xlnet.md` 4.2)."""
    d, f = config.d_model, config.d_inner
    if suffix.startswith("rel_attn/") and suffix.endswith("/kernel"):
        return (d, config.n_head, config.d_head)
    return {"ff/layer_1/kernel": (d, f), "ff/layer_1/bias": (f,), "ff/layer_2/kernel": (f, d)}.get(suffix, (d,))


def convert_original_weights(arrays: Mapping[str, np.ndarray], config: XLNetConfig,
                             source: str = "checkpoint"
                             ) -> Tuple[Dict[str, np.ndarray], List[str]]:
    """HF `XLNetModel` name -> array from an original XLNet checkpoint's arrays.

    Returns:
      (HF tensors, the original names left out: heads, optimizer state).

    Raises:
      ConfigError: a transformer variable the config implies is missing, or has the wrong
        shape (names it and both shapes).
    """
    nl, n, dh = config.n_layer, config.n_head, config.d_head
    used = set()

    def take(suffix, shape=None):
        name = f"{TRANSFORMER_SCOPE}/{suffix}"
        if name not in arrays:
            raise ConfigError(f"{source}: lacks {name} (n_layer={nl})")
        value = np.asarray(arrays[name])
        if shape is not None and tuple(value.shape) != tuple(shape):
            raise ConfigError(f"{source}: {name} has shape {list(value.shape)} but the config "
                              f"implies {list(shape)}")
        used.add(name)
        return value

    out: Dict[str, np.ndarray] = {}
    out["word_embedding.weight"] = take("word_embedding/lookup_table", (config.n_token, config.d_model))
    if f"{TRANSFORMER_SCOPE}/mask_emb/mask_emb" in arrays:
        out["mask_emb"] = take("mask_emb/mask_emb", (1, 1, config.d_model))
    bias_shape = (nl, n, dh) if config.untie_r else (n, dh)
    biases = {orig: take(orig, bias_shape) for orig, _ in BIAS_NAMES}
    seg_embed = take(SEG_EMBED[0], (nl, 2, n, dh))
    for i in range(nl):
        for orig, hf in BIAS_NAMES:
            out[f"layer.{i}.{hf}"] = biases[orig][i] if config.untie_r else biases[orig]
        out[f"layer.{i}.{SEG_EMBED[1]}"] = seg_embed[i]
        for orig, hf, transpose in LAYER_NAMES:
            value = take(f"layer_{i}/{orig}", _layer_shape(orig, config))
            out[f"layer.{i}.{hf}"] = value.T if transpose else value
    extra = [k for k in arrays if k.startswith(TRANSFORMER_SCOPE + "/") and k not in used
             and not is_optimizer_entry(k)]
    if extra:
        raise ConfigError(f"{source}: {', '.join(sorted(extra)[:4])} not described by the config "
                          f"(n_layer={nl})")
    left_out = sorted(k for k in arrays if k not in used)
    return {k: np.ascontiguousarray(v) for k, v in out.items()}, left_out


def convert_hf_weights(tensors: Mapping[str, np.ndarray], config: XLNetConfig,
                       source: str = "model.safetensors") -> Dict[str, np.ndarray]:
    """Original name -> array from HF `XLNetModel` tensors (:func:`convert_original_weights`
    read backwards). A ``transformer.`` prefix (HF task models) is accepted; HF head tensors
    (`lm_loss.*`, `sequence_summary.*`, `logits_proj.*`...) are refused.

    Raises:
      ConfigError: a tensor is missing or unknown, or with ``untie_r`` false the layers hold
        different biases (names the tensor).
    """
    tensors = {(k[len("transformer."):] if k.startswith("transformer.") else k): v
               for k, v in tensors.items()}
    nl = config.n_layer
    used = set()

    def take(name):
        if name not in tensors:
            raise ConfigError(f"{source}: lacks {name} (n_layer={nl})")
        used.add(name)
        return np.asarray(tensors[name])

    out: Dict[str, np.ndarray] = {}
    for orig, hf in TOP_NAMES:
        if hf == "mask_emb" and hf not in tensors:
            continue
        out[f"{TRANSFORMER_SCOPE}/{orig}"] = take(hf)
    for orig, hf in BIAS_NAMES:
        per_layer = [take(f"layer.{i}.{hf}") for i in range(nl)]
        if config.untie_r:
            out[f"{TRANSFORMER_SCOPE}/{orig}"] = np.stack(per_layer)
        else:
            for i, value in enumerate(per_layer[1:], 1):
                if not np.array_equal(value, per_layer[0]):
                    raise ConfigError(f"{source}: untie_r is false but layer.{i}.{hf} differs from "
                                      f"layer.0.{hf}")
            out[f"{TRANSFORMER_SCOPE}/{orig}"] = per_layer[0]
    out[f"{TRANSFORMER_SCOPE}/{SEG_EMBED[0]}"] = np.stack(
        [take(f"layer.{i}.{SEG_EMBED[1]}") for i in range(nl)])
    for i in range(nl):
        for orig, hf, transpose in LAYER_NAMES:
            value = take(f"layer.{i}.{hf}")
            out[f"{TRANSFORMER_SCOPE}/layer_{i}/{orig}"] = value.T if transpose else value
    extra = sorted(k for k in tensors if k not in used)
    if extra:
        raise ConfigError(f"{source}: tensor(s) {', '.join(extra[:4])} have no original XLNet "
                          f"transformer name")
    return {k: np.ascontiguousarray(v.astype(np.float32) if v.dtype != np.float32 else v)
            for k, v in out.items()}
