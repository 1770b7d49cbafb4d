"""Padding-free batches (issue 25): the cut length, BERT's right and XLNet's left padding, the
loss and gradients of a cut batch against the padded one at float32 (hand-made tiny models),
and --group_by_length's batches."""
import numpy as np
import tensorflow as tf

from bert_tf.bert.classifier import BertClassifier, classifier_loss_fn
from bert_tf.bert.config import BertConfig
from bert_tf.bert.squad import BertSquad, squad_loss
from bert_tf.data.classifier_records import group_by_length, trim_features
from bert_tf.training.predict import BatchPredictor, trim_batch, trimmed_length
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.model import XLNetClassifier
from bert_tf.xlnet.tasks.finetuning import task_loss

LENGTHS = (5, 17, 9, 3)  # longest real row 17 -> cut to 24 of 40


def _right_padded(seq=40, lengths=LENGTHS, seed=0):
    """BERT layout: ``[CLS] ... [SEP]`` then zeros; input_mask 1 = real token."""
    rs = np.random.RandomState(seed)
    rows = len(lengths)
    ids, mask, segs = (np.zeros((rows, seq), np.int32) for _ in range(3))
    for r, n in enumerate(lengths):
        ids[r, :n] = rs.randint(1, 50, n)
        mask[r, :n] = 1
        segs[r, n // 2:n] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segs}


def _left_padded(seq=40, lengths=LENGTHS, seed=0):
    """XLNet layout (classifier_utils.py): padding first (id 0, segment 4, mask 1.0), the real
    tokens last, ``<cls>`` (segment 2) the very last; input_mask float 1 = padding."""
    rs = np.random.RandomState(seed)
    rows = len(lengths)
    ids = np.zeros((rows, seq), np.int32)
    segs = np.full((rows, seq), 4, np.int32)
    mask = np.ones((rows, seq), np.float32)
    for r, n in enumerate(lengths):
        ids[r, seq - n:] = rs.randint(10, 50, n)
        segs[r, seq - n:] = 0
        segs[r, seq - n // 2:] = 1
        segs[r, -1] = 2
        mask[r, seq - n:] = 0.0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segs}


def _loss_and_grads(model, loss_fn, features, labels):
    with tf.GradientTape() as tape:
        loss = loss_fn(model, {k: tf.constant(v) for k, v in features.items()},
                       tf.constant(labels))
    grads = tape.gradient(loss, model.trainable_variables)
    return float(loss), [tf.convert_to_tensor(g).numpy() for g in grads]


def _assert_same_loss_and_grads(model, loss_fn, full, cut, labels):
    loss_full, grads_full = _loss_and_grads(model, loss_fn, full, labels)
    loss_cut, grads_cut = _loss_and_grads(model, loss_fn, cut, labels)
    np.testing.assert_allclose(loss_cut, loss_full, rtol=1e-6, atol=1e-6)
    assert len(grads_cut) == len(grads_full) > 10
    for a, b, v in zip(grads_cut, grads_full, model.trainable_variables):
        np.testing.assert_allclose(a, b, atol=2e-6, rtol=1e-5, err_msg=v.name)
    return loss_full, grads_full


def _cut(features, padding_side):
    return {k: v.numpy() for k, v in
            trim_features({k: tf.constant(v) for k, v in features.items()},
                          padding_side=padding_side).items()}


def test_cut_length_is_longest_real_row_rounded_up_to_8_on_either_side():
    right, left = _right_padded(), _left_padded()
    assert trimmed_length(right["input_mask"], 8) == 24
    assert trimmed_length(left["input_mask"], 8, padding_side="left") == 24
    cut_r, cut_l = _cut(right, "right"), _cut(left, "left")
    assert cut_r["input_ids"].shape == cut_l["input_ids"].shape == (4, 24)
    # right: the first 24 positions; left: the last 24 (every real token and <cls> kept)
    np.testing.assert_array_equal(cut_r["input_ids"], right["input_ids"][:, :24])
    np.testing.assert_array_equal(cut_l["input_ids"], left["input_ids"][:, 16:])
    assert cut_l["segment_ids"][:, -1].tolist() == [2, 2, 2, 2]
    assert (1 - cut_l["input_mask"]).sum(axis=1).tolist() == list(LENGTHS)
    np.testing.assert_array_equal(trim_batch(left, 24, padding_side="left")["input_mask"],
                                  cut_l["input_mask"])
    # a batch of one-token rows still keeps 8; a full row keeps everything
    assert trimmed_length(np.ones((2, 40), np.float32), 8, padding_side="left") == 8
    assert _cut(_right_padded(lengths=(40, 2)), "right")["input_ids"].shape == (2, 40)


def _tiny_bert():
    return BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=32, max_position_embeddings=40, type_vocab_size=2,
                      hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def test_bert_classifier_cut_batch_has_the_padded_loss_and_gradients():
    tf.random.set_seed(1)
    model = BertClassifier(_tiny_bert(), 3).build_with_dummy_input(40)
    model.dropout.rate = 0.0  # the head's dropout 0.1 (no other randomness in the step)
    full = _right_padded()
    loss, grads = _assert_same_loss_and_grads(model, classifier_loss_fn(False), full,
                                              _cut(full, "right"), np.array([0, 2, 1, 1]))
    assert loss > 0 and max(float(np.abs(g).max()) for g in grads) > 1e-4


def test_bert_squad_cut_keeps_real_positions_but_not_the_original_loss():
    """BERT's SQuAD loss (run_squad.py compute_loss) is a log_softmax over EVERY position,
    padding included, and post-processing ranks every position's logits: a cut batch gives
    the same logits on the real positions but another loss, so run_squad keeps full length."""
    tf.random.set_seed(2)
    model = BertSquad(_tiny_bert())
    model.build_with_dummy_input(40)
    full = _right_padded()
    cut = _cut(full, "right")
    out_full = model(full, training=False)
    out_cut = model(cut, training=False)
    for r, n in enumerate(LENGTHS):
        for key in ("start_logits", "end_logits"):
            np.testing.assert_allclose(out_cut[key].numpy()[r, :n], out_full[key].numpy()[r, :n],
                                       atol=1e-6)
    pos = tf.constant([1, 3, 2, 0])
    loss_full = float(squad_loss(out_full["start_logits"], out_full["end_logits"], pos, pos))
    loss_cut = float(squad_loss(out_cut["start_logits"], out_cut["end_logits"], pos, pos))
    # 40 vs 24 positions in each softmax: the padded loss is larger
    assert loss_full > loss_cut + 0.1


def test_xlnet_classifier_left_cut_batch_has_the_padded_loss_and_gradients():
    config = XLNetConfig(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32,
                         ff_activation="gelu", untie_r=True, n_token=50)
    tf.random.set_seed(3)
    model = XLNetClassifier(config, RunConfig(is_training=True, dropout=0.0, dropatt=0.0),
                            n_class=3, task_name="mrpc")
    full = _left_padded()
    model({k: tf.constant(v) for k, v in full.items()}, training=False)
    cut = _cut(full, "left")
    labels = np.array([2, 0, 1, 1])
    loss, grads = _assert_same_loss_and_grads(model, task_loss, full, cut, labels)
    assert loss > 0 and max(float(np.abs(g).max()) for g in grads) > 1e-4
    # a right cut would drop the real tokens and <cls>: the logits change
    wrong = {k: v[:, :24] for k, v in full.items()}
    assert not np.allclose(model(wrong)["logits"].numpy(), model(full)["logits"].numpy(),
                           atol=1e-3)
    # BatchPredictor with XLNet's layout: the padded logits
    padded = BatchPredictor(model, ["logits"]).predict_batch(full)["logits"]
    left = BatchPredictor(model, ["logits"], trim_padding="left").predict_batch(full)["logits"]
    np.testing.assert_allclose(left, padded, atol=1e-6)


def test_group_by_length_batches_similar_lengths_and_keeps_every_record():
    # 2 windows of 3 batches of 4: lengths 1..24 in a shuffled order
    lengths = np.random.RandomState(0).permutation(np.arange(1, 25))
    mask = (np.arange(30)[None, :] < lengths[:, None]).astype(np.int32)
    d = tf.data.Dataset.from_tensor_slices({"input_mask": mask, "row": lengths})
    batches = [b["row"].tolist() for b in
               group_by_length(d, 4, window_batches=3).as_numpy_iterator()]
    assert len(batches) == 6 and all(len(b) == 4 for b in batches)
    assert sorted(sum(batches, [])) == list(range(1, 25))
    for window in (lengths[:12], lengths[12:]):  # each window cut into sorted runs of 4
        runs = {tuple(sorted(window)[i:i + 4]) for i in range(0, 12, 4)}
        assert runs <= {tuple(sorted(b)) for b in batches}
    for b in batches:
        assert [int(mask[lengths.tolist().index(x)].sum()) for x in b] == b
