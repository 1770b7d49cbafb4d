"""Seconds from SIGTERM to exit of ``run_classifier.py --do_train`` (MiniLM, real MRPC).

Each round starts a fresh training of the embedded MiniLM default model on GLUE MRPC
(``--max_seq_length=128 --train_batch_size=32 --num_train_epochs=3``: 343 steps, so a call of
the training loop runs up to 35 steps, the 10% progress stride), waits for the first progress
line (``train: 35/343 steps``, or an earlier 30-second line: a call has just ended), waits
``--delay`` seconds more (inside the next call), sends SIGTERM and times until the process has
exited. Each code tree given with
``--tree NAME=PATH`` (a checkout of the repository: the one before and after a change) runs
once per round, the trees interleaved. Also records each run's exit status, the steps/second
of its first progress line (first trace included) and the newest ``model.ckpt-N`` left in the
output folder (what a rerun resumes from).

    python bench/bench_sigterm_exit.py --tree before=/tmp/base --tree after=. --rounds 3

Writes ``bench/results/sigterm_exit.json`` (after every run) with the machine and load.
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from machine_info import machine  # noqa: E402

PROGRESS = re.compile(r"train: (\d+)/(\d+) steps \(\d+%\), ([\d.]+) steps/s")


def one_run(tree: str, data_dir: str, delay: float, python: str) -> dict:
    out = tempfile.mkdtemp(prefix="sigterm_bench_")
    try:
        cmd = [python, os.path.join(tree, "run_classifier.py"), "--task_name=MRPC",
               "--do_train=true", f"--data_dir={data_dir}", f"--output_dir={out}/o",
               "--max_seq_length=128", "--train_batch_size=32", "--num_train_epochs=3"]
        env = dict(os.environ, PYTHONPATH=tree, PYTHONDONTWRITEBYTECODE="1")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=out)
        lines, first = [], threading.Event()

        def read_stderr():
            for line in proc.stderr:
                lines.append(line)
                if PROGRESS.search(line):
                    first.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        started = time.time()
        if not first.wait(timeout=900):
            proc.kill()
            raise RuntimeError("no progress line within 900 s:\n" + "".join(lines[-20:]))
        at_progress = time.time()
        time.sleep(delay)
        sent = time.time()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=600)
        exited = time.time()
        reader.join(timeout=10)
        text = "".join(lines)
        found = list(PROGRESS.finditer(text))
        steps = [int(m.group(1)) for m in found]
        ckpts = sorted(int(m.group(1)) for f in os.listdir(f"{out}/o")
                       for m in [re.match(r"model\.ckpt-(\d+)\.index$", f)] if m)
        return {"exit_status": proc.returncode, "seconds_to_exit": round(exited - sent, 2),
                "seconds_to_first_progress_line": round(at_progress - started, 1),
                "progress_steps_logged": steps,
                "steps_per_second_at_first_progress_line": float(found[0].group(3)),
                "newest_checkpoint_step": ckpts[-1] if ckpts else None,
                "last_stderr_line": text.strip().splitlines()[-1] if text.strip() else ""}
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.0,
                   help="seconds after the first progress line before SIGTERM")
    p.add_argument("--data_dir", default=os.path.join(
        os.environ.get("BERT_TF_SHARED_DATA", "/work/shared/data"), "MRPC"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--out", default=os.path.join(HERE, "results", "sigterm_exit.json"))
    a = p.parse_args()
    trees = dict(t.split("=", 1) for t in a.tree)
    info = {"what": __doc__.splitlines()[0], "machine": machine(), "delay_s": a.delay,
            "trees": {k: os.path.abspath(v) for k, v in trees.items()}, "runs": {}}
    for r in range(a.rounds):
        for name, tree in trees.items():
            row = one_run(os.path.abspath(tree), a.data_dir, a.delay, a.python)
            row["round"] = r
            row["load_average"] = os.getloadavg()[0]
            info["runs"].setdefault(name, []).append(row)
            print(name, json.dumps(row), flush=True)
            summary = {}
            for n, rows in info["runs"].items():
                secs = [x["seconds_to_exit"] for x in rows]
                summary[n] = {"median_s": statistics.median(secs), "min_s": min(secs),
                              "max_s": max(secs), "rounds": len(secs)}
            info["summary"] = summary
            os.makedirs(os.path.dirname(a.out), exist_ok=True)
            with open(a.out, "w") as f:
                json.dump(info, f, indent=2)
    print(json.dumps(info["summary"], indent=1))


if __name__ == "__main__":
    main()
