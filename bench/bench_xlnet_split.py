"""XLNet pre-training data: ``split_a_and_b`` on a row holding one long sentence, bert_tf's numpy
scans vs its former token-at-a-time loops (the original ``_split_a_and_b``'s structure; fresh
round 3 of issue 27, r3_xcpd_fsize: a 40,000-token line ran for minutes).

Both are called at the same begin positions (every ``--step`` tokens across the row, as the
writer steps by ``reuse_len``) with the same seeded Python ``random``; the outputs are checked
equal before timing. Peers alternate in rounds; the ratio is median (min-max) over the rounds.

    python bench/bench_xlnet_split.py [--sentence 40000] [--calls 200] [--rounds 3]

Writes bench/results/xlnet_split.json.
"""

import argparse
import json
import os
import random
import statistics
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))

from bert_tf.xlnet.data import pretraining as xp  # noqa: E402
from machine_info import machine  # noqa: E402
from tests.xlnet.data.test_pretraining import _original_split_a_and_b as loops  # noqa: E402


def row(sentence: int) -> np.ndarray:
    """sent_ids of a row: 20 short sentences, one of ``sentence`` tokens, 20 short ones."""
    lengths = [12] * 20 + [sentence] + [12] * 20
    return np.concatenate([np.full(n, i % 2 == 1) for i, n in enumerate(lengths)])


def run(fn, data, sent, begins, tot_len):
    rng = random.Random(0)
    start = time.perf_counter()
    out = [fn(data, sent, b, tot_len, rng) for b in begins]
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentence", type=int, default=40000)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--tot_len", type=int, default=16)  # seq_len 32 - reuse_len 16
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sent = row(args.sentence)
    data = np.arange(len(sent))
    begins = np.linspace(240, 240 + args.sentence - 1, args.calls).astype(int).tolist()
    _, ours = run(xp.split_a_and_b, data, sent, begins, args.tot_len)
    _, theirs = run(loops, data, sent, begins, args.tot_len)
    for a, b in zip(ours, theirs):
        assert (a is None) == (b is None)
        assert a is None or (a[2] == b[2] and all(
            x.tolist() == y.tolist() for x, y in zip(a[:2] + a[3:], b[:2] + b[3:])))
    times = {"numpy_scans": [], "token_loops": []}
    for _ in range(args.rounds):
        times["numpy_scans"].append(run(xp.split_a_and_b, data, sent, begins, args.tot_len)[0])
        times["token_loops"].append(run(loops, data, sent, begins, args.tot_len)[0])
    ratios = [t / n for t, n in zip(times["token_loops"], times["numpy_scans"])]
    result = {"machine": machine(), "sentence_tokens": args.sentence, "calls": args.calls,
              "tot_len": args.tot_len, "rounds": args.rounds, "seconds": times,
              "loops_over_scans_median": statistics.median(ratios),
              "loops_over_scans_min_max": [min(ratios), max(ratios)]}
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "xlnet_split.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
