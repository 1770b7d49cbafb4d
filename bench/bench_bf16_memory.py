"""Peak memory and CPU of bfloat16 feature extraction at official sizes (issue 25: bf16 kernels
cast once, not on every call).

    python bench/bench_bf16_memory.py [--models bert_large,xlnet_large] [--rounds 2] \
        [--before_tree DIR] [--work /tmp/official]

Runs our ``extract_features.py`` on the two 512-token MRPC lines of
``bench/bench_official_sizes.py`` (``<work>/runs/input.txt``, ``--max_seq_length=512
--batch_size=2``; BERT layers -1..-4, XLNet ``--layers=-1``) with that script's random
checkpoints of the released shapes (``<work>/<model>/``, built by ``bench_official_sizes.py
--build_only``), a fresh process per run, peers in a rotating order per round:

* ``fp32``: this tree, float32;
* ``bf16``: this tree, ``--dtype=bfloat16`` (BERT) / ``--use_bfloat16`` (XLNet): the matmul
  kernels held in bfloat16, cast once at the restore;
* ``before_bf16`` (with ``--before_tree``): that checkout's scripts with the same flag (e.g. a
  tree that casts the float32 kernels on every call: ff2e1ca for BERT, e7c7012 for XLNet).

Per run: peak RSS (``ru_maxrss`` from ``wait4``), wall and CPU seconds (the child's user +
system); per peer the median (min-max) over rounds, the ratios to ``bf16`` per round, and
whether the ``bf16`` and ``before_bf16`` outputs are the same bytes. Big runs hold
``$BERT_TF_BIG_LOCK`` as ``bench_official_sizes.py`` does. Writes ``--out``
(``bench/results/bf16_memory.json``) with the machine.
"""

import argparse
import filecmp
import json
import os
import sys
import tempfile

from bench_official_sizes import model_files, run_child, summarize
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def command(tree, name, work, output, dtype):
    """The extract_features command line of one peer (``dtype``: float32 or bfloat16)."""
    folder, config_path, prefix, vocab = model_files(name, work)
    common = [f"--input_file={os.path.join(work, 'runs', 'input.txt')}",
              f"--output_file={output}", "--max_seq_length=512", "--batch_size=2"]
    if name.startswith("bert"):
        flags = [f"--vocab_file={vocab}", f"--bert_config_file={config_path}",
                 f"--init_checkpoint={prefix}"] + (["--dtype=bfloat16"] if dtype == "bfloat16" else [])
    else:
        flags = [f"--model_config_path={config_path}", f"--spiece_model_file={vocab}",
                 f"--init_checkpoint={prefix}", "--layers=-1"] + (
                     ["--use_bfloat16"] if dtype == "bfloat16" else [])
    return [sys.executable, os.path.join(tree, "extract_features.py")] + common + flags


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--models", default="bert_large,xlnet_large")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--work", default="/tmp/official", help="bench_official_sizes.py's checkpoints")
    p.add_argument("--before_tree", default=None)
    p.add_argument("--out", default=os.path.join(HERE, "results", "bf16_memory.json"))
    args = p.parse_args(argv)
    peers = [("fp32", REPO, "float32"), ("bf16", REPO, "bfloat16")]
    if args.before_tree:
        peers.append(("before_bf16", os.path.abspath(args.before_tree), "bfloat16"))
    tmp = tempfile.mkdtemp(prefix="bench_bf16_memory_")
    info = {"machine": machine(), "rounds": args.rounds, "before_tree": args.before_tree,
            "command": "python bench/bench_bf16_memory.py " + " ".join(argv or sys.argv[1:]),
            "models": {}}
    for name in args.models.split(","):
        per = {peer: {"peak_rss_gb": [], "wall_s": [], "cpu_s": []} for peer, _, _ in peers}
        for r in range(args.rounds):
            order = peers[r % len(peers):] + peers[:r % len(peers)]
            for peer, tree, dtype in order:
                out = os.path.join(tmp, f"{name}_{peer}.jsonl")
                env = dict(os.environ, PYTHONPATH=tree, TF_CPP_MIN_LOG_LEVEL="2",
                           CUDA_VISIBLE_DEVICES="")
                wall, rss, cpu = run_child(command(tree, name, args.work, out, dtype), env,
                                           big=True, cwd=tree, cpu=True)
                per[peer]["peak_rss_gb"].append(rss)
                per[peer]["wall_s"].append(wall)
                per[peer]["cpu_s"].append(cpu)
                print(f"{name} round {r} {peer}: peak {rss:.2f} GB, {wall:.1f} s wall, "
                      f"{cpu:.1f} s CPU", flush=True)
        result = {peer: {k: summarize(v) for k, v in m.items()} for peer, m in per.items()}
        result["ratio_peer_over_bf16"] = {
            peer: {k: summarize([a / b for a, b in zip(per[peer][k], per["bf16"][k])])
                   for k in ("peak_rss_gb", "cpu_s")} for peer in per if peer != "bf16"}
        if args.before_tree:
            result["bf16_output_equals_before_bf16"] = filecmp.cmp(
                os.path.join(tmp, f"{name}_bf16.jsonl"),
                os.path.join(tmp, f"{name}_before_bf16.jsonl"), shallow=False)
        info["models"][name] = result
    info["load_average_at_end"] = os.getloadavg()[0]
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=1)
    print(json.dumps(info["models"], indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
