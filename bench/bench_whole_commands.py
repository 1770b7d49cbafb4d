"""The users' whole commands, side by side in one run (issue 25 item 3): this tree vs the
ORIGINAL google-research/bert scripts (unchanged, under the TF 2.15 venv through
``bench/original_tf1_shim.py``), each a fresh process per round, rounds interleaved in rotating
order.

    BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_whole_commands.py
        [--rows predict,extract,squad,train] [--rounds 3] [--train_rounds 3]
        [--peers ours,original,hf] [--torch_python VENV/bin/python]

Model: the embedded MiniLM default (all-MiniLM-L6-v2 in the original layout, converted into the
bert_tf cache first, outside the timings); both peers get the same ``--vocab_file``,
``--bert_config_file``, ``--init_checkpoint`` and flags. Rows (data: ``../shared/data``):

* ``predict``: ``run_classifier.py --task_name=MRPC --do_predict`` on the first ``--pairs`` (400)
  real MRPC test pairs, ``--max_seq_length=128 --predict_batch_size=8`` (the original's
  defaults). The classifier head is new (not in the checkpoint) and initialized differently by
  each side, so the probabilities are not compared; the row counts are.
* ``extract``: ``extract_features.py`` on ``--pairs`` MRPC dev pairs (``a ||| b`` lines),
  ``--layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8``; max abs difference of the values.
* ``squad``: ``run_squad.py --do_predict`` (SQuAD v1.1 layout) on the answerable questions of
  ``squad/normans-dev-v2.0.json`` (the one dev article stored here, ``is_impossible`` questions
  dropped), ``--max_seq_length=384 --doc_stride=128 --predict_batch_size=8``; the span head is
  new (random), so the answers are not compared.
* ``train``: ``run_classifier.py --task_name=MRPC --do_train --do_eval`` on the real MRPC train
  and dev sets, one epoch (``--num_train_epochs``), ``--train_batch_size=32
  --learning_rate=2e-5 --max_seq_length=128``; dev accuracy of both reported.
* ``ours_group``: with ``--peers`` naming it, ``train`` also runs ours with ``--group_by_length``.
* ``ours_before``: with ``--before_tree`` and ``--peers`` naming it, that checkout's scripts (the
  tree before a lever), the same flags; ``ours_before_bf16``: those with ``--dtype=bfloat16``.
* ``hf`` (every row): HF transformers' PyTorch model doing the same
  work in a process of ``--torch_python`` (torch and transformers, no TensorFlow):
  ``bench/hf_torch_whole.py`` on a HF folder that ``bert_tf.convert.original_to_hf`` writes
  once from the same MiniLM checkpoint (outside the timings); fp32, torch's default threads,
  batches of 8 padded to their longest row, pairs truncated to 128 tokens. ``extract``: the
  same JSON lines (the same TensorFlow-free formatter), max abs difference to ours.
  ``squad``: the windows and n-best spans of transformers' ``run_qa.py`` example;
  ``train``: a plain torch fine-tuning loop (AdamW, linear warmup 10%, clipping 1.0) then the
  dev accuracy; ``hf_torch_whole.py`` says how each is done.
  ``hf_1thread``: the same with ``OMP_NUM_THREADS=1`` (on a shared 2-vCPU machine torch's
  spinning OpenMP threads lose most when the other core is busy). ``hf_bf16``: under
  ``torch.autocast("cpu", bfloat16)``, run only where ``lscpu`` lists ``amx_bf16`` or
  ``avx512_bf16`` (as ``ours_bf16``; else left out, said in the JSON).
* ``ours_bf16``: with ``--peers`` naming it, ours with ``--dtype=bfloat16`` (every row), run
  only where ``lscpu`` lists ``amx_bf16`` or ``avx512_bf16`` (native bf16 dot products;
  elsewhere bf16 is emulated and its speed means nothing: left out, said in the JSON). The
  JSON's ``bf16_hardware`` says which.
* ``original_onednn``: with ``--peers`` naming it, the original with ``TF_ENABLE_ONEDNN_OPTS=1``
  (bert_tf's default since issue 25; TensorFlow's own default is off on CPUs without AVX-512
  VNNI / AMX). Every child gets the environment this script was started with (not what
  importing bert_tf adds to it).

Per peer and round: wall seconds and the child's CPU seconds (``getrusage(RUSAGE_CHILDREN)``
user + sys); ratios original / ours per round, median (min-max) (and peer / ``ours_bf16``
where that peer ran). Writes
``bench/results/whole_commands.json`` (after every row) with the machine and load.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.path.join(REPO, "..", "..", "shared", "data")
if not os.path.isdir(SHARED):
    SHARED = os.environ.get("BERT_TF_SHARED_DATA", "/work/shared/data")


def summarize(values):
    v = np.asarray(values, np.float64)
    return {"median": float(np.median(v)), "min": float(v.min()), "max": float(v.max()),
            "rounds": int(v.size)}


def run_child(cmd, env, cwd=REPO):
    """Runs one peer process; returns (wall s, CPU s user + sys of the child, stderr text)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    text = done.stderr.decode("utf-8", "replace") + done.stdout.decode("utf-8", "replace")
    if done.returncode:
        tail = text.strip().splitlines()[-8:]
        raise SystemExit(f"{cmd[:3]} failed (exit {done.returncode}):\n" + "\n".join(tail))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, text


def write_inputs(work, pairs):
    """The predict data dir (header + ``pairs`` MRPC test rows), the extract_features input
    and the SQuAD v1.1-layout file (answerable questions of the stored v2.0 article)."""
    mrpc = os.path.join(SHARED, "MRPC")
    pred_dir = os.path.join(work, "mrpc_predict")
    os.makedirs(pred_dir, exist_ok=True)
    with open(os.path.join(mrpc, "test.tsv"), encoding="utf-8") as f:
        lines = f.readlines()[:pairs + 1]
    with open(os.path.join(pred_dir, "test.tsv"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    with open(os.path.join(mrpc, "dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f.readlines()[1:pairs + 1]]
    extract_input = os.path.join(work, "extract_input.txt")
    with open(extract_input, "w", encoding="utf-8") as f:
        f.writelines(f"{r[3]} ||| {r[4]}\n" for r in rows)
    with open(os.path.join(SHARED, "squad", "normans-dev-v2.0.json"), encoding="utf-8") as f:
        squad = json.load(f)
    questions = 0
    for article in squad["data"]:
        for para in article["paragraphs"]:
            para["qas"] = [{"id": q["id"], "question": q["question"], "answers": q["answers"]}
                           for q in para["qas"] if not q.get("is_impossible")]
            questions += len(para["qas"])
    squad_file = os.path.join(work, "squad_v11_subset.json")
    with open(squad_file, "w", encoding="utf-8") as f:
        json.dump({"version": "1.1", "data": squad["data"]}, f)
    return pred_dir, extract_input, squad_file, questions


def row_commands(row, model_flags, paths, out_dir, epochs):
    """Script name and flags of one row (the same for every peer)."""
    pred_dir, extract_input, squad_file = paths
    if row == "predict":
        return "run_classifier.py", ["--task_name=MRPC", "--do_predict=true",
                                     f"--data_dir={pred_dir}", f"--output_dir={out_dir}",
                                     "--max_seq_length=128", "--predict_batch_size=8"] + model_flags
    if row == "extract":
        return "extract_features.py", [f"--input_file={extract_input}",
                                       f"--output_file={out_dir}/features.jsonl",
                                       "--layers=-1,-2,-3,-4", "--max_seq_length=128",
                                       "--batch_size=8"] + model_flags
    if row == "squad":
        return "run_squad.py", ["--do_predict=true", f"--predict_file={squad_file}",
                                f"--output_dir={out_dir}", "--max_seq_length=384",
                                "--doc_stride=128", "--predict_batch_size=8",
                                "--do_lower_case=true"] + model_flags
    if row == "train":
        return "run_classifier.py", ["--task_name=MRPC", "--do_train=true", "--do_eval=true",
                                     f"--data_dir={os.path.join(SHARED, 'MRPC')}",
                                     f"--output_dir={out_dir}", "--max_seq_length=128",
                                     "--train_batch_size=32", "--learning_rate=2e-5",
                                     f"--num_train_epochs={epochs}"] + model_flags
    raise ValueError(row)


def row_outputs(row, out_dir):
    """What each row left: counts / accuracy, for the JSON."""
    if row == "predict":
        with open(os.path.join(out_dir, "test_results.tsv"), encoding="utf-8") as f:
            return {"predictions": sum(1 for _ in f)}
    if row == "extract":
        with open(os.path.join(out_dir, "features.jsonl"), encoding="utf-8") as f:
            return {"lines": sum(1 for _ in f)}
    if row == "squad":
        with open(os.path.join(out_dir, "predictions.json"), encoding="utf-8") as f:
            return {"answers": len(json.load(f))}
    with open(os.path.join(out_dir, "eval_results.txt"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"eval_accuracy = ([0-9.]+)", text)
    return {"eval_accuracy": float(m.group(1)) if m else None}


def extract_diff(a, b):
    """(max abs difference of every value, lines whose tokens differ) of two extract_features
    JSONL files; a line whose token lists differ is counted and not compared."""
    diff, other_tokens = 0.0, 0
    with open(a, encoding="utf-8") as fa, open(b, encoding="utf-8") as fb:
        for la, lb in zip(fa, fb):
            fa_, fb_ = json.loads(la)["features"], json.loads(lb)["features"]
            if [x["token"] for x in fa_] != [y["token"] for y in fb_]:
                other_tokens += 1
                continue
            for x, y in zip(fa_, fb_):
                va = np.array([l["values"] for l in x["layers"]])
                vb = np.array([l["values"] for l in y["layers"]])
                diff = max(diff, float(np.abs(va - vb).max()))
    return diff, other_tokens


HF_PEERS = ("hf", "hf_1thread", "hf_bf16")
HF_ROWS = ("extract", "predict", "squad", "train")


def bf16_hardware():
    """``"amx_bf16"``, ``"avx512_bf16 (no AMX)"`` or None: the native bf16 matmul units
    ``lscpu`` lists (peer ``ours_bf16`` runs only where there is one)."""
    simd = machine().get("simd", [])
    if "amx_bf16" in simd:
        return "amx_bf16"
    return "avx512_bf16 (no AMX)" if "avx512_bf16" in simd else None


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--rows", default="predict,extract,squad,train")
    p.add_argument("--peers", default="ours,original")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--train_rounds", type=int, default=None, help="default: --rounds")
    p.add_argument("--epochs", default="1.0", help="--num_train_epochs of the train row")
    p.add_argument("--pairs", type=int, default=400)
    p.add_argument("--before_tree", default=None,
                   help="another checkout (e.g. this branch's base): peer ours_before, its "
                        "scripts, to measure a lever")
    p.add_argument("--torch_python", default=os.environ.get("TORCH_PYTHON"),
                   help="python with torch and transformers (peers hf, hf_1thread, hf_bf16; "
                        "e.g. python3 -m venv V && V/bin/pip install torch==2.13.0 "
                        "transformers numpy); default $TORCH_PYTHON")
    p.add_argument("--out", default=os.path.join(HERE, "results", "whole_commands.json"))
    args = p.parse_args(argv)
    # the children's environment as the user gave it: importing bert_tf sets defaults in
    # os.environ (TF_ENABLE_ONEDNN_OPTS, TF_CPP_MIN_LOG_LEVEL) that the original must not
    # inherit (issue 25: oneDNN is bert_tf's default, not the original's)
    user_env = dict(os.environ)
    sys.path.insert(0, REPO)
    from bert_tf import defaults
    model = defaults.default_model()  # convert once, outside the timings
    model_flags = [f"--vocab_file={model.vocab_file}", f"--bert_config_file={model.bert_config_file}",
                   f"--init_checkpoint={model.init_checkpoint}"]
    work = tempfile.mkdtemp(prefix="bench_wc_")
    pred_dir, extract_input, squad_file, questions = write_inputs(work, args.pairs)
    paths = (pred_dir, extract_input, squad_file)
    env = dict(user_env, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    original_python = os.environ.get("ORIGINAL_PYTHON", "/tmp/bert_tf_tf215/bin/python")
    original_dir = os.environ.get("BERT_ORIGINAL_DIR", "/tmp/orig_bert")
    orig_env = dict(user_env, TF_CPP_MIN_LOG_LEVEL="2")
    orig_env.pop("PYTHONPATH", None)
    shim = os.path.join(HERE, "original_tf1_shim.py")
    peers = args.peers.split(",")
    if any(n.startswith("ours_before") for n in peers) and not args.before_tree:
        raise SystemExit("--peers names ours_before: give --before_tree")
    if any(n in HF_PEERS for n in peers) and not args.torch_python:
        raise SystemExit("--peers names an HF peer: give --torch_python (or $TORCH_PYTHON)")
    left_out = {}
    for peer in ("hf_bf16", "ours_bf16", "ours_before_bf16"):
        if peer in peers and not bf16_hardware():
            peers.remove(peer)
            left_out[peer] = "lscpu lists neither amx_bf16 nor avx512_bf16: bf16 is emulated"
    hf_dir = None
    if any(n in HF_PEERS for n in peers):
        from bert_tf.convert import original_to_hf
        hf_dir = os.path.join(work, "hf_minilm")  # the same weights, once, outside the timings
        original_to_hf(model.folder, hf_dir, do_lower_case=True)
        hf_env = {k: v for k, v in user_env.items() if k != "PYTHONPATH"}

    def command(peer, script, flags, row=None, out_dir=None):
        if peer in HF_PEERS:
            io = {"extract": [f"--input={extract_input}", f"--output={out_dir}/features.jsonl",
                              "--max_seq_length=128", "--layers=-1,-2,-3,-4"],
                  "predict": [f"--input={os.path.join(pred_dir, 'test.tsv')}",
                              f"--output={out_dir}/test_results.tsv", "--max_seq_length=128"],
                  "squad": [f"--input={squad_file}", f"--output={out_dir}/predictions.json",
                            "--max_seq_length=384", "--doc_stride=128"],
                  "train": [f"--input={os.path.join(SHARED, 'MRPC')}", f"--output={out_dir}",
                            "--max_seq_length=128", "--train_batch_size=32",
                            "--learning_rate=2e-5", f"--epochs={args.epochs}"]}[row]
            peer_env = dict(hf_env, OMP_NUM_THREADS="1") if peer == "hf_1thread" else hf_env
            return ([args.torch_python, os.path.join(HERE, "hf_torch_whole.py"), row,
                     f"--hf_dir={hf_dir}", "--batch_size=8"] + io
                    + (["--bf16"] if peer == "hf_bf16" else []), peer_env)
        if peer in ("original", "original_onednn"):
            peer_env = (dict(orig_env, TF_ENABLE_ONEDNN_OPTS="1") if peer == "original_onednn"
                        else orig_env)
            return [original_python, shim, os.path.join(original_dir, script)] + flags, peer_env
        extra = {"ours_group": ["--group_by_length=true"], "ours_bf16": ["--dtype=bfloat16"],
                 "ours_before_bf16": ["--dtype=bfloat16"]}.get(peer, [])
        if peer.startswith("ours_before"):
            before = os.path.abspath(args.before_tree)
            return ([sys.executable, os.path.join(before, script)] + flags + extra,
                    dict(env, PYTHONPATH=before))
        return [sys.executable, script] + flags + extra, env

    info = {"machine": machine(), "peers": peers,
            "TF_ENABLE_ONEDNN_OPTS_given": user_env.get("TF_ENABLE_ONEDNN_OPTS"), "pairs": args.pairs,
            "squad_questions": questions, "model": "all-MiniLM-L6-v2 (embedded default)",
            "original_python": original_python, "torch_python": args.torch_python if hf_dir else None,
            "peers_left_out": left_out, "bf16_hardware": bf16_hardware(), "rows": {}}
    for row in args.rows.split(","):
        rounds = args.train_rounds or args.rounds if row == "train" else args.rounds
        row_peers = [n for n in peers if (row == "train" or n != "ours_group")
                     and (row in HF_ROWS or n not in HF_PEERS)]
        wall = {n: [] for n in row_peers}
        cpu = {n: [] for n in row_peers}
        outputs, dirs = {}, {}
        for r in range(rounds):
            for n in row_peers[r % len(row_peers):] + row_peers[:r % len(row_peers)]:
                out_dir = os.path.join(work, f"{row}_{n}")
                shutil.rmtree(out_dir, ignore_errors=True)
                os.makedirs(out_dir)
                script, flags = row_commands(row, model_flags, paths, out_dir, args.epochs)
                cmd, cmd_env = command(n, script, flags, row, out_dir)
                w, c, _ = run_child(cmd, cmd_env)
                wall[n].append(w)
                cpu[n].append(c)
                outputs[n] = row_outputs(row, out_dir)
                dirs[n] = out_dir
                print(f"{row} round {r} {n}: {w:.1f} s wall, {c:.1f} s CPU {outputs[n]}",
                      flush=True)
            # written after every round: a run cut short keeps the rounds it finished
            info["rows"][row] = row_entry(wall, cpu, outputs)
            compared = ("original", "ours_bf16", "ours_before_bf16") + HF_PEERS
            for other in compared if row == "extract" else ():
                if other in dirs:
                    diff, other_tokens = extract_diff(
                        os.path.join(dirs["ours"], "features.jsonl"),
                        os.path.join(dirs[other], "features.jsonl"))
                    info["rows"][row][f"max_abs_diff_ours_vs_{other}"] = diff
                    info["rows"][row][f"lines_with_other_tokens_ours_vs_{other}"] = other_tokens
            info["load_average_at_end"] = os.getloadavg()[0]
            os.makedirs(os.path.dirname(args.out), exist_ok=True)
            with open(args.out, "w") as f:
                json.dump(info, f, indent=2)
        print(row, json.dumps(info["rows"][row], indent=1), flush=True)


def row_entry(wall, cpu, outputs):
    """Wall / CPU seconds per peer (and per round) and the ratios peer / ours, median (min-max)
    over rounds; with ``ours_bf16`` also the ratios peer / ours_bf16."""
    done = {n: len(v) for n, v in wall.items()}
    k = min(done.values())
    entry = {"wall_seconds": {n: summarize(v) for n, v in wall.items()},
             "cpu_seconds": {n: summarize(v) for n, v in cpu.items()},
             "cpu_seconds_per_round": {n: list(v) for n, v in cpu.items()},
             "wall_seconds_per_round": {n: list(v) for n, v in wall.items()}}
    for base in ("ours", "ours_bf16"):  # ratios to ours, and to ours in bf16 where it ran
        if base not in cpu:
            continue
        suffix = "" if base == "ours" else "_bf16"
        entry[f"ratio_peer_over_ours{suffix}_wall"] = {
            n: summarize(np.array(v[:k]) / np.array(wall[base][:k]))
            for n, v in wall.items() if n != base}
        entry[f"ratio_peer_over_ours{suffix}_cpu"] = {
            n: summarize(np.array(v[:k]) / np.array(cpu[base][:k]))
            for n, v in cpu.items() if n != base}
    entry["outputs_last_round"] = dict(outputs)
    return entry

if __name__ == "__main__":
    main()
