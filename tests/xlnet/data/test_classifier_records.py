"""data/xlnet_classifier_records.py: XLNet classifier TFRecords read back in file order."""
import numpy as np

from bert_tf.data import tfrecord
from bert_tf.xlnet.data import classifier as xdata
from bert_tf.xlnet.data import classifier_records as records
from bert_tf.data.classifier import InputFeatures


def _write(path, rows, regression):
    with tfrecord.AtomicTFRecordWriter(path) as writer:
        for ids, mask, segs, label, real in rows:
            writer.write(xdata.feature_to_example(InputFeatures(ids, mask, segs, label, real),
                                                  regression=regression))
    return path


def test_eval_dataset_keeps_left_padding_and_order(tmp_path):
    rows = [([0, 0, 7, 4, 3], [1, 1, 0, 0, 0], [4, 4, 0, 0, 2], 2.5, True),
            ([9, 8, 7, 4, 3], [0, 0, 0, 0, 0], [0, 0, 0, 0, 2], 1.0, True),
            ([0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0], 0.0, False)]
    path = _write(str(tmp_path / "e.tf_record"), rows, regression=True)
    batches = list(records.eval_dataset(path, 5, True, batch_size=2).as_numpy_iterator())
    assert [len(b["input_ids"]) for b in batches] == [2, 1]  # last partial batch kept
    first = batches[0]
    assert first["input_ids"].dtype == np.int32 and first["input_mask"].dtype == np.float32
    np.testing.assert_array_equal(first["input_ids"], [rows[0][0], rows[1][0]])
    np.testing.assert_array_equal(first["input_mask"], [rows[0][1], rows[1][1]])
    np.testing.assert_array_equal(first["segment_ids"], [rows[0][2], rows[1][2]])
    np.testing.assert_array_equal(first["label_ids"], [2.5, 1.0])
    np.testing.assert_array_equal(batches[1]["is_real_example"], [0])
    dropped = list(records.eval_dataset(path, 5, True, 2, drop_remainder=True))
    assert len(dropped) == 1  # the original's TPU eval input_fn drops the partial batch
