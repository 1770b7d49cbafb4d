"""Weights for evaluation, prediction and export when the run does not train first.

The original scripts run ``estimator.evaluate`` / ``estimator.predict`` on a model folder:
the Estimator restores the newest checkpoint there (every variable must be found; its
``global_step`` is reported), and otherwise builds a fresh model whose ``init_fn``
(``tf.train.init_from_checkpoint`` with the assignment map of ``--init_checkpoint``) fills the
variables it finds and leaves the others at their initial values (spec `bert.md` 2.13, 8.7;
`xlnet.md` 4.4, 8.4). :func:`restore_for_inference` is that choice, once for every task of
both families; it logs what it used and returns it. :func:`build_from_checkpoint` builds the
model with its weights empty so that the restore writes each one once (issue 24);
:func:`warm_start` is the training start from ``--init_checkpoint`` it runs for the tasks that
train (the training loop's own warm start is the same function).
"""

import os
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

import tensorflow as tf
from absl import logging

from bert_tf.errors import CheckpointError
from bert_tf import checkpoint_io, pending_variables
from bert_tf.checkpoint_checks import check_finite_values, check_warm_start
from bert_tf.library_pages import release_startup_pages

# (name -> variable, path, require_all) -> LoadReport: checkpoint_io.assign_from_checkpoint
# (BERT) or bert_tf.xlnet.checkpoint_map.load_xlnet_checkpoint with its untie_r bound.
LoadFn = Callable[..., checkpoint_io.LoadReport]

SOURCE_CHECKPOINT = "checkpoint"
SOURCE_MODEL_DIR = "model_dir"
SOURCE_INIT_CHECKPOINT = "init_checkpoint"
SOURCE_INITIAL = "initial"


@dataclass(frozen=True)
class Restored:
    """What :func:`restore_for_inference` loaded.

    Attributes:
      prefix: the checkpoint prefix loaded (``""`` for the initial weights).
      global_step: its int64 ``global_step`` entry (else the N of ``model.ckpt-N``, else 0);
        0 for ``--init_checkpoint`` and the initial weights, as the Estimator reports.
      source: :data:`SOURCE_CHECKPOINT` (the ``checkpoint`` argument),
        :data:`SOURCE_MODEL_DIR`, :data:`SOURCE_INIT_CHECKPOINT` or :data:`SOURCE_INITIAL`.
      report: the :class:`bert_tf.checkpoint_io.LoadReport` (None for the initial
        weights).
    """

    prefix: str
    global_step: int
    source: str
    report: Optional[checkpoint_io.LoadReport] = None


def checkpoint_global_step(prefix: str) -> int:
    """The int64 ``global_step`` stored in a checkpoint, else the N of its ``-N`` name, else 0.

    Raises:
      CheckpointError: the checkpoint cannot be read (names it).
    """
    stored = checkpoint_io.list_checkpoint(prefix)
    if checkpoint_io.GLOBAL_STEP in stored:
        reader = checkpoint_io.open_reader(checkpoint_io.resolve_prefix(prefix))
        return int(reader.get_tensor(checkpoint_io.GLOBAL_STEP))
    step = checkpoint_io.checkpoint_step(prefix)
    return step if step is not None else 0


def resolve_latest(path: Optional[str], flag: str = "--init_checkpoint") -> Optional[str]:
    """A path ending in ``latest`` means the checkpoint of its folder's ``checkpoint`` state
    file (XLNet's ``--init_checkpoint=.../latest``, spec `xlnet.md` 4.4); other paths (and
    None) are returned as they are.

    Raises:
      CheckpointError: no checkpoint state file there (names ``flag`` and the folder).
    """
    if not path or not path.endswith("latest"):
        return path
    folder = os.path.dirname(path)
    latest = checkpoint_io.latest_from_state_file(folder)
    if not latest:
        raise CheckpointError(f"{flag}={path}: no checkpoint state file in {folder}")
    return latest


def restore_for_inference(name_map: Mapping[str, "tf.Variable"], model_dir: str,
                          init_checkpoint: Optional[str] = None,
                          checkpoint: Optional[str] = None,
                          load_fn: LoadFn = checkpoint_io.assign_from_checkpoint) -> Restored:
    """Loads the weights an eval/predict/export run uses, logs and returns where they came from.

    In order:

    1. ``checkpoint`` when given (e.g. XLNet's ``--predict_ckpt`` or one checkpoint of the
       ``--eval_all_ckpt`` list): every variable required;
    2. the newest ``<model_dir>/model.ckpt-N``: every variable required (a checkpoint of
       this run's model), its ``global_step``; ``init_checkpoint`` is then ignored;
    3. ``init_checkpoint``: the variables it has (missing ones, e.g. an untrained task head,
       keep their initial values and are reported with a warning); global step 0;
    4. nothing: the initial (random) weights, with a warning; global step 0.

    Args:
      name_map: original variable name -> the model's variable (a family's checkpoint map,
        e.g. ``model.name_map()`` or ``xlnet_variable_map(model)``).
      model_dir: the folder of the fine-tuned checkpoints (BERT ``--output_dir``, XLNet
        ``--model_dir``); may be missing.
      init_checkpoint: ``--init_checkpoint`` (prefix, file or folder) or None.
      checkpoint: a prefix to load instead of searching ``model_dir``.
      load_fn: ``load_fn(name_map, path, require_all=...) -> LoadReport``; default
        :func:`bert_tf.checkpoint_io.assign_from_checkpoint` (BERT); XLNet passes
        ``functools.partial(checkpoint_map.load_xlnet_checkpoint, untie_r=config.untie_r)``.

    Returns:
      a :class:`Restored`.

    Raises:
      CheckpointError: an unreadable checkpoint, a shape that does not fit (names the
        variable and both shapes), a variable missing from a required checkpoint, or what
        ``load_fn`` refuses (XLNet: a BERT checkpoint, the other ``untie_r`` setting).
    """
    if checkpoint:
        report = load_fn(name_map, checkpoint, require_all=True)
        check_finite_values(name_map, report.loaded, report.prefix)
        step = checkpoint_global_step(report.prefix)
        logging.info("Using the checkpoint %s (global_step = %d): %s", report.prefix, step,
                     report.summary())
        return Restored(report.prefix, step, SOURCE_CHECKPOINT, report)
    existing = checkpoint_io.existing_checkpoints(model_dir) if model_dir else []
    if existing:
        report = load_fn(name_map, existing[-1], require_all=True)
        check_finite_values(name_map, report.loaded, report.prefix)
        step = checkpoint_global_step(report.prefix)
        logging.info("Using the checkpoint %s (global_step = %d)%s", report.prefix, step,
                     f"; --init_checkpoint={init_checkpoint} is ignored" if init_checkpoint
                     else "")
        return Restored(report.prefix, step, SOURCE_MODEL_DIR, report)
    if init_checkpoint:
        report = load_fn(name_map, init_checkpoint, require_all=False)
        check_finite_values(name_map, report.loaded, report.prefix)
        logging.info("No checkpoint in %s; using --init_checkpoint: %s", model_dir,
                     report.summary())
        if report.missing:
            logging.warning("not in --init_checkpoint %s, left at their initial values (the "
                            "outputs are not meaningful before training, --do_train): %s",
                            report.prefix, ", ".join(report.missing))
        return Restored(report.prefix, 0, SOURCE_INIT_CHECKPOINT, report)
    logging.warning("no checkpoint in %s and no --init_checkpoint: using the randomly "
                    "initialized weights", model_dir)
    return Restored("", 0, SOURCE_INITIAL, None)


def build_from_checkpoint(build: Callable[[], Any], restore: Optional[Callable[[Any], Any]],
                          strategy: Optional[tf.distribute.Strategy] = None) -> Tuple[Any, Any]:
    """Builds a model with its weights empty, restores it, then initialises the rest.

    The original's order (TF1 ``init_from_checkpoint``: each restored variable is written
    once, from the checkpoint): ``build()`` runs inside
    :func:`bert_tf.pending_variables.building_empty` (weights created but not allocated, a
    dummy forward pass only traced), ``restore(model)`` fills weights straight from the
    checkpoint (every loader goes through :func:`bert_tf.checkpoint_io.assign_from_checkpoint`),
    and the weights it did not fill (a new task head, the dropout seed states) then get their
    own initial values, the numbers a plain build gives them. No random value is drawn for a
    restored weight and no model-sized copy is made (issue 24). bert_tf, beyond the original's
    Keras rebuild, same values. First the library pages only TensorFlow's start-up used are
    handed back (:func:`bert_tf.library_pages.release_startup_pages`).

    Args:
      build: ``() -> model``: constructs the model and creates every weight (e.g.
        ``lambda: BertModel(config).build_with_dummy_input()``); its tensors must not escape.
      restore: ``model -> result``: loads a checkpoint (e.g. :func:`restore_for_inference`,
        :func:`warm_start` or a family's ``load_*_checkpoint`` with the model's name map);
        None: nothing to load (training from scratch, or resuming: the training loop
        restores the weights with the optimizer slots), a plain build.
      strategy: the ``tf.distribute.Strategy`` whose scope the weights are created in
        (``build`` may enter it itself); default: the one active at the call.

    Returns:
      ``(model, restore(model))``; ``(model, None)`` when ``restore`` is None.

    Raises:
      what ``restore`` raises (the weights it did not fill are then left unallocated:
      :func:`bert_tf.pending_variables.discard_pending`).
    """
    release_startup_pages()  # before the weights: TF's start-up-only library pages (issue 24)
    if restore is None:
        return build(), None
    strategy = strategy or tf.distribute.get_strategy()
    with pending_variables.building_empty():
        model = build()
    with strategy.scope():
        try:
            result = restore(model)
        except BaseException:
            # the model is dropped with the error: no random value is drawn for it (a config
            # too large to allocate would fail there and hide the restore's own error)
            pending_variables.discard_pending()
            raise
        pending_variables.initialize_pending()
    return model, result


def trainable_by_name(model: Any, name_map: Mapping[str, Any]) -> Dict[str, Any]:
    """The entries of ``name_map`` (original name -> variable) that are trainable variables of
    ``model`` (a Keras model, built or built empty): what a warm start loads, as the
    original's ``init_from_checkpoint`` over ``tf.trainable_variables()``."""
    trainable = {id(v) for v in model.trainable_variables}
    return {n: v for n, v in name_map.items() if id(v) in trainable}


def warm_start(name_map: Mapping[str, Any], init_checkpoint: str, allow_partial: bool = False,
               load_fn: LoadFn = checkpoint_io.assign_from_checkpoint,
               log_line: str = "Warm start: %s") -> checkpoint_io.LoadReport:
    """Loads the training start from ``--init_checkpoint`` (spec `bert.md` 3.4): the variables
    of ``name_map`` it holds are filled (missing ones keep their initial values), each value
    checked finite, the encoder checked complete; logs ``log_line % report.summary()``.

    Args:
      name_map: original name -> variable to load (BERT: :func:`trainable_by_name`; XLNet,
        ALBERT: the whole map, as their originals).
      init_checkpoint: the checkpoint prefix, file or folder.
      allow_partial: ``--allow_partial_init_checkpoint`` (bert_tf): missing encoder
        variables are a warning instead of an error.
      load_fn: ``load_fn(name_map, path) -> LoadReport`` (default
        :func:`bert_tf.checkpoint_io.assign_from_checkpoint`).

    Returns:
      the :class:`bert_tf.checkpoint_io.LoadReport`.

    Raises:
      CheckpointError: unreadable, nothing of the model in it, a shape that does not fit, a
        value not finite, or encoder variables missing without ``allow_partial``
        (:func:`bert_tf.checkpoint_checks.check_warm_start`); each names the variable.
    """
    report = load_fn(name_map, init_checkpoint)
    check_finite_values(name_map, report.loaded, report.prefix)
    check_warm_start(report, allow_partial)
    logging.info(log_line, report.summary())
    return report


def build_for_training(build: Callable[[], Any], load: Callable[[Any], Any], output_dir: str,
                       init_checkpoint: Optional[str],
                       strategy: Optional[tf.distribute.Strategy] = None,
                       basename: str = "model.ckpt") -> Tuple[Any, Any]:
    """The model of a training run: built empty and filled by ``load`` from
    ``init_checkpoint`` (:func:`build_from_checkpoint`) when the run starts from it, i.e.
    ``output_dir`` holds no ``<basename>-N`` to resume; else a plain build (from scratch, or
    resuming: the training loop then restores every weight with the optimizer slots, as
    before, over the initial values).

    Args:
      build: ``() -> model`` (as :func:`build_from_checkpoint`).
      load: ``model -> LoadReport``: the warm start (BERT: :func:`warm_start` of
        :func:`trainable_by_name`, the loop's own; XLNet, ALBERT: their loaders).
      output_dir, basename: where the training loop resumes from.
      init_checkpoint: ``--init_checkpoint`` or None.
      strategy: as :func:`build_from_checkpoint`.

    Returns:
      ``(model, report)``: ``load``'s report, None when nothing was loaded (BERT: give it to
      ``TrainConfig.warm_start`` so the loop does not read the checkpoint again).

    Raises:
      what ``load`` raises (CheckpointError naming the variable).
    """
    resumes = tf.io.gfile.isdir(output_dir) and checkpoint_io.existing_checkpoints(
        output_dir, basename)
    return build_from_checkpoint(build, None if resumes or not init_checkpoint else load,
                                 strategy)


def bert_warm_start(init_checkpoint: str, allow_partial: bool = False,
                    name_map: Callable[[Any], Mapping[str, Any]] = lambda m: m.name_map()
                    ) -> Callable[[Any], checkpoint_io.LoadReport]:
    """The ``load`` of :func:`build_for_training` for the BERT-style training loop: the
    model's trainable variables (:func:`trainable_by_name` of ``name_map(model)``) from
    ``init_checkpoint`` (:func:`warm_start`), what :func:`bert_tf.training.loop.train` would
    load."""
    return lambda model: warm_start(trainable_by_name(model, name_map(model)),
                                    init_checkpoint, allow_partial)


def build_for_inference(build: Callable[[], Any], name_map: Callable[[Any], Mapping[str, Any]],
                        model_dir: str, init_checkpoint: Optional[str] = None,
                        checkpoint: Optional[str] = None,
                        load_fn: LoadFn = checkpoint_io.assign_from_checkpoint,
                        strategy: Optional[tf.distribute.Strategy] = None
                        ) -> Tuple[Any, Restored]:
    """The model of an eval/predict/export run without training: built empty and filled by
    :func:`restore_for_inference` (``name_map(model)``, ``model_dir``, ``init_checkpoint``,
    ``checkpoint``, ``load_fn`` as there) through :func:`build_from_checkpoint`; the weights
    no checkpoint holds get their initial values.

    Returns:
      ``(model, Restored)``.

    Raises:
      CheckpointError: as :func:`restore_for_inference`.
    """
    return build_from_checkpoint(
        build, lambda model: restore_for_inference(name_map(model), model_dir, init_checkpoint,
                                                   checkpoint=checkpoint, load_fn=load_fn),
        strategy)
