"""training/metrics.py and training/eval_results.py: hand-worked values."""
import math
import os

import numpy as np
import pytest

from bert_tf.training import eval_results, metrics


def _logits_for(predictions, n_class):
    """One-hot logits whose argmax is ``predictions``."""
    out = np.zeros((len(predictions), n_class), np.float32)
    out[np.arange(len(predictions)), predictions] = 1.0
    return out


def test_mcc_binary_hand_confusion_matrix():
    # labels/predictions: tp 3, tn 2, fp 1, fn 2 (8 examples)
    labels = [1, 1, 1, 1, 1, 0, 0, 0]
    preds = [1, 1, 1, 0, 0, 0, 0, 1]
    # (tp tn - fp fn) / sqrt((tp+fp)(tp+fn)(tn+fp)(tn+fn)) = (6 - 2) / sqrt(4 * 5 * 3 * 4)
    expected = 4 / math.sqrt(240)
    mcc = metrics.matthews_corrcoef(_logits_for(preds, 2), np.array(labels), np.ones(8))
    assert mcc == pytest.approx(expected, rel=1e-12)


def test_mcc_leaves_out_padding_and_handles_degenerate_cases():
    labels = np.array([1, 0, 1, 0, 1])
    preds = [1, 0, 1, 0, 0]
    real = np.array([1, 1, 1, 1, 0])  # the last (a miss) is padding: perfect on the real ones
    assert metrics.matthews_corrcoef(_logits_for(preds, 2), labels, real) == pytest.approx(1.0)
    inverted = [0, 1, 0, 1, 1]
    assert metrics.matthews_corrcoef(_logits_for(inverted, 2), labels, real) == pytest.approx(-1.0)
    # one predicted class only: a zero factor in the denominator -> 0 (scikit-learn's choice)
    assert metrics.matthews_corrcoef(_logits_for([1] * 5, 2), labels, real) == 0.0


def test_mcc_three_classes_hand_values():
    # confusion (rows label, columns prediction): [[2, 1, 0], [0, 2, 0], [1, 0, 1]]
    labels = [0, 0, 0, 1, 1, 2, 2]
    preds = [0, 0, 1, 1, 1, 0, 2]
    # c = 5, s = 7, t = [3, 2, 2], p = [3, 3, 1]
    # cov_yp = 5*7 - (9 + 6 + 2) = 18; cov_pp = 49 - 19 = 30; cov_yy = 49 - 17 = 32
    expected = 18 / math.sqrt(30 * 32)
    mcc = metrics.matthews_corrcoef(_logits_for(preds, 3), np.array(labels), np.ones(7))
    assert mcc == pytest.approx(expected, rel=1e-12)


def test_accuracy_and_weighted_mean_weight_out_padding():
    logits = _logits_for([1, 0, 0, 1], 2)
    labels = np.array([1, 1, 0, 0])
    assert metrics.accuracy(logits, labels) == 0.5
    assert metrics.accuracy(logits, labels, np.array([1, 0, 1, 0])) == 1.0
    assert metrics.accuracy(logits, labels, np.zeros(4)) == 0.0
    assert metrics.weighted_mean([1.0, 2.0, 4.0], [1, 1, 0]) == 1.5
    assert metrics.weighted_mean([1.0], [0]) == 0.0


def test_weighted_pearson_hand_values():
    # dx = [-1, 0, 1], dy = [-7/3, -1/3, 8/3]: r = 5 / sqrt(2 * 114/9)
    assert metrics.pearson([1, 2, 3, 10], [2, 4, 7, -3], [1, 1, 1, 0]) == pytest.approx(
        5 / math.sqrt(2 * 114 / 9), rel=1e-12)
    # weight 2 on the first point = that point twice
    assert metrics.pearson([1, 2, 3], [1, 3, 2], [2, 1, 1]) == pytest.approx(
        metrics.pearson([1, 1, 2, 3], [1, 1, 3, 2]), rel=1e-12)
    assert math.isnan(metrics.pearson([1, 1, 1], [1, 2, 3]))


def test_average_ranks_and_spearman():
    assert metrics.average_ranks([10, 20, 20, 30]).tolist() == [1.0, 2.5, 2.5, 4.0]
    assert metrics.average_ranks([3, 1, 2]).tolist() == [3.0, 1.0, 2.0]
    # ranks [1, 2, 3, 4] vs [1, 3, 2, 4]: d^2 = 2 -> 1 - 6*2/(4*15) = 0.8
    assert metrics.spearman([5, 6, 7, 8], [1, 30, 20, 40]) == pytest.approx(0.8)


def test_per_example_loss_hand_values():
    logits = np.array([[0.0, 0.0], [math.log(3.0), 0.0]], np.float32)
    loss = metrics.per_example_loss(logits, np.array([1, 0]), regression=False)
    # softmax([0, 0]) = 1/2; softmax([ln 3, 0])[0] = 3/4
    np.testing.assert_allclose(loss, [math.log(2.0), -math.log(0.75)], rtol=1e-6)
    sq = metrics.per_example_loss(np.array([[1.5], [-1.0]], np.float32), np.array([1.0, 1.0]),
                                  regression=True)
    np.testing.assert_allclose(sq, [0.25, 4.0])


def test_eval_results_bytes_and_atomic_write(tmp_path):
    results = {"loss": np.float32(1.0) / np.float32(3.0), "eval_accuracy": np.float32(0.5),
               "global_step": np.int64(7), "path": "/x/model.ckpt-7", "eval_loss": 0.1 + 0.2}
    text = eval_results.format_eval_results(results)
    assert text == ("eval_accuracy = 0.5\n"
                    "eval_loss = 0.30000000000000004\n"
                    "global_step = 7\n"
                    "loss = 0.33333334\n"  # str(np.float32): shortest float32 digits
                    "path = /x/model.ckpt-7\n")
    assert eval_results.format_eval_results({}) == ""
    folder = tmp_path / "new" / "folder"
    path = eval_results.write_eval_results(str(folder), results)
    assert path == os.path.join(str(folder), "eval_results.txt")
    with open(path, "rb") as f:
        assert f.read() == text.encode("utf-8")
    # no temporary file left; eval/ holds the TensorBoard scalars (tests/training/test_summaries.py)
    assert sorted(os.listdir(folder)) == ["eval", "eval_results.txt"]


def test_constant_labels_give_nan_with_a_warning(caplog):
    """Fresh round (cls_stsb_const_eval): STS-B dev scores all 3.0 gave eval_pearson = nan
    with no word why."""
    import logging
    import math
    from bert_tf.training import metrics as m
    with caplog.at_level(logging.WARNING):
        assert math.isnan(m.pearson([0.1, 0.5, 0.9], [3.0, 3.0, 3.0]))
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == ["correlation undefined (nan): the labels are constant over the 3 examples"]
