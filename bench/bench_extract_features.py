"""`extract_features.py` whole process and its start-up: this tree vs the ORIGINAL script (run
unchanged under the TF 2.15 venv through ``bench/original_tf1_shim.py``), alternating processes.

    BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_extract_features.py   # the issue 16 rows

Input: the first ``--lines`` (400) MRPC dev pairs as ``text_a ||| text_b`` lines
(``../shared/data``); the embedded MiniLM default (converted into the bert_tf cache first),
``--layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8``. Peers, each a fresh process per
round, rounds interleaved in rotating order:

* ``ours``: ``python extract_features.py`` of this tree;
* ``original``: ``$BERT_ORIGINAL_DIR/extract_features.py`` (google-research/bert, a checkout
  outside the repo) under ``$ORIGINAL_PYTHON`` (default: the venv of ``bench/original_venv.sh``,
  ``/tmp/bert_tf_tf215/bin/python``) through our ``bench/original_tf1_shim.py``; skipped, and
  said, when either is missing;
* ``ours_before`` (``--before_tree=/work/main``): another checkout's script, to measure a lever;
* ``ours_python_writer`` (``--python_writer``): this tree with ``feature_json_line`` replaced
  by a restatement of the original's writer (OrderedDicts, ``round(float(x), 6)``,
  ``json.dumps``): the "before" of the vectorized writer; its output must be byte-identical.

Per peer and round: wall seconds and the child's CPU seconds (``getrusage(RUSAGE_CHILDREN)``
user + sys); ratios peer / ours per round, median (min-max). Output check (last round): every
float of ours vs the original's JSONL (max abs difference, goal <= 2e-5), tokens and layer
indexes equal, bytes equal. Start-up: the same peers on a 1-line input. ``--writer_only``: the
two writers alone, in one process, on the golden MiniLM activations (CPU seconds, bytes
compared). Writes ``bench/results/extract_features.json`` with the machine and load.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MRPC_DEV = os.path.join(REPO, "..", "shared", "data", "MRPC", "dev.tsv")

PYTHON_WRITER = r'''
import collections, json, runpy, sys
import bert_tf.run.feature_lines as fe

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
    from bert_tf.run.feature_lines import feature_json_line
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


def compare_outputs(ours_path, other_path):
    """Every float of two extract_features JSONL files: max abs difference, tokens / layer
    indexes / line ids equal, line counts, bytes equal."""
    max_diff, floats, tokens_equal, same_structure = 0.0, 0, True, True
    with open(ours_path, encoding="utf-8") as a, open(other_path, encoding="utf-8") as b:
        lines_a, lines_b = a.readlines(), b.readlines()
    for la, lb in zip(lines_a, lines_b):
        ja, jb = json.loads(la), json.loads(lb)
        same_structure &= ja["linex_index"] == jb["linex_index"] and len(ja["features"]) == len(jb["features"])
        for fa, fb in zip(ja["features"], jb["features"]):
            tokens_equal &= fa["token"] == fb["token"]
            same_structure &= [l["index"] for l in fa["layers"]] == [l["index"] for l in fb["layers"]]
            va = np.array([l["values"] for l in fa["layers"]], np.float64)
            vb = np.array([l["values"] for l in fb["layers"]], np.float64)
            if va.shape != vb.shape:
                same_structure = False
                continue
            floats += va.size
            max_diff = max(max_diff, float(np.abs(va - vb).max()) if va.size else 0.0)
    return {"lines": [len(lines_a), len(lines_b)], "floats_compared": floats,
            "max_abs_diff": max_diff, "within_2e-5": max_diff <= 2e-5,
            "tokens_equal": bool(tokens_equal) and len(lines_a) == len(lines_b),
            "same_structure": bool(same_structure),
            "bytes_equal": open(ours_path, "rb").read() == open(other_path, "rb").read()}


def run_child(cmd, env):
    """Runs one peer process; returns (wall seconds, CPU seconds user + sys of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-5:]
        raise SystemExit(f"{cmd[:3]} failed (exit {done.returncode}):\n" + "\n".join(tail))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--lines", type=int, default=400)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--start_up_rounds", type=int, default=None, help="default: --rounds")
    p.add_argument("--rows", default="whole_process,start_up_1_line",
                   help="which rows to run (comma-separated)")
    p.add_argument("--python_writer", action="store_true",
                   help="add the peer ours_python_writer (the original's per-float writer in this tree)")
    p.add_argument("--no_original", action="store_true", help="skip the original script")
    p.add_argument("--before_tree", default=None,
                   help="another checkout of bert_tf (e.g. /work/main): peer ours_before, its "
                        "extract_features.py, to measure a lever (outputs compared too)")
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
    }
    if args.python_writer:
        peers["ours_python_writer"] = lambda inp, out: [sys.executable, "-c", PYTHON_WRITER,
                                                        f"--input_file={inp}", f"--output_file={out}"] + model_flags
    if args.before_tree:
        before = os.path.abspath(args.before_tree)
        peers["ours_before"] = lambda inp, out: [sys.executable, os.path.join(before, "extract_features.py"),
                                                 f"--input_file={inp}", f"--output_file={out}"] + model_flags
    original_python = os.environ.get("ORIGINAL_PYTHON", "/tmp/bert_tf_tf215/bin/python")
    original_dir = os.environ.get("BERT_ORIGINAL_DIR")
    original_note = None
    if args.no_original:
        original_note = "--no_original"
    elif not original_dir or not os.path.exists(os.path.join(original_dir, "extract_features.py")):
        original_note = f"BERT_ORIGINAL_DIR={original_dir!r} holds no extract_features.py"
    elif not os.path.exists(original_python):
        original_note = f"ORIGINAL_PYTHON={original_python} is missing (bash bench/original_venv.sh)"
    else:
        shim = os.path.join(HERE, "original_tf1_shim.py")
        orig_env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
        orig_env.pop("PYTHONPATH", None)
        peers["original"] = lambda inp, out: [original_python, shim,
                                              os.path.join(original_dir, "extract_features.py"),
                                              f"--input_file={inp}", f"--output_file={out}"] + model_flags
    if original_note:
        print(f"original peer skipped: {original_note}", flush=True)
    envs = {n: (orig_env if n == "original" else env) for n in peers}
    if args.before_tree:
        envs["ours_before"] = dict(env, PYTHONPATH=os.path.abspath(args.before_tree))
    info = {"machine": machine(), "lines": args.lines, "peers": list(peers),
            "original_python": original_python if "original" in peers else None,
            "original_skipped": original_note,
            "model_flags": model_flags[3:]}
    for name, lines, rounds in (("whole_process", args.lines, args.rounds),
                                ("start_up_1_line", 1, args.start_up_rounds or args.rounds)):
        if name not in args.rows.split(","):
            continue
        inp = os.path.join(work, f"input_{lines}.txt")
        write_input(inp, lines)
        wall = {n: [] for n in peers}
        cpu = {n: [] for n in peers}
        outputs = {}
        names = list(peers)
        for r in range(rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                out = os.path.join(work, f"{name}_{n}.jsonl")
                w, c = run_child(peers[n](inp, out), envs[n])
                wall[n].append(w)
                cpu[n].append(c)
                outputs[n] = out
                print(f"{name} round {r} {n}: {w:.1f} s wall, {c:.1f} s CPU", flush=True)
        entry = {
            "wall_seconds": {n: summarize(v) for n, v in wall.items()},
            "cpu_seconds": {n: summarize(v) for n, v in cpu.items()},
            "ratio_peer_over_ours_wall": {n: summarize(np.array(v) / np.array(wall["ours"]))
                                          for n, v in wall.items() if n != "ours"},
            "ratio_peer_over_ours_cpu": {n: summarize(np.array(v) / np.array(cpu["ours"]))
                                         for n, v in cpu.items() if n != "ours"},
        }
        if "ours_python_writer" in peers:
            entry["ours_bytes_equal_python_writer"] = (
                open(outputs["ours"], "rb").read() == open(outputs["ours_python_writer"], "rb").read())
        if "ours_before" in peers:
            entry["ours_bytes_equal_ours_before"] = (
                open(outputs["ours"], "rb").read() == open(outputs["ours_before"], "rb").read())
        if "original" in peers:
            entry["ours_vs_original_output"] = compare_outputs(outputs["ours"], outputs["original"])
        info[name] = entry
        print(name, json.dumps(entry, indent=1), flush=True)
    info["load_average_at_end"] = os.getloadavg()[0]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
