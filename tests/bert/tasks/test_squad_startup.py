"""run_squad's start from a checkpoint (issue 24 item 1): the warm start of --do_train and
--do_predict without training create the restored weights from the checkpoint (the only random
initial value drawn is the new cls/squad head's), and give exactly what the plain build (random
weights, then overwritten) gives."""
import gzip
import json
import os

import numpy as np
import pytest

from bert_tf.bert.tasks import squad as task
from tests.start_probe import build_plainly, checkpoint_arrays, record_random_draws

HEAD = [(2, 64)]  # cls/squad/output_weights [2, hidden]: not in the tiny pre-trained checkpoint


def _args(golden_dir, vocab, tmp_path, out, **kw):
    gold = os.path.join(golden_dir, "bert", "squad", "v2.0")
    files = {}
    for name, source, paragraphs in (("train", "train-style-subset", slice(0, 1)),
                                     ("dev", "dev-subset", slice(2, 3))):
        with gzip.open(os.path.join(gold, source + ".json.gz"), "rt", encoding="utf-8") as f:
            data = json.load(f)
        data["data"] = [dict(data["data"][0], paragraphs=data["data"][0]["paragraphs"][paragraphs])]
        files[name] = str(tmp_path / f"{name}.json")
        with open(files[name], "w", encoding="utf-8") as f:
            json.dump(data, f)
    tiny = os.path.join(golden_dir, "bert", "tiny_random")
    base = dict(bert_config_file=os.path.join(tiny, "bert_config.json"), vocab_file=vocab,
                init_checkpoint=os.path.join(tiny, "bert_model.ckpt"),
                train_file=files["train"], predict_file=files["dev"], max_seq_length=64,
                doc_stride=32, max_query_length=16, version_2_with_negative=True,
                train_batch_size=4, num_train_epochs=1.0, predict_batch_size=8, seed=3,
                output_dir=str(tmp_path / out))
    base.update(kw)
    return task.SquadArgs(**base)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


@pytest.mark.slow  # 6 tiny runs: about 100 s on 2 shared cores
def test_warm_start_and_predict_draw_random_values_for_the_new_head_only(
        golden_dir, uncased_vocab_file, tmp_path, monkeypatch):
    def runs(prefix):
        """train; predict from the trained checkpoint; predict from --init_checkpoint alone"""
        trained = task.run(_args(golden_dir, uncased_vocab_file, tmp_path, prefix + "train",
                                 do_train=True))
        drawn_train = list(drawn)
        task.run(_args(golden_dir, uncased_vocab_file, tmp_path, prefix + "train",
                       do_predict=True))
        drawn_predict = drawn[len(drawn_train):]
        task.run(_args(golden_dir, uncased_vocab_file, tmp_path, prefix + "init",
                       do_predict=True))
        drawn_init = drawn[len(drawn_train) + len(drawn_predict):]
        del drawn[:]
        return trained, (drawn_train, drawn_predict, drawn_init)

    drawn = record_random_draws(monkeypatch)
    trained, draws = runs("")
    assert draws == (HEAD, [], HEAD)
    build_plainly(monkeypatch)  # the path before issue 24: the same numbers
    plain, plain_draws = runs("plain_")
    assert len(plain_draws[0]) > len(HEAD)  # the probe sees the encoder's random values there
    step = trained.global_step
    assert step == plain.global_step > 0
    ours = checkpoint_arrays(str(tmp_path / "train" / f"model.ckpt-{step}"))
    theirs = checkpoint_arrays(str(tmp_path / "plain_train" / f"model.ckpt-{step}"))
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    for out in ("train", "init"):
        for name in ("predictions.json", "nbest_predictions.json", "null_odds.json"):
            assert _read(tmp_path / out / name) == _read(tmp_path / f"plain_{out}" / name)
