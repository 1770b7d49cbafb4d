"""create_pretraining_data.py in ALBERT mode, and `python -m bert_tf.albert.create_pretraining_data`:
ALBERT's flags and defaults (google-research/albert create_pretraining_data.py), the mode switch,
the golden records (golden README albert C)."""
import dataclasses
import json
import os
import subprocess
import sys

import pytest
from absl import flags as absl_flags

from bert_tf import flags as bert_flags
from bert_tf.data.tfrecord import read_examples
from bert_tf.errors import FlagError
from bert_tf.albert.tasks import pretraining_data as albert_pretraining_data
from bert_tf.albert.tasks.args import AlbertDataArgs
from bert_tf.bert.tasks.args import PretrainingDataArgs
from bert_tf.xlnet.tasks.args import XLNetDataArgs
from bert_tf.albert.tasks import args as albert_args

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))

# The original's flags.DEFINE_* defaults, read off google-research/albert@b772393.
ORIGINAL_DEFAULTS = {
    "input_file": None, "output_file": None, "vocab_file": None, "spm_model_file": None,
    "input_file_mode": "r", "do_lower_case": True, "do_whole_word_mask": True,
    "do_permutation": False, "favor_shorter_ngram": True, "random_next_sentence": False,
    "max_seq_length": 512, "ngram": 3, "max_predictions_per_seq": 20, "random_seed": 12345,
    "dupe_factor": 40, "masked_lm_prob": 0.15, "short_seq_prob": 0.1}
BERT_FLAGS = bert_flags.field_names(PretrainingDataArgs)


def test_args_are_the_original_flags_with_its_defaults():
    assert {f.name: f.default for f in dataclasses.fields(AlbertDataArgs)} == ORIGINAL_DEFAULTS


def _root_flag_values(argv):
    """The flags as the root create_pretraining_data.py defines them (three profiles)."""
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles((bert_flags.CREATE_PRETRAINING_DATA, BERT_FLAGS),
                               (bert_flags.XLNET_CREATE_PRETRAINING_DATA, bert_flags.field_names(XLNetDataArgs)),
                               (bert_flags.ALBERT_CREATE_PRETRAINING_DATA,
                                bert_flags.field_names(albert_pretraining_data.AlbertDataArgs)), flag_values=fv)
    fv(["prog"] + argv)
    return fv


@pytest.mark.parametrize("flag", ["--spm_model_file=", "--ngram=2", "--nofavor_shorter_ngram",
                                  "--random_next_sentence", "--do_permutation=false"])
def test_an_albert_only_flag_selects_albert_with_its_defaults(flag):
    fv = _root_flag_values(["--input_file=a.txt", flag])
    assert albert_args.is_albert_data_invocation(fv)
    args = bert_flags.args_from_flags(AlbertDataArgs, fv)
    assert (args.max_seq_length, args.dupe_factor, args.do_whole_word_mask) == (512, 40, True)
    # the BERT path keeps BERT's defaults
    assert (fv.max_seq_length, fv.dupe_factor, fv.do_whole_word_mask) == (128, 10, False)


def test_bert_flags_alone_stay_bert():
    fv = _root_flag_values(["--input_file=a.txt", "--max_seq_length=64", "--dupe_factor=2"])
    assert not albert_args.is_albert_data_invocation(fv)


def test_num_workers_and_missing_files_are_one_line_errors():
    fv = _root_flag_values(["--ngram=2", "--num_workers=2"])
    with pytest.raises(FlagError, match="--num_workers is not supported with ALBERT"):
        albert_pretraining_data.run(albert_args.read_args(AlbertDataArgs, fv))
    fv = _root_flag_values(["--ngram=2", "--input_file=a.txt", "--output_file=o"])
    with pytest.raises(FlagError, match="--vocab_file .* or --spm_model_file"):
        albert_pretraining_data.run(albert_args.read_args(AlbertDataArgs, fv))


def test_root_script_in_albert_mode_writes_the_golden_records(tmp_path, golden_dir,
                                                              uncased_vocab_file):
    flags_file = os.path.join(golden_dir, "albert", "pretraining_data", "flags.txt")
    argv = [line for line in open(flags_file).read().splitlines()
            if not line.startswith(("--input_file", "--output_file", "--vocab_file"))]
    out = str(tmp_path / "out.tfrecord")
    fv = _root_flag_values(argv + [
        "--input_file=" + os.path.join(golden_dir, "bert", "pretraining_data", "sample_text.txt"),
        "--output_file=" + out, "--vocab_file=" + uncased_vocab_file])
    assert albert_pretraining_data.run(
        albert_args.read_args(AlbertDataArgs, fv)).num_instances == 28
    golden = [json.loads(line) for line in open(os.path.join(
        golden_dir, "albert", "pretraining_data", "sample_text.seq64.decoded.jsonl"))]
    for mine, theirs in zip(read_examples(out), golden):
        assert all(mine[k] == theirs[k] for k in mine), theirs["tokens_from_ids"]


def test_full_disk_is_one_line_and_keeps_the_earlier_output(tmp_path, golden_dir,
                                                           uncased_vocab_file, monkeypatch):
    # issue 27 item 3, ALBERT mode
    from bert_tf.errors import OutputPathError
    from tests.test_full_disk import fail_writes_to
    flags_file = os.path.join(golden_dir, "albert", "pretraining_data", "flags.txt")
    argv = [line for line in open(flags_file).read().splitlines()
            if not line.startswith(("--input_file", "--output_file", "--vocab_file"))]
    outs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    open(outs[1], "w").write("earlier")
    fv = _root_flag_values(argv + [
        "--input_file=" + os.path.join(golden_dir, "bert", "pretraining_data", "sample_text.txt"),
        "--output_file=" + ",".join(outs), "--vocab_file=" + uncased_vocab_file])
    fail_writes_to(monkeypatch, "b.tfrecord")
    with pytest.raises(OutputPathError, match=r"b\.tfrecord: cannot write it \(No space left"):
        albert_pretraining_data.run(albert_args.read_args(AlbertDataArgs, fv))
    assert sorted(os.listdir(tmp_path)) == ["b.tfrecord"]
    assert open(outs[1]).read() == "earlier"


def test_input_file_mode_rb_gives_the_golden_records_and_w_is_refused(tmp_path, golden_dir,
                                                                      uncased_vocab_file):
    """--input_file_mode=rb (bytes, decoded as UTF-8 by the original) reads the same lines as
    the default r: the golden records; a mode that does not read is one line, the input
    untouched (the original's GFile(input_file, "w") would have emptied it)."""
    flags_file = os.path.join(golden_dir, "albert", "pretraining_data", "flags.txt")
    argv = [line for line in open(flags_file).read().splitlines()
            if not line.startswith(("--input_file", "--output_file", "--vocab_file"))]
    text = str(tmp_path / "sample_text.txt")
    with open(os.path.join(golden_dir, "bert", "pretraining_data", "sample_text.txt"), "rb") as f:
        original = f.read()
    with open(text, "wb") as f:
        f.write(original)
    out = str(tmp_path / "out.tfrecord")
    common = ["--input_file=" + text, "--output_file=" + out, "--vocab_file=" + uncased_vocab_file]
    fv = _root_flag_values(argv + common + ["--input_file_mode=rb"])
    assert albert_pretraining_data.run(
        albert_args.read_args(AlbertDataArgs, fv)).num_instances == 28
    golden = [json.loads(line) for line in open(os.path.join(
        golden_dir, "albert", "pretraining_data", "sample_text.seq64.decoded.jsonl"))]
    assert [r["input_ids"] for r in read_examples(out)] == [r["input_ids"] for r in golden]
    os.remove(out)
    fv = _root_flag_values(argv + common + ["--input_file_mode=w"])
    with pytest.raises(FlagError, match="--input_file_mode='w': not a read mode"):
        albert_pretraining_data.run(albert_args.read_args(AlbertDataArgs, fv))
    assert not os.path.exists(out) and open(text, "rb").read() == original


@pytest.mark.slow
def test_module_entry_point_with_the_original_command_line(tmp_path, golden_dir,
                                                           uncased_vocab_file):
    """`python -m bert_tf.albert.create_pretraining_data` with the golden flags.txt."""
    argv = [line for line in open(os.path.join(golden_dir, "albert", "pretraining_data",
                                               "flags.txt")).read().splitlines()
            if not line.startswith(("--input_file", "--output_file", "--vocab_file"))]
    out = str(tmp_path / "out.tfrecord")
    proc = subprocess.run(
        [sys.executable, "-m", "bert_tf.albert.create_pretraining_data", *argv,
         "--input_file=" + os.path.join(golden_dir, "bert", "pretraining_data",
                                        "sample_text.txt"),
         "--output_file=" + out, "--vocab_file=" + uncased_vocab_file],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    golden = [json.loads(line) for line in open(os.path.join(
        golden_dir, "albert", "pretraining_data", "sample_text.seq64.decoded.jsonl"))]
    assert [r["input_ids"] for r in read_examples(out)] == [r["input_ids"] for r in golden]
    # a missing input: one line, exit 1
    proc = subprocess.run(
        [sys.executable, "-m", "bert_tf.albert.create_pretraining_data",
         "--input_file=" + str(tmp_path / "nope.txt"), "--output_file=" + out,
         "--vocab_file=" + uncased_vocab_file], cwd=REPO, capture_output=True, text=True,
        timeout=300, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: input pattern")
