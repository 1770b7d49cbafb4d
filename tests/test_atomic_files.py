"""Atomic outputs: nothing partial on failure, umask permissions, stale temp files removed."""
import os
import stat
import subprocess
import sys

import pytest

from bert_tf.atomic_files import atomic_text_writer, atomic_write_text, check_output_path
from bert_tf.errors import OutputPathError


def test_failure_leaves_the_previous_file(tmp_path):
    path = tmp_path / "out.txt"
    atomic_write_text(str(path), "old\n")
    with pytest.raises(RuntimeError):
        with atomic_text_writer(str(path)) as f:
            f.write("new, half written")
            raise RuntimeError("boom")
    assert path.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_permissions_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write_text(str(tmp_path / "a.txt"), "x")
    finally:
        os.umask(old)
    assert oct(os.stat(tmp_path / "a.txt").st_mode & 0o777) == oct(0o640)


def test_temp_file_of_a_dead_process_is_removed_by_the_next_write(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    stale = tmp_path / f".tmp-{dead}-abc"
    stale.write_text("left by kill -9")
    mine = tmp_path / f".tmp-{os.getpid()}-keep"  # a live process's temp file stays
    mine.write_text("in progress")
    atomic_write_text(str(tmp_path / "out.txt"), "x")
    assert not stale.exists() and mine.exists()


@pytest.mark.parametrize("name", ["", "dir", "dir/", "file/x", "missing/x"])
def test_bad_output_paths(tmp_path, name):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputPathError):
        check_output_path(str(tmp_path / name) if name else "")


def test_missing_parent_created_on_request(tmp_path):
    check_output_path(str(tmp_path / "new" / "out.tfrecord"), create_parent=True)
    assert (tmp_path / "new").is_dir()


def test_folder_that_refuses_a_file_is_found_before_the_work(tmp_path, monkeypatch):
    """os.access says yes to root on a read-only or pseudo file system (found by trying
    --output_file=/sys/kernel/o.jsonl: extract_features ran the model, then a traceback). The
    check creates and removes a probe file; no probe is left on success."""
    check_output_path(str(tmp_path / "out.jsonl"))
    assert os.listdir(tmp_path) == []

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr("tempfile.mkstemp", refuse)
    with pytest.raises(OutputPathError) as e:
        check_output_path(str(tmp_path / "out.jsonl"))
    assert str(e.value) == (f"{tmp_path / 'out.jsonl'}: output folder {tmp_path} is not "
                            "writable (Permission denied)")


@pytest.mark.skipif(not os.path.isdir("/sys/kernel") or os.access("/sys/kernel", os.W_OK) is False,
                    reason="no /sys/kernel that os.access calls writable (the case of root)")
def test_sysfs_folder_is_refused():
    with pytest.raises(OutputPathError, match="/sys/kernel is not writable"):
        check_output_path("/sys/kernel/o.jsonl")


def test_special_file_output_refused_not_replaced(tmp_path):
    # Found by trying --output_file=/dev/full: the final rename replaced the device by a
    # regular file. A FIFO stands in for the device here (same st_mode test, harmless).
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputPathError, match="not a regular file"):
        atomic_write_text(str(fifo), "x")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["pipe"]
    with pytest.raises(OutputPathError, match="not a regular file"):
        check_output_path(os.devnull)


def test_output_that_is_a_symlink_is_written_through_to_its_target(tmp_path):
    # issue 27 item 7: the temporary file was renamed onto the link, replacing it with a
    # regular file; the link now stays and its target gets the new text.
    from bert_tf.atomic_files import atomic_write_text
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "real.txt"
    target.write_text("old\n")
    link = tmp_path / "out.txt"
    os.symlink(os.path.join("data", "real.txt"), link)
    atomic_write_text(str(link), "new\n")
    assert os.path.islink(link) and os.readlink(link) == os.path.join("data", "real.txt")
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["data", "out.txt"]
    assert os.listdir(tmp_path / "data") == ["real.txt"]


def test_resumable_output_that_is_a_symlink_is_written_through(tmp_path):
    from bert_tf.resumable_files import ResumableOutputs
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    link = tmp_path / "out.jsonl"
    os.symlink("real.jsonl", link)
    outputs = ResumableOutputs([str(link)], {"k": 1})
    files = outputs.open()
    files[0].write("line\n")
    outputs.finish()
    assert os.path.islink(link) and target.read_text() == "line\n"


def test_output_folder_that_is_a_file_or_under_one_names_the_flag_and_the_file(tmp_path):
    """Issue 27 fresh round: ``--output_dir=<a file>`` gave a FailedPreconditionError traceback
    in run_pretraining; every family's output folder goes through this one check."""
    from bert_tf.atomic_files import make_output_dir
    from bert_tf.errors import FlagError

    blocker = tmp_path / "a_file"
    blocker.write_text("keep me")
    with pytest.raises(FlagError) as e:
        make_output_dir(str(blocker), "model_dir")
    assert str(e.value) == f"--model_dir={blocker} is not writable: it is a file, not a folder"
    deep = blocker / "x" / "y"
    with pytest.raises(FlagError) as e:
        make_output_dir(str(deep), "save_dir")
    assert str(e.value) == (f"--save_dir={deep} is not writable: {blocker} is a file, "
                            "not a folder")
    assert blocker.read_text() == "keep me"
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FlagError, match=r"--output_dir=.*dangling is not writable: it is a "
                                        r"broken symlink$"):
        make_output_dir(str(tmp_path / "dangling"))
    made = tmp_path / "new" / "out"
    assert make_output_dir(str(made)) == str(made) and made.is_dir() and not os.listdir(made)


def test_output_names_taken_by_the_other_kind_are_refused_before_anything_is_made(tmp_path):
    """Issue 27: a folder named like a file the run writes, or a file named like a folder it
    writes (the ``eval`` summaries), failed only when the run wrote it."""
    from bert_tf.atomic_files import check_output_names, make_output_dir
    from bert_tf.errors import FlagError

    out = tmp_path / "out"
    (out / "predictions.json").mkdir(parents=True)
    (out / "eval").write_text("x")
    with pytest.raises(FlagError) as e:
        make_output_dir(str(out), "predict_dir", files=("a.txt", "predictions.json"))
    assert str(e.value) == (f"--predict_dir={out}: {out / 'predictions.json'} is a folder, but "
                            "the run writes the file predictions.json there; remove or rename "
                            "that folder")
    with pytest.raises(FlagError) as e:
        check_output_names(str(out), "model_dir", folders=("eval",))
    assert str(e.value) == (f"--model_dir={out}: {out / 'eval'} is a file, but the run writes "
                            "the folder eval there; remove or rename that file")
    (out / "link").symlink_to(tmp_path / "nowhere")
    with pytest.raises(FlagError, match=r"link is a file, but the run writes the folder link"):
        check_output_names(str(out), "model_dir", folders=("link",))
    check_output_names(str(tmp_path / "absent"), "model_dir", ("eval",), ("x",))
    assert not (tmp_path / "absent").exists()
    assert make_output_dir(str(out), files=("eval_results.txt",), folders=("predictions.json",)
                           ) == str(out)
