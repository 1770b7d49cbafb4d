"""Fine-tuning recipes of issue 26 on real data with the embedded MiniLM (all-MiniLM-L6-v2):
mean and std over restarts of MRPC accuracy / F1 and STS-B Pearson / Spearman for

* ``plain``: the original recipe (linear warmup 10% + linear decay, every layer at one rate);
* ``layerwise``: ``--lr_layer_decay_rate`` (head and top layer at the rate, each lower layer x r);
* ``unfreeze``: ``--unfreeze_schedule=k`` (head first, one more block from the top every k steps);
* ``frozen4``: ``--freeze_encoder --feature_layers=-1,-2,-3,-4`` (head on the concatenated [CLS]
  vectors of the last 4 layers; the encoder does not train);
* ``tasklm``: the README's task-text LM recipe: ``create_pretraining_data.py`` on the task's own
  training sentences, ``run_pretraining.py`` from MiniLM, then the plain recipe from that.

Every run is the root script's command line (``run_classifier.py --num_restarts=N --seed=S``),
so the numbers are those a user gets. Each recipe's restarts_summary.json is read back into
bench/results/recipes.json, which is rewritten after every recipe (a killed bench keeps what it
finished; rerunning resumes: finished restarts are read back, see bert_tf.training.restarts).
A plot bench/results/recipes.png when matplotlib is importable, else bench/results/recipes.csv.

    python bench/bench_recipes.py [--tasks mrpc,stsb] [--restarts 3] [--mrpc_train 640] ...

The training sets may be cut to their first ``--*_train`` rows (and STS-B's dev set to its first
``--stsb_dev`` rows) to keep each run minutes on a shared 2-core CPU; the JSON says so.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

from machine_info import machine

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
RESULTS = os.path.join(REPO, "bench", "results")
TASKS = {"mrpc": ("MRPC", "MRPC", ("eval_accuracy", "eval_f1")),
         "stsb": ("STS-B", "STS-B", ("eval_pearson", "eval_spearman"))}


def _subset(src: str, dst: str, train_rows: int, dev_rows: int) -> None:
    """train.tsv / dev.tsv cut to their first rows (header kept), test.tsv as it is."""
    os.makedirs(dst, exist_ok=True)
    for name, rows in (("train.tsv", train_rows), ("dev.tsv", dev_rows), ("test.tsv", 0)):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            lines = f.read().splitlines(keepends=True)
        keep = lines if not rows else lines[:rows + 1]
        with open(os.path.join(dst, name), "w", encoding="utf-8") as f:
            f.writelines(keep)


def _sentences(data_dir: str, task: str, path: str) -> int:
    """The training sentences as create_pretraining_data.py's input: one document per
    example (its one or two sentences), blank lines between documents."""
    columns = (3, 4) if task == "MRPC" else (7, 8)
    n = 0
    with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f, \
            open(path, "w", encoding="utf-8") as out:
        for row in list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]:
            out.write("\n".join(row[c] for c in columns) + "\n\n")
            n += 1
    return n


def _run(cmd, log):
    start = time.time()
    with open(log, "a", encoding="utf-8") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, check=True)
    return time.time() - start


def _model_files():
    sys.path.insert(0, REPO)
    from bert_tf.defaults import default_model
    return default_model()


def recipe_flags(name: str, opts) -> list:
    """The flags each recipe adds to the plain command line."""
    return {"plain": [],
            "layerwise": [f"--lr_layer_decay_rate={opts.layer_decay}"],
            "unfreeze": [f"--unfreeze_schedule={opts.unfreeze_every}"],
            "frozen4": ["--freeze_encoder", "--feature_layers=-1,-2,-3,-4",
                        f"--learning_rate={opts.frozen_lr}"],
            "tasklm": []}[name]


def task_lm(task, data_dir, work, model, opts, log) -> dict:
    """create_pretraining_data.py + run_pretraining.py on the task's training sentences."""
    text = os.path.join(work, "train_text.txt")
    docs = _sentences(data_dir, task, text)
    records = os.path.join(work, "lm.tfrecord")
    out = os.path.join(work, "lm")
    py = sys.executable
    t1 = _run([py, "create_pretraining_data.py", f"--input_file={text}",
               f"--output_file={records}", f"--vocab_file={model.vocab_file}",
               "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
               "--masked_lm_prob=0.15", "--random_seed=12345",
               f"--dupe_factor={opts.dupe_factor}"], log) if not os.path.exists(records) else 0
    t2 = _run([py, "run_pretraining.py", f"--input_file={records}", f"--output_dir={out}",
               "--do_train=True", f"--bert_config_file={model.bert_config_file}",
               f"--init_checkpoint={model.init_checkpoint}", "--train_batch_size=32",
               "--max_seq_length=128", "--max_predictions_per_seq=20",
               f"--num_train_steps={opts.lm_steps}", f"--num_warmup_steps={opts.lm_steps // 10}",
               f"--learning_rate={opts.lm_lr}"], log)
    return {"documents": docs, "lm_steps": opts.lm_steps, "lm_learning_rate": opts.lm_lr,
            "dupe_factor": opts.dupe_factor, "create_seconds": t1, "pretrain_seconds": t2,
            "init_checkpoint": os.path.join(out, f"model.ckpt-{opts.lm_steps}")}


def run_recipe(key, recipe, opts, model, results, log):
    task, folder, metrics = TASKS[key]
    work = os.path.join(opts.work_dir, key)
    data_dir = os.path.join(work, "data")
    _subset(os.path.join(DATA, folder), data_dir, getattr(opts, f"{key}_train"),
            getattr(opts, f"{key}_dev"))
    entry = {"task": task, "recipe": recipe, "flags": recipe_flags(recipe, opts)}
    init = model.init_checkpoint
    if recipe == "tasklm":
        entry["task_lm"] = task_lm(task, data_dir, work, model, opts, log)
        init = entry["task_lm"]["init_checkpoint"]
    out = os.path.join(work, recipe)
    cmd = [sys.executable, "run_classifier.py", f"--task_name={task}", "--do_train=true",
           "--do_eval=true", f"--data_dir={data_dir}", f"--vocab_file={model.vocab_file}",
           f"--bert_config_file={model.bert_config_file}", f"--init_checkpoint={init}",
           "--max_seq_length=128", f"--train_batch_size={opts.batch_size}",
           "--eval_batch_size=32", f"--learning_rate={opts.lr}",
           f"--num_train_epochs={opts.epochs}", f"--warmup_proportion={opts.warmup}",
           f"--group_by_length={str(opts.group_by_length).lower()}",
           f"--num_restarts={opts.restarts}", f"--seed={opts.seed}", f"--output_dir={out}",
           "--save_checkpoints_steps=100000"] + entry["flags"]
    entry["seconds"] = _run(cmd, log)
    if opts.restarts == 1:  # the original's one run: eval_results.txt, no summary
        from bert_tf.training.restarts import summarize
        run = _read_restart(out, metrics) or {}
        summary = {"runs": [run], "seeds": [opts.seed], "stats": summarize([run])}
    else:
        with open(os.path.join(out, "restarts_summary.json"), encoding="utf-8") as f:
            summary = json.load(f)
    entry["restarts"] = len(summary["runs"])
    entry["seeds"] = summary["seeds"]
    entry["metrics"] = {m: summary["stats"][m] for m in metrics if m in summary["stats"]}
    entry["per_restart"] = {m: [r.get(m) for r in summary["runs"]] for m in metrics}
    results["runs"] = [r for r in results["runs"]
                       if (r["task"], r["recipe"]) != (task, recipe)] + [entry]
    return entry


def write_outputs(results, path):
    """``path`` (JSON), its table as ``.csv`` beside it, and a ``.png`` (mean +- std bars
    per recipe, one panel per task) when matplotlib is importable."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1)
    table = [(r["task"], r["recipe"], m, s["mean"], s["std"], s["min"], s["max"], s["n"])
             for r in results["runs"] for m, s in r["metrics"].items()]
    with open(path[:-5] + ".csv", "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f)
        w.writerow(["task", "recipe", "metric", "mean", "std", "min", "max", "restarts"])
        w.writerows(table)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    tasks = [t for t in ("MRPC", "STS-B") if any(row[0] == t for row in table)]
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(5 * max(1, len(tasks)), 4),
                             squeeze=False)
    for ax, task in zip(axes[0], tasks):
        rows = [row for row in table if row[0] == task]
        recipes = list(dict.fromkeys(row[1] for row in rows))
        metrics = list(dict.fromkeys(row[2] for row in rows))
        for j, metric in enumerate(metrics):
            got = {row[1]: row for row in rows if row[2] == metric}
            xs = [i + 0.4 * j for i, r in enumerate(recipes) if r in got]
            ax.bar(xs, [got[r][3] for r in recipes if r in got], width=0.4,
                   yerr=[got[r][4] for r in recipes if r in got], capsize=3,
                   label=metric.replace("eval_", ""))
        ax.set_xticks([i + 0.2 for i in range(len(recipes))],
                      [f"{r}\n(n={max(row[7] for row in rows if row[1] == r)})"
                       for r in recipes], fontsize=8)
        if task == "MRPC":  # every dev pair called a paraphrase: 279 of 408
            ax.axhline(279 / 408, color="gray", linestyle="--", linewidth=1,
                       label="majority-class accuracy")
        ax.set_title(f"{task}: mean +- std over restarts")
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path[:-5] + ".png", dpi=100)


def _read_restart(folder, metrics):
    """One finished restart's metrics (restart_metrics.txt, else eval_results.txt), or None."""
    sys.path.insert(0, REPO)
    from bert_tf.training.restarts import read_results
    names = ["restart_metrics.txt"]
    if not os.path.exists(os.path.join(folder, names[0])):
        names = ["eval_results.txt", "eval_extra.txt"]  # restarts written before e66006e
    run = {}
    for name in names:
        if os.path.exists(os.path.join(folder, name)):
            run.update(read_results(os.path.join(folder, name)))
    return {m: run[m] for m in metrics if m in run} or None


def collect(work_dirs, out, settings):
    """--collect: every recipe folder under the work dirs, with the restarts that finished
    (a recipe cut short by the deadline shows n < restarts), into ``out`` (+ csv / png)."""
    sys.path.insert(0, REPO)
    from bert_tf.training.restarts import summarize
    results = {"machine": machine(), "model": "all-MiniLM-L6-v2 (embedded default)",
               "settings": settings, "max_seq_length": 128, "train_batch_size": 32,
               "num_train_epochs": 1.0, "std": "sample standard deviation (n - 1)",
               "runs": []}
    for work in work_dirs:
        for key, (task, _, metrics) in TASKS.items():
            for recipe in ("plain", "frozen4", "layerwise", "unfreeze", "tasklm"):
                folder = os.path.join(work, key, recipe)
                runs = []
                for k in range(16):
                    run = _read_restart(os.path.join(folder, f"restart-{k}"), metrics)
                    if run:
                        runs.append(run)
                if runs:
                    results["runs"].append({
                        "task": task, "recipe": recipe, "work_dir": folder,
                        "restarts_finished": len(runs), "metrics": summarize(runs),
                        "per_restart": {m: [r.get(m) for r in runs] for m in metrics}})
    write_outputs(results, out)
    for r in results["runs"]:
        print(r["task"], r["recipe"], r["restarts_finished"], " ".join(
            f"{m} {s['mean']:.4f}+-{s['std']:.4f}" for m, s in r["metrics"].items()))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default="mrpc,stsb")
    p.add_argument("--recipes", default="plain,frozen4,layerwise,unfreeze,tasklm")
    p.add_argument("--restarts", type=int, default=3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--warmup", type=float, default=0.1, help="--warmup_proportion")
    p.add_argument("--group_by_length", action="store_true",
                   help="run_classifier's --group_by_length for every recipe")
    p.add_argument("--frozen_lr", type=float, default=1e-3)
    p.add_argument("--layer_decay", type=float, default=0.8)
    p.add_argument("--unfreeze_every", type=int, default=2)
    p.add_argument("--lm_steps", type=int, default=20)
    p.add_argument("--lm_lr", type=float, default=5e-5)
    p.add_argument("--dupe_factor", type=int, default=1)
    p.add_argument("--mrpc_train", type=int, default=0, help="first rows of train.tsv (0: all)")
    p.add_argument("--mrpc_dev", type=int, default=0)
    p.add_argument("--stsb_train", type=int, default=0)
    p.add_argument("--stsb_dev", type=int, default=0)
    p.add_argument("--work_dir", default="/tmp/bench_recipes")
    p.add_argument("--out", default=os.path.join(RESULTS, "recipes.json"))
    p.add_argument("--collect", default=None,
                   help="comma-separated work dirs: only gather what finished there")
    p.add_argument("--replot", action="store_true",
                   help="only rewrite --out's .csv / .png from --out (needs matplotlib only)")
    opts = p.parse_args()
    if opts.replot:
        with open(opts.out, encoding="utf-8") as f:
            write_outputs(json.load(f), opts.out)
        return
    if opts.collect:
        collect(opts.collect.split(","), opts.out,
                {k: v for k, v in vars(opts).items() if k not in ("out", "collect")})
        return
    os.makedirs(opts.work_dir, exist_ok=True)
    log = os.path.join(opts.work_dir, "bench.log")
    model = _model_files()
    results = {"machine": machine(), "model": "all-MiniLM-L6-v2 (embedded default)",
               "settings": {k: v for k, v in vars(opts).items() if k not in ("out",)},
               "max_seq_length": 128, "train_batch_size": opts.batch_size,
               "num_train_epochs": opts.epochs, "warmup_proportion": opts.warmup,
               "group_by_length": opts.group_by_length,
               "std": "sample standard deviation (n - 1) over the restarts", "runs": []}
    if os.path.exists(opts.out):
        with open(opts.out, encoding="utf-8") as f:
            results["runs"] = json.load(f).get("runs", [])
    for key in opts.tasks.split(","):
        for recipe in opts.recipes.split(","):
            entry = run_recipe(key, recipe, opts, model, results, log)
            print(json.dumps({k: entry[k] for k in ("task", "recipe", "seconds", "metrics")}),
                  flush=True)
            write_outputs(results, opts.out)


if __name__ == "__main__":
    main()
