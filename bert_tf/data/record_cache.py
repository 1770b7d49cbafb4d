"""Cached TFRecords: when a file left by an earlier run may be reused.

The original XLNet scripts (``run_classifier.py``, ``run_race.py``, ``run_squad.py``, spec
`xlnet.md` 8.3, 9, 10) write their records once into ``--output_dir`` under names that hold
only the SentencePiece model's file name and the lengths (``spiece.model.len-128.train.tf_record``)
and reuse them whenever they exist, unless ``--overwrite_data``. Changed data with the same
row count, another ``--uncased``, another SentencePiece model of the same name: the old
records were used silently (issue 15). The names stay the original's; beyond it:

* :func:`fingerprint` says what a file was made from: a hash of the examples read (so any
  change of the data that reaches the records shows, whatever the files' layout), the
  SentencePiece model's hash and the flags that shape the records;
* :func:`write_fingerprint` stores it beside the file (``<file>.fingerprint.json``) once the
  file is written;
* :func:`reuse_cached` decides, before anything is written: no file or ``--overwrite_data``:
  write it; a fingerprint that differs: one warning line naming what differs, the stale file
  is removed and written again; the same fingerprint: reuse; no fingerprint (a file of the
  original or of an older bert_tf): reuse after the content checks of
  :func:`check_cached_file`, as before.

:func:`check_cached_file` and :func:`check_counts` are the content checks both the XLNet
classifier and RACE records share (one error line naming the file and what differs).
"""

import hashlib
import json
import os
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence

import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import atomic_write_text
from bert_tf.data.tfrecord_bytes import count_framed_records
from bert_tf.errors import FlagError, InputDataError

FINGERPRINT_SUFFIX = ".fingerprint.json"
REWRITE_HINT = "; pass --overwrite_data=True to rewrite it, or another --output_dir"


def file_sha256(path: str) -> str:
    """Hex sha256 of a file's bytes (read in 1 MiB chunks)."""
    digest = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _example_json(example: Any) -> str:
    fields = vars(example) if hasattr(example, "__dict__") else example
    return json.dumps(fields, sort_keys=True, default=repr, ensure_ascii=False)


def fingerprint(settings: Mapping[str, Any], examples: Optional[Iterable[Any]] = None,
                files: Sequence[str] = ()) -> Dict[str, Any]:
    """What a cached record file is made from.

    Args:
      settings: the flags that shape the records (JSON values), e.g. ``max_seq_length``,
        ``uncased``, ``num_passes``.
      examples: the examples the file is written from, in the order written (objects with
        attributes, or JSON values); hashed with their number.
      files: input files hashed as they are (e.g. the SentencePiece model).

    Returns:
      a JSON-able dict ``{"settings": ..., "examples": {"count", "sha256"}, "files":
      {path basename: sha256}}``.
    """
    out: Dict[str, Any] = {"settings": {k: settings[k] for k in sorted(settings)}}
    if examples is not None:
        digest, count = hashlib.sha256(), 0
        for example in examples:
            digest.update(_example_json(example).encode("utf-8"))
            digest.update(b"\n")
            count += 1
        out["examples"] = {"count": count, "sha256": digest.hexdigest()}
    out["files"] = {os.path.basename(p): file_sha256(p) for p in files}
    return json.loads(json.dumps(out))  # plain JSON values, as read back


def fingerprint_path(record_path: str) -> str:
    """``<record_path>.fingerprint.json``."""
    return record_path + FINGERPRINT_SUFFIX


def _differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    found = []
    for key in sorted(set(old.get("settings", {})) | set(new.get("settings", {}))):
        a, b = old.get("settings", {}).get(key), new.get("settings", {}).get(key)
        if a != b:
            found.append(f"{key} {a!r} -> {b!r}")
    if old.get("examples") != new.get("examples"):
        a, b = old.get("examples") or {}, new.get("examples") or {}
        found.append("the examples changed" + (
            f" ({a.get('count')} -> {b.get('count')})" if a.get("count") != b.get("count")
            else f" (same count, {b.get('count')}, other content)"))
    for key in sorted(set(old.get("files", {})) | set(new.get("files", {}))):
        if old.get("files", {}).get(key) != new.get("files", {}).get(key):
            found.append(f"{key} changed")
    return ", ".join(found) or "an unreadable fingerprint"


def reuse_cached(record_path: str, expected: Mapping[str, Any], overwrite: bool) -> bool:
    """Whether the run may reuse ``record_path`` (see the module docstring).

    A stale file (its fingerprint differs from ``expected``) is removed with its fingerprint,
    and one warning line says what differs; the caller then writes it as if it were absent.

    Args:
      record_path: the cached TFRecord; expected: this run's :func:`fingerprint`;
      overwrite: ``--overwrite_data``.

    Returns:
      True: reuse it (same fingerprint, or none stored: run the content checks); False: write
      it (absent, ``overwrite``, or stale and removed).

    Raises:
      FlagError: a stale file that cannot be removed (names it).
    """
    if overwrite or not tf.io.gfile.exists(record_path):
        return False
    side = fingerprint_path(record_path)
    if not tf.io.gfile.exists(side):
        logging.info("%s has no fingerprint (written by the original or an older bert_tf): "
                     "its records are checked, then reused", record_path)
        return True
    try:
        with tf.io.gfile.GFile(side, "r") as f:
            stored = json.load(f)
    except (ValueError, OSError, tf.errors.OpError):
        stored = {}
    if stored == dict(expected):
        logging.info("Reusing the cached %s (same data and flags; --overwrite_data=True "
                     "rewrites it)", record_path)
        return True
    logging.warning("the cached %s was written for other data or flags (%s): writing it again",
                    record_path, _differences(stored, expected))
    try:
        tf.io.gfile.remove(record_path)
        tf.io.gfile.remove(side)
    except (OSError, tf.errors.OpError) as e:
        raise FlagError(f"--output_dir: cannot remove the stale cached {record_path} ({e})"
                        f"{REWRITE_HINT}") from e
    return False


def write_fingerprint(record_path: str, value: Mapping[str, Any]) -> None:
    """Writes ``value`` (a :func:`fingerprint`) beside ``record_path``, atomically; call it
    once the record file is complete."""
    atomic_write_text(fingerprint_path(record_path),
                      json.dumps(dict(value), indent=1, sort_keys=True) + "\n")


def cached_file_prefix(path: str) -> str:
    """The start of every cached-file error: ``--output_dir: the cached <path> does not fit
    this run (it would be reused)``."""
    return f"--output_dir: the cached {path} does not fit this run (it would be reused)"


def check_cached_file(path: str, overwrite: bool, check: Callable[[str], None],
                      fix: str = REWRITE_HINT) -> None:
    """Runs a task's content checks on a cached file the run would reuse.

    Nothing is checked when the file is absent or ``overwrite`` is set. ``check(prefix)``
    reads the file and raises :class:`FlagError` starting with ``prefix`` (see
    :func:`cached_file_prefix`); a TF read or parse error on the way becomes one FlagError
    naming the file.

    Raises:
      FlagError: the file does not fit or cannot be read (ends with ``fix``).
    """
    if overwrite or not tf.io.gfile.exists(path):
        return
    prefix = cached_file_prefix(path)
    try:
        count_framed_records(path)  # cut short anywhere (TF reads a cut header as the end)
    except InputDataError as e:
        raise FlagError(f"{prefix}: {str(e).split(': ', 1)[-1]}{fix}") from e
    try:
        check(prefix)
    except FlagError:
        raise
    except Exception as e:  # noqa: BLE001 - DataLossError, DecodeError, InvalidArgumentError
        message = getattr(e, "message", None) or str(e)
        raise FlagError(f"{prefix}: cannot read it ({type(e).__name__}: "
                        f"{message.strip().splitlines()[0]}){fix}") from e


def first_record_features(path: str):
    """The ``tf.train.Example`` feature map of the file's first record, or None when empty."""
    first = next(iter(tf.data.TFRecordDataset(path).take(1).as_numpy_iterator()), None)
    return None if first is None else tf.train.Example.FromString(first).features.feature


def check_counts(prefix: str, fix: str, total: int, real: int, num_examples: int, split: str,
                 eval_batch_size: Optional[int] = None) -> None:
    """The counts every cached file must have: ``num_examples`` real examples and, with
    ``eval_batch_size`` (an eval file, padded for the TPU), a multiple of it in all.

    Raises:
      FlagError: names the counts.
    """
    padding = f" ({real} real + {total - real} padding)" if total != real else ""
    if real != num_examples:
        raise FlagError(f"{prefix}: it holds {total} records{padding}, this run has "
                        f"{num_examples} {split} examples{fix}")
    if eval_batch_size and total % eval_batch_size:
        raise FlagError(f"{prefix}: it holds {total} records{padding}, not a multiple of "
                        f"--eval_batch_size={eval_batch_size} (the last batch would be "
                        f"dropped); pass --overwrite_data=True to rewrite it with this "
                        f"padding, or another --output_dir")
