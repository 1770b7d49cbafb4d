"""Prints issue 25's bfloat16 rows from the JSON files ``bench/bf16_rows.sh TAG`` wrote.

    python bench/bf16_rows_table.py TAG

Each row: median (min-max) over rounds, CPU seconds (all threads of each process; on a shared
machine less noisy than wall), the goal beside it, and the machine and load of the run. A file
that is missing is said in its row (that step did not run).
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")


def load(name):
    path = os.path.join(RESULTS, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def fmt(s, pct=False):
    """``median (min-max)`` of a summary dict; None -> "-"."""
    if not s:
        return "-"
    if pct:
        return f"{100 * s['median']:.0f}% ({100 * s['min']:.0f}-{100 * s['max']:.0f}%)"
    return f"{s['median']:.2f} ({s['min']:.2f}-{s['max']:.2f})"


def machine_line(d):
    m = d.get("machine", {})
    simd = m.get("simd", [])
    amx = "amx_bf16" if "amx_bf16" in simd else ("avx512_bf16, no AMX" if "avx512_bf16" in simd
                                                else "no native bf16")
    return f"{m.get('model_name', '?')}, {m.get('cpus', '?')} CPUs, {amx}"


def main(tag):
    rows = []
    for shape, label in (("minilm", "MiniLM [32,128]"), ("base", "Base [8,128]")):
        d = load(f"encoder_peers_{shape}_bfloat16_{tag}.json")
        if d is None:
            rows.append((f"encoder bf16 {label}", "not run", ""))
            continue
        ratio = d.get("cpu_ratio_ours_over", {})
        share = d.get("cpu_share_of_ffn_matmul_limit", {}).get("ours")
        rows.append((f"encoder bf16 vs our fp32, {label}", fmt(ratio.get("float32")), ">= 3"))
        rows.append((f"encoder bf16 vs HF torch bf16 autocast, {label}",
                     fmt(ratio.get("hf_torch_bf16")), ">= 1.1"))
        rows.append((f"share of the bf16 matmul limit, {label}", fmt(share, pct=True), ">= 90%"))
        held = d.get("cpu_share_of_ffn_matmul_limit", {}).get("ours_held")
        if held:  # as predict and extract_features build it: kernels cast once
            speed = {n: s["median"] for n, s in d.get("cpu_gflop_per_cpu_s", {}).items()}
            rows.append((f"kernels held in bf16, share of the limit, {label}", fmt(held, pct=True),
                         ">= 90%"))
            for peer, name, goal in (("float32", "our fp32", ">= 3"),
                                     ("hf_torch_bf16", "HF torch bf16", ">= 1.1")):
                if peer in speed:
                    rows.append((f"kernels held in bf16 vs {name}, {label} (medians)",
                                 f"{speed['ours_held'] / speed[peer]:.2f}", goal))
        rows.append((f"bf16 vs fp32 outputs, {label}",
                     f"max {d.get('max_abs_diff_vs_float32', float('nan')):.4f}, mean "
                     f"{d.get('mean_abs_diff_vs_float32', float('nan')):.5f}", "stated"))
    d = load(f"train_step_peers_minilm_bf16_{tag}.json")
    if d is None:
        rows.append(("fine-tuning step bf16 vs fp32", "not run", ""))
    else:
        r = d.get("ratio_other_over_ours_bf16", {}).get("ours", {}).get("step_cpu_s")
        rows.append(("fine-tuning step MiniLM [32,128] bf16 vs our fp32", fmt(r), ">= 2"))
    d = load(f"whole_commands_bf16_{tag}.json")
    goals = {"predict": (">= 2", ">= 4"), "extract": (">= 5", "-"), "squad": (">= 2", "-"),
             "train": (">= 1.5", ">= 3")}
    if d is None:
        rows.append(("whole commands", "not run", ""))
    else:
        for row, entry in d.get("rows", {}).items():
            over_ours = entry.get("ratio_peer_over_ours_cpu", {})
            over_bf16 = entry.get("ratio_peer_over_ours_bf16_cpu", {})
            fp32_goal, bf16_goal = goals.get(row, ("-", "-"))
            rows.append((f"{row}: original / ours fp32", fmt(over_ours.get("original")), fp32_goal))
            rows.append((f"{row}: original / ours bf16", fmt(over_bf16.get("original")), bf16_goal))
            for hf in ("hf_1thread", "hf_bf16"):
                if hf in over_ours:
                    rows.append((f"{row}: {hf} / ours fp32", fmt(over_ours.get(hf)), ">= 1"))
                if hf in over_bf16:
                    rows.append((f"{row}: {hf} / ours bf16", fmt(over_bf16.get(hf)), ">= 1 (1.1 HF bf16)"))
    d = load(f"bf16_memory_{tag}.json")
    for name, entry in (d or {}).get("models", {}).items():
        rss = {p: entry[p]["peak_rss_gb"] for p in ("fp32", "bf16") if p in entry}
        rows.append((f"{name} extract_features peak RSS GB, bf16 / fp32",
                     f"{fmt(rss.get('bf16'))} / {fmt(rss.get('fp32'))}", "lighter"))
    machines = {machine_line(x) + f", load at end {x.get('load_average_at_end', float('nan')):.1f}"
                for x in (load(f"encoder_peers_minilm_bfloat16_{tag}.json"),
                          load(f"whole_commands_bf16_{tag}.json")) if x}
    print("| row (issue 25) | median (min-max), CPU s ratio | goal |")
    print("|---|---|---|")
    for name, value, goal in rows:
        print(f"| {name} | {value} | {goal} |")
    for m in sorted(machines):
        print(f"Machine: {m}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python bench/bf16_rows_table.py TAG")
    main(sys.argv[1])
