"""One run per output (issue 15 item 5): the lock of flags.run_main and the sweep of killed
runs' temporary files at the start of every script's run."""
import os
import signal
import subprocess
import sys

import pytest

from bert_tf import flags as bert_flags
from bert_tf.errors import OutputPathError
from bert_tf.output_locks import acquire, lock_path, output_locks

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = bert_flags.FLAGS
bert_flags.define("output_file", "output_dir", "do_train")


def _dead_pid():
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True)
    return int(proc.stdout)


def _holder(path):
    """A second process holding the lock of ``path`` until killed."""
    code = ("import sys, time; from bert_tf.output_locks import acquire; "
            "lock = acquire(sys.argv[1]); print(lock.file, flush=True); time.sleep(120)")
    proc = subprocess.Popen([sys.executable, "-c", code, path], stdout=subprocess.PIPE,
                            text=True, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.stdout.readline().strip() == lock_path(path)
    return proc


def _run_main(monkeypatch, argv, main):
    monkeypatch.setattr(sys, "argv", ["run_something.py"] + argv)
    try:
        with pytest.raises(SystemExit) as e:
            bert_flags.run_main(lambda a: sys.exit(main(a) or 0))
    finally:
        for name in ("output_file", "output_dir", "do_train"):
            FLAGS[name].unparse()
    return e.value.code


def test_second_run_on_the_same_output_fails_with_one_line(tmp_path, monkeypatch, capsys):
    out = str(tmp_path / "out.jsonl")
    holder = _holder(out)
    try:
        ran = []
        code = _run_main(monkeypatch, [f"--output_file={out}"], lambda a: ran.append(1))
        err = capsys.readouterr().err
        assert code == 1 and ran == []
        assert err == (f"error: {out} (--output_file): another run (pid {holder.pid}) is writing "
                       f"this output; wait for it to end or choose another output (lock file "
                       f"{tmp_path}/.out.jsonl.bert_tf-lock)\n")
    finally:
        holder.kill()
        holder.wait()
    # killed with SIGKILL: its lock file (naming its pid) is left and taken over, said once
    assert open(lock_path(out)).read() == f"{holder.pid}\n"
    seen = []
    with pytest.MonkeyPatch.context() as mp:
        from bert_tf import output_locks as ol
        mp.setattr(ol.logging, "warning", lambda fmt, *a: seen.append(fmt % a))
        code = _run_main(monkeypatch, [f"--output_file={out}"],
                         lambda a: 0 if open(lock_path(out)).read() == f"{os.getpid()}\n" else 3)
    assert code == 0
    assert seen == [f"{out}: took over the lock of pid {holder.pid}, which no longer runs "
                    f"({lock_path(out)})"]
    assert not os.path.exists(lock_path(out))  # removed when the run ended
    assert os.listdir(tmp_path) == []


def test_output_dir_locked_and_each_output_file_item(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")
    seen = []

    def main(_):
        seen.extend(sorted(os.listdir(tmp_path)))
        with pytest.raises(OutputPathError, match="another run"):
            acquire(b)  # a second open file description conflicts too
    assert _run_main(monkeypatch, [f"--output_file={a},{b}", f"--output_dir={tmp_path}/run/",
                                   "--do_train"], main) == 0
    assert seen == [".a.tfrecord.bert_tf-lock", ".b.tfrecord.bert_tf-lock",
                    ".run.bert_tf-lock"]
    assert os.listdir(tmp_path) == []


def test_xlnet_output_dir_cache_is_shared_model_dir_locked():
    from absl import flags as absl_flags
    fv = absl_flags.FlagValues()
    for name in ("output_dir", "model_dir", "output_file"):
        absl_flags.DEFINE_string(name, None, "", flag_values=fv)
    fv(["prog", "--output_dir=/c/cache", "--model_dir=/c/model"])
    assert bert_flags.locked_outputs(fv) == [("/c/model", "--model_dir")]
    fv(["prog", "--model_dir="])
    assert bert_flags.locked_outputs(fv) == [("/c/cache", "--output_dir")]
    fv2 = absl_flags.FlagValues()  # a default is not this run's output (XLNet's save_dir in a BERT run)
    absl_flags.DEFINE_string("save_dir", "proc_data/example", "", flag_values=fv2)
    fv2(["prog"])
    assert bert_flags.locked_outputs(fv2) == [] and bert_flags.output_folders(fv2) == []


def test_eval_only_run_does_not_lock_the_training_folder():
    # an eval/predict-only run may run beside the training that writes the same folder
    from absl import flags as absl_flags
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    absl_flags.DEFINE_string("output_file", None, "", flag_values=fv)
    absl_flags.DEFINE_bool("do_train", False, "", flag_values=fv)
    fv(["prog", "--output_dir=/c/run", "--output_file=/c/x.jsonl"])
    assert bert_flags.locked_outputs(fv) == [("/c/x.jsonl", "--output_file")]
    fv(["prog", "--do_train"])
    assert bert_flags.locked_outputs(fv) == [("/c/x.jsonl", "--output_file"),
                                             ("/c/run", "--output_dir")]


def test_not_locked_remote_or_missing_folder(tmp_path):
    assert acquire("gs://bucket/out.jsonl") is None
    assert acquire(str(tmp_path / "missing" / "out.jsonl")) is None
    with output_locks([(str(tmp_path / "x"), ""), (str(tmp_path / "x/"), "")]) as held:
        assert len(held) == 1  # one output named twice is locked once


def test_stale_temp_files_swept_at_start_in_every_output_folder(tmp_path, monkeypatch):
    dead = _dead_pid()
    (tmp_path / "run").mkdir()
    (tmp_path / "files").mkdir()
    stale = [tmp_path / "run" / f".tmp-{dead}-abc.tfrecord", tmp_path / "files" / f".tmp-{dead}-x"]
    for f in stale:
        f.write_bytes(b"x" * 1000)
    live = tmp_path / "run" / f".tmp-{os.getppid()}-running"  # a running process's file stays
    live.write_text("in progress")
    seen = []
    from bert_tf import atomic_files
    monkeypatch.setattr(atomic_files.logging, "warning", lambda fmt, *a: seen.append(fmt % a))
    code = _run_main(monkeypatch, [f"--output_dir={tmp_path / 'run'}",
                                   f"--output_file={tmp_path / 'files' / 'o.txt'}"],
                     lambda a: 0 if [f.exists() for f in stale] == [False, False] else 3)
    assert code == 0 and live.exists()
    assert seen == [
        f"removed 1 stale temporary file(s) of processes that no longer run from "
        f"{tmp_path / 'run'} (.tmp-{dead}-abc.tfrecord, 1000 bytes)",
        f"removed 1 stale temporary file(s) of processes that no longer run from "
        f"{tmp_path / 'files'} (.tmp-{dead}-x, 1000 bytes)"]


def test_pooling_locks_the_derived_embeddings_file(tmp_path):
    # issue 27 item 7: run 1 (--output_file=a.jsonl --pooling=mean) writes a.jsonl and
    # a.jsonl.embeddings.jsonl (and their .partial); run 2 with --output_file=
    # a.jsonl.embeddings.jsonl replaced run 1's embeddings or crashed on the shared .partial.
    from absl import flags as absl_flags
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_string("output_file", None, "", flag_values=fv)
    absl_flags.DEFINE_enum("pooling", "none", ["none", "cls", "mean", "max"], "", flag_values=fv)
    fv(["prog", "--output_file=/c/a.jsonl"])
    assert bert_flags.locked_outputs(fv) == [("/c/a.jsonl", "--output_file")]
    fv(["prog", "--output_file=/c/a.jsonl", "--pooling=mean"])
    assert bert_flags.locked_outputs(fv) == [
        ("/c/a.jsonl", "--output_file"),
        ("/c/a.jsonl.embeddings.jsonl", "--output_file (its embeddings)")]
    # the two runs' locks meet on the derived file: the second one fails at once
    first = acquire(str(tmp_path / "a.jsonl.embeddings.jsonl"))
    try:
        with pytest.raises(OutputPathError, match="another run"):
            acquire(str(tmp_path / "a.jsonl.embeddings.jsonl"))
    finally:
        first.release()


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="no /proc file system here")
def test_a_folder_that_takes_no_file_is_left_to_the_write_check():
    """A new user's --output_file=/proc/x.jsonl said "cannot create the lock file
    /proc/.x.jsonl.bert_tf-lock (No such file or directory)"; the write check names the folder."""
    from bert_tf.atomic_files import check_output_path
    assert acquire("/proc/x.jsonl") is None
    with pytest.raises(OutputPathError, match=r"^/proc/x\.jsonl: output folder /proc is not "
                                              r"writable \("):
        check_output_path("/proc/x.jsonl")
