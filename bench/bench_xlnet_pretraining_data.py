"""XLNet pretraining records per second: bert_tf (1 and 2 worker processes) vs a plain-Python
restatement of the original data_utils.py loop, on the same few MB of real text.

The restatement keeps the original's structure (Python lists while encoding, ``IdToPiece`` for
every position inside ``_sample_mask``); it is checked to give the same records as ours before
it is timed. Peers alternate in rounds; ratios are median (min-max) over the rounds.

    python bench/bench_xlnet_pretraining_data.py [--megabytes 3] [--rounds 3]

Writes bench/results/xlnet_pretraining_data.json.
"""

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import types

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
SHARED = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared",
                                                             "data"))

from bert_tf.xlnet.data import pretraining as xp  # noqa: E402
from bert_tf.tokenization.sentencepiece_prepro import (encode_ids, load_sp_model,  # noqa: E402
                                                       preprocess_text)


def corpus(path, megabytes):
    """MRPC + STS-B sentences, 8 a document, repeated up to ``megabytes``."""
    import csv

    lines = []
    for name, cols in (("MRPC/train.tsv", ["#1 String", "#2 String"]),
                       ("STS-B/train.tsv", ["sentence1", "sentence2"])):
        with open(os.path.join(SHARED, name), encoding="utf-8-sig") as f:
            rows = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            header = next(rows)
            idx = [header.index(c) for c in cols]
            lines += [r[i].strip() for r in rows for i in idx if i < len(r) and r[i].strip()]
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        while size < megabytes * 1e6:
            for i, line in enumerate(lines):
                f.write(line + "\n" + ("\n" if i % 8 == 7 else ""))
                size += len(line) + 1
                if size >= megabytes * 1e6:
                    break


def plain_python_records(path, sp, args, py_rng):
    """The original loop restated in plain Python (lists, IdToPiece per position)."""
    ids, sent_ids, sent_id = [], [], True
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                sent_id = not sent_id
                cur = [xp.EOD_ID]
            else:
                cur = encode_ids(sp, preprocess_text(line.strip(), lower=args.uncased))
            ids.extend(cur)
            sent_ids.extend([sent_id] * len(cur))
            sent_id = not sent_id
    np_rng = np.random.RandomState(0)
    np_rng.permutation(1)
    rows, row_sent = xp.stream_rows(np.array(ids, np.int64), np.array(sent_ids, bool),
                                    args.bsz_per_host, 1, args.bi_data)

    def sample_mask(seg, reverse, goal):
        seg_len = len(seg)
        mask = np.array([False] * seg_len)
        ngrams = np.arange(1, 6, dtype=np.int64)
        pvals = 1. / np.arange(1, 6)
        pvals /= pvals.sum(keepdims=True)
        if reverse:
            seg = np.flip(seg, 0)
        num_predict = cur_len = 0
        while cur_len < seg_len:
            if num_predict >= goal:
                break
            n = min(np_rng.choice(ngrams, p=pvals), goal - num_predict)
            ctx = (n * args.mask_alpha) // args.mask_beta
            l_ctx = np_rng.choice(ctx)
            beg = cur_len + l_ctx
            while beg < seg_len and not xp.is_start_piece(sp.IdToPiece(seg[beg].item())):
                beg += 1
            if beg >= seg_len:
                break
            end, cnt = beg + 1, 1
            while end < seg_len:
                if xp.is_start_piece(sp.IdToPiece(seg[beg].item())):
                    cnt += 1
                    if cnt > n:
                        break
                end += 1
            if end >= seg_len:
                break
            mask[beg:end] = True
            num_predict += end - beg
            cur_len = end + ctx - l_ctx
        while num_predict < goal:
            i = np_rng.randint(seg_len)
            if not mask[i]:
                mask[i] = True
                num_predict += 1
        return np.flip(mask, 0) if reverse else mask

    out, i = [], 0
    sep, cls = np.array([xp.SEP_ID]), np.array([xp.CLS_ID])
    n1 = args.num_predict // 2
    while i + args.seq_len <= rows.shape[1]:
        batch = []
        for idx in range(args.bsz_per_host):
            split = xp.split_a_and_b(rows[idx], row_sent[idx], i + args.reuse_len,
                                     args.seq_len - args.reuse_len - 3, py_rng)
            if split is None:
                return out
            a, b, label, _, _ = split
            reverse = args.bi_data and (idx // (args.bsz_per_host // 2)) % 2 == 1
            m0 = sample_mask(rows[idx, i:i + args.reuse_len], reverse, args.num_predict - n1)
            m1 = sample_mask(np.concatenate([a, sep, b, sep, cls]), reverse, n1)
            batch.append(np.concatenate([m0, m1]).astype(np.int64).tolist())
        out.extend(batch)
        i += args.reuse_len
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--megabytes", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    work = tempfile.mkdtemp()
    text = os.path.join(work, "corpus.txt")
    corpus(text, opts.megabytes)
    sp_path = os.path.join(SHARED, "xlnet", "spiece.model")
    sp = load_sp_model(sp_path)
    base = dict(use_tpu=False, bsz_per_host=16, num_core_per_host=1, seq_len=128, reuse_len=64,
                uncased=False, bi_data=True, mask_alpha=6, mask_beta=1, use_eod=True,
                from_raw_text=True, num_predict=21, input_glob=text, sp_path=sp_path,
                split="train", pass_id=0, num_task=1, task=0, num_passes=1)

    def ours(workers):
        args = types.SimpleNamespace(**base, num_workers=workers,
                                     save_dir=os.path.join(work, f"ours{workers}"))
        infos = xp.create_data(args, sp, random.Random(1))
        return infos[0]["num_batch"] * args.bsz_per_host

    def plain():
        return len(plain_python_records(text, sp, types.SimpleNamespace(**base), random.Random(1)))

    # Same records first (is_masked of the first 64 rows).
    from bert_tf.data.tfrecord import read_examples
    n = ours(1)
    path = os.path.join(work, "ours1", "tfrecords", xp.record_names(
        types.SimpleNamespace(**base), 0)[0])
    mine = [r["is_masked"] for _, r in zip(range(64), read_examples(path))]
    theirs = plain_python_records(text, sp, types.SimpleNamespace(**base), random.Random(1))
    assert mine == theirs[:64] and len(theirs) == n, "plain restatement differs"

    times = {"ours_1_worker": [], "ours_2_workers": [], "plain_python": []}
    for _ in range(opts.rounds):
        for name, fn in (("ours_1_worker", lambda: ours(1)), ("ours_2_workers", lambda: ours(2)),
                         ("plain_python", plain)):
            start = time.perf_counter()
            records = fn()
            times[name].append(records / (time.perf_counter() - start))

    def ratio(a, b):
        r = [x / y for x, y in zip(times[a], times[b])]
        return {"median": round(statistics.median(r), 2), "min": round(min(r), 2),
                "max": round(max(r), 2)}

    result = {
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs",
        "corpus_megabytes": opts.megabytes, "records": n,
        "records_per_second": {k: [round(v, 1) for v in vs] for k, vs in times.items()},
        "ours_1_worker_vs_plain_python": ratio("ours_1_worker", "plain_python"),
        "ours_2_workers_vs_1_worker": ratio("ours_2_workers", "ours_1_worker"),
    }
    text_out = json.dumps(result, indent=2) + "\n"
    print(text_out)
    with open(os.path.join(REPO, "bench", "results", "xlnet_pretraining_data.json"), "w") as f:
        f.write(text_out)


if __name__ == "__main__":
    main()
