"""Deliverable 3 of issue 17: TPU mistakes are one clear line, before any work.

google-research/bert#384 / #445: a TPU's hosts cannot read this machine's disk, so every path
they open must be on gs://; TPUEstimator shards each batch over the cores; XLNet's
``bsz_per_core % 2 == 0`` assert with ``bi_data``. Expected messages are written by hand.
"""

import types

import pytest

from bert_tf.errors import FlagError
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags


def bert_flags(**kw):
    base = dict(use_tpu=True, tpu_name="my-tpu", master=None, num_tpu_cores=8,
                output_dir="gs://b/out", init_checkpoint="gs://b/model.ckpt",
                data_dir="gs://b/glue/MRPC", train_batch_size=32, eval_batch_size=8,
                predict_batch_size=8)
    base.update(kw)
    return types.SimpleNamespace(**base)


def xlnet_flags(**kw):
    base = dict(use_tpu=True, tpu="my-tpu", master=None, num_hosts=1, num_core_per_host=8,
                model_dir="gs://b/exp", record_info_dir="gs://b/tfrecords", init_checkpoint=None,
                train_batch_size=32, bi_data=True)
    base.update(kw)
    return types.SimpleNamespace(**base)


@pytest.mark.parametrize("flag", ["output_dir", "init_checkpoint", "data_dir"])
def test_bert_local_path_on_tpu_names_the_flag(flag):
    with pytest.raises(FlagError, match=rf"^--{flag}=/tmp/x: a TPU needs gs:// paths"):
        check_tpu_flags(bert_flags(**{flag: "/tmp/x"}))


@pytest.mark.parametrize("flag", ["model_dir", "record_info_dir", "init_checkpoint"])
def test_xlnet_local_path_on_tpu_names_the_flag(flag):
    with pytest.raises(FlagError, match=rf"^--{flag}=exp/x: a TPU needs gs:// paths"):
        check_tpu_flags(xlnet_flags(**{flag: "exp/x"}))


def test_comma_separated_input_files_are_each_checked():
    flags = bert_flags(input_file="gs://b/a.tfrecord,/data/b.tfrecord")
    with pytest.raises(FlagError, match=r"^--input_file=/data/b.tfrecord: a TPU needs gs://"):
        check_tpu_flags(flags)


def test_all_gs_paths_pass_and_no_tpu_or_a_tpu_vm_checks_nothing():
    check_tpu_flags(bert_flags())
    check_tpu_flags(xlnet_flags())
    check_tpu_flags(bert_flags(use_tpu=False, output_dir="/tmp/x", train_batch_size=3))
    # a TPU VM (--tpu_name=local): its host is this machine, local paths work
    check_tpu_flags(bert_flags(tpu_name="local", output_dir="/tmp/x"))
    with pytest.raises(FlagError, match="^--train_batch_size=12 does not divide"):
        check_tpu_flags(bert_flags(tpu_name="local", train_batch_size=12))


@pytest.mark.parametrize("flag,value", [("train_batch_size", 36), ("eval_batch_size", 12),
                                        ("predict_batch_size", 4)])
def test_bert_batch_that_does_not_divide_the_cores(flag, value):
    with pytest.raises(FlagError, match=rf"^--{flag}={value} does not divide by the 8 TPU cores "
                                        r"\(--num_tpu_cores=8\): use a multiple of 8$"):
        check_tpu_flags(bert_flags(**{flag: value}))


def test_xlnet_cores_are_hosts_times_cores_per_host():
    # 2 x 4 = 8 cores: 20 does not divide; 24 gives 3 per core, odd with bi_data
    with pytest.raises(FlagError, match=r"--train_batch_size=20 does not divide by the 8 TPU "
                                        r"cores \(--num_hosts=2 x --num_core_per_host=4\)"):
        check_tpu_flags(xlnet_flags(num_hosts=2, num_core_per_host=4, train_batch_size=20))
    with pytest.raises(FlagError, match=r"^--bi_data=True needs an even batch per TPU core .*"
                                        r"--train_batch_size=24 over 8 cores .* gives 3$"):
        check_tpu_flags(xlnet_flags(num_hosts=2, num_core_per_host=4, train_batch_size=24))
    check_tpu_flags(xlnet_flags(num_hosts=2, num_core_per_host=4, train_batch_size=24,
                                bi_data=False))


def test_strategy_from_flags_checks_before_reaching_the_tpu(monkeypatch):
    import tensorflow as tf

    def unreachable(*a, **k):
        raise AssertionError("the TPU was contacted before the flag check")

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", unreachable)
    with pytest.raises(FlagError, match="^--output_dir=out: a TPU needs gs://"):
        strategy_from_flags(bert_flags(output_dir="out"))


def test_run_classifier_fails_before_creating_the_output_dir(tmp_path):
    from bert_tf.bert.tasks.classifier import ClassifierArgs, run

    out = tmp_path / "out"
    args = ClassifierArgs(task_name="MRPC", data_dir="gs://b/MRPC", output_dir=str(out),
                          vocab_file="gs://b/vocab.txt", bert_config_file="gs://b/config.json",
                          init_checkpoint="gs://b/bert_model.ckpt", do_train=True,
                          use_tpu=True, tpu_name="my-tpu")
    with pytest.raises(FlagError, match=rf"^--output_dir={out}: a TPU needs gs:// paths"):
        run(args)
    assert not out.exists()


def test_xlnet_run_pretraining_fails_before_any_work(tmp_path):
    from bert_tf import flags as bert_flags_lib
    from bert_tf.xlnet.tasks import pretraining as xpt

    fields = {f: bert_flags_lib.XLNET_RUN_PRETRAINING.default(f)
              for f in xpt.XLNetPretrainingArgs.__dataclass_fields__}
    fields.update(record_info_dir="gs://b/tfrecords", model_dir=str(tmp_path / "exp"),
                  train_batch_size=16, seq_len=128, reuse_len=64, perm_size=32, train_steps=1,
                  use_tpu=True, tpu="my-tpu")
    with pytest.raises(FlagError, match=r"^--model_dir=.*/exp: a TPU needs gs:// paths"):
        xpt.run(xpt.XLNetPretrainingArgs(**fields))
    assert not (tmp_path / "exp").exists()


def test_albert_run_pretraining_fails_before_any_work(tmp_path, golden_dir):
    import dataclasses
    import os

    from bert_tf import flags as bert_flags_lib
    from bert_tf.albert.tasks import pretraining as apt

    fields = {f: bert_flags_lib.ALBERT_RUN_PRETRAINING.default(f)
              for f in apt.AlbertPretrainingArgs.__dataclass_fields__}
    args = dataclasses.replace(
        apt.AlbertPretrainingArgs(**fields), input_file="gs://b/records.tfrecord",
        albert_config_file=os.path.join(golden_dir, "albert", "model", "albert_config.json"),
        output_dir=str(tmp_path / "out"), use_tpu=True, tpu_name="my-tpu")
    with pytest.raises(FlagError, match=r"^--output_dir=.*/out: a TPU needs gs:// paths"):
        apt.run(args)
    assert not (tmp_path / "out").exists()
