"""run_classifier's start from a checkpoint (issue 24 item 1): the warm start of --do_train and
the eval run without training create the restored weights from the checkpoint (no random
initial value is drawn for them), and give exactly what the plain build (random weights, then
overwritten) gives."""
import json
import os
import shutil

import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.bert.checkpoint_map import bert_model_map
from bert_tf.bert.config import BertConfig
from bert_tf.bert.model import BertModel
from bert_tf.bert.tasks.args import ClassifierArgs
from bert_tf.bert.tasks.classifier import run
from tests.start_probe import build_plainly, checkpoint_arrays, record_random_draws

CONFIG = dict(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
              intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.1,
              attention_probs_dropout_prob=0.1, max_position_embeddings=64,
              type_vocab_size=2, initializer_range=0.02)
HEAD = [(2, 16)]  # MRPC's output_weights [num_labels, hidden]: the only weight not restored


@pytest.fixture(scope="module")
def model_dir(uncased_vocab_file, tmp_path_factory):
    """A tiny BERT (1 layer, hidden 16) whose bert_model.ckpt holds the encoder only, with
    values of a fixed numpy seed."""
    d = tmp_path_factory.mktemp("tiny_bert_init")
    with open(d / "bert_config.json", "w") as f:
        json.dump(CONFIG, f)
    shutil.copy(uncased_vocab_file, d / "vocab.txt")
    rng = np.random.RandomState(0)
    encoder = BertModel(BertConfig(**CONFIG)).build_with_dummy_input()
    checkpoint_io.write_checkpoint(str(d / "bert_model.ckpt"), {
        name: (0.02 * rng.standard_normal(tuple(v.shape))).astype(np.float32)
        for name, v in bert_model_map(encoder).items()})
    return d


def _args(model_dir, golden_dir, output_dir, **kw):
    base = dict(task_name="MRPC", data_dir=os.path.join(golden_dir, "bert", "classifier", "MRPC"),
                output_dir=str(output_dir), vocab_file=str(model_dir / "vocab.txt"),
                bert_config_file=str(model_dir / "bert_config.json"),
                init_checkpoint=str(model_dir / "bert_model.ckpt"), max_seq_length=32,
                train_batch_size=8, eval_batch_size=8, num_train_epochs=0.4, seed=5)
    base.update(kw)
    return ClassifierArgs(**base)


def test_warm_start_and_eval_draw_random_values_for_the_new_head_only(
        model_dir, golden_dir, tmp_path, monkeypatch):
    drawn = record_random_draws(monkeypatch)
    trained = run(_args(model_dir, golden_dir, tmp_path / "built", do_train=True))
    assert drawn == HEAD
    assert trained.train.warm_start.missing == ["output_weights", "output_bias"]
    # eval alone restores every weight from --output_dir: nothing random at all
    del drawn[:]
    evaluated = run(_args(model_dir, golden_dir, tmp_path / "built", do_eval=True))
    assert drawn == [] and evaluated.global_step == trained.global_step == 2

    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    del drawn[:]
    plain = run(_args(model_dir, golden_dir, tmp_path / "plain", do_train=True))
    assert len(drawn) > len(HEAD)  # the probe sees the encoder's random values there
    plain_eval = run(_args(model_dir, golden_dir, tmp_path / "plain", do_eval=True))
    ours = checkpoint_arrays(str(tmp_path / "built" / "model.ckpt-2"))
    theirs = checkpoint_arrays(str(tmp_path / "plain" / "model.ckpt-2"))
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert evaluated.eval_results == plain_eval.eval_results
