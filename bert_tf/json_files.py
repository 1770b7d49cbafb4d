"""Reading the JSON config files of both families (`bert_config.json`, `xlnet_config.json`)."""

import json
from typing import Any, Dict

import tensorflow as tf
from absl import logging

from bert_tf.errors import ConfigError


def read_json_object(path: str, what: str) -> Dict[str, Any]:
    """Reads a JSON object from ``path`` (local or any `tf.io.gfile` path).

    Args:
      what: the kind of file, for messages ("BERT config", "XLNet config").

    Raises:
      ConfigError: the file is missing or unreadable, not valid JSON, or not an object (names
        the file).
    """
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            text = f.read()
    except Exception as e:
        raise ConfigError(f"{path}: cannot read {what} ({type(e).__name__}: {e})") from e
    try:
        obj = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid JSON ({e})") from e
    if not isinstance(obj, dict):
        raise ConfigError(f"{path}: expected a JSON object of {what} keys")
    return obj


_WARNED = set()


def warn_unknown_keys(obj: Dict[str, Any], known, path: str, what: str) -> list:
    """Logs one warning naming the keys of ``obj`` not in ``known`` (a typo such as
    ``"hiden_size"`` was silently ignored; bert_tf, beyond the originals, which keep or ignore
    unknown keys without a word). Returns those keys, sorted.

    Args:
      obj: the file's JSON object; known: every key the model reads plus the keys the released
        config files carry; path: the file, for the message; what: "BERT config", ...
    """
    unknown = sorted(k for k in obj if k not in known)
    if unknown and (path, tuple(unknown)) not in _WARNED:  # once a run (a task reads it twice)
        _WARNED.add((path, tuple(unknown)))
        logging.warning("%s: unknown %s key(s) %s, ignored (a typo? known keys: %s)",
                        path, what, ", ".join(repr(k) for k in unknown),
                        ", ".join(sorted(known)))
    return unknown
