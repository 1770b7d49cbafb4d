"""``run_pretraining.py`` with XLNet's flags: the original XLNet ``train.py`` /
``train_gpu.py`` (spec ``xlnet.md`` 6.6-6.7, 7), selected by ``--record_info_dir``.

    python run_pretraining.py --record_info_dir=proc_data/example/tfrecords \
        --model_dir=exp/pretrain --train_batch_size=32 --seq_len=512 --reuse_len=256 \
        --mem_len=384 --perm_size=256 --n_layer=24 --d_model=1024 --d_embed=1024 --n_head=16 \
        --d_head=64 --d_inner=4096 --untie_r=True --mask_alpha=6 --mask_beta=1 --num_predict=85

Permutation language modelling with two-stream attention (:class:`bert_tf.xlnet.model.
XLNetPretrainingModel`, tied embeddings and ``model/lm_loss/bias``) on the records of
``create_pretraining_data.py --sp_path=...``; the original optimizer (``get_train_op``: TF1
Adam, poly/cos decay to ``min_lr_ratio``, global-norm clipping); ``model.ckpt-N`` in
``--model_dir`` in the original layout (``run_classifier.py --init_checkpoint`` reads it);
resumed after a kill; TensorBoard scalars ``train/total_loss``, ``train/lr``, ``train/gnorm``.

Memory (Transformer-XL): each replica carries its ``mem_len`` tokens of every layer from step
to step, without gradient, as ``train_gpu.py`` does (it feeds the previous step's new
memories back); like ``train_gpu.py`` they start at zeros when the process starts (also
after a resume) and are never reset. (``train.py`` on a TPU resets them every
``--iterations`` steps, a limit of its on-device loop, not a modelling choice.)
"""

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import tensorflow as tf
from absl import logging

from bert_tf.xlnet.data.pretraining import check_mask_flags
from bert_tf.xlnet.data.pretraining_input import (dataset_fn_builder, find_record_info,
                                                  make_parser)
from bert_tf import checkpoint_io
from bert_tf.atomic_files import make_output_dir
from bert_tf.run.checks import TRAINING_FILES
from bert_tf.errors import FlagError, InputDataError
from bert_tf.training import loop
from bert_tf.training.precision import dtype_policy
from bert_tf.training.restore import bert_warm_start, build_for_training
from bert_tf.training.strategy import check_tpu_flags, strategy_from_flags
from bert_tf.xlnet.optimization import create_xlnet_optimizer
from bert_tf.xlnet import checkpoint_map
from bert_tf.xlnet.config import RunConfig, XLNetConfig
from bert_tf.xlnet.model import XLNetPretrainingModel
from bert_tf.xlnet.tasks.args import XLNetPretrainingArgs


def check_args(args: XLNetPretrainingArgs) -> None:
    """The original's asserts as one-line errors, before any work.

    Raises:
      FlagError: a missing ``--record_info_dir`` / ``--model_dir``; ``seq_len``, ``reuse_len``
        or ``perm_size`` not > 0 (the original's defaults are 0 and must be set);
        ``reuse_len >= seq_len``; negative ``mem_len``; non-positive steps or batch.
    """
    check_tpu_flags(args)
    for name in ("record_info_dir", "model_dir"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    for name in ("seq_len", "reuse_len", "perm_size", "train_batch_size", "train_steps"):
        if getattr(args, name) is None or getattr(args, name) <= 0:
            raise FlagError(f"--{name}={getattr(args, name)}: must be > 0")
    if args.reuse_len >= args.seq_len:
        raise FlagError(f"--reuse_len={args.reuse_len} must be below --seq_len={args.seq_len}")
    if args.mem_len < 0:
        raise FlagError(f"--mem_len={args.mem_len}: must be >= 0")
    check_mask_flags(args)
    if args.num_predict is not None and args.num_predict <= 0:
        raise FlagError(f"--num_predict={args.num_predict}: must be > 0")


# The model flags that xlnet_config.json's eight keys stand for.
_CONFIG_FLAGS = ("n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation", "untie_r",
                 "n_token")


def model_config(args: XLNetPretrainingArgs) -> XLNetConfig:
    """``--model_config_path``, else the model flags with ``n_token`` (32000 by default, as the
    original overwrites it with VOCAB_SIZE).

    bert_tf: the original ``train_gpu.py`` has no ``--model_config_path``; with it, a model
    flag set away from its default to another value than the file's is refused (it was
    ignored without a word).

    Raises:
      ConfigError: an unreadable config file. FlagError: a model flag contradicts the file.
    """
    if args.model_config_path:
        config = XLNetConfig.from_json_file(args.model_config_path)
        defaults = {f.name: f.default for f in dataclasses.fields(XLNetPretrainingArgs)}
        for name in _CONFIG_FLAGS:
            value = getattr(args, name)
            if value != defaults[name] and value != getattr(config, name):
                raise FlagError(f"--{name}={value}: --model_config_path={args.model_config_path} "
                                f"says {name}={getattr(config, name)}; the model's sizes come "
                                f"from the file (drop --{name}, or the file)")
        return config
    return XLNetConfig(n_layer=args.n_layer, d_model=args.d_model, n_head=args.n_head,
                       d_head=args.d_head, d_inner=args.d_inner,
                       ff_activation=args.ff_activation, untie_r=args.untie_r,
                       n_token=args.n_token)


def run_config(args: XLNetPretrainingArgs, is_training: bool = True) -> RunConfig:
    """The original ``create_run_config(is_training, is_finetune=False, FLAGS)``."""
    return RunConfig(is_training=is_training, use_tpu=args.use_tpu,
                     use_bfloat16=args.use_bfloat16, dropout=args.dropout,
                     dropatt=args.dropatt, init=args.init, init_range=args.init_range,
                     init_std=args.init_std, clamp_len=args.clamp_len,
                     mem_len=args.mem_len or None, reuse_len=args.reuse_len,
                     bi_data=args.bi_data, same_length=args.same_length)


def per_replica_batch(args: XLNetPretrainingArgs, num_replicas: int) -> int:
    """``train_batch_size / num_replicas`` (the records hold ``train_batch_size`` streams).

    Raises:
      FlagError: it does not divide; or it is odd with ``--bi_data`` (each replica's batch
        is half forward, half backward streams; the original's ``bsz % 2`` assert in graph
        mode always fails, upstream issues #132/#196).
    """
    if args.train_batch_size % num_replicas:
        raise FlagError(f"--train_batch_size={args.train_batch_size} does not divide by the "
                        f"{num_replicas} replicas")
    per_replica = args.train_batch_size // num_replicas
    if args.bi_data and per_replica % 2:
        raise FlagError(f"--bi_data=True needs an even batch per replica (forward and backward "
                        f"halves); --train_batch_size={args.train_batch_size} over "
                        f"{num_replicas} replica(s) gives {per_replica}")
    return per_replica


class Memory:
    """Each replica's Transformer-XL memory: ``n_layer`` float32 ``[bsz_per_core, mem_len,
    d_model]`` variables (zeros at start), read by a step and overwritten with its new
    memories (no gradient flows through them). Create under the strategy's scope.

    Args:
      n_layer, bsz_per_core, mem_len, d_model: the shapes (``mem_len`` 0: no memory).
    """

    def __init__(self, n_layer: int, bsz_per_core: int, mem_len: int, d_model: int):
        self.mems = [
            tf.Variable(tf.zeros([bsz_per_core, mem_len, d_model]), trainable=False,
                        synchronization=tf.VariableSynchronization.ON_READ,
                        aggregation=tf.VariableAggregation.ONLY_FIRST_REPLICA, name=f"mems_{i}")
            for i in range(n_layer)] if mem_len > 0 else []

    def read(self) -> Optional[List[tf.Tensor]]:
        """The memories of this replica (list of ``[B, M, D]``), or None without memory."""
        return [tf.convert_to_tensor(m) for m in self.mems] if self.mems else None

    def update(self, new_mems) -> None:
        """Stores a step's new memories (``[B, M, D]`` each, gradient stopped)."""
        for var, new in zip(self.mems, new_mems):
            var.assign(tf.stop_gradient(tf.cast(new, var.dtype)))


def dummy_features(batch: int, seq_len: int, num_predict: Optional[int]) -> Dict[str, tf.Tensor]:
    """Zero features of the parser's shapes (``bert_tf.xlnet.data.pretraining_input``), to
    create the model's weights without reading the records."""
    p = num_predict or seq_len
    out = {"input_k": tf.zeros([batch, seq_len], tf.int32),
           "seg_id": tf.zeros([batch, seq_len], tf.int32),
           "input_q": tf.zeros([batch, seq_len]), "perm_mask": tf.zeros([batch, seq_len, seq_len]),
           "target": tf.zeros([batch, p], tf.int32), "target_mask": tf.zeros([batch, p])}
    if num_predict:
        out["target_mapping"] = tf.zeros([batch, num_predict, seq_len])
    return out


def pretraining_loss_fn(memory: Memory):
    """``loss_fn(model, features, labels)`` for :func:`bert_tf.training.loop.train`: the
    two-stream LM loss of the replica's batch with its memory carried over (spec 3.13)."""

    def loss_fn(model, features, labels=None):
        out = model(features, mems=memory.read(), training=True)
        if memory.mems:
            memory.update(out["new_mems"])
        return out["total_loss"]

    return loss_fn


@dataclass
class XLNetPretrainingResult:
    """What :func:`run` did.

    Attributes:
      train: the :class:`bert_tf.training.loop.TrainResult`.
      record_info: the record_info dict of the records read (``num_batch``, ``filenames``...;
        :func:`bert_tf.xlnet.data.pretraining_input.find_record_info`).
    """

    train: loop.TrainResult
    record_info: Dict[str, Any]

    def summary_lines(self) -> List[str]:
        """What ``run_pretraining.py`` prints with XLNet's flags (bert_tf's summary)."""
        return [f"trained to global_step {self.train.global_step}; last loss "
                f"{self.train.last_loss}; checkpoint {self.train.checkpoint}"]


def run(args: XLNetPretrainingArgs, strategy: Optional[tf.distribute.Strategy] = None,
        shuffle_fn=None) -> XLNetPretrainingResult:
    """Trains ``train_steps`` updates (resuming from ``--model_dir``); returns an
    :class:`XLNetPretrainingResult`.

    Args:
      strategy: default :func:`bert_tf.training.strategy.strategy_from_flags` (XLNet's
        flags: TPU with ``--use_tpu``, else up to ``--num_core_per_host`` GPUs as
        train_gpu.py's towers).
      shuffle_fn: the permutation draw of the parser (tests fix it); default
        ``tf.random.shuffle``.

    Raises:
      FlagError, ConfigError, InputDataError, CheckpointError: one line naming the flag,
        file or variable, before training starts.
    """
    check_args(args)
    config = model_config(args)
    strategy = strategy or strategy_from_flags(args, multi_worker=True)  # TF_CONFIG: 2 hosts
    bsz_per_core = per_replica_batch(args, strategy.num_replicas_in_sync)
    info = find_record_info(args.record_info_dir, "train", bsz_per_host=args.train_batch_size,
                            seq_len=args.seq_len, reuse_len=args.reuse_len,
                            bi_data=args.bi_data, mask_alpha=args.mask_alpha,
                            mask_beta=args.mask_beta, uncased=args.uncased,
                            num_predict=args.num_predict, num_passes=args.num_passes)
    logging.info("Records: %d batches in %d file(s)", info["num_batch"], len(info["filenames"]))
    parser_kwargs = {} if shuffle_fn is None else {"shuffle_fn": shuffle_fn}
    parser = make_parser(args.seq_len, args.reuse_len, args.perm_size, args.num_predict,
                         args.use_bfloat16, **parser_kwargs)
    dataset_fn = dataset_fn_builder(info["filenames"], bsz_per_core, parser)
    def build():
        # --use_bfloat16: bfloat16 compute over float32 variables (Keras' mixed_bfloat16, as
        # the fine-tuning tasks); the float32 checkpoints keep the original's dtypes
        with dtype_policy("bfloat16" if args.use_bfloat16 else "float32"), strategy.scope():
            model = XLNetPretrainingModel(config, run_config(args))
            model(dummy_features(bsz_per_core, args.seq_len, args.num_predict),
                  mems=None if args.mem_len <= 0 else [
                      tf.zeros([bsz_per_core, args.mem_len, config.d_model])] * config.n_layer)
        return model

    def load(model):  # the loop's warm start, after the untie_r check
        checkpoint_map.check_checkpoint_fits(checkpoint_map.xlnet_variable_map(model),
                                             args.init_checkpoint, config.untie_r,
                                             sizes_from="flags")
        return bert_warm_start(args.init_checkpoint, args.allow_partial_init_checkpoint,
                               name_map=checkpoint_map.xlnet_variable_map)(model)

    # a warm start creates the weights straight from --init_checkpoint (issue 24)
    model, warm = build_for_training(build, load, args.model_dir, args.init_checkpoint,
                                     strategy)
    with strategy.scope():
        name_map = checkpoint_map.xlnet_variable_map(model)
        optimizer, _ = create_xlnet_optimizer(
            args.learning_rate, args.train_steps, args.warmup_steps, args.decay_method,
            args.min_lr_ratio, args.weight_decay, args.adam_epsilon, args.clip,
            variable_names=name_map)
        memory = Memory(config.n_layer, bsz_per_core, args.mem_len, config.d_model)
    resume = checkpoint_io.existing_checkpoints(args.model_dir) if tf.io.gfile.isdir(
        args.model_dir) else []
    if args.init_checkpoint and not resume:  # before any training: never random weights
        checkpoint_map.check_checkpoint_fits(name_map, args.init_checkpoint, config.untie_r,
                                             sizes_from="flags")
    # else: loop.train says it trains from scratch (one warning line for every task)
    steps_per_loop = max(1, min(args.iterations, args.save_steps or args.iterations))
    train_config = loop.TrainConfig(
        args.model_dir, args.train_steps, init_checkpoint=args.init_checkpoint,
        allow_partial_init_checkpoint=args.allow_partial_init_checkpoint,
        save_checkpoints_steps=args.save_steps or 0,
        keep_checkpoint_max=args.max_save or 2 ** 31 - 1,
        log_every_n_steps=min(100, steps_per_loop), steps_per_loop=steps_per_loop,
        summary_dir=args.model_dir, loss_summary="train/total_loss",
        recompute_grad=args.recompute_grad, train_batch_size=args.train_batch_size,
        warm_start=warm, memory_levers="--recompute_grad, --use_bfloat16, a smaller --train_batch_size, a "
                      "shorter --seq_len (new records)")
    try:
        result = loop.train(model, pretraining_loss_fn(memory), dataset_fn, name_map,
                            train_config, strategy=strategy, optimizer=optimizer)
    except tf.errors.DataLossError as e:
        first_line = (e.message or str(e)).strip().splitlines()[0]
        raise InputDataError(f"{', '.join(info['filenames'])}: a record file is truncated or "
                             f"corrupt ({first_line}); the checkpoints written so far are "
                             f"complete; recreate the records") from e
    return XLNetPretrainingResult(train=result, record_info=info)


def make_model_dir(args: XLNetPretrainingArgs) -> None:
    """Creates ``--model_dir`` (when given), as ``run_pretraining.py`` does before :func:`run`.

    Raises:
      FlagError: it cannot be created.
    """
    if args.model_dir:
        make_output_dir(args.model_dir, "model_dir", TRAINING_FILES)
