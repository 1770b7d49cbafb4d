"""Deliverable 1 of issue 17 (the rest): the train step and the eval/predict forward of BERT
SQuAD and pretraining, ALBERT classifier and pretraining, XLNet SQuAD and RACE compile with
XLA (``jit_compile=True`` on CPU) at the TPU path's shapes and equal the plain step within 1e-5.

The shapes are the TPU's: a fixed batch (the training pipelines' ``drop_remainder``; the
pretraining batches come from the golden TFRecords through the task's own ``input_fn_builder``),
eval/predict batches padded to a whole batch with zero rows (``is_real_example`` 0, the
original's ``PaddingInputExample``). The train step is :class:`TrainStep`'s forward+backward
(``use_xla`` compiles exactly that function), with each task's own loss function; dropout is off
so the two runs are deterministic. ``experimental_get_compiler_ir`` shows XLA really compiled
it (an HLO module for those shapes: no host-only op inside the step).
"""
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.training.train_step import TrainStep

pytestmark = pytest.mark.slow  # XLA compiles: 10-40 s each on the 2 shared cores

SEQ = 32


def assert_train_step_matches(model, loss_fn, features, labels):
    """Plain vs XLA-compiled ``forward_backward``: the loss and every gradient within 1e-5."""
    strategy = tf.distribute.get_strategy()
    plain = TrainStep(model, loss_fn, None, strategy)
    xla = TrainStep(model, loss_fn, None, strategy, use_xla=True)
    loss, grads = plain.forward_backward(features, labels)
    xla_loss, xla_grads = xla._forward_backward(features, labels)
    hlo = xla._forward_backward.experimental_get_compiler_ir(features, labels)(stage="hlo")
    assert "HloModule" in hlo
    assert np.isfinite(float(loss))
    np.testing.assert_allclose(float(xla_loss), float(loss), atol=1e-5)
    assert len(grads) == len(xla_grads) == len(model.trainable_variables)
    nonzero = 0
    for v, g, gx in zip(model.trainable_variables, grads, xla_grads):
        if g is None:
            assert gx is None, v.path
            continue
        g, gx = tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(gx).numpy()
        np.testing.assert_allclose(gx, g, atol=1e-5, err_msg=v.path)
        nonzero += bool(np.any(g))
    assert nonzero > len(grads) // 2  # the step really trains the model


def assert_forward_matches(model, features, keys):
    """Plain vs XLA-compiled inference forward (``training=False``): ``keys`` within 1e-5."""
    plain = model(features, training=False)
    compiled = tf.function(lambda f: model(f, training=False), jit_compile=True)(features)
    for key in keys:
        a, b = np.asarray(plain[key]), np.asarray(compiled[key])
        assert a.shape == b.shape, key
        np.testing.assert_allclose(b, a, atol=1e-5, err_msg=key)
    return plain


def pair_batch(batch, seq, real=None, vocab=1000, seed=17):
    """``input_ids`` / ``input_mask`` / ``segment_ids`` int32 ``[batch, seq]``: the first
    ``real`` rows are examples of random lengths, the rest all-zero padding rows."""
    rng = np.random.default_rng(seed)
    real = batch if real is None else real
    lengths = rng.integers(5, seq + 1, size=batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int32)
    segs = (np.arange(seq)[None, :] >= lengths[:, None] // 2).astype(np.int32) * mask
    ids = rng.integers(10, vocab, size=(batch, seq)).astype(np.int32) * mask
    ids[real:], mask[real:], segs[real:] = 0, 0, 0
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segs}


def _bert_config(golden_dir):
    from bert_tf.bert.config import BertConfig

    with open(os.path.join(golden_dir, "bert", "tiny_random", "bert_config.json")) as f:
        values = json.load(f)
    values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return BertConfig.from_dict(values)


def _albert_config(golden_dir):
    from bert_tf.albert.config import AlbertConfig

    with open(os.path.join(golden_dir, "albert", "model", "albert_config.json")) as f:
        values = json.load(f)
    values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    return AlbertConfig.from_dict(values)


def _pretraining_batch(path, seq, max_predictions, batch):
    """One fixed-shape training batch of the task's own pipeline (drop_remainder)."""
    from bert_tf.data.pretraining_records import input_fn_builder

    dataset = input_fn_builder([path], seq, max_predictions, is_training=True,
                               batch_size=batch, seed=17)()
    features = next(iter(dataset))
    features = features[0] if isinstance(features, tuple) else features
    assert all(v.shape[0] == batch for v in features.values())
    return features


# ---- BERT ---------------------------------------------------------------------------------------

def test_bert_squad_train_and_predict_steps(golden_dir):
    from bert_tf.bert.squad import BertSquad, squad_loss

    model = BertSquad(_bert_config(golden_dir))
    model.build_with_dummy_input(SEQ)
    features = {k: tf.constant(v) for k, v in pair_batch(8, SEQ).items()}
    labels = {"start_positions": tf.constant([1, 2, 3, 4, 0, 5, 6, 7], tf.int32),
              "end_positions": tf.constant([2, 4, 3, 9, 0, 5, 8, 7], tf.int32)}

    def loss_fn(m, features, labels):  # tasks/squad.py's training loss
        out = m(features, training=True)
        return squad_loss(out["start_logits"], out["end_logits"], labels["start_positions"],
                          labels["end_positions"])

    assert_train_step_matches(model, loss_fn, features, labels)
    padded = {k: tf.constant(v) for k, v in pair_batch(8, SEQ, real=3).items()}
    assert_forward_matches(model, padded, ["start_logits", "end_logits"])


def test_bert_pretraining_train_and_eval_steps(golden_dir):
    from bert_tf.bert.pretrainer import pretraining_loss_fn
    from bert_tf.bert.tasks.pretraining import build_pretrainer

    model = build_pretrainer(_bert_config(golden_dir), tf.distribute.get_strategy())
    features = _pretraining_batch(os.path.join(golden_dir, "bert", "pretraining_data",
                                               "tf_examples.tfrecord"), 128, 20, 4)
    assert_train_step_matches(model, pretraining_loss_fn, features, None)
    out = assert_forward_matches(model, features, ["mlm_log_probs", "nsp_log_probs"])
    assert np.asarray(out["nsp_log_probs"]).shape == (4, 2)


# ---- ALBERT -------------------------------------------------------------------------------------

def test_albert_classifier_train_and_eval_steps(golden_dir):
    from bert_tf.albert.classifier import AlbertClassifier
    from bert_tf.bert.classifier import classifier_loss_fn

    model = AlbertClassifier(_albert_config(golden_dir), num_labels=2)
    model.build_with_dummy_input(SEQ)
    model.dropout.rate = 0.0  # the head's fixed 0.1 dropout
    features = {k: tf.constant(v) for k, v in pair_batch(8, SEQ, vocab=30000).items()}
    labels = tf.constant([0, 1, 1, 0, 1, 0, 0, 1], tf.int32)
    assert_train_step_matches(model, classifier_loss_fn(False), features, labels)
    padded = {k: tf.constant(v) for k, v in pair_batch(8, SEQ, real=5, vocab=30000).items()}
    assert_forward_matches(model, padded, ["logits", "probabilities"])


def test_albert_pretraining_train_and_eval_steps(golden_dir):
    from bert_tf.albert.pretrainer import AlbertPretrainer
    from bert_tf.bert.pretrainer import pretraining_loss_fn

    model = AlbertPretrainer(_albert_config(golden_dir))
    model.build_with_dummy_input()
    features = _pretraining_batch(os.path.join(golden_dir, "albert", "pretraining_data",
                                               "sample_text.seq64.tfrecord"), 64, 10, 4)
    assert_train_step_matches(model, pretraining_loss_fn, features, None)
    out = assert_forward_matches(model, features, ["mlm_log_probs", "nsp_log_probs"])
    assert np.asarray(out["nsp_log_probs"]).shape == (4, 2)


# ---- XLNet --------------------------------------------------------------------------------------

XLNET_TINY = {"n_layer": 2, "d_model": 16, "n_head": 2, "d_head": 8, "d_inner": 32,
              "ff_activation": "gelu", "untie_r": True, "n_token": 8000}


def _xlnet_config():
    from bert_tf.xlnet.config import XLNetConfig

    return XLNetConfig.from_dict(dict(XLNET_TINY))


def _xlnet_inputs(batch, seq, real=None, seed=17):
    """XLNet's layout: ``input_mask`` float32, 1 on padding (the original's), tokens left-padded."""
    base = pair_batch(batch, seq, real=real, vocab=8000, seed=seed)
    return {"input_ids": tf.constant(base["input_ids"][:, ::-1].copy()),
            "segment_ids": tf.constant(base["segment_ids"][:, ::-1].copy()),
            "input_mask": tf.constant((1 - base["input_mask"][:, ::-1]).astype(np.float32))}


def test_xlnet_squad_train_and_predict_steps(tmp_path):
    from bert_tf.xlnet.tasks import squad as xsq
    from bert_tf.xlnet.squad import qa_loss

    args = xsq.XLNetSquadArgs(output_dir=str(tmp_path), model_dir=str(tmp_path),
                              max_seq_length=SEQ, dropout=0.0, dropatt=0.0)
    model = xsq.build_squad_model(_xlnet_config(), args, is_training=True)
    features = _xlnet_inputs(4, SEQ)
    features["p_mask"] = tf.cast(features["input_mask"], tf.float32)
    features["cls_index"] = tf.fill([4], SEQ - 1)
    labels = {"start_positions": tf.constant([3, 10, 0, 20], tf.int32),
              "end_positions": tf.constant([5, 12, 0, 25], tf.int32),
              "is_impossible": tf.constant([0.0, 0.0, 1.0, 0.0], tf.float32)}
    features["start_positions"] = labels["start_positions"]

    def loss_fn(m, features, labels):  # tasks/xlnet_squad.py's training loss
        out = m(features, training=True)
        return qa_loss(out, labels["start_positions"], labels["end_positions"],
                       labels["is_impossible"])

    assert_train_step_matches(model, loss_fn, features, labels)
    padded = _xlnet_inputs(4, SEQ, real=2)
    padded["p_mask"] = tf.cast(padded["input_mask"], tf.float32)
    padded["cls_index"] = tf.fill([4], SEQ - 1)
    out = assert_forward_matches(model, padded, ["start_top_log_probs", "start_top_index",
                                                 "end_top_log_probs", "end_top_index",
                                                 "cls_logits"])
    assert np.asarray(out["start_top_index"]).dtype == np.int32


def test_xlnet_race_train_and_eval_steps(tmp_path):
    from bert_tf.xlnet.tasks import race as xr

    args = xr.XLNetRaceArgs(output_dir=str(tmp_path), model_dir=str(tmp_path),
                            max_seq_length=SEQ, dropout=0.0, dropatt=0.0)
    model = xr.build_race_model(_xlnet_config(), args, is_training=True)
    features = _xlnet_inputs(2 * 4, SEQ)  # 2 questions x 4 choices, flattened as the records
    features = {k: tf.reshape(v, [2, 4 * SEQ]) for k, v in features.items()}
    labels = tf.constant([1, 3], tf.int32)

    def loss_fn(m, features, labels):  # train_with_xlnet_optimizer's: task_loss(...)[1]
        return m.task_loss(m(features, training=True)["logits"], labels)[1]

    assert_train_step_matches(model, loss_fn, features, labels)
    assert_forward_matches(model, features, ["logits"])
