"""XLNet forward and fine-tuning step: bert_tf vs the ORIGINAL graph vs HF PyTorch, one run.

    XLNET_ORIGINAL_DIR=/tmp/orig_xlnet python bench/bench_xlnet_peers.py \
        [--shape base|small] [--batch_size 8] [--seq_length 128] [--rounds 3] [--iters 2] \
        [--work forward,train] [--hf_python /work/hfvenv/bin/python] [--xla] [--dropout 0.1]

Shapes: ``base`` = XLNet-Base (12 layers, d_model 768, 12 heads of 64, d_inner 3072, vocab
32000, gelu, untie_r); ``small`` = 6 layers x 384 (6 heads of 64, d_inner 1536).
Inputs: XLNet classifier layout (left padding on half the batch, segments A / B / CLS), no
memory, ``bi_data`` False, ``attn_type`` bi, no perm_mask.

Peers, all with the same random weights (ours, mapped by name):

* ``ours``: forward = :class:`bert_tf.xlnet.model.XLNetModel` in one ``tf.function``
  (``--xla``: ``jit_compile``); train = :class:`XLNetClassifier` (summary ``last`` + tanh
  projection + logit head) trained by :class:`bert_tf.training.train_step.TrainStep` with
  :func:`create_xlnet_optimizer` (run_classifier's defaults: ``weight_decay`` 0 -> TF1 Adam,
  clip 1.0, poly decay, ``--weight_decay`` > 0 -> AdamWeightDecay), dropout/dropatt
  ``--dropout``.
* ``original``: zihangdai/xlnet's ``modeling.py`` / ``xlnet.py`` / ``function_builder.py`` /
  ``model_utils.py`` from ``$XLNET_ORIGINAL_DIR`` (outside this repository; nothing of it is
  copied here), built in a TF1 graph under TF 2.21 ``tf.compat.v1`` with a small shim of ours
  for the three TF1 APIs it needs and TF 2.21 lacks (``tf.layers.dense``, ``tf.layers.dropout``,
  ``tf.contrib.layers.layer_norm``), run in a ``Session``: forward = ``XLNetModel(...)
  .get_sequence_output()``; train = ``function_builder.get_classification_loss`` +
  ``model_utils.get_train_op`` (run_classifier's ``train_op``). Weights are assigned by their
  original names (``bert_tf/xlnet/checkpoint_map.py``), so outputs are compared.
* ``hf`` (when ``--hf_python`` names a python with torch + transformers): HF PyTorch
  ``XLNetModel`` (eval, ``no_grad``) and ``XLNetForSequenceClassification`` + ``torch.optim.Adam``
  + ``clip_grad_norm_`` (train), weights through ``bert_tf/xlnet/hf_mapping.py``, in a child
  process started once per round (alternating with ours, which runs in this process).

Each round times every peer (``--iters`` calls after the warm-up, the median), peers in a
rotating order; per peer the median (min-max) over rounds of seq/s, and per round the ratio
peer time / ours time (> 1 = ours faster), median (min-max), on wall and CPU seconds
(``process_time``: all threads of the process; the child's own ``process_time`` for HF).
Also: first call (trace/compile) seconds, output max abs diff vs ours (forward; train: the loss
of the first step, equal only with ``--dropout 0``), ``lscpu`` model, flags and load average.
Writes ``bench/results/xlnet_peers_<shape>[_xla].json``.
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
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHAPES = {
    "base": dict(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072, n_token=32000),
    "small": dict(n_layer=6, d_model=384, n_head=6, d_head=64, d_inner=1536, n_token=32000),
    "tiny": dict(n_layer=2, d_model=64, n_head=4, d_head=16, d_inner=128, n_token=1000),
}
LEARNING_RATE = 1e-5  # run_classifier.py's default
TRAIN_STEPS = 10000  # the poly schedule barely moves over the timed steps


def make_inputs(batch, seq, n_token, seed=0):
    """XLNet classifier inputs: ids, segments (A 0 / B 1 / CLS 2, pad 4), mask (1 = pad,
    left padding on the second half of the batch), labels."""
    rng = np.random.RandomState(seed)
    ids = rng.randint(10, n_token - 1, (batch, seq)).astype(np.int32)
    segs = np.zeros((batch, seq), np.int32)
    segs[:, seq // 2:] = 1
    segs[:, -1] = 2
    mask = np.zeros((batch, seq), np.float32)
    pad = seq // 4
    mask[batch // 2:, :pad] = 1.0
    segs[batch // 2:, :pad] = 4
    ids[batch // 2:, :pad] = 5
    labels = rng.randint(0, 2, (batch,)).astype(np.int32)
    return ids, segs, mask, labels


def summarize(values):
    values = np.asarray(values, float)
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max()), "rounds": int(values.size)}


def time_calls(fn, iters):
    """Median wall and CPU (process, all threads) seconds of ``iters`` calls."""
    wall, cpu = [], []
    for _ in range(iters):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    return float(np.median(wall)), float(np.median(cpu))


# ---- HF child process (no TensorFlow in it) ---------------------------------------------------

def hf_child(spec_path):
    """Times HF's forward or train step; prints one JSON line. Run under the torch venv."""
    import torch
    import transformers

    with open(spec_path) as f:
        spec = json.load(f)
    arrays = dict(np.load(spec["weights"]))
    inputs = dict(np.load(spec["inputs"]))
    s = spec["shape"]
    common = dict(vocab_size=s["n_token"], d_model=s["d_model"], n_layer=s["n_layer"],
                  n_head=s["n_head"], d_inner=s["d_inner"], ff_activation="gelu_new",
                  untie_r=True, attn_type="bi", layer_norm_eps=1e-12, mem_len=None,
                  use_mems_eval=False, use_mems_train=False, bi_data=False, clamp_len=-1)
    ids = torch.tensor(inputs["ids"], dtype=torch.long)
    segs = torch.tensor(inputs["segs"], dtype=torch.long)
    mask = torch.tensor(inputs["mask"], dtype=torch.float32)
    labels = torch.tensor(inputs["labels"], dtype=torch.long)
    transformer = {k: torch.from_numpy(v) for k, v in arrays.items() if not k.startswith("head.")}
    t0 = time.perf_counter()
    if spec["work"] == "forward":
        model = transformers.XLNetModel(transformers.XLNetConfig(dropout=0.0, **common)).eval()
        missing, unexpected = model.load_state_dict(transformer, strict=False)
        if unexpected or [m for m in missing if m != "mask_emb"]:
            raise SystemExit(f"HF weights: missing {missing[:4]}, unexpected {unexpected[:4]}")

        def step():
            with torch.no_grad():
                return model(input_ids=ids, token_type_ids=segs, input_mask=mask,
                             use_mems=False).last_hidden_state
    else:
        config = transformers.XLNetConfig(
            dropout=spec["dropout"], num_labels=2, summary_type="last", summary_use_proj=True,
            summary_activation="tanh", summary_last_dropout=spec["dropout"], **common)
        model = transformers.XLNetForSequenceClassification(config).train()
        state = {"transformer." + k: v for k, v in transformer.items()}
        state["sequence_summary.summary.weight"] = torch.from_numpy(arrays["head.summary_kernel"].T.copy())
        state["sequence_summary.summary.bias"] = torch.from_numpy(arrays["head.summary_bias"])
        state["logits_proj.weight"] = torch.from_numpy(arrays["head.logit_kernel"].T.copy())
        state["logits_proj.bias"] = torch.from_numpy(arrays["head.logit_bias"])
        missing, unexpected = model.load_state_dict(state, strict=False)
        if unexpected or [m for m in missing if m != "transformer.mask_emb"]:
            raise SystemExit(f"HF weights: missing {missing[:4]}, unexpected {unexpected[:4]}")
        optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE, eps=1e-8)

        def step():
            optimizer.zero_grad(set_to_none=True)
            out = model(input_ids=ids, token_type_ids=segs, input_mask=mask, labels=labels,
                        use_mems=False)
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            return out.loss.detach()
    build_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    first = step().numpy()
    first_s = time.perf_counter() - t0
    wall, cpu = time_calls(step, spec["iters"])
    if spec.get("output"):
        np.save(spec["output"], first)
    print(json.dumps({"wall": wall, "cpu": cpu, "first_s": first_s, "build_s": build_s,
                      "torch": torch.__version__, "transformers": transformers.__version__,
                      "threads": torch.get_num_threads()}))


# ---- the original graph -----------------------------------------------------------------------

def _shim_tf(tf):
    """``tf.compat.v1`` plus TF1's ``layers.dense`` / ``layers.dropout`` and
    ``contrib.layers.layer_norm`` (ours, written from the TF1 API documentation)."""
    v1 = tf.compat.v1
    shim = types.ModuleType("tensorflow_v1_shim")
    shim.__dict__.update({k: getattr(v1, k) for k in dir(v1) if not k.startswith("__")})

    def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
              name=None, reuse=None):
        with v1.variable_scope(name, default_name="dense", reuse=reuse):
            d = inputs.shape[-1]
            kernel = v1.get_variable("kernel", [d, units], initializer=kernel_initializer)
            if inputs.shape.rank > 2:  # TF1 Dense: tensordot = reshape to 2-D, matmul, reshape
                out = tf.reshape(tf.matmul(tf.reshape(inputs, [-1, d]), kernel),
                                 tf.concat([tf.shape(inputs)[:-1], [units]], 0))
            else:
                out = tf.matmul(inputs, kernel)
            if use_bias:
                bias = v1.get_variable("bias", [units], initializer=v1.zeros_initializer())
                out = tf.nn.bias_add(out, bias)
            return activation(out) if activation else out

    def dropout(inputs, rate=0.5, training=False, name=None):
        return tf.nn.dropout(inputs, rate=rate) if training and rate > 0 else inputs

    def layer_norm(inputs, begin_norm_axis=-1, begin_params_axis=-1, scope=None, reuse=None):
        with v1.variable_scope(scope, default_name="LayerNorm", reuse=reuse):
            h = inputs.shape[-1]
            beta = v1.get_variable("beta", [h], initializer=v1.zeros_initializer())
            gamma = v1.get_variable("gamma", [h], initializer=v1.ones_initializer())
            mean, variance = tf.nn.moments(inputs, [-1], keepdims=True)
            return tf.nn.batch_normalization(inputs, mean, variance, beta, gamma, 1e-12)

    shim.layers = types.SimpleNamespace(dense=dense, dropout=dropout)
    shim.contrib = types.SimpleNamespace(layers=types.SimpleNamespace(layer_norm=layer_norm))
    return shim


def load_original(folder, tf):
    """Imports ``modeling``, ``xlnet``, ``function_builder``, ``model_utils`` from ``folder``
    with our shim standing in for ``tensorflow``."""
    names = ("modeling", "xlnet", "function_builder", "model_utils")
    for name in names:
        if not os.path.exists(os.path.join(folder, name + ".py")):
            raise SystemExit(f"XLNET_ORIGINAL_DIR={folder}: no {name}.py there "
                             "(a checkout of zihangdai/xlnet)")
    saved = {n: sys.modules.get(n) for n in ("tensorflow",) + names}
    sys.modules["tensorflow"] = _shim_tf(tf)
    modules = {}
    try:
        for name in names:
            spec = importlib.util.spec_from_file_location(name, os.path.join(folder, name + ".py"))
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # `import modeling` inside xlnet.py finds this one
            spec.loader.exec_module(module)
            modules[name] = module
    finally:
        for n, m in saved.items():
            if m is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = m
    return types.SimpleNamespace(**modules)


def original_flags(shape, config_path, dropout, weight_decay):
    """The FLAGS the original functions read (run_classifier.py's defaults)."""
    return types.SimpleNamespace(
        model_config_path=config_path, use_tpu=False, use_bfloat16=False, dropout=dropout,
        dropatt=dropout, init="normal", init_range=0.1, init_std=0.02, clamp_len=-1,
        summary_type="last", use_summ_proj=True, cls_scope=None, task_name="bench",
        warmup_steps=0, learning_rate=LEARNING_RATE, decay_method="poly",
        train_steps=TRAIN_STEPS, min_lr_ratio=0.0, weight_decay=weight_decay,
        num_core_per_host=1, adam_epsilon=1e-8, clip=1.0, lr_layer_decay_rate=1.0)


class OriginalGraph:
    """The original forward (``train=False``) or train op (``train=True``), own graph and
    session, weights assigned by original name."""

    def __init__(self, tf, orig, flags_obj, batch, seq, weights, train):
        v1 = tf.compat.v1
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.ids = v1.placeholder(tf.int32, [batch, seq])
            self.segs = v1.placeholder(tf.int32, [batch, seq])
            self.mask = v1.placeholder(tf.float32, [batch, seq])
            self.labels = v1.placeholder(tf.int32, [batch])
            if train:
                features = {"input_ids": self.ids, "segment_ids": self.segs,
                            "input_mask": self.mask, "label_ids": self.labels}
                loss, _, _ = orig.function_builder.get_classification_loss(
                    flags_obj, features, 2, True)
                train_op, _, _ = orig.model_utils.get_train_op(flags_obj, loss)
                self.fetch = [train_op, loss]
            else:
                model = orig.xlnet.XLNetModel(
                    xlnet_config=orig.xlnet.XLNetConfig(json_path=flags_obj.model_config_path),
                    run_config=orig.xlnet.create_run_config(False, True, flags_obj),
                    input_ids=tf.transpose(self.ids), seg_ids=tf.transpose(self.segs),
                    input_mask=tf.transpose(self.mask))
                self.fetch = tf.transpose(model.get_sequence_output(), [1, 0, 2])
            trainable = {v.op.name: v for v in v1.trainable_variables()}
            missing = sorted(set(trainable) - set(weights))
            if missing:
                raise SystemExit(f"original graph variables without a weight: {missing[:5]}")
            self.session = v1.Session(graph=self.graph)
            self.session.run(v1.global_variables_initializer())
            for name, var in trainable.items():
                var.load(weights[name], self.session)

    def __call__(self, ids, segs, mask, labels):
        out = self.session.run(self.fetch, {self.ids: ids, self.segs: segs, self.mask: mask,
                                            self.labels: labels})
        return out[1] if isinstance(out, list) else out


# ---- bert_tf at an older commit ---------------------------------------------------------------

def load_xlnet_at(ref):
    """``bert_tf/xlnet/attention.py`` (when ``ref`` has it) + ``layers.py`` + ``model.py`` as
    of git ``ref``, as in-memory modules (the rest of bert_tf, config and checkpoint map
    included, is today's)."""
    def source(path):
        return subprocess.run(["git", "-C", REPO, "show", f"{ref}:{path}"], capture_output=True,
                              text=True, check=True).stdout

    def has(path):
        return subprocess.run(["git", "-C", REPO, "cat-file", "-e", f"{ref}:{path}"],
                              capture_output=True).returncode == 0

    renames = {}  # today's module name -> the in-memory module of ref

    def load(stem):
        text = source(f"bert_tf/xlnet/{stem}.py")
        for name, module in renames.items():
            text = text.replace(f"from {name} import", f"from {module.__name__} import")
        module = types.ModuleType(f"bert_tf_xlnet_{stem}_{ref}")
        exec(compile(text, f"{ref}:bert_tf/xlnet/{stem}.py", "exec"), module.__dict__)
        sys.modules[module.__name__] = module
        renames[f"bert_tf.xlnet.{stem}"] = module
        return module

    if has("bert_tf/xlnet/attention.py"):  # the tensor functions, split from layers.py
        load("attention")
    load("layers")
    return load("model")


def build_ours(tf, model_module, config, work, args, inputs, variant=()):
    """(callable running one forward / train step, original name -> variable) for one of our
    models; ``variant``: ``tiled_pos`` (the positional encoding projected for every batch row,
    as the original), ``plain`` (no XLA even with ``--xla``), ``bf16`` (``--use_bfloat16``'s
    mixed_bfloat16, float32 kernels cast on every call), ``bf16_held`` (forward: the kernels
    held in bfloat16, cast once, as a predict-only run builds it; issue 25)."""
    from bert_tf.training.precision import dtype_policy
    from bert_tf.training.train_step import TrainStep, distributed_iterator
    from bert_tf.xlnet.optimization import create_xlnet_optimizer
    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.config import RunConfig

    ids, segs, mask, labels = inputs
    bf16 = "bf16" in variant or "bf16_held" in variant
    with dtype_policy("bfloat16" if bf16 else "float32",
                      inference_only="bf16_held" in variant and work != "train"):
        if work == "train":
            run_config = RunConfig(is_training=True, dropout=args.dropout, dropatt=args.dropout)
            model = model_module.XLNetClassifier(config, run_config, n_class=2, task_name="bench")
            xl = model.xlnet
        else:
            model = xl = model_module.XLNetModel(config, RunConfig())
    if "tiled_pos" in variant:
        xl.share_positional_encoding = False
    model({"input_ids": ids[:1], "segment_ids": segs[:1], "input_mask": mask[:1]},
          training=False)
    name_map = checkpoint_map.xlnet_variable_map(model=model)
    if work != "train":
        fn = tf.function(lambda i, s, m: model({"input_ids": i, "segment_ids": s,
                                                "input_mask": m})["sequence_output"],
                         jit_compile=args.xla and "plain" not in variant)
        return (lambda: tf.cast(fn(ids, segs, mask), tf.float32).numpy()), name_map
    strategy = tf.distribute.get_strategy()
    optimizer, _ = create_xlnet_optimizer(
        LEARNING_RATE, TRAIN_STEPS, 0, "poly", 0.0, args.weight_decay, 1e-8, 1.0, 1.0,
        variable_names=name_map)

    def loss_fn(m, features, labels_):
        return m.task_loss(m(features, training=True)["logits"], labels_)[1]

    step = TrainStep(model, loss_fn, optimizer, strategy,
                     use_xla=args.xla and "plain" not in variant)
    dataset = tf.data.Dataset.from_tensors(
        ({"input_ids": ids, "segment_ids": segs, "input_mask": mask}, labels)).repeat()
    iterator = distributed_iterator(strategy, dataset)
    return (lambda: step(iterator, 1)[0].numpy()), name_map


# ---- main ---------------------------------------------------------------------------------------

def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="base", choices=sorted(SHAPES))
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--iters", type=int, default=2)
    p.add_argument("--work", default="forward,train")
    p.add_argument("--xla", action="store_true", help="ours with jit_compile (forward, train)")
    p.add_argument("--dropout", type=float, default=0.1,
                   help="train step dropout = dropatt (run_classifier's 0.1); 0 makes the "
                        "first-step losses comparable")
    p.add_argument("--weight_decay", type=float, default=0.0,
                   help="0 (run_classifier's default): Adam; > 0: AdamWeightDecay")
    default_hf = "/work/hfvenv/bin/python" if os.path.exists("/work/hfvenv/bin/python") else ""
    p.add_argument("--hf_python", default=os.environ.get("HF_PYTHON", default_hf),
                   help="a python with torch + transformers ('' = no HF peer)")
    p.add_argument("--before_ref", default=None,
                   help="git commit: also time bert_tf/xlnet/{layers,model}.py as of then")
    p.add_argument("--variants", default="",
                   help="also time ours with levers off: tiled_pos, plain (no XLA); or "
                        "in bfloat16: bf16 (kernels cast per call), bf16_held (cast once) "
                        "(comma list)")
    p.add_argument("--out", default=None)
    p.add_argument("--hf_child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.hf_child:
        return hf_child(args.hf_child)

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf
    from bert_tf.xlnet import hf_mapping
    from bert_tf.xlnet.config import XLNetConfig

    works = [w for w in args.work.split(",") if w]
    shape = SHAPES[args.shape]
    config = XLNetConfig(ff_activation="gelu", untie_r=True, **shape)
    B, S = args.batch_size, args.seq_length
    ids, segs, mask, labels = inputs = make_inputs(B, S, config.n_token)
    before_module = load_xlnet_at(args.before_ref) if args.before_ref else None
    variants = [v for v in args.variants.split(",") if v]
    real = mask == 0  # [B, S] positions compared
    info = {"machine": machine(), "shape": args.shape, "config": config.to_dict(), "batch": B,
            "seq": S, "xla": args.xla, "rounds": args.rounds, "iters_per_round": args.iters,
            "train_dropout": args.dropout, "weight_decay": args.weight_decay,
            "optimizer": "AdamWeightDecay" if args.weight_decay > 0 else "TF1 Adam",
            "tensorflow": tf.__version__, "before_ref": args.before_ref,
            "variants": args.variants, "work": {}}
    original_dir = os.environ.get("XLNET_ORIGINAL_DIR")
    orig = load_original(original_dir, tf) if original_dir else None
    tmp = tempfile.mkdtemp(prefix="bench_xlnet_")
    config_path = os.path.join(tmp, "xlnet_config.json")
    config.to_json_file(config_path)
    np.savez(os.path.join(tmp, "inputs.npz"), ids=ids, segs=segs, mask=mask, labels=labels)

    for work in works:
        res = {"first_call_s": {}}
        train = work == "train"
        t0 = time.perf_counter()
        from bert_tf.xlnet import model as model_today
        ours, name_map = build_ours(tf, model_today, config, work, args, inputs)
        weights = {name: var.numpy() for name, var in name_map.items()}
        res["ours_build_s"] = time.perf_counter() - t0
        peers = {"ours": ours}
        extra = [("before", before_module, ())] if before_module else []
        extra += [(f"ours_{v}", model_today, (v,)) for v in variants]
        for name, module, variant in extra:  # same weights
            fn_, other_map = build_ours(tf, module, config, work, args, inputs, variant)
            for k, var in other_map.items():
                var.assign(tf.cast(weights[k], var.dtype))
            peers[name] = fn_
        if orig is not None:  # weights copied BEFORE ours takes a training step
            t0 = time.perf_counter()
            flags_obj = original_flags(shape, config_path, args.dropout, args.weight_decay)
            original = OriginalGraph(tf, orig, flags_obj, B, S, weights, train)
            res["original_build_s"] = time.perf_counter() - t0
            peers["original"] = lambda: original(ids, segs, mask, labels)
        hf_spec = None
        if args.hf_python:
            hf, left_out = hf_mapping.convert_original_weights(weights, config, "bench weights")
            if train:
                scope = [k for k in weights if k.endswith("/logit/kernel")][0].split("/")[1]
                hf.update({"head.summary_kernel": weights["model/sequnece_summary/summary/kernel"],
                           "head.summary_bias": weights["model/sequnece_summary/summary/bias"],
                           "head.logit_kernel": weights[f"model/{scope}/logit/kernel"],
                           "head.logit_bias": weights[f"model/{scope}/logit/bias"]})
            np.savez(os.path.join(tmp, f"hf_{work}.npz"), **hf)
            hf_spec = os.path.join(tmp, f"hf_{work}.json")
            with open(hf_spec, "w") as f:
                json.dump({"work": work, "shape": shape, "iters": args.iters,
                           "dropout": args.dropout,
                           "weights": os.path.join(tmp, f"hf_{work}.npz"),
                           "inputs": os.path.join(tmp, "inputs.npz"),
                           "output": os.path.join(tmp, f"hf_{work}_out.npy")}, f)

        # first calls: trace / compile; outputs compared
        firsts = {}
        for n, fn_ in peers.items():
            t0 = time.perf_counter()
            firsts[n] = np.asarray(fn_(), np.float32)
            res["first_call_s"][n] = time.perf_counter() - t0
        for n in firsts:
            if n != "ours":
                diff = np.abs(firsts[n] - firsts["ours"])
                res[f"max_abs_diff_{n}_vs_ours"] = float(diff[real].max() if not train else diff.max())
        if train:
            res["first_step_loss"] = {n: float(v) for n, v in firsts.items()}

        names = list(peers) + (["hf"] if hf_spec else [])
        seconds = {n: [] for n in names}
        cpu_seconds = {n: [] for n in names}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                if n == "hf":
                    proc = subprocess.run([args.hf_python, os.path.abspath(__file__),
                                           "--hf_child", hf_spec], capture_output=True,
                                          text=True, cwd=REPO,
                                          env=dict(os.environ, PYTHONPATH=REPO))
                    if proc.returncode:
                        raise SystemExit(f"HF child failed: {proc.stderr[-2000:]}")
                    child = json.loads(proc.stdout.strip().splitlines()[-1])
                    wall, cpu = child["wall"], child["cpu"]
                    res["first_call_s"]["hf"] = child["first_s"]
                    res["hf_versions"] = {"torch": child["torch"],
                                          "transformers": child["transformers"],
                                          "threads": child["threads"]}
                else:
                    wall, cpu = time_calls(peers[n], args.iters)
                seconds[n].append(wall)
                cpu_seconds[n].append(cpu)
        if hf_spec:
            hf_out = np.load(os.path.join(tmp, f"hf_{work}_out.npy")).astype(np.float32)
            if train:
                res["first_step_loss"]["hf"] = float(hf_out)
            else:
                res["max_abs_diff_hf_vs_ours"] = float(np.abs(hf_out - firsts["ours"])[real].max())
        res["seq_per_s"] = {n: summarize([B / t for t in seconds[n]]) for n in names}
        res["ratio_peer_time_over_ours"] = {
            n: summarize([t / o for t, o in zip(seconds[n], seconds["ours"])])
            for n in names if n != "ours"}
        res["cpu_seq_per_s"] = {n: summarize([B / t for t in cpu_seconds[n]]) for n in names}
        res["cpu_ratio_peer_over_ours"] = {
            n: summarize([t / o for t, o in zip(cpu_seconds[n], cpu_seconds["ours"])])
            for n in names if n != "ours"}
        info["work"][work] = res
        print(work, json.dumps({k: res[k] for k in ("ratio_peer_time_over_ours",
                                                     "cpu_ratio_peer_over_ours")}), flush=True)
        del peers
    info["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(info, indent=2))
    out = args.out or os.path.join(HERE, "results",
                                   f"xlnet_peers_{args.shape}{'_xla' if args.xla else ''}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(info, f, indent=2)
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
