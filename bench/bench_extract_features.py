"""`extract_features.py` whole process and its start-up: this tree vs the same tree with the
original's per-float writer, and vs the original script when a TF 2.15 Python is named;
alternating processes.

    python bench/bench_extract_features.py [--lines 400] [--rounds 3]
    ORIGINAL_PYTHON=/path/to/tf215/bin/python BERT_ORIGINAL_DIR=/tmp/orig_bert \
        python bench/bench_extract_features.py

Input: the first ``--lines`` MRPC dev pairs as ``text_a ||| text_b`` lines (``../shared/data``);
the embedded MiniLM default (converted into the bert_tf cache first), ``--layers=-1,-2,-3,-4
--max_seq_length=128 --batch_size=8``. Peers, each a fresh process per round, in rotating order:

* ``ours``: ``python extract_features.py`` of this tree;
* ``ours_python_writer``: the same, with ``feature_json_line`` replaced by a restatement of the
  original's writer (OrderedDicts, ``round(float(x), 6)``, ``json.dumps``): the "before" of the
  vectorized writer; its output must be byte-identical to ``ours``' (checked);
* ``original``: ``$BERT_ORIGINAL_DIR/extract_features.py`` under ``$ORIGINAL_PYTHON`` (optional).

Start-up: the same peers on a 1-line input. ``--writer_only``: the two writers alone, in one
process, on the golden MiniLM activations (CPU seconds, bytes compared). Writes ``bench/results/extract_features.json``:
wall seconds per peer, median (min-max) over rounds, and the per-round ratios peer / ours.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MRPC_DEV = os.path.join(REPO, "..", "shared", "data", "MRPC", "dev.tsv")

PYTHON_WRITER = r'''
import collections, json, runpy, sys
import bert_tf.tasks.feature_extraction as fe

def original_writer(unique_id, tokens, layer_indexes, layer_values):
    features = []
    for i, token in enumerate(tokens):
        layers = []
        for j, index in enumerate(layer_indexes):
            layer = collections.OrderedDict()
            layer["index"] = index
            layer["values"] = [round(float(x), 6) for x in layer_values[j, i].flat]
            layers.append(layer)
        feature = collections.OrderedDict()
        feature["token"] = token
        feature["layers"] = layers
        features.append(feature)
    output = collections.OrderedDict()
    output["linex_index"] = unique_id
    output["features"] = features
    return json.dumps(output) + "\n"

fe.feature_json_line = original_writer
sys.argv = ["extract_features.py"] + sys.argv[1:]
runpy.run_path("extract_features.py", run_name="__main__")
'''


def machine():
    info = {"cpus": os.cpu_count(), "load_average_at_start": os.getloadavg()[0]}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                info["model_name"] = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return info


def write_input(path, lines):
    rows = [l.rstrip("\n").split("\t") for l in open(MRPC_DEV, encoding="utf-8-sig")][1:lines + 1]
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(f"{r[3]} ||| {r[4]}\n")


def summarize(values):
    values = np.asarray(values, float)
    return {"median": float(np.median(values)), "min": float(values.min()),
            "max": float(values.max()), "rounds": int(values.size)}


def writer_only(rounds):
    """In one process: the vectorized writer vs the original's writer on the golden MiniLM
    activations (16 x 128 tokens x 384, as 4 layers of 32 tokens per line), rounds interleaved."""
    sys.path.insert(0, REPO)
    ns = {}
    exec(PYTHON_WRITER.split("fe.feature_json_line =")[0], ns)  # defines original_writer
    from bert_tf.tasks.feature_extraction import feature_json_line
    values = np.load(os.path.join(REPO, "tests", "golden", "bert", "minilm", "outputs.npz"))["sequence_output"]
    lines = values.reshape(-1, 4, 32, 384)  # [64 lines, 4 layers, 32 tokens, 384]
    tokens = [f"t{i}" for i in range(32)]
    peers = {"ours": feature_json_line, "python_writer": ns["original_writer"]}
    t = time.process_time()
    feature_json_line(0, tokens[:1], [-1], lines[0, :1, :1])  # builds the digit tables once
    table_seconds = time.process_time() - t
    seconds = {n: [] for n in peers}
    for r in range(rounds):
        for n in (list(peers) if r % 2 == 0 else list(peers)[::-1]):
            t = time.process_time()
            text = [peers[n](i, tokens, [-1, -2, -3, -4], line) for i, line in enumerate(lines)]
            seconds[n].append(time.process_time() - t)
            assert n == "ours" or text == ours_text
            if n == "ours":
                ours_text = text
    return {"floats": int(values.size), "table_build_cpu_seconds": table_seconds,
            "cpu_seconds": {n: summarize(v) for n, v in seconds.items()},
            "ratio_python_writer_over_ours": summarize(np.array(seconds["python_writer"]) / np.array(seconds["ours"])),
            "bytes_equal": True}


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--lines", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--writer_only", action="store_true", help="only the in-process writer timing")
    p.add_argument("--out", default=os.path.join(HERE, "results", "extract_features.json"))
    args = p.parse_args(argv)
    if args.writer_only:
        info = {"machine": machine(), "writer_only": writer_only(args.rounds)}
        print(json.dumps(info, indent=1))
        with open(args.out, "w") as f:
            json.dump(info, f, indent=2)
        return
    if not os.path.exists(MRPC_DEV):
        raise SystemExit(f"{MRPC_DEV} is missing (../shared/data)")
    sys.path.insert(0, REPO)
    from bert_tf import defaults
    model = defaults.default_model()  # convert once, outside the timings
    work = tempfile.mkdtemp(prefix="bench_ef_")
    model_flags = [f"--vocab_file={model.vocab_file}", f"--bert_config_file={model.bert_config_file}",
                   f"--init_checkpoint={model.init_checkpoint}", "--layers=-1,-2,-3,-4",
                   "--max_seq_length=128", "--batch_size=8"]
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    peers = {
        "ours": lambda inp, out: [sys.executable, "extract_features.py", f"--input_file={inp}",
                                  f"--output_file={out}"] + model_flags,
        "ours_python_writer": lambda inp, out: [sys.executable, "-c", PYTHON_WRITER,
                                                f"--input_file={inp}", f"--output_file={out}"] + model_flags,
    }
    original_python, original_dir = os.environ.get("ORIGINAL_PYTHON"), os.environ.get("BERT_ORIGINAL_DIR")
    if original_python and original_dir:
        peers["original"] = lambda inp, out: [original_python, os.path.join(original_dir, "extract_features.py"),
                                              f"--input_file={inp}", f"--output_file={out}"] + model_flags
    info = {"machine": machine(), "lines": args.lines, "peers": list(peers)}
    for name, lines in (("whole_process", args.lines), ("start_up_1_line", 1)):
        inp = os.path.join(work, f"input_{lines}.txt")
        write_input(inp, lines)
        seconds = {n: [] for n in peers}
        outputs = {}
        names = list(peers)
        for r in range(args.rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                out = os.path.join(work, f"{name}_{n}.jsonl")
                t = time.perf_counter()
                subprocess.run(peers[n](inp, out), cwd=REPO, env=env, check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                seconds[n].append(time.perf_counter() - t)
                outputs[n] = out
        same = open(outputs["ours"], "rb").read() == open(outputs["ours_python_writer"], "rb").read()
        info[name] = {
            "seconds": {n: summarize(v) for n, v in seconds.items()},
            "ratio_peer_seconds_over_ours": {n: summarize(np.array(v) / np.array(seconds["ours"]))
                                             for n, v in seconds.items() if n != "ours"},
            "ours_bytes_equal_python_writer": same,
        }
        print(name, json.dumps(info[name], indent=1), flush=True)
    info["load_average_at_end"] = os.getloadavg()[0]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
