"""Reading the JSON config files of both families (`bert_config.json`, `xlnet_config.json`)."""

import json
from typing import Any, Dict

import tensorflow as tf

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
