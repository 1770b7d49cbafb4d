"""Feature extraction: per-token activations of chosen encoder layers as JSON lines.

The run behind the root `extract_features.py` (original `extract_features.py`, spec
`bert.md` 10). Output schema, one line per input line, in input order::

    {"linex_index": i, "features": [{"token": "[CLS]", "layers": [{"index": -1,
      "values": [H floats rounded to 6 decimals]}, ...]}, ...]}

Only real tokens are written (`[CLS]` and `[SEP]` included, padding excluded). Layer ``-1`` is
the last block, ``0`` the first block; the embeddings cannot be chosen.

Beyond the original:
* the model is built and restored once, and examples are batched BY LENGTH: each chunk of
  input is sorted by token count and every batch is padded only to its own longest example
  (masked keys get weight exp(-10000) = 0, so real-token values do not depend on padding);
* ``pooling`` in ``cls|mean|max`` also writes one sentence embedding per line (SBERT-style
  pooling of the last layer over real tokens) to ``<output_file>.embeddings.jsonl``;
  ``normalize`` scales each to unit L2 norm (sentence-transformers' ``Normalize``), so
  ``--pooling=mean --normalize`` gives ``SentenceTransformer(...).encode(...)`` of an SBERT
  model such as all-MiniLM-L6-v2 (converted with ``--hidden_act=source``: its exact GELU);
* ``--export_dir``: a raw-text SavedModel (strings in; the ``--layers`` values, the real-token
  mask and the ``--pooling`` embedding out), :func:`export_saved_model`;
* all outputs are written to temporary files and renamed at the end: a failed run leaves no
  partial output;
* every path (input, vocab, config, checkpoint, outputs) goes through ``tf.io.gfile``, so
  ``gs://`` works as the original's ``tf.gfile`` did (tested on ``ram://``, issue 17);
* the floats are formatted vectorized (:mod:`bert_tf.run.rounded_json`): the same bytes as
  the original's per-float ``round(x, 6)`` + ``json.dumps``, many times faster
  (``bench/bench_extract_features.py --writer_only``);
* start-up (issue 16): the weights start as zeros, not random draws (the restore overwrites
  every one), one trace serves every batch length, and the finished process skips the
  interpreter's teardown;
* ``doc_stride`` (issue 13): a line longer than ``max_seq_length`` is cut into windows as
  run_squad cuts a paragraph (:mod:`bert_tf.data.windows`) instead of being truncated; every
  token of the line is written once, in order, with the values of the window where it has the
  most context (run_squad's ``token_is_max_context``); ``[CLS]`` is the first window's and
  ``[SEP]`` the last window's (each special token from the window it ends or starts); the
  ``--pooling`` embedding pools these stitched last-layer rows. One text per line: a pair
  (``a ||| b``) that needs more than one window is refused (which side's tokens would be
  "the line's" is not defined); a line that fits in one window is written exactly as without
  ``doc_stride``, an empty line too (the original's ``[CLS] [SEP]``).
"""

import contextlib
import dataclasses
import functools
import itertools
import json
import math
import time
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping, NamedTuple, Optional,
                    Sequence)

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.atomic_files import atomic_text_writer, check_output_path, display_path, is_remote
from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.data.sequence_pairs import BertInputs, TruncationCount, build_bert_inputs
from bert_tf.data.text_lines import TextExample, check_input_file, chunks, read_text_examples
from bert_tf.data.windows import DocSpan, check_window_flags, max_context_windows, window_spans
from bert_tf.errors import BertTfError, ConfigError, FlagError, InputDataError
from bert_tf.resumable_files import ResumableOutputs
from bert_tf.run.extraction_result import ExtractionResult
from bert_tf.run.rounded_json import rounded_json_rows
from bert_tf.run import serving
from bert_tf.run.checks import load_config_for_length, load_tokenizer
from bert_tf.training.strategy import check_tpu_flags
from bert_tf.tokenization.in_graph_wordpiece import BertTextPreprocessor
from bert_tf.tokenization.wordpiece import FullTokenizer
from bert_tf.training.predict import BatchPredictor

POOLINGS = ("none", "cls", "mean", "max")
DEFAULT_OUTPUT_FILE = "extract_features_output.jsonl"
_CHUNK_BATCHES = 64  # batches sorted by length together; bounds memory to this many batches
_LENGTH_MULTIPLE = 8  # batch lengths are rounded up to this, to limit retracing


@bert_flags.args_class(bert_flags.EXTRACT_FEATURES)
class ExtractFeaturesArgs:
    """The original script's flags (spec 10) plus ``pooling``; the defaults are
    :data:`bert_tf.flags.EXTRACT_FEATURES`'s (the original's). None means "not given"."""

    input_file: Optional[str]
    output_file: Optional[str]
    layers: str
    bert_config_file: Optional[str]
    max_seq_length: int
    init_checkpoint: Optional[str]
    vocab_file: Optional[str]
    do_lower_case: bool
    batch_size: int
    use_tpu: bool
    master: Optional[str]
    num_tpu_cores: int
    use_one_hot_embeddings: bool
    pooling: str
    doc_stride: Optional[int]
    export_dir: Optional[str]
    normalize: bool


def resolve_inputs(args: ExtractFeaturesArgs) -> ExtractFeaturesArgs:
    """``args`` with :data:`DEFAULT_OUTPUT_FILE` for an absent ``output_file`` (a copy; ``args``
    is not changed).

    The embedded MiniLM default model (none of ``bert_config_file``, ``vocab_file``,
    ``init_checkpoint``) and the example input (no ``input_file``) are filled in by the entry
    point before :func:`run` (:func:`bert_tf.defaults.resolve_model_files`,
    :data:`bert_tf.defaults.EXAMPLE_INPUT`).
    """
    if not args.output_file:
        return dataclasses.replace(args, output_file=DEFAULT_OUTPUT_FILE)
    return args


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


class FeatureExtractor:
    """A restored BERT encoder that returns chosen layers for batches of inputs.

    Args:
      config: the model config; init_checkpoint: original checkpoint prefix;
      layer_indexes: Python indexes into the L block outputs;
      strategy: a `tf.distribute.Strategy` (the default strategy on one device);
      use_one_hot_embeddings: the original's TPU lookup (same numbers).

    Raises:
      CheckpointError: unreadable checkpoint, shapes that do not fit the config, or `bert/*`
        variables missing from it.
    """

    def __init__(self, config: BertConfig, init_checkpoint: str, layer_indexes: Sequence[int],
                 strategy: tf.distribute.Strategy, use_one_hot_embeddings: bool = False):
        self.config = config
        self.layer_indexes = list(layer_indexes)
        # Every weight is assigned from the checkpoint next (require_all), so none needs its
        # random initial value: drawing them (truncated normal, 22.7M values for MiniLM) was
        # ~0.5 s CPU of a 1-line run; the values written do not change (issue 16).
        with strategy.scope(), zero_initialized_trainables():
            self.model = BertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
            self.model.build_with_dummy_input()
        name_to_variable = bert_model_map(self.model)
        check_all_trainables_mapped(self.model, name_to_variable)
        report = load_bert_checkpoint(name_to_variable, init_checkpoint, require_all=True)
        logging.info("%s", report.summary())
        # batches come padded to many lengths (bucket_length): one trace for all of them
        self._predictor = BatchPredictor(
            self.layer_outputs, ["layers", "sequence_output"], strategy,
            input_signature={k: tf.TensorSpec([None, None], tf.int32)
                             for k in ("input_ids", "input_mask", "segment_ids")})

    @tf.autograph.experimental.do_not_convert  # plain ops; callers trace it in tf.functions
    def layer_outputs(self, features: Dict[str, tf.Tensor], training: bool = False):
        """int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[B, S]`` -> float32
        ``layers [B, len(layer_indexes), S, H]`` and ``sequence_output [B, S, H]``."""
        out = self.model(features, training=training)
        layers = out["all_encoder_layers"]
        # batch-major [B, len(layer_indexes), S, H] so the predictor can split rows
        return {"layers": tf.stack([layers[i] for i in self.layer_indexes], axis=1),
                "sequence_output": out["sequence_output"]}

    def predict(self, input_ids: np.ndarray, input_mask: np.ndarray, segment_ids: np.ndarray):
        """Runs one batch.

        Args: int32 arrays ``[B, S]``.

        Returns:
          (layers float32 ``[B, len(layer_indexes), S, H]``, sequence_output ``[B, S, H]``).
        """
        out = self._predictor.predict_batch({"input_ids": input_ids, "input_mask": input_mask,
                                             "segment_ids": segment_ids})
        return out["layers"], out["sequence_output"]


@contextlib.contextmanager
def zero_initialized_trainables():
    """Trainable variables created inside with an initializer (a callable initial value, as
    Keras creates them) start as zeros instead of its values; values given as tensors are kept.

    For a model whose every trainable weight is assigned from a checkpoint right after it is
    built (:func:`check_all_trainables_mapped`, then ``require_all``): the initializer is only
    traced in a scratch graph, for the shape and dtype; no random numbers are drawn.
    Non-trainable variables (Keras seed-generator states) keep their own initial values.
    bert_tf (issue 16: start-up); the original restored over random initial values too.
    """

    def creator(next_creator, **kwargs):
        initial_value = kwargs.get("initial_value")
        if callable(initial_value) and kwargs.get("trainable") is not False:
            with tf.Graph().as_default():  # builds the initializer's ops, runs none of them
                spec = tf.convert_to_tensor(initial_value())
            if spec.shape.is_fully_defined():
                shape, dtype = spec.shape, spec.dtype
                kwargs["initial_value"] = lambda: tf.zeros(shape, dtype)
        return next_creator(**kwargs)

    with tf.variable_creator_scope(creator):
        yield


def check_all_trainables_mapped(model, name_to_variable: Mapping[str, Any]) -> None:
    """Every trainable weight of ``model`` is among ``name_to_variable``'s values, so a
    ``require_all`` restore overwrites all of them (:func:`zero_initialized_trainables`).

    Raises:
      RuntimeError: a weight the checkpoint map misses (names it): a bug of the map.
    """
    mapped = {id(v) for v in name_to_variable.values()}
    missing = [v.path if hasattr(v, "path") else v.name for v in model.trainable_weights
               if id(v) not in mapped]
    if missing:
        raise RuntimeError(f"the checkpoint map of {model.name} misses the weights {missing}")


def _is_tpu(strategy) -> bool:
    return isinstance(strategy, tf.distribute.TPUStrategy)


def _batches_by_length(features: List[BertInputs], batch_size: int) -> Iterator[List[int]]:
    order = sorted(range(len(features)), key=lambda i: len(features[i].input_ids))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def _pad_batch(features: List[BertInputs], length: int):
    batch = len(features)
    ids = np.zeros((batch, length), np.int32)
    mask = np.zeros((batch, length), np.int32)
    segs = np.zeros((batch, length), np.int32)
    for row, f in enumerate(features):
        n = len(f.input_ids)
        ids[row, :n] = f.input_ids
        mask[row, :n] = f.input_mask
        segs[row, :n] = f.segment_ids
    return ids, mask, segs


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
    values = np.asarray(layer_values)
    rows = rounded_json_rows(values.reshape(num_layers * num_tokens, -1)) if num_tokens else []
    indexes = [json.dumps(int(index)) for index in layer_indexes]
    features = []
    for i, token in enumerate(tokens):
        layers = ", ".join('{"index": %s, "values": [%s]}' % (indexes[j], rows[j * num_tokens + i])
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


def export_saved_model(extractor: "FeatureExtractor", preprocessor, pooling: str,
                       export_dir: str, normalize: bool = False) -> str:
    """Writes ``--export_dir``'s raw-text SavedModel of the feature extractor (bert_tf).

    Signatures (:mod:`bert_tf.run.serving`): ``serving_default`` (tf.string ``text_a``,
    ``text_b`` ``[B]``, as an input line ``a ||| b``), ``serving_single`` (``text_a``, a line
    without ``|||``), ``serving_ids`` (int32 ``input_ids``, ``input_mask``, ``segment_ids``
    ``[B, S]``). Outputs: float32 ``layers [B, len(--layers), S, H]`` (the ``--layers``
    blocks in their order, padding rows included), int32 ``input_mask [B, S]`` (1 at the
    real tokens, the rows the JSON lines hold) and, with ``--pooling`` other than ``none``,
    float32 ``embedding [B, H]`` (the ``.embeddings.jsonl`` values, unrounded; with
    ``normalize``, scaled to unit L2 norm as :func:`l2_normalize`). ``S`` is
    ``--max_seq_length`` for the text signatures.

    Returns:
      The version folder written.

    Raises:
      FlagError: ``export_dir`` cannot be created or written.
    """
    dtypes = {"input_ids": tf.int32, "input_mask": tf.int32, "segment_ids": tf.int32}

    def serve(features):
        out = extractor.layer_outputs(features)
        result = {"layers": out["layers"], "input_mask": features["input_mask"]}
        if pooling != "none":
            embedding = pool_in_graph(out["sequence_output"], features["input_mask"], pooling,
                                      cls_position="first")
            result["embedding"] = l2_normalize_in_graph(embedding) if normalize else embedding
        return result

    return serving.write_saved_model(export_dir, [extractor.model, preprocessor],
                                     serving.text_endpoints(preprocessor, serve, dtypes))


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


def l2_normalize_in_graph(embedding: tf.Tensor) -> tf.Tensor:
    """:func:`l2_normalize` for a batch in the graph (the exported SavedModels): float32
    ``[B, H]`` -> float32 ``[B, H]``, each row ``x / max(||x||_2, 1e-12)`` in float64."""
    x = tf.cast(embedding, tf.float64)
    return tf.cast(x / tf.maximum(tf.norm(x, axis=-1, keepdims=True), 1e-12), tf.float32)


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


def _open_output(stack: contextlib.ExitStack, path: str):
    """An atomic text writer for ``path`` (renamed when ``stack`` closes without error)."""
    return stack.enter_context(atomic_text_writer(path))


def run(args: ExtractFeaturesArgs,
        strategy: Optional[tf.distribute.Strategy] = None) -> ExtractionResult:
    """Runs feature extraction end to end (``extract_features.py``).

    Args:
      args: the flags, the model files and ``input_file`` given or resolved by the entry
        point (:func:`bert_tf.defaults.resolve_model_files` with ``require_init_checkpoint``,
        :data:`bert_tf.defaults.EXAMPLE_INPUT`).
      strategy: where the model runs (default: from ``use_tpu``, ``master``,
        ``num_tpu_cores``).

    Returns:
      An :class:`bert_tf.run.extraction_result.ExtractionResult`.

    Raises:
      BertTfError subclasses for bad flags and files (ConfigError, CheckpointError, FlagError,
      InputDataError); nothing is written then.
    """
    check_pooling_flags(args.pooling, args.normalize)
    args = resolve_inputs(args)
    if args.batch_size <= 0:
        raise FlagError(f"--batch_size={args.batch_size}: must be positive")
    config = load_config_for_length(args.bert_config_file, args.max_seq_length)
    if args.max_seq_length < 3:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 3 "
                        "([CLS] A [SEP] B [SEP] needs room for one token)")
    check_window_flags(args.doc_stride, None, args.max_seq_length, num_special=2)
    check_output_path(args.output_file)
    if args.pooling != "none":
        check_output_path(args.output_file + ".embeddings.jsonl")
    check_input_file(args.input_file)
    if args.export_dir:
        serving.check_export_dir(args.export_dir, doc_stride=args.doc_stride,
                                 max_seq_length=args.max_seq_length)
    check_tpu_flags(args)
    layer_indexes = parse_layer_indexes(args.layers, config.num_hidden_layers)
    # The checkpoint-name case check of run_classifier / run_squad (spec 4.6); the original
    # extract_features.py had none, so cased_L-12... with --do_lower_case=True gave features
    # of lower-cased text silently (issue 15).
    tokenizer = load_tokenizer(args.vocab_file, args.do_lower_case, args.init_checkpoint)
    if len(tokenizer.vocab) > config.vocab_size:
        raise ConfigError(f"{args.vocab_file} has {len(tokenizer.vocab)} tokens but "
                          f"{args.bert_config_file} says vocab_size={config.vocab_size}")
    if strategy is None:
        from bert_tf.training.strategy import get_strategy
        strategy = get_strategy(use_tpu=args.use_tpu, master=args.master,
                                num_tpu_cores=args.num_tpu_cores)
    extractor = FeatureExtractor(config, args.init_checkpoint, layer_indexes, strategy,
                                 args.use_one_hot_embeddings)
    fixed_length = _is_tpu(strategy)

    def run_batch(batch: List[BertInputs]):
        longest = max(len(f.input_ids) for f in batch)
        length = args.max_seq_length if fixed_length else bucket_length(longest, args.max_seq_length)
        ids, mask, segs = _pad_batch(batch, length)
        layers, seq = extractor.predict(ids, mask, segs)
        return [(layers[k, :, :len(f.input_ids)], seq[k], mask[k] == 1)
                for k, f in enumerate(batch)]

    # bert_tf: one line counts the lines cut to --max_seq_length (the original cut silently,
    # as run_classifier's records; issue 15 item 10)
    truncation = TruncationCount(args.max_seq_length)

    def featurize(ex: TextExample):
        if args.doc_stride is None:
            return _featurize(ex, tokenizer, args.max_seq_length, truncation)
        return _featurize_windows(ex, tokenizer, args.max_seq_length, args.doc_stride,
                                  args.input_file)

    summary = ExtractionResult(**write_feature_lines(
        read_text_examples(args.input_file), featurize, run_batch, layer_indexes,
        args.output_file, args.batch_size, args.pooling, cls_position="first",
        normalize=args.normalize,
        resume_key=resume_key(args, {"--input_file": args.input_file,
                                     "--vocab_file": args.vocab_file,
                                     "--bert_config_file": args.bert_config_file,
                                     "--init_checkpoint": args.init_checkpoint})))
    if truncation.summary():
        logging.warning("%s: %s", args.input_file, truncation.summary("lines"))
    if summary.num_lines == 0:
        logging.warning("%s: empty input, wrote an empty %s", args.input_file, args.output_file)
    if args.export_dir:
        preprocessor = BertTextPreprocessor(args.vocab_file, args.do_lower_case,
                                            args.max_seq_length)
        summary.export_path = export_saved_model(extractor, preprocessor, args.pooling,
                                                 args.export_dir, args.normalize)
    return summary


def bucket_length(longest: int, max_seq_length: int) -> int:
    """A batch's padded length: its longest example rounded up to a multiple of 8."""
    return min(max_seq_length, int(math.ceil(longest / _LENGTH_MULTIPLE) * _LENGTH_MULTIPLE))


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
      ``seconds`` and ``tokens_per_second``.

    Raises:
      FlagError: the output folder is missing or not writable; anything ``featurize`` or
      ``run_batch`` raises (then nothing is written).
    """
    embeddings_path = output_file + ".embeddings.jsonl" if pooling != "none" else None
    paths = [output_file] + ([embeddings_path] if embeddings_path else [])
    start = time.time()
    num_lines = num_tokens = 0
    chunk_size = batch_size * _CHUNK_BATCHES
    with contextlib.ExitStack() as stack:  # both files appear only if everything succeeds
        resumable = None
        if resume_key is not None and not is_remote(output_file):
            resumable = ResumableOutputs(paths, dict(resume_key, chunk_size=chunk_size))
            files = resumable.open()
            stack.push(functools.partial(_close_resumable, resumable))
            num_lines, num_tokens = resumable.done, int(resumable.extra.get("num_tokens", 0))
            examples = itertools.islice(examples, num_lines, None)
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
            for ex, f, (values, last_layer, real) in zip(chunk, features, results):
                output.write(feature_json_line(ex.unique_id, f.tokens, layer_indexes, values))
                if embeddings:
                    embedding = pool(last_layer, real, pooling, cls_position)
                    if normalize:
                        embedding = l2_normalize(embedding)
                    embeddings.write(embedding_json_line(ex.unique_id, pooling, embedding))
                num_tokens += len(f.tokens)
            num_lines += len(chunk)
            if resumable is not None:
                resumable.checkpoint(num_lines, {"num_tokens": num_tokens})
            logging.info("extract_features: %d lines, %d tokens, %.1f tokens/s", num_lines,
                         num_tokens, num_tokens / max(time.time() - start, 1e-9))
        if resumable is not None:
            resumable.finish()
    seconds = time.time() - start
    return {"output_file": display_path(output_file),
            "embeddings_file": display_path(embeddings_path) if embeddings_path else None,
            "num_lines": num_lines, "num_tokens": num_tokens, "seconds": seconds,
            "tokens_per_second": num_tokens / max(seconds, 1e-9)}


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


def _featurize_windows(example: TextExample, tokenizer: FullTokenizer, max_seq_length: int,
                       doc_stride: int, input_file: str):
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
    if tokens_b:
        length = len(tokens_a) + len(tokens_b) + 3
        if length > max_seq_length:
            raise InputDataError(
                f"{input_file}:{example.unique_id + 1}: a pair ('a ||| b') of {length} tokens "
                f"with [CLS]/[SEP], longer than --max_seq_length={max_seq_length}: --doc_stride "
                "windows one text per line (put text_a and text_b on lines of their own)")
        return build_bert_inputs(tokens_a, tokens_b, max_seq_length, tokenizer, pad=False)
    spans = window_spans(len(tokens_a), max_seq_length - 2, doc_stride)
    windows = [build_bert_inputs(tokens_a[s.start:s.start + s.length], None, max_seq_length,
                                 tokenizer, pad=False) for s in spans]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    return LineWindows(tokens, windows, lambda results: stitch_windows(results, spans, 1, 1))


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


def resume_key(args, paths: Mapping[str, Optional[str]]) -> Dict:
    """What a rerun of feature extraction must share with an interrupted run to continue it:
    every field of ``args`` (a dataclass of flags) and, for each of ``paths`` (name -> file or
    checkpoint prefix), its size and modification time (``tf.io.gfile.stat``; a checkpoint
    prefix: its ``.index`` file and data files)."""
    key = {f"--{k}": v for k, v in dataclasses.asdict(args).items()}
    for name, path in paths.items():
        if not path:
            continue
        files = [path]
        if not tf.io.gfile.exists(path):
            files = sorted(tf.io.gfile.glob(path + ".index") + tf.io.gfile.glob(path + ".data-*"))
        stats = []
        for f in files:
            try:
                st = tf.io.gfile.stat(f)
                stats.append([f, st.length, st.mtime_nsec])
            except tf.errors.OpError:
                stats.append([f, None, None])
        key[f"{name} file"] = stats
    return key


def _featurize(example: TextExample, tokenizer: FullTokenizer, max_seq_length: int,
               truncation: Optional[TruncationCount] = None) -> BertInputs:
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None  # original: `if example.text_b`
    if truncation is not None:
        truncation.add(tokens_a, tokens_b)
    return build_bert_inputs(tokens_a, tokens_b, max_seq_length, tokenizer, pad=False)
