"""Start-up checks shared by XLNet's fine-tuning task scripts (classifier, RACE, SQuAD), raised
before any record is written (bert_tf; the spine's checks are :mod:`bert_tf.run.checks`)."""

from bert_tf.errors import FlagError
from bert_tf.xlnet.optimization import XLNetLearningRate


def require_positive_steps(args, names) -> None:
    """The XLNet fine-tuning scripts' number checks: each flag of ``names`` >= 1,
    ``--train_steps`` >= 1 with ``--do_train``, ``--save_steps`` unset or >= 1, and with
    ``--do_train`` the learning-rate schedule's own checks
    (:class:`bert_tf.xlnet.optimization.XLNetLearningRate`: ``--decay_method``,
    ``--warmup_steps`` >= 0 and below ``--train_steps``), so that they fail before any record
    is written rather than when the optimizer is built.

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
