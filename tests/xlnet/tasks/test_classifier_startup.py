"""XLNet run_classifier's warm start and eval without training (issue 24 item 1): the weights
are created from the checkpoint (the only random initial value drawn is the new regression
head's, at the warm start), and the fine-tuned weights and eval results equal those of the
plain build (random weights, then overwritten)."""
import os

import keras
import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.xlnet.tasks import classifier as xc
from tests.start_probe import build_plainly, record_random_draws
from tests.xlnet.tasks.test_classifier import _args, golden, stsb_subset  # noqa: F401

HEAD = [(64, 1)]  # model/regression_sts-b/logit/kernel [d_model, 1]: not in the checkpoint


def _run(golden, tmp_path, stsb_subset, out, **kw):  # noqa: F811
    keras.utils.set_random_seed(11)  # the head's initial value: the same seed in both runs
    return xc.run(_args(tmp_path / out, model_config_path=golden["config"],
                        spiece_model_file=golden["spiece"], data_dir=stsb_subset,
                        task_name="sts-b", is_regression=True, max_seq_length=16,
                        train_batch_size=4, eval_batch_size=4, train_steps=1,
                        learning_rate=0.0, init_checkpoint=golden["ckpt"], **kw))


def _trained(tmp_path, out):
    return checkpoint_io.read_checkpoint(str(tmp_path / out / "model" / "model.ckpt-1"))


@pytest.mark.slow  # two tiny training runs: over a minute on 2 shared cores
def test_warm_start_draws_random_values_for_the_new_head_only(golden, tmp_path,  # noqa: F811
                                                               stsb_subset, monkeypatch):
    drawn = record_random_draws(monkeypatch)
    _run(golden, tmp_path, stsb_subset, "built", do_train=True)
    assert drawn == HEAD
    del drawn[:]  # eval alone: the eval model is created from model.ckpt-1, nothing random
    evaluated = _run(golden, tmp_path, stsb_subset, "built", do_eval=True)
    assert drawn == []
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    _run(golden, tmp_path, stsb_subset, "plain", do_train=True)
    assert len(drawn) > len(HEAD)  # the probe sees the encoder's random values there
    plain_eval = _run(golden, tmp_path, stsb_subset, "plain", do_eval=True)
    assert evaluated.best_eval.pop("path").startswith(str(tmp_path / "built"))
    assert plain_eval.best_eval.pop("path").startswith(str(tmp_path / "plain"))
    assert evaluated.best_eval == plain_eval.best_eval
    ours, theirs = _trained(tmp_path, "built"), _trained(tmp_path, "plain")
    assert sorted(ours) == sorted(theirs)
    for name in ours:  # learning rate 0: the head keeps its initial value, equal in both
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert os.path.basename(golden["ckpt"]) == "xlnet_model.ckpt"
