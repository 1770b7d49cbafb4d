"""Every script's main function with every path on ``ram://`` (TensorFlow's in-memory file
system, the ``tf.io.gfile`` API of ``gs://``) writes what a local-disk run writes (issue 17,
deliverable 2): inputs (data, vocab / SentencePiece model, config, checkpoint, records),
outputs (TFRecords, result files, checkpoints, the ``checkpoint`` state file, event files).
Tiny models, a handful of steps; :mod:`tests.tasks.ram_runs` does the two runs and the
comparison.
"""
import json
import os

import keras
import pytest

from tests.tasks.ram_runs import assert_same_outputs, run_local_and_ram


def _tiny_bert_config(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(dict(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=64, type_vocab_size=2,
        initializer_range=0.02)))
    return str(path)


@pytest.mark.slow  # two short training runs: 35-60 s on the 2 shared cores
def test_run_classifier_train_eval_predict(golden_dir, uncased_vocab_file, tmp_path, monkeypatch):
    from bert_tf.bert.tasks.classifier import ClassifierArgs, run

    mrpc = os.path.join(golden_dir, "bert", "classifier", "MRPC")
    files = {"vocab.txt": uncased_vocab_file, "bert_config.json": _tiny_bert_config(tmp_path)}
    files.update({f"MRPC/{n}": os.path.join(mrpc, n) for n in ("train.tsv", "dev.tsv",
                                                                "test.tsv")})

    def run_fn(folder):
        keras.utils.set_random_seed(17)  # the same initial weights, dropout and shuffle
        return run(ClassifierArgs(
            task_name="MRPC", data_dir=f"{folder}/MRPC", output_dir=f"{folder}/out",
            vocab_file=f"{folder}/vocab.txt", bert_config_file=f"{folder}/bert_config.json",
            do_train=True, do_eval=True, do_predict=True, max_seq_length=32,
            train_batch_size=8, eval_batch_size=8, predict_batch_size=8,
            num_train_epochs=0.4, save_checkpoints_steps=1))  # 40 / 8 * 0.4 = 2 steps

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, events = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert ram_result.global_step == local_result.global_step == 2
    for name in ("out/train.tf_record", "out/eval.tf_record", "out/predict.tf_record",
                 "out/eval_results.txt", "out/test_results.tsv", "out/checkpoint",
                 "out/model.ckpt-2.index", "out/model.ckpt-1.index"):
        assert name in plain, name
    assert set(events) == {"out", "out/eval"}


def _assert_checkpoints(plain, folder, steps):
    """``<folder>/model.ckpt-N`` bundles for ``steps`` and the ``checkpoint`` state file."""
    for step in steps:
        for part in ("index", "data-00000-of-00001"):
            assert f"{folder}/model.ckpt-{step}.{part}" in plain, (step, part)
    assert f"{folder}/checkpoint" in plain


def _assert_same_two_step_pretraining(tmp_path, monkeypatch, files, run_fn):
    """A run_pretraining run of 2 steps with eval, local and on ram://: the same outputs, 2
    steps done, checkpoints 1 and 2, ``eval_results.txt`` and both event folders."""
    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, events = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert ram_result.train.global_step == local_result.train.global_step == 2
    _assert_checkpoints(plain, "out", [1, 2])
    assert "out/eval_results.txt" in plain and set(events) == {"out", "out/eval"}


@pytest.mark.slow  # two short training runs: ~80 s on the 2 shared cores
def test_run_pretraining_bert_train_eval(golden_dir, tmp_path, monkeypatch):
    from bert_tf.bert.tasks.pretraining import PretrainingArgs, run as run_pretraining

    config = json.loads(open(os.path.join(golden_dir, "bert", "tiny_random",
                                          "bert_config.json")).read())
    files = {"bert_config.json": os.path.join(golden_dir, "bert", "tiny_random",
                                              "bert_config.json"),
             "bert_model.ckpt.index": os.path.join(golden_dir, "bert", "tiny_random",
                                                   "bert_model.ckpt.index"),
             "bert_model.ckpt.data-00000-of-00001": os.path.join(
                 golden_dir, "bert", "tiny_random", "bert_model.ckpt.data-00000-of-00001"),
             "data/tf_examples.tfrecord": os.path.join(golden_dir, "bert", "pretraining_data",
                                                       "tf_examples.tfrecord")}
    assert config["vocab_size"] > 0

    def run_fn(folder):
        keras.utils.set_random_seed(17)
        return run_pretraining(PretrainingArgs(
            bert_config_file=f"{folder}/bert_config.json", input_file=f"{folder}/data/*.tfrecord",
            init_checkpoint=f"{folder}/bert_model.ckpt", output_dir=f"{folder}/out",
            do_train=True, do_eval=True, train_batch_size=4, eval_batch_size=8,
            num_train_steps=2, num_warmup_steps=1, save_checkpoints_steps=1, max_eval_steps=2,
            learning_rate=1e-3))

    _assert_same_two_step_pretraining(tmp_path, monkeypatch, files, run_fn)


@pytest.mark.slow  # two short training runs: ~80 s on the 2 shared cores
def test_run_pretraining_xlnet_with_memory(golden_dir, tmp_path, monkeypatch):
    from tests.xlnet.tasks.test_pretraining import tiny_args
    from bert_tf.xlnet.tasks import pretraining as xpt

    src = os.path.join(golden_dir, "xlnet", "pretraining_data", "tfrecords")
    files = {f"tfrecords/{n}": os.path.join(src, n) for n in os.listdir(src)}

    def run_fn(folder):
        keras.utils.set_random_seed(17)
        return xpt.run(tiny_args(f"{folder}/tfrecords", f"{folder}/model", train_steps=2,
                                 iterations=1, save_steps=1))

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, events = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert ram_result.train.global_step == local_result.train.global_step == 2
    _assert_checkpoints(plain, "model", [1, 2])
    assert set(events) == {"model"}


@pytest.mark.slow  # two short training runs: ~80 s on the 2 shared cores
def test_run_pretraining_albert_train_eval(golden_dir, tmp_path, monkeypatch):
    from bert_tf.albert.tasks import pretraining as albert_pretraining
    from bert_tf.albert.tasks.args import AlbertPretrainingArgs

    model = os.path.join(golden_dir, "albert", "model")
    files = {"albert_config.json": os.path.join(model, "albert_config.json"),
             "data/sample.tfrecord": os.path.join(golden_dir, "albert", "pretraining_data",
                                                  "sample_text.seq64.tfrecord")}
    files.update({f"ckpt/{n}": os.path.join(model, n) for n in os.listdir(model)
                  if n.startswith("model.ckpt")})

    def run_fn(folder):
        keras.utils.set_random_seed(17)
        return albert_pretraining.run(AlbertPretrainingArgs(
            albert_config_file=f"{folder}/albert_config.json",
            input_file=f"{folder}/data/sample.tfrecord", output_dir=f"{folder}/out",
            init_checkpoint=f"{folder}/ckpt/model.ckpt", do_train=True, do_eval=True,
            max_seq_length=64, max_predictions_per_seq=10, train_batch_size=4,
            eval_batch_size=4, num_train_steps=2, num_warmup_steps=1, learning_rate=1e-3,
            save_checkpoints_steps=1, max_eval_steps=2))

    _assert_same_two_step_pretraining(tmp_path, monkeypatch, files, run_fn)


def _tree_files(src, prefix):
    """Relative name under ``prefix`` -> path, for every file under the local folder ``src``."""
    return {f"{prefix}/{os.path.relpath(os.path.join(d, n), src)}": os.path.join(d, n)
            for d, _, names in os.walk(src) for n in names}


XLNET_TINY_CONFIG = {"n_layer": 2, "d_model": 16, "n_head": 2, "d_head": 8, "d_inner": 32,
                     "ff_activation": "gelu", "untie_r": True, "n_token": 8000}


@pytest.mark.slow  # two short training runs
def test_xlnet_run_classifier_train_eval_predict(golden_dir, tmp_path, monkeypatch):
    from bert_tf.xlnet.tasks import classifier as xc

    config = tmp_path / "xlnet_config.json"
    config.write_text(json.dumps(XLNET_TINY_CONFIG))
    mrpc = os.path.join(golden_dir, "bert", "classifier", "MRPC")
    files = {"xlnet_config.json": str(config),
             "spiece.model": os.path.join(golden_dir, "xlnet", "spiece.model")}
    files.update({f"data/{n}": os.path.join(mrpc, n) for n in ("train.tsv", "dev.tsv",
                                                               "test.tsv")})

    def run_fn(folder):
        keras.utils.set_random_seed(17)
        return xc.run(xc.XLNetClassifierArgs(
            output_dir=f"{folder}/proc", model_dir=f"{folder}/model",
            predict_dir=f"{folder}/pred", data_dir=f"{folder}/data",
            model_config_path=f"{folder}/xlnet_config.json",
            spiece_model_file=f"{folder}/spiece.model", task_name="mrpc",
            max_seq_length=32, train_batch_size=8, eval_batch_size=8, predict_batch_size=8,
            learning_rate=1e-3, do_train=True, do_eval=True, do_predict=True, train_steps=2,
            save_steps=1, eval_all_ckpt=True))

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, events = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert ram_result.train.global_step == local_result.train.global_step == 2
    _assert_checkpoints(plain, "model", [1, 2])
    assert "model/eval_results.txt" in plain
    assert [n for n in plain if n.startswith("pred/")] and [n for n in plain
                                                          if n.startswith("proc/")]
    assert set(events) == {"model", "model/eval"}


@pytest.mark.slow  # the golden RACE eval twice
def test_xlnet_run_race_eval(golden_dir, shared_data_dir, tmp_path, monkeypatch):
    from bert_tf.xlnet.tasks import race as xr

    race = os.path.join(golden_dir, "xlnet_squad", "race", "RACE")
    qa = os.path.join(golden_dir, "xlnet_squad", "tiny_random_qa")
    files = _tree_files(race, "RACE")
    files.update({n: os.path.join(qa, n) for n in os.listdir(qa) if n.startswith("xlnet_")})
    files["spiece.model"] = os.path.join(shared_data_dir, "xlnet", "spiece.model")

    def run_fn(folder):
        return xr.run(xr.XLNetRaceArgs(
            do_train=False, do_eval=True, eval_split="dev", data_dir=f"{folder}/RACE",
            output_dir=f"{folder}/output_dir", model_dir=f"{folder}/model_dir",
            init_checkpoint=f"{folder}/xlnet_model.ckpt",
            model_config_path=f"{folder}/xlnet_config.json",
            spiece_model_file=f"{folder}/spiece.model", max_seq_length=128, max_qa_length=32,
            uncased=False, eval_batch_size=4, num_hosts=1, num_core_per_host=1,
            summary_type="last", use_summ_proj=True))

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, _ = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert ram_result.eval == local_result.eval
    assert "model_dir/eval_results.txt" in plain
    assert [n for n in plain if n.startswith("output_dir/") and n.endswith(".tf_record")]


@pytest.mark.slow  # two short training runs
def test_albert_run_classifier_train_eval_predict(golden_dir, uncased_vocab_file, tmp_path,
                                                  monkeypatch):
    from bert_tf.albert.tasks import classifier as albert_classifier
    from bert_tf.albert.tasks.args import AlbertClassifierArgs

    model = os.path.join(golden_dir, "albert", "model")
    glue = os.path.join(golden_dir, "albert", "classifier", "glue_data", "MRPC")
    files = {"vocab.txt": uncased_vocab_file,
             "albert_config.json": os.path.join(model, "albert_config.json"),
             "glue/MRPC/train.tsv": os.path.join(golden_dir, "bert", "classifier", "MRPC",
                                                 "train.tsv"),
             "glue/MRPC/dev.tsv": os.path.join(glue, "dev.tsv"),
             "glue/MRPC/test.tsv": os.path.join(glue, "test.tsv")}
    files.update({f"ckpt/{n}": os.path.join(model, n) for n in os.listdir(model)
                  if n.startswith("model.ckpt")})

    def run_fn(folder):
        keras.utils.set_random_seed(17)
        return albert_classifier.run(AlbertClassifierArgs(
            task_name="MRPC", data_dir=f"{folder}/glue", output_dir=f"{folder}/out",
            vocab_file=f"{folder}/vocab.txt", spm_model_file="",
            albert_config_file=f"{folder}/albert_config.json",
            init_checkpoint=f"{folder}/ckpt/model.ckpt", do_lower_case=True,
            max_seq_length=64, do_train=True, do_eval=True, do_predict=True,
            train_batch_size=8, eval_batch_size=8, predict_batch_size=8, train_step=2,
            warmup_step=1, save_checkpoints_steps=1))

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, events = assert_same_outputs(local, ram, local_tree, ram_tree)
    _assert_checkpoints(plain, "out", [1, 2])
    for name in ("out/eval_results.txt", "out/best_trial.txt", "out/test_results.tsv",
                 "out/submit_results.tsv"):
        assert name in plain, name
    assert "out" in events


def test_create_pretraining_data_bert(golden_dir, uncased_vocab_file, tmp_path, monkeypatch):
    from bert_tf.data.pretraining import create_pretraining_data

    files = {"vocab.txt": uncased_vocab_file,
             "text/sample_text.txt": os.path.join(golden_dir, "bert", "pretraining_data",
                                                  "sample_text.txt")}

    def run_fn(folder):  # the golden command line (pretraining_data/flags.txt), dupe_factor 2
        return create_pretraining_data(
            input_file=f"{folder}/text/*.txt", output_file=f"{folder}/out/tf_examples.tfrecord",
            vocab_file=f"{folder}/vocab.txt", do_lower_case=True, max_seq_length=128,
            max_predictions_per_seq=20, masked_lm_prob=0.15, random_seed=12345, dupe_factor=2)

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, _ = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert sorted(plain) == ["out/tf_examples.tfrecord"] and ram_result == local_result > 0


def test_create_pretraining_data_xlnet(golden_dir, tmp_path, monkeypatch):
    import numpy as np

    from bert_tf.data.tfrecord import read_examples
    from bert_tf.xlnet.tasks.pretraining_data import XLNetDataArgs, run
    from tests.xlnet.tasks.test_pretraining_data import RECORDS

    golden = os.path.join(golden_dir, "xlnet", "pretraining_data")
    files = {"sotu_pretrain.txt": os.path.join(golden, "sotu_pretrain.txt"),
             "spiece.model": os.path.join(golden_dir, "xlnet", "spiece.model")}

    def run_fn(folder):  # the golden command line (README section E)
        return run(XLNetDataArgs(
            use_tpu=False, bsz_per_host=4, num_core_per_host=1, seq_len=128, reuse_len=64,
            uncased=False, bi_data=True, mask_alpha=6, mask_beta=1, use_eod=True,
            from_raw_text=True, num_predict=21, input_glob=f"{folder}/sotu_pretrain.txt",
            sp_path=f"{folder}/spiece.model", save_dir=f"{folder}/pretraining_data",
            split="train", pass_id=0, num_task=1, task=0, random_seed=20190619))

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, _ = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert f"pretraining_data/tfrecords/{RECORDS}" in plain
    assert "pretraining_data/corpus_info.json" in plain
    # and they are the original's records (golden decoded_tfrecords.npz)
    records = list(read_examples(os.path.join(local, "pretraining_data", "tfrecords", RECORDS)))
    with np.load(os.path.join(golden, "decoded_tfrecords.npz")) as want:
        np.testing.assert_array_equal(np.array([r["input"] for r in records]), want["input"])


def test_create_pretraining_data_albert(golden_dir, uncased_vocab_file, tmp_path, monkeypatch):
    from bert_tf.albert.tasks.pretraining_data import AlbertDataArgs, run

    files = {"vocab.txt": uncased_vocab_file,
             "sample_text.txt": os.path.join(golden_dir, "bert", "pretraining_data",
                                             "sample_text.txt")}

    def run_fn(folder):  # the golden command line (albert/pretraining_data/flags.txt)
        return run(AlbertDataArgs(
            input_file=f"{folder}/sample_text.txt", output_file=f"{folder}/out/s.tfrecord",
            vocab_file=f"{folder}/vocab.txt", do_lower_case=True, max_seq_length=64,
            max_predictions_per_seq=10, masked_lm_prob=0.15, dupe_factor=2, random_seed=12345,
            ngram=3, favor_shorter_ngram=True, random_next_sentence=False)).num_instances

    local, ram, local_tree, ram_tree, local_result, ram_result = run_local_and_ram(
        tmp_path, monkeypatch, files, run_fn)
    plain, _ = assert_same_outputs(local, ram, local_tree, ram_tree)
    assert sorted(plain) == ["out/s.tfrecord"] and ram_result == local_result == 28
