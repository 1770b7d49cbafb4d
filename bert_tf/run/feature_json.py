"""The text of `extract_features.py`'s JSON lines (spec `bert.md` 10), TensorFlow-free.

:func:`feature_json_line` (the per-token layers file) and :func:`embedding_json_line`
(``--pooling``'s ``.embeddings.jsonl``), the bytes the original's ``json.dumps`` of
``round(float(x), 6)`` values writes, formatted vectorized by
:mod:`bert_tf.run.rounded_json`. Used by :mod:`bert_tf.run.feature_lines`
(re-exported there) and importable without TensorFlow (``bench/hf_torch_whole.py``, a peer
in another framework's process, writes the same lines).
"""

import json
from typing import Sequence

import numpy as np

from bert_tf.run.rounded_json import rounded_json_joined, rounded_json_rows


def feature_json_line(unique_id: int, tokens: Sequence[str], layer_indexes: Sequence[int],
                      layer_values: np.ndarray) -> str:
    """One output line in the original schema.

    Args:
      layer_values: float32 ``[len(layer_indexes), len(tokens), H]``.

    Returns:
      the bytes ``json.dumps`` writes for the original OrderedDict layout, plus ``"\\n"``;
      values are ``round(float(x), 6)`` as the original (formatted vectorized by
      :func:`bert_tf.run.rounded_json.rounded_json_joined`, same text).
    """
    num_layers, num_tokens = len(layer_indexes), len(tokens)
    head = '{"linex_index": %s, "features": [' % json.dumps(unique_id)
    if num_tokens == 0:
        return head + "]}\n"
    # token-major rows, each after the text that comes before it in the line (the keys, the
    # token, the closing brackets of the row before), joined with the values in one pass
    values = np.asarray(layer_values).transpose(1, 0, 2)  # [tokens, layers, H]
    index_texts = ['{"index": %s, "values": [' % json.dumps(int(i)) for i in layer_indexes]
    between_layers = [("]}, " + t).encode("ascii") for t in index_texts[1:]]
    prefixes = []
    for t, token in enumerate(tokens):
        opening = head if t == 0 else "]}]}, "
        prefixes.append(('%s{"token": %s, "layers": [%s' % (opening, json.dumps(token),
                                                           index_texts[0])).encode("ascii"))
        prefixes.extend(between_layers)
    text = rounded_json_joined(values.reshape(-1, values.shape[2]), prefixes)
    return text.decode("ascii") + "]}]}]}\n"


def embedding_json_line(unique_id: int, pooling: str, embedding: np.ndarray) -> str:
    """One ``<output_file>.embeddings.jsonl`` line: ``json.dumps`` of
    ``{"linex_index", "pooling", "embedding": [round(float(x), 6) ...]}`` plus ``"\\n"``.

    Args:
      embedding: float32 ``[H]``.
    """
    values = rounded_json_rows(np.asarray(embedding).reshape(1, -1))[0]
    return '{"linex_index": %s, "pooling": %s, "embedding": [%s]}\n' % (
        json.dumps(unique_id), json.dumps(pooling), values)
