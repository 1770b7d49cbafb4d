"""extract_features' resume key (bert_tf.run.feature_lines.resume_key) follows the inputs'
CONTENT, not their size and modification time (issue 27 item 10)."""
import dataclasses
import os

from bert_tf import checkpoint_io
from bert_tf.run.feature_lines import resume_key

import numpy as np


@dataclasses.dataclass
class _Args:
    input_file: str
    layers: str = "-1"


def _key(path, ckpt=None):
    return resume_key(_Args(path), {"--input_file": path, "--init_checkpoint": ckpt})


def test_same_size_and_time_other_text_changes_the_key(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the cat sat\n")
    os.utime(path, ns=(1_700_000_000_000_000_000,) * 2)
    before = _key(str(path))
    path.write_text("the dog sat\n")  # same size
    os.utime(path, ns=(1_700_000_000_000_000_000,) * 2)  # same time (cp -p, touch -r)
    assert _key(str(path)) != before


def test_same_text_new_time_keeps_the_key(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the cat sat\n" * 100_000)  # 1.2 MB: more than one hash chunk
    before = _key(str(path))
    os.utime(path, ns=(1_800_000_000_000_000_000,) * 2)
    assert _key(str(path)) == before


def test_checkpoint_prefix_follows_its_tensors(tmp_path):
    prefix = str(tmp_path / "model.ckpt")
    checkpoint_io.write_checkpoint(prefix, {"w": np.zeros([4], np.float32)})
    os.utime(prefix + ".index", ns=(1_700_000_000_000_000_000,) * 2)
    path = tmp_path / "in.txt"
    path.write_text("x\n")
    before = _key(str(path), prefix)
    checkpoint_io.write_checkpoint(prefix, {"w": np.ones([4], np.float32)})  # same sizes
    os.utime(prefix + ".index", ns=(1_700_000_000_000_000_000,) * 2)
    for f in os.listdir(tmp_path):
        if ".data-" in f:
            os.utime(tmp_path / f, ns=(1_700_000_000_000_000_000,) * 2)
    assert _key(str(path), prefix) != before
