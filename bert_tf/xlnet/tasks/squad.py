"""XLNet SQuAD 2.0: preprocessing, fine-tuning and prediction (original XLNet ``run_squad.py``,
spec ``xlnet.md`` 9).

The XLNet path of the root ``run_squad.py``: it runs when ``--model_config_path`` or
``--spiece_model_file`` is given, with XLNet's original flags::

    python run_squad.py --do_prepro=True --train_file=train-v2.0.json \
      --spiece_model_file=$LARGE/spiece.model --output_dir=proc_data/squad \
      --uncased=False --max_seq_length=512
    python run_squad.py --do_train=True --do_predict=True --train_file=train-v2.0.json \
      --predict_file=dev-v2.0.json --init_checkpoint=$LARGE/xlnet_model.ckpt \
      --model_config_path=$LARGE/xlnet_config.json --spiece_model_file=$LARGE/spiece.model \
      --output_dir=proc_data/squad --model_dir=exp/squad --predict_dir=exp/squad/pred \
      --max_seq_length=512 --train_batch_size=48 --train_steps=8000 --warmup_steps=1000

What it writes, as the original (records and caches: :mod:`bert_tf.xlnet.data.squad_records`):

* ``--do_prepro``: the questions ``[proc_id::num_proc]`` of ``--train_file``, shuffled, as
  ``<output_dir>/{spm}.{proc_id}.slen-{L}.qlen-{Q}.train.tf_record`` (spec 9.4), then stops;
* ``--do_train``: trains on every ``{spm}.*.slen-{L}.qlen-{Q}.train.tf_record`` of
  ``--output_dir`` with the loss of spec 9.5 and the original optimizer (TF1 Adam, layer-wise
  learning-rate decay ``--lr_layer_decay_rate`` 0.75), writing ``model.ckpt-N`` in the original
  layout to ``--model_dir`` (resumed from the newest one);
* ``--do_predict``: ``<output_dir>/{spm}.slen-{L}.qlen-{Q}.eval.tf_record`` (reused unless
  ``--overwrite_data``), then ``predictions.json``, ``nbest_predictions.json`` and
  ``null_odds.json`` in ``--predict_dir`` and the threshold search (spec 9.6), logged as
  ``Result | best_exact ... |``.

Beyond the original (each said in the log when it applies):

* the training shuffle is seeded (``--random_seed``; the original used Python's unseeded
  global ``random``, so two prepro runs differed; the golden records were made with 20190701);
* ``--do_train`` without cached training records builds them (all questions, seeded shuffle)
  instead of failing on an empty file list (the original needs ``--do_prepro`` first);
* ``--do_predict`` restores the newest checkpoint of ``--model_dir``, else
  ``--init_checkpoint``, and refuses to run with neither (the original ignores
  ``--init_checkpoint`` in predict mode and silently predicts with fresh random weights when
  ``model_dir`` is empty);
* the cached eval features are kept as ``{spm}.slen-{L}.qlen-{Q}.eval.features.jsonl.gz``
  (JSON lines; the original pickled its ``__main__.InputFeatures`` to ``.eval.features.pkl``,
  which only its own script can load) with the settings that made them; a cache of another
  predict file, ``--doc_stride``, ``--uncased`` or SentencePiece model (none of which the
  original's file name encodes; it reused the cache silently) is an error naming the
  difference;
* ``<predict_dir>/eval_results.json``: the original's ``Result`` keys (``best_exact``,
  ``best_exact_thresh``, ``best_f1``, ``best_f1_thresh``, ``has_ans_exact``, ``has_ans_f1``)
  plus, when the predict file has answers, the official SQuAD 2.0 metrics of
  ``predictions.json`` with ``null_odds.json`` at the official script's default threshold 1.0
  (``exact``, ``f1``, ``total``, ``HasAns_*``, ``NoAns_*``);
* bad input fails before any file is written, with one line naming the flag, file, question or
  variable: malformed JSON, several answers to a training question, a window too small for the
  question or a stride larger than the window, ``--train_steps`` not above ``--warmup_steps``,
  a BERT checkpoint, a predict question without answers and without ``is_impossible``;
* every output is written atomically.
"""

import dataclasses
import functools
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tensorflow as tf
from absl import logging

from bert_tf import checkpoint_io
from bert_tf.atomic_files import atomic_write_text, check_output_names
from bert_tf.data import squad_metrics
from bert_tf.data.squad import check_squad_layout
from bert_tf.xlnet.data import squad as data
from bert_tf.xlnet.data import squad_postprocess as postprocess
from bert_tf.xlnet.data import squad_records as records
from bert_tf.errors import CheckpointError, FlagError, InputDataError
from bert_tf.run.checks import (TRAINING_FILES, make_output_dir, require_input_file,
                              require_one_mode)
from bert_tf.xlnet.tasks.checks import require_positive_steps
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model
from bert_tf.training import loop
from bert_tf.training.predict import BatchPredictor, numpy_batches
from bert_tf.training.restore import (build_from_checkpoint, resolve_latest,
                                      restore_for_inference)
from bert_tf.training.precision import dtype_policy
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import XLNetConfig, check_spiece_matches_config, create_run_config
from bert_tf.xlnet.squad import XLNetSquad, qa_loss
from bert_tf.xlnet.tasks.args import XLNetSquadArgs
from bert_tf.xlnet.tasks import finetuning

PREDICTIONS_FILE = "predictions.json"
NBEST_FILE = "nbest_predictions.json"
NULL_ODDS_FILE = "null_odds.json"
EVAL_RESULTS_FILE = "eval_results.json"
# The official SQuAD 2.0 script's default --na-prob-thresh, for the official metrics.
OFFICIAL_NA_PROB_THRESH = 1.0

RESULT_KEYS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index",
               "cls_logits")


@dataclasses.dataclass
class XLNetSquadResult:
    """What :func:`run` did.

    Attributes:
      prepro_file: the train TFRecord ``--do_prepro`` wrote (or None); num_train_features:
        the training features written (0 when none was).
      train: the :class:`bert_tf.training.loop.TrainResult`, or None.
      weights_from: the checkpoint predicted with (or None).
      num_predict_examples, num_predict_features: prediction's counts (0 without it).
      predictions_file, nbest_file, null_odds_file: the files written (or None).
      eval_results: the original's ``Result`` values and the official metrics (dict, or
        None: no gold answers); eval_results_file: ``eval_results.json`` (or None).
    """

    prepro_file: Optional[str] = None
    num_train_features: int = 0
    train: Any = None
    weights_from: Optional[str] = None
    num_predict_examples: int = 0
    num_predict_features: int = 0
    predictions_file: Optional[str] = None
    nbest_file: Optional[str] = None
    null_odds_file: Optional[str] = None
    eval_results: Optional[Dict[str, Any]] = None
    eval_results_file: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_squad.py`` prints with XLNet's flags (bert_tf's summary): what it wrote
        and trained to, the eval values."""
        lines = []
        if self.prepro_file:
            lines.append(f"wrote {self.num_train_features} training features to "
                         f"{self.prepro_file}")
        if self.train is not None:
            lines.append(f"trained to global_step {self.train.global_step}: "
                         f"{self.train.checkpoint}")
        if self.predictions_file:
            lines.append(f"predicted {self.num_predict_examples} questions: "
                         f"{self.predictions_file}")
        if self.eval_results:
            lines.append("eval: " + ", ".join(f"{k} = {v}"
                                              for k, v in self.eval_results.items()))
        return lines


# ---------------------------------------------------------------------------------------------
# Checks (before anything is written)
# ---------------------------------------------------------------------------------------------

def check_window_flags(max_seq_length: int, doc_stride: int, max_query_length: int) -> None:
    """The window sizes must leave room for the paragraph (bert_tf; the original loops forever
    or skips pieces).

    Raises:
      FlagError: ``max_query_length < 1``; ``max_seq_length <= max_query_length + 3`` (no room
        for a paragraph piece next to a question of ``max_query_length`` pieces, two ``<sep>``
        and ``<cls>``); ``doc_stride < 1``; ``doc_stride`` larger than that paragraph window
        (the pieces between two windows would never be seen).
    """
    if max_query_length < 1:
        raise FlagError(f"--max_query_length={max_query_length} must be at least 1")
    window = max_seq_length - max_query_length - 3
    if window < 1:
        raise FlagError(
            f"--max_seq_length={max_seq_length} is too small for the question: it must be "
            f"greater than --max_query_length={max_query_length} + 3 (two <sep> and <cls>), "
            f"to leave room for the paragraph")
    if doc_stride < 1:
        raise FlagError(f"--doc_stride={doc_stride} must be at least 1")
    if doc_stride > window:
        raise FlagError(
            f"--doc_stride={doc_stride} is larger than the paragraph window of {window} pieces "
            f"(--max_seq_length={max_seq_length} - --max_query_length={max_query_length} - 3): "
            f"the pieces between two windows would never be seen; pass --doc_stride <= {window}")


def check_args(args: XLNetSquadArgs) -> None:
    """Flag checks: the modes and the paths they need, positive sizes, the window sizes.

    ``--do_prepro`` needs only ``--spiece_model_file``, ``--train_file`` and ``--output_dir``
    (the original returns before its other checks).

    Raises:
      FlagError: naming the flag.
    """
    check_tpu_flags(args)
    for name in ("spiece_model_file", "output_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required by XLNet's run_squad")
    check_window_flags(args.max_seq_length, args.doc_stride, args.max_query_length)
    if args.do_prepro:
        if not args.train_file:
            raise FlagError("--do_prepro needs --train_file")
        if args.num_proc < 1 or not 0 <= args.proc_id < args.num_proc:
            raise FlagError(f"--proc_id={args.proc_id} --num_proc={args.num_proc}: need "
                            "num_proc >= 1 and 0 <= proc_id < num_proc")
        return
    require_one_mode(do_train=args.do_train, do_predict=args.do_predict)
    if not args.model_config_path:
        raise FlagError("--model_config_path is required by XLNet's run_squad")
    if not args.model_dir:
        raise FlagError("--model_dir is required by XLNet's run_squad (the fine-tuned "
                        "checkpoints)")
    if args.do_predict:
        for name in ("predict_file", "predict_dir"):
            if not getattr(args, name):
                raise FlagError(f"--{name} is required with --do_predict")
    positive = ["n_best_size", "start_n_top", "end_n_top", "max_answer_length",
                "predict_batch_size", "train_batch_size", "iterations", "shuffle_buffer",
                "num_core_per_host"]
    require_positive_steps(args, positive)
    if args.max_save < 0:
        raise FlagError(f"--max_save={args.max_save}: must be >= 0 (0 keeps all)")
    if args.do_predict:
        require_input_file("predict_file", args.predict_file)


def load_dataset(path: str) -> List[Dict[str, Any]]:
    """The ``data`` list of a SQuAD JSON file.

    Raises:
      InputDataError: unreadable or malformed JSON, or another layout than SQuAD's (names the
        file and the place).
    """
    try:
        with tf.io.gfile.GFile(path, "r") as f:
            input_json = json.load(f)
    except (OSError, ValueError, tf.errors.OpError) as e:
        raise InputDataError(f"{path}: not a SQuAD JSON file ({e})") from e
    return check_squad_layout(input_json, path)


def scoring_mode(dataset: Sequence[Dict[str, Any]], path: str) -> bool:
    """Whether the predict file can be scored (SQuAD 2.0, spec 9.6): every question has an
    ``answers`` list. A question with an empty ``answers`` list is unanswerable only when the
    file says so with ``is_impossible``; without it, an unlabelled question and a question
    without an answer cannot be told apart.

    Returns:
      True when every question has ``answers``; False when none (or not all) has them (no
      scoring; the predictions are still written).

    Raises:
      InputDataError: a question with ``answers: []`` and no ``is_impossible`` (names the file
        and the question).
    """
    labelled = total = 0
    for article in dataset:
        for paragraph in article.get("paragraphs", []):
            for qa in paragraph.get("qas", []):
                total += 1
                answers = qa.get("answers")
                if isinstance(answers, list):
                    labelled += 1
                    if not answers and "is_impossible" not in qa:
                        raise InputDataError(
                            f"{path}: question {qa.get('id', '?')} has no answers and no "
                            "is_impossible: a SQuAD 2.0 file marks unanswerable questions "
                            "with \"is_impossible\": true (or drop \"answers\" for an "
                            "unlabelled file)")
    if labelled and labelled != total:
        logging.warning("%s: %d of %d questions have answers: no scoring", path, labelled, total)
    return bool(total) and labelled == total


# ---------------------------------------------------------------------------------------------
# Model
# ---------------------------------------------------------------------------------------------

def build_squad_model(config: XLNetConfig, args: XLNetSquadArgs, is_training: bool,
                      inference_only: bool = False) -> XLNetSquad:
    """An :class:`XLNetSquad` with the fine-tuning run config of ``args``, built on a
    ``[1, max_seq_length]`` dummy batch. Call under the strategy scope.

    ``--use_bfloat16`` builds it with Keras' ``mixed_bfloat16`` policy
    (:func:`bert_tf.training.precision.dtype_policy`): bfloat16 compute as the original's TPU
    path, float32 variables (checkpoints keep the original's float32 dtypes), float32 outputs
    and loss; ``inference_only`` (a model that only predicts): its matmul kernels held in
    bfloat16, cast once at the restore (issue 25)."""
    with dtype_policy("bfloat16" if args.use_bfloat16 else "float32",
                      inference_only=inference_only):
        model = XLNetSquad(config, create_run_config(is_training, True, args),
                           start_n_top=args.start_n_top, end_n_top=args.end_n_top)
    s = args.max_seq_length
    model({"input_ids": tf.zeros([1, s], tf.int32), "segment_ids": tf.zeros([1, s], tf.int32),
           "input_mask": tf.zeros([1, s], tf.float32), "p_mask": tf.zeros([1, s], tf.float32),
           "cls_index": tf.zeros([1], tf.int32)}, training=False)
    return model


def predict_raw_results(model: XLNetSquad, record_path: str, args: XLNetSquadArgs,
                        total: Optional[int] = None) -> List[postprocess.XLNetRawResult]:
    """Runs the beam heads over the eval TFRecord (Estimator.predict), one
    :class:`~bert_tf.xlnet.data.squad_postprocess.XLNetRawResult` per record in file order,
    values as Python floats of the float32 outputs (the original's ``float(x)``)."""
    predictor = BatchPredictor(model, RESULT_KEYS, input_keys=records.MODEL_INPUTS)
    results = []
    batches = numpy_batches(records.eval_dataset(record_path, args.max_seq_length,
                                                 args.predict_batch_size))
    for batch, out in predictor.predict(batches, total=total):
        for i, unique_id in enumerate(batch["unique_ids"]):
            results.append(postprocess.XLNetRawResult(
                unique_id=int(unique_id),
                start_top_log_probs=[float(x) for x in out["start_top_log_probs"][i].flat],
                start_top_index=[int(x) for x in out["start_top_index"][i].flat],
                end_top_log_probs=[float(x) for x in out["end_top_log_probs"][i].flat],
                end_top_index=[int(x) for x in out["end_top_index"][i].flat],
                cls_logits=float(out["cls_logits"][i])))
    return results


def evaluate_predictions(dataset: Sequence[Dict[str, Any]],
                         preds) -> Dict[str, float]:
    """The original's ``Result`` (threshold search, spec 9.6) followed by the official SQuAD
    2.0 metrics of ``predictions.json`` with ``null_odds.json`` at the official default
    threshold (:data:`OFFICIAL_NA_PROB_THRESH`): ``exact``, ``f1``, ``total``, ``HasAns_*``,
    ``NoAns_*`` (percentages; ``has_ans_*`` are fractions, as the original)."""
    result = postprocess.evaluate(dataset, preds)
    official = squad_metrics.evaluate_v2(dataset, preds.predictions, preds.null_odds,
                                         na_prob_thresh=OFFICIAL_NA_PROB_THRESH)
    for key, value in official.items():
        result.setdefault(key, value)
    return result


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def _output_names(args, flags) -> List[Tuple[str, Tuple[str, ...]]]:
    """``(flag, files)`` of each folder of ``flags``: the records and the features cache in
    ``--output_dir``, the checkpoint state in ``--model_dir``, the predictions in
    ``--predict_dir``."""
    names = {"output_dir": tuple(os.path.basename(p) for p in (
                 records.train_record_path(args),) + records.eval_cache_paths(args)),
             "model_dir": TRAINING_FILES,
             "predict_dir": (PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE, EVAL_RESULTS_FILE)}
    return [(flag, names[flag]) for flag in flags]


def _make_dirs(args, *flags: str) -> None:
    for flag, files in _output_names(args, flags):
        make_output_dir(getattr(args, flag), flag, files)


@dataclasses.dataclass
class _Run:
    """What the steps of :func:`run` share: the flags, model files, model and what was read."""

    args: XLNetSquadArgs
    sp: Any
    config: XLNetConfig
    init_checkpoint: Optional[str]
    strategy: tf.distribute.Strategy
    model: XLNetSquad
    name_map: Any
    load_fn: Any
    existing: List[str] = dataclasses.field(default_factory=list)
    train_files: List[str] = dataclasses.field(default_factory=list)
    eval_examples: Optional[List[data.XLNetSquadExample]] = None
    dataset: Optional[List[Dict[str, Any]]] = None
    scorable: bool = False
    warm: Any = None  # the LoadReport of the warm start done at the build
    restored: Any = None  # the Restored of a predict-only model, built from its checkpoint


def _empty_result() -> Dict[str, Any]:
    return {"prepro_file": None, "num_train_features": 0, "train": None, "weights_from": None,
            "num_predict_examples": 0, "num_predict_features": 0, "predictions_file": None,
            "nbest_file": None, "null_odds_file": None, "eval_results": None,
            "eval_results_file": None}


def _prepro(args: XLNetSquadArgs, sp, result: Dict[str, Any]) -> None:
    """``--do_prepro``: the train TFRecord of ``--proc_id`` (returns before the model flags
    matter, as the original)."""
    path = records.train_record_path(args, args.proc_id)
    _, result["num_train_features"] = records.write_train_records(args, sp, path, args.proc_id,
                                                                  args.num_proc)
    result["prepro_file"] = path


def _prepare(args: XLNetSquadArgs, sp, strategy) -> _Run:
    """Config, SentencePiece model against it, ``--init_checkpoint``, strategy and the model
    (training heads with ``--do_train``), checked; no file written."""
    config = XLNetConfig.from_json_file(args.model_config_path)
    check_spiece_matches_config(sp, config, args.spiece_model_file, args.model_config_path)
    init_checkpoint = resolve_latest(args.init_checkpoint, flag="--init_checkpoint")
    strategy = strategy or strategy_from_flags(args)

    def build():
        with strategy.scope():
            return build_squad_model(config, args, is_training=args.do_train,
                                     inference_only=not args.do_train)

    load_fn = functools.partial(checkpoint_map.load_xlnet_checkpoint, untie_r=config.untie_r)

    def restore(model):  # what _predict loads; nothing to load: _check_checkpoints says so
        if not (init_checkpoint or checkpoint_io.existing_checkpoints(args.model_dir)):
            return None
        return restore_for_inference(checkpoint_map.xlnet_variable_map(model), args.model_dir,
                                     init_checkpoint, load_fn=load_fn)

    # the weights created straight from the checkpoint, no random copy (issue 24)
    warm = restored = None
    if args.do_train:
        model, warm = finetuning.build_warm_started(build, init_checkpoint, config, args,
                                                    strategy, log_checkpoint_name=True)
    else:
        model, restored = build_from_checkpoint(build, restore, strategy)
    return _Run(args=args, sp=sp, config=config, init_checkpoint=init_checkpoint,
                strategy=strategy, model=model, warm=warm, restored=restored,
                name_map=checkpoint_map.xlnet_variable_map(model), load_fn=load_fn)


def _check_files(args: XLNetSquadArgs) -> Dict[str, Any]:
    """Checks the output names and the input files before the model is built (a bad predict
    file or output folder was found only after the checkpoint was read): the cached training
    records or ``--train_file``, the predict file.

    Returns:
      the :class:`_Run` fields read: ``train_files``; ``dataset``, ``scorable``,
      ``eval_examples`` with ``--do_predict``.

    Raises:
      FlagError, InputDataError: naming the flag or file.
    """
    for flag, files in _output_names(args, _output_flags(args)):
        check_output_names(getattr(args, flag), flag, files)  # before the caches are read
    found: Dict[str, Any] = {}
    if args.do_train:
        found["train_files"] = records.cached_train_files(args)
        if not found["train_files"] and not args.train_file:
            raise FlagError(f"no cached training records {records.train_record_glob(args)}: run "
                            "--do_prepro first or give --train_file")
        elif not found["train_files"]:
            records.read_train_examples(args.train_file, args.random_seed)  # bad file: fail now
    if args.do_predict:
        found["dataset"] = load_dataset(args.predict_file)
        found["scorable"] = scoring_mode(found["dataset"], args.predict_file)
        found["eval_examples"] = data.read_squad_examples(args.predict_file, is_training=False)
        if not found["eval_examples"]:
            raise InputDataError(f"--predict_file={args.predict_file}: no question")
    return found


def _output_flags(args: XLNetSquadArgs) -> Tuple[str, ...]:
    return ("output_dir", "model_dir") + (("predict_dir",) if args.do_predict else ())


def _check_checkpoints(r: _Run) -> None:
    """Checks the checkpoints against the model before any file is written, then creates the
    output folders.

    Raises:
      CheckpointError: naming the checkpoint or variable.
    """
    args = r.args
    r.existing = (checkpoint_io.existing_checkpoints(args.model_dir)
                  if tf.io.gfile.isdir(args.model_dir) else [])
    if r.existing:
        checkpoint_map.check_checkpoint_fits(r.name_map, r.existing[-1], r.config.untie_r,
                                             require_all=True)
    elif r.init_checkpoint:
        checkpoint_map.check_checkpoint_fits(r.name_map, r.init_checkpoint, r.config.untie_r)
    elif args.do_predict and not args.do_train:
        raise CheckpointError(
            f"--model_dir={args.model_dir} holds no checkpoint and no --init_checkpoint is "
            "given: nothing to predict with (the original silently predicts with fresh random "
            "weights here)")
    _make_dirs(args, *_output_flags(args))


def _train_on_records(r: _Run, result: Dict[str, Any]) -> None:
    """``--do_train``: the cached training records, else writes them from ``--train_file``
    (the original needs ``--do_prepro`` first), then trains (:func:`_train`)."""
    args = r.args
    if not r.train_files:
        path = records.train_record_path(args)
        logging.info("No cached training records %s (the original needs --do_prepro "
                     "first): writing %s from --train_file=%s now",
                     records.train_record_glob(args), path, args.train_file)
        _, result["num_train_features"] = records.write_train_records(args, r.sp, path)
        r.train_files = [path]
    logging.info("Training on %s", ", ".join(r.train_files))
    result["train"] = _train(r)


def _predict(r: _Run, result: Dict[str, Any]) -> None:
    """``--do_predict``: restores (newest checkpoint of ``--model_dir``, else
    ``--init_checkpoint``), runs the beam heads, writes the three prediction files and, when
    the predict file has answers, ``eval_results.json``."""
    args = r.args
    model, name_map = r.model, r.name_map
    if args.do_train:
        with r.strategy.scope():
            model = build_squad_model(r.config, args, is_training=False, inference_only=True)
        name_map = checkpoint_map.xlnet_variable_map(model)
    if not r.existing and not args.do_train:
        logging.info("--model_dir=%s holds no checkpoint: predicting with --init_checkpoint=%s "
                     "(the original ignores --init_checkpoint here and predicts with fresh "
                     "random weights)", args.model_dir, r.init_checkpoint)
    restored = r.restored or restore_for_inference(name_map, args.model_dir,
                                                   r.init_checkpoint, load_fn=r.load_fn)
    result["weights_from"] = restored.prefix

    features = records.eval_features(args, r.sp, r.eval_examples)
    results = predict_raw_results(model, records.eval_cache_paths(args)[0], args,
                                  total=len(features))
    preds = postprocess.compute_predictions(r.eval_examples, features, results,
                                            args.n_best_size, args.max_answer_length,
                                            args.start_n_top, args.end_n_top)
    paths = [os.path.join(args.predict_dir, name)
             for name in (PREDICTIONS_FILE, NBEST_FILE, NULL_ODDS_FILE)]
    postprocess.write_predictions(preds, *paths)
    result.update(num_predict_examples=len(r.eval_examples), num_predict_features=len(features),
                  predictions_file=paths[0], nbest_file=paths[1], null_odds_file=paths[2])
    if r.scorable:
        metrics = evaluate_predictions(r.dataset, preds)
        logging.info("Result | %s", "".join(f"{k} {v} | " for k, v in metrics.items()))
        eval_path = os.path.join(args.predict_dir, EVAL_RESULTS_FILE)
        atomic_write_text(eval_path, json.dumps(metrics, indent=4) + "\n")
        result.update(eval_results=metrics, eval_results_file=eval_path)
    else:
        logging.info("%s has no gold answers: no %s", args.predict_file, EVAL_RESULTS_FILE)


def run(args: XLNetSquadArgs, strategy: Optional[tf.distribute.Strategy] = None
        ) -> XLNetSquadResult:
    """Runs XLNet's run_squad: prepro, or train and/or predict (module docstring).

    Returns:
      An :class:`XLNetSquadResult`.

    Raises:
      FlagError, ConfigError, CheckpointError, InputDataError naming the flag, file, question
      or variable; raised before anything is written when the cause is in the flags, the
      input files, the config, the SentencePiece model or the checkpoints.
    """
    check_args(args)
    result = _empty_result()
    sp = load_sp_model(args.spiece_model_file)
    if args.do_prepro:
        _prepro(args, sp, result)
        return XLNetSquadResult(**result)
    found = _check_files(args)
    r = dataclasses.replace(_prepare(args, sp, strategy), **found)
    _check_checkpoints(r)
    if args.do_train:
        _train_on_records(r, result)
    if args.do_predict:
        _predict(r, result)
    return XLNetSquadResult(**result)


def _train(r: _Run):
    """Trains on ``r.train_files`` with the XLNet fine-tuning setup
    (:mod:`bert_tf.xlnet.tasks.finetuning`: warm start unless ``--model_dir`` holds
    checkpoints, XLNet's optimizer, the loop) and the SQuAD loss (spec 9.5); returns the
    TrainResult.

    Raises:
      InputDataError: a truncated or corrupt training record file (names the files).
    """
    args, strategy, train_files = r.args, r.strategy, r.train_files
    if r.warm is None:  # else loaded when the model was built
        finetuning.warm_start(r.name_map, r.init_checkpoint, r.config, bool(r.existing),
                              args.model_dir, log_checkpoint_name=True,
                              allow_partial=args.allow_partial_init_checkpoint)
    optimizer = finetuning.create_optimizer(args, strategy, r.name_map)
    batch = finetuning.global_train_batch_size(args, strategy)
    dataset = records.train_dataset(train_files, args.max_seq_length, batch,
                                    args.shuffle_buffer, args.random_seed)

    def loss_fn(m, features, labels):
        out = m(features, training=True)
        return qa_loss(out, labels["start_positions"], labels["end_positions"],
                       labels["is_impossible"])

    try:
        return loop.train(r.model, loss_fn, dataset, r.name_map,
                          finetuning.train_config(args, warm_started=bool(r.init_checkpoint)),
                          strategy=strategy, optimizer=optimizer)
    except tf.errors.DataLossError as e:
        first_line = (e.message or str(e)).strip().splitlines()[0]
        raise InputDataError(f"{', '.join(train_files)}: a training record file is truncated "
                             f"or corrupt ({first_line}); recreate it (--do_prepro or "
                             "--overwrite_data)") from e
