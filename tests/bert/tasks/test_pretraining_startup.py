"""run_pretraining's start from a checkpoint (issue 24 item 1): with a checkpoint that holds
every weight (the tiny random BERT with its cls/* heads), the warm start of --do_train and
--do_eval alone draw no random initial value at all, and give what the plain build (random
weights, then overwritten) gives."""
import os

import keras
import numpy as np
import pytest

from bert_tf.bert.tasks.pretraining import PretrainingArgs, run as run_pretraining
from tests.start_probe import build_plainly, checkpoint_arrays, record_random_draws


def _args(golden_dir, tmp_path, out, **kw):
    tiny = os.path.join(golden_dir, "bert", "tiny_random")
    base = dict(bert_config_file=os.path.join(tiny, "bert_config.json"),
                input_file=os.path.join(golden_dir, "bert", "pretraining_data",
                                        "tf_examples.tfrecord"),
                output_dir=str(tmp_path / out), init_checkpoint=os.path.join(tiny, "bert_model.ckpt"),
                train_batch_size=8, eval_batch_size=8, max_eval_steps=1, num_train_steps=1,
                num_warmup_steps=0, save_checkpoints_steps=0, learning_rate=1e-3)
    base.update(kw)
    return PretrainingArgs(**base)


def _runs(golden_dir, tmp_path, prefix, drawn):
    keras.utils.set_random_seed(2)  # dropout masks: the same in both runs
    trained = run_pretraining(_args(golden_dir, tmp_path, prefix + "train", do_train=True))
    evaluated = run_pretraining(_args(golden_dir, tmp_path, prefix + "eval", do_eval=True))
    draws = list(drawn)
    del drawn[:]
    return trained, evaluated, draws


@pytest.mark.slow  # four tiny runs: about 2 minutes on 2 shared cores
def test_warm_start_and_eval_from_a_full_checkpoint_draw_nothing(golden_dir, tmp_path,
                                                                 monkeypatch):
    drawn = record_random_draws(monkeypatch)
    trained, evaluated, draws = _runs(golden_dir, tmp_path, "", drawn)
    assert draws == [] and not trained.train.warm_start.missing
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    _, plain_eval, plain_draws = _runs(golden_dir, tmp_path, "plain_", drawn)
    assert len(plain_draws) > 10  # the probe sees the random values there
    assert evaluated.eval_metrics == plain_eval.eval_metrics
    ours = checkpoint_arrays(str(tmp_path / "train" / "model.ckpt-1"))
    theirs = checkpoint_arrays(str(tmp_path / "plain_train" / "model.ckpt-1"))
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
