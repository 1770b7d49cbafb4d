"""Fine-tuning step: bert_tf's ``TrainStep`` vs the ORIGINAL ``create_model`` + ``create_optimizer``
in a TF1 ``Session``, alternating fresh processes.

    BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_train_step_peers.py \\
        [--shape minilm|base|tiny] [--batch_size 32] [--seq_length 128] [--rounds 3] \\
        [--steps 5] [--sides ours,ours_xla,original]

How to run the issue-16 row (MiniLM [32,128], 3 rounds): the defaults, i.e.
``BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_train_step_peers.py``.

Sides (each a fresh child process of this Python, run one after another, in a rotating order
per round, so two never run at once):

* ``ours``: what ``run_classifier.py`` trains with: :class:`bert_tf.bert.classifier.BertClassifier`,
  ``classifier_loss``, :func:`bert_tf.training.optimizer.create_optimizer` (AdamWeightDecay,
  warmup + linear decay, clip 1.0) and :class:`bert_tf.training.train_step.TrainStep` under the
  default strategy, one update per call, input from a ``tf.data`` iterator;
* ``ours_xla``: the same with ``use_xla=True`` (``--use_xla``);
* ``ours_before``: ``ours`` with bert_tf imported from another checkout named by the
  environment variable ``BERT_TF_BEFORE_DIR`` (e.g. ``/work/main``: before vs after a change,
  in the same run), e.g. ``--sides ours,ours_before,original``;
* ``ours_bf16`` / ``ours_before_bf16``: ``ours`` / ``ours_before`` built under ``--dtype=bfloat16``
  (Keras' ``mixed_bfloat16``: float32 variables and optimizer, bf16 matmuls), e.g.
  ``--sides ours,ours_bf16`` for the issue-25 row "training step bf16 vs fp32";
  ``ours_bf16_xla``: ``ours_bf16`` with ``--use_xla``;
* ``original``: google-research/bert's ``run_classifier.create_model`` (is_training=True) and
  ``optimization.create_optimizer`` from ``$BERT_ORIGINAL_DIR`` (outside this repository,
  nothing of it copied here), built under TF 2.21 ``tf.compat.v1`` with
  ``disable_v2_behavior()`` (TF1 graph, ref variables, v1 shapes) and the small shim of ours in
  ``bench_encoder_peers._shim_tf`` (``tf.layers.dense``, ``contrib.layers.layer_norm``), run
  with ``Session.run(train_op)``, input from the same kind of ``tf.data`` iterator.

All sides: the same config, one fixed random batch (int32 ``[B, S]`` ids, a padded tail on
half the rows, two segments, binary labels), dropout on (0.1), random initial weights
(truncated normal 0.02; the time does not depend on the values), learning rate 2e-5.

Per child: ``first_step_s`` = wall seconds from before the model is built to the end of the
first update (graph build / trace / compile included; TF import excluded), split in
``first_step_phases`` (``build_s``: model + optimizer, ours with its eager dummy call, the
original's graph; ours ``trace_s``: tracing the step function; the original's ``init_s``:
session + variable initialisation; the rest is the first run: graph optimisation, XLA
compilation, the step itself); ``first_step_cpu_s`` / ``first_step_phases_cpu_s``: the same in
CPU seconds of the process (all threads; what counts on a loaded machine); ``step_s`` /
``step_cpu_s`` = the median over the remaining ``--steps`` updates of wall / CPU seconds (the
process, all threads); ``peak_rss_mib`` = the child's peak resident memory
(``ru_maxrss``) and ``rss_after_import_mib`` the resident memory after importing TF.
The parent reports per side the median (min-max) over rounds and per round the ratios
other / ours (> 1 = ours faster), median (min-max). Records ``lscpu``'s model name and the
load average. Writes ``bench/results/train_step_peers_<shape>.json``.
"""

import argparse
import importlib.util
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SIDES = ("ours", "ours_xla", "ours_before", "original", "ours_bf16", "ours_before_bf16",
         "ours_bf16_xla")
LEARNING_RATE = 2e-5


def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def batch_arrays(vocab_size, batch, seq):
    rng = np.random.RandomState(0)
    ids = rng.randint(100, vocab_size - 1, (batch, seq)).astype(np.int32)
    mask = np.ones((batch, seq), np.int32)
    mask[batch // 2:, seq * 3 // 4:] = 0
    segs = np.zeros((batch, seq), np.int32)
    segs[:, seq // 2:] = 1
    labels = rng.randint(0, 2, (batch,)).astype(np.int32)
    return ids, mask, segs, labels


def load_original(folder, shim):
    """Imports modeling, optimization, tokenization and run_classifier from ``folder`` with
    ``shim`` standing in for ``tensorflow`` (they import each other by bare name)."""
    saved = sys.modules["tensorflow"]
    sys.modules["tensorflow"] = shim
    modules = {}
    try:
        for name in ("modeling", "optimization", "tokenization", "run_classifier"):
            path = os.path.join(folder, name + ".py")
            if not os.path.exists(path):
                raise SystemExit(f"BERT_ORIGINAL_DIR={folder}: no {name}.py there "
                                 "(a checkout of google-research/bert)")
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            modules[name] = module
    finally:
        sys.modules["tensorflow"] = saved
    return modules


def child(args):
    """One side in this process: prints one JSON line of its timings."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    sys.path.insert(0, HERE)
    sys.path.insert(0, REPO)
    if args.side.startswith("ours_before"):
        sys.path.insert(0, os.environ["BERT_TF_BEFORE_DIR"])
    import bench_encoder_peers as peers

    config_dict = dict(type_vocab_size=2, **peers.SHAPES[args.shape])
    B, S = args.batch_size, args.seq_length
    ids, mask, segs, labels = batch_arrays(config_dict["vocab_size"], B, S)
    rss_import = rss_mib()
    num_train_steps = 1000
    warmup = 100
    wall, cpu = [], []
    phases, phases_cpu = {}, {}
    if args.side == "original":
        tf.compat.v1.disable_v2_behavior()
        modules = load_original(os.environ["BERT_ORIGINAL_DIR"], peers._shim_tf())
        v1 = tf.compat.v1
        start, cpu_start = time.perf_counter(), time.process_time()
        cfg = modules["modeling"].BertConfig(**config_dict)
        dataset = tf.data.Dataset.from_tensors((ids, mask, segs, labels)).repeat()
        i, m, s, y = v1.data.make_one_shot_iterator(dataset).get_next()
        for t in (i, m, s):
            t.set_shape([B, S])
        y.set_shape([B])
        loss, _, _, _ = modules["run_classifier"].create_model(cfg, True, i, m, s, y, 2, False)
        train_op = modules["optimization"].create_optimizer(loss, LEARNING_RATE, num_train_steps,
                                                            warmup, False)
        phases["build_s"] = time.perf_counter() - start  # the graph: model, loss, train_op
        phases_cpu["build_s"] = time.process_time() - cpu_start
        session = v1.Session()
        session.run(v1.global_variables_initializer())
        phases["init_s"] = time.perf_counter() - start - phases["build_s"]
        phases_cpu["init_s"] = time.process_time() - cpu_start - phases_cpu["build_s"]

        def step():
            return session.run([train_op, loss])[1]
    else:
        from bert_tf.bert.classifier import BertClassifier, classifier_loss
        from bert_tf.bert.config import BertConfig
        from bert_tf.training.optimizer import create_optimizer
        from bert_tf.training.precision import dtype_policy
        from bert_tf.training.train_step import TrainStep, distributed_iterator

        strategy = tf.distribute.get_strategy()
        start, cpu_start = time.perf_counter(), time.process_time()
        config = BertConfig(**config_dict)
        with dtype_policy("bfloat16" if "_bf16" in args.side else "float32"):
            model = BertClassifier(config, 2).build_with_dummy_input()
        optimizer, _ = create_optimizer(LEARNING_RATE, num_train_steps, warmup,
                                        variable_names=model.name_map())
        optimizer.build(model.trainable_variables)  # as loop.train's TrainState.build does

        def loss_fn(m_, features, labels_):
            return classifier_loss(m_(features, training=True)["logits"], labels_)[0]

        features = {"input_ids": ids, "input_mask": mask, "segment_ids": segs}
        dataset = tf.data.Dataset.from_tensors((features, labels))
        iterator = distributed_iterator(strategy, dataset)
        phases["build_s"] = time.perf_counter() - start  # model, weights, optimizer slots
        phases_cpu["build_s"] = time.process_time() - cpu_start
        train_step = TrainStep(model, loss_fn, optimizer, strategy, 1,
                               use_xla=args.side.endswith("_xla"))
        train_step._steps.get_concrete_function(iterator, tf.constant(1, tf.int32))
        phases["trace_s"] = time.perf_counter() - start - phases["build_s"]
        phases_cpu["trace_s"] = time.process_time() - cpu_start - phases_cpu["build_s"]

        def step():
            return float(train_step(iterator, 1)[0])
    c0 = time.process_time()
    first_loss = step()
    first = time.perf_counter() - start
    first_cpu_total = time.process_time() - cpu_start
    first_cpu = time.process_time() - c0
    for _ in range(args.steps):
        t, c = time.perf_counter(), time.process_time()
        step()
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    print("RESULT " + json.dumps({
        "side": args.side, "bert_tf_dir": os.path.dirname(os.path.dirname(
            sys.modules["bert_tf"].__file__)) if "bert_tf" in sys.modules else None,
        "first_step_s": first, "first_step_cpu_s_of_step": first_cpu,
        "step_s": float(np.median(wall)), "step_cpu_s": float(np.median(cpu)),
        "step_s_all": wall, "first_loss": float(first_loss), "first_step_phases": phases,
        "first_step_cpu_s": first_cpu_total, "first_step_phases_cpu_s": phases_cpu,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        "rss_after_import_mib": rss_import}), flush=True)


def summarize(values):
    values = np.asarray(values, float)
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max()), "rounds": int(values.size)}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--shape", default="minilm", choices=["base", "minilm", "tiny"])
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=5, help="timed updates after the first")
    p.add_argument("--sides", default="ours,ours_xla,original")
    p.add_argument("--side", default=None, help=argparse.SUPPRESS)  # child mode
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    if args.side:
        return child(args)
    sides = [s for s in args.sides.split(",") if s]
    unknown = [s for s in sides if s not in SIDES]
    if unknown:
        raise SystemExit(f"--sides: unknown {unknown} (known: {', '.join(SIDES)})")
    if any(s.startswith("ours_before") for s in sides) and not os.environ.get("BERT_TF_BEFORE_DIR"):
        raise SystemExit("--sides ours_before: BERT_TF_BEFORE_DIR is not set (another checkout)")
    if "original" in sides and not os.environ.get("BERT_ORIGINAL_DIR"):
        raise SystemExit("BERT_ORIGINAL_DIR is not set (a checkout of google-research/bert)")
    sys.path.insert(0, HERE)
    from machine_info import machine  # noqa: E402

    info = {"machine": machine(), "shape": args.shape, "batch": args.batch_size,
            "seq": args.seq_length, "rounds": args.rounds, "timed_steps": args.steps,
            "sides": sides}
    runs = {s: [] for s in sides}
    for r in range(args.rounds):
        order = sides[r % len(sides):] + sides[:r % len(sides)]
        for side in order:
            cmd = [sys.executable, os.path.abspath(__file__), "--side", side,
                   "--shape", args.shape, "--batch_size", str(args.batch_size),
                   "--seq_length", str(args.seq_length), "--steps", str(args.steps)]
            first = os.environ["BERT_TF_BEFORE_DIR"] if side.startswith("ours_before") else REPO
            env = dict(os.environ, PYTHONPATH=first + os.pathsep + os.environ.get("PYTHONPATH", ""))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            if proc.returncode or not lines:
                raise SystemExit(f"side {side} failed (exit {proc.returncode}):\n"
                                 f"{proc.stderr[-3000:]}")
            result = json.loads(lines[-1][len("RESULT "):])
            result["process_wall_s"] = time.perf_counter() - t
            result["process_cpu_s"] = (after.ru_utime - before.ru_utime
                                       + after.ru_stime - before.ru_stime)
            runs[side].append(result)
            print(f"round {r} {side}: step {result['step_s']:.2f} s (cpu {result['step_cpu_s']:.2f}),"
                  f" first {result['first_step_s']:.1f} s (cpu {result['first_step_cpu_s']:.1f}),"
                  f" peak RSS {result['peak_rss_mib']:.0f} MiB",
                  flush=True)
    info["runs"] = runs
    keys = ("step_s", "step_cpu_s", "first_step_s", "first_step_cpu_s", "peak_rss_mib",
            "process_cpu_s")
    info["per_side"] = {s: {k: summarize([x[k] for x in runs[s]]) for k in keys} for s in sides}
    info["examples_per_s"] = {s: summarize([args.batch_size / x["step_s"] for x in runs[s]])
                              for s in sides}
    if set(sides) & {"ours", "ours_bf16"}:
        for base in ("ours", "ours_xla", "ours_bf16"):
            if base not in sides:
                continue
            info[f"ratio_other_over_{base}"] = {
                s: {k: summarize([o[k] / b[k] for o, b in zip(runs[s], runs[base])])
                    for k in ("step_s", "step_cpu_s", "first_step_s", "first_step_cpu_s",
                              "peak_rss_mib")}
                for s in sides if s != base}
    info["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps({k: v for k, v in info.items() if k != "runs"}, indent=2))
    out = args.out or os.path.join(HERE, "results", f"train_step_peers_{args.shape}.json")
    # (--out to keep another run's file, e.g. train_step_peers_minilm_bf16.json)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(info, f, indent=2)
    os.replace(tmp, out)
    return info


if __name__ == "__main__":
    main(sys.argv[1:])
