"""XLNet pretraining (original train.py / train_gpu.py, spec xlnet.md 7): the training loss path
with memory carried through it against the original's two-stream golden steps, and a short
end-to-end run on the golden records (checkpoints, summaries, resume, bad flags)."""

import dataclasses
import glob
import os
import types

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError, InputDataError
from bert_tf.xlnet.tasks import pretraining as xpt
from bert_tf import checkpoint_io
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.model import XLNetPretrainingModel
from tests.xlnet.conftest import GoldenXLNet, time_to_batch_major as bm

FEATURES = ("input_k", "seg_id", "perm_mask", "target_mapping", "input_q", "target", "target_mask")


@pytest.mark.parametrize("variant", ["tiny_random", "tiny_random_tied"])
def test_loss_path_with_memory_equals_the_original(golden_dir, variant):
    """The loss_fn the loop trains with, its Memory starting at zeros as train_gpu.py's: step 0
    gives the golden total loss and new memories (README C: step0 got zero mems [16, 2, 64]),
    and step 1, fed those memories by the Memory itself, gives the golden step-1 loss."""
    golden = GoldenXLNet(os.path.join(golden_dir, "xlnet", variant))
    ts = golden.two_stream
    model = XLNetPretrainingModel(golden.config, golden.run_config(mem_len=16, reuse_len=8))
    features0 = {k: ts["mem/step0/" + k] for k in FEATURES}
    model(features0, mems=[tf.zeros([2, 16, 64])] * 2)
    checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(model), golden.ckpt)
    memory = xpt.Memory(n_layer=2, bsz_per_core=2, mem_len=16, d_model=64)
    loss_fn = xpt.pretraining_loss_fn(memory)
    for step in ("mem/step0/", "mem/step1/"):
        if step == "mem/step1/":  # what the Memory holds is what the original fed step 1
            for i in range(2):
                np.testing.assert_allclose(memory.mems[i].numpy(), bm(ts[step + f"mems_in_{i}"]),
                                           atol=1e-5)
        loss = loss_fn(model, {k: ts[step + k] for k in FEATURES})
        assert abs(float(loss) - float(ts[step + "total_loss"])) < 1e-5, step
        for i in range(2):
            np.testing.assert_allclose(memory.mems[i].numpy(), bm(ts[step + f"new_mems_{i}"]),
                                       atol=1e-5)


def golden_records_dir(tmp_path, golden_dir):
    """The golden run's records and record_info (bsz 4, seq 128, reuse 64, bi, fnp 21)."""
    src = os.path.join(golden_dir, "xlnet", "pretraining_data", "tfrecords")
    dst = tmp_path / "tfrecords"
    dst.mkdir()
    for path in glob.glob(os.path.join(src, "*")):
        (dst / os.path.basename(path)).write_bytes(open(path, "rb").read())
    return str(dst)


def tiny_args(record_info_dir, model_dir, **overrides):
    from bert_tf import flags as bert_flags

    fields = {f: bert_flags.XLNET_RUN_PRETRAINING.default(f)
              for f in xpt.XLNetPretrainingArgs.__dataclass_fields__}
    fields.update(record_info_dir=record_info_dir, model_dir=model_dir, train_batch_size=4,
                  seq_len=128, reuse_len=64, mem_len=32, perm_size=32, num_predict=21,
                  n_token=8000, n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=32,
                  train_steps=6, iterations=3, save_steps=3, learning_rate=1e-3)
    fields.update(overrides)
    return xpt.XLNetPretrainingArgs(**fields)


def test_train_checkpoint_summaries_resume(tmp_path, golden_dir):
    records = golden_records_dir(tmp_path, golden_dir)
    model_dir = str(tmp_path / "model")
    result = xpt.run(tiny_args(records, model_dir)).train
    assert result.global_step == 6 and result.resumed_from is None
    stored = checkpoint_io.list_checkpoint(os.path.join(model_dir, "model.ckpt-6"))
    # The original layout: transformer, mask_emb, lm_loss bias and TF1 Adam slots.
    for name in ("model/transformer/mask_emb/mask_emb", "model/lm_loss/bias",
                 "model/transformer/layer_1/rel_attn/q/kernel/Adam_1", "global_step",
                 "beta1_power"):
        assert name in stored, name
    assert stored["model/transformer/word_embedding/lookup_table"][0] == (8000, 16)
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-3.index"))
    from tensorboard.backend.event_processing import event_accumulator
    events = event_accumulator.EventAccumulator(glob.glob(os.path.join(model_dir, "events*"))[0])
    events.Reload()
    assert {"train/total_loss", "train/lr", "train/gnorm"} <= set(events.Tags()["tensors"])
    # lr at step 3 of a linear decay from 1e-3 over 6 steps to 1e-3 * min_lr_ratio (0.001):
    lr3 = [e for e in events.Tensors("train/lr") if e.step == 3][0]
    want = 1e-3 * ((1 - 0.001) * (1 - 3 / 6) + 0.001)
    assert float(tf.make_ndarray(lr3.tensor_proto)) == pytest.approx(want, rel=1e-5)
    # resume: 2 more steps from model.ckpt-6
    again = xpt.run(tiny_args(records, model_dir, train_steps=8)).train
    assert again.resumed_from.endswith("model.ckpt-6") and again.global_step == 8


def test_use_bfloat16_trains_in_bfloat16_and_keeps_float32_checkpoints(tmp_path, golden_dir,
                                                                       monkeypatch):
    """--use_bfloat16: the model computes in bfloat16 (Keras' mixed_bfloat16; the flag had
    only made the input pipeline's floats bfloat16, with a float32 model), the loss is finite,
    and the checkpoint keeps the original's float32 variables."""
    built = []

    class Recorded(XLNetPretrainingModel):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            built.append(self)

    monkeypatch.setattr(xpt, "XLNetPretrainingModel", Recorded)
    records = golden_records_dir(tmp_path, golden_dir)
    model_dir = str(tmp_path / "bf16")
    result = xpt.run(tiny_args(records, model_dir, use_bfloat16=True, train_steps=3)).train
    assert result.global_step == 3 and np.isfinite(result.last_loss)
    assert built[0].compute_dtype == "bfloat16" and built[0].dtype_policy.name == "mixed_bfloat16"
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-3"))
    dtypes = reader.get_variable_to_dtype_map()
    assert dtypes["model/transformer/layer_0/ff/layer_1/kernel"] == tf.float32
    assert dtypes["model/transformer/word_embedding/lookup_table"] == tf.float32


def test_bad_flags(tmp_path, golden_dir):
    records = golden_records_dir(tmp_path, golden_dir)
    model_dir = str(tmp_path / "m")
    with pytest.raises(FlagError, match="--perm_size=0: must be > 0"):
        xpt.run(tiny_args(records, model_dir, perm_size=0))
    with pytest.raises(FlagError, match="even batch per replica"):
        xpt.per_replica_batch(types.SimpleNamespace(train_batch_size=6, bi_data=True), 2)
    with pytest.raises(InputDataError, match="no record_info file matches .*seqlen-64"):
        xpt.run(tiny_args(records, model_dir, seq_len=64, reuse_len=32, perm_size=16))
    with pytest.raises(FlagError, match="--reuse_len=128 must be below --seq_len=128"):
        xpt.run(tiny_args(records, model_dir, reuse_len=128))
    assert not os.path.exists(model_dir) or not os.listdir(model_dir)


def test_bert_checkpoint_and_missing_records_fail_before_training(tmp_path, golden_dir,
                                                                 shared_data_dir):
    """Fresh-user findings: a BERT --init_checkpoint (loads nothing) and a record file that
    its record_info lists but that is gone are one clear error each, before any training."""
    from bert_tf.errors import CheckpointError

    records = golden_records_dir(tmp_path, golden_dir)
    bert = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining", "bert_model.ckpt")
    model_dir = str(tmp_path / "m")
    with pytest.raises(CheckpointError, match="looks like a BERT checkpoint"):
        xpt.run(tiny_args(records, model_dir, init_checkpoint=bert))
    assert not glob.glob(os.path.join(model_dir, "model.ckpt-*"))
    for path in glob.glob(os.path.join(records, "*.tfrecords")):
        os.remove(path)
    with pytest.raises(InputDataError, match="record file listed in its record_info JSON is "
                                             "missing"):
        xpt.run(tiny_args(records, model_dir))


def test_model_dir_that_is_a_file_names_the_flag(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(FlagError, match=r"--model_dir=.*a_file is not writable: it is a file"):
        xpt.make_model_dir(tiny_args(str(tmp_path), str(blocker)))


def test_a_folder_named_like_the_checkpoint_state_file_is_refused(tmp_path):
    """Issue 27: a folder model_dir/checkpoint failed at the first checkpoint save."""
    (tmp_path / "m" / "checkpoint").mkdir(parents=True)
    with pytest.raises(FlagError) as e:
        xpt.make_model_dir(tiny_args(str(tmp_path), str(tmp_path / "m")))
    assert str(e.value) == (f"--model_dir={tmp_path / 'm'}: {tmp_path / 'm' / 'checkpoint'} is a "
                            "folder, but the run writes the file checkpoint there; remove or "
                            "rename that folder")


def test_an_untie_r_and_size_mismatch_names_the_flags_and_both_sizes(tmp_path, golden_dir):
    """Fresh round 3 (r3_xpt_init_cls_ckpt): warm-starting from an untie_r=true, d_model-32
    checkpoint told run_pretraining (whose model comes from flags) to edit xlnet_config.json
    and did not name the d_model mismatch."""
    import numpy as np
    from bert_tf.errors import CheckpointError

    records = golden_records_dir(tmp_path, golden_dir)
    ckpt = checkpoint_io.write_checkpoint(str(tmp_path / "other" / "model.ckpt"), {
        "model/transformer/r_w_bias": np.zeros([2, 2, 16], np.float32),
        "model/transformer/word_embedding/lookup_table": np.zeros([8000, 32], np.float32)})
    with pytest.raises(CheckpointError) as e:
        xpt.run(tiny_args(records, str(tmp_path / "m"), init_checkpoint=ckpt))
    assert str(e.value) == (
        f"{ckpt}: the checkpoint was trained with untie_r=true (model/transformer/r_w_bias has "
        "shape [2, 2, 16]) but the flags say untie_r=false (model shape [2, 8]); the sizes "
        "differ too (model/transformer/word_embedding/lookup_table has shape [8000, 32] in the "
        "checkpoint, [8000, 16] in the model); pass --untie_r=True")
    assert not os.path.exists(tmp_path / "m") or not os.listdir(tmp_path / "m")


def test_model_flags_contradicting_model_config_path_are_refused(tmp_path, golden_dir):
    """bert_tf's --model_config_path (train_gpu.py has none): a new user's --n_layer=2
    --d_model=64 beside a 4-layer, d_model 128 file trained the file's model without a word.
    A flag left at its default, or equal to the file's value, is fine."""
    cfg = os.path.join(golden_dir, "xlnet", "tiny_random", "xlnet_config.json")
    records = golden_records_dir(tmp_path, golden_dir)
    args = tiny_args(records, str(tmp_path / "m"), model_config_path=cfg)
    with pytest.raises(FlagError, match=r"^--d_model=16: --model_config_path=.*xlnet_config\.json "
                                        r"says d_model=64; the model's sizes come from the file "
                                        r"\(drop --d_model, or the file\)$"):
        xpt.model_config(args)
    same = dataclasses.replace(args, d_model=64, n_head=4, d_head=16, d_inner=128,
                               ff_activation="relu", untie_r=False)  # the last two: defaults
    config = xpt.model_config(same)
    assert (config.n_layer, config.d_model, config.ff_activation, config.untie_r) == (
        2, 64, "gelu", True)
    with pytest.raises(FlagError, match="^--untie_r=True: .* says untie_r=False"):
        xpt.model_config(dataclasses.replace(same, model_config_path=_tied_config(tmp_path, cfg),
                                             untie_r=True))


def _tied_config(tmp_path, cfg):
    import json
    with open(cfg) as f:
        values = dict(json.load(f), untie_r=False)
    path = tmp_path / "tied_config.json"
    path.write_text(json.dumps(values))
    return str(path)


def test_fewer_layers_than_an_untied_checkpoint_names_both_counts(tmp_path, golden_dir):
    """A new user's n_layer 2 config on a 4-layer untie_r checkpoint got a bare shape error
    on r_w_bias (BERT runs such a config on the first layers, with a warning)."""
    import numpy as np
    from bert_tf.errors import CheckpointError

    records = golden_records_dir(tmp_path, golden_dir)
    ckpt = checkpoint_io.write_checkpoint(str(tmp_path / "other" / "model.ckpt"), {
        "model/transformer/r_w_bias": np.zeros([4, 2, 8], np.float32)})
    with pytest.raises(CheckpointError) as e:
        xpt.run(tiny_args(records, str(tmp_path / "m"), init_checkpoint=ckpt, untie_r=True))
    assert str(e.value) == (
        f"{ckpt}: the checkpoint has 4 layers (model/transformer/r_w_bias has shape [4, 2, 8]) "
        "and the flags say n_layer=2; its untied biases are stacked over the layers, so "
        "n_layer must match (bert_tf: BERT runs a config with fewer layers on their first "
        "ones; XLNet with untie_r cannot)")
