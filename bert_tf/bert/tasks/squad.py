"""SQuAD 1.1 / 2.0 fine-tuning and prediction: the run behind the root `run_squad.py`.

Mirrors ``main`` and ``validate_flags_or_throw`` of the original ``run_squad.py`` (spec
`bert.md` 9.1, 9.4) on top of the pieces that already match the original byte for byte:
:mod:`bert_tf.data.squad` (reader, features, ``FeatureWriter``),
:mod:`bert_tf.data.squad_postprocess` (``write_predictions``), :class:`BertSquad` and
:func:`squad_loss` (:mod:`bert_tf.bert.squad`) and the custom training loop
(:mod:`bert_tf.training.loop`).

Training (``--do_train``): read ``train_file`` (training mode), ``num_train_steps =
int(len(examples) / train_batch_size * num_train_epochs)`` (examples, not split features),
``num_warmup_steps = int(num_train_steps * warmup_proportion)``, shuffle the examples with
``random.Random(12345)``, write ``<output_dir>/train.tf_record``, then train with the
pipeline repeat -> shuffle(100) -> batch(drop_remainder=True) and write ``model.ckpt-N``
checkpoints in the original layout (``bert/*``, ``cls/squad/output_weights [2, H]``,
``cls/squad/output_bias [2]``, ``*/adam_m``, ``*/adam_v``, ``global_step``); a rerun resumes.

Prediction (``--do_predict``): read ``predict_file`` (eval mode), write
``<output_dir>/eval.tf_record`` keeping the features in memory, run the model batched (the
last batch is not dropped), collect one :class:`RawResult` per feature and write
``predictions.json``, ``nbest_predictions.json`` and (v2) ``null_odds.json`` with the original
``write_predictions``. Weights come, as with the Estimator, from the newest checkpoint in
``output_dir``, else from ``init_checkpoint`` (the ``cls/squad`` head then stays random, with a
warning).

Beyond the original:

* when every question of ``predict_file`` has an ``answers`` list and at least one is
  non-empty, the official metrics are computed in-process and written to
  ``<output_dir>/eval_results.json``: v1 ``exact_match``, ``f1``; v2 ``exact``, ``f1``,
  ``total``, ``HasAns_*``, ``NoAns_*`` of ``predictions.json`` plus the null-threshold search
  over ``null_odds.json`` with each question's best non-null answer (``best_exact``,
  ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh``, ``has_ans_exact``, ``has_ans_f1``):
  rerunning with ``--null_score_diff_threshold=<best_f1_thresh>`` gives ``best_f1`` (details
  in :func:`evaluate_predictions`);
* every input is checked before any work: both JSON files are read (a bad ``predict_file``
  fails before hours of training), the window flags are checked (``doc_stride`` <=
  ``max_seq_length - max_query_length - 3``, the document window, so no piece is skipped;
  room for the context), the vocab must fit the config; errors are
  :class:`~bert_tf.errors.BertTfError` s naming the flag or file, and every output is written
  atomically, so a failed run leaves ``output_dir`` as it was;
* with none of ``--bert_config_file``, ``--vocab_file``, ``--init_checkpoint`` the embedded
  default model (MiniLM in the original layout, :mod:`bert_tf.defaults`) is used;
* ``dtype`` (mixed precision), ``use_xla`` and ``gradient_accumulation_steps``;
* ``--export_dir``: a SavedModel under ``<export_dir>/<timestamp>/`` whose ``serving_default``
  answers raw ``question`` / ``context`` strings with the run's windowing and n-best rules
  (:mod:`bert_tf.bert.tasks.squad_export`), with the run's weights; enough on its own as a mode.
"""

import json
import math
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from absl import logging

from bert_tf.bert.config import BertConfig, check_pair_segments, load_config_for_length
from bert_tf.data import squad as squad_data
from bert_tf.data import squad_metrics
from bert_tf.bert.data.squad_records import TRAIN_SHUFFLE_SEED, feature_arrays, train_dataset
from bert_tf.bert.tasks.args import SquadArgs
from bert_tf.bert import recipes
from bert_tf.data.squad_postprocess import RawResult, SquadPredictions, write_predictions
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.atomic_files import display_path
from bert_tf.file_streams import open_text
from bert_tf.run import checks as run_checks
from bert_tf.training import restarts, restore
from bert_tf.training.schedule import check_step_count
from bert_tf.training.strategy import check_tpu_flags
from bert_tf.tokenization.wordpiece import (FullTokenizer, check_vocab_matches_case,
                                            validate_case_matches_checkpoint)

PROCESSING_LOG_EVERY = 1000  # "Processing example: N"

TRAIN_RECORD = "train.tf_record"
EVAL_RECORD = "eval.tf_record"
PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"
EVAL_RESULTS_FILE = "eval_results.json"

PredictFn = Callable[[Dict[str, np.ndarray]], Tuple[np.ndarray, np.ndarray]]


# ---- start-up checks ---------------------------------------------------------------------------

def require_args(args: SquadArgs) -> None:
    """``--output_dir`` given (the first start-up check; ``run_squad.py`` makes it before
    resolving the default model).

    Raises:
      FlagError: it is not.
    """
    if not args.output_dir:
        raise FlagError("Flag --output_dir must have a value other than None.")


def check_args(args: SquadArgs) -> Tuple[BertConfig, FullTokenizer]:
    """The original ``validate_flags_or_throw`` checks in their order, then bert_tf's.

    Order (spec 9.1): the config is read; 1. the case check against the checkpoint name;
    2. ``do_train`` or ``do_predict``; 3. ``train_file`` / ``predict_file`` for the mode;
    4. ``max_seq_length <= max_position_embeddings``; 5. ``max_seq_length >
    max_query_length + 3``. Then (bert_tf): ``doc_stride`` in ``[1, max_seq_length -
    max_query_length - 3]`` (no document piece skipped between windows), sizes
    and counts positive, the vocab readable, of the right case and not larger than the config's
    ``vocab_size``, the input files present.

    Returns:
      ``(config, tokenizer)``.

    Raises:
      ConfigError: unreadable config or vocab, or a vocab larger than ``vocab_size``.
      FlagError (CaseMismatchError included): the first failing check, naming the flags.
    """
    for name in ("bert_config_file", "vocab_file"):  # run_squad.py resolves the default
        if not getattr(args, name):
            raise FlagError(f"--{name} missing: give --bert_config_file and --vocab_file, or "
                            "run run_squad.py without model flags (the embedded default "
                            "model, bert_tf.defaults.resolve_model_files)")
    config = BertConfig.from_json_file(args.bert_config_file)
    validate_case_matches_checkpoint(args.do_lower_case, args.init_checkpoint or "")
    if not args.export_dir:
        run_checks.require_one_mode(do_train=args.do_train, do_predict=args.do_predict)
    check_tpu_flags(args)
    if args.do_train and not args.train_file:
        raise FlagError("If `do_train` is True, then `train_file` must be specified.")
    if args.do_predict and not args.predict_file:
        raise FlagError("If `do_predict` is True, then `predict_file` must be specified.")
    load_config_for_length(args.bert_config_file, args.max_seq_length)
    check_pair_segments(config, args.bert_config_file, "SQuAD (question + context)")
    squad_data.check_feature_flags(args.max_seq_length, args.doc_stride, args.max_query_length)
    if not args.version_2_with_negative and args.null_score_diff_threshold != 0.0:
        logging.warning("--null_score_diff_threshold=%s is read only with "
                        "--version_2_with_negative=True (SQuAD 2.0): ignored",
                        args.null_score_diff_threshold)

    positive = ["n_best_size", "max_answer_length", "gradient_accumulation_steps"]
    positive += ["train_batch_size"] if args.do_train else []
    positive += ["predict_batch_size"] if args.do_predict else []
    for name in positive:
        if getattr(args, name) < 1:
            raise FlagError(f"--{name}={getattr(args, name)} must be at least 1")
    if args.do_train:
        if not args.num_train_epochs > 0:
            raise FlagError(f"--num_train_epochs={args.num_train_epochs} must be positive")
        if not 0.0 <= args.warmup_proportion <= 1.0:
            raise FlagError(f"--warmup_proportion={args.warmup_proportion} must be in [0, 1]")
    for flag, path, used in (("train_file", args.train_file, args.do_train),
                             ("predict_file", args.predict_file, args.do_predict)):
        if used:
            run_checks.require_input_file(flag, path)
    if args.do_predict and args.output_dir:
        check_predict_file_is_not_an_output(args.predict_file, args.output_dir)

    try:
        tokenizer = FullTokenizer(args.vocab_file, do_lower_case=args.do_lower_case)
    except OSError as e:
        raise ConfigError(f"--vocab_file={args.vocab_file}: cannot read ({e})") from e
    check_vocab_matches_case(tokenizer.vocab, args.do_lower_case, args.vocab_file)
    if len(tokenizer.vocab) > config.vocab_size:
        raise ConfigError(f"{args.vocab_file} has {len(tokenizer.vocab)} tokens but "
                          f"{args.bert_config_file} says vocab_size={config.vocab_size}")

    run_checks.warn_if_vocab_smaller(len(tokenizer.vocab), args.vocab_file, config.vocab_size,
                                     args.bert_config_file)
    return config, tokenizer


def check_predict_file_is_not_an_output(predict_file: str, output_dir: str) -> None:
    """Refuses a ``--predict_file`` that predict would replace (bert_tf, beyond the
    original, which overwrote it): ``predictions.json``, ``nbest_predictions.json`` or
    ``null_odds.json`` of ``--output_dir`` (the same file by path, symlink or hard link).

    Raises:
      FlagError: ``--predict_file=<path> is <output>, which --do_predict writes: ...``.
    """
    for name in (PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE):
        output = os.path.join(output_dir, name)
        same = os.path.realpath(output) == os.path.realpath(predict_file)
        if not same and os.path.exists(output) and os.path.exists(predict_file):
            same = os.path.samefile(output, predict_file)
        if same:
            raise FlagError(f"--predict_file={predict_file} is {output}, which --do_predict "
                            "writes: it would be replaced; copy it elsewhere or give another "
                            "--output_dir")


def num_train_steps_for(num_examples: int, train_batch_size: int, num_train_epochs: float,
                        warmup_proportion: float) -> Tuple[int, int]:
    """``(num_train_steps, num_warmup_steps)`` as the original main (spec 9.4).

    ``num_train_steps = int(num_examples / train_batch_size * num_train_epochs)``, counting
    examples (questions), not split features; ``num_warmup_steps = int(num_train_steps *
    warmup_proportion)``.

    Raises:
      FlagError: more than ``schedule.MAX_STEPS`` steps (names the flags).
    """
    steps = int(num_examples / train_batch_size * num_train_epochs)
    check_step_count(steps, f"{num_examples} examples / --train_batch_size={train_batch_size} "
                            f"x --num_train_epochs={num_train_epochs}")
    return steps, int(steps * warmup_proportion)


# ---- data --------------------------------------------------------------------------------------

def read_train_examples(args: SquadArgs) -> List[squad_data.SquadExample]:
    """Training examples shuffled with ``random.Random(12345)`` (original main).

    Raises:
      InputDataError: bad file (see :func:`bert_tf.data.squad.read_squad_examples`), or no
        usable question in it.
      FlagError: too few examples for one training step.
    """
    examples = squad_data.read_squad_examples(args.train_file, is_training=True,
                                              version_2_with_negative=args.version_2_with_negative)
    if not examples:
        raise InputDataError(f"--train_file={args.train_file}: no usable training question")
    steps, _ = num_train_steps_for(len(examples), args.train_batch_size, args.num_train_epochs,
                                   args.warmup_proportion)
    if steps < 1:
        raise FlagError(
            f"num_train_steps = int({len(examples)} examples / --train_batch_size="
            f"{args.train_batch_size} * --num_train_epochs={args.num_train_epochs}) = 0: "
            f"raise --num_train_epochs or lower --train_batch_size")
    rng = random.Random(TRAIN_SHUFFLE_SEED)
    rng.shuffle(examples)
    return examples


def read_predict_examples(args: SquadArgs) -> List[squad_data.SquadExample]:
    """Prediction examples in file order (eval mode: answers are not read).

    Raises:
      InputDataError: bad file, or no question in it.
    """
    examples = squad_data.read_squad_examples(args.predict_file, is_training=False,
                                              version_2_with_negative=args.version_2_with_negative)
    if not examples:
        raise InputDataError(f"--predict_file={args.predict_file}: the file holds no question")
    return examples


def write_features(examples: Sequence[squad_data.SquadExample], tokenizer: FullTokenizer,
                   args: SquadArgs, filename: str, is_training: bool
                   ) -> List[squad_data.InputFeatures]:
    """Converts examples to features and writes them to the TFRecord ``filename`` atomically.

    Returns:
      The features, in order (``unique_id`` from 1000000000).
    """
    features: List[squad_data.InputFeatures] = []
    with squad_data.FeatureWriter(filename, is_training=is_training) as writer:
        def output_fn(feature):
            features.append(feature)
            writer.process_feature(feature)

        squad_data.convert_examples_to_features(
            examples, tokenizer, args.max_seq_length, args.doc_stride, args.max_query_length,
            is_training, output_fn)
        if not is_training and args.version_2_with_negative:  # before the record is kept
            _check_every_question_has_a_window(examples, features, args.predict_file)
    return features


def _check_every_question_has_a_window(examples: Sequence[squad_data.SquadExample],
                                       features: Sequence[squad_data.InputFeatures],
                                       predict_file: str) -> None:
    """SQuAD 2.0 prediction needs a window of every question: a context of no WordPiece
    token has none, and the original's ``write_predictions`` fails on it (``features[0]``,
    IndexError) after the whole prediction (v1 writes "empty" for it, as the original).

    Raises:
      InputDataError: naming the file and the first such question's id.
    """
    covered = {f.example_index for f in features}
    for index, example in enumerate(examples):
        if index not in covered:
            raise InputDataError(
                f"{predict_file}: question id {example.qas_id}: its paragraph's context has no "
                "WordPiece token (empty, or only characters the tokenizer drops), so SQuAD 2.0 "
                "cannot score it (the original fails there): give the paragraph its text or "
                "remove it")


# ---- model ------------------------------------------------------------------------------------

def build_model(config: BertConfig, args: SquadArgs, strategy, inference_only: bool = False):
    """A :class:`BertSquad` built under ``strategy.scope()`` for ``max_seq_length`` inputs.

    ``--dtype`` float16/bfloat16 builds it with the ``mixed_*`` Keras policy (variables stay
    float32; logits are float32); ``inference_only`` (predict without training or export)
    holds the matmul kernels in that dtype instead
    (:func:`bert_tf.training.precision.dtype_policy`).
    ``use_one_hot_embeddings = use_tpu``, as the original.
    """
    from bert_tf.bert.squad import BertSquad
    from bert_tf.training.precision import dtype_policy

    with dtype_policy(args.dtype, inference_only=inference_only), strategy.scope():
        model = BertSquad(config, use_one_hot_embeddings=args.use_tpu, name="bert_squad",
                          feature_layers=recipes.feature_layers(args, config.num_hidden_layers),
                          feature_combine=args.feature_combine)
        model.build_with_dummy_input(args.max_seq_length)
    return model


def model_predict_fn(model, strategy, batch_size: int, use_xla: bool = False) -> PredictFn:
    """A :data:`PredictFn` running ``model`` batched under ``strategy``.

    Uses :class:`bert_tf.training.predict.BatchPredictor` WITHOUT padding trimming:
    post-processing ranks the logits of every position, padding included, as the original, so
    the full ``max_seq_length`` must be run. One trace serves every batch (an input signature
    of any batch size): the last, shorter batch runs its own rows only, as the original's
    (issue 25: it was padded to ``batch_size`` zero rows, 5 of 8 rows of work wasted on the
    v1.1 dev subset's last batch). ``use_xla`` compiles the forward pass with XLA; then and on
    TPU every batch is padded to ``batch_size`` rows (one compiled shape; the padding rows are
    dropped).

    Returns:
      ``batch -> (start_logits, end_logits)``, float32 numpy ``[B, max_seq_length]``.
    """
    import tensorflow as tf

    from bert_tf.training.predict import BatchPredictor, dynamic_signature

    if use_xla or isinstance(strategy, tf.distribute.TPUStrategy):  # fixed shapes
        forward = model
        if use_xla:
            forward = tf.function(lambda features, training=False: model(features,
                                                                         training=False),
                                  jit_compile=True)
        predictor = BatchPredictor(forward, ["start_logits", "end_logits"], strategy=strategy,
                                   fixed_batch_size=batch_size)
    else:
        predictor = BatchPredictor(model, ["start_logits", "end_logits"], strategy=strategy,
                                   input_signature=dynamic_signature())

    def predict_fn(batch):
        out = predictor.predict_batch(batch)
        return out["start_logits"], out["end_logits"]

    return predict_fn


def predict_raw_results(features: Sequence[squad_data.InputFeatures], predict_fn: PredictFn,
                        batch_size: int) -> List[RawResult]:
    """Runs ``predict_fn`` over the features in order, ``batch_size`` at a time.

    Args:
      features: eval features (``unique_id``, ``input_ids``... of length max_seq_length).
      predict_fn: ``batch -> (start_logits, end_logits)``; ``batch`` holds ``unique_ids``
        int64 ``[B]`` and ``input_ids``, ``input_mask``, ``segment_ids`` int32 ``[B, S]``;
        the logits are float ``[B, S]`` (every position: post-processing ranks padding too).
      batch_size: rows per call; the last batch may be shorter (drop_remainder False).

    Returns:
      One :class:`RawResult` per feature, logits as float32 numpy rows (post-processing
      turns them into Python floats, as the original's ``float(x)``).

    Raises:
      ValueError: ``predict_fn`` returned the wrong shapes.
    """
    results: List[RawResult] = []
    for start in range(0, len(features), batch_size):
        chunk = features[start:start + batch_size]
        batch = feature_arrays(chunk)
        start_logits, end_logits = predict_fn(batch)
        start_logits = np.asarray(start_logits, np.float32)
        end_logits = np.asarray(end_logits, np.float32)
        expected = batch["input_ids"].shape
        if start_logits.shape != expected or end_logits.shape != expected:
            raise ValueError(f"predict_fn returned logits of shapes {start_logits.shape} and "
                             f"{end_logits.shape} for a batch of {expected}")
        for i, feature in enumerate(chunk):
            if len(results) % PROCESSING_LOG_EVERY == 0:
                logging.info("Processing example: %d", len(results))
            results.append(RawResult(feature.unique_id, start_logits[i], end_logits[i]))
    return results


# ---- outputs ----------------------------------------------------------------------------------

def write_prediction_files(examples: Sequence[squad_data.SquadExample],
                           features: Sequence[squad_data.InputFeatures],
                           results: Sequence[RawResult], args: SquadArgs) -> SquadPredictions:
    """The original ``write_predictions`` call of ``run_squad.main`` with these flags.

    Writes ``predictions.json``, ``nbest_predictions.json`` and (v2) ``null_odds.json`` to
    ``output_dir``, each atomically as ``json.dumps(obj, indent=4) + "\\n"``.
    """
    join = lambda name: os.path.join(args.output_dir, name)  # noqa: E731
    return write_predictions(
        examples, features, results, args.n_best_size, args.max_answer_length,
        args.do_lower_case, join(PREDICTIONS_FILE), join(NBEST_FILE), join(NULL_ODDS_FILE),
        version_2_with_negative=args.version_2_with_negative,
        null_score_diff_threshold=args.null_score_diff_threshold,
        verbose_logging=args.verbose_logging)


def _load_dataset(path: str):
    with open_text(path) as f:  # local or gs:// (tf.io.gfile)
        return json.load(f)["data"]


def gold_answers_present(dataset: Sequence[Mapping]) -> bool:
    """Whether a SQuAD ``data`` list can be scored: every question has an ``answers`` list
    and at least one of them is non-empty (a test file without answers cannot)."""
    any_answer = False
    for article in dataset:
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                answers = qa.get("answers")
                if not isinstance(answers, list):
                    return False
                any_answer = any_answer or bool(answers)
    return any_answer


def best_non_null_predictions(predictions: SquadPredictions) -> Dict[str, str]:
    """qas id -> the text of the first non-empty n-best entry ("" when there is none).

    These are the answers a threshold search can switch on: ``predictions.json`` already
    holds "" wherever the null score won at ``--null_score_diff_threshold``.
    """
    return {qid: next((e["text"] for e in entries if e["text"]), "")
            for qid, entries in predictions.nbest.items()}


def evaluate_predictions(predict_file: str, predictions: SquadPredictions,
                         version_2_with_negative: bool) -> Optional[Dict[str, float]]:
    """Official SQuAD metrics of ``predictions`` against ``predict_file`` (bert_tf).

    v1: :func:`squad_metrics.evaluate_v1` of ``predictions.json`` (``exact_match``, ``f1``).
    v2: :func:`squad_metrics.evaluate_v2` of ``predictions.json`` as written (``exact``,
    ``f1``, ``total``, ``HasAns_*``, ``NoAns_*``), then the null-threshold search
    (:func:`squad_metrics.find_all_best_thresh_v2`: ``best_exact``, ``best_exact_thresh``,
    ``best_f1``, ``best_f1_thresh``, ``has_ans_exact``, ``has_ans_f1``) over the null odds with
    each question's best non-null answer, as XLNet's run_squad does: predicting "" when the null
    odds exceed ``best_f1_thresh`` scores ``best_f1``, so
    ``--null_score_diff_threshold=<best_f1_thresh>`` reproduces it (barring ties in the null
    odds, and the case where no threshold beats "all null", reported as 0.0). (Searching over
    ``predictions.json`` itself, as the official script with ``--na-prob-file`` does, cannot
    switch on the answers the threshold already replaced by "".)

    Returns:
      The metrics (percentages, except ``has_ans_*`` fractions; thresholds in null-score
      units), or None when the file has no gold answers or cannot be scored (a warning says
      why; the predictions are kept).
    """
    try:
        dataset = _load_dataset(predict_file)
    except (OSError, ValueError, KeyError) as e:
        logging.warning("%s: cannot re-read for scoring (%s); no %s", predict_file, e,
                        EVAL_RESULTS_FILE)
        return None
    if not gold_answers_present(dataset):
        logging.info("%s has no gold answers: no %s", predict_file, EVAL_RESULTS_FILE)
        return None
    try:
        if not version_2_with_negative:
            return dict(squad_metrics.evaluate_v1(dataset, predictions.predictions))
        # na_prob_thresh=inf: exact/f1 are those of predictions.json (the official default 1.0
        # gives the same numbers when --null_score_diff_threshold <= 1.0).
        metrics = dict(squad_metrics.evaluate_v2(dataset, predictions.predictions,
                                                 na_prob_thresh=math.inf))
        best = best_non_null_predictions(predictions)
        exact_raw, f1_raw = squad_metrics.get_raw_scores(dataset, best)
        qid_to_has_ans = squad_metrics.make_qid_to_has_ans(dataset)
        squad_metrics.find_all_best_thresh_v2(metrics, best, exact_raw, f1_raw,
                                              predictions.null_odds, qid_to_has_ans)
        _warn_when_all_null_is_best(metrics, predictions.null_odds, f1_raw, qid_to_has_ans)
        return metrics
    except InputDataError as e:
        hint = "" if version_2_with_negative else " (a SQuAD 2.0 file? use --version_2_with_negative)"
        logging.warning("%s: cannot score the predictions: %s%s; no %s", predict_file, e, hint,
                        EVAL_RESULTS_FILE)
        return None


def _warn_when_all_null_is_best(metrics: Dict[str, float], null_odds: Dict[str, float],
                                scored: Dict[str, float], qid_to_has_ans: Dict[str, bool]) -> None:
    """One WARNING line when ``best_exact`` / ``best_f1`` is the score of answering no
    question and its reported threshold does not give it (bert_tf; the official search
    reports 0.0 for "no threshold beats all null", and a null odds value at or below 0.0 is
    then answered by ``--null_score_diff_threshold=0.0``): it names a threshold that does,
    below the smallest null odds. The metrics keep the official values."""
    odds = [null_odds[k] for k in scored if k in null_odds]
    if not odds:
        return
    all_null = 100.0 * sum(1 for k in scored if not qid_to_has_ans[k]) / len(scored)
    lowest = min(odds)
    keys = [k for k in ("best_exact", "best_f1")
            if metrics[k] == all_null and lowest <= metrics[k + "_thresh"]]
    if keys:
        logging.warning(
            "%s: the score of answering no question; the reported %s (the official script's "
            "value for that case) answers every question whose null odds are at or below it "
            "(the lowest is %.4g): --null_score_diff_threshold=%.4g gives it",
            " and ".join(f"{k} = {metrics[k]:.4g}" for k in keys),
            " and ".join(f"{k}_thresh = {metrics[k + '_thresh']}" for k in keys), lowest,
            math.floor(lowest) - 1.0)


# ---- the run ----------------------------------------------------------------------------------

@dataclass
class SquadResult:
    """What :func:`run` did (a field is None when its step did not run).

    Attributes:
      output_dir: ``--output_dir`` as given (``display_path``).
      num_train_examples, num_train_features, num_train_steps, num_warmup_steps: training's
        counts; global_step, checkpoint, loss: where it ended (the last step's loss).
      num_predict_examples, num_predict_features: prediction's counts; predict_seconds and
        predict_examples_per_second, predict_features_per_second: its speed; weights_from:
        the checkpoint prefix predicted with (``"predict_fn"`` for a replaced model);
        predictions_file, nbest_file, null_odds_file (v2): the files written;
        eval_results: the official metrics (dict, or None: no gold answers) and
        eval_results_file (``eval_results.json``, or None).
      export_path: the SavedModel folder written (or None).
    """

    output_dir: Optional[str] = None
    num_train_examples: Optional[int] = None
    num_train_features: Optional[int] = None
    num_train_steps: Optional[int] = None
    num_warmup_steps: Optional[int] = None
    global_step: Optional[int] = None
    checkpoint: Optional[str] = None
    loss: Optional[float] = None
    num_predict_examples: Optional[int] = None
    num_predict_features: Optional[int] = None
    predict_seconds: Optional[float] = None
    predict_examples_per_second: Optional[float] = None
    predict_features_per_second: Optional[float] = None
    weights_from: Optional[str] = None
    predictions_file: Optional[str] = None
    nbest_file: Optional[str] = None
    null_odds_file: Optional[str] = None
    eval_results: Optional[Dict[str, Any]] = None
    eval_results_file: Optional[str] = None
    export_path: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_squad.py`` prints (bert_tf's summary): the checkpoint trained to, the
        predictions file and speed, the SavedModel, the metrics file and its values."""
        lines = []
        if self.global_step is not None:
            lines.append(f"trained to global_step {self.global_step}: {self.checkpoint}")
        if self.predictions_file is not None:
            lines.append(f"predicted {self.num_predict_examples} questions "
                         f"({self.predict_examples_per_second:.1f} examples/s): "
                         f"{self.predictions_file}")
        if self.export_path:
            lines.append(f"exported the SavedModel to {self.export_path}")
        if self.eval_results:
            lines.append(f"metrics: {self.eval_results_file}")
            lines.extend(f"  {key} = {value}" for key, value in self.eval_results.items())
        return lines


def run(args: SquadArgs, strategy=None, predict_fn: Optional[PredictFn] = None) -> SquadResult:
    """Runs ``run_squad.py``: checks, then training and/or prediction.

    Args:
      args: the flags (``bert_config_file`` and ``vocab_file`` given or resolved:
        ``run_squad.py`` calls :func:`bert_tf.defaults.resolve_model_files` first).
      strategy: a ``tf.distribute`` strategy; None: from the TPU flags and the machine
        (:func:`bert_tf.training.strategy.strategy_from_flags`).
      predict_fn: replaces the model in prediction (``batch -> (start_logits, end_logits)``,
        see :func:`predict_raw_results`); everything else (features, records, batching,
        post-processing, metrics) runs as usual. Not allowed with ``do_train``.

    Returns:
      A :class:`SquadResult`.

    Raises:
      BertTfError subclasses for bad flags, files and checkpoints (see :func:`check_args`,
      :func:`read_train_examples`, :func:`read_predict_examples`); they are raised before
      anything is written to ``output_dir`` whenever the inputs alone show the problem.
    """
    require_args(args)
    if predict_fn is not None and args.do_train:
        raise FlagError("predict_fn replaces the model: it cannot be used with --do_train")
    if args.num_restarts > 1:  # bert_tf, issue 26: compared on --predict_file's answers
        recipes.check_recipe_flags(args)
        return restarts.run_restarts(args, run, "f1", lambda r: r.eval_results or {},
                                     eval_flag="do_predict")
    config, tokenizer = check_args(args)
    recipes.start(args)  # --seed, --deterministic: before the model is built
    # Read both inputs before any work, so a bad predict_file fails before training.
    train_examples = read_train_examples(args) if args.do_train else None
    eval_examples = read_predict_examples(args) if args.do_predict else None
    if args.export_dir:
        if predict_fn is not None:
            raise FlagError("predict_fn replaces the model: it cannot be used with --export_dir")
        from bert_tf.run import serving
        serving.check_export_dir(args.export_dir)
    run_checks.make_output_dir(args.output_dir, files=(
        TRAIN_RECORD, EVAL_RECORD, PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE,
        EVAL_RESULTS_FILE) + run_checks.TRAINING_FILES)
    summary = SquadResult(output_dir=display_path(args.output_dir))

    model = None
    if strategy is None and (args.do_train or predict_fn is None):
        from bert_tf.training.strategy import strategy_from_flags
        strategy = strategy_from_flags(args)
    if args.do_train:
        model = _train(args, config, tokenizer, train_examples, strategy, summary)
    if args.do_predict:
        model = _predict(args, config, tokenizer, eval_examples, strategy, model, predict_fn,
                         summary)
    if args.export_dir:
        summary.export_path = _export(args, config, tokenizer, strategy, model)
    return summary


def _export(args, config, tokenizer, strategy, model):
    """``--export_dir``: the raw-text SavedModel of :mod:`bert_tf.bert.tasks.squad_export` with the
    run's weights (the trained or predicting model, else restored as ``--do_predict`` does)."""
    from bert_tf.bert.tasks.squad_export import export_squad_model
    from bert_tf.tokenization.in_graph_wordpiece import BertTextPreprocessor

    if model is None:
        model = _build_restored(config, args, strategy)[0]
    preprocessor = BertTextPreprocessor(args.vocab_file, args.do_lower_case, args.max_seq_length)
    vocab_tokens = [""] * (max(tokenizer.vocab.values()) + 1)
    for token, index in tokenizer.vocab.items():
        vocab_tokens[index] = token
    return export_squad_model(model, preprocessor, vocab_tokens, args, args.export_dir)


def _build_restored(config, args, strategy):
    """``(model, Restored)`` for prediction or export without training: built empty and
    filled from the newest checkpoint of ``--output_dir``, else ``--init_checkpoint``
    (:func:`bert_tf.training.restore.build_for_inference`, issue 24)."""
    # predict only (no export): matmul kernels held in --dtype (bert_tf.training.precision)
    return restore.build_for_inference(lambda: build_model(config, args, strategy,
                                                           inference_only=not args.export_dir),
                                       lambda m: m.name_map(), args.output_dir,
                                       args.init_checkpoint, strategy=strategy)


def _train(args, config, tokenizer, examples, strategy, summary):
    from bert_tf.bert.squad import squad_loss
    from bert_tf.training import loop

    num_train_steps, num_warmup_steps = num_train_steps_for(
        len(examples), args.train_batch_size, args.num_train_epochs, args.warmup_proportion)
    train_file = os.path.join(args.output_dir, TRAIN_RECORD)
    features = write_features(examples, tokenizer, args, train_file, is_training=True)
    logging.info("***** Running training *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", args.train_batch_size)
    logging.info("  Num steps = %d", num_train_steps)
    num_features = len(features)
    del features

    model, warm = restore.build_for_training(  # no random copy of restored weights (issue 24)
        lambda: build_model(config, args, strategy), recipes.warm_start_load(args),
        args.output_dir, args.init_checkpoint, strategy)

    def loss_fn(model, features, labels):
        out = model(features, training=True)
        return squad_loss(out["start_logits"], out["end_logits"], labels["start_positions"],
                          labels["end_positions"])

    settings = {"warm_start": warm}  # (bert_tf, issue 26) the recipes
    if args.freeze_encoder and recipes.freeze_encoder(model, args, model.encoder_name_map(),
                                                      load_fn=lambda *_: warm):
        settings = {"init_checkpoint": None, "warm_started": True}
    settings["layer_recipe"] = recipes.layer_recipe(
        args, recipes.bert_block_of(config.num_hidden_layers), model.name_map())
    dataset = train_dataset(train_file, args.max_seq_length, args.train_batch_size, args.seed)
    result = loop.train(model, loss_fn, dataset, model.name_map(), loop.TrainConfig.from_flags(
        args, num_train_steps, num_warmup_steps=num_warmup_steps, **settings),
        strategy=strategy)
    summary.num_train_examples, summary.num_train_features = len(examples), num_features
    summary.num_train_steps, summary.num_warmup_steps = num_train_steps, num_warmup_steps
    summary.global_step, summary.checkpoint = result.global_step, result.checkpoint
    summary.loss = result.last_loss
    return model


def _predict(args, config, tokenizer, examples, strategy, model, predict_fn, summary):
    weights_from = "predict_fn"
    if predict_fn is None:
        # Weights first: a checkpoint that does not fit fails before any file is written.
        if model is None:
            model, restored = _build_restored(config, args, strategy)
            weights_from = restored.prefix
        else:
            weights_from = summary.checkpoint or ""
        predict_fn = model_predict_fn(model, strategy, args.predict_batch_size, args.use_xla)

    eval_file = os.path.join(args.output_dir, EVAL_RECORD)
    features = write_features(examples, tokenizer, args, eval_file, is_training=False)
    logging.info("***** Running predictions *****")
    logging.info("  Num orig examples = %d", len(examples))
    logging.info("  Num split examples = %d", len(features))
    logging.info("  Batch size = %d", args.predict_batch_size)
    start = time.time()
    results = predict_raw_results(features, predict_fn, args.predict_batch_size)
    seconds = max(time.time() - start, 1e-9)
    logging.info("Predicted %d examples (%d features) in %.2f s: %.1f examples/s",
                 len(examples), len(features), seconds, len(examples) / seconds)

    predictions = write_prediction_files(examples, features, results, args)
    # display_path, not abspath: abspath("gs://b/x") is "<cwd>/gs:/b/x", a local folder
    join = lambda name: display_path(os.path.join(args.output_dir, name))  # noqa: E731
    summary.num_predict_examples, summary.num_predict_features = len(examples), len(features)
    summary.predict_seconds = seconds
    summary.predict_examples_per_second = len(examples) / seconds
    summary.predict_features_per_second = len(features) / seconds
    summary.weights_from, summary.predictions_file = weights_from, join(PREDICTIONS_FILE)
    summary.nbest_file = join(NBEST_FILE)
    summary.null_odds_file = join(NULL_ODDS_FILE) if args.version_2_with_negative else None

    metrics = evaluate_predictions(args.predict_file, predictions, args.version_2_with_negative)
    summary.eval_results = metrics
    if metrics is not None:
        from bert_tf.atomic_files import atomic_write_text

        atomic_write_text(join(EVAL_RESULTS_FILE), json.dumps(metrics, indent=4) + "\n")
        summary.eval_results_file = join(EVAL_RESULTS_FILE)
        for key, value in metrics.items():
            logging.info("  %s = %s", key, value)
    return model
