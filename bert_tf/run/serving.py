"""Raw-text SavedModels: the one ``--export_dir`` writer of every task (issue 12, deliverable 2).

A task hands :func:`write_saved_model` its model function and an in-graph text preprocessor
(``BertTextPreprocessor`` of :mod:`bert_tf.tokenization.in_graph_wordpiece`,
``XLNetTextPreprocessor`` of :mod:`bert_tf.tokenization.in_graph_sentencepiece`: tensorflow-text
ops giving the original tokenizers' ids); the SavedModel written has three signatures:

* ``serving_default``: tf.string ``text_a`` and ``text_b`` ``[batch]`` (a sentence pair, as
  the original's ``InputExample(text_a, text_b)``) -> the task's outputs;
* ``serving_single``: tf.string ``text_a`` ``[batch]`` only (``text_b`` None in the original:
  ``[CLS] A [SEP]``) -> the same outputs;
* ``serving_ids``: the ids the original's features hold (int32 ``input_ids``, ``input_mask``,
  ``segment_ids`` ``[batch, seq]`` for BERT; XLNet's ``input_ids``, float32 ``input_mask``,
  ``segment_ids``) -> the same outputs, for callers that tokenize themselves.

The text signatures pad every row to the export's ``max_seq_length``; the ids signature takes
any ``seq`` up to the model's maximum. The SavedModel uses tensorflow-text ops, so a reader
must ``import tensorflow_text`` before ``tf.saved_model.load`` (TF Serving links them in).

Writes are atomic: the SavedModel is written under ``<export_dir>/.tmp-<version>-<pid>`` and
renamed to ``<export_dir>/<version>`` (a Unix timestamp: the Estimator ``export_saved_model``
and TF Serving version layout), so a reader never sees a partial export.
"""

import os
import time
from typing import Callable, Dict, Optional, Sequence

import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import move_folder
from bert_tf.errors import FlagError
from bert_tf.fused_layer_norm import portable_graphs

DEFAULT_SIGNATURE = "serving_default"
SINGLE_SIGNATURE = "serving_single"
IDS_SIGNATURE = "serving_ids"
TEXT_A, TEXT_B = "text_a", "text_b"


def text_specs() -> Dict[str, tf.TensorSpec]:
    """The string inputs of the text signatures: ``text_a``, ``text_b`` tf.string ``[batch]``."""
    return {name: tf.TensorSpec([None], tf.string, name=name) for name in (TEXT_A, TEXT_B)}


def id_specs(dtypes: Dict[str, tf.DType]) -> list:
    """``[batch, seq]`` TensorSpecs named after ``dtypes``' keys (in that order)."""
    return [tf.TensorSpec([None, None], dtype, name=name) for name, dtype in dtypes.items()]


def text_endpoints(preprocessor, model_fn: Callable[[Dict[str, tf.Tensor]], Dict[str, tf.Tensor]],
                   id_dtypes: Dict[str, tf.DType]):
    """The three endpoints (name, function, input signature) of a text model.

    Args:
      preprocessor: a Keras layer, ``preprocessor(text_a, text_b=None)`` with tf.string
        ``[batch]`` -> dict of ``[batch, max_seq_length]`` features keyed as ``id_dtypes``
        (``BertTextPreprocessor`` of :mod:`bert_tf.tokenization.in_graph_wordpiece`, or
        ``XLNetTextPreprocessor`` of :mod:`bert_tf.tokenization.in_graph_sentencepiece`).
      model_fn: features dict -> outputs dict (float32 tensors, batch first).
      id_dtypes: feature name -> dtype of the ``serving_ids`` inputs (the model's own).

    Returns:
      ``[(name, fn, input_signature)]`` for ``serving_default`` (text_a, text_b),
      ``serving_single`` (text_a) and ``serving_ids``.
    """
    names = list(id_dtypes)
    specs = text_specs()

    def pair(text_a, text_b):
        return model_fn(_cast(preprocessor(text_a, text_b), id_dtypes))

    def single(text_a):
        return model_fn(_cast(preprocessor(text_a), id_dtypes))

    def ids(*tensors):
        return model_fn(dict(zip(names, tensors)))

    return [(DEFAULT_SIGNATURE, pair, [specs[TEXT_A], specs[TEXT_B]]),
            (SINGLE_SIGNATURE, single, [specs[TEXT_A]]),
            (IDS_SIGNATURE, ids, id_specs(id_dtypes))]


def _cast(features: Dict[str, tf.Tensor], dtypes: Dict[str, tf.DType]) -> Dict[str, tf.Tensor]:
    return {name: tf.cast(features[name], dtype) for name, dtype in dtypes.items()}


def check_export_dir(export_dir: str, flag: str = "--export_dir",
                     doc_stride: Optional[int] = None, max_seq_length: Optional[int] = None
                     ) -> None:
    """Creates ``export_dir`` and checks a file can be written there, before the run's work
    (so a bad ``--export_dir`` fails before any other output is written).

    Args:
      doc_stride: the run's ``--doc_stride`` (None: unset). The SavedModel's text signatures
        truncate to ``max_seq_length`` as the original does; they do not window, so with a
        stride one warning line says that inputs longer than ``max_seq_length`` get results
        other than the run's own (``test_results.tsv``, the JSON lines).

    Raises:
      FlagError: it cannot be created or written (names the flag and the cause).
    """
    if doc_stride is not None:
        logging.warning("%s with --doc_stride=%d: the SavedModel's text signatures truncate "
                        "each input to --max_seq_length=%s tokens (no windows), so an input "
                        "longer than that gets other results than this run writes", flag,
                        doc_stride, max_seq_length)
    probe = os.path.join(export_dir, f".tmp-probe-{os.getpid()}")
    try:
        tf.io.gfile.makedirs(export_dir)
        with tf.io.gfile.GFile(probe, "w") as f:
            f.write("")
        tf.io.gfile.remove(probe)
    except (OSError, tf.errors.OpError) as e:
        raise FlagError(f"{flag}={export_dir}: cannot create it or write there "
                        f"({getattr(e, 'strerror', None) or getattr(e, 'message', None) or e})"
                        ) from e


def write_saved_model(export_dir: str, tracked: Sequence, endpoints: Sequence,
                      flag: str = "--export_dir") -> str:
    """Writes a SavedModel with ``endpoints`` under ``<export_dir>/<timestamp>/``, atomically.

    Args:
      export_dir: the folder (local, ``gs://`` or ``ram://``), created if missing.
      tracked: the Keras models/layers (and tf resources) the endpoints use: their weights,
        vocabularies and lookup tables are saved.
      endpoints: ``(signature name, fn, input_signature)`` triples; ``fn`` returns a dict of
        tensors (the signature's outputs).
      flag: the flag named in errors.

    Returns:
      The version folder written (``<export_dir>/<unix time>``, bumped past an existing one
      of that name; one warning line when a higher version is there, which TF Serving would
      serve instead).

    Raises:
      FlagError: ``export_dir`` cannot be created or written (nothing is left under it but
        what was there).
    """
    import keras

    try:
        tf.io.gfile.makedirs(export_dir)  # gs:// as the original's Estimator export
    except (OSError, tf.errors.OpError) as e:
        raise FlagError(f"{flag}={export_dir}: cannot create it "
                        f"({getattr(e, 'strerror', None) or e})") from e
    version = int(time.time())
    while tf.io.gfile.exists(os.path.join(export_dir, str(version))):
        version += 1
    newer = [int(n.rstrip("/")) for n in tf.io.gfile.listdir(export_dir)
             if n.rstrip("/").isdigit() and int(n.rstrip("/")) > version]
    if newer:  # TF Serving loads the highest version: this export would not be served
        logging.warning("%s=%s already holds version %d, higher than this export's %d: TF "
                        "Serving serves the highest version, not this one (remove it or use "
                        "another %s)", flag, export_dir, max(newer), version, flag)
    final = os.path.join(export_dir, str(version))
    tmp = os.path.join(export_dir, f".tmp-{version}-{os.getpid()}")
    archive = keras.export.ExportArchive()
    for item in tracked:
        if isinstance(item, keras.layers.Layer) and not item.built:
            item.build(None)  # a preprocessor: tables, no weights to create
        archive.track(item)
    with portable_graphs():  # traced with standard ops only (no oneDNN-private LayerNorm)
        for name, fn, signature in endpoints:
            archive.add_endpoint(name, fn, input_signature=signature)
        try:
            archive.write_out(tmp, verbose=False)
            move_folder(tmp, final, last_file="saved_model.pb")
        except (OSError, tf.errors.OpError) as e:
            if tf.io.gfile.exists(tmp):
                tf.io.gfile.rmtree(tmp)
            raise FlagError(f"{flag}={export_dir}: cannot write the SavedModel ({e})") from e
    logging.info("Exported the SavedModel to %s (signatures: %s)", final,
                 ", ".join(name for name, _, _ in endpoints))
    return final
