"""Resident memory of one process by stage (issue 24): import, build, restore, first batch.

Bench-time only, standard library only, so it runs under both this tree's venv and the TF 2.15
venv of the original code. Two uses:

* in a driver: ``import rss_stages; rss_stages.mark("build")`` after each stage;
* around an entry point, with hooks on the functions that bound the stages::

    python bench/rss_stages.py --hooks=ours_bert extract_features.py --input_file=... ...
    python bench/rss_stages.py --hooks=original_bert $BERT_ORIGINAL_DIR/extract_features.py ...

  (``original_bert`` runs the script through ``bench/original_tf1_shim.py``, as the other benches
  run the original scripts). A hook whose function is not there (the code moved) is skipped and
  named in the record, so a refactored loading path still runs, only with fewer stages.

Each mark records ``rss_gb`` (VmRSS now) and ``peak_gb`` (VmHWM: the highest RSS so far, so the
peak of the stage that ends at the mark) and ``seconds`` since the process started; beside them
``anon_gb`` / ``anon_peak_gb``: RssAnon now and its highest value so far, sampled every 5 ms by
a thread (``anon_peak_gb`` of the record: the whole process). RSS counts the pages of the
shared libraries a process has touched (clean, file-backed, shared with every other process of
the same TensorFlow, dropped first under memory pressure): TF 2.21's are ~0.14 GB more than TF
2.15's at ``import tensorflow`` alone. The anonymous part is what the code allocates (weights,
activations, heap), the part two implementations of one model can differ in. The record
is rewritten as JSON to ``$RSS_STAGES_OUT`` (when set) at every mark, so an entry point that
ends with ``os._exit`` (ours, after a successful run) still leaves it.
"""

import atexit
import json
import os
import runpy
import sys
import threading
import time

_T0 = time.perf_counter()
RECORD = {"marks": [], "hooks_missing": [], "anon_peak_gb": 0.0}
_SAMPLE_SECONDS = 0.005
_WRITE_LOCK = threading.Lock()


def _status_gb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1e6  # kB -> GB (10^9 bytes)
    return None


def _anon_now():
    anon = _status_gb("RssAnon") or 0.0
    RECORD["anon_peak_gb"] = max(RECORD["anon_peak_gb"], anon)
    return anon


def _sample_anon():
    """Daemon thread: keeps ``RECORD["anon_peak_gb"]``; rewrites the record when it grew by
    16 MB (an entry point ending with ``os._exit`` leaves no exit mark)."""
    written = 0.0
    while True:
        _anon_now()
        if RECORD["anon_peak_gb"] > written + 0.016:
            written = RECORD["anon_peak_gb"]
            _write()
        time.sleep(_SAMPLE_SECONDS)


def mark(stage: str) -> None:
    """Records VmRSS, VmHWM, RssAnon and its sampled peak (GB) and the seconds since start
    under ``stage``."""
    anon = _anon_now()
    RECORD["marks"].append({"stage": stage, "seconds": round(time.perf_counter() - _T0, 3),
                            "rss_gb": _status_gb("VmRSS"), "peak_gb": _status_gb("VmHWM"),
                            "anon_gb": anon, "anon_peak_gb": RECORD["anon_peak_gb"]})
    _write()


def _write():
    path = os.environ.get("RSS_STAGES_OUT")
    if path:  # whole or not at all: the sampler thread may write while the process exits
        with _WRITE_LOCK, open(path + ".tmp", "w") as f:
            json.dump(RECORD, f, indent=1)
            f.flush()
            os.replace(path + ".tmp", path)


threading.Thread(target=_sample_anon, name="rss_stages_anon", daemon=True).start()


atexit.register(mark, "exit")  # absent where the entry point ends with os._exit


def _wrap(owner, name, before=None, after=None, first_only=False):
    """Replaces ``owner.name`` by a function marking ``before`` / ``after`` around the call."""
    original = getattr(owner, name, None)
    if original is None:
        RECORD["hooks_missing"].append(f"{getattr(owner, '__name__', owner)}.{name}")
        return
    state = {"done": False}

    def wrapper(*args, **kwargs):
        active = not (first_only and state["done"])
        if active and before:
            mark(before)
        out = original(*args, **kwargs)
        if active and after:
            mark(after)
        state["done"] = True
        return out

    setattr(owner, name, wrapper)


def _first_item_marks(owner, name, stage):
    """Wraps a generator method: ``stage`` is marked when its first item comes out."""
    original = getattr(owner, name, None)
    if original is None:
        RECORD["hooks_missing"].append(f"{getattr(owner, '__name__', owner)}.{name}")
        return

    def wrapper(*args, **kwargs):
        first = True
        for item in original(*args, **kwargs):
            if first:
                mark(stage)
                first = False
            yield item

    setattr(owner, name, wrapper)


def hook_original_bert(script):
    """The original extract_features.py (TPUEstimator, TF 2.15 compat.v1 via our shim)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    import original_tf1_shim
    sys.path.remove(here)
    sys.path.insert(0, os.path.dirname(script))
    tf = original_tf1_shim.install()
    from tensorflow.python.training import session_manager
    import modeling  # noqa: F401  (the original's, from the script's folder)
    mark("import")
    # init_from_checkpoint is called by the model_fn once the graph of the model is built.
    _wrap(tf.train, "init_from_checkpoint", after="build")
    # The session's init op fills the variables from the checkpoint.
    _wrap(session_manager.SessionManager, "prepare_session", after="restore", first_only=True)
    _first_item_marks(tf.estimator.tpu.TPUEstimator, "predict", "first_batch")


def hook_ours(family):
    """This tree's extract_features.py (BERT or XLNet path)."""
    import tensorflow  # noqa: F401
    if family == "bert":
        from bert_tf.bert.tasks import feature_extraction as fe
        _wrap(fe, "load_bert_checkpoint", before="build", after="restore")
        _wrap(fe.FeatureExtractor, "predict", after="first_batch", first_only=True)
    else:
        from bert_tf.xlnet import checkpoint_map
        from bert_tf.xlnet.tasks import feature_extraction as fe
        _wrap(checkpoint_map, "load_xlnet_checkpoint", before="build", after="restore")
        _wrap(fe.XLNetFeatureExtractor, "predict", after="first_batch", first_only=True)
    mark("import")


def main(argv):
    hooks, script, rest = argv[1].split("=", 1)[1], os.path.abspath(argv[2]), argv[3:]
    if hooks == "original_bert":
        hook_original_bert(script)
    else:
        sys.path.insert(0, os.getcwd())
        hook_ours(hooks.split("_", 1)[1])
    sys.argv = [script] + rest
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    mark("start")
    main(sys.argv)
