"""ALBERT run_classifier's start from a checkpoint (issue 24 item 1): the warm start of
--do_train and --do_eval without training create the restored weights from the checkpoint
(the only random initial value drawn is the new head's), and give exactly what the plain build
(random weights, then overwritten) gives."""
import dataclasses
import os

import keras
import numpy as np
import pytest

from bert_tf.albert.tasks import classifier as albert_classifier
from bert_tf.albert.tasks.args import AlbertClassifierArgs
from tests.start_probe import build_plainly, checkpoint_arrays, record_random_draws

HEAD = [(2, 64)]  # output_weights [num_labels, hidden]: not in the pre-trained checkpoint


def _args(golden_dir, shared_data_dir, tmp_path, out):
    glue = tmp_path / "glue" / "MRPC"
    if not glue.exists():
        glue.mkdir(parents=True)
        with open(os.path.join(shared_data_dir, "MRPC", "train.tsv"), encoding="utf-8") as f:
            glue.joinpath("train.tsv").write_text("".join(f.readlines()[:9]), encoding="utf-8")
        for name in ("dev.tsv", "test.tsv"):
            with open(os.path.join(golden_dir, "albert", "classifier", "glue_data", "MRPC",
                                   name), "rb") as f:
                glue.joinpath(name).write_bytes(f.read())
    model = os.path.join(golden_dir, "albert", "model")
    return AlbertClassifierArgs(
        task_name="MRPC", data_dir=str(tmp_path / "glue"), output_dir=str(tmp_path / out),
        vocab_file="", spm_model_file="",
        albert_config_file=os.path.join(model, "albert_config.json"),
        init_checkpoint=os.path.join(model, "model.ckpt"), do_lower_case=True,
        max_seq_length=32, do_train=True, train_step=1, train_batch_size=8, eval_batch_size=8,
        learning_rate=0.0)


@pytest.mark.slow  # four tiny runs: over a minute on 2 shared cores
def test_warm_start_and_eval_draw_random_values_for_the_new_head_only(
        golden_dir, shared_data_dir, uncased_vocab_file, tmp_path, monkeypatch):
    def runs(out):
        keras.utils.set_random_seed(7)  # the head's initial value: the same seed in both runs
        args = dataclasses.replace(_args(golden_dir, shared_data_dir, tmp_path, out),
                                   vocab_file=uncased_vocab_file)
        albert_classifier.run(args)
        trained = list(drawn)
        evaluated = albert_classifier.run(dataclasses.replace(args, do_train=False,
                                                              do_eval=True))
        draws = (trained, drawn[len(trained):])
        del drawn[:]
        return evaluated, draws

    drawn = record_random_draws(monkeypatch)
    ours, draws = runs("built")
    assert draws == (HEAD, [])
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    theirs, plain_draws = runs("plain")
    assert len(plain_draws[0]) > len(HEAD)  # the probe sees the encoder's random values there
    built = checkpoint_arrays(str(tmp_path / "built" / "model.ckpt-1"))
    plain = checkpoint_arrays(str(tmp_path / "plain" / "model.ckpt-1"))
    assert sorted(built) == sorted(plain)
    for name in built:  # learning rate 0: the head keeps its initial value, equal in both
        if "adam" not in name:
            np.testing.assert_array_equal(built[name], plain[name], err_msg=name)
    assert [r for _, r in ours.evaluated] == [r for _, r in theirs.evaluated]
