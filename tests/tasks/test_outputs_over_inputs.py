"""A run whose output is one of its inputs is refused before any work (issue 27 item 7):
extract_features and create_pretraining_data in all three modes, the same path, a symlink or a
hard link; the input is left as it was and nothing is written."""
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = b"The cat sat on the mat.\nIt was happy.\n\nA dog ran.\n"


def _run(args, cwd):
    proc = subprocess.run([sys.executable] + args, cwd=cwd, capture_output=True,
                          env=dict(os.environ, PYTHONPATH=REPO), timeout=300)
    return proc.returncode, proc.stderr.decode().strip().splitlines()


def _script(name):
    return os.path.join(REPO, name)


@pytest.mark.parametrize("link", ["same", "symlink", "hardlink", "dot"])
@pytest.mark.parametrize("mode", ["extract", "bert_data", "albert_data"])
def test_output_file_that_is_the_input_file_is_refused(tmp_path, link, mode):
    src = tmp_path / "in.txt"
    src.write_bytes(TEXT)
    out = {"same": "in.txt", "dot": "./in.txt", "symlink": "link.txt",
           "hardlink": "hard.txt"}[link]
    if link == "symlink":
        os.symlink("in.txt", tmp_path / "link.txt")
    if link == "hardlink":
        os.link(tmp_path / "in.txt", tmp_path / "hard.txt")
    before = sorted(os.listdir(tmp_path))
    args = {"extract": [_script("extract_features.py")],
            "bert_data": [_script("create_pretraining_data.py"), "--vocab_file=vocab.txt"],
            "albert_data": ["-m", "bert_tf.albert.create_pretraining_data",
                            "--vocab_file=vocab.txt"]}[mode]
    code, err = _run(args + ["--input_file=in.txt", f"--output_file={out}"], tmp_path)
    assert code == 1
    assert err[-1] == (f"error: --output_file={out} is the same file as --input_file in.txt: "
                       "the run would replace its own input"), err
    assert src.read_bytes() == TEXT and sorted(os.listdir(tmp_path)) == before


def test_xlnet_input_glob_inside_the_save_dir_outputs_is_refused(tmp_path):
    records = tmp_path / "proc" / "tfrecords"
    records.mkdir(parents=True)
    (records / "in.txt").write_bytes(TEXT)
    code, err = _run([_script("create_pretraining_data.py"), "--sp_path=spiece.model",
                      "--input_glob=proc/tfrecords/*.txt", "--save_dir=proc"], tmp_path)
    assert code == 1
    assert err[-1] == ("error: --input_glob file proc/tfrecords/in.txt is one of the outputs "
                       "of --save_dir=proc: the run would replace its own input"), err
    assert (records / "in.txt").read_bytes() == TEXT


def test_export_dir_over_the_output_file_is_refused(tmp_path):
    (tmp_path / "in.txt").write_bytes(TEXT)
    code, err = _run([_script("extract_features.py"), "--input_file=in.txt",
                      "--output_file=out.jsonl", "--export_dir=./out.jsonl"], tmp_path)
    assert code == 1
    assert err[-1] == ("error: --export_dir=./out.jsonl is the same path as --output_file="
                       "out.jsonl: the SavedModel folder would take the output's place"), err
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]
