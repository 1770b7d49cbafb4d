"""How far ``--dtype=bfloat16`` moves real fine-tuning results against float32 (issue 25, item 1,
accuracy part), with the embedded MiniLM (all-MiniLM-L6-v2) on the real GLUE MRPC and STS-B
data of ../shared/data.

Fine-tuning: every run is the root ``run_classifier.py`` as a child process (``nice -n 5``),
the original BERT README recipe ``--do_train=true --do_eval=true --max_seq_length=128
--train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3`` on the full training set,
``--seed=N --deterministic``, once with ``--dtype=float32`` and once with ``--dtype=bfloat16``
per seed, one run at a time. Order: MRPC s1, STS-B s1, MRPC s2, STS-B s2, MRPC s3 (each seed
fp32 then bf16), so a cut-off run still has pairs of both tasks. Per run: the dev metrics of
eval_results.txt (MRPC accuracy / F1, STS-B Pearson / Spearman, eval_loss), the last logged
training loss, wall and CPU seconds and peak RSS of the child (``os.wait4``). Per task: the
per-seed difference bf16 - fp32, mean and max |difference|, mean and std (ddof 1) per dtype.

extract_features: ``extract_features.py`` on the first 400 MRPC dev pairs (``a ||| b``)
``--layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8``, float32 as the command line gives
it; the command line has no ``--dtype`` (tried and recorded), so the bfloat16 side is the same
task code (``bert_tf.bert.tasks.feature_extraction.run``) in a child whose layers are built inside
``bert_tf.training.precision.dtype_policy("bfloat16")`` -- what ``run_classifier.py
--dtype=bfloat16`` does to its model. Reported: max and mean |difference| of every value, max
relative difference (|d| / max(|fp32|, 1e-6); the JSON values are rounded to 6 decimals, so it
is large where a value is near zero), its 99.9th percentile and its max where |fp32| >= 0.01,
per token-and-layer vector the relative L2 difference and the cosine, and lines whose tokens
differ (then not compared).

    python bench/bf16_accuracy.py [--mrpc_seeds 1,2,3] [--stsb_seeds 1,2] [--parts finetune,extract]
        [--eigen_seeds 1,2]  # these MRPC seeds also run float32 with TF_ENABLE_ONEDNN_OPTS=0
        [--stop_at 16:20]   # UTC: start no new run after this time

Writes ``bench/results/bf16_accuracy.json`` after every run (machine, load, flags, rows,
summaries); rerunning resumes (finished rows of the JSON are kept, unless --fresh).
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
from machine_info import machine

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("BERT_TF_SHARED_DATA", "/work/shared/data")
RESULTS = os.path.join(REPO, "bench", "results", "bf16_accuracy.json")
TASKS = {"MRPC": ("MRPC", ("eval_accuracy",)), "STS-B": ("STS-B", ("eval_pearson",
                                                                    "eval_spearman"))}
RECIPE = ["--do_train=true", "--do_eval=true", "--max_seq_length=128", "--train_batch_size=32",
          "--learning_rate=2e-5", "--num_train_epochs=3", "--deterministic"]
EXTRACT = ["--layers=-1,-2,-3,-4", "--max_seq_length=128", "--batch_size=8"]
BIGMEM = "/tmp/s7/bigmem.lock"
BIGMEM_BYTES = 3 << 30

# The bfloat16 extract_features child: the task code of extract_features.py, its model built
# under the mixed_bfloat16 policy as run_classifier.py --dtype=bfloat16 builds its model.
BF16_EXTRACT_CHILD = r"""
import sys
from bert_tf import flags as bert_flags
from bert_tf.bert.tasks.args import ExtractFeaturesArgs
from bert_tf.defaults import resolve_model_files
from bert_tf.training.precision import dtype_policy
bert_flags.define_args(ExtractFeaturesArgs)
bert_flags.FLAGS(sys.argv)
args = resolve_model_files(bert_flags.args_from_flags(ExtractFeaturesArgs, bert_flags.FLAGS),
                           require_init_checkpoint=True)
from bert_tf.bert.tasks import feature_extraction as task
import keras
with dtype_policy("bfloat16"):
    print("policy inside:", keras.config.dtype_policy().name)
    for line in task.run(args).summary_lines():
        print(line)
"""


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def run_child(cmd, log_path, use_lock=False, env=None):
    """Runs ``cmd`` (stdout + stderr to ``log_path``); returns (exit code, wall s, CPU s user +
    sys, peak RSS bytes) of that child alone (``os.wait4``; ``nice`` and ``flock`` exec it, so
    with flock the figures are flock's process tree's: flock waits for its child)."""
    if use_lock:
        cmd = ["flock", BIGMEM] + cmd
    with open(log_path, "w", encoding="utf-8") as log:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (proc.returncode, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def tail(path, n=6):
    with open(path, encoding="utf-8", errors="replace") as f:
        return [line.rstrip() for line in f.readlines()[-n:]]


def read_eval_results(path):
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(" = ")
            try:
                out[key.strip()] = float(value)
            except ValueError:
                pass
    return out


def training_losses(log_path):
    """[(global_step, loss)] of the training loop's ``global_step = N, loss = X, examples/sec``
    lines in the run's log (each the mean loss of the steps since the previous line)."""
    found = []
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.search(r"\] global_step = (\d+), loss = ([-0-9.eEnainf]+), examples/sec", line)
            if m:
                found.append((int(m.group(1)), float(m.group(2))))
    return found


def add_losses(row, log_path):
    """``final_train_step`` / ``final_train_loss`` (the last logged training loss) and
    ``train_loss_last_epoch_mean`` (mean of the lines logged in the last third of the steps:
    the 3rd epoch) of a finished run's row."""
    losses = training_losses(log_path)
    if not losses:
        return
    row["final_train_step"], row["final_train_loss"] = losses[-1]
    last = [v for step, v in losses if step > losses[-1][0] * 2 / 3]
    row["train_loss_last_epoch_mean"] = float(np.mean(last))


def finetune_run(task, seed, dtype, work, python, use_lock):
    data_dir = os.path.join(DATA, TASKS[task][0])
    out_dir = os.path.join(work, f"{task}_s{seed}_{dtype}")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(out_dir)
    base = os.environ["BERT_BASE_DIR"]
    # float32_eigen: float32 with TF_ENABLE_ONEDNN_OPTS=0 (Eigen kernels, other summation
    # orders): how far float32 itself moves when only the rounding of its sums changes
    flag_dtype = "float32" if dtype == "float32_eigen" else dtype
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0") if dtype == "float32_eigen" else None
    flags = [f"--task_name={task}", f"--data_dir={data_dir}", f"--output_dir={out_dir}",
             f"--vocab_file={base}/vocab.txt", f"--bert_config_file={base}/bert_config.json",
             f"--init_checkpoint={base}/bert_model.ckpt"] + RECIPE + [f"--seed={seed}",
                                                                      f"--dtype={flag_dtype}"]
    cmd = ["nice", "-n", "5", python, "run_classifier.py"] + flags
    log = os.path.join(work, f"{task}_s{seed}_{dtype}.log")
    started = utc_now().isoformat(timespec="seconds")
    load = os.getloadavg()[0]
    rc, wall, cpu, rss = run_child(cmd, log, use_lock, env)
    row = {"task": task, "seed": seed, "dtype": dtype, "started_utc": started,
           "load_average_at_start": load, "exit_code": rc, "wall_s": round(wall, 1),
           "cpu_s": round(cpu, 1), "peak_rss_bytes": rss, "flocked": use_lock,
           "flags": [f for f in flags if not f.startswith(("--output_dir", "--data_dir"))]}
    if rc:
        row["error_tail"] = tail(log)
        return row
    row["eval"] = read_eval_results(os.path.join(out_dir, "eval_results.txt"))
    add_losses(row, log)
    # the checkpoints (model + Adam slots) are not needed afterwards: keep the logs and results
    for name in os.listdir(out_dir):
        if name.startswith("model.ckpt") or name.endswith(".tf_record"):
            os.remove(os.path.join(out_dir, name))
    return row


def summarize_task(rows, task):
    """Per-seed bf16 - fp32 of each metric, mean / max |diff|, mean / std per dtype."""
    metrics = TASKS[task][1] + ("eval_loss",)
    by = {(r["seed"], r["dtype"]): r for r in rows if r["task"] == task and "eval" in r}
    seeds = sorted({s for s, _ in by if (s, "float32") in by and (s, "bfloat16") in by})
    out = {"seeds_paired": seeds, "metrics": {}}
    for m in metrics + ("final_train_loss", "train_loss_last_epoch_mean"):
        def value(s, d):
            return by[(s, d)]["eval"].get(m) if m.startswith("eval") else by[(s, d)].get(m)
        per = [{"seed": s, "float32": value(s, "float32"), "bfloat16": value(s, "bfloat16"),
                "diff_bf16_minus_fp32": value(s, "bfloat16") - value(s, "float32")}
               for s in seeds]
        eigen = [{"seed": s, "float32_eigen": value(s, "float32_eigen"),
                  "diff_eigen_minus_fp32": value(s, "float32_eigen") - value(s, "float32")}
                 for s in seeds if (s, "float32_eigen") in by]
        entry = {"per_seed": per}
        if eigen:  # the float32 noise floor: the same run with other summation orders only
            d = np.array([e["diff_eigen_minus_fp32"] for e in eigen])
            entry["float32_noise_floor"] = {"per_seed": eigen, "mean_abs_diff": float(np.abs(d).mean()),
                                            "max_abs_diff": float(np.abs(d).max())}
        if per:
            d = np.array([p["diff_bf16_minus_fp32"] for p in per])
            entry["mean_diff"] = float(d.mean())
            entry["mean_abs_diff"] = float(np.abs(d).mean())
            entry["max_abs_diff"] = float(np.abs(d).max())
        for dt in ("float32", "bfloat16"):
            v = np.array([value(s, dt) for s, d2 in by if d2 == dt], np.float64)
            if v.size:
                entry[dt] = {"mean": float(v.mean()),
                             "std": float(v.std(ddof=1)) if v.size > 1 else None,
                             "n": int(v.size)}
        out["metrics"][m] = entry
    for dt in ("float32", "bfloat16"):
        walls = [by[(s, dt)]["wall_s"] for s in seeds]
        rss = [by[(s, dt)]["peak_rss_bytes"] for s in seeds]
        if walls:
            out.setdefault("cost", {})[dt] = {"wall_s_mean": float(np.mean(walls)),
                                              "peak_rss_bytes_max": int(max(rss))}
    if seeds:
        ratios = [by[(s, "bfloat16")]["wall_s"] / by[(s, "float32")]["wall_s"] for s in seeds]
        out["cost"]["wall_ratio_bf16_over_fp32"] = {
            "median": float(np.median(ratios)), "min": float(min(ratios)),
            "max": float(max(ratios)), "pairs": len(ratios),
            "note": "runs back to back on a shared 2-vCPU machine; indicative only"}
    goal = {"MRPC": ("eval_accuracy", 0.005, "within 0.5 points of fp32 dev accuracy"),
            "STS-B": ("eval_pearson", 0.005, "within 0.005 dev Pearson")}[task]
    m = out["metrics"][goal[0]]
    if seeds:
        out["goal"] = {"metric": goal[0], "text": goal[2], "threshold": goal[1],
                       "max_abs_diff": m["max_abs_diff"],
                       "abs_mean_diff": abs(m["mean_diff"]),
                       "met_every_seed": bool(m["max_abs_diff"] <= goal[1] + 1e-12),
                       "met_on_mean": bool(abs(m["mean_diff"]) <= goal[1] + 1e-12)}
    return out


def write_extract_input(path, pairs):
    with open(os.path.join(DATA, "MRPC", "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f.readlines()[1:pairs + 1]]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(f"{r[3]} ||| {r[4]}\n" for r in rows)
    return len(rows)


def compare_features(a, b):
    """Differences of every value of two extract_features JSONL files (same token lines)."""
    diffs, refs, other_tokens, lines = [], [], 0, 0
    per_layer, rel_l2, cosine = {}, [], []
    with open(a, encoding="utf-8") as fa, open(b, encoding="utf-8") as fb:
        for la, lb in zip(fa, fb):
            lines += 1
            xa, xb = json.loads(la)["features"], json.loads(lb)["features"]
            if [x["token"] for x in xa] != [y["token"] for y in xb]:
                other_tokens += 1
                continue
            for x, y in zip(xa, xb):
                for lx, ly in zip(x["layers"], y["layers"]):
                    va = np.asarray(lx["values"], np.float64)
                    vb = np.asarray(ly["values"], np.float64)
                    diffs.append(np.abs(vb - va))
                    refs.append(np.abs(va))
                    per_layer.setdefault(lx["index"], []).append(np.abs(vb - va).max())
                    norm = max(np.linalg.norm(va), 1e-12)
                    rel_l2.append(np.linalg.norm(vb - va) / norm)
                    cosine.append(float(va @ vb) / (norm * max(np.linalg.norm(vb), 1e-12)))
    d, r = np.concatenate(diffs), np.concatenate(refs)
    rel = d / np.maximum(r, 1e-6)
    big = r >= 1e-2  # relative difference where the value is not near zero
    return {"lines": lines, "lines_with_other_tokens": other_tokens, "values": int(d.size),
            "max_abs_diff": float(d.max()), "mean_abs_diff": float(d.mean()),
            "fp32_mean_abs_value": float(r.mean()), "fp32_max_abs_value": float(r.max()),
            "max_rel_diff": float(rel.max()),
            "rel_diff_p99_9": float(np.percentile(rel, 99.9)),
            "max_rel_diff_where_abs_value_ge_0.01": float(rel[big].max()),
            "mean_rel_diff_where_abs_value_ge_0.01": float(rel[big].mean()),
            "vector_rel_l2_diff_mean": float(np.mean(rel_l2)),
            "vector_rel_l2_diff_max": float(np.max(rel_l2)),
            "vector_cosine_min": float(np.min(cosine)),
            "vector_cosine_mean": float(np.mean(cosine)),
            "max_abs_diff_per_layer": {str(k): float(max(v)) for k, v in per_layer.items()}}


def extract_part(work, python, pairs):
    inp = os.path.join(work, "extract_input.txt")
    n = write_extract_input(inp, pairs)
    base = os.environ["BERT_BASE_DIR"]
    model = [f"--vocab_file={base}/vocab.txt", f"--bert_config_file={base}/bert_config.json",
             f"--init_checkpoint={base}/bert_model.ckpt"]
    out = {"pairs": n, "flags": EXTRACT}
    files = {}
    for name, cmd_head, extra in (
            ("float32_cli", [python, "extract_features.py"], []),
            ("bfloat16_cli", [python, "extract_features.py"], ["--dtype=bfloat16"]),
            ("bfloat16_policy", [python, "-c", BF16_EXTRACT_CHILD], [])):
        path = os.path.join(work, f"features_{name}.jsonl")
        cmd = ["nice", "-n", "5"] + cmd_head + [f"--input_file={inp}", f"--output_file={path}"] \
            + EXTRACT + model + extra
        log = os.path.join(work, f"extract_{name}.log")
        rc, wall, cpu, rss = run_child(cmd, log)
        out[name] = {"exit_code": rc, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
                     "peak_rss_bytes": rss}
        if rc:
            out[name]["error_tail"] = tail(log, 3)
        else:
            files[name] = path
            if name == "bfloat16_policy":
                out[name]["policy_line"] = [ln for ln in tail(log, 400)
                                            if ln.startswith("policy inside")]
    if "float32_cli" in files:
        for name in ("bfloat16_cli", "bfloat16_policy"):
            if name in files:
                out[f"diff_{name}_vs_float32"] = compare_features(files["float32_cli"],
                                                                  files[name])
    return out


def load_results(fresh, path):
    if not fresh and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return {}


def save(results, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mrpc_seeds", default="1,2,3")
    p.add_argument("--stsb_seeds", default="1,2")
    p.add_argument("--eigen_seeds", default="",
                   help="MRPC seeds that also run float32 with TF_ENABLE_ONEDNN_OPTS=0 (the "
                        "float32 noise floor)")
    p.add_argument("--parts", default="finetune,extract",
                   help="finetune, extract; neither: re-read the logs and summarize")
    p.add_argument("--pairs", type=int, default=400)
    p.add_argument("--work", default="/tmp/bf16acc_work")
    p.add_argument("--stop_at", default=None, help="UTC HH:MM: start no new run after it")
    p.add_argument("--fresh", action="store_true")
    p.add_argument("--out", default=RESULTS)
    a = p.parse_args(argv)
    if "BERT_BASE_DIR" not in os.environ:
        raise SystemExit("export BERT_BASE_DIR=$(.venv/bin/python -m bert_tf.defaults) first")
    python = sys.executable
    os.makedirs(a.work, exist_ok=True)
    results = load_results(a.fresh, a.out)
    results["what"] = ("bf16 vs fp32 fine-tuning and extract_features with the embedded MiniLM "
                       "on real MRPC / STS-B (issue 25 item 1, accuracy part)")
    results.setdefault("machine", machine())
    results["machine_this_invocation"] = machine()
    results["model"] = os.environ["BERT_BASE_DIR"]
    results["recipe_flags"] = RECIPE
    results.setdefault("runs", [])
    for row in results["runs"]:  # the training losses again from the kept logs
        log = os.path.join(a.work, f"{row['task']}_s{row['seed']}_{row['dtype']}.log")
        if "eval" in row and os.path.exists(log):
            add_losses(row, log)
    parts = a.parts.split(",")
    stop = None
    if a.stop_at:
        hh, mm = map(int, a.stop_at.split(":"))
        stop = utc_now().replace(hour=hh, minute=mm, second=0, microsecond=0)

    if "finetune" in parts:
        mrpc = [int(s) for s in a.mrpc_seeds.split(",") if s]
        stsb = [int(s) for s in a.stsb_seeds.split(",") if s]
        order = []
        for i in range(max(len(mrpc), len(stsb))):
            for task, seeds in (("MRPC", mrpc), ("STS-B", stsb)):
                if i < len(seeds):
                    order += [(task, seeds[i], "float32"), (task, seeds[i], "bfloat16")]
                    if task == "MRPC" and str(seeds[i]) in a.eigen_seeds.split(","):
                        order.append((task, seeds[i], "float32_eigen"))
        done = {(r["task"], r["seed"], r["dtype"]) for r in results["runs"] if "eval" in r}
        use_lock = any(r.get("peak_rss_bytes", 0) > BIGMEM_BYTES for r in results["runs"])
        for task, seed, dtype in order:
            if (task, seed, dtype) in done:
                continue
            if stop and utc_now() >= stop:
                results.setdefault("not_run", []).append(f"{task} seed {seed} {dtype}")
                continue
            print(f"{utc_now():%H:%M:%S} {task} seed {seed} {dtype} ...", flush=True)
            row = finetune_run(task, seed, dtype, a.work, python, use_lock)
            print(f"  exit {row['exit_code']} wall {row['wall_s']} s cpu {row['cpu_s']} s "
                  f"rss {row['peak_rss_bytes'] / 2**30:.2f} GiB eval {row.get('eval')} "
                  f"loss {row.get('final_train_loss')}", flush=True)
            results["runs"] = [r for r in results["runs"]
                               if (r["task"], r["seed"], r["dtype"]) != (task, seed, dtype)]
            results["runs"].append(row)
            use_lock = use_lock or row["peak_rss_bytes"] > BIGMEM_BYTES
            results["summary"] = {t: summarize_task(results["runs"], t) for t in TASKS}
            save(results, a.out)
        results["summary"] = {t: summarize_task(results["runs"], t) for t in TASKS}
        save(results, a.out)
    results["summary"] = {t: summarize_task(results["runs"], t) for t in TASKS}
    save(results, a.out)
    if "extract" in parts:
        print(f"{utc_now():%H:%M:%S} extract_features ...", flush=True)
        results["extract_features"] = extract_part(a.work, python, a.pairs)
        save(results, a.out)
    print(json.dumps(results.get("summary", {}), indent=1)[:4000])
    if "extract_features" in results:
        print(json.dumps({k: v for k, v in results["extract_features"].items()
                          if k.startswith("diff")}, indent=1))


if __name__ == "__main__":
    main()
