"""run_classifier --doc_stride (issue 13): long MRPC-layout pairs through the real MiniLM with
the golden classifier head; an example's prediction must equal the mean / max of its windows'
logits computed directly (the model on each window's ids, windows built here by the original
run_squad rule), with one test_results.tsv row per example and per-example metrics. Unset, the records are
the original's: tests/bert/tasks/test_classifier.py's golden tests."""
import csv
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data.tfrecord import read_examples
from bert_tf.errors import FlagError, InputDataError
from bert_tf.bert.tasks.classifier import ClassifierArgs, run
from bert_tf.tokenization.wordpiece import FullTokenizer
from bert_tf.albert.tasks.args import AlbertClassifierArgs, read_args
from tests.tasks.reference_windows import reference_spans

MAX_SEQ_LENGTH = 64
DOC_STRIDE = 20


@pytest.fixture(scope="module")
def head_ckpt_dir(minilm_dir, golden_dir, tmp_path_factory):
    """Converted MiniLM + the golden classifier head (a real 2-label head)."""
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm_head_windows"))
    convert_hf_folder(minilm_dir, out, extra_npz=os.path.join(
        golden_dir, "bert", "classifier", "classifier_head.npz"))
    return out


def _args(ckpt_dir, data_dir, output_dir, **kw):
    base = dict(task_name="MRPC", data_dir=str(data_dir), output_dir=str(output_dir),
                vocab_file=os.path.join(ckpt_dir, "vocab.txt"),
                bert_config_file=os.path.join(ckpt_dir, "bert_config.json"),
                init_checkpoint=os.path.join(ckpt_dir, "bert_model.ckpt"),
                max_seq_length=MAX_SEQ_LENGTH, eval_batch_size=4, predict_batch_size=4)
    base.update(kw)
    return ClassifierArgs(**base)


def _examples(shared_data_dir):
    """(label, text_a, text_b): text_a 1-6 consecutive MRPC dev #1 sentences, text_b a short
    #2 sentence; one short pair that fits in one window, one where text_b is the longer."""
    with open(os.path.join(shared_data_dir, "MRPC", "dev.tsv"), encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
    out = []
    for i, n in enumerate([6, 1, 4, 3]):
        a = " ".join(r[3] for r in rows[10 * i:10 * i + n])
        out.append((rows[10 * i][0], a, " ".join(rows[10 * i][4].split()[:6])))
    out.append((rows[50][0], " ".join(rows[50][3].split()[:5]), " ".join(r[4] for r in rows[50:55])))
    return out


@pytest.fixture(scope="module")
def data_dir(shared_data_dir, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mrpc_long")
    examples = _examples(shared_data_dir)
    with open(folder / "dev.tsv", "w", encoding="utf-8") as f:
        f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for i, (label, a, b) in enumerate(examples):
            f.write(f"{label}\t{i}\t{i}\t{a}\t{b}\n")
    with open(folder / "test.tsv", "w", encoding="utf-8") as f:
        f.write("index\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for i, (_, a, b) in enumerate(examples):
            f.write(f"{i}\t{i}\t{i}\t{a}\t{b}\n")
    with open(folder / "train.tsv", "w", encoding="utf-8") as f:
        f.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
        for i, (label, a, b) in enumerate(examples):
            f.write(f"{label}\t{i}\t{i}\t{a}\t{b}\n")
    return folder


@pytest.fixture(scope="module")
def direct_window_logits(head_ckpt_dir, shared_data_dir):
    """Per example, the logits of each window, from the model run directly on the window ids."""
    from bert_tf.bert.classifier import BertClassifier
    from bert_tf.bert.config import BertConfig
    from bert_tf.training.restore import restore_for_inference

    tokenizer = FullTokenizer(os.path.join(head_ckpt_dir, "vocab.txt"), do_lower_case=True)
    config = BertConfig.from_json_file(os.path.join(head_ckpt_dir, "bert_config.json"))
    model = BertClassifier(config, 2)
    model.build_with_dummy_input()
    restore_for_inference(model.name_map(), os.path.join(head_ckpt_dir, "none"),
                          os.path.join(head_ckpt_dir, "bert_model.ckpt"))
    per_example = []
    for _, text_a, text_b in _examples(shared_data_dir):
        a, b = tokenizer.tokenize(text_a), tokenizer.tokenize(text_b)
        long_is_a = len(a) >= len(b)
        long_side, short_side = (a, b) if long_is_a else (b, a)
        room = MAX_SEQ_LENGTH - 3 - len(short_side)
        rows = []
        for start, length in reference_spans(len(long_side), room, DOC_STRIDE):
            part = long_side[start:start + length]
            wa, wb = (part, short_side) if long_is_a else (short_side, part)
            tokens = ["[CLS]"] + wa + ["[SEP]"] + wb + ["[SEP]"]
            segments = [0] * (len(wa) + 2) + [1] * (len(wb) + 1)
            ids = tokenizer.convert_tokens_to_ids(tokens)
            rows.append((ids, segments))
        ids = np.zeros((len(rows), MAX_SEQ_LENGTH), np.int32)
        mask, segs = np.zeros_like(ids), np.zeros_like(ids)
        for r, (i, s) in enumerate(rows):
            ids[r, :len(i)], mask[r, :len(i)], segs[r, :len(s)] = i, 1, s
        out = model({"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                     "segment_ids": tf.constant(segs)}, training=False)
        per_example.append(out["logits"].numpy())
    return per_example


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.slow  # ~35 s a run here (model build, restore, eval + predict)
@pytest.mark.parametrize("pooling", [None, "max"])
def test_prediction_pools_the_windows_logits(head_ckpt_dir, data_dir, direct_window_logits,
                                             shared_data_dir, tmp_path, pooling):
    counts = [len(x) for x in direct_window_logits]
    assert counts[1] == 1 and counts[0] >= 4 and counts[4] >= 2  # long a, fitting pair, long b
    result = run(_args(head_ckpt_dir, data_dir, tmp_path / "out", do_eval=True, do_predict=True,
                       doc_stride=DOC_STRIDE, window_pooling=pooling))
    reduce = np.mean if pooling is None else np.max  # unset: mean
    pooled = np.stack([reduce(x, axis=0) for x in direct_window_logits])
    np.testing.assert_allclose(result.predictions, _softmax(pooled), atol=2e-5, rtol=0)
    with open(tmp_path / "out" / "test_results.tsv", encoding="utf-8") as f:
        rows = [[float(v) for v in line.split("\t")] for line in f.read().splitlines()]
    assert len(rows) == 5  # one row per example, not per window
    np.testing.assert_allclose(rows, _softmax(pooled), atol=2e-5, rtol=0)
    # per-example metrics of the pooled logits
    labels = np.array([int(label) for label, _, _ in _examples(shared_data_dir)])
    accuracy = np.mean(pooled.argmax(axis=1) == labels)
    assert float(result.eval_results["eval_accuracy"]) == pytest.approx(accuracy, abs=1e-6)
    log_probs = pooled - np.log(np.exp(pooled).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(5), labels]
    assert float(result.eval_results["eval_loss"]) == pytest.approx(loss.mean(), abs=2e-5)
    # batches of 4 examples: [0..3], [4]
    assert float(result.eval_results["loss"]) == pytest.approx(
        (loss[:4].mean() + loss[4:].mean()) / 2, abs=2e-5)
    assert result.num_eval_examples == 5
    # the records: one per window, each with its example's index
    records = list(read_examples(str(tmp_path / "out" / "eval.tf_record")))
    assert [r["example_index"][0] for r in records] == [i for i, n in enumerate(counts)
                                                        for _ in range(n)]


@pytest.mark.slow  # ~90 s here (one training step, checkpoint)
def test_training_uses_every_window_with_its_label(head_ckpt_dir, data_dir,
                                                   direct_window_logits, tmp_path):
    counts = [len(x) for x in direct_window_logits]
    result = run(_args(head_ckpt_dir, data_dir, tmp_path / "out", do_train=True,
                       train_batch_size=4, num_train_epochs=1.0, doc_stride=DOC_STRIDE),
                 stop_at_step=1)
    assert result.num_train_steps == int(sum(counts) / 4 * 1.0)
    records = list(read_examples(str(tmp_path / "out" / "train.tf_record")))
    labels = [int(x) for x in np.repeat([int(l) for l, _, _ in _examples_of(data_dir)], counts)]
    assert [r["label_ids"][0] for r in records] == labels


def _examples_of(data_dir):
    with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f:
        return [(r[0], r[3], r[4]) for r in csv.reader(f, delimiter="\t", quotechar=None)][1:]


@pytest.mark.parametrize("kw, message", [
    (dict(window_pooling="max"), "--window_pooling=max needs --doc_stride"),
    (dict(doc_stride=63), "--doc_stride=63 is larger than the window of 62 tokens"),
    (dict(doc_stride=0), "--doc_stride=0: must be at least 1"),
])
def test_bad_window_flags_fail_before_anything_is_written(head_ckpt_dir, data_dir, tmp_path,
                                                          kw, message):
    with pytest.raises(FlagError, match=message):
        run(_args(head_ckpt_dir, data_dir, tmp_path / "out", do_eval=True, **kw))
    assert not os.path.exists(tmp_path / "out")


def test_pair_whose_short_side_leaves_no_room_for_the_stride(head_ckpt_dir, data_dir, tmp_path):
    # text_b (6 words: >= 6 pieces) kept whole leaves at most 64 - 3 - 6 = 55 < 58 tokens of
    # text_a; found before training, nothing written
    with pytest.raises(InputDataError, match=r"train.tf_record: example train-\d+: text_b has "
                                             r"\d+ tokens and is kept whole in every window"):
        run(_args(head_ckpt_dir, data_dir, tmp_path / "out", do_train=True, do_eval=True,
                  doc_stride=58))
    assert os.listdir(tmp_path / "out") == []


def test_albert_mode_refuses_doc_stride_in_one_line():
    from absl import flags as absl_flags

    from bert_tf import flags as bert_flags
    from bert_tf.albert.tasks import classifier as albert_classifier

    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_CLASSIFIER, ClassifierArgs.__dataclass_fields__),
        (bert_flags.ALBERT_RUN_CLASSIFIER, bert_flags.field_names(albert_classifier.AlbertClassifierArgs)),
        flag_values=fv)
    fv(["prog", "--albert_config_file=c.json", "--task_name=MRPC", "--doc_stride=64"])
    with pytest.raises(FlagError) as e:
        read_args(AlbertClassifierArgs, fv)
    assert str(e.value) == (
        "ALBERT's run_classifier (--albert_config_file) does not read --doc_stride (use the "
        "BERT or XLNet mode for sliding windows; ALBERT mode truncates as ALBERT's original)")


def test_root_script_flags_default_to_the_originals_truncation():
    from absl import flags as absl_flags

    from bert_tf import flags as bert_flags
    from bert_tf.albert.tasks import classifier as albert_classifier
    from bert_tf.xlnet.tasks import classifier as xlnet_classifier

    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_CLASSIFIER, ClassifierArgs.__dataclass_fields__),
        (bert_flags.XLNET_RUN_CLASSIFIER, bert_flags.field_names(xlnet_classifier.XLNetClassifierArgs)),
        (bert_flags.ALBERT_RUN_CLASSIFIER, bert_flags.field_names(albert_classifier.AlbertClassifierArgs)),
        flag_values=fv)
    fv(["prog"])
    assert fv.doc_stride is None and fv.window_pooling is None  # run_squad's is 128
    assert bert_flags.RUN_SQUAD.default("doc_stride") == 128
    help_text = fv["doc_stride"].help
    assert help_text.startswith("(bert_tf, beyond the original) Split an input longer")
    assert "(bert_tf, beyond the original)" in fv["window_pooling"].help
    args = bert_flags.args_from_flags(xlnet_classifier.XLNetClassifierArgs, fv)
    assert args.doc_stride is None and args.window_pooling is None
