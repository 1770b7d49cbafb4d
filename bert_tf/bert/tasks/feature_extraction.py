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
* ``dtype`` (``--dtype=bfloat16``, issue 25): the encoder in bfloat16 (float32 variables;
  on the golden input values moved by at most 0.084, mean 0.0028, from the original's float32
  output);
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
* start-up (issues 16, 24): the weights are created straight from the checkpoint, no random
  draw and no second copy (:func:`bert_tf.training.restore.build_from_checkpoint`), one trace
  serves every batch length, and the finished process skips the interpreter's teardown;
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

import dataclasses
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.checkpoint_checks import check_finite_values
from bert_tf.bert.config import BertConfig, load_config_for_length
from bert_tf.bert.model import BertModel
from bert_tf.bert.tasks.args import ExtractFeaturesArgs
from bert_tf.data.sequence_pairs import BertInputs, TruncationCount, build_bert_inputs
from bert_tf.data.text_lines import TextExample, read_text_examples
from bert_tf.data.windows import check_window_flags, window_spans
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.run.extraction_result import ExtractionResult
from bert_tf.run import serving
from bert_tf.run.checks import load_tokenizer, warn_if_vocab_smaller
from bert_tf.run.feature_lines import (LineWindows, bucket_length,
                                      check_feature_files, check_pooling_flags,
                                      l2_normalize_in_graph, output_file_or_default,
                                      parse_layer_indexes, pool_in_graph, resume_key,
                                      stitch_windows, write_feature_lines)
from bert_tf.training.strategy import check_tpu_flags
from bert_tf.tokenization.in_graph_wordpiece import BertTextPreprocessor
from bert_tf.tokenization.wordpiece import FullTokenizer
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor
from bert_tf.training.restore import build_from_checkpoint


def resolve_inputs(args: ExtractFeaturesArgs) -> ExtractFeaturesArgs:
    """``args`` with :data:`bert_tf.run.feature_lines.DEFAULT_OUTPUT_FILE` for an absent
    ``output_file`` (a copy; ``args`` is not changed).

    Raises:
      FlagError: ``--output_file`` given empty (:func:`output_file_or_default`).

    The embedded MiniLM default model (none of ``bert_config_file``, ``vocab_file``,
    ``init_checkpoint``) and the example input (no ``input_file``) are filled in by the entry
    point before :func:`run` (:func:`bert_tf.defaults.resolve_model_files`,
    :data:`bert_tf.defaults.EXAMPLE_INPUT`).
    """
    return dataclasses.replace(args, output_file=output_file_or_default(args.output_file))


class FeatureExtractor:
    """A restored BERT encoder that returns chosen layers for batches of inputs.

    Args:
      config: the model config; init_checkpoint: original checkpoint prefix;
      layer_indexes: Python indexes into the L block outputs;
      strategy: a `tf.distribute.Strategy` (the default strategy on one device);
      use_one_hot_embeddings: the original's TPU lookup (same numbers);
      dtype: ``--dtype`` (bert_tf): ``bfloat16`` builds the model with Keras'
        ``mixed_bfloat16`` policy (float32 variables, bf16 matmuls; outputs cast to float32
        for the writer), :mod:`bert_tf.training.precision`;
      inference_only: with ``dtype`` bfloat16/float16, hold the matmul kernels in it (cast
        once at the restore); only for a model that is not exported.

    Raises:
      CheckpointError: unreadable checkpoint, shapes that do not fit the config, or `bert/*`
        variables missing from it.
    """

    def __init__(self, config: BertConfig, init_checkpoint: str, layer_indexes: Sequence[int],
                 strategy: tf.distribute.Strategy, use_one_hot_embeddings: bool = False,
                 dtype: str = "float32", inference_only: bool = False):
        self.config = config
        self.layer_indexes = list(layer_indexes)

        def build():
            # --dtype (bert_tf): float32 variables, but the matmul kernels in --dtype when
            # the model only extracts (inference_only: cast once at the restore)
            with dtype_policy(dtype, inference_only=inference_only):
                return BertModel(config, use_one_hot_embeddings=use_one_hot_embeddings
                                 ).build_with_dummy_input()

        # Every weight is created straight from the checkpoint (issue 24: no random initial
        # value drawn and thrown away, no second model-sized copy).
        with strategy.scope():
            self.model, report = build_from_checkpoint(
                build, lambda model: self._restore(model, init_checkpoint))
        logging.info("%s", report.summary())
        # batches come padded to many lengths (bucket_length): one trace for all of them
        self._predictor = BatchPredictor(
            self.layer_outputs, ["layers", "sequence_output"], strategy,
            input_signature={k: tf.TensorSpec([None, None], tf.int32)
                             for k in ("input_ids", "input_mask", "segment_ids")})

    @staticmethod
    def _restore(model: BertModel, init_checkpoint: str):
        name_to_variable = bert_model_map(model)
        check_all_trainables_mapped(model, name_to_variable)
        report = load_bert_checkpoint(name_to_variable, init_checkpoint, require_all=True)
        check_finite_values(name_to_variable, report.loaded, report.prefix)
        return report

    @tf.autograph.experimental.do_not_convert  # plain ops; callers trace it in tf.functions
    def layer_outputs(self, features: Dict[str, tf.Tensor], training: bool = False):
        """int32 ``input_ids``, ``input_mask``, ``segment_ids`` ``[B, S]`` -> float32
        ``layers [B, len(layer_indexes), S, H]`` and ``sequence_output [B, S, H]`` (a
        ``--dtype=bfloat16`` model's outputs cast to float32)."""
        out = self.model(features, training=training)
        layers = out["all_encoder_layers"]
        # batch-major [B, len(layer_indexes), S, H] so the predictor can split rows
        return {"layers": tf.cast(tf.stack([layers[i] for i in self.layer_indexes], axis=1),
                                  tf.float32),
                "sequence_output": tf.cast(out["sequence_output"], tf.float32)}

    def predict(self, input_ids: np.ndarray, input_mask: np.ndarray, segment_ids: np.ndarray):
        """Runs one batch.

        Args: int32 arrays ``[B, S]``.

        Returns:
          (layers float32 ``[B, len(layer_indexes), S, H]``, sequence_output ``[B, S, H]``).
        """
        out = self._predictor.predict_batch({"input_ids": input_ids, "input_mask": input_mask,
                                             "segment_ids": segment_ids})
        return out["layers"], out["sequence_output"]


def check_all_trainables_mapped(model, name_to_variable: Mapping[str, Any]) -> None:
    """Every trainable weight of ``model`` is among ``name_to_variable``'s values, so a
    ``require_all`` restore fills all of them (none is left at a random initial value).

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
    ``normalize``, scaled to unit L2 norm as :func:`bert_tf.run.feature_lines.l2_normalize`).
    ``S`` is ``--max_seq_length`` for the text signatures.

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
    check_feature_files(args.input_file, args.output_file, args.pooling)
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
    warn_if_vocab_smaller(len(tokenizer.vocab), args.vocab_file, config.vocab_size,
                          args.bert_config_file)
    if strategy is None:
        from bert_tf.training.strategy import get_strategy
        strategy = get_strategy(use_tpu=args.use_tpu, master=args.master,
                                num_tpu_cores=args.num_tpu_cores)
    extractor = FeatureExtractor(config, args.init_checkpoint, layer_indexes, strategy,
                                 args.use_one_hot_embeddings, dtype=args.dtype,
                                 inference_only=not args.export_dir)
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


def _featurize(example: TextExample, tokenizer: FullTokenizer, max_seq_length: int,
               truncation: Optional[TruncationCount] = None) -> BertInputs:
    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None  # original: `if example.text_b`
    if truncation is not None:
        truncation.add(tokens_a, tokens_b)
    return build_bert_inputs(tokens_a, tokens_b, max_seq_length, tokenizer, pad=False)
