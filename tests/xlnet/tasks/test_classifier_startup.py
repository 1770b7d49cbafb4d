"""XLNet run_classifier's warm start (issue 24 item 1): the weights of --init_checkpoint are
created from it (the only random initial value drawn is the new regression head's), and the
fine-tuned weights equal those of the plain build (random weights, then overwritten)."""
import os

import keras
import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.xlnet.tasks import classifier as xc
from tests.start_probe import build_plainly, record_random_draws
from tests.xlnet.tasks.test_classifier import _args, golden, stsb_subset  # noqa: F401

HEAD = [(64, 1)]  # model/regression_sts-b/logit/kernel [d_model, 1]: not in the checkpoint


def _run(golden, tmp_path, stsb_subset, out):  # noqa: F811
    keras.utils.set_random_seed(11)  # the head's initial value: the same seed in both runs
    xc.run(_args(tmp_path / out, model_config_path=golden["config"],
                 spiece_model_file=golden["spiece"], data_dir=stsb_subset, task_name="sts-b",
                 is_regression=True, max_seq_length=16, train_batch_size=4, do_train=True,
                 train_steps=1, learning_rate=0.0, init_checkpoint=golden["ckpt"]))
    return checkpoint_io.read_checkpoint(str(tmp_path / out / "model" / "model.ckpt-1"))


@pytest.mark.slow  # two tiny training runs: over a minute on 2 shared cores
def test_warm_start_draws_random_values_for_the_new_head_only(golden, tmp_path,  # noqa: F811
                                                               stsb_subset, monkeypatch):
    drawn = record_random_draws(monkeypatch)
    ours = _run(golden, tmp_path, stsb_subset, "built")
    assert drawn == HEAD
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    del drawn[:]
    theirs = _run(golden, tmp_path, stsb_subset, "plain")
    assert len(drawn) > len(HEAD)  # the probe sees the encoder's random values there
    assert sorted(ours) == sorted(theirs)
    for name in ours:  # learning rate 0: the head keeps its initial value, equal in both
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert os.path.basename(golden["ckpt"]) == "xlnet_model.ckpt"
