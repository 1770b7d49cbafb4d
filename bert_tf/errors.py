"""Exceptions for bad user input.

Every error a user can cause (a bad file, a flag that does not fit the checkpoint...) is raised
as a subclass of :class:`BertTfError` where its cause is known, with the file, line, flag or
variable in the message. Root scripts catch :class:`BertTfError` and print its message as one
line before exiting with status 1 (see :func:`bert_tf.flags.run_main`).
"""


class BertTfError(Exception):
    """Base class of the errors caused by user input (files, flags, checkpoints)."""


class ConfigError(BertTfError):
    """A config file is missing, unreadable or inconsistent (e.g. with a flag)."""


class CheckpointError(BertTfError):
    """A checkpoint is missing, unreadable, or does not fit the model config.

    Shape mismatches name the variable and both shapes.
    """


class InputDataError(BertTfError):
    """An input data file (text, TSV, JSON, TFRecord) is malformed; names file and line."""


class FlagError(BertTfError):
    """A flag value is invalid or contradicts another flag or a file."""


class OutputPathError(BertTfError):
    """An output path cannot be written: a folder where a file is expected, a missing or
    non-folder parent, no permission (names the path)."""


class StdoutWriteError(OutputPathError):
    """Standard output cannot be written (``> /dev/full``, a closed pipe); raised by the
    guard :func:`bert_tf.flags.run_main` puts on ``sys.stdout``."""
