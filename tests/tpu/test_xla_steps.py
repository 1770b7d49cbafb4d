"""Deliverable 1 of issue 17 (part): BERT classifier and XLNet pretraining steps compile with XLA.

A TPU compiles each step with XLA and static shapes. Here the train step (forward + backward,
:class:`bert_tf.training.train_step.TrainStep` ``use_xla``) and the eval/predict forward of
:class:`bert_tf.bert.classifier.BertClassifier` are compiled with ``jit_compile=True`` on CPU
with the TPU path's shapes (fixed batch 8 x 32, the eval batch padded with
``is_real_example = 0`` rows as the original's ``PaddingInputExample``) on the golden tiny
random model, and must equal the plain step within 1e-5. Dropout is off so both runs are
deterministic.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
from bert_tf.bert.classifier import BertClassifier, classifier_loss
from bert_tf.bert.config import BertConfig
from bert_tf.training.train_step import TrainStep

BATCH, SEQ = 8, 32


@pytest.fixture(scope="module")
def tiny_classifier(golden_dir):
    folder = os.path.join(golden_dir, "bert", "tiny_random")
    with open(os.path.join(folder, "bert_config.json")) as f:
        values = json.load(f)
    values.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    config = BertConfig.from_dict(values)
    model = BertClassifier(config, num_labels=2).build_with_dummy_input(SEQ)
    model.dropout.rate = 0.0  # the head's fixed 0.1 dropout (original create_model)
    load_bert_checkpoint(bert_model_map(model.bert), os.path.join(folder, "bert_model.ckpt"))
    return model


def tpu_batch(real=5):
    """A fixed-shape batch: ``real`` examples, then padding rows (all zeros, weight 0)."""
    rng = np.random.default_rng(17)
    ids = rng.integers(1000, 30000, size=(BATCH, SEQ)).astype(np.int32)
    lengths = rng.integers(5, SEQ + 1, size=BATCH)
    mask = (np.arange(SEQ)[None, :] < lengths[:, None]).astype(np.int32)
    segs = (np.arange(SEQ)[None, :] >= lengths[:, None] // 2).astype(np.int32) * mask
    ids *= mask
    weights = (np.arange(BATCH) < real).astype(np.float32)
    ids[real:], mask[real:], segs[real:] = 0, 0, 0
    features = {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                "segment_ids": tf.constant(segs)}
    labels = {"label_ids": tf.constant(rng.integers(0, 2, BATCH).astype(np.int32)),
              "is_real_example": tf.constant(weights)}
    return features, labels


def loss_fn(model, features, labels):
    logits = model(features, training=True)["logits"]
    return classifier_loss(logits, labels["label_ids"],
                           label_weights=labels["is_real_example"])[0]


def test_classifier_train_step_compiles_with_xla_and_matches(tiny_classifier):
    features, labels = tpu_batch()
    opt = None  # forward_backward does not touch the optimizer
    plain = TrainStep(tiny_classifier, loss_fn, opt, tf.distribute.get_strategy())
    xla = TrainStep(tiny_classifier, loss_fn, opt, tf.distribute.get_strategy(), use_xla=True)
    loss, grads = plain.forward_backward(features, labels)
    xla_loss, xla_grads = xla._forward_backward(features, labels)
    # it really went through XLA: the compiled function has an HLO for these shapes
    hlo = xla._forward_backward.experimental_get_compiler_ir(features, labels)(stage="hlo")
    assert "HloModule" in hlo
    np.testing.assert_allclose(float(xla_loss), float(loss), atol=1e-5)
    assert len(grads) == len(xla_grads) == len(tiny_classifier.trainable_variables)
    for v, g, gx in zip(tiny_classifier.trainable_variables, grads, xla_grads):
        np.testing.assert_allclose(tf.convert_to_tensor(gx).numpy(),
                                   tf.convert_to_tensor(g).numpy(), atol=1e-5, err_msg=v.path)


@pytest.mark.slow
def test_classifier_eval_and_predict_steps_compile_with_xla_and_match(tiny_classifier):
    features, labels = tpu_batch(real=3)

    def eval_step(features, labels):
        out = tiny_classifier(features, training=False)
        loss, per_example = classifier_loss(out["logits"], labels["label_ids"],
                                            label_weights=labels["is_real_example"])
        return loss, per_example, out["probabilities"]

    plain = eval_step(features, labels)
    compiled = tf.function(eval_step, jit_compile=True)(features, labels)
    for a, b in zip(compiled, plain):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)
    # the padding rows carry no weight: the mean is over the 3 real examples only
    np.testing.assert_allclose(float(plain[0]), float(np.mean(plain[1].numpy()[:3])), atol=1e-6)


FEATURES = ("input_k", "seg_id", "perm_mask", "target_mapping", "input_q", "target", "target_mask")


@pytest.mark.slow
def test_xlnet_pretraining_loss_with_memory_compiles_with_xla_and_matches(golden_dir):
    """XLNet pretraining with memory (train_gpu.py's two-stream loss): two steps of the loss
    the loop trains with, memory carried by :class:`bert_tf.xlnet.tasks.pretraining.Memory`,
    compiled with XLA, give the plain steps' losses and memories within 1e-5."""
    from bert_tf.xlnet.tasks import pretraining as xpt
    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.model import XLNetPretrainingModel
    from tests.xlnet.conftest import GoldenXLNet

    golden = GoldenXLNet(os.path.join(golden_dir, "xlnet", "tiny_random"))
    ts = golden.two_stream
    model = XLNetPretrainingModel(golden.config, golden.run_config(mem_len=16, reuse_len=8))
    model({k: ts["mem/step0/" + k] for k in FEATURES}, mems=[tf.zeros([2, 16, 64])] * 2)
    checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(model), golden.ckpt)
    runs = {}
    for name, compile_ in (("plain", False), ("xla", True)):
        memory = xpt.Memory(n_layer=2, bsz_per_core=2, mem_len=16, d_model=64)
        loss_fn = xpt.pretraining_loss_fn(memory)
        step = tf.function(loss_fn, jit_compile=True) if compile_ else loss_fn
        losses = []
        for prefix in ("mem/step0/", "mem/step1/"):
            features = {k: tf.constant(ts[prefix + k]) for k in FEATURES}
            losses.append(float(step(model, features)))
        runs[name] = (losses, [m.numpy() for m in memory.mems])
    np.testing.assert_allclose(runs["xla"][0], runs["plain"][0], atol=1e-5)
    for a, b in zip(runs["xla"][1], runs["plain"][1]):
        np.testing.assert_allclose(a, b, atol=1e-5)
    # and the plain steps are the original's (golden two-stream losses)
    np.testing.assert_allclose(runs["plain"][0], [float(ts["mem/step0/total_loss"]),
                                                  float(ts["mem/step1/total_loss"])], atol=1e-5)


@pytest.mark.slow
def test_xlnet_classifier_train_step_compiles_with_xla_and_matches(golden_dir, tmp_path):
    """XLNet classifier (run_classifier.py's TPU shapes: fixed batch 4 x 16): forward +
    backward compiled with XLA equals the plain step within 1e-5."""
    from bert_tf.xlnet.tasks import classifier as xc
    from bert_tf.xlnet.config import XLNetConfig

    folder = os.path.join(golden_dir, "xlnet", "tiny_random")
    config = XLNetConfig.from_json_file(os.path.join(folder, "xlnet_config.json"))
    args = xc.XLNetClassifierArgs(output_dir=str(tmp_path), model_dir=str(tmp_path),
                                  task_name="mrpc", max_seq_length=16, dropout=0.0,
                                  dropatt=0.0)
    model = xc.build_classifier(config, args, 2, is_training=True)
    rng = np.random.default_rng(17)
    features = {"input_ids": tf.constant(rng.integers(10, 8000, (4, 16)).astype(np.int32)),
                "segment_ids": tf.constant(np.repeat([[0] * 8 + [1] * 8], 4, 0).astype(np.int32)),
                "input_mask": tf.constant(np.repeat([[1.0] * 4 + [0.0] * 12], 4, 0)
                                          .astype(np.float32))}
    labels = tf.constant([0, 1, 1, 0], tf.int32)

    def loss_fn(model, features, labels):
        return model.task_loss(model(features, training=True)["logits"], labels)[1]

    plain = TrainStep(model, loss_fn, None, tf.distribute.get_strategy())
    xla = TrainStep(model, loss_fn, None, tf.distribute.get_strategy(), use_xla=True)
    loss, grads = plain.forward_backward(features, labels)
    xla_loss, xla_grads = xla._forward_backward(features, labels)
    np.testing.assert_allclose(float(xla_loss), float(loss), atol=1e-5)
    for v, g, gx in zip(model.trainable_variables, grads, xla_grads):
        if g is None:
            assert gx is None, v.path
            continue
        np.testing.assert_allclose(tf.convert_to_tensor(gx).numpy(),
                                   tf.convert_to_tensor(g).numpy(), atol=1e-5, err_msg=v.path)
