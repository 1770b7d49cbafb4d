"""bert_tf: the original BERT and XLNet releases rebuilt on TensorFlow 2 / Keras 3.

The package folders follow the data flow:

    tokenization/  text -> tokens (WordPiece for BERT, SentencePiece for XLNet)
    data/          tokens -> examples and features (TFRecords in the original formats)
    bert/, xlnet/  model families: config, Keras layers, model, checkpoint name map
    training/      optimizer, schedules, tf.distribute strategy, original-layout checkpoints
    tasks/         task heads and the run functions behind the root scripts

The root scripts (``extract_features.py``, ``run_classifier.py`` ...) only parse flags and
call one function of ``bert_tf.tasks``.
"""

__version__ = "0.1.0"

# TensorFlow's C++ log (issue 15): on a CPU machine every run printed TF's banner twice
# ("All log messages before absl::InitializeLog() ...", "Could not find cuda drivers") and an
# alarming "failed call to cuInit" error line, and a pipeline failure dumped rendezvous
# warnings before the Python error. Unless the user set TF_CPP_MIN_LOG_LEVEL (theirs wins, and
# then nothing here changes; 0 shows everything): it is set to 3 (C++ INFO, WARNING and ERROR
# lines hidden; errors still reach the user as Python exceptions and the scripts' one
# "error:" line), and TensorFlow, which any bert_tf module imports, is imported here with the
# C++ stderr (file descriptor 2) muted, as the import-time banner ignores that variable.
import os as _os
import sys as _sys


def _import_tensorflow_muted() -> None:
    try:
        saved, devnull = _os.dup(2), _os.open(_os.devnull, _os.O_WRONLY)
    except OSError:
        return
    try:
        _sys.stderr.flush()
        _os.dup2(devnull, 2)
        try:
            import tensorflow  # noqa: F401
        except ImportError:
            pass  # reported by the module that needs it
    finally:
        _os.dup2(saved, 2)
        _os.close(saved)
        _os.close(devnull)


# Set by bert_tf itself: its child processes (tokenization workers) inherit the level and
# still mute the import; a level the user set has no marker.
_OURS = "BERT_TF_QUIET_TF_CPP"
if "TF_CPP_MIN_LOG_LEVEL" not in _os.environ or _os.environ.get(_OURS) == "1":
    _os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    _os.environ[_OURS] = "1"
    if "tensorflow" not in _sys.modules:
        _import_tensorflow_muted()
