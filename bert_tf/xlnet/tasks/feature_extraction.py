"""XLNet feature extraction: per-token activations of chosen layers as JSON lines.

The XLNet path of the root ``extract_features.py`` (the original XLNet release has no such
script): it runs when ``--model_config_path`` or ``--spiece_model_file`` is given::

    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --model_config_path=$LARGE/xlnet_config.json --spiece_model_file=$LARGE/spiece.model \
      --init_checkpoint=$LARGE/xlnet_model.ckpt --layers=-1,-2 --max_seq_length=128

Same output schema as BERT's (:func:`bert_tf.run.feature_lines.feature_json_line`),
one line per input line, in input order::

    {"linex_index": i, "features": [{"token": "▁The", "layers": [{"index": -1,
      "values": [D floats rounded to 6 decimals]}, ...]}, ...]}

Tokens are the SentencePiece pieces of the text (``encode_pieces`` after ``preprocess_text``
with ``--uncased``) as written in the text, then ``<sep>``, ``<cls>``: each line is laid out as
the XLNet classifier input ``A <sep> [B <sep>] <cls>`` (``text_a ||| text_b`` splits a pair;
spec 5.4), truncated the same way. Layer ``-1`` is the last of the n_layer Transformer layers,
``0`` the first; the embeddings cannot be chosen (as BERT's script). The run config is the
fine-tuning one without dropout and memory (``--clamp_len`` applies).

Inputs are batched by length and padded on the LEFT to the batch's longest line (id 0, mask
1, segment 4); padded keys are masked and distances are relative, so the values of the real
tokens do not depend on the padding. ``--pooling=cls`` takes the ``<cls>`` token (the last
one: XLNet's summary ``last``), ``mean`` / ``max`` pool every real token; ``--normalize``
scales each to unit L2 norm. Special symbols
written literally in the input (``<cls>``, ``<eop>``...) are reported with their line and
kept: the token list shows the pieces they became. Outputs are written atomically.

``--doc_stride`` (bert_tf, issue 13): a line longer than ``max_seq_length`` is cut into
run_squad's windows, each laid out ``A_window <sep> <cls>``; every piece is written once with
the values of its max-context window, ``<sep>`` and ``<cls>`` those of the LAST window (where
the text ends: :func:`bert_tf.run.feature_lines.stitch_windows`). One text per line, as
BERT's.
"""

import dataclasses
from typing import List, NamedTuple, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data.sequence_pairs import TruncationCount, truncate_seq_pair
from bert_tf.data.text_lines import read_text_examples
from bert_tf.xlnet.data.classifier import (SEG_ID_A, SEG_ID_B, SEG_ID_CLS, SEG_ID_PAD,
                                           LiteralSymbolReport)
from bert_tf.data.windows import check_window_flags, window_spans
from bert_tf.checkpoint_checks import check_finite_values
from bert_tf.errors import FlagError, InputDataError
from bert_tf.run.feature_lines import (LineWindows, bucket_length,
                                      check_feature_files, check_pooling_flags,
                                      l2_normalize_in_graph, output_file_or_default,
                                      parse_layer_indexes, pool_in_graph, resume_key,
                                      stitch_windows, write_feature_lines)
from bert_tf.run.extraction_result import ExtractionResult
from bert_tf.tokenization.sentencepiece_prepro import (CLS_ID, SEP_ID, encode_pieces,
                                                       load_sp_model, preprocess_text)
from bert_tf.training.precision import dtype_policy
from bert_tf.training.predict import BatchPredictor
from bert_tf.training.restore import build_from_checkpoint
from bert_tf.training.strategy import check_tpu_flags
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import RunConfig, XLNetConfig, check_spiece_matches_config
from bert_tf.xlnet.model import XLNetModel
from bert_tf.xlnet.tasks.args import XLNetExtractFeaturesArgs


class XLNetInputs(NamedTuple):
    """One line's unpadded model inputs: ``tokens`` (pieces, ``<sep>``, ``<cls>``) and the
    int lists ``input_ids``, ``segment_ids`` of the same length."""

    tokens: List[str]
    input_ids: List[int]
    segment_ids: List[int]


def build_xlnet_inputs(sp_model, text_a: str, text_b: Optional[str], max_seq_length: int,
                       uncased: bool = False,
                       truncation: Optional[TruncationCount] = None) -> XLNetInputs:
    """``A <sep> [B <sep>] <cls>`` pieces, ids and segments (0, 1, 2) of one line, unpadded.

    Same truncation as the classifier (spec 5.4): a pair to ``max_seq_length - 3`` pieces
    (popping from the longer side), a single text to its first ``max_seq_length - 2``;
    ``truncation`` counts the lines cut.
    """
    pieces_a, pieces_b = encode_line(sp_model, text_a, text_b, uncased)
    if truncation is not None:
        truncation.add(pieces_a, pieces_b)
    if pieces_b:
        truncate_seq_pair(pieces_a, pieces_b, max_seq_length - 3)
    elif len(pieces_a) > max_seq_length - 2:
        pieces_a = pieces_a[:max_seq_length - 2]
    return xlnet_inputs_from_pieces(sp_model, pieces_a, pieces_b)


def encode_line(sp_model, text_a: str, text_b: Optional[str], uncased: bool = False):
    """``(pieces_a, pieces_b or None)``: ``encode_pieces`` after ``preprocess_text``."""
    pieces_a = encode_pieces(sp_model, preprocess_text(text_a, lower=uncased))
    pieces_b = encode_pieces(sp_model, preprocess_text(text_b, lower=uncased)) if text_b else None
    return pieces_a, pieces_b


def xlnet_inputs_from_pieces(sp_model, pieces_a: List[str], pieces_b: Optional[List[str]]
                             ) -> XLNetInputs:
    """The ``A <sep> [B <sep>] <cls>`` layout of pieces that fit (no truncation here)."""
    ids_a = [sp_model.PieceToId(p) for p in pieces_a]
    tokens = list(pieces_a) + ["<sep>"]
    input_ids = ids_a + [SEP_ID]
    segment_ids = [SEG_ID_A] * len(tokens)
    if pieces_b:
        tokens += list(pieces_b) + ["<sep>"]
        input_ids += [sp_model.PieceToId(p) for p in pieces_b] + [SEP_ID]
        segment_ids += [SEG_ID_B] * (len(pieces_b) + 1)
    tokens.append("<cls>")
    input_ids.append(CLS_ID)
    segment_ids.append(SEG_ID_CLS)
    return XLNetInputs(tokens, input_ids, segment_ids)


def featurize_windows(sp_model, example, max_seq_length: int, doc_stride: int, uncased: bool,
                      input_file: str):
    """One line as ``--doc_stride`` windows (bert_tf, issue 13): ``A_window <sep> <cls>``
    each; the line's tokens are its pieces then ``<sep> <cls>`` (those two from the LAST
    window, :func:`bert_tf.run.feature_lines.stitch_windows`). A pair that fits is
    laid out as without windows.

    Raises:
      InputDataError: a pair longer than ``max_seq_length`` (names the file and line).
    """
    pieces_a, pieces_b = encode_line(sp_model, example.text_a, example.text_b, uncased)
    if pieces_b:
        length = len(pieces_a) + len(pieces_b) + 3
        if length > max_seq_length:
            raise InputDataError(
                f"{input_file}:{example.unique_id + 1}: a pair ('a ||| b') of {length} pieces "
                f"with <sep>/<cls>, longer than --max_seq_length={max_seq_length}: --doc_stride "
                "windows one text per line (put text_a and text_b on lines of their own)")
        return xlnet_inputs_from_pieces(sp_model, pieces_a, pieces_b)
    spans = window_spans(len(pieces_a), max_seq_length - 2, doc_stride)
    windows = [xlnet_inputs_from_pieces(sp_model, pieces_a[s.start:s.start + s.length], None)
               for s in spans]
    return LineWindows(list(pieces_a) + ["<sep>", "<cls>"], windows,
                       lambda results: stitch_windows(results, spans, 0, 2))


def pad_left(features: List[XLNetInputs], length: int) -> Tuple[np.ndarray, np.ndarray,
                                                                np.ndarray]:
    """Left-pads a batch to ``length``: ids 0, segments 4, ``input_mask`` 1 (padding).

    Returns:
      ``(input_ids int32 [B, length], segment_ids int32 [B, length], input_mask float32
      [B, length])``.
    """
    batch = len(features)
    ids = np.zeros((batch, length), np.int32)
    segs = np.full((batch, length), SEG_ID_PAD, np.int32)
    mask = np.ones((batch, length), np.float32)
    for row, f in enumerate(features):
        n = len(f.input_ids)
        ids[row, length - n:] = f.input_ids
        segs[row, length - n:] = f.segment_ids
        mask[row, length - n:] = 0.0
    return ids, segs, mask


class XLNetFeatureExtractor:
    """A restored :class:`XLNetModel` returning chosen layers for batches.

    Args:
      config: the model config; init_checkpoint: original checkpoint prefix;
      layer_indexes: Python indexes into the n_layer layer outputs; clamp_len: run setting;
      use_bfloat16: ``--use_bfloat16`` (bert_tf: the original XLNet had no feature
        extraction): the model built under Keras' ``mixed_bfloat16`` policy as XLNet's
        fine-tuning runs it (float32 residual streams and variables, bfloat16 matmuls), the
        outputs cast to float32 for the writer.
      inference_only: with ``use_bfloat16``, hold the matmul kernels in bfloat16, cast once at
        the restore (not for ``--export_dir``, whose SavedModel keeps float32 variables).

    Raises:
      CheckpointError: a BERT checkpoint, the other untie_r setting, shapes that do not fit,
        or `model/transformer/*` variables missing.
    """

    def __init__(self, config: XLNetConfig, init_checkpoint: str, layer_indexes: List[int],
                 clamp_len: int = -1, use_bfloat16: bool = False, inference_only: bool = False):
        self.layer_indexes = list(layer_indexes)

        def build():
            with dtype_policy("bfloat16" if use_bfloat16 else "float32",
                              inference_only=inference_only):
                # every weight exists after the constructor: no dummy batch
                return XLNetModel(config, RunConfig(is_training=False, clamp_len=clamp_len))

        # every weight created straight from the checkpoint (issue 24)
        self.model, report = build_from_checkpoint(
            build, lambda model: self._restore(model, init_checkpoint, config.untie_r))
        logging.info("%s", report.summary())
        # left-padded inputs: run as they are (no trimming)
        self._predictor = BatchPredictor(self._layers, ["layers", "sequence_output"])

    @staticmethod
    def _restore(model: XLNetModel, init_checkpoint: str, untie_r: bool):
        name_map = checkpoint_map.xlnet_variable_map(model)
        report = checkpoint_map.load_xlnet_checkpoint(name_map, init_checkpoint,
                                                      require_all=True, untie_r=untie_r)
        check_finite_values(name_map, report.loaded, report.prefix)
        return report

    @tf.autograph.experimental.do_not_convert  # plain ops; traced in a tf.function
    def _layers(self, features, training=False):
        out = self.model(features, training=training)
        layers = out["all_layer_outputs"][1:]
        # batch-major [B, len(layer_indexes), S, D] so the predictor can split rows; float32
        # for the writer (a no-op unless --use_bfloat16 left a layer in bfloat16)
        return {"layers": tf.cast(tf.stack([layers[i] for i in self.layer_indexes], axis=1),
                                  tf.float32),
                "sequence_output": tf.cast(out["sequence_output"], tf.float32)}

    def predict(self, input_ids: np.ndarray, segment_ids: np.ndarray, input_mask: np.ndarray):
        """One batch through :class:`bert_tf.training.predict.BatchPredictor`.

        Args: ``input_ids``, ``segment_ids`` int32 ``[B, S]``, ``input_mask`` float32
        ``[B, S]`` (1 = padding, left).

        Returns:
          (layers float32 ``[B, len(layer_indexes), S, D]``, sequence_output ``[B, S, D]``).
        """
        out = self._predictor.predict_batch({"input_ids": input_ids, "segment_ids": segment_ids,
                                             "input_mask": input_mask})
        return out["layers"], out["sequence_output"]


def check_args(args: XLNetExtractFeaturesArgs) -> None:
    """The start-up checks (before anything is read or written): the TPU flags, the three
    model flags, the pooling flags, positive sizes, no TPU, the window flags.

    Raises:
      FlagError: naming the flag.
    """
    check_tpu_flags(args)
    for name in ("model_config_path", "spiece_model_file", "init_checkpoint"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required for XLNet feature extraction "
                            "(--model_config_path, --spiece_model_file, --init_checkpoint)")
    check_pooling_flags(args.pooling, args.normalize)
    if args.batch_size <= 0:
        raise FlagError(f"--batch_size={args.batch_size}: must be positive")
    if args.max_seq_length < 3:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 3 "
                        "(<sep> <sep> <cls>)")
    if args.use_tpu:
        raise FlagError("--use_tpu: XLNet feature extraction runs on one CPU/GPU device")
    check_window_flags(args.doc_stride, None, args.max_seq_length, num_special=2)


def run(args: XLNetExtractFeaturesArgs) -> ExtractionResult:
    """Runs XLNet feature extraction end to end.

    Args:
      args: the flags; ``input_file`` given or resolved by the entry point
        (:data:`bert_tf.defaults.EXAMPLE_INPUT`); no ``output_file`` means
        :data:`bert_tf.run.feature_lines.DEFAULT_OUTPUT_FILE`.

    Returns:
      An :class:`bert_tf.run.extraction_result.ExtractionResult` (``literal_symbol_lines``
      set).

    Raises:
      FlagError, ConfigError, CheckpointError, InputDataError (naming the flag, file or
      variable); nothing is written then.
    """
    check_args(args)
    if args.export_dir:
        from bert_tf.run import serving
        serving.check_export_dir(args.export_dir)
    if not args.input_file:
        raise FlagError("--input_file is required (extract_features.py fills in the example "
                        "input)")
    args = dataclasses.replace(args, output_file=output_file_or_default(args.output_file))
    check_feature_files(args.input_file, args.output_file, args.pooling)
    config = XLNetConfig.from_json_file(args.model_config_path)
    sp = load_sp_model(args.spiece_model_file)
    check_spiece_matches_config(sp, config, args.spiece_model_file, args.model_config_path)
    layer_indexes = parse_layer_indexes(args.layers, config.n_layer)
    extractor = XLNetFeatureExtractor(config, args.init_checkpoint, layer_indexes,
                                      args.clamp_len, use_bfloat16=args.use_bfloat16,
                                      inference_only=not args.export_dir)
    symbols = LiteralSymbolReport(sp, args.input_file)

    def check_example(ex):
        symbols.check(f"line {ex.unique_id + 1}", "text_a", ex.text_a)
        symbols.check(f"line {ex.unique_id + 1}", "text_b", ex.text_b)

    def run_batch(batch):
        length = bucket_length(max(len(f.input_ids) for f in batch), args.max_seq_length)
        ids, segs, mask = pad_left(batch, length)
        layers, seq = extractor.predict(ids, segs, mask)
        # left padding: the real tokens are the last n positions (input_mask 0)
        return [(layers[k, :, length - len(f.input_ids):], seq[k], mask[k] == 0)
                for k, f in enumerate(batch)]

    # one line counts the lines cut to --max_seq_length, as BERT's extract_features says
    truncation = TruncationCount(args.max_seq_length, specials="<sep>/<cls>")

    def featurize(ex):
        if args.doc_stride is None:
            return build_xlnet_inputs(sp, ex.text_a, ex.text_b, args.max_seq_length, args.uncased,
                                      truncation)
        return featurize_windows(sp, ex, args.max_seq_length, args.doc_stride, args.uncased,
                                 args.input_file)

    summary = ExtractionResult(**write_feature_lines(
        read_text_examples(args.input_file), featurize, run_batch, layer_indexes,
        args.output_file, args.batch_size, args.pooling,
        cls_position="last", check_example=check_example, normalize=args.normalize,
        resume_key=resume_key(args, {"--input_file": args.input_file,
                                     "--spiece_model_file": args.spiece_model_file,
                                     "--model_config_path": args.model_config_path,
                                     "--init_checkpoint": args.init_checkpoint})))
    if truncation.summary():
        logging.warning("%s: %s", args.input_file, truncation.summary("lines"))
    if symbols.summary():
        logging.warning("%s", symbols.summary())
    summary.literal_symbol_lines = symbols.count
    if args.export_dir:
        summary.export_path = export_saved_model(extractor, args)
    return summary


def export_saved_model(extractor: XLNetFeatureExtractor, args: XLNetExtractFeaturesArgs) -> str:
    """Writes ``--export_dir``'s raw-text SavedModel of the XLNet feature extractor (bert_tf).

    As BERT's (:func:`bert_tf.bert.tasks.feature_extraction.export_saved_model`), with
    ``XLNetTextPreprocessor`` (``--spiece_model_file``, ``--uncased``, ``--max_seq_length``):
    ``serving_default`` (tf.string ``text_a``, ``text_b`` ``[B]``: ``A <sep> B <sep> <cls>``),
    ``serving_single`` (``A <sep> <cls>``), ``serving_ids`` (int32 ``input_ids``, float32
    ``input_mask`` (1 = padding), int32 ``segment_ids`` ``[B, S]``, left padded). Outputs:
    float32 ``layers [B, len(--layers), S, D]``, int32 ``input_mask [B, S]`` (1 at the real
    tokens, the last ones of a row: the tokens the JSON lines hold) and, with ``--pooling``
    other than ``none``, float32 ``embedding [B, D]`` (``cls``: the last real token, <cls>;
    ``--normalize``: unit L2 norm).
    Text signatures pad on the left to ``--max_seq_length`` and truncate as the classifier
    (no ``--doc_stride`` windows).

    Returns:
      The version folder written.

    Raises:
      FlagError: ``export_dir`` cannot be created or written.
    """
    from bert_tf.run import serving
    from bert_tf.tokenization.in_graph_sentencepiece import XLNetTextPreprocessor

    dtypes = {"input_ids": tf.int32, "input_mask": tf.float32, "segment_ids": tf.int32}

    def serve(features):
        out = extractor._layers(features, training=False)
        real = tf.cast(tf.equal(features["input_mask"], 0.0), tf.int32)
        result = {"layers": tf.cast(out["layers"], tf.float32), "input_mask": real}
        if args.pooling != "none":
            embedding = pool_in_graph(tf.cast(out["sequence_output"], tf.float32), real,
                                      args.pooling, cls_position="last")
            result["embedding"] = (l2_normalize_in_graph(embedding) if args.normalize
                                   else embedding)
        return result

    preprocessor = XLNetTextPreprocessor(args.spiece_model_file, args.uncased,
                                         args.max_seq_length)
    return serving.write_saved_model(args.export_dir, [extractor.model, preprocessor],
                                     serving.text_endpoints(preprocessor, serve, dtypes))


