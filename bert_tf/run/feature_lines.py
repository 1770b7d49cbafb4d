"""The feature-extraction pieces shared by BERT's and XLNet's ``extract_features``
(:mod:`bert_tf.bert.tasks.feature_extraction`, :mod:`bert_tf.xlnet.tasks.feature_extraction`):
``--layers`` parsing, the JSON lines in the original schema (spec `bert.md` 10), the loop that
batches lines by length and writes them in input order (resumable), the ``--doc_stride`` windows
stitched back into one line, and the ``--pooling`` / ``--normalize`` sentence embeddings
(numpy, and in the graph for the exported SavedModels).

The family's featurizing and padded forward pass are values (``featurize``, ``run_batch``);
nothing here imports a family.
"""

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import math
import time
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional,
                    Sequence)

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import (atomic_text_writer, check_output_path, display_path, is_remote,
                                  write_error)
from bert_tf.checkpoint_io import literal_glob
from bert_tf.data.sequence_pairs import BertInputs
from bert_tf.data.text_lines import TextExample, check_input_file, chunks
from bert_tf.data.windows import DocSpan, max_context_windows
from bert_tf.errors import BertTfError, FlagError, InputDataError
from bert_tf.resumable_files import ResumableOutputs
# the JSON line texts live in a TensorFlow-free module (bench/hf_torch_whole.py writes the
# same lines); re-exported here, where the writer looks them up
from bert_tf.run.feature_json import embedding_json_line, feature_json_line  # noqa: F401

POOLINGS = ("none", "cls", "mean", "max")
DEFAULT_OUTPUT_FILE = "extract_features_output.jsonl"
_CHUNK_BATCHES = 64  # batches sorted by length together; bounds memory to this many batches
_LENGTH_MULTIPLE = 8  # batch lengths are rounded up to this, to limit retracing


def parse_layer_indexes(layers: str, num_hidden_layers: int) -> List[int]:
    """Parses ``--layers`` ("-1,-2") and checks each index exists among L blocks.

    Raises:
      FlagError: a non-integer entry, or an index outside ``[-L, L-1]`` (names it and L).
    """
    indexes = []
    for item in layers.split(","):
        try:
            index = int(item)
        except ValueError:
            raise FlagError(f"--layers={layers}: {item!r} is not an integer layer index") from None
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise FlagError(f"--layers={layers}: layer {index} does not exist; the model has "
                            f"{num_hidden_layers} layers (valid: {-num_hidden_layers}..{num_hidden_layers - 1})")
        indexes.append(index)
    return indexes


def check_pooling_flags(pooling: str, normalize: bool) -> None:
    """``--pooling`` is one of :data:`POOLINGS`; ``--normalize`` needs a pooling.

    Raises:
      FlagError: naming the flag.
    """
    if pooling not in POOLINGS:
        raise FlagError(f"--pooling={pooling}: expected one of {', '.join(POOLINGS)}")
    if normalize and pooling == "none":
        raise FlagError("--normalize: needs --pooling=cls|mean|max (it scales the sentence "
                        "embeddings; the per-token features are never normalized)")


def output_file_or_default(output_file: Optional[str]) -> str:
    """``--output_file``, or :data:`DEFAULT_OUTPUT_FILE` when the flag is not given (bert_tf:
    the original required it).

    Raises:
      FlagError: the flag given empty (``--output_file=``; it wrote the default file without
        a word).
    """
    if output_file == "":
        raise FlagError("--output_file is empty: give a file name (without the flag: "
                        f"./{DEFAULT_OUTPUT_FILE})")
    return output_file or DEFAULT_OUTPUT_FILE


def check_feature_files(input_file: str, output_file: str, pooling: str) -> None:
    """The start-up file checks of every family's ``extract_features`` (before the model is
    built): ``output_file`` (and, with ``pooling``, ``<output_file>.embeddings.jsonl``) can be
    written, ``input_file`` can be read.

    Raises:
      OutputPathError, InputDataError: naming the path.
    """
    check_output_path(output_file)
    if pooling != "none":
        check_output_path(output_file + ".embeddings.jsonl")
    check_input_file(input_file)


def pool(sequence_output: np.ndarray, real: np.ndarray, pooling: str,
         cls_position: str = "first") -> np.ndarray:
    """SBERT-style sentence embedding of one example, BERT or XLNet, from its padded row.

    bert_tf, beyond the original scripts (``--pooling``).

    Args:
      sequence_output: float32 ``[S, H]``, the last layer of one example, padding included
        (on either side).
      real: ``[S]``, nonzero/True at the real tokens: BERT's ``input_mask == 1`` (right
        padding), XLNet's ``input_mask == 0`` (left padding, 1 = padding).
      pooling: ``cls`` (the classification token), ``mean`` or ``max`` over the real tokens.
      cls_position: where the classification token is among the real tokens: ``first``
        (BERT's ``[CLS]``) or ``last`` (XLNet's ``<cls>``, its summary ``last``).

    Returns:
      float32 ``[H]``.

    Raises:
      FlagError: another pooling.
      ValueError: another ``cls_position``.
    """
    rows = np.asarray(sequence_output)[np.asarray(real).astype(bool)]
    if pooling == "cls":
        if cls_position not in ("first", "last"):
            raise ValueError(f"cls_position={cls_position!r}: expected 'first' or 'last'")
        return rows[0] if cls_position == "first" else rows[-1]
    if pooling == "mean":
        return rows.mean(axis=0)
    if pooling == "max":
        return rows.max(axis=0)
    raise FlagError(f"--pooling={pooling}: expected one of {', '.join(POOLINGS)}")


def l2_normalize(embedding: np.ndarray) -> np.ndarray:
    """``x / max(||x||_2, 1e-12)`` (float64 arithmetic), float32 ``[H]`` -> float32 ``[H]``.

    sentence-transformers' ``Normalize`` module (``torch.nn.functional.normalize``, p=2,
    eps=1e-12): a zero vector stays zero.
    """
    x = np.asarray(embedding, np.float64)
    return (x / max(float(np.linalg.norm(x)), 1e-12)).astype(np.float32)


def pool_in_graph(sequence_output: tf.Tensor, real: tf.Tensor, pooling: str,
                  cls_position: str = "first") -> tf.Tensor:
    """:func:`pool` for a batch, in the graph (the exported SavedModels).

    Args:
      sequence_output: float32 ``[B, S, H]``, padding included (either side).
      real: ``[B, S]``, nonzero at the real tokens (BERT ``input_mask == 1``, XLNet
        ``input_mask == 0``); every row has at least one.
      pooling, cls_position: as :func:`pool`.

    Returns:
      float32 ``[B, H]``.

    Raises:
      FlagError: another pooling.
    """
    real = tf.cast(real, tf.bool)
    if pooling == "cls":
        # the first (BERT) or last (XLNet) real position of each row
        positions = tf.broadcast_to(tf.range(tf.shape(real)[1])[None, :], tf.shape(real))
        if cls_position == "first":
            index = tf.reduce_min(tf.where(real, positions, tf.shape(real)[1]), axis=1)
        else:
            index = tf.reduce_max(tf.where(real, positions, -1), axis=1)
        return tf.gather(sequence_output, index, axis=1, batch_dims=1)
    weights = tf.cast(real, sequence_output.dtype)[:, :, None]
    if pooling == "mean":
        return tf.reduce_sum(sequence_output * weights, axis=1) / tf.reduce_sum(weights, axis=1)
    if pooling == "max":
        return tf.reduce_max(tf.where(real[:, :, None], sequence_output,
                                      tf.constant(-float("inf"), sequence_output.dtype)), axis=1)
    raise FlagError(f"--pooling={pooling}: expected one of {', '.join(POOLINGS)}")


def l2_normalize_in_graph(embedding: tf.Tensor) -> tf.Tensor:
    """:func:`l2_normalize` for a batch in the graph (the exported SavedModels): float32
    ``[B, H]`` -> float32 ``[B, H]``, each row ``x / max(||x||_2, 1e-12)`` in float64."""
    x = tf.cast(embedding, tf.float64)
    return tf.cast(x / tf.maximum(tf.norm(x, axis=-1, keepdims=True), 1e-12), tf.float32)


def bucket_length(longest: int, max_seq_length: int) -> int:
    """A batch's padded length: its longest example rounded up to a multiple of 8."""
    return min(max_seq_length, int(math.ceil(longest / _LENGTH_MULTIPLE) * _LENGTH_MULTIPLE))


def _batches_by_length(features: List[BertInputs], batch_size: int) -> Iterator[List[int]]:
    order = sorted(range(len(features)), key=lambda i: len(features[i].input_ids))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def _open_output(stack: contextlib.ExitStack, path: str):
    """An atomic text writer for ``path`` (renamed when ``stack`` closes without error)."""
    return stack.enter_context(atomic_text_writer(path))


def _refuse_to_empty_earlier_outputs(examples: Iterable[TextExample], paths: Sequence[str]
                                     ) -> Iterator[TextExample]:
    """``examples`` unchanged, or InputDataError when there is none and an earlier output of
    ``paths`` is not empty: an empty input would replace it with an empty file (bert_tf; the
    original wrote the empty file). Without earlier outputs an empty input writes empty files."""
    examples = iter(examples)
    first = next(examples, None)
    if first is not None:
        return itertools.chain([first], examples)
    for path in paths:
        try:
            if tf.io.gfile.exists(path) and tf.io.gfile.stat(path).length > 0:
                raise InputDataError(
                    f"--input_file holds no line: refusing to replace the earlier {path} with "
                    "an empty file (remove it first to write an empty output)")
        except tf.errors.OpError:
            continue
    return iter(())


def write_feature_lines(examples: Iterable[TextExample], featurize: Callable, run_batch: Callable,
                        layer_indexes: Sequence[int], output_file: str, batch_size: int,
                        pooling: str = "none", cls_position: str = "first",
                        check_example: Optional[Callable[[TextExample], None]] = None,
                        resume_key: Optional[Mapping[str, Any]] = None,
                        normalize: bool = False) -> Dict:
    """The feature-extraction loop shared by the BERT and XLNet paths.

    Reads examples in chunks of ``batch_size * 64``, sorts each chunk by length, runs batches
    of similar length, and writes the chunk's lines in input order; the output file (and the
    ``<output_file>.embeddings.jsonl`` of ``pooling``) appear only if everything succeeds.

    Args:
      examples: :class:`TextExample` s in input order.
      featurize: example -> features with ``.tokens`` and ``.input_ids`` (the unpadded length),
        or a :class:`LineWindows` (``doc_stride``: its windows run in the batches, and its
        ``combine`` makes the line's result of theirs).
      run_batch: list of features -> list of ``(layer_values [len(layer_indexes), n, H]``
        at each example's n real tokens, ``last_layer [S, H]`` its padded row, ``real [S]``
        bool, True at the real tokens``)`` (the family pads as it must).
      layer_indexes: the ``index`` written for each layer.
      cls_position: :func:`pool`'s (``first`` for BERT, ``last`` for XLNet), when
        ``pooling`` is not "none".
      check_example: called on each example before featurizing (e.g. warnings).
      resume_key: (a local ``output_file``) what identifies the run (:func:`resume_key`):
        the lines are appended to ``<output_file>.partial`` and checkpointed after each chunk
        (:class:`bert_tf.resumable_files.ResumableOutputs`); an interrupted run's complete
        chunks are kept, and a rerun with an equal key (and chunk size) continues after them,
        giving the bytes of an uninterrupted run (chunks, hence batches, are the same). A
        BertTfError removes the partial files; None: all or nothing (a temporary file).
      normalize: scale each sentence embedding to unit L2 norm (:func:`l2_normalize`).

    Returns:
      dict with ``output_file``, ``embeddings_file`` (or None), ``num_lines``, ``num_tokens``,
      ``seconds`` and ``tokens_per_second`` (of this process: a resumed run's earlier lines
      count in ``num_lines`` / ``num_tokens``, not in the speed).

    Raises:
      FlagError: the output folder is missing or not writable; anything ``featurize`` or
      ``run_batch`` raises (then nothing is written).
    """
    embeddings_path = output_file + ".embeddings.jsonl" if pooling != "none" else None
    paths = [output_file] + ([embeddings_path] if embeddings_path else [])
    examples = _refuse_to_empty_earlier_outputs(examples, paths)
    start = time.time()
    num_lines = num_tokens = resumed_tokens = 0
    chunk_size = batch_size * _CHUNK_BATCHES
    with contextlib.ExitStack() as stack:  # both files appear only if everything succeeds
        resumable = None
        if resume_key is not None and not is_remote(output_file):
            resumable = ResumableOutputs(paths, dict(resume_key, chunk_size=chunk_size))
            with _write_errors(output_file):  # a folder that refuses files after the check
                files = resumable.open()
            stack.push(functools.partial(_close_resumable, resumable))
            num_lines, num_tokens = resumable.done, int(resumable.extra.get("num_tokens", 0))
            examples = itertools.islice(examples, num_lines, None)
            resumed_tokens = num_tokens  # this process's speed counts its own tokens only
        else:
            files = [_open_output(stack, p) for p in paths]
        output, embeddings = files[0], (files[1] if embeddings_path else None)
        for chunk in chunks(examples, chunk_size):
            if check_example:
                for ex in chunk:
                    check_example(ex)
            features = [featurize(ex) for ex in chunk]
            windows, bounds = [], []  # every window of the chunk; each line's [start, end)
            for f in features:
                parts = f.windows if isinstance(f, LineWindows) else [f]
                bounds.append((len(windows), len(windows) + len(parts)))
                windows.extend(parts)
            window_results: List = [None] * len(windows)
            for rows in _batches_by_length(windows, batch_size):
                for r, result in zip(rows, run_batch([windows[r] for r in rows])):
                    window_results[r] = result
            results = [f.combine(window_results[a:b]) if isinstance(f, LineWindows)
                       else window_results[a] for f, (a, b) in zip(features, bounds)]
            # each line written once formatted (one line's text held at a time, issue 24);
            # a resumed run restarts at the last chunk checkpointed
            for ex, f, (values, last_layer, real) in zip(chunk, features, results):
                line = feature_json_line(ex.unique_id, f.tokens, layer_indexes, values)
                with _write_errors(output_file):
                    output.write(line)
                del line
                if embeddings:
                    embedding = pool(last_layer, real, pooling, cls_position)
                    if normalize:
                        embedding = l2_normalize(embedding)
                    with _write_errors(output_file):
                        embeddings.write(embedding_json_line(ex.unique_id, pooling, embedding))
                num_tokens += len(f.tokens)
            del results, window_results
            num_lines += len(chunk)
            with _write_errors(output_file):
                if resumable is not None:
                    resumable.checkpoint(num_lines, {"num_tokens": num_tokens})
            logging.info("extract_features: %d lines, %d tokens, %.1f tokens/s", num_lines,
                         num_tokens, (num_tokens - resumed_tokens) / max(time.time() - start, 1e-9))
        if resumable is not None:
            with _write_errors(output_file):
                resumable.finish()
    seconds = time.time() - start
    return {"output_file": display_path(output_file),
            "embeddings_file": display_path(embeddings_path) if embeddings_path else None,
            "num_lines": num_lines, "num_tokens": num_tokens, "seconds": seconds,
            "tokens_per_second": (num_tokens - resumed_tokens) / max(seconds, 1e-9)}


@contextlib.contextmanager
def _write_errors(output_file: str):
    """A failed write (a full disk) as one line naming ``output_file``: an OutputPathError,
    so the partial files are removed (:func:`_close_resumable`) and the disk freed."""
    try:
        yield
    except OSError as e:
        raise write_error(output_file, e) from e


def _close_resumable(resumable: ResumableOutputs, exc_type, exc, tb) -> bool:
    """On the way out of :func:`write_feature_lines`: nothing to do after ``finish``; after a
    BertTfError (bad input) the partial files are removed; after anything else (Ctrl-C,
    SIGTERM, a crash) they are kept for a rerun, said in one line."""
    if not resumable.files or all(f.closed for f in resumable.files):
        return False
    if isinstance(exc, BertTfError):
        resumable.discard()
        return False
    resumable.close()
    logging.warning("%s: %d complete lines kept; rerun the same command to continue after "
                    "them", resumable.partials[0], resumable.recorded)
    return False


_HASH_CHUNK = 1 << 20


def _content_digest(path: str) -> Optional[str]:
    """blake2b of a file's bytes, read in 1 MiB chunks (None when unreadable)."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            for chunk in iter(lambda: f.read(_HASH_CHUNK), b""):
                digest.update(chunk)
    except tf.errors.OpError:
        return None
    return digest.hexdigest()


def resume_key(args, paths: Mapping[str, Optional[str]]) -> Dict:
    """What a rerun of feature extraction must share with an interrupted run to continue it:
    every field of ``args`` (a dataclass of flags) and, for each of ``paths`` (name -> file or
    checkpoint prefix), its CONTENT: a file's blake2b (1 MiB chunks); a checkpoint prefix's
    ``.index`` file's blake2b (the index holds a CRC32C of every tensor) and its data files'
    sizes. A file rewritten with other text but the same size and time (``cp -p``, ``touch
    -r``) starts over; the same bytes with a new time (``touch``) still resume."""
    key = {f"--{k}": v for k, v in dataclasses.asdict(args).items()}
    for name, path in paths.items():
        if not path:
            continue
        if tf.io.gfile.exists(path):
            key[f"{name} file"] = [[path, _content_digest(path)]]
            continue
        entries = [[f, _content_digest(f)] for f in literal_glob(path, ".index")]
        for f in literal_glob(path, ".data-*"):
            try:
                entries.append([f, tf.io.gfile.stat(f).length])
            except tf.errors.OpError:
                entries.append([f, None])
        key[f"{name} file"] = entries
    return key


class LineWindows(NamedTuple):
    """One line cut into windows (``doc_stride``), for :func:`write_feature_lines`.

    Attributes:
      tokens: the line's tokens as written (special tokens included), each once.
      windows: the windows' features (each with ``.input_ids``, unpadded), run in batches.
      combine: the windows' results (in window order) -> the line's ``(layer_values
        [len(layer_indexes), len(tokens), H], last_layer [len(tokens), H], real [len(tokens)])``.
    """

    tokens: List[str]
    windows: list
    combine: Callable


def stitch_windows(results: Sequence, spans: Sequence[DocSpan], num_leading: int,
                   num_trailing: int):
    """The line's per-token values from its windows' (bert_tf, issue 13).

    Token ``p`` of the windowed text takes the values of its max-context window
    (:func:`bert_tf.data.windows.max_context_windows`, run_squad's ``_check_is_max_context``);
    the ``num_leading`` special tokens before the text take the FIRST window's, the
    ``num_trailing`` after it the LAST window's.

    Args:
      results: per window, ``(layer_values [L, n_w, H], last_layer [S, H], real [S])`` as
        :func:`write_feature_lines`' ``run_batch`` gives them, ``n_w = num_leading +
        span.length + num_trailing`` real tokens in order.
      spans: the windows over the text (``DocSpan``), in order.
      num_leading, num_trailing: BERT 1 and 1 (``[CLS] ... [SEP]``), XLNet 0 and 2
        (``... <sep> <cls>``).

    Returns:
      ``(layer_values float32 [L, n, H], last_layer [n, H], real bool [n] all True)``, ``n =
      num_leading + num_tokens + num_trailing``.
    """
    num_tokens = spans[-1].start + spans[-1].length
    owners = max_context_windows(spans, num_tokens)
    values = [results[0][0][:, :num_leading]]
    last = [np.asarray(results[0][1])[np.asarray(results[0][2], bool)][:num_leading]]
    position = 0
    while position < num_tokens:  # runs of consecutive tokens with the same window
        w = owners[position]
        end = position
        while end < num_tokens and owners[end] == w:
            end += 1
        lo = num_leading + position - spans[w].start
        values.append(results[w][0][:, lo:lo + end - position])
        last.append(np.asarray(results[w][1])[np.asarray(results[w][2], bool)][lo:lo + end - position])
        position = end
    last_values, last_seq, last_real = results[-1]
    n_last = last_values.shape[1]
    values.append(last_values[:, n_last - num_trailing:])
    last.append(np.asarray(last_seq)[np.asarray(last_real, bool)][n_last - num_trailing:])
    stitched_last = np.concatenate(last, axis=0)
    return (np.concatenate(values, axis=1), stitched_last,
            np.ones(len(stitched_last), bool))
