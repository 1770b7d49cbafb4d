"""Start-up checks shared by the BERT task scripts, raised before any work is done.

Mirrors the checks at the top of the original `run_classifier.main` and `run_squad.
validate_flags_or_throw` (spec `bert.md` 8.1, 9.1), each as a :class:`bert_tf.errors.BertTfError`
naming the flag or file, plus the bert_tf checks the original lacked (cased vocab with
`do_lower_case`, a writable `output_dir`: :func:`bert_tf.atomic_files.make_output_dir`).
"""

from bert_tf.atomic_files import make_output_dir  # noqa: F401  (re-exported: the tasks' check)
from bert_tf.errors import FlagError, InputDataError
from absl import logging

from bert_tf.tokenization.wordpiece import (FullTokenizer, check_vocab_matches_case,
                                            validate_case_matches_checkpoint, vocab_looks_cased)

# What every training run writes in its folder besides the step-named checkpoint files: the
# checkpoint state file (``tf.train.CheckpointManager``'s ``checkpoint``), for the ``files`` of
# make_output_dir; and what an evaluation writes: the summaries' folder
# (``bert_tf.training.summaries.EVAL_SUBDIR``; tests/run/test_checks.py pins the two equal),
# for its ``folders``.
TRAINING_FILES = ("checkpoint",)
EVAL_FOLDERS = ("eval",)


def load_tokenizer(vocab_file: str, do_lower_case: bool, init_checkpoint: str = None) -> FullTokenizer:
    """The original case check against the checkpoint name, then the vocab and our case check.

    Raises:
      CaseMismatchError (a FlagError): ``do_lower_case`` contradicts a released checkpoint's
        name or a cased vocab. ConfigError: unreadable vocab.
    """
    validate_case_matches_checkpoint(do_lower_case, init_checkpoint or "")
    tokenizer = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    check_vocab_matches_case(tokenizer.vocab, do_lower_case, vocab_file)
    if not do_lower_case and not vocab_looks_cased(tokenizer.vocab):
        logging.warning("--do_lower_case=False with an uncased vocab (%s): capitalised words will "
                        "become [UNK]; uncased models need --do_lower_case=True", vocab_file)
    return tokenizer


def warn_if_vocab_smaller(num_tokens: int, vocab: str, vocab_size: int,
                          config_file: str) -> None:
    """Warns when the vocabulary ``vocab`` (its file, for the message) has fewer tokens than
    the config's ``vocab_size`` (bert_tf: the original, and bert_tf before, ran silently with
    e.g. a 15-token vocab against a 30,522-token model: every word [UNK], [CLS]/[SEP] on the
    wrong ids). A larger vocabulary is refused by the tasks."""
    if num_tokens < vocab_size:
        logging.warning("%s has %d tokens but %s says vocab_size=%d: a vocabulary of another "
                        "model? (the token ids would not be the ones the checkpoint learned)",
                        vocab, num_tokens, config_file, vocab_size)


def require_one_mode(**modes: bool) -> None:
    """Raises FlagError unless one of the ``do_*`` flags is set (original message)."""
    if not any(modes.values()):
        names = ", ".join(f"`{k}`" for k in modes)
        raise FlagError(f"At least one of {names} must be True.")


def require_input_file(flag: str, path: str) -> None:
    """An input file flag must name a file: one line for a missing path and one for a folder
    (``--predict_file=<folder>`` said "file not found", issue 15).

    Raises:
      InputDataError: ``--<flag>=<path>: file not found`` or ``--<flag>=<path> is a folder,
        not a file``.
    """
    import tensorflow as tf  # tf.io.gfile: local and remote (gs://) paths

    if tf.io.gfile.isdir(path):
        raise InputDataError(f"--{flag}={path} is a folder, not a file")
    if not tf.io.gfile.exists(path):
        raise InputDataError(f"--{flag}={path}: file not found")
