"""A full disk in every writer of several files (issue 27 item 3): one line naming the file,
no partial output, the outputs of an earlier run as they were; the files of one run appear
together or not at all. The failure is injected as ``OSError(errno.ENOSPC)`` at the write."""
import errno
import json
import os

import pytest

from bert_tf import atomic_files
from bert_tf.data import tfrecord_bytes
from bert_tf.errors import OutputPathError

ENOSPC = OSError(errno.ENOSPC, "No space left on device")


class _WriteFails:
    """A text file whose writes fail as on a full disk (``OSError(errno.ENOSPC)``)."""

    def __init__(self, f):
        self.f = f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


def _wrap_temp_writes(monkeypatch, wrap, nth=None):
    """``builtins.open`` of the temporary output files (``.tmp-*``) opened for writing: the
    ``nth`` one (every one when None) comes wrapped by ``wrap(file)``. Returns a function that
    puts the real ``open`` back."""
    import builtins
    real_open = builtins.open
    opened = []

    def fake_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        if "w" in mode and os.path.basename(str(path)).startswith(".tmp-"):
            opened.append(path)
            return wrap(f) if nth is None or len(opened) == nth else f
        return f
    monkeypatch.setattr(builtins, "open", fake_open)
    return lambda: monkeypatch.setattr(builtins, "open", real_open)


def fail_writes_to(monkeypatch, name_part):
    """The record files whose path holds ``name_part`` cannot be written: their first write
    of bytes raises ``OSError(errno.ENOSPC)`` (what a full disk gives)."""
    real = tfrecord_bytes.LocalTFRecordWriter._flush

    def flush(self):
        if name_part in os.path.basename(self.path) and self._pending:
            self._file = _FullFile(self._file)
        return real(self)
    monkeypatch.setattr(tfrecord_bytes.LocalTFRecordWriter, "_flush", flush)


class _FullFile:
    def __init__(self, f):
        self.f = f

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self):
        self.f.close()


def test_record_files_appear_together_or_not_at_all(tmp_path, monkeypatch):
    a, b = str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")
    with open(a, "wb") as f:
        f.write(b"earlier")
    real_open = open

    class FullFile:
        """The second file's bytes do not fit: its write fails."""
        def __init__(self, f):
            self.f = f

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.f.close()

    def fake_open(path, mode="r", *args, **kwargs):
        f = real_open(path, mode, *args, **kwargs)
        return FullFile(f) if "wb" in mode and len(opened) == 1 else opened.append(path) or f
    opened = []
    monkeypatch.setattr(tfrecord_bytes, "open", fake_open, raising=False)
    with pytest.raises(OutputPathError) as caught:
        with tfrecord_bytes.RecordFilesTogether([a, b]) as together:
            together.writers[0].write(b"x")
            together.writers[1].write(b"y")
            together.add_text(str(tmp_path / "info.json"), "{}")
    assert str(caught.value) == (f"{b}: cannot write it (No space left on device); nothing "
                                 "of it was kept")
    assert sorted(os.listdir(tmp_path)) == ["a.tfrecord"]
    assert open(a, "rb").read() == b"earlier"


def test_texts_written_together(tmp_path, monkeypatch):
    first, second = tmp_path / "predictions.json", tmp_path / "nbest_predictions.json"
    first.write_text("old predictions\n")
    restore_open = _wrap_temp_writes(monkeypatch, _WriteFails, nth=2)
    with pytest.raises(OutputPathError, match=r"nbest_predictions\.json: cannot write it \(No "
                                              r"space left on device\)"):
        atomic_files.atomic_write_texts([(str(first), "new\n"), (str(second), "new\n")])
    restore_open()
    assert sorted(os.listdir(tmp_path)) == ["predictions.json"]
    assert first.read_text() == "old predictions\n"
    # and without a failure both appear
    atomic_files.atomic_write_texts([(str(first), "p\n"), (str(second), "n\n")])
    assert (first.read_text(), second.read_text()) == ("p\n", "n\n")


def test_atomic_write_text_full_disk_is_one_line(tmp_path, monkeypatch):
    path = tmp_path / "eval_results.txt"
    path.write_text("earlier\n")
    restore_open = _wrap_temp_writes(monkeypatch, _WriteFails)
    with pytest.raises(OutputPathError, match=r"eval_results\.txt: cannot write it \(No space"):
        atomic_files.atomic_write_text(str(path), "new\n")
    restore_open()
    assert sorted(os.listdir(tmp_path)) == ["eval_results.txt"]
    assert path.read_text() == "earlier\n"


def _tiny_original(golden_dir, uncased_vocab_file, tmp_path):
    import shutil
    src = tmp_path / "orig"
    shutil.copytree(os.path.join(golden_dir, "bert", "tiny_random"), src)
    shutil.copy(uncased_vocab_file, src / "vocab.txt")
    return src


def _convert_errors(capsys, *argv):
    from bert_tf.convert import main
    rc = main(list(argv))
    return rc, [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]


def test_convert_to_hf_on_a_full_disk_is_one_line_and_leaves_no_folder(
        golden_dir, uncased_vocab_file, tmp_path, monkeypatch, capsys):
    """Fresh round (conv_full): safetensors' own error on a full disk was a traceback, and an
    empty out_dir was left behind."""
    import safetensors.numpy
    from safetensors import SafetensorError

    def full(tensors, filename, metadata=None):
        with open(filename, "wb") as f:
            f.write(b"partial")
        raise SafetensorError("Error while serializing: I/O error: No space left on device "
                              "(os error 28)")
    monkeypatch.setattr(safetensors.numpy, "save_file", full)
    src = _tiny_original(golden_dir, uncased_vocab_file, tmp_path)
    out = tmp_path / "full" / "hf"
    rc, errors = _convert_errors(capsys, "--from=original", "--to=hf", f"--in_dir={src}",
                                 f"--out_dir={out}")
    assert rc == 1 and errors == [
        f"error: {out}/model.safetensors: cannot write it (Error while serializing: I/O error: "
        "No space left on device (os error 28)); nothing of it was kept"]
    assert not out.exists() and os.listdir(tmp_path / "full") == []


def test_convert_outputs_appear_together_or_not_at_all(golden_dir, uncased_vocab_file, tmp_path,
                                                       monkeypatch, capsys):
    """The vocab copy fails after model.safetensors and config.json were written: an earlier
    conversion's files stay as they were, no new file and no temporary file is left."""
    import shutil
    from bert_tf import convert

    src = _tiny_original(golden_dir, uncased_vocab_file, tmp_path)
    out = tmp_path / "hf"
    out.mkdir()
    (out / "config.json").write_text("earlier")

    def full(a, b):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(convert.shutil, "copyfile", full)
    rc, errors = _convert_errors(capsys, "--from=original", "--to=hf", f"--in_dir={src}",
                                 f"--out_dir={out}")
    monkeypatch.setattr(convert.shutil, "copyfile", shutil.copyfile)
    assert rc == 1 and errors == [f"error: {out}/vocab.txt: cannot write it (No space left on "
                                  "device); nothing of it was kept"]
    assert sorted(os.listdir(out)) == ["config.json"]
    assert (out / "config.json").read_text() == "earlier"


def test_texts_on_a_full_disk_name_the_write_not_the_close(tmp_path, monkeypatch):
    """Fresh round (asq1_full): on a real full disk the text is buffered, the flush fails and
    the close fails again while the error unwinds; that second OSError escaped as a traceback
    instead of the one line."""
    first, second = tmp_path / "predictions.json", tmp_path / "nbest_predictions.json"
    first.write_text("old predictions\n")

    class Buffered:
        """What a full disk gives: writes are buffered, flush and close fail."""
        def __init__(self, f):
            self.f, self.pending = f, False

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def write(self, text):
            self.pending = True

        def flush(self):
            if self.pending:
                raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.f.close()
            self.flush()

    restore_open = _wrap_temp_writes(monkeypatch, Buffered, nth=2)
    with pytest.raises(OutputPathError) as e:
        atomic_files.atomic_write_texts([(str(first), "new\n"), (str(second), "new\n")])
    restore_open()
    assert str(e.value) == (f"{second}: cannot write it (No space left on device); nothing of "
                            "it was kept")
    assert sorted(os.listdir(tmp_path)) == ["predictions.json"]
    assert first.read_text() == "old predictions\n"


def test_tfrecord_writer_on_a_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    """Fresh round (asq1_full): TensorFlow's writer raised ResourceExhaustedError at close (a
    traceback) and its temporary file stayed, keeping the disk full."""
    import tensorflow as tf
    from bert_tf.data import tfrecord

    real = tf.io.TFRecordWriter

    class Full:
        def __init__(self, path):
            self.path, self.w = path, real(path)

        def write(self, data):
            self.w.write(data)

        def close(self):
            self.w.close()
            raise tf.errors.ResourceExhaustedError(None, None,
                                                   f"{self.path}; No space left on device")
    monkeypatch.setattr(tf.io, "TFRecordWriter", Full)
    path = tmp_path / "dev.tf_record"
    with pytest.raises(OutputPathError) as e:
        with tfrecord.AtomicTFRecordWriter(str(path)) as writer:
            writer.write(tfrecord.make_example({"x": [1]}))
    assert str(e.value) == (f"{path}: cannot write it (No space left on device); nothing of it "
                            "was kept")
    assert os.listdir(tmp_path) == []


def test_squad_records_and_their_features_cache_appear_together(tmp_path, monkeypatch):
    """Fresh round (asq1_full): a full disk at the features cache left the records without it
    (and a traceback); the records failing leaves no cache either."""
    import dataclasses
    import tensorflow as tf
    from bert_tf.data import squad_features_cache

    @dataclasses.dataclass
    class F:
        token_is_max_context: dict

    cache, records = tmp_path / "left.json.gz", tmp_path / "dev.tf_record"
    with pytest.raises(OutputPathError, match="dev.tf_record: cannot write"):
        with squad_features_cache.features_cache_written(str(cache), {"a": 1}, [F({1: True})]):
            raise atomic_files.write_error(str(records), ENOSPC)
    assert os.listdir(tmp_path) == []

    class FullGFile:
        def __init__(self, path, mode):
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def write(self, data):
            raise tf.errors.ResourceExhaustedError(None, None,
                                                   f"{self.path}; No space left on device")
    monkeypatch.setattr(squad_features_cache.tf.io.gfile, "GFile", FullGFile)
    ran = []
    with pytest.raises(OutputPathError) as e:
        with squad_features_cache.features_cache_written(str(cache), {"a": 1}, [F({1: True})]):
            ran.append(1)
    assert str(e.value) == (f"{cache}: cannot write it (No space left on device); nothing of "
                            "it was kept")
    assert ran == [] and os.listdir(tmp_path) == []


def test_convert_interrupted_is_one_line_and_leaves_no_folder(golden_dir, uncased_vocab_file,
                                                             tmp_path, monkeypatch, capsys):
    """Fresh round (conv_sigint): Ctrl-C during a conversion printed a KeyboardInterrupt
    traceback; the root scripts print one line `interrupted` and exit 130."""
    import safetensors.numpy
    from bert_tf.convert import main

    def interrupted(tensors, filename, metadata=None):
        raise KeyboardInterrupt
    monkeypatch.setattr(safetensors.numpy, "save_file", interrupted)
    src = _tiny_original(golden_dir, uncased_vocab_file, tmp_path)
    out = tmp_path / "hf"
    assert main(["--from=original", "--to=hf", f"--in_dir={src}", f"--out_dir={out}"]) == 130
    assert capsys.readouterr().err.splitlines()[-1] == "interrupted"
    assert not out.exists()


def test_convert_refuses_non_finite_weights_and_writes_nothing(golden_dir, uncased_vocab_file,
                                                               tmp_path, capsys):
    """Fresh round (conv_orig_inf_ckpt, conv_hf_nonfinite): a checkpoint with an inf (or an HF
    model with a NaN) was converted with it, exit 0."""
    import numpy as np
    from bert_tf import checkpoint_io

    src = _tiny_original(golden_dir, uncased_vocab_file, tmp_path)
    prefix = str(src / "bert_model.ckpt")
    arrays = checkpoint_io.read_checkpoint(prefix, include_optimizer=True)
    arrays["bert/embeddings/word_embeddings"][3, :] = np.inf
    checkpoint_io.write_checkpoint(prefix, arrays)
    out = tmp_path / "hf"
    rc, errors = _convert_errors(capsys, "--from=original", "--to=hf", f"--in_dir={src}",
                                 f"--out_dir={out}")
    width = arrays["bert/embeddings/word_embeddings"].shape[1]
    assert rc == 1 and errors == [
        f"error: {prefix}: bert/embeddings/word_embeddings holds inf ({width} non-finite "
        "values): not a usable checkpoint (saved from a diverged run?); nothing was written"]
    assert not out.exists()


def test_convert_refuses_an_hf_model_type_it_would_misread(tmp_path, capsys):
    """Fresh round (conv_hf_roberta): a RoBERTa folder (BERT weight names) was converted as
    BERT, exit 0."""
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "roberta"}))
    rc, errors = _convert_errors(capsys, f"--hf_dir={hf}", f"--out_dir={tmp_path / 'back'}")
    assert rc == 1 and errors == [f"error: {hf / 'config.json'}: model_type 'roberta' is neither "
                                  "BERT nor XLNet; the original code runs only these"]
    assert not (tmp_path / "back").exists()


def test_texts_whose_close_fails_are_one_line_and_nothing_kept(tmp_path, monkeypatch):
    """The second fresh round's rerun (asq1_full on a 24 kB tmpfs): every write and flush went
    through and the close of a file failed with ENOSPC while the files were being closed and
    renamed: a traceback. One line naming the file; none of them replaced (every file is
    closed before any is renamed)."""
    first, second = tmp_path / "predictions.json", tmp_path / "nbest_predictions.json"
    first.write_text("old predictions\n")

    class CloseFails:
        def __init__(self, f):
            self.f = f

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

        def write(self, text):
            return self.f.write(text)

        def flush(self):
            self.f.flush()

        def close(self):
            self.f.close()
            raise OSError(errno.ENOSPC, "No space left on device")

    restore_open = _wrap_temp_writes(monkeypatch, CloseFails, nth=1)
    with pytest.raises(OutputPathError) as e:
        atomic_files.atomic_write_texts([(str(first), "new\n"), (str(second), "new\n")])
    restore_open()
    assert str(e.value) == (f"{first}: cannot write it (No space left on device); nothing of "
                            "it was kept")
    assert sorted(os.listdir(tmp_path)) == ["predictions.json"]
    assert first.read_text() == "old predictions\n"
