"""Encoder forward, fp32 (or bf16): bert_tf vs the ORIGINAL graph vs bert_tf at an older commit,
rounds interleaved in one process.

    BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_encoder_peers.py \
        [--shape base|minilm] [--batch_size 8] [--seq_length 128] [--rounds 5] [--iters 3] \
        [--before_ref <git commit>] [--xla] [--dtype float32|bfloat16] \
        [--torch_python /work/hfvenv/bin/python] [--no_keras_hub] [--no_matmul]

How to run the issue-16 rows in one command each (Base [8,128] and MiniLM [32,128]):
``BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_encoder_peers.py --shape base --xla
--torch_python /work/hfvenv/bin/python`` (and ``--shape minilm --batch_size 32``).

Peers (each a forward of the same shape, same random weights, same inputs):

* ``original``: google-research/bert's ``modeling.py`` from ``$BERT_ORIGINAL_DIR`` (a folder
  outside this repository; nothing of it is copied here), built in a TF1 graph under
  ``tf.compat.v1`` with a small shim of ours for the two TF1 APIs TF 2.21 lacks
  (``tf.layers.dense``: ``get_variable`` kernel/bias, matmul + bias_add as TF1 did on 2-D input;
  ``tf.contrib.layers.layer_norm``: moments over the last axis, epsilon 1e-12, beta/gamma) and
  run in a ``Session``. Our weights are assigned to it by their original names (the
  checkpoint name table), so the two outputs are compared too.
* ``ours``: :class:`bert_tf.bert.model.BertModel` in one ``tf.function``.
* ``ours_without_xla`` (with ``--xla``): the same model, plain ``tf.function``.
* ``float32`` (with ``--dtype bfloat16``): our model in float32, same weights; the output
  differences are recorded.
* ``ours_held`` (with ``--dtype bfloat16``): our model as a predict-only run builds it, its
  matmul kernels held in bfloat16 (cast once); ``held_output_equals_ours`` records that its
  output is the per-call-cast model's, bit for bit.
* ``before``: ``bert_tf/bert/layers.py`` as of ``--before_ref`` (loaded from git into memory),
  the same encoder loop, same weights.
* ``keras_hub`` (unless ``--no_keras_hub``): keras-hub's ``BertBackbone``, the same weights
  (mapped by ``bert_tf/bert/keras_hub_mapping.py``), plain ``tf.function`` (``jit_compile``
  as ``--xla``), in this process.
* ``hf_torch`` (with ``--torch_python``): HF transformers' PyTorch ``BertModel`` (eager,
  ``torch.inference_mode``, ``hidden_act="gelu_new"``: the tanh GELU; with ``--dtype bfloat16``
  ``hf_torch_bf16``: the same under ``torch.autocast("cpu", dtype=torch.bfloat16)``, the
  issue-25 peer), the same weights
  (``bert_tf/bert/hf_export.py``), in a worker process of that Python: each round this process
  asks the worker to time its calls while it waits, so the two stacks alternate and never run
  at once. CPU seconds are the worker's own.
* ``matmul`` (unless ``--no_matmul``): one plain TF ``tf.matmul`` of two fp32 [2048, 2048]
  matrices, the machine's fp32 matmul limit measured in the same rounds. Every peer's
  GFLOP/s (the encoder's matmul FLOPs: 2 M K N per projection, 4 B S^2 H for the attention)
  and its share of the limit are recorded.
* ``matmul_ffn`` (with ``matmul``): one plain ``tf.matmul`` in the run's ``--dtype`` at the
  encoder's FFN shape ``[B*S, H] x [H, I]``: the limit of that dtype on this machine
  (``cpu_share_of_ffn_matmul_limit``; for bfloat16 the limit the encoder is held to).

Each round times every peer (``--iters`` calls, the median), peers in a rotating order;
the result is per peer the median (min-max) over rounds of seq/s, and the ratios ours / peer per
round, median (min-max), on wall and on CPU seconds (all threads; less sensitive to other
jobs on a shared machine). Records `lscpu`'s model name and flags and the load average. Writes
``bench/results/encoder_peers_<shape>.json``.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import types

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.checkpoint_map import bert_model_map  # noqa: E402
from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.model import BertModel  # noqa: E402
from bert_tf.bert.hf_export import convert_original_weights, hf_config_dict  # noqa: E402
from bert_tf.bert.keras_hub_mapping import keras_hub_config, original_to_keras_hub  # noqa: E402
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHAPES = {
    "base": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
    "minilm": dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                   intermediate_size=1536),
    "tiny": dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=128),
}


# ---- the original graph --------------------------------------------------------------------

def _shim_tf():
    """``tf.compat.v1`` plus TF1's ``layers.dense`` and ``contrib.layers.layer_norm``."""
    v1 = tf.compat.v1
    shim = types.ModuleType("tensorflow_v1_shim")
    shim.__dict__.update({k: getattr(v1, k) for k in dir(v1) if not k.startswith("__")})

    def dense(inputs, units, activation=None, name=None, kernel_initializer=None):
        with v1.variable_scope(name, default_name="dense"):
            kernel = v1.get_variable("kernel", [inputs.shape[-1], units],
                                     initializer=kernel_initializer)
            bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
            out = tf.nn.bias_add(tf.matmul(inputs, kernel), bias)
            return activation(out) if activation else out

    def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None):
        with v1.variable_scope(scope, default_name="LayerNorm"):
            h = inputs.shape[-1]
            beta = v1.get_variable("beta", [h], initializer=v1.zeros_initializer())
            gamma = v1.get_variable("gamma", [h], initializer=v1.ones_initializer())
            mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
            return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)

    shim.layers = types.SimpleNamespace(dense=dense)
    shim.contrib = types.SimpleNamespace(layers=types.SimpleNamespace(layer_norm=layer_norm))
    return shim


def load_original_modeling(folder):
    """Imports ``<folder>/modeling.py`` with our shim standing in for ``tensorflow``."""
    path = os.path.join(folder, "modeling.py")
    if not os.path.exists(path):
        raise SystemExit(f"BERT_ORIGINAL_DIR={folder}: no modeling.py there "
                         "(a checkout of google-research/bert)")
    saved = sys.modules["tensorflow"]
    sys.modules["tensorflow"] = _shim_tf()
    try:
        spec = importlib.util.spec_from_file_location("original_bert_modeling", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.modules["tensorflow"] = saved
    return module


class OriginalGraph:
    """The original `BertModel` (is_training=False) in its own graph and session."""

    def __init__(self, modeling, config, batch, seq, weights):
        v1 = tf.compat.v1
        self.graph = tf.Graph()
        with self.graph.as_default():
            cfg = modeling.BertConfig(**config)
            self.ids = v1.placeholder(tf.int32, [batch, seq])
            self.mask = v1.placeholder(tf.int32, [batch, seq])
            self.segs = v1.placeholder(tf.int32, [batch, seq])
            model = modeling.BertModel(cfg, is_training=False, input_ids=self.ids,
                                       input_mask=self.mask, token_type_ids=self.segs)
            self.output = model.get_sequence_output()
            variables = {v.op.name: v for v in v1.global_variables()}
            missing = sorted(set(variables) - set(weights))
            if missing:
                raise SystemExit(f"original graph variables without a weight: {missing[:5]}")
            self.session = v1.Session(graph=self.graph)
            for name, var in variables.items():
                var.load(weights[name], self.session)

    def __call__(self, ids, mask, segs):
        return self.session.run(self.output, {self.ids: ids, self.mask: mask, self.segs: segs})


# ---- bert_tf at an older commit -------------------------------------------------------------

def load_layers_at(ref):
    """``bert_tf/bert/layers.py`` as of git ``ref``, as a module (it imports only keras / tf)."""
    source = subprocess.run(["git", "-C", REPO, "show", f"{ref}:bert_tf/bert/layers.py"],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType(f"bert_tf_layers_{ref}")
    exec(compile(source, f"{ref}:bert_tf/bert/layers.py", "exec"), module.__dict__)
    return module


class Encoder(keras.Model):
    """BertModel's encoder loop (embeddings, blocks) over another version's layers."""

    def __init__(self, layers, config):
        super().__init__()
        self.embeddings = layers.BertEmbeddings(config.vocab_size, config.hidden_size,
                                                config.type_vocab_size, config.max_position_embeddings)
        self.blocks = [layers.TransformerBlock(config.hidden_size, config.num_attention_heads,
                                               config.intermediate_size) for _ in range(config.num_hidden_layers)]
        self.mask_adder = layers.attention_mask_adder

    def call(self, ids, mask, segs):
        x = self.embeddings(ids, segs)
        adder = self.mask_adder(mask, x.dtype)
        for block in self.blocks:
            x = block(x, adder)
        return x


def copy_weights(src_model, dst_model):
    for s, d in zip(src_model.weights, dst_model.weights):
        d.assign(s)


# ---- keras-hub, HF PyTorch, the matmul limit --------------------------------------------------

def keras_hub_peer(config, weights, xla):
    """keras-hub ``BertBackbone`` with ``weights`` (original names); returns its forward."""
    import keras_hub

    backbone = keras_hub.models.BertBackbone(**keras_hub_config(config))
    paths = original_to_keras_hub(weights, config)
    for w in backbone.weights:
        w.assign(paths.pop(w.path))
    if paths:
        raise SystemExit(f"keras-hub weights not in the backbone: {sorted(paths)[:4]}")
    fn = tf.function(lambda i, m, s: backbone({"token_ids": i, "padding_mask": m,
                                               "segment_ids": s})["sequence_output"],
                     jit_compile=xla)
    return fn


class TorchWorker:
    """HF PyTorch ``BertModel`` in a worker process of ``python`` (bench/hf_torch_worker.py)."""

    def __init__(self, python, config, weights, ids, mask, segs, autocast=None):
        self.folder = tempfile.mkdtemp(prefix="bench_hf_torch_")
        hf, _, _ = convert_original_weights(weights)
        np.savez(os.path.join(self.folder, "weights.npz"), **hf)
        np.savez(os.path.join(self.folder, "inputs.npz"), input_ids=ids, attention_mask=mask,
                 token_type_ids=segs)
        with open(os.path.join(self.folder, "config.json"), "w") as f:
            json.dump(hf_config_dict(config), f)
        env = dict(os.environ, PYTHONPATH="")
        if autocast:  # the worker calls the model under torch.autocast("cpu", dtype=...)
            env["HF_TORCH_AUTOCAST"] = autocast
        self.proc = subprocess.Popen([python, os.path.join(HERE, "hf_torch_worker.py"), self.folder],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env)
        line = self.proc.stdout.readline()
        if line.strip() != "ready":
            raise SystemExit(f"{python} bench/hf_torch_worker.py did not start (said {line!r})")
        self.output = np.load(os.path.join(self.folder, "output.npy"))
        self.threads = None

    def time_calls(self, iters):
        self.proc.stdin.write(f"time {iters}\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        self.threads = answer["threads"]
        return float(np.median(answer["wall"])), float(np.median(answer["cpu"]))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def encoder_flops(config, batch, seq):
    """Matmul FLOPs of one encoder forward (2 M K N per projection; 4 B S^2 H attention)."""
    m, h, i = batch * seq, config.hidden_size, config.intermediate_size
    per_layer = 2 * m * h * h * 4 + 2 * m * h * i * 2 + 4 * batch * seq * seq * h
    return per_layer * config.num_hidden_layers


MATMUL_N = 2048


# ---- timing ----------------------------------------------------------------------------------

def time_calls(fn, iters):
    """Median wall and CPU (process, all threads) seconds of ``iters`` calls."""
    wall, cpu = [], []
    for _ in range(iters):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)), float(np.median(cpu))


def summarize(values):
    values = np.asarray(values, float)
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max()), "rounds": int(values.size)}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="base", choices=sorted(SHAPES))
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--before_ref", default=None, help="git commit of the 'before' layers.py")
    p.add_argument("--xla", action="store_true")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    p.add_argument("--torch_python", default=None,
                   help="a Python with torch + transformers: HF BertModel as a peer (worker)")
    p.add_argument("--no_keras_hub", action="store_true")
    p.add_argument("--no_matmul", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    info = {"machine": machine(), "rounds": args.rounds, "shape": args.shape, "batch": args.batch_size,
            "seq": args.seq_length, "dtype": args.dtype, "xla": args.xla,
            "before_ref": args.before_ref, "iters_per_round": args.iters}
    config = BertConfig(type_vocab_size=2, **SHAPES[args.shape])
    float32_model = None
    if args.dtype != "float32":  # the float32 model as a peer, same weights
        float32_model = BertModel(config).build_with_dummy_input()
        keras.mixed_precision.set_global_policy("mixed_" + args.dtype)
    B, S = args.batch_size, args.seq_length
    rng = np.random.RandomState(0)
    ids = rng.randint(100, config.vocab_size - 1, (B, S)).astype(np.int32)
    mask = np.ones((B, S), np.int32)
    mask[B // 2:, S * 3 // 4:] = 0  # some padding
    segs = np.zeros((B, S), np.int32)
    segs[:, S // 2:] = 1

    ours = BertModel(config).build_with_dummy_input()
    ours_fn = tf.function(lambda i, m, s: ours({"input_ids": i, "input_mask": m, "segment_ids": s})["sequence_output"],
                          jit_compile=args.xla)
    peers = {"ours": lambda: ours_fn(ids, mask, segs).numpy()}
    reference = peers["ours"]().astype(np.float32)
    if args.dtype != "float32":  # as a predict-only run builds it: kernels cast once (issue 25)
        from bert_tf.training.precision import dtype_policy

        with dtype_policy(args.dtype, inference_only=True):
            held = BertModel(config).build_with_dummy_input()
        for s, d in zip(ours.weights, held.weights):
            d.assign(tf.cast(s, d.dtype))
        held_fn = tf.function(lambda i, m, s: held(
            {"input_ids": i, "input_mask": m, "segment_ids": s})["sequence_output"],
            jit_compile=args.xla)
        peers["ours_held"] = lambda: held_fn(ids, mask, segs).numpy()
        info["held_output_equals_ours"] = bool(np.array_equal(peers["ours_held"](), reference))
    if args.xla:  # the same model without XLA as a peer
        plain_fn = tf.function(lambda i, m, s: ours({"input_ids": i, "input_mask": m, "segment_ids": s})["sequence_output"])
        peers["ours_without_xla"] = lambda: plain_fn(ids, mask, segs).numpy()

    if float32_model is not None:
        copy_weights(ours, float32_model)
        f32_fn = tf.function(lambda i, m, s: float32_model(
            {"input_ids": i, "input_mask": m, "segment_ids": s})["sequence_output"], jit_compile=args.xla)
        peers["float32"] = lambda: f32_fn(ids, mask, segs).numpy()
        real = mask.astype(bool)
        f32 = peers["float32"]()
        info["max_abs_diff_vs_float32"] = float(np.abs(f32 - reference)[real].max())
        info["mean_abs_diff_vs_float32"] = float(np.abs(f32 - reference)[real].mean())
        info["mean_abs_float32_value"] = float(np.abs(f32)[real].mean())
    original_dir = os.environ.get("BERT_ORIGINAL_DIR")
    if original_dir and args.dtype == "float32":
        weights = {name: var.numpy() for name, var in bert_model_map(ours).items()}
        original = OriginalGraph(load_original_modeling(original_dir), config.to_dict(), B, S, weights)
        peers["original"] = lambda: original(ids, mask, segs)
        real = mask.astype(bool)
        info["max_abs_diff_ours_vs_original"] = float(np.abs(peers["original"]() - reference)[real].max())
    if args.before_ref:
        before = Encoder(load_layers_at(args.before_ref), config)
        before(ids[:1, :2], mask[:1, :2], segs[:1, :2])
        copy_weights(ours.embeddings, before.embeddings)
        for a, b in zip(ours.encoder_layers, before.blocks):
            copy_weights(a, b)
        before_fn = tf.function(lambda i, m, s: before(i, m, s), jit_compile=args.xla)
        peers["before"] = lambda: before_fn(ids, mask, segs).numpy()
        real = mask.astype(bool)
        info["max_abs_diff_ours_vs_before"] = float(
            np.abs(peers["before"]().astype(np.float32) - reference)[real].max())
        if float32_model is not None:  # the before's own distance from float32
            diff = np.abs(peers["before"]().astype(np.float32) - f32)[real]
            info["max_abs_diff_before_vs_float32"] = float(diff.max())
            info["mean_abs_diff_before_vs_float32"] = float(diff.mean())
    weights = {name: var.numpy() for name, var in bert_model_map(ours).items()}
    real = mask.astype(bool)
    if not args.no_keras_hub and args.dtype == "float32":
        hub_fn = keras_hub_peer(config, weights, args.xla)
        peers["keras_hub"] = lambda: hub_fn(ids, mask, segs).numpy()
        info["max_abs_diff_ours_vs_keras_hub"] = float(
            np.abs(peers["keras_hub"]() - reference)[real].max())
    if not args.no_matmul:
        a = tf.constant(rng.rand(MATMUL_N, MATMUL_N).astype(np.float32))
        b = tf.constant(rng.rand(MATMUL_N, MATMUL_N).astype(np.float32))
        mm = tf.function(lambda a, b: tf.matmul(a, b))
        peers["matmul"] = lambda: mm(a, b).numpy()
        # the limit in the run's dtype at the encoder's own FFN shape [B*S, H] x [H, I]
        ffn_dtype = tf.bfloat16 if args.dtype == "bfloat16" else tf.float32
        fa = tf.cast(tf.constant(rng.rand(B * S, config.hidden_size).astype(np.float32)), ffn_dtype)
        fb = tf.cast(tf.constant(rng.rand(config.hidden_size, config.intermediate_size)
                                 .astype(np.float32)), ffn_dtype)
        peers["matmul_ffn"] = lambda: mm(fa, fb).numpy()
    torch_worker = None
    if args.torch_python:
        bf16 = args.dtype == "bfloat16"
        torch_worker = TorchWorker(args.torch_python, config, weights, ids, mask, segs,
                                   autocast="bfloat16" if bf16 else None)
        name = "hf_torch_bf16" if bf16 else "hf_torch"
        info[f"max_abs_diff_ours_vs_{name}"] = float(
            np.abs(torch_worker.output - reference)[real].max())
        if bf16 and float32_model is not None:
            info["max_abs_diff_hf_torch_bf16_vs_float32"] = float(
                np.abs(torch_worker.output - f32)[real].max())
        peers[name] = torch_worker  # timed by the worker
    for fn in peers.values():  # warm-up / trace
        if fn is not torch_worker:
            fn()

    names = list(peers)
    seconds = {n: [] for n in names}
    cpu_seconds = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            if n in ("hf_torch", "hf_torch_bf16"):
                wall, cpu = torch_worker.time_calls(args.iters)
            else:
                wall, cpu = time_calls(peers[n], args.iters)
            seconds[n].append(wall)
            cpu_seconds[n].append(cpu)
    if torch_worker is not None:
        info["hf_torch_threads"] = torch_worker.threads
        torch_worker.close()
    flops = {n: encoder_flops(config, B, S) for n in names}
    if "matmul" in names:
        flops["matmul"] = 2 * MATMUL_N ** 3
        info["matmul_n"] = MATMUL_N
        flops["matmul_ffn"] = 2 * B * S * config.hidden_size * config.intermediate_size
        info["matmul_ffn_shape"] = [B * S, config.hidden_size, config.intermediate_size]
    info["encoder_gflop_per_batch"] = encoder_flops(config, B, S) / 1e9
    info["gflop_per_s"] = {n: summarize([flops[n] / t / 1e9 for t in seconds[n]]) for n in names}
    info["cpu_gflop_per_cpu_s"] = {n: summarize([flops[n] / t / 1e9 for t in cpu_seconds[n]])
                                   for n in names}
    if "matmul" in names:  # per round: the peer's GFLOP/s over the matmul's, same round
        info["share_of_matmul_limit"] = {
            n: summarize([mm_t / t * flops[n] / flops["matmul"]
                          for t, mm_t in zip(seconds[n], seconds["matmul"])]) for n in names}
        info["cpu_share_of_matmul_limit"] = {
            n: summarize([mm_t / t * flops[n] / flops["matmul"]
                          for t, mm_t in zip(cpu_seconds[n], cpu_seconds["matmul"])])
            for n in names}
        # the same against a plain matmul in the run's dtype at [B*S, H] x [H, I]
        info["cpu_share_of_ffn_matmul_limit"] = {
            n: summarize([mm_t / t * flops[n] / flops["matmul_ffn"]
                          for t, mm_t in zip(cpu_seconds[n], cpu_seconds["matmul_ffn"])])
            for n in names}
        info["cpu_s_per_call"] = {n: summarize(cpu_seconds[n]) for n in names}
    names_enc = [n for n in names if n not in ("matmul", "matmul_ffn")]
    for n in ("matmul", "matmul_ffn"):
        seconds.pop(n, None)
        cpu_seconds.pop(n, None)
    names = names_enc
    info["seq_per_s"] = {n: summarize([B / t for t in seconds[n]]) for n in names}
    info["ratio_ours_over"] = {n: summarize([t / o for t, o in zip(seconds[n], seconds["ours"])])
                               for n in names if n != "ours"}
    # CPU seconds (all threads of the process) per batch: less sensitive to other jobs
    info["cpu_seq_per_s"] = {n: summarize([B / t for t in cpu_seconds[n]]) for n in names}
    info["cpu_ratio_ours_over"] = {n: summarize([t / o for t, o in zip(cpu_seconds[n], cpu_seconds["ours"])])
                                   for n in names if n != "ours"}
    info["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(info, indent=2))
    out = args.out or os.path.join(HERE, "results", f"encoder_peers_{args.shape}"
                                   f"{'_xla' if args.xla else ''}{'_' + args.dtype if args.dtype != 'float32' else ''}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(info, f, indent=2)
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
