"""Checks of what a checkpoint load gave, called at every restore point (bert_tf, beyond the
original).

The original's ``tf.train.init_from_checkpoint`` warm-starts whatever names it finds and
trains the rest from their initial values behind one INFO line, and loads NaN or infinite
values as they are. Here, after :func:`bert_tf.checkpoint_io.assign_from_checkpoint` (or a
family's loader built on it) has assigned the values:

* :func:`check_finite_values`: every variable the load assigned holds finite values, else an
  error naming the variable (a checkpoint of a diverged run, a damaged conversion);
* :func:`check_warm_start`: a warm start from ``--init_checkpoint`` leaves no ENCODER variable
  (:data:`ENCODER_PREFIXES`) at its initial value unless ``--allow_partial_init_checkpoint``
  says it is meant. Task heads (``output_weights``, ``cls/...``, XLNet's
  ``model/lm_loss/...``, ...) missing from a pre-trained checkpoint are the normal case.

Kept apart from ``checkpoint_io`` so the loaders stay one thing each.
"""

from typing import Iterable, Mapping, Optional, Tuple

import tensorflow as tf
from absl import logging

from bert_tf.errors import CheckpointError

# Original-name prefixes of the encoder (the pre-trained body): BERT's and ALBERT's
# `bert/embeddings|encoder|pooler/...`, XLNet's `model/transformer/...`.
ENCODER_PREFIXES = ("bert/", "model/transformer/")

ALLOW_PARTIAL_FLAG = "--allow_partial_init_checkpoint"


def first_non_finite(state: Mapping[str, "tf.Variable"]) -> Optional[Tuple[str, float, int]]:
    """The first floating-point entry of ``state`` (original name -> variable or array) that
    holds a NaN or an infinity, as ``(name, first such value, how many)``; None when all are
    finite (integers are skipped)."""
    for name, value in state.items():
        value = tf.convert_to_tensor(value)
        if not value.dtype.is_floating:
            continue
        bad = tf.logical_not(tf.math.is_finite(value))
        if bool(tf.reduce_any(bad)):
            return (name, float(tf.boolean_mask(value, bad)[0]),
                    int(tf.reduce_sum(tf.cast(bad, tf.int64))))
    return None


def check_finite_values(name_to_variable: Mapping[str, "tf.Variable"], names: Iterable[str],
                        prefix: str) -> None:
    """Refuses a load that assigned a NaN or an infinity.

    Args:
      name_to_variable: original name -> variable (what the load assigned to).
      names: the names assigned (``LoadReport.loaded``).
      prefix: the checkpoint, for the message.

    Raises:
      CheckpointError: ``<prefix>: <name> holds nan ...`` (the first such variable).
    """
    found = first_non_finite({name: name_to_variable[name] for name in names
                              if name in name_to_variable})
    if found is not None:
        name, first, count = found
        raise CheckpointError(f"{prefix}: {name} holds {first} ({count} non-finite values): "
                              "not a usable checkpoint (saved from a diverged run?)")


def encoder_names(names: Iterable[str]):
    """The names among ``names`` under :data:`ENCODER_PREFIXES`, in order."""
    return [n for n in names if n.startswith(ENCODER_PREFIXES)]


def check_warm_start(report, allow_partial: bool = False) -> None:
    """Refuses a warm start that left encoder variables at their initial values.

    Args:
      report: the :class:`bert_tf.checkpoint_io.LoadReport` of ``--init_checkpoint``
        (``prefix``, ``missing``).
      allow_partial: ``--allow_partial_init_checkpoint``: then one warning line instead.

    Raises:
      CheckpointError: names the checkpoint, the first missing encoder variables, their
        count and the flag that allows it.
    """
    missing = encoder_names(report.missing)
    if not missing:
        return
    shown = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    if allow_partial:
        logging.warning("%s: %d encoder variables not in --init_checkpoint keep their initial "
                        "values (%s): %s", report.prefix, len(missing), ALLOW_PARTIAL_FLAG,
                        shown)
        return
    raise CheckpointError(f"{report.prefix}: --init_checkpoint lacks {len(missing)} encoder "
                          f"variables, which would train from their initial values ({shown}); "
                          f"give {ALLOW_PARTIAL_FLAG} if that is meant")
