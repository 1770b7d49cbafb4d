"""Checkpoints in the original TF1 layout: name-based tensor bundles (`.index` + `.data-*`).

The original releases save and restore variables by their TF1 graph names
(`bert/encoder/layer_0/attention/self/query/kernel`, `model/transformer/...`), with optimizer
slots `<var>/adam_m`, `<var>/adam_v` and an int64 `global_step` (spec `bert.md` section 3).
This module reads and writes exactly that format (listing with TF's `CheckpointReader`,
values with `tf.raw_ops.RestoreV2`, writing with `tf.raw_ops.SaveV2`), so files written here
load in the original code and the other way round.

Model families keep their name tables (original name -> Keras variable) next to their model
(`bert_tf/bert/checkpoint_map.py`, `bert_tf/xlnet/checkpoint_map.py`); this module only moves
named arrays between files and variables.

Writes are atomic: the bundle is written under a temporary prefix in the same folder and its
files are renamed into place, data file first and index last, so a reader never sees an
index without its data, and a kill leaves the previous checkpoint intact.
"""

import fnmatch
import glob
import os
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import atomic_write_text
from bert_tf.errors import CheckpointError
from bert_tf.glibc_malloc import release_freed_memory
from bert_tf.pending_variables import fill

# Checkpoint entries that are optimizer or bookkeeping state, never model weights: the
# original AdamWeightDecay slots, and TF1 tf.train.AdamOptimizer state (`<var>/Adam`,
# `<var>/Adam_1`, `beta1_power`, `beta2_power`) found in some third-party checkpoints.
OPTIMIZER_SLOT_SUFFIXES = ("/adam_m", "/adam_v", "/Adam", "/Adam_1")
OPTIMIZER_ENTRIES = ("global_step", "beta1_power", "beta2_power")
GLOBAL_STEP = "global_step"
_STATE_FILE = "checkpoint"


def files_in(folder: str, name_pattern: str) -> List[str]:
    """The files of ``folder`` whose name matches ``name_pattern`` (``*``, ``?``, ``[...]``;
    escape a literal part with ``glob.escape``), sorted; [] for a missing folder.

    Unlike ``tf.io.gfile.glob`` the folder is taken as it is written: an output folder named
    ``o[1]`` (fresh round of issue 27) held a checkpoint whose data file kept its temporary
    name, because the glob read ``[1]`` as a character class and matched nothing.
    """
    try:
        names = tf.io.gfile.listdir(folder or ".")
    except tf.errors.OpError:
        return []
    names = (n.rstrip("/") for n in names)  # remote listings mark folders with "/"
    return sorted(os.path.join(folder, n) for n in names if fnmatch.fnmatchcase(n, name_pattern))


def literal_glob(literal: str, pattern: str = "") -> List[str]:
    """``glob(literal + pattern)`` with ``literal`` (a path or prefix) matched as it is
    written and ``pattern`` a wildcard tail inside the last path component, e.g.
    ``literal_glob("out[1]/model.ckpt-3", ".data-*")``; sorted. See :func:`files_in`."""
    folder = os.path.dirname(literal + pattern)
    return files_in(folder, glob.escape(literal[len(folder):].lstrip("/")) + pattern)


def latest_from_state_file(folder: str) -> Optional[str]:
    """``tf.train.latest_checkpoint(folder)`` without its glob (which finds nothing in a
    folder named ``o[1]``): the prefix the ``checkpoint`` state file names, if its index file
    exists, else None."""
    try:
        state = tf.train.get_checkpoint_state(folder)
    except (tf.errors.OpError, ValueError):
        return None
    prefix = state.model_checkpoint_path if state is not None else ""
    return prefix if prefix and tf.io.gfile.exists(prefix + ".index") else None


def resolve_prefix(path: str) -> str:
    """:func:`_resolve_prefix`, with a file system that cannot be reached (``gs://`` without
    network, a scheme TensorFlow lacks such as ``hdfs://``) as one CheckpointError line
    naming the path (bert_tf: it was a TensorFlow traceback)."""
    try:
        return _resolve_prefix(path)
    except tf.errors.OpError as e:
        reason = (str(getattr(e, "message", None) or e).strip().splitlines() or ["?"])[0]
        raise CheckpointError(f"{path}: cannot read the checkpoint there ({reason})") from e


def _resolve_prefix(path: str) -> str:
    """Returns the checkpoint prefix for ``path``.

    ``path`` may be a prefix (``.../bert_model.ckpt``), one of its files
    (``.../bert_model.ckpt.index``), or a folder holding a ``checkpoint`` state file or a
    single ``*.ckpt*.index`` bundle.

    Raises:
      CheckpointError: nothing readable is there, or the path holds ``[`` (TensorFlow's
        readers glob it; names the path).
    """
    if path is None or path == "":
        raise CheckpointError("no checkpoint path given")
    if "[" in path:
        raise CheckpointError(f"{path}: TensorFlow's checkpoint readers take this path as a "
                              "glob pattern and cannot read it (it holds '['); rename it")
    for suffix in (".index", ".meta"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    path = re.sub(r"\.data-\d{5}-of-\d{5}$", "", path)
    if tf.io.gfile.exists(path + ".index"):
        return path
    if tf.io.gfile.isdir(path):
        latest = latest_from_state_file(path)
        if latest:
            return latest
        indexes = files_in(path, "*.index")
        if len(indexes) == 1:
            return indexes[0][: -len(".index")]
        if len(indexes) > 1:
            # the example: the highest step (model.ckpt-1000 before model.ckpt-200), not the
            # last name in alphabetical order
            newest = max((i[: -len(".index")] for i in indexes),
                         key=lambda p: (checkpoint_step(p) or 0, p))
            raise CheckpointError(
                f"{path}: holds {len(indexes)} checkpoints and no 'checkpoint' state file; "
                f"pass one prefix, e.g. {newest}")
    raise CheckpointError(f"{path}: checkpoint not found (expected {path}.index and its data file)")


def open_reader(prefix: str):
    """A ``CheckpointReader`` of the bundle at ``prefix`` (from :func:`resolve_prefix`).

    Not ``tf.train.load_checkpoint``: that first asks ``isdir(prefix)``, which is true on
    ``ram://`` for any prefix of a file name (its folders are name prefixes), and then looks
    for a ``checkpoint`` state file in a folder that is not there. On local disk and ``gs://``
    the two read the same bundle.

    Raises:
      whatever the reader raises for a missing or damaged bundle (callers name the prefix).
    """
    return tf.compat.v1.train.NewCheckpointReader(prefix)


def read_checkpoint(path: str, include_optimizer: bool = False) -> Dict[str, np.ndarray]:
    """Reads every tensor of a checkpoint into numpy arrays.

    Args:
      path: a checkpoint prefix, file or folder (see :func:`resolve_prefix`).
      include_optimizer: keep ``*/adam_m``, ``*/adam_v`` and ``global_step`` entries.

    Returns:
      dict original variable name -> array (dtype and shape as stored).

    Raises:
      CheckpointError: the checkpoint is missing or unreadable.
    """
    prefix = resolve_prefix(path)
    try:
        reader = open_reader(prefix)
        names = sorted(reader.get_variable_to_shape_map())
        out = {}
        for name in names:
            if not include_optimizer and is_optimizer_entry(name):
                continue
            out[name] = reader.get_tensor(name)
        return out
    except CheckpointError:
        raise
    except Exception as e:  # tf raises several error types for corrupt bundles
        raise CheckpointError(f"{prefix}: unreadable checkpoint ({type(e).__name__}: {e})") from e


def list_checkpoint(path: str) -> Dict[str, Tuple[Tuple[int, ...], str]]:
    """Returns name -> (shape, dtype name) for every entry, without reading values."""
    prefix = resolve_prefix(path)
    try:
        reader = open_reader(prefix)
        shapes = reader.get_variable_to_shape_map()
        dtypes = reader.get_variable_to_dtype_map()
    except Exception as e:
        raise CheckpointError(f"{prefix}: unreadable checkpoint ({type(e).__name__}: {e})") from e
    return {n: (tuple(shapes[n]), dtypes[n].name) for n in sorted(shapes)}


def is_optimizer_entry(name: str) -> bool:
    """True for ``global_step`` and optimizer state (``<var>/adam_m``, ``<var>/adam_v``, TF1
    Adam's ``<var>/Adam``, ``<var>/Adam_1``, ``beta1_power``, ``beta2_power``)."""
    return name in OPTIMIZER_ENTRIES or name.endswith(OPTIMIZER_SLOT_SUFFIXES)


def write_checkpoint(prefix: str, tensors: Mapping[str, np.ndarray]) -> str:
    """Atomically writes named arrays as a TF tensor bundle at ``prefix``.

    Args:
      prefix: output prefix, e.g. ``out/model.ckpt-100``; its folder is created.
      tensors: original variable name -> array or tensor. dtypes are kept (float32 weights,
        int64 ``global_step``...).

    Returns:
      ``prefix``.

    Raises:
      CheckpointError: the folder is not writable (names it).
    """
    folder = os.path.dirname(prefix) or "."
    try:
        tf.io.gfile.makedirs(folder)
    except Exception as e:
        raise CheckpointError(f"{folder}: cannot create checkpoint folder ({e})") from e
    tmp_prefix = os.path.join(
        folder, f".tmp-{os.getpid()}-{uuid.uuid4().hex}-{os.path.basename(prefix)}")
    names = sorted(tensors)
    try:
        tf.raw_ops.SaveV2(
            prefix=tmp_prefix,
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            tensors=[tf.convert_to_tensor(tensors[n]) for n in names],
        )
        data_files = literal_glob(tmp_prefix, ".data-*")
        for f in data_files:
            tf.io.gfile.rename(f, prefix + f[len(tmp_prefix):], overwrite=True)
        tf.io.gfile.rename(tmp_prefix + ".index", prefix + ".index", overwrite=True)
    except Exception as e:
        for f in literal_glob(tmp_prefix, "*"):
            tf.io.gfile.remove(f)
        raise CheckpointError(f"{prefix}: cannot write checkpoint ({type(e).__name__}: {e})") from e
    return prefix


def write_state_file(model_dir: str, latest_prefix: str, all_prefixes: Sequence[str]) -> None:
    """Atomically writes the ``checkpoint`` state file that ``tf.train.latest_checkpoint`` reads.

    Paths are written relative to ``model_dir`` as TF1's Saver does.
    """
    def rel(p):
        return os.path.relpath(p, model_dir) if os.path.isabs(p) == os.path.isabs(model_dir) else p

    lines = [f'model_checkpoint_path: "{rel(latest_prefix)}"']
    lines += [f'all_model_checkpoint_paths: "{rel(p)}"' for p in all_prefixes]
    atomic_write_text(os.path.join(model_dir, _STATE_FILE), "\n".join(lines) + "\n")


@dataclass
class LoadReport:
    """What :func:`assign_from_checkpoint` did.

    Attributes:
      loaded: names assigned from the checkpoint.
      missing: names the model has but the checkpoint lacks (left at their initial values).
      unused: checkpoint names the model has no variable for (optimizer entries excluded).
      skipped: optimizer slots and ``global_step`` found in the checkpoint and not loaded.
      renamed: the note of a common prefix mapped (:func:`map_names`, logged once as a
        warning), else empty.
      cast: ``(stored dtype, model dtype)`` -> how many loaded variables were cast between
        them (``("bfloat16", "float32"): 12``); logged once, :func:`cast_line`.
    """

    prefix: str
    loaded: List[str] = field(default_factory=list)
    missing: List[str] = field(default_factory=list)
    unused: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    renamed: str = ""
    cast: Dict[Tuple[str, str], int] = field(default_factory=dict)

    def summary(self) -> str:
        """One line: counts, then the missing and unused names."""
        s = (f"{self.prefix}: loaded {len(self.loaded)}, missing {len(self.missing)}, "
             f"unused {len(self.unused)}, skipped {len(self.skipped)} optimizer entries")
        if self.missing:
            s += f"; missing: {_name_list(self.missing)}"
        if self.unused:
            s += f"; unused: {_name_list(self.unused)}"
        return s


@dataclass(frozen=True)
class NameMapping:
    """How model names find their checkpoint names (:func:`map_names`).

    Attributes:
      source: model name -> checkpoint name (only the names the checkpoint holds).
      note: empty when the names are used as they are; else one sentence saying which
        common prefix was stripped from the checkpoint's names or added to the model's.
    """

    source: Dict[str, str]
    note: str = ""


def _prefix_candidates(name: str) -> List[str]:
    """The ``/``-ended leading parts of ``name``: ``a/b/c`` -> ``a/``, ``a/b/``."""
    parts = name.split("/")
    return ["/".join(parts[:i]) + "/" for i in range(1, len(parts))]


def map_names(model_names: Iterable[str], stored_names: Iterable[str], prefix: str = ""
              ) -> NameMapping:
    """Matches model variable names to checkpoint names, allowing ONE common prefix.

    When any model name is in the checkpoint as it is, the names are used as they are (the
    original's ``init_from_checkpoint`` assignment map, spec `bert.md` 2.13). When none is,
    the original silently loads nothing (google-research/bert#394, #997: TF-Hub exports
    name every variable ``module/bert/...``); here a single prefix ``P`` is looked for such
    that the checkpoint's names are ``P + <model name>`` (``module/``), or the model's are
    ``P + <checkpoint name>`` (a checkpoint saved without the ``bert/`` scope). The prefix
    that matches the most names wins; ties (two different prefixes matching as many names)
    give no mapping. Optimizer entries never choose the prefix (they follow it).

    Args:
      model_names: the model's original names; stored_names: the checkpoint's names;
      prefix: the checkpoint prefix, for the note.

    Returns:
      a :class:`NameMapping` (empty ``source`` when nothing matches at all).
    """
    model_names = list(model_names)
    stored_all = set(stored_names)
    direct = {n: n for n in model_names if n in stored_all}
    stored = {n for n in stored_all if not is_optimizer_entry(n)}
    if direct or not model_names or not stored:
        return NameMapping(direct)
    model_set = set(model_names)
    counts = {}
    for s in stored:  # checkpoint = P + model name
        for p in _prefix_candidates(s):
            if s[len(p):] in model_set:
                counts[("strip", p)] = counts.get(("strip", p), 0) + 1
    for m in model_names:  # model name = P + checkpoint name
        for p in _prefix_candidates(m):
            if m[len(p):] in stored:
                counts[("add", p)] = counts.get(("add", p), 0) + 1
    if not counts:
        return NameMapping({})
    best = max(counts.values())
    winners = [k for k, c in counts.items() if c == best]
    if len(winners) > 1:
        return NameMapping({})
    how, p = winners[0]
    if how == "strip":
        source = {m: p + m for m in model_names if p + m in stored_all}
        example = next(iter(source.items()))
        note = (f"the checkpoint's names carry the prefix '{p}' that the model's do not; "
                f"mapped {len(source)} names ({example[1]} -> {example[0]})")
    else:
        source = {m: m[len(p):] for m in model_names
                  if m.startswith(p) and m[len(p):] in stored_all}
        example = next(iter(source.items()))
        note = (f"the model's names carry the prefix '{p}' that the checkpoint's do not; "
                f"mapped {len(source)} names ({example[1]} -> {example[0]})")
    return NameMapping(source, f"{prefix}: {note}" if prefix else note)


def checkpoint_family(names: Iterable[str]) -> Optional[str]:
    """Which release a checkpoint's variable names look like: ``"XLNet"``
    (``model/transformer/...``), ``"ALBERT"`` (``bert/encoder/transformer/group_N/...``),
    ``"BERT"`` (``bert/...`` or ``cls/...``), else None."""
    names = list(names)
    if any(n.startswith("model/transformer/") for n in names):
        return "XLNet"
    if any("/transformer/group_" in n for n in names):
        return "ALBERT"
    if any(n.startswith(("bert/", "cls/")) for n in names):
        return "BERT"
    return None


def nothing_matches_message(prefix: str, model_names: Sequence[str],
                            stored_names: Iterable[str]) -> str:
    """The one line for a checkpoint that holds none of the model's variables: the first
    names on both sides, and the release the checkpoint's names look like
    (:func:`checkpoint_family`)."""
    stored = sorted(n for n in stored_names if not is_optimizer_entry(n))
    family = checkpoint_family(stored)
    question = (f"it looks like an {family} checkpoint" if family in ("XLNet", "ALBERT")
                else "is this a checkpoint of this model?")
    return (f"{prefix}: none of the model's {len(model_names)} variables is in this checkpoint, "
            f"not even after removing or adding one common prefix (the model has "
            f"{_name_list(list(model_names), 3)}; the checkpoint has "
            f"{_name_list(stored, 3) if stored else 'no model variables'}); it would train or "
            f"predict from random weights: {question}")


def _name_list(names: List[str], most: int = 8) -> str:
    """``a, b, c`` or, for long lists, the first ``most`` names and ``... (N in all)``."""
    if len(names) <= most:
        return ", ".join(names)
    return ", ".join(names[:most]) + f", ... ({len(names)} in all)"


def _check_shapes(prefix: str, stored: Mapping[str, Tuple[Tuple[int, ...], str]],
                  name_to_variable: Mapping[str, "tf.Variable"],
                  source: Optional[Mapping[str, str]] = None) -> None:
    for name, var in name_to_variable.items():
        src = source.get(name) if source is not None else name
        if src not in stored:
            continue
        ckpt_shape = tuple(stored[src][0])
        model_shape = tuple(var.shape)
        if ckpt_shape != model_shape:
            raise CheckpointError(
                f"{prefix}: variable {src} has shape {list(ckpt_shape)} in the checkpoint but "
                f"{list(model_shape)} in the model built from the config; the config does not "
                f"match this checkpoint")
        held, wanted = tf.as_dtype(stored[src][1]), tf.as_dtype(var.dtype)
        if wanted.is_floating and not held.is_floating:  # bert_tf: it was cast and loaded
            raise CheckpointError(
                f"{prefix}: variable {src} is stored as {held.name} in the checkpoint but the "
                f"model's is {wanted.name}: not a checkpoint of floating-point weights (the "
                "original's restore refuses it too)")


def _check_data_bytes(prefix: str, stored: Mapping[str, Tuple[Tuple[int, ...], str]]) -> None:
    """Raises when the bundle's data files hold fewer bytes than its fixed-size entries need.

    A bundle's ``.data-*`` files are its tensors' bytes end to end (TF's ``BundleWriter``,
    no padding), so a copy cut short is found from the sizes alone, before any variable is
    assigned (the tensors are then read one at a time). String entries (variable length) are
    not counted.

    Raises:
      CheckpointError: ``<prefix>: unreadable checkpoint, its data file is ... truncated``.
    """
    need = sum(_entry_bytes(shape, dtype_name) for shape, dtype_name in stored.values())
    files = literal_glob(prefix, ".data-*-of-*")
    have = sum(tf.io.gfile.stat(f).length for f in files)
    if have < need:
        raise CheckpointError(f"{prefix}: unreadable checkpoint, its data file is damaged or "
                              f"truncated ({have} bytes in {len(files)} data file(s), its "
                              f"index needs at least {need})")


def check_fits(name_to_variable: Mapping[str, "tf.Variable"], path: str,
               require_all: bool = False,
               missing_hint: str = "does the config match it?") -> str:
    """Checks a checkpoint against the model without assigning anything (so that a bad one
    fails before any file is written): every shape, and with ``require_all`` every variable.

    Args:
      name_to_variable: original name -> variable; path: checkpoint prefix, file or folder;
      require_all: every model variable must be in the checkpoint; missing_hint: the end of
      the missing-variables message.

    Returns:
      the checkpoint prefix.

    Raises:
      CheckpointError: unreadable checkpoint; none of the model's variables in it (even
        with one common prefix mapped, :func:`map_names`); a shape that does not fit (names
        the variable and both shapes); with ``require_all``, missing variables (names them).
    """
    prefix = resolve_prefix(path)
    stored = list_checkpoint(prefix)
    mapping = map_names(name_to_variable, stored, prefix)
    if name_to_variable and not mapping.source:
        raise CheckpointError(nothing_matches_message(prefix, list(name_to_variable), stored))
    _check_shapes(prefix, stored, name_to_variable, mapping.source)
    missing = [n for n in name_to_variable if n not in mapping.source]
    if require_all and missing:
        raise missing_variables_error(prefix, missing, missing_hint)
    return prefix


def assign_from_checkpoint(name_to_variable: Mapping[str, "tf.Variable"], path: str,
                           require_all: bool = False,
                           missing_hint: Union[str, Callable[[List[str]], str]] =
                           "does the config match it?") -> LoadReport:
    """Assigns checkpoint tensors to variables by original name.

    Mirrors ``tf.train.init_from_checkpoint`` with the original's assignment map (spec
    `bert.md` 2.13, 3.4): every model variable whose name is in the checkpoint is assigned;
    the others keep their initial values; extra checkpoint entries are ignored; optimizer
    slots and ``global_step`` are never loaded. Where the original breaks: a checkpoint
    holding NONE of the model's names loads nothing there and trains from random weights
    with no error; here one common prefix (``module/`` of TF-Hub exports) is mapped
    (:func:`map_names`, logged once, ``report.renamed``), and when even that finds nothing
    a CheckpointError names the first names on both sides. A stored dtype other than the
    variable's (a checkpoint saved in bfloat16 for a float32 model) is cast, as the original's
    restore does, and said in one INFO line (:func:`cast_line`; the original casts without a
    word).

    Args:
      name_to_variable: original name -> Keras/TF variable (a family's checkpoint map).
      path: checkpoint prefix, file or folder.
      require_all: raise when a model variable is missing from the checkpoint.
      missing_hint: the end of that error, or a function of the missing names giving it.

    Returns:
      A :class:`LoadReport`.

    Raises:
      CheckpointError: unreadable checkpoint (also a truncated data file); none of the
        model's variables in it; a shape that does not fit (names the variable, the
        checkpoint shape and the model shape); missing variables with ``require_all``.
    """
    prefix = resolve_prefix(path)
    stored = list_checkpoint(prefix)
    report = LoadReport(prefix=prefix)
    report.skipped = [n for n in stored if is_optimizer_entry(n)]
    mapping = map_names(name_to_variable, stored, prefix)
    if name_to_variable and not mapping.source:
        raise CheckpointError(nothing_matches_message(prefix, list(name_to_variable), stored))
    if mapping.note:
        logging.warning("%s", mapping.note)
        report.renamed = mapping.note
    # Check every shape, and that the data files hold every entry's bytes, before assigning
    # anything, so a wrong config or a copy cut short changes nothing.
    _check_shapes(prefix, stored, name_to_variable, mapping.source)
    _check_data_bytes(prefix, stored)
    todo = []
    for name, var in name_to_variable.items():
        src = mapping.source.get(name)
        if src is None:
            report.missing.append(name)
        else:
            todo.append((name, var, src))
    for chunk in _restore_chunks(todo, stored):
        values = _restore_tensors(prefix, [src for _, _, src in chunk],
                                  [stored[src][1] for _, _, src in chunk])
        nbytes = 0
        for (name, var, _), value in zip(chunk, values):
            nbytes += value.shape.num_elements() * value.dtype.size
            if value.dtype != tf.as_dtype(var.dtype):
                pair = (value.dtype.name, tf.as_dtype(var.dtype).name)
                report.cast[pair] = report.cast.get(pair, 0) + 1
                value = tf.cast(value, var.dtype)
            # a weight built empty (pending_variables) adopts the restored buffer, others
            # are assigned
            fill(var, value)
            report.loaded.append(name)
        del values, value
        release_freed_memory(nbytes)
    used = set(mapping.source.values())
    report.unused = [n for n in stored if n not in used and not is_optimizer_entry(n)]
    _warn_unused_layers(prefix, report.unused, used)
    if report.cast:
        logging.info("%s", cast_line(prefix, report.cast))
    if require_all and report.missing:
        hint = missing_hint(report.missing) if callable(missing_hint) else missing_hint
        raise missing_variables_error(prefix, report.missing, hint)
    return report


_LAYER = re.compile(r"(?:^|/)layer_(\d+)/")


def _warn_unused_layers(prefix: str, unused: List[str], used) -> None:
    """One WARNING line when the checkpoint holds numbered layers (BERT ``bert/encoder/
    layer_N/``, XLNet ``model/transformer/layer_N/``) above the model's: a config with fewer
    layers than the checkpoint runs with its first layers (bert_tf; the original's
    ``init_from_checkpoint`` said nothing either, and a new user's 4-layer config on a 6-layer
    checkpoint ran without a word)."""
    extra = sorted({int(m.group(1)) for n in unused for m in [_LAYER.search(n)] if m})
    if not extra:
        return
    kept = sorted({int(m.group(1)) for n in used for m in [_LAYER.search(n)] if m})
    if not kept or extra[0] <= kept[-1]:
        return  # not a count mismatch (a map without layers, another naming): the summary
        # line lists them
    which = (f"layers {extra[0]}-{extra[-1]} are" if len(extra) > 1 else f"layer {extra[0]} is")
    logging.warning("%s: the checkpoint's %s not used: the model has %d layer(s) "
                    "(num_hidden_layers / n_layer of the config) and the checkpoint %d; it runs "
                    "with the first %d", prefix, which, len(kept), extra[-1] + 1, len(kept))


def missing_variables_error(prefix: str, missing: List[str], hint: str) -> CheckpointError:
    """``<prefix>: model variables missing from the checkpoint: a, b; <hint>``."""
    return CheckpointError(f"{prefix}: model variables missing from the checkpoint: "
                           f"{_name_list(missing)}; {hint}")


def cast_line(prefix: str, cast: Mapping[Tuple[str, str], int]) -> str:
    """The one line of :func:`assign_from_checkpoint` for variables whose stored dtype was
    not the model's: ``12 variables stored as bfloat16 in <prefix> were cast to float32``
    (each pair of dtypes, ``; ``-separated)."""
    return "; ".join(f"{n} variable{'s' if n != 1 else ''} stored as {held} in {prefix} "
                     f"{'were' if n != 1 else 'was'} cast to {wanted}"
                     for (held, wanted), n in cast.items())


# Tensors restored by one RestoreV2 call, at most this many bytes (one larger tensor alone):
# only a cast to another dtype (a bfloat16 model from a float32 checkpoint) holds a second
# copy, of one chunk at a time.
_RESTORE_CHUNK_BYTES = 64 << 20


def _entry_bytes(shape: Sequence[int], dtype_name: str) -> int:
    """Bytes of a fixed-size checkpoint entry in its data file (0 for strings and other
    variable-size dtypes)."""
    dtype = tf.as_dtype(dtype_name)
    if dtype == tf.string or not dtype.is_numpy_compatible:
        return 0
    return int(np.prod(shape, dtype=np.int64)) * dtype.size


def _restore_chunks(todo: Sequence[Tuple[str, "tf.Variable", str]],
                    stored: Mapping[str, Tuple[Tuple[int, ...], str]]):
    """Splits ``(name, variable, checkpoint name)`` rows into runs of at most
    :data:`_RESTORE_CHUNK_BYTES` checkpoint bytes (a larger tensor is a run of its own)."""
    chunk, size = [], 0
    for row in todo:
        nbytes = _entry_bytes(*stored[row[2]])
        if chunk and size + nbytes > _RESTORE_CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(row)
        size += nbytes
    if chunk:
        yield chunk


def _restore_tensors(prefix: str, names: Sequence[str], dtype_names: Sequence[str]):
    """Reads checkpoint entries as CPU tensors with TF's ``RestoreV2`` (what the original's
    ``tf.train.init_from_checkpoint`` initializers run): the bytes go from the file into the
    tensor that the variable then adopts, with no numpy copy between (issue 24).

    Raises:
      CheckpointError: a damaged or truncated data file (names the prefix).
    """
    try:
        with tf.device("CPU:0"):
            return tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=list(names),
                                        shape_and_slices=[""] * len(names),
                                        dtypes=[tf.as_dtype(d) for d in dtype_names])
    except Exception as e:  # a damaged data file: "Read less bytes than requested"
        if "Permission denied" in str(e):  # not damage: the file cannot be opened
            raise CheckpointError(f"{prefix}: cannot read its data file (Permission "
                                  "denied)") from e
        raise CheckpointError(f"{prefix}: unreadable checkpoint, its data file is damaged "
                              f"or truncated ({type(e).__name__}: {e})") from e


def variables_to_arrays(name_to_variable: Mapping[str, "tf.Variable"]) -> Dict[str, np.ndarray]:
    """Reads variables into a name -> numpy array dict (for :func:`write_checkpoint`)."""
    return {name: np.asarray(v.numpy() if hasattr(v, "numpy") else v)
            for name, v in name_to_variable.items()}


def checkpoint_step(prefix: str) -> Optional[int]:
    """The N of a ``model.ckpt-N`` prefix, or None."""
    m = re.search(r"-(\d+)$", prefix)
    return int(m.group(1)) if m else None


def step_checkpoints(model_dir: str, basename: Optional[str] = "model.ckpt"
                     ) -> List[Tuple[int, str]]:
    """``(N, prefix)`` of every checkpoint ``<model_dir>/<basename>-N`` with an index file,
    sorted by N (then prefix).

    Args:
      model_dir: the folder (missing: no checkpoints).
      basename: the prefix's name before ``-N``; None: any ``<name>-N`` (the XLNet eval list,
        original ``run_classifier.py``), other ``*.index`` bundles are skipped with a warning
        and temporary ``.tmp-*`` ones silently.

    Returns:
      list of ``(global step from the name, prefix)``.
    """
    if not tf.io.gfile.isdir(model_dir):
        return []
    pattern = f"{glob.escape(basename)}-*.index" if basename else "*.index"
    found = []
    for idx in files_in(model_dir, pattern):
        p = idx[: -len(".index")]
        if os.path.basename(p).startswith(".tmp-"):
            continue
        step = checkpoint_step(p)
        if step is None:
            if basename is None:
                logging.warning("%s: not a <name>-<step> checkpoint, not evaluated", p)
            continue
        found.append((step, p))
    return sorted(found)


def existing_checkpoints(model_dir: str, basename: str = "model.ckpt") -> List[str]:
    """Prefixes ``<model_dir>/<basename>-N`` that have an index file, sorted by N
    (:func:`step_checkpoints` without the steps)."""
    return [p for _, p in step_checkpoints(model_dir, basename)]


def latest_checkpoint(model_dir: str) -> Optional[str]:
    """The checkpoint named by ``<model_dir>/checkpoint`` (the state file), else the highest
    ``<name>-N`` of :func:`step_checkpoints`, else None (also for a missing folder)."""
    latest = latest_from_state_file(model_dir) if tf.io.gfile.isdir(model_dir) else None
    if latest:
        return latest
    found = step_checkpoints(model_dir, basename=None)
    return found[-1][1] if found else None


def iter_names(path: str) -> Iterable[str]:
    """Names in a checkpoint, sorted as TF lists them."""
    return list(list_checkpoint(path))
