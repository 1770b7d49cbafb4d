"""BertSquad (bert/squad.py): get_config round-trips to the same model."""
from bert_tf.bert.config import BertConfig
from bert_tf.bert.squad import BertSquad
from tests.bert.conftest import TINY_CONFIG, assert_config_round_trips


def test_get_config_round_trips():
    model = BertSquad(BertConfig(**TINY_CONFIG), name="bert_squad").build_with_dummy_input()
    clone = assert_config_round_trips(model, ["start_logits", "end_logits"])
    assert clone.name == "bert_squad"
    assert "cls/squad/output_weights" in clone.name_map()


def test_predict_fn_runs_a_short_last_batch_on_its_own_rows():
    # issue 25: the last batch (3 of 8 rows) is no longer padded with zero rows; its logits
    # are those of the model on those rows, and shorter batches reuse the one trace.
    import numpy as np
    import tensorflow as tf

    from bert_tf.bert.tasks.squad import model_predict_fn

    model = BertSquad(BertConfig(**TINY_CONFIG), name="bert_squad").build_with_dummy_input(16)
    rng = np.random.RandomState(0)
    ids = rng.randint(1, TINY_CONFIG["vocab_size"], (11, 16)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[:, 12:] = 0
    batch = {"unique_ids": np.arange(11, dtype=np.int64), "input_ids": ids,
             "input_mask": mask, "segment_ids": np.zeros_like(ids)}
    traced = []

    def recording(features, training=False):  # called when the predictor traces its step
        traced.append(tuple(features["input_ids"].shape))
        return model(features, training=training)

    predict_fn = model_predict_fn(recording, tf.distribute.get_strategy(), 8)
    expected = model({k: tf.constant(batch[k]) for k in ("input_ids", "input_mask",
                                                         "segment_ids")})
    for rows in (slice(0, 8), slice(8, 11)):
        start, end = predict_fn({k: v[rows] for k, v in batch.items()})
        assert start.shape == end.shape == (rows.stop - rows.start, 16)
        np.testing.assert_allclose(start, expected["start_logits"].numpy()[rows], atol=1e-5)
        np.testing.assert_allclose(end, expected["end_logits"].numpy()[rows], atol=1e-5)
    assert traced == [(None, None)]  # one trace for any batch (was [8, 16]: zero rows added)
