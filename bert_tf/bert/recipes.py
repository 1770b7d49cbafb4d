"""The fine-tuning recipes of issue 26 on BERT's and ALBERT's tasks (bert_tf, beyond the
original): where a variable sits in the model (its block, by original name), ``--seed`` /
``--deterministic``, ``--lr_layer_decay_rate`` / ``--unfreeze_schedule``,
``--freeze_encoder``, and the checks of their flags. The family-free parts are in
:mod:`bert_tf.training.recipes` and :mod:`bert_tf.training.restarts`.

Blocks, counted from the top (:class:`bert_tf.training.recipes.LayerRecipe`):

* BERT (``num_hidden_layers = L``): 0 the head and ``bert/pooler``, ``L - l`` for
  ``bert/encoder/layer_<l>/``, ``L + 1`` for ``bert/embeddings/``;
* ALBERT: one layer's variables (``bert/encoder/transformer/group_0/...``) are shared by all
  ``L`` applications, so per-layer rates cannot differ: the shared layer is block 1 (the top
  layer: the full learning rate), ``bert/embeddings/`` and the factorized
  ``bert/encoder/embedding_hidden_mapping_in`` are block 2. ``--lr_layer_decay_rate=r`` then
  only gives the embeddings ``learning_rate * r``, and ``--unfreeze_schedule=k`` trains the
  head, then the whole shared layer from step ``k``, the embeddings from ``2k``.
"""

import re
from typing import Any, Optional

from absl import logging

from bert_tf import checkpoint_io
from bert_tf.errors import FlagError
from bert_tf.training import restore
from bert_tf.training.recipes import (LayerRecipe, block_counter, parse_feature_layers,
                                      seed_run, summarize_blocks)

_BERT_LAYER = re.compile(r"^bert/encoder/layer_(\d+)/")
_EMBEDDINGS = ("bert/embeddings/", "bert/encoder/embedding_hidden_mapping_in")


def _is_embedding(name: str) -> bool:
    return name.startswith(_EMBEDDINGS)


def bert_block_of(num_layers: int):
    """``name -> block`` of a BERT model with ``num_layers`` layers (module doc)."""
    def layer_of(name: str) -> Optional[int]:
        m = _BERT_LAYER.match(name)
        return int(m.group(1)) if m else None

    return block_counter(layer_of, num_layers, _is_embedding)


def albert_block_of():
    """``name -> block`` of an ALBERT model: the shared layer is one block (module doc)."""
    return block_counter(lambda name: 0 if name.startswith("bert/encoder/transformer/") else None,
                         1, _is_embedding)


def start(args: Any) -> None:
    """``--seed`` / ``--deterministic`` (:func:`bert_tf.training.recipes.seed_run`), and the
    recipe flags checked (:func:`check_recipe_flags`); call before the model is built.

    Raises:
      FlagError: as :func:`check_recipe_flags`; ``--deterministic`` without ``--seed``.
    """
    check_recipe_flags(args)
    seed_run(args.seed, args.deterministic)


def check_recipe_flags(args: Any) -> None:
    """The recipe flags' values, alone and together.

    Raises:
      FlagError: ``--num_restarts`` < 1; ``--freeze_encoder`` with ``--unfreeze_schedule`` or
        ``--lr_layer_decay_rate`` (the encoder does not train); ``--feature_layers`` without
        ``--freeze_encoder`` is allowed (the head reads those layers while all train).
    """
    if int(args.num_restarts) < 1:
        raise FlagError(f"--num_restarts={args.num_restarts}: must be at least 1")
    rate = getattr(args, "lr_layer_decay_rate", 1.0)  # run_squad.py: XLNet's flag, not BERT's
    if args.freeze_encoder and (args.unfreeze_schedule or rate != 1.0):
        raise FlagError("--freeze_encoder: the encoder does not train, so --unfreeze_schedule "
                        "and --lr_layer_decay_rate have nothing to do; drop them")
    LayerRecipe(lambda name: 0, rate, args.unfreeze_schedule)


# flag -> its "off" value (the original's behaviour)
RECIPE_DEFAULTS = {"seed": None, "deterministic": False, "num_restarts": 1,
                   "select_metric": None, "lr_schedule": "warmup_linear",
                   "lr_layer_decay_rate": 1.0, "unfreeze_schedule": 0, "freeze_encoder": False,
                   "feature_layers": None}


def refuse_recipe_flags(args: Any, mode: str) -> None:
    """A mode without the recipes (``--siamese``) refuses their flags instead of ignoring them.

    Raises:
      FlagError: naming every recipe flag given a value other than its default.
    """
    given = [f"--{name}" for name, off in RECIPE_DEFAULTS.items()
             if getattr(args, name, off) != off]
    if given:
        raise FlagError(f"{', '.join(given)}: not supported with {mode} (issue 26's recipes "
                        f"are for the cross-encoder)")


def feature_layers(args: Any, num_layers: int):
    """``--feature_layers`` of a model with ``num_layers`` layers (tuple of negative indexes
    or None). Raises: FlagError, as :func:`bert_tf.training.recipes.parse_feature_layers`."""
    return parse_feature_layers(args.feature_layers, num_layers)


def layer_recipe(args: Any, block_of, names) -> Optional[LayerRecipe]:
    """The :class:`LayerRecipe` of ``--lr_layer_decay_rate`` / ``--unfreeze_schedule``, or
    None when neither is set; logs each block's multiplier and first step."""
    recipe = LayerRecipe(block_of, getattr(args, "lr_layer_decay_rate", 1.0),
                         args.unfreeze_schedule)
    if not recipe.active:
        return None
    logging.info("Layer-wise recipe (bert_tf): %s", summarize_blocks(sorted(names), recipe))
    return recipe


def warm_start_load(args: Any, encoder_load_fn=None):
    """What a BERT or ALBERT task loads from ``--init_checkpoint`` when its model is built
    (the ``load`` of :func:`bert_tf.training.restore.build_for_training`, issue 24): with
    ``--freeze_encoder`` the encoder, as :func:`freeze_encoder` loads it (``encoder_load_fn``,
    default :func:`bert_tf.checkpoint_io.assign_from_checkpoint`); else the training loop's
    warm start of the trainable variables (:func:`bert_tf.training.restore.bert_warm_start`).
    ``model -> LoadReport``."""
    if getattr(args, "freeze_encoder", False):
        load = encoder_load_fn or checkpoint_io.assign_from_checkpoint
        return lambda model: load(model.encoder_name_map(), args.init_checkpoint)
    return restore.bert_warm_start(args.init_checkpoint, args.allow_partial_init_checkpoint)


def freeze_encoder(model, args: Any, encoder_name_map, load_fn=None) -> bool:
    """``--freeze_encoder``: the encoder's weights from ``--init_checkpoint`` (when
    ``--output_dir`` holds no checkpoint to resume; the training loop then restores it
    whole), then ``model.bert`` made non-trainable and run without dropout, so only the head
    trains (and no gradient flows into the encoder).

    Returns:
      True when the encoder was loaded here (the training loop must not warm-start again).

    Raises:
      CheckpointError: ``--init_checkpoint`` unreadable or not fitting (names the variable).
    """
    load_fn = load_fn or checkpoint_io.assign_from_checkpoint
    loaded = False
    if args.init_checkpoint and not checkpoint_io.existing_checkpoints(args.output_dir):
        report = load_fn(encoder_name_map, args.init_checkpoint)
        logging.info("--freeze_encoder: encoder from %s: %s", args.init_checkpoint,
                     report.summary() if hasattr(report, "summary") else "loaded")
        loaded = True
    model.bert.trainable = False
    model.encoder_dropout = False
    logging.info("--freeze_encoder: only the head trains (%d variables)",
                 len(model.trainable_variables))
    return loaded
