"""When and what the training loop saves (the Estimator's ``CheckpointSaverHook``).

Spec `bert.md` 3.3: ``model.ckpt-<step>`` every ``save_checkpoints_steps`` updates (and at the
end of training), a ``checkpoint`` state file, the newest 5 bundles kept (the Estimator's
``keep_checkpoint_max`` default). Here:

* :class:`Cadence` decides at which global steps something is due (checkpoints; the loop
  also uses it for its progress lines);
* :func:`save_checkpoint` writes one bundle atomically, updates the state file and deletes the
  bundles beyond ``keep_checkpoint_max``;
* :func:`check_finite_before_save` refuses to save non-finite weights or slots;
* :func:`remove_stale_temp_files` deletes the temporary files of a write killed mid-way;
* :func:`is_chief` says whether this worker writes (the Estimator's chief-only saving).
"""

import glob
import os
from typing import Any, List, Mapping, Optional

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.checkpoint_checks import first_non_finite
from bert_tf.errors import BertTfError


class NanLossError(BertTfError):
    """The training loss, or the weights an update gave, became NaN or infinite (as the
    Estimator's NanTensorHook, which looked at the loss only)."""


class Cadence:
    """Which global steps are due: the multiples of ``every`` and ``last_step``.

    Spec 3.3 ("saving happens every ``save_checkpoints_steps``"; the Estimator also saves at
    the end of ``train``): after firing at step ``s`` the next due step is the next multiple
    of ``every`` above ``s``; ``last_step`` is always due. A step that did not advance (a
    chunk whose updates were all skipped by loss scaling, or the step a run resumed at) does
    not fire again.

    Args:
      every: fire every this many updates (int); <= 0: at ``last_step`` only.
      start_step: the global step training starts from (int; not due itself).
      last_step: the global step training stops at (int).

    Attributes:
      next_step: the next multiple of ``every`` above the last step that fired (or above
        ``start_step``); ``last_step`` when ``every`` <= 0. Bound a chunk of updates by it.
    """

    def __init__(self, every: int, start_step: int, last_step: int):
        self.every = int(every)
        self.last_step = int(last_step)
        self.next_step = self._after(int(start_step))

    def _after(self, step: int) -> int:
        if self.every <= 0:
            return self.last_step
        return (step // self.every + 1) * self.every

    def due(self, step: int) -> bool:
        """True (and moves :attr:`next_step` on) when ``step`` reached a due step."""
        if step >= self.next_step or step >= self.last_step:
            self.next_step = self._after(step)
            return True
        return False


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """Whether this process writes checkpoints (the Estimator's chief; one per cluster).

    True without a cluster resolver, for task type ``chief``, and for ``worker`` 0 of a
    cluster without a ``chief`` task (TF_CONFIG with workers only, as
    ``MultiWorkerMirroredStrategy`` runs); False for every other task.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    task_type = getattr(resolver, "task_type", None) if resolver is not None else None
    if task_type in (None, "chief"):
        return True
    if task_type == "worker":
        cluster = resolver.cluster_spec().as_dict() if resolver is not None else {}
        return "chief" not in cluster and resolver.task_id == 0
    return False


def remove_stale_temp_files(output_dir: str, basename: str = "model.ckpt") -> List[str]:
    """Deletes ``<output_dir>/.tmp-*-<basename>-*``: leftovers of a write killed mid-way.

    :func:`checkpoint_io.write_checkpoint` writes under such temporary names and renames them
    into place when complete, so these files never belong to a complete bundle. A missing
    ``output_dir`` is not an error. Other files are left alone.

    Returns:
      The paths removed.
    """
    if not tf.io.gfile.isdir(output_dir):
        return []
    removed = []
    for f in checkpoint_io.files_in(output_dir, f".tmp-*-{glob.escape(basename)}-*"):
        logging.info("Removing a partial checkpoint file left by a killed run: %s", f)
        tf.io.gfile.remove(f)
        removed.append(f)
    return removed


def check_finite_before_save(state: Mapping[str, Any], step: int, latest: Optional[str],
                             basename: str = "model.ckpt") -> None:
    """Refuses to write ``<basename>-<step>`` when an entry of ``state`` is non-finite
    (:func:`bert_tf.checkpoint_checks.first_non_finite`); the checkpoints already written stay as they are.

    Args:
      state: original name -> variable (weights first, then slots, as ``TrainState``).
      step: the global step about to be saved (int).
      latest: prefix of the last checkpoint written or restored, or None.

    Raises:
      NanLossError: names the step, the variable and the last checkpoint kept.
    """
    found = first_non_finite(state)
    if found is None:
        return
    name, value, _ = found
    kept = os.path.basename(latest) if latest else "none"
    raise NanLossError(
        f"the update to global_step {step} made {name} {value}: {basename}-{step} not "
        f"written, last checkpoint: {kept} (training diverged: lower --learning_rate?)")


def save_checkpoint(state: Mapping[str, Any], output_dir: str, step: int,
                    keep_checkpoint_max: int = 5, basename: str = "model.ckpt",
                    chief: bool = True) -> str:
    """Writes ``<output_dir>/<basename>-<step>`` from ``state`` (original name -> variable).

    ``state[checkpoint_io.GLOBAL_STEP]`` is saved as an int64 scalar (spec 3.3); the other
    entries with their own shapes and dtypes. The bundle is written atomically
    (:func:`checkpoint_io.write_checkpoint`), then the ``checkpoint`` state file lists the
    newest ``keep_checkpoint_max`` bundles (oldest first, as the Estimator's Saver), then older
    bundles are deleted (index file first); a kill at any point leaves complete bundles only.
    Bundles of later steps than ``step`` are not listed. Non-chief workers write nothing.

    Returns:
      The prefix written.

    Raises:
      CheckpointError: the folder is not writable.
    """
    prefix = os.path.join(output_dir, f"{basename}-{step}")
    if not chief:
        return prefix
    arrays = checkpoint_io.variables_to_arrays(state)
    arrays[checkpoint_io.GLOBAL_STEP] = np.asarray(arrays[checkpoint_io.GLOBAL_STEP], np.int64)
    checkpoint_io.write_checkpoint(prefix, arrays)
    kept = [p for p in checkpoint_io.existing_checkpoints(output_dir, basename)
            if checkpoint_io.checkpoint_step(p) <= step]
    keep = max(1, int(keep_checkpoint_max or 1))
    old, kept = kept[:-keep], kept[-keep:]
    checkpoint_io.write_state_file(output_dir, prefix, kept)
    for p in old:
        # Index first: a kill in between leaves data without index, which no reader lists.
        files = checkpoint_io.literal_glob(p, ".*")
        for f in sorted(files, key=lambda f: not f.endswith(".index")):
            tf.io.gfile.remove(f)
    logging.info("Saved checkpoint %s", prefix)
    return prefix
