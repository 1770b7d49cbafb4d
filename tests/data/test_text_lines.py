"""Reading text inputs: unreadable files and invalid UTF-8 (issue 27 item 5).

Root runs the tests, for whom every file is readable: permission denied is injected as
``tf.io.gfile`` raises it (``PermissionDeniedError``)."""
import logging

import pytest
import tensorflow as tf

from bert_tf.data import text_lines
from bert_tf.errors import InputDataError


def deny(monkeypatch, denied_path):
    """``tf.io.gfile.GFile(denied_path)`` raises PermissionDeniedError on reading, as
    TensorFlow does for a file without read permission."""
    real = tf.io.gfile.GFile

    class Denied:
        def __init__(self, path, mode="r"):
            self.path = path

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def _deny(self, *args):
            raise tf.errors.PermissionDeniedError(None, None, f"{self.path}; Permission denied")

        size = read = readline = _deny

    def gfile(path, mode="r"):
        return Denied(path, mode) if str(path) == str(denied_path) else real(path, mode)
    monkeypatch.setattr(tf.io.gfile, "GFile", gfile)


def test_permission_denied_is_one_line_naming_the_file(tmp_path, monkeypatch):
    path = tmp_path / "input.txt"
    path.write_text("hello\n")
    deny(monkeypatch, path)
    with pytest.raises(InputDataError) as caught:
        list(text_lines.read_text_examples(str(path)))
    assert str(caught.value) == f"{path}: cannot read it (permission denied)"
    with pytest.raises(InputDataError, match="permission denied"):
        list(text_lines.read_utf8_lines(str(path)))


def test_a_symlink_loop_or_a_dangling_symlink_is_named_as_such(tmp_path):
    """Fresh round 3 (r3_ef_input_symlink_loop): a symlink to itself was "input file not
    found", which sends the user looking for a missing file."""
    loop, dangling = tmp_path / "loop", tmp_path / "dangling"
    loop.symlink_to(loop)
    dangling.symlink_to(tmp_path / "gone.txt")
    with pytest.raises(InputDataError) as caught:
        text_lines.check_input_file(str(loop))
    assert str(caught.value) == (f"{loop}: cannot open it: too many levels of symbolic links "
                                 "(a symlink loop)")
    with pytest.raises(InputDataError) as caught:
        text_lines.check_input_file(str(dangling))
    assert str(caught.value) == (f"{dangling}: a symlink to {tmp_path / 'gone.txt'}, which "
                                 "does not exist")
    with pytest.raises(InputDataError, match=r"absent\.txt: input file not found$"):
        text_lines.check_input_file(str(tmp_path / "absent.txt"))


def test_invalid_utf8_bytes_are_dropped_with_a_warning(tmp_path, caplog):
    path = tmp_path / "input.txt"
    path.write_bytes(b"caf\xc3\xa9\nbad \xff\xfebyte\nend")
    with caplog.at_level(logging.WARNING):
        assert list(text_lines.read_utf8_lines(str(path))) == ["caf\u00e9\n", "bad byte\n",
                                                                 "end"]
    assert f"{path}:2: invalid UTF-8 byte(s) dropped" in caplog.text


def test_the_first_blank_line_is_named_in_one_warning(tmp_path, caplog):
    """Issue 27 fresh round: a file of blank lines gave [CLS] [SEP] rows without a word. They
    are kept (one output row per input line, as the original) and the first is named."""
    path = tmp_path / "in.txt"
    path.write_bytes(b"a cat\n\n   \nthe end\n")
    with caplog.at_level(logging.WARNING):
        examples = list(text_lines.read_text_examples(str(path)))
    assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
        (0, "a cat", None), (1, "", None), (2, "", None), (3, "the end", None)]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [f"{path}:2: blank line; it gives a [CLS] [SEP] row, as the original (one "
                    "output row per input line; later blank lines are not named)"]
