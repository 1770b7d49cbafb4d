"""The text of `extract_features.py`'s JSON lines (spec `bert.md` 10), TensorFlow-free.

:func:`feature_json_line` (the per-token layers file) and :func:`embedding_json_line`
(``--pooling``'s ``.embeddings.jsonl``), the bytes the original's ``json.dumps`` of
``round(float(x), 6)`` values writes, formatted vectorized by
:func:`bert_tf.run.rounded_json.rounded_json_rows`. Used by :mod:`bert_tf.run.feature_lines`
(re-exported there) and importable without TensorFlow (``bench/hf_torch_whole.py``, a peer
in another framework's process, writes the same lines).
"""

import json
from typing import Sequence

import numpy as np

from bert_tf.run.rounded_json import rounded_json_rows

_FORMAT_VALUES = 1 << 16  # values of one line formatted at once (feature_json_line)


def feature_json_line(unique_id: int, tokens: Sequence[str], layer_indexes: Sequence[int],
                      layer_values: np.ndarray) -> str:
    """One output line in the original schema.

    Args:
      layer_values: float32 ``[len(layer_indexes), len(tokens), H]``.

    Returns:
      the bytes ``json.dumps`` writes for the original OrderedDict layout, plus ``"\\n"``;
      values are ``round(float(x), 6)`` as the original (formatted vectorized by
      :func:`bert_tf.run.rounded_json.rounded_json_rows`, same text).
    """
    num_layers, num_tokens = len(layer_indexes), len(tokens)
    # token-major rows, formatted a few tokens at a time: the line's text is the only
    # line-sized string held (issue 24: the row strings, the token strings and the line
    # were three copies of it)
    values = np.asarray(layer_values).transpose(1, 0, 2)  # [tokens, layers, H]
    width = max(1, values.shape[2])
    step = max(1, _FORMAT_VALUES // (num_layers * width))
    indexes = [json.dumps(int(index)) for index in layer_indexes]
    features = []
    for start in range(0, num_tokens, step):
        rows = rounded_json_rows(values[start:start + step].reshape(-1, values.shape[2]))
        for t, token in enumerate(tokens[start:start + step]):
            layers = ", ".join('{"index": %s, "values": [%s]}' % (indexes[j], rows[t * num_layers + j])
                               for j in range(num_layers))
            features.append('{"token": %s, "layers": [%s]}' % (json.dumps(token), layers))
    return '{"linex_index": %s, "features": [%s]}\n' % (json.dumps(unique_id), ", ".join(features))


def embedding_json_line(unique_id: int, pooling: str, embedding: np.ndarray) -> str:
    """One ``<output_file>.embeddings.jsonl`` line: ``json.dumps`` of
    ``{"linex_index", "pooling", "embedding": [round(float(x), 6) ...]}`` plus ``"\\n"``.

    Args:
      embedding: float32 ``[H]``.
    """
    values = rounded_json_rows(np.asarray(embedding).reshape(1, -1))[0]
    return '{"linex_index": %s, "pooling": %s, "embedding": [%s]}\n' % (
        json.dumps(unique_id), json.dumps(pooling), values)
