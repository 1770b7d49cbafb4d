"""create_pretraining_data.py on XLNet's data_utils.py command line (spec xlnet.md 6.1), run as
a user would, against the golden records of the original (README section E)."""

import os
import shutil
import subprocess
import sys

import numpy as np

from bert_tf.data.tfrecord import read_examples

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
RECORDS = "train-0-0.bsz-4.seqlen-128.reuse-64.bi.alpha-6.beta-1.fnp-21.tfrecords"

# The golden command line (README section E) plus --random_seed for Python's random.
GOLDEN_FLAGS = ["--use_tpu=False", "--bsz_per_host=4", "--num_core_per_host=1", "--seq_len=128",
                "--reuse_len=64", "--uncased=False", "--bi_data=True", "--mask_alpha=6",
                "--mask_beta=1", "--use_eod=True", "--from_raw_text=True", "--num_predict=21",
                "--input_glob=sotu_pretrain.txt", "--sp_path=spiece.model",
                "--save_dir=pretraining_data", "--split=train", "--pass_id=0", "--num_task=1",
                "--task=0"]


def run_script(cwd, *flags):
    return subprocess.run([sys.executable, os.path.join(REPO, "create_pretraining_data.py"),
                           *flags], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=REPO))


def test_original_command_line_gives_the_golden_records(tmp_path, golden_dir):
    golden = os.path.join(golden_dir, "xlnet", "pretraining_data")
    shutil.copy(os.path.join(golden, "sotu_pretrain.txt"), tmp_path)
    shutil.copy(os.path.join(golden_dir, "xlnet", "spiece.model"), tmp_path)
    done = run_script(tmp_path, *GOLDEN_FLAGS, "--random_seed=20190619")
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"wrote 116 batches to pretraining_data/tfrecords/{RECORDS}" in done.stdout
    records = list(read_examples(str(tmp_path / "pretraining_data" / "tfrecords" / RECORDS)))
    want = np.load(os.path.join(golden, "decoded_tfrecords.npz"))
    for key in ("input", "target", "seg_id", "is_masked"):
        np.testing.assert_array_equal(np.array([r[key] for r in records]), want[key])
    with open(os.path.join(golden, "corpus_info.json")) as f:
        assert (tmp_path / "pretraining_data" / "corpus_info.json").read_text() == f.read()
    # A BERT flag in XLNet mode, and an XLNet mistake: one line each, exit 1, no traceback.
    bad = run_script(tmp_path, *GOLDEN_FLAGS, "--vocab_file=vocab.txt")
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "error: BERT flag(s) given" in bad.stderr and "--vocab_file (use --sp_path)" in bad.stderr
    bad = run_script(tmp_path, *GOLDEN_FLAGS, "--reuse_len=200", "--save_dir=other")
    assert bad.returncode == 1 and "error: --reuse_len=200" in bad.stderr
    assert not (tmp_path / "other").exists() or not os.listdir(tmp_path / "other" / "tfrecords")
