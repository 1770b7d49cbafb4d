"""Start-up checks shared by XLNet's fine-tuning task scripts (classifier, RACE, SQuAD), raised
before any record is written (bert_tf; the spine's checks are :mod:`bert_tf.run.checks`)."""

import os

from bert_tf.atomic_files import check_output_names, make_output_dir
from bert_tf.errors import FlagError
from bert_tf.run.checks import EVAL_FOLDERS, TRAINING_FILES
from bert_tf.training.eval_results import EVAL_RESULTS_FILE
from bert_tf.xlnet.optimization import XLNetLearningRate, check_optimizer_flags


def require_positive_steps(args, names) -> None:
    """The XLNet fine-tuning scripts' number checks: each flag of ``names`` >= 1,
    ``--train_steps`` >= 1 with ``--do_train``, ``--save_steps`` unset or >= 1, and with
    ``--do_train`` the learning-rate schedule's own checks
    (:class:`bert_tf.xlnet.optimization.XLNetLearningRate`: ``--decay_method``,
    ``--warmup_steps`` >= 0 and below ``--train_steps``) and the optimizer's
    (:func:`bert_tf.xlnet.optimization.check_optimizer_flags`), so that they fail before any
    record is written rather than when the optimizer is built.

    Raises:
      FlagError: naming the flag and its value.
    """
    for name in names:
        if getattr(args, name) < 1:
            raise FlagError(f"--{name}={getattr(args, name)}: must be positive")
    if args.do_train and args.train_steps < 1:
        raise FlagError(f"--train_steps={args.train_steps}: must be positive")
    if args.save_steps is not None and args.save_steps < 1:
        raise FlagError(f"--save_steps={args.save_steps}: must be positive (or unset)")
    if args.do_train:
        XLNetLearningRate(args.learning_rate, args.train_steps, args.warmup_steps,
                          args.decay_method, args.min_lr_ratio)
        check_optimizer_flags(args.weight_decay, args.clip, args.adam_epsilon)


def check_output_folders(args, outputs, make: bool = False) -> None:
    """Checks (``make``: creates, :func:`bert_tf.atomic_files.make_output_dir`) each output
    folder of a fine-tuning run before any work: ``outputs`` is ``[(flag, files, folders)]``,
    the names the run writes in ``--<flag>`` (a folder named like one of ``files``, or a file
    named like one of ``folders``, is refused; :func:`bert_tf.atomic_files.check_output_names`).

    Raises:
      FlagError: naming the flag and the path in the way.
    """
    for flag, files, folders in outputs:
        (make_output_dir if make else check_output_names)(getattr(args, flag), flag, files,
                                                          folders)


def classifier_outputs(args, record_files, task_name: str):
    """``[(flag, files, folders)]`` of XLNet's run_classifier: the records (``record_files``,
    paths) in ``--output_dir``; the checkpoint state, ``eval_results.txt`` and the ``eval``
    summaries in ``--model_dir``; ``<task>.tsv`` and ``<task>.logits.json`` in
    ``--predict_dir`` with ``--do_predict``."""
    outputs = [("output_dir", tuple(os.path.basename(f) for f in record_files), ()),
               ("model_dir", (EVAL_RESULTS_FILE,) + TRAINING_FILES, EVAL_FOLDERS)]
    if args.do_predict:
        outputs.append(("predict_dir", (f"{task_name}.tsv", f"{task_name}.logits.json"), ()))
    return outputs
