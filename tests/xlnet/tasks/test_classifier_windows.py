"""XLNet run_classifier --doc_stride (issue 13): long MRPC pairs, the golden tiny XLNet with a
fixed head; each example's logits must equal the mean / max of its windows' logits computed
directly (the model on each window's ids, windows built here by the run_squad rule), one
prediction row per example, per-example metrics."""
import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import checkpoint_io
from bert_tf.data import tfrecord
from bert_tf.errors import FlagError
from bert_tf.xlnet.tasks import classifier as xc
from tests.tasks.reference_windows import reference_spans

MAX_SEQ_LENGTH = 32
DOC_STRIDE = 9
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


@pytest.fixture(scope="module")
def golden(xlnet_tiny_files):
    return xlnet_tiny_files


def _examples(shared_data_dir):
    with open(os.path.join(shared_data_dir, "MRPC", "dev.tsv"), encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
    out = []
    for i, n in enumerate([3, 1, 2]):
        a = " ".join(r[3] for r in rows[10 * i:10 * i + n])
        out.append((int(rows[10 * i][0]), a, " ".join(rows[10 * i][4].split()[:3])))
    out[1] = (out[1][0], " ".join(out[1][1].split()[:6]), out[1][2])  # fits in one window
    return out


def _args(tmp_path, golden, **kw):
    base = dict(output_dir=str(tmp_path / "proc"), model_dir=str(tmp_path / "model"),
                predict_dir=str(tmp_path / "pred"), data_dir=str(tmp_path / "data"),
                model_config_path=golden["config"], spiece_model_file=golden["spiece"],
                task_name="MRPC", do_eval=True, do_predict=True, max_seq_length=MAX_SEQ_LENGTH,
                eval_batch_size=2, predict_batch_size=2, dropout=0.0, dropatt=0.0)
    base.update(kw)
    return xc.XLNetClassifierArgs(**base)


@pytest.mark.slow  # ~45 s a run here (eval + predict, then the direct runs)
@pytest.mark.parametrize("pooling", [None, "max"])
def test_eval_and_predict_pool_the_windows_logits(golden, shared_data_dir, tmp_path, pooling):
    from bert_tf.tokenization.sentencepiece_prepro import load_sp_model, tokenize_fn
    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.config import XLNetConfig

    examples = _examples(shared_data_dir)
    os.makedirs(tmp_path / "data")
    with open(tmp_path / "data" / "dev.tsv", "w", encoding="utf-8") as f:
        f.write(MRPC_HEADER + "".join(f"{y}\t{i}\t{i}\t{a}\t{b}\n"
                                      for i, (y, a, b) in enumerate(examples)))
    arrays = checkpoint_io.read_checkpoint(golden["ckpt"])
    rng = np.random.RandomState(0)
    arrays["model/classification_mrpc/logit/kernel"] = rng.normal(0, 0.5, [64, 2]).astype(np.float32)
    arrays["model/classification_mrpc/logit/bias"] = rng.normal(0, 0.5, [2]).astype(np.float32)
    arrays["global_step"] = np.int64(0)
    checkpoint_io.write_checkpoint(str(tmp_path / "model" / "model.ckpt-0"), arrays)
    args = _args(tmp_path, golden, doc_stride=DOC_STRIDE, window_pooling=pooling)
    result = xc.run(args)

    # directly: the model on each window alone (unpadded), A_window <sep> B <sep> <cls>
    config = XLNetConfig.from_json_file(golden["config"])
    model = xc.build_classifier(config, args, 2, is_training=False)
    checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(model),
                                         str(tmp_path / "model" / "model.ckpt-0"),
                                         require_all=True, untie_r=config.untie_r)
    sp = load_sp_model(golden["spiece"])
    pooled, counts = [], []
    for _, text_a, text_b in examples:
        a, b = tokenize_fn(sp, text_a, uncased=False), tokenize_fn(sp, text_b, uncased=False)
        assert len(a) >= len(b)  # text_a is windowed (on a tie too)
        window_logits = []
        spans = reference_spans(len(a), MAX_SEQ_LENGTH - 3 - len(b), DOC_STRIDE)
        for start, length in spans:
            ids = a[start:start + length] + [4] + b + [4, 3]  # <sep> 4, <cls> 3
            segs = [0] * (length + 1) + [1] * (len(b) + 1) + [2]
            out = model({"input_ids": tf.constant([ids], tf.int32),
                         "segment_ids": tf.constant([segs], tf.int32),
                         "input_mask": tf.zeros([1, len(ids)], tf.float32)}, training=False)
            window_logits.append(out["logits"].numpy()[0])
        counts.append(len(spans))
        reduce = np.mean if pooling is None else np.max
        pooled.append(reduce(np.array(window_logits, np.float64), axis=0))
    pooled = np.array(pooled)
    assert counts[1] == 1 and counts[0] > 3 and counts[2] > 2

    with open(tmp_path / "pred" / "mrpc.logits.json") as f:
        np.testing.assert_allclose(np.array(json.load(f)), pooled, atol=2e-5)
    with open(tmp_path / "pred" / "mrpc.tsv") as f:
        tsv = f.read().splitlines()
    assert tsv == ["index\tprediction"] + [f"{i}\t{int(v[1] - v[0] > 0)}"
                                           for i, v in enumerate(pooled)]
    labels = np.array([y for y, _, _ in examples])
    log_probs = pooled - np.log(np.exp(pooled).sum(1, keepdims=True))
    losses = -log_probs[np.arange(3), labels]
    best = result.best_eval
    assert best["eval_loss"] == pytest.approx(losses.mean(), abs=2e-5)
    assert best["eval_accuracy"] == pytest.approx(np.mean(pooled.argmax(1) == labels))
    assert best["loss"] == pytest.approx((losses[:2].mean() + losses[2:].mean()) / 2, abs=2e-5)
    # window records, padded to a multiple of eval_batch_size, under their own file name
    records = list(tfrecord.read_examples(str(
        tmp_path / "proc" / f"spiece.model.len-32.dev.eval.stride-{DOC_STRIDE}.tf_record")))
    index = [i for i, n in enumerate(counts) for _ in range(n)]
    index += [-1] * (len(index) % 2)
    assert [r["example_index"][0] for r in records] == index


def test_bad_window_flags(golden, tmp_path):
    with pytest.raises(FlagError, match="--window_pooling=max needs --doc_stride"):
        xc.run(_args(tmp_path, golden, window_pooling="max"))
    with pytest.raises(FlagError, match="--doc_stride=31 is larger than the window of 30"):
        xc.run(_args(tmp_path, golden, doc_stride=31))
    assert not os.path.exists(tmp_path / "proc")
