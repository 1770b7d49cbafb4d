"""``eval_results.txt``: the evaluation result file of the classifier and pretraining tasks.

The original scripts write it as ``"%s = %s\\n" % (key, str(result[key]))`` for the keys of
the Estimator's result dict in sorted order (BERT ``run_classifier.py`` and
``run_pretraining.py``, spec `bert.md` 6.6, 8.6); bert_tf writes the same file for XLNet's
classifier (beyond the original, which only logged it). Values are formatted with ``str()``:
numpy float32 scalars print their shortest float32 digits (``0.41666666``), Python floats and
ints their ``repr``.
"""

import os
from typing import Any, Mapping

import tensorflow as tf

from bert_tf.atomic_files import atomic_write_text
from bert_tf.training.summaries import write_eval_summaries

EVAL_RESULTS_FILE = "eval_results.txt"


def format_eval_results(results: Mapping[str, Any]) -> str:
    """``key = value`` lines, keys sorted, values ``str()`` (the original's bytes).

    Args:
      results: metric name -> value (numpy or Python scalar, or a string such as a path).

    Returns:
      the file's text, one ``\\n``-terminated line per key (``""`` for no keys).
    """
    # str(), not format(): numpy's float32.__format__ would print the float64 digits.
    return "".join("%s = %s\n" % (key, str(results[key])) for key in sorted(results))


def write_eval_results(folder: str, results: Mapping[str, Any],
                       file_name: str = EVAL_RESULTS_FILE, summaries: bool = True) -> str:
    """Writes ``<folder>/<file_name>`` (:func:`format_eval_results`) atomically, and the
    numeric results as TensorBoard scalars in ``<folder>/eval/`` (the Estimator's evaluation
    summaries, :func:`bert_tf.training.summaries.write_eval_summaries`) unless not
    ``summaries``.

    Args:
      folder: output folder (created if missing; local or ``gs://``-style paths).
      results: as :func:`format_eval_results`.
      file_name: the file's name (default ``eval_results.txt``).

    Returns:
      the path written.

    Raises:
      OutputPathError: the file cannot be written (names it).
    """
    tf.io.gfile.makedirs(folder)
    path = os.path.join(folder, file_name)
    atomic_write_text(path, format_eval_results(results))
    if summaries:
        write_eval_summaries(folder, results)
    return path
