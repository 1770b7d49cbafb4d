"""THE table from original XLNet checkpoint names to Keras weights (spec `xlnet.md` 4.2, 4.3).

Loading and saving both read this table: loading assigns ``checkpoint[name]`` to the weight,
saving writes the weight under ``name`` (the same table read backwards), so a file written
here loads in the original code. Each row is ``(original name suffix, attribute path)``:

* :data:`TRANSFORMER_NAMES` under ``model/transformer/`` (on :class:`XLNetModel`); the
  biases are ``[NL, N, Dh]`` with ``untie_r`` and ``[N, Dh]`` without; `seg_embed` is always
  ``[NL, 2, N, Dh]``;
* :data:`MASK_EMB_NAMES` (only when the model has `mask_emb`, i.e. pretraining);
* :data:`LAYER_NAMES` under ``model/transformer/layer_{i}/`` (13 per layer);
* :data:`LM_HEAD_NAMES` under ``model/`` (tied embeddings: no weight variable);
* :data:`SUMMARY_PROJ_NAMES` / :data:`SUMMARY_ATTN_NAMES` under ``model/sequnece_summary/``
  (the original misspelling);
* :data:`LOGIT_NAMES` under ``model/<head scope>/`` (``classification_<x>`` /
  ``regression_<task>``).

Original-layout checkpoints of fine-tuning runs also hold optimizer state: `global_step`,
``<var>/adam_m``, ``<var>/adam_v`` (AdamWeightDecay) or ``<var>/Adam``, ``<var>/Adam_1``,
``beta1_power``, ``beta2_power`` (plain Adam); loading skips all of them.
"""

import collections
import re
from typing import Dict, List, Mapping, Optional

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io

SCOPE = "model"
TRANSFORMER_SCOPE = "model/transformer"
SUMMARY_SCOPE = "model/sequnece_summary"  # sic: the original's variable scope name.

TRANSFORMER_NAMES = (
    ("word_embedding/lookup_table", "lookup_table"),
    ("r_w_bias", "r_w_bias"),
    ("r_r_bias", "r_r_bias"),
    ("r_s_bias", "r_s_bias"),
    ("seg_embed", "seg_embed"),
)

MASK_EMB_NAMES = (
    ("mask_emb/mask_emb", "mask_emb"),
)

LAYER_NAMES = (
    ("rel_attn/q/kernel", "rel_attn.q_kernel"),
    ("rel_attn/k/kernel", "rel_attn.k_kernel"),
    ("rel_attn/v/kernel", "rel_attn.v_kernel"),
    ("rel_attn/r/kernel", "rel_attn.r_kernel"),
    ("rel_attn/o/kernel", "rel_attn.o_kernel"),
    ("rel_attn/LayerNorm/gamma", "rel_attn.layer_norm.gamma"),
    ("rel_attn/LayerNorm/beta", "rel_attn.layer_norm.beta"),
    ("ff/layer_1/kernel", "ff.layer_1.kernel"),
    ("ff/layer_1/bias", "ff.layer_1.bias"),
    ("ff/layer_2/kernel", "ff.layer_2.kernel"),
    ("ff/layer_2/bias", "ff.layer_2.bias"),
    ("ff/LayerNorm/gamma", "ff.layer_norm.gamma"),
    ("ff/LayerNorm/beta", "ff.layer_norm.beta"),
)

LM_HEAD_NAMES = (
    ("lm_loss/bias", "bias"),
)

SUMMARY_PROJ_NAMES = (
    ("summary/kernel", "summary.kernel"),
    ("summary/bias", "summary.bias"),
)

SUMMARY_ATTN_NAMES = (
    ("summary_bias", "summary_bias"),
    ("abs_attn/q/kernel", "abs_attn.q_kernel"),
    ("abs_attn/k/kernel", "abs_attn.k_kernel"),
    ("abs_attn/v/kernel", "abs_attn.v_kernel"),
    ("abs_attn/o/kernel", "abs_attn.o_kernel"),
    ("abs_attn/LayerNorm/gamma", "abs_attn.layer_norm.gamma"),
    ("abs_attn/LayerNorm/beta", "abs_attn.layer_norm.beta"),
)

LOGIT_NAMES = (
    ("logit/kernel", "logit.kernel"),
    ("logit/bias", "logit.bias"),
)

# The SQuAD heads of run_squad (spec 3.16), at the top of the checkpoint (not under model/).
QA_HEAD_NAMES = (
    ("start_logits/dense/kernel", "start_dense.kernel"),
    ("start_logits/dense/bias", "start_dense.bias"),
    ("end_logits/dense_0/kernel", "end_dense_0.kernel"),
    ("end_logits/dense_0/bias", "end_dense_0.bias"),
    ("end_logits/LayerNorm/gamma", "end_layer_norm.gamma"),
    ("end_logits/LayerNorm/beta", "end_layer_norm.beta"),
    ("end_logits/dense_1/kernel", "end_dense_1.kernel"),
    ("end_logits/dense_1/bias", "end_dense_1.bias"),
    ("answer_class/dense_0/kernel", "answer_dense_0.kernel"),
    ("answer_class/dense_0/bias", "answer_dense_0.bias"),
    ("answer_class/dense_1/kernel", "answer_dense_1.kernel"),
)

# The RACE head of run_race (spec 3.17), at the top of the checkpoint.
RACE_HEAD_NAMES = (
    ("logits/dense/kernel", "kernel"),
    ("logits/dense/bias", "bias"),
)

# Optimizer state of TF1's plain Adam, beyond checkpoint_io.is_optimizer_entry's AdamW slots.
_ADAM_STATE = re.compile(r"(/Adam(_\d+)?$)|(^beta[12]_power(_\d+)?$)")


def _attr(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def transformer_map(xlnet) -> "collections.OrderedDict":
    """Original name -> variable for an :class:`XLNetModel` (5 [+ 1] + 13 NL entries)."""
    table = collections.OrderedDict()
    for suffix, path in TRANSFORMER_NAMES:
        table[f"{TRANSFORMER_SCOPE}/{suffix}"] = _attr(xlnet, path)
    if xlnet.mask_emb is not None:
        for suffix, path in MASK_EMB_NAMES:
            table[f"{TRANSFORMER_SCOPE}/{suffix}"] = _attr(xlnet, path)
    for i, layer in enumerate(xlnet.transformer_layers):
        for suffix, path in LAYER_NAMES:
            table[f"{TRANSFORMER_SCOPE}/layer_{i}/{suffix}"] = _attr(layer, path)
    return table


def lm_head_map(lm_head) -> "collections.OrderedDict":
    """``model/lm_loss/bias`` -> the :class:`LMHead` bias."""
    return collections.OrderedDict((f"{SCOPE}/{s}", _attr(lm_head, p)) for s, p in LM_HEAD_NAMES)


def summary_map(summary) -> "collections.OrderedDict":
    """Names of a :class:`SequenceSummary` under ``model/sequnece_summary`` (0, 2, 7 or 9)."""
    table = collections.OrderedDict()
    if summary.summary_bias is not None:
        for suffix, path in SUMMARY_ATTN_NAMES:
            table[f"{SUMMARY_SCOPE}/{suffix}"] = _attr(summary, path)
    if summary.summary is not None:
        for suffix, path in SUMMARY_PROJ_NAMES:
            table[f"{SUMMARY_SCOPE}/{suffix}"] = _attr(summary, path)
    return table


def logit_head_map(head) -> "collections.OrderedDict":
    """``model/<head.scope>/logit/{kernel,bias}`` of a :class:`LogitHead`."""
    return collections.OrderedDict((f"{SCOPE}/{head.scope}/{s}", _attr(head, p))
                                   for s, p in LOGIT_NAMES)


def qa_heads_map(qa_heads) -> "collections.OrderedDict":
    """The 11 names of :data:`QA_HEAD_NAMES` -> the :class:`bert_tf.xlnet.squad.QAHeads`
    weights."""
    return collections.OrderedDict((s, _attr(qa_heads, p)) for s, p in QA_HEAD_NAMES)


def race_head_map(race_logits) -> "collections.OrderedDict":
    """``logits/dense/{kernel,bias}`` -> the RACE dense layer of
    :class:`bert_tf.xlnet.race.XLNetRace`."""
    return collections.OrderedDict((s, _attr(race_logits, p)) for s, p in RACE_HEAD_NAMES)


def xlnet_variable_map(model=None, xlnet=None, lm_head=None, summary=None, head=None,
                       qa_heads=None, race_logits=None) -> "collections.OrderedDict":
    """THE table for a whole model: original name -> variable.

    Args:
      model: an :class:`XLNetModel`, :class:`XLNetPretrainingModel`,
        :class:`XLNetClassifier`, :class:`bert_tf.xlnet.squad.XLNetSquad` or
        :class:`bert_tf.xlnet.race.XLNetRace`; its parts are found by attribute (`xlnet`,
        `lm_head`, `sequence_summary`, `head`, `qa_heads`, `race_logits`).
      xlnet, lm_head, summary, head, qa_heads, race_logits: parts given directly (override
        ``model``'s).

    Returns:
      OrderedDict name -> variable.
    """
    if model is not None:
        if hasattr(model, "transformer_layers"):
            xlnet = xlnet or model
        else:
            xlnet = xlnet or getattr(model, "xlnet", None)
            lm_head = lm_head or getattr(model, "lm_head", None)
            summary = summary or getattr(model, "sequence_summary", None)
            head = head or getattr(model, "head", None)
            qa_heads = qa_heads or getattr(model, "qa_heads", None)
            race_logits = race_logits or getattr(model, "race_logits", None)
    table = collections.OrderedDict()
    if xlnet is not None:
        table.update(transformer_map(xlnet))
    if lm_head is not None:
        table.update(lm_head_map(lm_head))
    if summary is not None:
        table.update(summary_map(summary))
    if head is not None:
        table.update(logit_head_map(head))
    if qa_heads is not None:
        table.update(qa_heads_map(qa_heads))
    if race_logits is not None:
        table.update(race_head_map(race_logits))
    return table


def is_optimizer_state(name: str) -> bool:
    """True for `global_step`, AdamW slots (`/adam_m`, `/adam_v`) and TF1 Adam state
    (`/Adam`, `/Adam_1`, `beta1_power`, `beta2_power`)."""
    return checkpoint_io.is_optimizer_entry(name) or bool(_ADAM_STATE.search(name))


def check_compatible(name_to_variable: Mapping, path: str, untie_r: Optional[bool] = None,
                     sizes_from: str = "config") -> str:
    """Raises a clear error when the checkpoint cannot belong to this model; returns the prefix.

    ``sizes_from``: where the model's settings come from, for the fix the message gives:
    ``"config"`` (xlnet_config.json) or ``"flags"`` (run_pretraining's ``--untie_r``,
    ``--d_model``, ...).

    Checks, before anything is assigned: (1) the checkpoint has XLNet names at all (a BERT
    checkpoint, `bert/...`, is named as such); (2) the `r_w_bias` rank matches ``untie_r``
    (``[NL, N, Dh]`` = untie_r true, ``[N, Dh]`` = false). Other shape mismatches are raised by
    :func:`bert_tf.checkpoint_io.assign_from_checkpoint` naming the variable and both
    shapes.

    Raises:
      CheckpointError: as above, naming the checkpoint.
    """
    prefix = checkpoint_io.resolve_prefix(path)
    stored = checkpoint_io.list_checkpoint(prefix)
    model_names = [n for n in stored if not is_optimizer_state(n)]
    xlnet_names = [n for n in model_names if n.startswith(f"{TRANSFORMER_SCOPE}/")]
    if not xlnet_names and not checkpoint_io.map_names(name_to_variable, model_names).source:
        bert_names = [n for n in model_names if n.startswith("bert/") or n.startswith("cls/")]
        if bert_names:
            family = checkpoint_io.checkpoint_family(bert_names)
            raise CheckpointError(
                f"{prefix}: this looks like {'an' if family == 'ALBERT' else 'a'} {family} "
                f"checkpoint (it has {bert_names[0]} and no "
                f"{TRANSFORMER_SCOPE}/... variables); XLNet needs an XLNet checkpoint "
                f"(e.g. xlnet_cased_L-24_H-1024_A-16/xlnet_model.ckpt)")
        if name_to_variable and any(n.startswith(f"{TRANSFORMER_SCOPE}/") for n in name_to_variable):
            sample = ", ".join(model_names[:3]) or "nothing"
            raise CheckpointError(f"{prefix}: no XLNet variables ({TRANSFORMER_SCOPE}/...) in this "
                                  f"checkpoint (it holds {sample}...)")
    bias_name = f"{TRANSFORMER_SCOPE}/r_w_bias"
    if bias_name in stored and bias_name in name_to_variable:
        ckpt_rank = len(stored[bias_name][0])
        model_shape = tuple(name_to_variable[bias_name].shape)
        if ckpt_rank != len(model_shape):
            ckpt_untie = ckpt_rank == 3
            model_untie = len(model_shape) == 3 if untie_r is None else untie_r
            other = _other_shape_mismatch(stored, name_to_variable)
            fix = (f"pass --untie_r={ckpt_untie}" if sizes_from == "flags" else
                   f"set \"untie_r\": {str(ckpt_untie).lower()} in xlnet_config.json")
            raise CheckpointError(
                f"{prefix}: the checkpoint was trained with untie_r={str(ckpt_untie).lower()} "
                f"({bias_name} has shape {list(stored[bias_name][0])}) but the {sizes_from} "
                f"say{'s' if sizes_from == 'config' else ''} untie_r="
                f"{str(model_untie).lower()} (model shape {list(model_shape)})"
                + (f"; the sizes differ too ({other})" if other else "") + f"; {fix}")
        held = list(stored[bias_name][0])
        if ckpt_rank == 3 and held[0] != model_shape[0]:  # untied: one bias per layer
            what = "the flags say" if sizes_from == "flags" else "the config says"
            raise CheckpointError(
                f"{prefix}: the checkpoint has {held[0]} layers ({bias_name} has shape {held}) "
                f"and {what} n_layer={model_shape[0]}; its untied biases are stacked over "
                "the layers, so n_layer must match (bert_tf: BERT runs a config with fewer "
                "layers on their first ones; XLNet with untie_r cannot)")
    return prefix


# Variables whose shape follows untie_r (one per layer, or one shared).
_UNTIE_R_VARIABLES = tuple(f"{TRANSFORMER_SCOPE}/{n}" for n in
                           ("r_w_bias", "r_r_bias", "r_s_bias", "seg_embed"))


def _other_shape_mismatch(stored: Mapping, name_to_variable: Mapping) -> Optional[str]:
    """``"<name> has shape [..] in the checkpoint, [..] in the model"`` for the first
    variable (by name) besides the untie_r ones whose shapes differ, or None."""
    for name in sorted(name_to_variable):
        if name in stored and name not in _UNTIE_R_VARIABLES:
            held, model = list(stored[name][0]), list(name_to_variable[name].shape)
            if held != model:
                return f"{name} has shape {held} in the checkpoint, {model} in the model"
    return None


def check_checkpoint_fits(name_to_variable: Mapping, path: str, untie_r: Optional[bool] = None,
                          require_all: bool = False, sizes_from: str = "config") -> str:
    """Checks a checkpoint against the model without assigning anything, so that a bad one
    fails before any file is written: XLNet names at all (a BERT checkpoint is named as such)
    and the ``untie_r`` setting (:func:`check_compatible`), every shape, and with
    ``require_all`` every model variable
    (:func:`bert_tf.checkpoint_io.check_fits`).

    Args:
      name_to_variable: from :func:`xlnet_variable_map`; path: checkpoint prefix, file or
      folder; untie_r: the config's value (for the message); require_all: every variable;
      sizes_from: ``"config"`` or ``"flags"`` (:func:`check_compatible`).

    Returns:
      the checkpoint prefix.

    Raises:
      CheckpointError: naming the checkpoint, the variable and both shapes.
    """
    prefix = check_compatible(name_to_variable, path, untie_r=untie_r, sizes_from=sizes_from)
    return checkpoint_io.check_fits(
        name_to_variable, prefix, require_all=require_all,
        missing_hint="a checkpoint of another task, --cls_scope or --summary_type?")


def _missing_hint(missing: List[str]) -> str:
    """The end of the missing-variables error: only a task's head missing (nothing under
    ``model/transformer/``) means a pre-trained checkpoint given where a fine-tuned one goes."""
    if all(not n.startswith("model/transformer/") for n in missing):
        return ("a pre-trained checkpoint without this task's head? Fine-tune first "
                "(--do_train), or give a fine-tuned checkpoint")
    return "does the config match it?"


def load_xlnet_checkpoint(name_to_variable: Mapping, path: str, require_all: bool = False,
                          untie_r: Optional[bool] = None) -> checkpoint_io.LoadReport:
    """Assigns an original-layout XLNet checkpoint to the mapped variables.

    Every mapped variable whose name is in the checkpoint is assigned (original
    `init_from_checkpoint`); optimizer state is skipped; the report lists the missing model
    variables and the unused checkpoint entries.

    Args:
      name_to_variable: from :func:`xlnet_variable_map`.
      path: checkpoint prefix, file or folder.
      require_all: raise if a model variable is missing from the checkpoint.
      untie_r: the config's value, for the error message (default: read from the shapes).

    Returns:
      a :class:`bert_tf.checkpoint_io.LoadReport`.

    Raises:
      CheckpointError: unreadable checkpoint; a BERT checkpoint; the other untie_r setting;
        a shape mismatch (variable and both shapes); missing variables with ``require_all``.
    """
    prefix = check_compatible(name_to_variable, path, untie_r=untie_r)
    report = checkpoint_io.assign_from_checkpoint(name_to_variable, prefix,
                                                  require_all=require_all,
                                                  missing_hint=_missing_hint)
    adam_state = [n for n in report.unused if is_optimizer_state(n)]
    if adam_state:
        report.unused = [n for n in report.unused if n not in adam_state]
        report.skipped = sorted(report.skipped + adam_state)
    return report


def save_xlnet_checkpoint(name_to_variable: Mapping, prefix: str,
                          extra: Optional[Dict] = None) -> str:
    """Writes the mapped variables under their original names at ``prefix`` (atomically).

    Values, shapes and dtypes are written as held (bit-exact). ``extra`` adds entries (e.g.
    ``{"global_step": np.int64(0)}``).

    Raises:
      CheckpointError: the folder is not writable; ``extra`` repeats a model name.
    """
    arrays = checkpoint_io.variables_to_arrays(name_to_variable)
    if extra:
        clash = sorted(set(extra) & set(arrays))
        if clash:
            raise CheckpointError(f"{prefix}: extra entries repeat model variables: {', '.join(clash)}")
        arrays.update(extra)
    return checkpoint_io.write_checkpoint(prefix, arrays)
