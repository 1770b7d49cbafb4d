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
* all outputs are written to temporary files and renamed at the end: a failed run leaves no
  partial output;
* every path (input, vocab, config, checkpoint, outputs) goes through ``tf.io.gfile``, so
  ``gs://`` works as the original's ``tf.gfile`` did (tested on ``ram://``, issue 17);
* the floats are formatted vectorized (:mod:`bert_tf.tasks.rounded_json`): the same bytes as
  the original's per-float ``round(x, 6)`` + ``json.dumps``, about 9x faster.
"""

import contextlib
import json
import math
import time
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import defaults
from bert_tf import flags as bert_flags
from bert_tf.atomic_files import atomic_text_writer, check_output_path, display_path
from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.data.sequence_pairs import BertInputs, build_bert_inputs
from bert_tf.data.text_lines import TextExample, check_input_file, chunks, read_text_examples
from bert_tf.errors import ConfigError, FlagError
from bert_tf.tasks.rounded_json import rounded_json_rows
from bert_tf.tasks.run_checks import load_config_for_length, load_tokenizer
from bert_tf.training.strategy import check_tpu_flags
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
    normalize: bool


def resolve_inputs(args: ExtractFeaturesArgs) -> ExtractFeaturesArgs:
    """Fills in the embedded default model and example input when their flags are absent.

    The three model flags (``bert_config_file``, ``vocab_file``, ``init_checkpoint``) go
    together: none given means the embedded MiniLM default
    (:func:`bert_tf.defaults.resolve_model_files`); no ``input_file`` means the example input,
    no ``output_file`` :data:`DEFAULT_OUTPUT_FILE`.

    Raises:
      FlagError: only some of the three model flags are given.
    """
    defaults.resolve_model_files(args, require_init_checkpoint=True)
    if not args.input_file:
        args.input_file = defaults.EXAMPLE_INPUT
    if not args.output_file:
        args.output_file = DEFAULT_OUTPUT_FILE
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
        with strategy.scope():
            self.model = BertModel(config, use_one_hot_embeddings=use_one_hot_embeddings)
            self.model.build_with_dummy_input()
        report = load_bert_checkpoint(bert_model_map(self.model), init_checkpoint, require_all=True)
        logging.info("%s", report.summary())
        self._predictor = BatchPredictor(self._layers, ["layers", "sequence_output"], strategy)

    def _layers(self, features, training=False):
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
      :func:`bert_tf.tasks.rounded_json.rounded_json_rows`, same text).
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


def extract_features(args: ExtractFeaturesArgs, strategy: Optional[tf.distribute.Strategy] = None) -> Dict:
    """Runs feature extraction end to end; returns a summary dict.

    Returns:
      dict with ``output_file``, ``embeddings_file`` (or None), ``num_lines``, ``num_tokens``,
      ``seconds`` and ``tokens_per_second``.

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
    check_output_path(args.output_file)
    if args.pooling != "none":
        check_output_path(args.output_file + ".embeddings.jsonl")
    check_input_file(args.input_file)
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

    summary = write_feature_lines(
        read_text_examples(args.input_file),
        lambda ex: _featurize(ex, tokenizer, args.max_seq_length), run_batch, layer_indexes,
        args.output_file, args.batch_size, args.pooling, cls_position="first",
        normalize=args.normalize)
    num_lines = summary["num_lines"]
    if num_lines == 0:
        logging.warning("%s: empty input, wrote an empty %s", args.input_file, args.output_file)
    return summary


def bucket_length(longest: int, max_seq_length: int) -> int:
    """A batch's padded length: its longest example rounded up to a multiple of 8."""
    return min(max_seq_length, int(math.ceil(longest / _LENGTH_MULTIPLE) * _LENGTH_MULTIPLE))


def write_feature_lines(examples: Iterable[TextExample], featurize: Callable, run_batch: Callable,
                        layer_indexes: Sequence[int], output_file: str, batch_size: int,
                        pooling: str = "none", cls_position: str = "first",
                        check_example: Optional[Callable[[TextExample], None]] = None,
                        normalize: bool = False) -> Dict:
    """The feature-extraction loop shared by the BERT and XLNet paths.

    Reads examples in chunks of ``batch_size * 64``, sorts each chunk by length, runs batches
    of similar length, and writes the chunk's lines in input order; the output file (and the
    ``<output_file>.embeddings.jsonl`` of ``pooling``) appear only if everything succeeds.

    Args:
      examples: :class:`TextExample` s in input order.
      featurize: example -> features with ``.tokens`` and ``.input_ids`` (the unpadded length).
      run_batch: list of features -> list of ``(layer_values [len(layer_indexes), n, H]``
        at each example's n real tokens, ``last_layer [S, H]`` its padded row, ``real [S]``
        bool, True at the real tokens``)`` (the family pads as it must).
      layer_indexes: the ``index`` written for each layer.
      cls_position: :func:`pool`'s (``first`` for BERT, ``last`` for XLNet), when
        ``pooling`` is not "none".
      check_example: called on each example before featurizing (e.g. warnings).
      normalize: scale each sentence embedding to unit L2 norm (:func:`l2_normalize`).

    Returns:
      dict with ``output_file``, ``embeddings_file`` (or None), ``num_lines``, ``num_tokens``,
      ``seconds`` and ``tokens_per_second``.

    Raises:
      FlagError: the output folder is missing or not writable; anything ``featurize`` or
      ``run_batch`` raises (then nothing is written).
    """
    embeddings_path = output_file + ".embeddings.jsonl" if pooling != "none" else None
    start = time.time()
    num_lines = num_tokens = 0
    with contextlib.ExitStack() as stack:  # both files appear only if everything succeeds
        output = _open_output(stack, output_file)
        embeddings = _open_output(stack, embeddings_path) if embeddings_path else None
        for chunk in chunks(examples, batch_size * _CHUNK_BATCHES):
            if check_example:
                for ex in chunk:
                    check_example(ex)
            features = [featurize(ex) for ex in chunk]
            results: List = [None] * len(features)
            for rows in _batches_by_length(features, batch_size):
                for r, result in zip(rows, run_batch([features[r] for r in rows])):
                    results[r] = result
            for ex, f, (values, last_layer, real) in zip(chunk, features, results):
                output.write(feature_json_line(ex.unique_id, f.tokens, layer_indexes, values))
                if embeddings:
                    embedding = pool(last_layer, real, pooling, cls_position)
                    if normalize:
                        embedding = l2_normalize(embedding)
                    embeddings.write(embedding_json_line(ex.unique_id, pooling, embedding))
                num_tokens += len(f.tokens)
            num_lines += len(chunk)
            logging.info("extract_features: %d lines, %d tokens, %.1f tokens/s", num_lines,
                         num_tokens, num_tokens / max(time.time() - start, 1e-9))
    seconds = time.time() - start
    return {"output_file": display_path(output_file),
            "embeddings_file": display_path(embeddings_path) if embeddings_path else None,
            "num_lines": num_lines, "num_tokens": num_tokens, "seconds": seconds,
            "tokens_per_second": num_tokens / max(seconds, 1e-9)}


def _featurize(example: TextExample, tokenizer: FullTokenizer, max_seq_length: int) -> BertInputs:
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None  # original: `if example.text_b`
    return build_bert_inputs(tokens_a, tokens_b, max_seq_length, tokenizer, pad=False)
