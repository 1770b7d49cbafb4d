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


def test_run_classifier_train_eval_predict(golden_dir, uncased_vocab_file, tmp_path, monkeypatch):
    from bert_tf.tasks.classifier import ClassifierArgs, run

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
