"""The SQuAD feature caches of the XLNet and ALBERT tasks: gzip JSON lines.

XLNet's ``run_squad.py`` keeps its eval features for post-processing in a pickle next to
the records, ALBERT's ``run_squad_v1/v2.py`` in ``--predict_feature_left_file`` (a pickle
too; spec `xlnet.md` 9, `albert.md`). bert_tf writes neither pickle: one header line
``{"settings": ..., "num_features": N}`` then one ``dataclasses.asdict(feature)`` a line,
gzipped without a file name or time in the gzip header, so the same features give the same
bytes (local or ``gs://``). Each task reads the header line itself and wraps the errors
in its own message (what to remove or pass to rewrite the file).
"""
import contextlib
import dataclasses
import gzip
import json
from typing import Any, Dict, Iterable, List, Sequence, Tuple, Type

import tensorflow as tf

from bert_tf.atomic_files import atomic_path, write_error


def write_features_cache(path: str, settings: Dict[str, Any], features: Sequence[Any]) -> None:
    """Writes ``features`` (dataclasses with a ``token_is_max_context`` dict) under a
    ``settings`` header as gzip JSON lines, atomically (any path ``tf.io.gfile`` opens).

    Raises:
      OutputPathError: the write failed (a full disk), naming ``path``; nothing is left.
    """
    with features_cache_written(path, settings, features):
        pass


@contextlib.contextmanager
def features_cache_written(path: str, settings: Dict[str, Any], features: Sequence[Any]):
    """:func:`write_features_cache` around a ``with`` block: the cache is written to a
    temporary file, the block runs (it writes the records the features go with), and only then
    is the cache renamed into place; an error in either leaves no new cache, so the records
    and their cache appear together or the next run rewrites both (bert_tf: a full disk left
    the records without their cache, with a traceback).

    Raises:
      OutputPathError: the cache's write failed (a full disk), naming ``path``.
    """
    with atomic_path(path, suffix=".gz") as tmp:
        try:
            # filename="": no file name in the gzip header (it was the random temporary
            # name), so the same features give the same bytes, local or remote
            with tf.io.gfile.GFile(tmp, "wb") as raw, gzip.GzipFile(
                    filename="", fileobj=raw, mode="wb", mtime=0) as f:
                f.write((json.dumps({"settings": settings, "num_features": len(features)})
                         + "\n").encode("utf-8"))
                for feature in features:
                    f.write((json.dumps(dataclasses.asdict(feature)) + "\n").encode("utf-8"))
        except (OSError, tf.errors.OpError) as e:
            raise write_error(path, e) from e
        yield


def parse_features_cache(header_line, lines: Iterable, feature_class: Type
                         ) -> Tuple[Dict[str, Any], List[Any]]:
    """``(settings, features)`` from the header line and the feature lines of
    :func:`write_features_cache`'s file (``str`` or UTF-8 ``bytes`` lines), the keys of
    ``token_is_max_context`` back to ints.

    Raises:
      ValueError: not JSON, or another number of features than the header says;
      KeyError / TypeError: a header or feature without the expected fields.
    """
    header = json.loads(header_line)
    features = []
    for line in lines:
        d = json.loads(line)
        d["token_is_max_context"] = {int(k): v for k, v in d["token_is_max_context"].items()}
        features.append(feature_class(**d))
    if len(features) != header["num_features"]:
        raise ValueError(f"{len(features)} features, header says {header['num_features']}")
    return header["settings"], features
