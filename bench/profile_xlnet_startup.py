"""XLNet-Large start-up and per-batch time at seq 512: bert_tf vs the ORIGINAL graph (issue 24
item 2).

Each side is a fresh process, the two alternate round by round:

* ``ours``: :class:`bert_tf.xlnet.tasks.feature_extraction.XLNetFeatureExtractor` (what
  ``extract_features.py`` runs) on the random XLNet-Large checkpoint of
  ``bench/bench_load_stages.py --make`` (``--ckpt_dir``), then ``--batches`` batches of 2 x
  ``--seq_length`` tokens;
* ``original``: zihangdai/xlnet's graph (``XLNET_ORIGINAL_DIR``, built under TF 2.21
  ``compat.v1`` with the shim of ``bench/bench_xlnet_peers.py``), its variables loaded from
  the same checkpoint by name, then the same batches through a ``Session``.

Stages: import, build (model / graph), restore (weights from the checkpoint), each batch
(the first includes tracing); seconds and peak RSS. Big processes: run under
``flock /tmp/bert_tf_bigmem.lock``.

    XLNET_ORIGINAL_DIR=/tmp/orig_xlnet flock /tmp/bert_tf_bigmem.lock python \\
        bench/profile_xlnet_startup.py --rounds 2 --out bench/results/xlnet_large_startup.json
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def _peak_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _side(which, ckpt_dir, seq, batches):
    rows, t0 = [], time.perf_counter()

    def mark(stage):
        nonlocal t0
        now = time.perf_counter()
        rows.append({"stage": stage, "seconds": round(now - t0, 2), "peak_mb": _peak_mb()})
        t0 = now

    import numpy as np
    import tensorflow as tf
    from bench_xlnet_peers import make_inputs
    mark("import")
    folder = os.path.join(ckpt_dir, "xlnet_large")
    ckpt, config_path = os.path.join(folder, "model.ckpt"), os.path.join(folder, "config.json")
    ids, segs, mask, _ = make_inputs(2, seq, 32000)
    mask[:] = 0.0  # extract_features' one-line batches: no padding
    if which == "ours":
        from bert_tf.xlnet import checkpoint_map
        from bert_tf.xlnet.config import XLNetConfig
        from bert_tf.xlnet.tasks import feature_extraction as fe
        original_load = checkpoint_map.load_xlnet_checkpoint

        def load(*a, **k):
            mark("build")
            return original_load(*a, **k)

        checkpoint_map.load_xlnet_checkpoint = load
        ex = fe.XLNetFeatureExtractor(XLNetConfig.from_json_file(config_path), ckpt, [-1])
        mark("restore")
        run = lambda: ex.predict(ids, segs, mask)  # noqa: E731
    else:
        from bench_xlnet_peers import load_original, original_flags
        orig = load_original(os.environ.get("XLNET_ORIGINAL_DIR", "/tmp/orig_xlnet"), tf)
        flags_obj = original_flags("large", config_path, 0.0, 0.0)
        v1 = tf.compat.v1
        graph = tf.Graph()
        with graph.as_default():
            pid = v1.placeholder(tf.int32, [2, seq])
            pseg = v1.placeholder(tf.int32, [2, seq])
            pmask = v1.placeholder(tf.float32, [2, seq])
            model = orig.xlnet.XLNetModel(
                xlnet_config=orig.xlnet.XLNetConfig(json_path=config_path),
                run_config=orig.xlnet.create_run_config(False, True, flags_obj),
                input_ids=tf.transpose(pid), seg_ids=tf.transpose(pseg),
                input_mask=tf.transpose(pmask))
            fetch = tf.transpose(model.get_sequence_output(), [1, 0, 2])
            # the original's init_from_checkpoint: initializers read the checkpoint
            names = {v.op.name: v.op.name for v in v1.global_variables()}
            v1.train.init_from_checkpoint(ckpt, names)
            init = v1.global_variables_initializer()
            session = v1.Session(graph=graph)
        mark("build")
        session.run(init)
        mark("restore")
        run = lambda: session.run(fetch, {pid: ids, pseg: segs, pmask: mask})  # noqa: E731
    out = None
    for i in range(batches):
        out = run()
        mark(f"batch_{i + 1}")
    value = out[0] if isinstance(out, tuple) else out
    print("ROWS " + json.dumps({"side": which, "stages": rows,
                                "checksum": float(np.asarray(value, np.float64).sum())}))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side")
    p.add_argument("--ckpt_dir", default="/tmp/official_mem")
    p.add_argument("--seq_length", type=int, default=512)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--sides", default="ours,original",
                   help="ours, original, or ours@<tree> (bert_tf from that source tree)")
    p.add_argument("--out")
    a = p.parse_args()
    if a.side:
        return _side(a.side, a.ckpt_dir, a.seq_length, a.batches)
    runs = {s: [] for s in a.sides.split(",")}
    for r in range(a.rounds):
        for side in runs:
            t = time.perf_counter()
            env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
            if "@" in side:
                env["PYTHONPATH"] = side.split("@", 1)[1]
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--side",
                                  side.split("@")[0],
                                  "--ckpt_dir", a.ckpt_dir, "--seq_length", str(a.seq_length),
                                  "--batches", str(a.batches)],
                                 capture_output=True, text=True, env=env)
            lines = [l for l in out.stdout.splitlines() if l.startswith("ROWS ")]
            if not lines:
                raise SystemExit(f"{side}: rc {out.returncode}\n{out.stderr[-3000:]}")
            row = json.loads(lines[-1][5:])
            row["process_wall_s"] = round(time.perf_counter() - t, 2)
            runs[side].append(row)
            print(r, side, row, flush=True)
    from machine_info import machine
    result = {"machine": machine(), "seq_length": a.seq_length, "batch": 2, "runs": runs}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
