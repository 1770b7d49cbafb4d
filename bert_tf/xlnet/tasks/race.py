"""XLNet fine-tuning on RACE, 4-way multiple-choice reading comprehension (original XLNet
``run_race.py``, spec ``xlnet.md`` 3.17, 5.5, 10).

The root ``run_race.py``, with the original's flags::

    python run_race.py --do_train=True --do_eval=True --eval_split=dev --data_dir=RACE \
      --output_dir=proc_data/race --model_dir=exp/race --init_checkpoint=$LARGE/xlnet_model.ckpt \
      --model_config_path=$LARGE/xlnet_config.json --spiece_model_file=$LARGE/spiece.model \
      --max_seq_length=512 --max_qa_length=128 --uncased=False --train_batch_size=8 \
      --train_steps=12000 --warmup_steps=1000 --learning_rate=2e-5 --eval_batch_size=32

What it reads and writes, as the original:

* ``--data_dir``: ``<split>/{middle,high}/*`` JSON articles (``article``, ``questions``,
  ``options``, ``answers``), one example per question (:mod:`bert_tf.xlnet.data.race`);
  ``--high_only`` / ``--middle_only`` keep one level;
* ``--output_dir``: the TFRecords ``[high.|middle.]{spm}.len-{S}.{split}.tf_record``
  (reused when they exist, unless ``--overwrite_data``); the eval file is padded with
  padding examples to a multiple of ``--eval_batch_size`` ("Num of eval samples" is logged
  before the padding);
* ``--model_dir``: ``model.ckpt-N`` in the original layout (``model/transformer/...``,
  ``model/sequnece_summary/summary/*``, ``logits/dense/*``, TF1 Adam slots, ``global_step``);
  training (the original optimizer, :func:`bert_tf.xlnet.optimization.
  create_xlnet_optimizer`) resumes from the newest one;
* ``--do_eval``: ``eval_accuracy`` and ``eval_loss`` (weighted by ``is_real_example``), the
  Estimator's ``loss`` (mean of the batch losses, padding included) and ``global_step``,
  logged as ``Eval | ...`` and written to ``<model_dir>/eval_results.txt`` (``key = value``,
  as XLNet's run_classifier path here).

Where the original breaks, bert_tf does better and says so in the log:

* files are read in sorted order (the original's ``tf.gfile.ListDirectory`` order is the
  file system's), and the training examples are shuffled with a fixed seed (the original
  used Python's unseeded ``random``), seed ``--random_seed``;
* ``--do_eval`` restores the newest checkpoint of ``--model_dir``, else ``--init_checkpoint``
  (the original reached the same weights only through ``init_from_checkpoint``), else warns
  that it evaluates randomly initialized weights (the original did so silently);
* ``--original_context_mutation=False`` builds every choice from the clean context (the
  original appends each choice to the context list in place, golden README surprise 7; the
  default keeps it so that published numbers reproduce); its records are cached under
  ``...{split}.clean_context.tf_record`` so that the two layouts never mix;
* a training file is named with the ``high.``/``middle.`` prefix too (the original prefixed
  only the eval file, so a ``--high_only`` run reused the full training file);
* bad input fails before any file is written, in one line: a RACE file that is not JSON,
  lacks ``answers``/``options``/``questions``/``article``, has a question without 4 options
  or an answer letter outside A-D; ``--max_seq_length`` too small for a question; a BERT
  checkpoint; both ``--high_only`` and ``--middle_only``; ``--train_steps`` not above
  ``--warmup_steps``; a cached TFRecord that does not fit the run.
"""

import dataclasses
import functools
import os
import random
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.atomic_files import check_output_names
from bert_tf import checkpoint_io
from bert_tf.data import record_cache
from bert_tf.xlnet.data import race as data
from bert_tf.xlnet.data import race_records as records
from bert_tf.errors import FlagError, InputDataError
from bert_tf.run.checks import EVAL_FOLDERS, TRAINING_FILES, make_output_dir, require_one_mode
from bert_tf.xlnet.tasks.checks import require_positive_steps
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model, tokenize_fn
from bert_tf.training import metrics
from bert_tf.training.eval_results import EVAL_RESULTS_FILE, write_eval_results
from bert_tf.training.predict import BatchPredictor, numpy_batches
from bert_tf.training.precision import dtype_policy
from bert_tf.training.restore import (SOURCE_INIT_CHECKPOINT, SOURCE_INITIAL, Restored,
                                      build_for_inference, resolve_latest,
                                      restore_for_inference)
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import XLNetConfig, check_spiece_matches_config, create_run_config
from bert_tf.xlnet.layers import SUMMARY_TYPES
from bert_tf.xlnet.race import XLNetRace
from bert_tf.xlnet.tasks.args import XLNetRaceArgs
from bert_tf.xlnet.tasks import finetuning


# The order of the original's "Eval | ..." line (Estimator.evaluate's dict).
EVAL_KEYS = ("eval_accuracy", "eval_loss", "loss", "global_step")


@dataclasses.dataclass
class XLNetRaceResult:
    """What :func:`run` did.

    Attributes:
      train: the :class:`bert_tf.training.loop.TrainResult`, or None.
      warm_start: the :class:`bert_tf.checkpoint_io.LoadReport` of ``--init_checkpoint`` when
        training started from it, else None.
      eval: the :func:`evaluate` dict (:data:`EVAL_KEYS`), or None.
      train_file, eval_file: the TFRecords used (paths), or None.
    """

    train: Any = None
    warm_start: Optional[checkpoint_io.LoadReport] = None
    eval: Optional[Dict[str, Any]] = None
    train_file: Optional[str] = None
    eval_file: Optional[str] = None

    def summary_lines(self) -> List[str]:
        """What ``run_race.py`` prints (bert_tf's summary): where training ended and the eval
        result."""
        lines = []
        if self.train is not None:
            lines.append(f"trained to global_step {self.train.global_step}: "
                         f"{self.train.checkpoint}")
        if self.eval is not None:
            lines.append("eval: " + ", ".join(f"{k} = {self.eval[k]}" for k in EVAL_KEYS))
        return lines


# ---------------------------------------------------------------------------------------------
# Checks (before anything is written)
# ---------------------------------------------------------------------------------------------

def check_args(args: XLNetRaceArgs) -> None:
    """Flag checks of the original (one mode) plus bert_tf's (required paths, positive sizes,
    one level filter at most).

    Raises:
      FlagError: naming the flag.
    """
    check_tpu_flags(args)
    require_one_mode(do_train=args.do_train, do_eval=args.do_eval)
    for name in ("model_config_path", "spiece_model_file", "data_dir", "output_dir",
                 "model_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required by run_race")
    if args.high_only and args.middle_only:
        raise FlagError("--high_only and --middle_only are both set: give at most one (the "
                        "original silently read no articles)")
    if args.do_train and args.do_eval and args.eval_split == "train":
        raise FlagError("--eval_split=train with --do_train: the eval records (padded to a "
                        "multiple of --eval_batch_size) and the shuffled training records "
                        "would share one cached file; evaluate the train split in a separate "
                        "run with another --output_dir")
    if args.summary_type not in SUMMARY_TYPES:
        raise FlagError(f"--summary_type={args.summary_type}: expected one of "
                        f"{', '.join(SUMMARY_TYPES)}")
    if args.max_seq_length < 4:
        raise FlagError(f"--max_seq_length={args.max_seq_length}: must be at least 4 "
                        "(<sep> qa <sep> <cls>)")
    require_positive_steps(args, ("max_qa_length", "train_batch_size", "eval_batch_size",
                                  "iterations", "shuffle_buffer", "num_core_per_host"))
    if args.max_save < 0:
        raise FlagError(f"--max_save={args.max_save}: must be >= 0 (0 keeps all)")


def check_some_examples(examples: List[data.RaceExample], args: XLNetRaceArgs,
                        split: str) -> None:
    """A split to train or evaluate on needs at least one question.

    Raises:
      InputDataError: names the folders read and the level flags.
    """
    if examples:
        return
    levels = [lv for lv in data.LEVELS if not ((lv == "middle" and args.high_only)
                                                or (lv == "high" and args.middle_only))]
    folders = ", ".join(os.path.join(args.data_dir, split, lv) for lv in levels)
    raise InputDataError(f"no RACE questions in {folders}: nothing to "
                         f"{'train on' if split == 'train' else 'evaluate'}")


def check_questions_fit(examples: List[data.RaceExample], sp_model, args: XLNetRaceArgs) -> None:
    """Every question + option (its last ``--max_qa_length`` tokens) leaves room in
    ``--max_seq_length`` for the 3 symbols, checked before any file is written (only
    tokenized when ``max_seq_length - 3 < max_qa_length``, else it always fits).

    Raises:
      InputDataError: names the file, the question and the flag.
    """
    room = args.max_seq_length - 3
    if room >= args.max_qa_length:
        return
    for ex in examples:
        for qa in ex.qa_list:
            n = min(len(tokenize_fn(sp_model, qa, args.uncased)), args.max_qa_length)
            if n > room:
                raise InputDataError(f"{ex.path}: question {ex.question_index}: "
                                     f"--max_seq_length={args.max_seq_length} is too small for "
                                     f"its {n} question tokens plus 3 symbols")


# ---------------------------------------------------------------------------------------------
# Model, records, metrics
# ---------------------------------------------------------------------------------------------

def build_race_model(config: XLNetConfig, args: XLNetRaceArgs, is_training: bool,
                     inference_only: bool = False) -> XLNetRace:
    """An :class:`bert_tf.xlnet.race.XLNetRace` with the fine-tuning run config of ``args``
    (no memory), built on a ``[1, 4 * max_seq_length]`` dummy batch. Call under the strategy
    scope.

    ``--use_bfloat16`` builds it with Keras' ``mixed_bfloat16`` policy
    (:func:`bert_tf.training.precision.dtype_policy`): bfloat16 compute as the original's TPU
    path, float32 variables (checkpoints keep the original's float32 dtypes), float32 logits;
    ``inference_only`` (the eval model): its matmul kernels held in bfloat16, cast once at the
    restore (issue 25)."""
    with dtype_policy("bfloat16" if args.use_bfloat16 else "float32",
                      inference_only=inference_only):
        model = XLNetRace(config, create_run_config(is_training, True, args),
                          summary_type=args.summary_type, use_summ_proj=args.use_summ_proj)
    n = data.NUM_CHOICES * args.max_seq_length
    model({"input_ids": tf.zeros([1, n], tf.int32), "segment_ids": tf.zeros([1, n], tf.int32),
           "input_mask": tf.ones([1, n], tf.float32)}, training=False)
    return model


def record_path(args: XLNetRaceArgs, split: str) -> str:
    """``<output_dir>/[high.|middle.]{spm}.len-{S}.{split}.tf_record``
    (:func:`bert_tf.xlnet.data.race.record_file_name`); ``.clean_context.tf_record`` with
    ``--original_context_mutation=False``."""
    name = data.record_file_name(os.path.basename(args.spiece_model_file), args.max_seq_length,
                                 split, args.high_only, args.middle_only)
    if not args.original_context_mutation:
        name = name[:-len(".tf_record")] + ".clean_context.tf_record"
    return os.path.join(args.output_dir, name)


def convert(example: data.RaceExample, sp_model, args: XLNetRaceArgs) -> Dict[str, list]:
    """:func:`bert_tf.xlnet.data.race.convert_example` with the run's flags: ``input_ids``,
    ``segment_ids``, ``input_mask`` lists of ``4 * max_seq_length``, ``label_id``,
    ``is_real_example``."""
    return data.convert_example(example, sp_model, args.max_seq_length, args.max_qa_length,
                                args.uncased, mutate_context=args.original_context_mutation)


def write_records(examples: List[data.RaceExample], sp_model, args: XLNetRaceArgs, path: str,
                  num_padding: int = 0) -> int:
    """Converts ``examples`` (then ``num_padding`` padding features) and writes them to
    ``path`` atomically (original ``file_based_convert_examples_to_features``); returns the
    record count."""
    logging.info("Start writing tfrecord %s.", path)

    def features():
        for i, example in enumerate(examples):
            if i % 10000 == 0:
                logging.info("Writing example %d of %d", i, len(examples) + num_padding)
            yield convert(example, sp_model, args)
        for _ in range(num_padding):
            yield data.padding_feature(args.max_seq_length)

    return data.write_feature_records(features(), path)


def sample_ids(examples: List[data.RaceExample], sp_model, args: XLNetRaceArgs) -> List[list]:
    """``input_ids`` of the first and the last example (for the cached-file check)."""
    picked = examples[:1] + examples[-1:] if len(examples) > 1 else examples
    return [convert(e, sp_model, args)["input_ids"] for e in picked]


def eval_metrics(per_example_loss: np.ndarray, logits: np.ndarray, labels: np.ndarray,
                 weights: np.ndarray) -> Dict[str, float]:
    """The original ``metric_fn`` of run_race, weighted by ``is_real_example``.

    Args:
      per_example_loss: float32 ``[N]``; logits: float32 ``[N, 4]``; labels: int ``[N]``
      (0-3); weights: ``[N]`` is_real_example.

    Returns:
      ``eval_accuracy`` (argmax == label) and ``eval_loss``, Python floats.
    """
    return {"eval_accuracy": metrics.accuracy(logits, labels, weights),
            "eval_loss": metrics.weighted_mean(per_example_loss, weights)}


def _build_eval_model(config: XLNetConfig, args: XLNetRaceArgs,
                      init_checkpoint: Optional[str]) -> Tuple[XLNetRace, Restored]:
    """The eval model, built empty and created from the weights :func:`evaluate` uses
    (:func:`bert_tf.training.restore.build_for_inference`, issue 24): ``(model, Restored)``."""
    def build():
        with tf.distribute.get_strategy().scope():
            return build_race_model(config, args, is_training=False, inference_only=True)

    return build_for_inference(
        build, checkpoint_map.xlnet_variable_map, args.model_dir, init_checkpoint,
        load_fn=functools.partial(checkpoint_map.load_xlnet_checkpoint, untie_r=config.untie_r))


def evaluate(model: XLNetRace, config: XLNetConfig, eval_file: str, args: XLNetRaceArgs,
             init_checkpoint: Optional[str], restored: Optional[Restored] = None
             ) -> Dict[str, Any]:
    """Restores and evaluates (the original's ``estimator.evaluate``); ``restored``: the
    weights the model was built with (:func:`_build_eval_model`), then nothing is loaded.

    Weights: the newest ``model.ckpt-N`` of ``--model_dir``, else ``init_checkpoint``, else
    the initial ones with a warning (:func:`bert_tf.training.restore.restore_for_inference`).
    Batches of ``--eval_batch_size`` (the last partial one dropped, as the original) run
    through :class:`bert_tf.training.predict.BatchPredictor` with the per-example loss
    computed in the same step.

    Returns:
      dict: ``eval_accuracy``, ``eval_loss`` (:func:`eval_metrics`), ``loss`` (mean of the
      batch losses, padding included, as the Estimator reports it), ``global_step``.

    Raises:
      CheckpointError: a checkpoint that does not fit the model (names variable / shapes).
    """
    restored = restored or restore_for_inference(
        checkpoint_map.xlnet_variable_map(model), args.model_dir, init_checkpoint,
        load_fn=functools.partial(checkpoint_map.load_xlnet_checkpoint, untie_r=config.untie_r))
    if restored.source == SOURCE_INIT_CHECKPOINT:
        logging.info("evaluating the weights of --init_checkpoint (no checkpoint in "
                     "--model_dir=%s; the original reached the same values only through "
                     "init_from_checkpoint)", args.model_dir)
    if restored.source == SOURCE_INITIAL:
        logging.warning("evaluating randomly initialized weights: the metrics mean nothing "
                        "(the original did the same without a word); train first "
                        "(--do_train) or give --init_checkpoint")
    predictor = BatchPredictor(model, ["logits"], per_example_loss_fn=lambda out, labels:
                               model.task_loss(out["logits"], labels)[0])
    dataset = records.eval_dataset(eval_file, args.max_seq_length, args.eval_batch_size)
    logits, losses, labels, weights, totals = [], [], [], [], []
    for batch, out in predictor.predict(numpy_batches(dataset), name="eval"):
        logits.append(out["logits"])
        losses.append(out["per_example_loss"])
        labels.append(batch["label_ids"])
        weights.append(batch["is_real_example"])
        totals.append(float(tf.reduce_mean(out["per_example_loss"]).numpy()))
    if not totals:
        raise InputDataError(f"{eval_file}: fewer records than --eval_batch_size="
                             f"{args.eval_batch_size}: nothing to evaluate")
    result = eval_metrics(np.concatenate(losses), np.concatenate(logits),
                          np.concatenate(labels), np.concatenate(weights))
    result["loss"] = float(np.mean(totals))
    result["global_step"] = restored.global_step
    return result


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------

def _use_cache(path: str, overwrite: bool) -> bool:
    if tf.io.gfile.exists(path) and not overwrite:
        logging.info("Reusing the cached %s (--overwrite_data=True rewrites it)", path)
        return True
    return False


@dataclasses.dataclass
class _Run:
    """What the steps of :func:`run` share: the flags, model files, model and examples."""

    args: XLNetRaceArgs
    config: XLNetConfig
    sp: Any
    init_checkpoint: Optional[str]
    strategy: tf.distribute.Strategy
    model: XLNetRace
    name_map: Any
    train_file: str
    eval_file: str
    existing: List[str] = dataclasses.field(default_factory=list)
    train_examples: Optional[List[data.RaceExample]] = None
    eval_examples: Optional[List[data.RaceExample]] = None
    train_fingerprint: Optional[Dict[str, Any]] = None
    eval_fingerprint: Optional[Dict[str, Any]] = None
    warm: Optional[checkpoint_io.LoadReport] = None  # the warm start done at the build
    restored: Optional[Restored] = None  # the weights an eval-only model was built with


def _prepare(args: XLNetRaceArgs, strategy) -> _Run:
    """Flags, config, SentencePiece model against it, ``--init_checkpoint``, strategy, the
    training model and the record file names, checked; no file written."""
    check_args(args)
    config = XLNetConfig.from_json_file(args.model_config_path)
    sp = load_sp_model(args.spiece_model_file)
    check_spiece_matches_config(sp, config, args.spiece_model_file, args.model_config_path)
    init_checkpoint = resolve_latest(args.init_checkpoint, flag="--init_checkpoint")
    if not args.original_context_mutation:
        logging.info("--original_context_mutation=False: every choice from the clean context "
                     "(the original's in-place mutation is off; numbers differ from its)")
    strategy = strategy or strategy_from_flags(args)

    def build():
        with strategy.scope():
            return build_race_model(config, args, is_training=True)

    # the weights created straight from the checkpoint, no random copy (issue 24): a warm
    # start; without training the eval model, from the checkpoint it evaluates
    warm = restored = None
    if args.do_train:
        model, warm = finetuning.build_warm_started(build, init_checkpoint, config, args,
                                                    strategy)
    else:
        model, restored = _build_eval_model(config, args, init_checkpoint)
    return _Run(args=args, config=config, sp=sp, init_checkpoint=init_checkpoint,
                strategy=strategy, model=model, warm=warm, restored=restored,
                name_map=checkpoint_map.xlnet_variable_map(model),
                train_file=record_path(args, "train"),
                eval_file=record_path(args, args.eval_split))


def _check_checkpoints(r: _Run) -> None:
    """The newest checkpoint of ``--model_dir`` (else ``--init_checkpoint``) against the
    model, before any file is written.

    Raises:
      CheckpointError: a checkpoint that does not fit (names variable / shapes), a BERT one.
    """
    r.existing = checkpoint_io.existing_checkpoints(r.args.model_dir)
    if r.existing:
        checkpoint_map.check_checkpoint_fits(r.name_map, r.existing[-1], r.config.untie_r,
                                             require_all=True)
    elif r.init_checkpoint:
        checkpoint_map.check_checkpoint_fits(r.name_map, r.init_checkpoint, r.config.untie_r)


def _read_examples(r: _Run) -> None:
    """Reads and checks the examples of each split the run uses (the training ones shuffled
    with ``--random_seed``) and the cached TFRecords, then creates the output folders.

    Raises:
      InputDataError: bad RACE files, no question, a question too long for
        ``--max_seq_length``; FlagError: a cached TFRecord that does not fit the run, a folder
        that cannot be created.
    """
    args, sp = r.args, r.sp
    train_file, eval_file = r.train_file, r.eval_file
    # what each folder will hold: the records; the checkpoint state, eval_results.txt, eval/
    outputs = {"output_dir": ((os.path.basename(train_file), os.path.basename(eval_file)), ()),
               "model_dir": ((EVAL_RESULTS_FILE,) + TRAINING_FILES, EVAL_FOLDERS)}
    for flag, (files, folders) in outputs.items():  # before the caches are read
        check_output_names(getattr(args, flag), flag, files, folders)
    if args.do_train:
        train_examples = data.read_race_examples(args.data_dir, "train", args.high_only,
                                                 args.middle_only)
        check_some_examples(train_examples, args, "train")
        check_questions_fit(train_examples, sp, args)
        random.Random(args.random_seed).shuffle(train_examples)
        r.train_fingerprint = records.cache_fingerprint(args, train_examples, "train")
        records.check_cached_records(train_file, "train", args.max_seq_length,
                                     len(train_examples), args.overwrite_data,
                                     sample_input_ids=sample_ids(train_examples, sp, args),
                                     fingerprint=r.train_fingerprint)
        r.train_examples = train_examples
    if args.do_eval:
        eval_examples = data.read_race_examples(args.data_dir, args.eval_split, args.high_only,
                                                args.middle_only)
        check_some_examples(eval_examples, args, args.eval_split)
        check_questions_fit(eval_examples, sp, args)
        r.eval_fingerprint = records.cache_fingerprint(args, eval_examples, args.eval_split)
        records.check_cached_records(eval_file, args.eval_split, args.max_seq_length,
                                     len(eval_examples), args.overwrite_data,
                                     eval_batch_size=args.eval_batch_size,
                                     sample_input_ids=sample_ids(eval_examples, sp, args),
                                     fingerprint=r.eval_fingerprint)
        r.eval_examples = eval_examples
    for flag, (files, folders) in outputs.items():
        make_output_dir(getattr(args, flag), flag, files, folders)


def _train(r: _Run, result: XLNetRaceResult) -> None:
    """Writes the training TFRecord (unless cached), warm-starts from ``--init_checkpoint``
    (or resumes) and trains with the original optimizer."""
    args, train_file = r.args, r.train_file
    logging.info("Num of train samples: %d (shuffled with --random_seed=%d; the "
                 "original's shuffle was unseeded)", len(r.train_examples), args.random_seed)
    if not _use_cache(train_file, args.overwrite_data):
        write_records(r.train_examples, r.sp, args, train_file)
        record_cache.write_fingerprint(train_file, r.train_fingerprint)
    result.train_file = train_file
    batch = finetuning.global_train_batch_size(args, r.strategy)
    dataset = records.train_dataset(train_file, args.max_seq_length, batch,
                                    args.shuffle_buffer, seed=args.random_seed)
    result.train, report = finetuning.train_with_xlnet_optimizer(
        r.model, r.name_map, dataset, args, r.strategy, r.config, r.init_checkpoint,
        bool(r.existing), warm=r.warm)
    if report is not None:
        result.warm_start = report


def _evaluate_split(r: _Run, result: XLNetRaceResult) -> None:
    """Writes the padded eval TFRecord (unless cached), evaluates (:func:`evaluate`), logs
    ``Eval | ...`` and writes ``<model_dir>/eval_results.txt``."""
    args, eval_file = r.args, r.eval_file
    logging.info("Num of eval samples: %d", len(r.eval_examples))
    num_padding = -len(r.eval_examples) % args.eval_batch_size
    if not _use_cache(eval_file, args.overwrite_data):
        write_records(r.eval_examples, r.sp, args, eval_file, num_padding)
        record_cache.write_fingerprint(eval_file, r.eval_fingerprint)
    result.eval_file = eval_file
    eval_model, restored = (r.model, r.restored) if r.restored else _build_eval_model(
        r.config, args, r.init_checkpoint)
    ret = evaluate(eval_model, r.config, eval_file, args, r.init_checkpoint, restored)
    logging.info("=" * 80)
    logging.info("Eval | %s", "".join(f"{k} {ret[k]} | " for k in EVAL_KEYS))
    logging.info("=" * 80)
    path = write_eval_results(args.model_dir, ret)
    logging.info("Wrote %s", path)
    result.eval = ret


def run(args: XLNetRaceArgs, strategy: Optional[tf.distribute.Strategy] = None
        ) -> XLNetRaceResult:
    """Runs XLNet's run_race: train, then evaluate (module docstring).

    Returns:
      An :class:`XLNetRaceResult`.

    Raises:
      FlagError, ConfigError, CheckpointError, InputDataError naming the flag, file, question
      or variable; raised before anything is written when the cause is in the flags, config,
      SentencePiece model, checkpoints or data.
    """
    r = _prepare(args, strategy)
    _check_checkpoints(r)
    _read_examples(r)
    result = XLNetRaceResult()
    if args.do_train:
        _train(r, result)
    if args.do_eval:
        _evaluate_split(r, result)
    return result
