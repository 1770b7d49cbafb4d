"""bert_tf: the original BERT, XLNet and ALBERT releases rebuilt on TensorFlow 2 / Keras 3.

Family-first over one shared spine (docs/ARCHITECTURE.md, checked by tests/test_layering.py):

    bert/, xlnet/, albert/   one folder per family, each a small pipeline:
                             model files (config, layers, model, heads, checkpoint name table)
                             <- data/ (features, records) <- tasks/ (``run(args) -> Result``)
                             <- entry points (the root scripts; ``python -m bert_tf.albert.*``)
    the spine, shared by the families and importing none of them:
      flags/, tokenization/  flags and argument classes; WordPiece and SentencePiece
      data/                  TFRecords and the original formats the families share
      training/              training loop, optimizer, strategy, restore, predict
      run/                   run pieces several families' tasks share
    convert, defaults        ``python -m`` modules on top (weights converter, embedded model)

The root scripts (``extract_features.py``, ``run_classifier.py`` ...) parse flags, build the
task's argument class, pick the family, call one task's ``run`` and print its summary.
"""

__version__ = "0.1.0"

# TensorFlow's C++ log (issue 15): on a CPU machine every run printed TF's banner twice
# ("All log messages before absl::InitializeLog() ...", "Could not find cuda drivers") and an
# alarming "failed call to cuInit" error line, and a pipeline failure dumped rendezvous
# warnings before the Python error. Unless the user set TF_CPP_MIN_LOG_LEVEL (theirs wins, and
# then nothing here changes; 0 shows everything): it is set to 3 (C++ INFO, WARNING and ERROR
# lines hidden; errors still reach the user as Python exceptions and the scripts' one
# "error:" line), and the first `import tensorflow` (whichever bert_tf module makes it) runs
# with the C++ stderr (file descriptor 2) muted, as the import-time banner ignores that
# variable. TensorFlow is NOT imported here: `import bert_tf.flags` stays TensorFlow-free, so
# the root scripts parse flags and answer --help in well under a second (issue 15 item 6).
import importlib.abc as _abc
import os as _os
import sys as _sys


class _MutedTensorFlowImport(_abc.MetaPathFinder, _abc.Loader):
    """A ``sys.meta_path`` finder for the top-level ``tensorflow`` module only: it finds it
    as the rest of the path would and executes it with file descriptor 2 pointed at
    /dev/null, then leaves ``sys.meta_path``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tensorflow":
            return None
        _remove_hook()
        import importlib.util
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return None
        self._loader = spec.loader
        spec.loader = self
        return spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        try:
            saved, devnull = _os.dup(2), _os.open(_os.devnull, _os.O_WRONLY)
        except OSError:
            self._loader.exec_module(module)
            return
        try:
            _sys.stderr.flush()
            _os.dup2(devnull, 2)
            self._loader.exec_module(module)
        finally:
            _os.dup2(saved, 2)
            _os.close(saved)
            _os.close(devnull)


_HOOK = _MutedTensorFlowImport()


def _remove_hook() -> None:
    if _HOOK in _sys.meta_path:
        _sys.meta_path.remove(_HOOK)


# Set by bert_tf itself: its child processes (tokenization workers) inherit the level and
# still mute the import; a level the user set has no marker.
_OURS = "BERT_TF_QUIET_TF_CPP"
if "TF_CPP_MIN_LOG_LEVEL" not in _os.environ or _os.environ.get(_OURS) == "1":
    _os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
    _os.environ[_OURS] = "1"
    if "tensorflow" not in _sys.modules:
        _sys.meta_path.insert(0, _HOOK)

# oneDNN kernels (issue 25): TensorFlow enables them by default only on CPUs with AVX-512
# VNNI / BF16 or AMX; elsewhere (AVX2: AMD EPYC, older Xeons) it runs Eigen's kernels, whose
# batched matmuls, softmax and broadcast adds of the attention are 3-4x slower at seq 384
# (MiniLM [8, 384] forward: 2.2 -> 1.5 CPU s on a 2-vCPU AMD EPYC). Unless the user set
# TF_ENABLE_ONEDNN_OPTS (theirs wins; 0 turns them off), bert_tf turns them on before its
# first `import tensorflow` (a process that imported TensorFlow earlier keeps its choice).
# Float results move at the last bits (max abs 4e-6 on MiniLM hidden states of magnitude 4),
# as they do between machines with and without AVX-512.
_os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
