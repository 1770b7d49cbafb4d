"""THE table from original BERT checkpoint names to Keras weights (spec `bert.md` 3.2, 3.3).

Loading and saving both read this table: loading assigns ``checkpoint[name]`` to the weight,
saving writes the weight under ``name`` (the same table read backwards), so a file we write
loads in the original code. Per-layer names (16 per block) are listed once in
:data:`ENCODER_LAYER_NAMES` as ``(suffix, attribute path)`` pairs.

Heads:
* pre-training: `cls/predictions/...`, `cls/seq_relationship/...` (:func:`pretraining_heads_map`);
* `run_classifier.py`: top-level `output_weights [num_labels, H]`, `output_bias [num_labels]`;
* `run_squad.py`: `cls/squad/output_weights [2, H]`, `cls/squad/output_bias [2]`
  (:func:`output_head_map` with the scope).
"""

import collections
from typing import Dict, Optional

from bert_tf import checkpoint_io

EMBEDDING_NAMES = (
    ("word_embeddings", "embeddings.word_embeddings"),
    ("token_type_embeddings", "embeddings.token_type_embeddings"),
    ("position_embeddings", "embeddings.position_embeddings"),
    ("LayerNorm/beta", "embeddings.layer_norm.beta"),
    ("LayerNorm/gamma", "embeddings.layer_norm.gamma"),
)

ENCODER_LAYER_NAMES = (
    ("attention/self/query/kernel", "attention.query.kernel"),
    ("attention/self/query/bias", "attention.query.bias"),
    ("attention/self/key/kernel", "attention.key.kernel"),
    ("attention/self/key/bias", "attention.key.bias"),
    ("attention/self/value/kernel", "attention.value.kernel"),
    ("attention/self/value/bias", "attention.value.bias"),
    ("attention/output/dense/kernel", "attention_output.kernel"),
    ("attention/output/dense/bias", "attention_output.bias"),
    ("attention/output/LayerNorm/beta", "attention_layer_norm.beta"),
    ("attention/output/LayerNorm/gamma", "attention_layer_norm.gamma"),
    ("intermediate/dense/kernel", "intermediate.kernel"),
    ("intermediate/dense/bias", "intermediate.bias"),
    ("output/dense/kernel", "output_dense.kernel"),
    ("output/dense/bias", "output_dense.bias"),
    ("output/LayerNorm/beta", "output_layer_norm.beta"),
    ("output/LayerNorm/gamma", "output_layer_norm.gamma"),
)

POOLER_NAMES = (
    ("pooler/dense/kernel", "pooler.kernel"),
    ("pooler/dense/bias", "pooler.bias"),
)

PRETRAINING_HEAD_NAMES = (
    ("cls/predictions/transform/dense/kernel", "predictions.transform.kernel"),
    ("cls/predictions/transform/dense/bias", "predictions.transform.bias"),
    ("cls/predictions/transform/LayerNorm/beta", "predictions.transform_layer_norm.beta"),
    ("cls/predictions/transform/LayerNorm/gamma", "predictions.transform_layer_norm.gamma"),
    ("cls/predictions/output_bias", "predictions.output_bias"),
    ("cls/seq_relationship/output_weights", "seq_relationship.output_weights"),
    ("cls/seq_relationship/output_bias", "seq_relationship.output_bias"),
)


def _attr(obj, path):
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def bert_model_map(model, scope: str = "bert") -> "collections.OrderedDict":
    """Original name -> variable for every weight of a built :class:`BertModel`.

    Args:
      model: a `BertModel` whose weights exist (call it once or `build_with_dummy_input`).
      scope: the original variable scope (``"bert"``).

    Returns:
      OrderedDict of 5 + 16 L + 2 entries in the original order.
    """
    table = collections.OrderedDict()
    for suffix, path in EMBEDDING_NAMES:
        table[f"{scope}/embeddings/{suffix}"] = _attr(model, path)
    for i, block in enumerate(model.encoder_layers):
        for suffix, path in ENCODER_LAYER_NAMES:
            table[f"{scope}/encoder/layer_{i}/{suffix}"] = _attr(block, path)
    for suffix, path in POOLER_NAMES:
        table[f"{scope}/{suffix}"] = _attr(model, path)
    return table


def pretraining_heads_map(heads) -> "collections.OrderedDict":
    """Original name -> variable for :class:`BertPretrainingHeads` (7 `cls/*` entries)."""
    return collections.OrderedDict((name, _attr(heads, path)) for name, path in PRETRAINING_HEAD_NAMES)


def output_head_map(head, scope: Optional[str] = None) -> "collections.OrderedDict":
    """Names of a :class:`TransposedOutput` head.

    ``scope=None`` gives the classifier's top-level `output_weights`/`output_bias`;
    ``scope="cls/squad"`` the SQuAD head.
    """
    prefix = f"{scope}/" if scope else ""
    return collections.OrderedDict([(f"{prefix}output_weights", head.output_weights),
                                    (f"{prefix}output_bias", head.output_bias)])


def load_bert_checkpoint(name_to_variable: Dict, path: str, require_all: bool = False):
    """Assigns an original checkpoint to the mapped variables; returns a `LoadReport`.

    Optimizer slots and `global_step` are skipped; missing and unused names are reported.

    Raises:
      CheckpointError: unreadable checkpoint, a shape mismatch (names the variable and both
        shapes), or with ``require_all`` a model variable absent from the checkpoint.
    """
    return checkpoint_io.assign_from_checkpoint(name_to_variable, path, require_all=require_all)


def save_bert_checkpoint(name_to_variable: Dict, prefix: str, extra: Optional[Dict] = None) -> str:
    """Writes the mapped variables (plus ``extra`` name -> array) at ``prefix``, atomically."""
    arrays = checkpoint_io.variables_to_arrays(name_to_variable)
    if extra:
        arrays.update(extra)
    return checkpoint_io.write_checkpoint(prefix, arrays)
