"""bfloat16 encoder forward: the LayerNorm variants of `bert_tf.bert.layers.normalize`, rounds
interleaved in one process, with each variant's distance from the float32 model.

    python bench/bench_bf16_layer_norm.py [--shape minilm|base] [--batch_size 32]
        [--seq_length 128] [--rounds 5] [--iters 3] [--checkpoint_dir DIR]
    python bench/bench_bf16_layer_norm.py --model xlnet [--shape small|base] [--batch_size 8]

Variants (each the same ``BertModel`` under ``mixed_bfloat16``, inference, its own trace):

* ``keras``: ``layer(x)``, Keras' LayerNormalization (cast to float32, moments, scale and
  shift, cast back: about ten ops) in every block: bert_tf before the fused LayerNorm;
* ``fused_float32`` (kept): the block's bf16 sum cast to float32, one ``_MklLayerNorm`` in
  float32, the output cast to bf16;
* ``fused_bfloat16``: one ``_MklLayerNorm`` on the bf16 sum (gamma and beta rounded to bf16).

The embeddings are today's in every variant (float32 lookup and sum). With ``--before_ref``
(BERT only) a ``before`` peer runs ``bert_tf/bert/layers.py`` as of that commit (its
embeddings: the [V, H] table cast to bf16 per call, sum in bf16), same weights: ``before`` vs
``keras`` is the embeddings' change alone, ``keras`` vs ``fused_float32`` the LayerNorm's. ``matmul_ffn`` is a
plain bf16 ``tf.matmul`` at ``[B*S, H] x [H, I]``, the bf16 limit in the same rounds. The
weights: ``--checkpoint_dir`` (original layout; default for ``--shape minilm``: the embedded
all-MiniLM-L6-v2 of ``python -m bert_tf.defaults``), else random with gamma in [0.5, 1.5) and
beta ~ N(0, 0.1) (random init has gamma 1, beta 0, which bf16 holds exactly). Each variant's
max / mean abs difference of ``sequence_output`` from the float32 model (same weights, real
tokens) is recorded. Writes ``bench/results/bf16_layer_norm_variants_<shape>.json``.

``--model xlnet``: :class:`bert_tf.xlnet.model.XLNetModel` instead (shapes and classifier-style
inputs of bench/bench_xlnet_peers.py, random weights, gamma and beta as above), the variants
applied to its blocks' LayerNorms; no share of the limit (the FLOP count above is BERT's).
Writes ``bench/results/bf16_layer_norm_variants_xlnet_<shape>.json``.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

from bert_tf import fused_layer_norm  # noqa: E402
from bert_tf.bert import layers  # noqa: E402
from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint  # noqa: E402
from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.model import BertModel  # noqa: E402
from bert_tf.training.precision import dtype_policy  # noqa: E402
from bench_encoder_peers import (SHAPES, Encoder, copy_weights, encoder_flops,  # noqa: E402
                                 load_layers_at, summarize)
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def keras_normalize(layer, x, training=False):
    return layer(x)


def fused_bfloat16_normalize(layer, x, training=False):
    y = fused_layer_norm.fused_layer_norm(x, layer.gamma, layer.beta, layer.epsilon)
    return tf.cast(y, layer.compute_dtype)


VARIANTS = {"keras": keras_normalize, "fused_float32": layers.normalize,
            "fused_bfloat16": fused_bfloat16_normalize}


RANDOM_WEIGHTS = "random, LayerNorm gamma U[0.5, 1.5), beta N(0, 0.1)"


def perturb_layer_norms(model, rng):
    """gamma U[0.5, 1.5), beta N(0, 0.1): random init's 1 and 0 are exact in bfloat16."""
    for v in model.weights:
        if "layer_norm" in v.path.lower() or "layernorm" in v.path.lower():
            if v.path.endswith("gamma"):
                v.assign(rng.uniform(0.5, 1.5, v.shape).astype(np.float32))
            elif v.path.endswith("beta"):
                v.assign(rng.normal(0, 0.1, v.shape).astype(np.float32))


def build_bert(args, rng):
    """(float32 model, bf16 model with the same weights, feeds, real-token mask [B, S],
    {"config", "ffn": (H, I), "weights": where they come from})."""
    ckpt_dir = args.checkpoint_dir
    if ckpt_dir is None and args.shape == "minilm":
        ckpt_dir = subprocess.run([sys.executable, "-m", "bert_tf.defaults"], capture_output=True,
                                  text=True, check=True).stdout.strip()
    if ckpt_dir:
        config = BertConfig.from_json_file(os.path.join(ckpt_dir, "bert_config.json"))
    else:
        config = BertConfig(type_vocab_size=2, **SHAPES[args.shape])
    B, S = args.batch_size, args.seq_length
    f32 = BertModel(config).build_with_dummy_input()
    with dtype_policy("bfloat16"):
        bf16 = BertModel(config).build_with_dummy_input()
    if ckpt_dir:
        load_bert_checkpoint(bert_model_map(f32), os.path.join(ckpt_dir, "bert_model.ckpt"),
                             require_all=True)
    else:
        perturb_layer_norms(f32, rng)
    for a, b in zip(f32.weights, bf16.weights):
        b.assign(a)
    ids = rng.randint(100, config.vocab_size - 1, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[B // 2:, S * 3 // 4:] = 0
    segs = np.zeros((B, S), np.int32)
    segs[:, S // 2:] = 1
    feeds = {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
             "segment_ids": tf.constant(segs)}
    return f32, bf16, feeds, mask.astype(bool), {
        "config": config, "ffn": (config.hidden_size, config.intermediate_size),
        "weights": ckpt_dir or RANDOM_WEIGHTS}


def xlnet_layers():
    from bert_tf.xlnet import layers as xl_layers
    return xl_layers


def build_xlnet(args, rng):
    """As :func:`build_bert`, for XLNetModel (bench/bench_xlnet_peers.py's shapes, inputs)."""
    from bench_xlnet_peers import SHAPES as XLNET_SHAPES, make_inputs
    from bert_tf.xlnet.config import RunConfig, XLNetConfig
    from bert_tf.xlnet.model import XLNetModel

    config = XLNetConfig(ff_activation="gelu", untie_r=True, **XLNET_SHAPES[args.shape])
    ids, segs, mask, _ = make_inputs(args.batch_size, args.seq_length, config.n_token)
    feeds = {"input_ids": tf.constant(ids), "segment_ids": tf.constant(segs),
             "input_mask": tf.constant(mask)}
    small = {k: v[:1] for k, v in feeds.items()}
    f32 = XLNetModel(config, RunConfig())
    f32(small, training=False)
    with dtype_policy("bfloat16"):
        bf16 = XLNetModel(config, RunConfig())
        bf16(small, training=False)
    perturb_layer_norms(f32, rng)
    for a, b in zip(f32.weights, bf16.weights):
        b.assign(a)
    return f32, bf16, feeds, mask == 0, {"config": config, "ffn": (config.d_model, config.d_inner),
                                         "weights": RANDOM_WEIGHTS}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="bert", choices=["bert", "xlnet"])
    p.add_argument("--shape", default="minilm")
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--checkpoint_dir", default=None)
    p.add_argument("--before_ref", default=None,
                   help="git commit of a 'before' bert_tf/bert/layers.py (BERT only)")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if not fused_layer_norm.available():
        raise SystemExit("no _MklLayerNorm kernel here (oneDNN build, CPU only): nothing to compare")
    B, S = args.batch_size, args.seq_length
    rng = np.random.RandomState(0)
    if args.model == "xlnet":
        f32, bf16, feeds, real, built = build_xlnet(args, rng)
    else:
        f32, bf16, feeds, real, built = build_bert(args, rng)

    def traced(model):
        fn = tf.function(lambda f: model(f, training=False)["sequence_output"])
        fn.get_concrete_function(feeds)
        return fn

    want = traced(f32)(feeds).numpy()
    peers, info = {}, {"machine": machine(), "model": args.model, "shape": args.shape,
                       "batch": B, "seq": S,
                       "rounds": args.rounds, "iters_per_round": args.iters,
                       "weights": built["weights"],
                       "max_abs_diff_vs_float32": {}, "mean_abs_diff_vs_float32": {},
                       "mean_abs_float32_value": float(np.abs(want[real]).mean())}
    module = xlnet_layers() if args.model == "xlnet" else layers
    saved = module.normalize
    try:
        for name, fn in VARIANTS.items():
            module.normalize = fn
            f = traced(bf16)  # traced with this variant
            peers[name] = (lambda f=f: f(feeds).numpy())
            diff = np.abs(peers[name]().astype(np.float32) - want)[real]
            info["max_abs_diff_vs_float32"][name] = float(diff.max())
            info["mean_abs_diff_vs_float32"][name] = float(diff.mean())
    finally:
        module.normalize = saved
    if args.before_ref and args.model == "bert":
        with dtype_policy("bfloat16"):
            before = Encoder(load_layers_at(args.before_ref), built["config"])
            before(feeds["input_ids"][:1, :2], feeds["input_mask"][:1, :2],
                   feeds["segment_ids"][:1, :2])
        copy_weights(bf16.embeddings, before.embeddings)
        for a, b in zip(bf16.encoder_layers, before.blocks):
            copy_weights(a, b)
        before_fn = tf.function(lambda f: before(f["input_ids"], f["input_mask"],
                                                 f["segment_ids"]))
        peers["before"] = lambda: before_fn(feeds).numpy()
        diff = np.abs(peers["before"]().astype(np.float32) - want)[real]
        info["max_abs_diff_vs_float32"]["before"] = float(diff.max())
        info["mean_abs_diff_vs_float32"]["before"] = float(diff.mean())
        info["before_ref"] = args.before_ref
    hidden, inner = built["ffn"]
    a = tf.cast(tf.constant(rng.rand(B * S, hidden).astype(np.float32)), tf.bfloat16)
    b = tf.cast(tf.constant(rng.rand(hidden, inner).astype(np.float32)), tf.bfloat16)
    mm = tf.function(lambda a, b: tf.matmul(a, b))
    peers["matmul_ffn"] = lambda: mm(a, b).numpy()
    peers["matmul_ffn"]()
    names = list(peers)
    cpu = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            times = []
            for _ in range(args.iters):
                c = time.process_time()
                peers[n]()
                times.append(time.process_time() - c)
            cpu[n].append(float(np.median(times)))
    info["cpu_s_per_forward"] = {n: summarize(cpu[n]) for n in names}
    if args.model == "bert":
        flops = encoder_flops(built["config"], B, S)
        mm_flops = 2 * B * S * hidden * inner
        info["cpu_share_of_bf16_ffn_matmul_limit"] = {
            n: summarize([m / t * flops / mm_flops for t, m in zip(cpu[n], cpu["matmul_ffn"])])
            for n in names if n != "matmul_ffn"}
    info["cpu_ratio_keras_over"] = {
        n: summarize([k / t for k, t in zip(cpu["keras"], cpu[n])]) for n in VARIANTS if n != "keras"}
    if "before" in cpu:  # > 1: faster than the before
        info["cpu_ratio_before_over"] = {
            n: summarize([b / t for b, t in zip(cpu["before"], cpu[n])]) for n in VARIANTS}
    info["cpu_ratio_fused_float32_over_fused_bfloat16"] = summarize(
        [a / b for a, b in zip(cpu["fused_float32"], cpu["fused_bfloat16"])])
    info["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(info, indent=2))
    tag = args.shape if args.model == "bert" else f"xlnet_{args.shape}"
    out = args.out or os.path.join(HERE, "results", f"bf16_layer_norm_variants_{tag}.json")
    with open(out, "w") as f:
        json.dump(info, f, indent=2)
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
