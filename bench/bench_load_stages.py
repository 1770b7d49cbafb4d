"""Peak RSS and wall by stage of loading a model at official sizes (issue 24 items 1-2).

Stages: import (TensorFlow + bert_tf), build (the model with every weight), restore (the
checkpoint assigned), first batch (2 inputs, ``--seq_length`` tokens). After each stage the
process's current RSS and its peak so far (``ru_maxrss``) are recorded.

The checkpoints are random ones of the official shapes (BERT-Large, XLNet-Large,
ALBERT-xxlarge v2), written with bert_tf's own savers (the original layout) into
``--ckpt_dir`` (default /tmp/official_mem) by ``--make``; each probe is a fresh process, and
two source trees (``--trees base=/path,new=/path``) run interleaved, round by round, so the
before/after ratio is measured in one run.

    flock /tmp/bert_tf_bigmem.lock python bench/bench_load_stages.py --make
    flock /tmp/bert_tf_bigmem.lock python bench/bench_load_stages.py --rounds 3 \\
        --trees base=/tmp/mem_base,new=$PWD --out bench/results/load_stages.json

Big processes: run it under ``flock /tmp/bert_tf_bigmem.lock`` (one at a time on a shared host).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIGS = {
    "bert_large": {
        "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 4096,
        "max_position_embeddings": 512, "num_attention_heads": 16, "num_hidden_layers": 24,
        "type_vocab_size": 2, "vocab_size": 30522},
    "xlnet_large": {
        "d_head": 64, "d_inner": 4096, "d_model": 1024, "ff_activation": "gelu", "n_head": 16,
        "n_layer": 24, "n_token": 32000, "untie_r": True},
    "albert_xxlarge": {
        "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
        "embedding_size": 128, "hidden_size": 4096, "initializer_range": 0.02,
        "intermediate_size": 16384, "max_position_embeddings": 512, "num_attention_heads": 64,
        "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
        "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1,
        "type_vocab_size": 2, "vocab_size": 30000},
}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Stages:
    """Records (stage, seconds since the previous stage, RSS MB, peak RSS MB)."""

    def __init__(self):
        self.t = time.perf_counter()
        self.rows = []

    def mark(self, stage):
        now = time.perf_counter()
        self.rows.append({"stage": stage, "seconds": round(now - self.t, 3),
                          "rss_mb": round(_rss_mb()), "peak_mb": round(_peak_mb())})
        self.t = now


def make(family, ckpt_dir):
    """Writes ``<ckpt_dir>/<family>/model.ckpt`` (random weights) and ``config.json``."""
    import numpy as np
    folder = os.path.join(ckpt_dir, family)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(CONFIGS[family], f)
    from bert_tf import checkpoint_io
    from bench_load_stages_models import build_and_map
    import tensorflow as tf
    _, name_map = build_and_map(family, os.path.join(folder, "config.json"))
    rng = np.random.default_rng(0)
    arrays = {}
    for name, var in name_map.items():
        arrays[name] = (rng.standard_normal(tuple(var.shape), np.float32) * 0.02)
    arrays["global_step"] = np.int64(0)
    del name_map
    checkpoint_io.write_checkpoint(os.path.join(folder, "model.ckpt"), arrays)
    print(f"wrote {folder}/model.ckpt ({sum(a.nbytes for a in arrays.values()) / 2**30:.2f} GiB)",
          tf.__version__)


def probe(family, ckpt_dir, seq_length):
    """One process: import, build, restore, first batch; prints the stages as JSON."""
    stages = Stages()
    import tensorflow as tf  # noqa: F401
    import bert_tf  # noqa: F401
    from bench_load_stages_models import build_restore_run
    stages.mark("import")
    folder = os.path.join(ckpt_dir, family)
    build_restore_run(family, os.path.join(folder, "config.json"),
                      os.path.join(folder, "model.ckpt"), seq_length, stages.mark)
    print("STAGES " + json.dumps({"family": family, "bert_tf": bert_tf.__file__,
                                  "stages": stages.rows}))


def _run_probe(tree, family, ckpt_dir, seq_length):
    env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="2")
    cmd = [sys.executable, os.path.abspath(__file__), "--probe", family,
           "--ckpt_dir", ckpt_dir, "--seq_length", str(seq_length)]
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    lines = [l for l in out.stdout.splitlines() if l.startswith("STAGES ")]
    if out.returncode or not lines:
        raise RuntimeError(f"{tree} {family}: rc {out.returncode}\n{out.stderr[-3000:]}")
    row = json.loads(lines[-1][len("STAGES "):])
    row["process_wall_s"] = round(wall, 2)
    return row


def _summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--make", action="store_true")
    p.add_argument("--probe")
    p.add_argument("--families", default="bert_large,xlnet_large,albert_xxlarge")
    p.add_argument("--ckpt_dir", default="/tmp/official_mem")
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--trees", default=f"new={os.getcwd()}")
    p.add_argument("--out")
    a = p.parse_args()
    if a.probe:
        return probe(a.probe, a.ckpt_dir, a.seq_length)
    families = a.families.split(",")
    if a.make:
        for fam in families:  # one family per process: --families bert_large
            make(fam, a.ckpt_dir)
        return
    trees = dict(t.split("=", 1) for t in a.trees.split(","))
    runs = {fam: {name: [] for name in trees} for fam in families}
    for r in range(a.rounds):
        for fam in families:
            for name, tree in trees.items():
                row = _run_probe(tree, fam, a.ckpt_dir, a.seq_length)
                runs[fam][name].append(row)
                print(r, fam, name, row["process_wall_s"],
                      [(s["stage"], s["seconds"], s["rss_mb"], s["peak_mb"]) for s in row["stages"]],
                      flush=True)
    from machine_info import machine
    table = {}
    for fam in families:
        table[fam] = {}
        for name in trees:
            rows = runs[fam][name]
            stages = [s["stage"] for s in rows[0]["stages"]]
            table[fam][name] = {
                st: {k: _summary([r["stages"][i][k] for r in rows])
                     for k in ("seconds", "rss_mb", "peak_mb")}
                for i, st in enumerate(stages)}
            table[fam][name]["process_wall_s"] = _summary([r["process_wall_s"] for r in rows])
    result = {"machine": machine(), "seq_length": a.seq_length, "batch": 2,
              "rounds": a.rounds, "trees": trees, "summary": table, "runs": runs,
              "note": "RSS in MiB (2**20 bytes); peak_mb = ru_maxrss after the stage"}
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
