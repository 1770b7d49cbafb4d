"""THE table from original ALBERT checkpoint names to Keras weights.

Loading and saving both read this table: loading assigns ``checkpoint[name]`` to the weight,
saving writes the weight under ``name`` (the same table read backwards), so a file we write
loads in the original code (golden `albert/model/variables.txt` lists the 32 names of the
tiny model).

The embeddings, pooler and pre-training heads have BERT's names and math, so their rows are
BERT's tables (`bert_tf.bert.checkpoint_map`); ALBERT adds the E -> H projection and the
shared blocks, one set of 16 names per ``(group, inner group)``::

    bert/encoder/embedding_hidden_mapping_in/{kernel [E, H], bias [H]}      (only when E != H)
    bert/encoder/transformer/group_<g>/inner_group_<k>/<suffix>             (INNER_GROUP_NAMES)

Note the original's nesting (golden README surprise 6): the FFN output dense is
``ffn_1/intermediate/output/dense`` and the two LayerNorms of a block are ``LayerNorm`` (after
attention) and ``LayerNorm_1`` (after the FFN).
"""

import collections
import re
from typing import Dict, Optional

from bert_tf.bert.checkpoint_map import EMBEDDING_NAMES, POOLER_NAMES, PRETRAINING_HEAD_NAMES
from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io

EMBEDDING_PROJECTION_NAMES = (
    ("encoder/embedding_hidden_mapping_in/kernel", "embedding_hidden_mapping_in.kernel"),
    ("encoder/embedding_hidden_mapping_in/bias", "embedding_hidden_mapping_in.bias"),
)

_GROUP_RE = re.compile(r"/group_\d+/")

# (suffix under .../group_<g>/inner_group_<k>/, attribute path in bert's TransformerBlock)
INNER_GROUP_NAMES = (
    ("attention_1/self/query/kernel", "attention.query.kernel"),
    ("attention_1/self/query/bias", "attention.query.bias"),
    ("attention_1/self/key/kernel", "attention.key.kernel"),
    ("attention_1/self/key/bias", "attention.key.bias"),
    ("attention_1/self/value/kernel", "attention.value.kernel"),
    ("attention_1/self/value/bias", "attention.value.bias"),
    ("attention_1/output/dense/kernel", "attention_output.kernel"),
    ("attention_1/output/dense/bias", "attention_output.bias"),
    ("LayerNorm/beta", "attention_layer_norm.beta"),
    ("LayerNorm/gamma", "attention_layer_norm.gamma"),
    ("ffn_1/intermediate/dense/kernel", "intermediate.kernel"),
    ("ffn_1/intermediate/dense/bias", "intermediate.bias"),
    ("ffn_1/intermediate/output/dense/kernel", "output_dense.kernel"),
    ("ffn_1/intermediate/output/dense/bias", "output_dense.bias"),
    ("LayerNorm_1/beta", "output_layer_norm.beta"),
    ("LayerNorm_1/gamma", "output_layer_norm.gamma"),
)

# The ALBERT pre-training heads use BERT's names: cls/predictions/transform/dense/{kernel
# [H, E], bias [E]}, cls/predictions/transform/LayerNorm/{beta, gamma} [E],
# cls/predictions/output_bias [V], cls/seq_relationship/{output_weights [2, H], output_bias [2]}.
HEAD_NAMES = PRETRAINING_HEAD_NAMES


def _resolve(obj, path: str):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def albert_model_map(model, scope: str = "bert") -> "collections.OrderedDict":
    """Original name -> variable for every weight of a built `AlbertModel`.

    Args:
      model: an `AlbertModel` whose weights exist (call it once or `build_with_dummy_input`).
      scope: the original variable scope (``"bert"``).

    Returns:
      OrderedDict of 5 (+ 2 when E != H) + 16 x (used groups) x inner_group_num + 2 entries,
      in the original's order.
    """
    table = collections.OrderedDict()
    for suffix, path in EMBEDDING_NAMES:
        table[f"{scope}/embeddings/{suffix}"] = _resolve(model, path)
    if model.embedding_hidden_mapping_in is not None:
        for suffix, path in EMBEDDING_PROJECTION_NAMES:
            table[f"{scope}/{suffix}"] = _resolve(model, path)
    config = model.config
    for group_idx in config.used_groups:
        for inner_idx in range(config.inner_group_num):
            block = model.block(group_idx, inner_idx)
            for suffix, path in INNER_GROUP_NAMES:
                name = (f"{scope}/encoder/transformer/group_{group_idx}/"
                        f"inner_group_{inner_idx}/{suffix}")
                table[name] = _resolve(block, path)
    for suffix, path in POOLER_NAMES:
        table[f"{scope}/{suffix}"] = _resolve(model, path)
    return table


def pretraining_heads_map(heads) -> "collections.OrderedDict":
    """Original name -> variable for `AlbertPretrainingHeads` (7 `cls/*` entries)."""
    return collections.OrderedDict((name, _resolve(heads, path)) for name, path in HEAD_NAMES)


def group0_name(name: str) -> str:
    """``.../group_<g>/...`` -> ``.../group_0/...`` (the original's `/group_\\d+/` rewrite)."""
    return _GROUP_RE.sub("/group_0/", name)


def load_albert_checkpoint(name_to_variable: Dict, path: str, require_all: bool = False,
                           backbone_scope: str = "bert", init_from_group0: bool = False):
    """Assigns an original ALBERT checkpoint to the mapped variables; returns a `LoadReport`.

    Every shape is checked before anything is assigned. Names under ``backbone_scope/`` (the
    encoder) must all be in the checkpoint, so a wrong file never leaves the encoder at random
    initial values; heads (`cls/*`, classifier `output_*`) may be missing and are reported, as
    the original `init_from_checkpoint` does for a new fine-tuning head. Optimizer slots and
    `global_step` are skipped; unused names are reported.

    Args:
      name_to_variable: from :func:`albert_model_map` (plus head maps).
      path: checkpoint prefix, file or folder.
      require_all: also raise when a head variable is missing.
      backbone_scope: the scope whose variables must all load.
      init_from_group0: a variable of group k > 0 that the checkpoint lacks is loaded from
        the group_0 variable of the same name, as the original `get_assignment_map_from_
        checkpoint(..., num_of_group > 1)` does for `run_pretraining.py --init_from_group0`
        (e.g. a 1-group checkpoint initialising every group). Names the checkpoint holds
        itself still load from themselves.

    Raises:
      CheckpointError: unreadable checkpoint; a shape that does not fit (names the variable,
        the checkpoint shape and the model shape); a backbone variable absent from the
        checkpoint (names the first and its model shape, and says when the file has BERT's
        `bert/encoder/layer_<i>/...` layout); with ``require_all`` any missing variable.
    """
    stored = checkpoint_io.list_checkpoint(path)
    prefix = checkpoint_io.resolve_prefix(path)
    # model name -> checkpoint name it loads from
    source = {}
    for name in name_to_variable:
        if init_from_group0 and name not in stored and group0_name(name) in stored:
            source[name] = group0_name(name)
        else:
            source[name] = name
    bert_layout = sorted(n for n in stored if n.startswith(f"{backbone_scope}/encoder/layer_"))
    bert_hint = (f"; it holds BERT names ({bert_layout[0]}, ...): this is a BERT checkpoint, "
                 f"not ALBERT" if bert_layout else "")
    # Shapes first: a config that does not fit names the variable and both shapes.
    for name, var in name_to_variable.items():
        src = source[name]
        if src in stored and tuple(stored[src][0]) != tuple(var.shape):
            raise CheckpointError(
                f"{prefix}: variable {src} has shape {list(stored[src][0])} in the checkpoint "
                f"but {list(var.shape)} in the ALBERT model built from the config; the config "
                f"does not match this checkpoint{bert_hint}")
    missing_backbone = [n for n in name_to_variable
                        if n.startswith(backbone_scope + "/") and source[n] not in stored]
    if missing_backbone:
        first = missing_backbone[0]
        xlnet = checkpoint_io.checkpoint_family(stored) == "XLNet"
        hint = bert_hint or ("; it holds XLNet names (model/transformer/...): this is an XLNet "
                             "checkpoint, not ALBERT" if xlnet else "; does the config match it?")
        raise CheckpointError(
            f"{prefix}: ALBERT variable {first} (shape {list(name_to_variable[first].shape)}) "
            f"is not in the checkpoint ({len(missing_backbone)} {backbone_scope}/* variables "
            f"missing)"
            f"{hint}")
    aliased = {n: v for n, v in name_to_variable.items() if source[n] != n}
    if not aliased:
        return checkpoint_io.assign_from_checkpoint(name_to_variable, prefix,
                                                    require_all=require_all)
    # One pass for the names that load from themselves, then one per group whose variables
    # load from group_0 (the original's assignment_map[gid] lists).
    report = checkpoint_io.assign_from_checkpoint(
        {n: v for n, v in name_to_variable.items() if n not in aliased}, prefix,
        require_all=require_all)
    by_group = collections.OrderedDict()
    for name, var in aliased.items():
        by_group.setdefault(_GROUP_RE.search(name).group(0), {})[source[name]] = (name, var)
    used = set(name_to_variable) | set(source.values())
    for group_table in by_group.values():
        checkpoint_io.assign_from_checkpoint(
            {src: var for src, (_, var) in group_table.items()}, prefix)
        report.loaded.extend(name for name, _ in group_table.values())
    report.unused = [n for n in report.unused if n not in used]
    return report


def save_albert_checkpoint(name_to_variable: Dict, prefix: str,
                           extra: Optional[Dict] = None) -> str:
    """Writes the mapped variables (plus ``extra`` name -> array) at ``prefix``, atomically.

    Returns:
      ``prefix``.

    Raises:
      CheckpointError: the folder is not writable.
    """
    arrays = checkpoint_io.variables_to_arrays(name_to_variable)
    if extra:
        arrays.update(extra)
    return checkpoint_io.write_checkpoint(prefix, arrays)
