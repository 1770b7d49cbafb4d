"""Benchmark: run_classifier feature building (convert_examples_to_features, seq 128) with the
tf.text batch tokenization against per-line tokenization: is the batch path worth using there?

The batch peer hands convert_single_example a stand-in tokenizer of this script
(:class:`Pretokenized`) whose ``tokenize`` answers from ``tokenize_to_ids_batch`` of each chunk
of 8192 lines, as ids -> tokens. Measured: it does not win (0.7-0.9x), so bert_tf's
classifier keeps per-line tokenization; this script is the record of why.

Not a test. How to run (defaults give the issue 16 numbers):
    python bench/bench_classifier_features.py [--rounds 3]

Examples: MRPC train (3,668 pairs, 7,336 lines), MRPC + STS-B train/dev/test (14,429 pairs, 28,858 lines), from ../shared/data, and
those 4 times over (115,432 lines, a stand-in for a large task such as MNLI).
Each round builds a fresh FullTokenizer per peer, so the batch peer pays building its tf.text
tokenizer (as a run does); TF and tf.text are imported before timing (run_classifier has TF
loaded). Rounds interleaved (order alternating); ratio = per-line CPU / batch CPU per round,
median (min-max). Features are compared field by field (examples differing must be 0).
Writes bench/results/classifier_features.json with the lscpu model and the load average.
"""
import argparse
import json
import os
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))

import tensorflow  # noqa: E402,F401 (run_classifier has TF loaded)
import tensorflow_text  # noqa: E402,F401

from bench_tokenizer import default_vocab, lscpu_model  # noqa: E402
from bert_tf.data import classifier  # noqa: E402
from bert_tf.data import classifier_processors  # noqa: E402
from bert_tf.tokenization import wordpiece  # noqa: E402

DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
RESULTS = os.path.join(REPO, "bench", "results", "classifier_features.json")


def examples_of(tasks):
    out = []
    for task in tasks:
        processor = classifier_processors.get_processor(task)
        for getter in ("get_train_examples", "get_dev_examples", "get_test_examples")[
                :1 if task == "MRPC" and len(tasks) == 1 else 3]:
            out.extend(getattr(processor, getter)(os.path.join(DATA, task)))
    # One label for all (the STS-B scores and test rows do not matter: tokenization is timed).
    return [classifier.InputExample(e.guid, e.text_a, e.text_b, "0") for e in out]


CHUNK_LINES = 8192


def _example_texts(example):
    return [example.text_a, example.text_b] if example.text_b else [example.text_a]


class Pretokenized:
    """``tokenize(text)`` from one ``tokenize_to_ids_batch`` of ``texts`` (ids -> tokens);
    other attributes are the tokenizer's. Returns a new list (callers truncate in place)."""

    def __init__(self, tokenizer, texts):
        self._tokenizer = tokenizer
        unique = list(dict.fromkeys(texts))
        ids = tokenizer.tokenize_to_ids_batch(unique, use_tf_text=True)
        inv = tokenizer.inv_vocab.__getitem__
        self._tokens = {t: list(map(inv, i)) for t, i in zip(unique, ids)}

    def tokenize(self, text):
        tokens = self._tokens.get(text)
        return self._tokenizer.tokenize(text) if tokens is None else list(tokens)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


def batch_features(examples, tokenizer):
    """classifier.convert_examples_to_features with a :class:`Pretokenized` per chunk."""
    features, start = [], 0
    truncation = classifier.TruncationCount(128)
    while start < len(examples):
        end, texts = start, []
        while end < len(examples) and len(texts) < CHUNK_LINES:
            texts.extend(_example_texts(examples[end]))
            end += 1
        proxy = Pretokenized(tokenizer, texts)
        for i in range(start, end):
            features.append(classifier.convert_single_example(i, examples[i], ["0"], 128, proxy,
                                                              truncation))
        start = end
    return features


def med_range(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run(name, examples, vocab_file, rounds):
    cpu = {"per_line": [], "batch": []}
    differing = 0
    for r in range(rounds):
        outputs = {}
        for peer in (("per_line", "batch") if r % 2 == 0 else ("batch", "per_line")):
            tokenizer = wordpiece.FullTokenizer(vocab_file, do_lower_case=True)
            c = time.process_time()
            if peer == "batch":
                outputs[peer] = batch_features(examples, tokenizer)
            else:
                outputs[peer] = classifier.convert_examples_to_features(examples, ["0"], 128,
                                                                        tokenizer)
            cpu[peer].append(time.process_time() - c)
        differing = sum(vars(a) != vars(b) for a, b in zip(outputs["batch"], outputs["per_line"]))
    ratio = med_range([a / b for a, b in zip(cpu["per_line"], cpu["batch"])])
    lines = sum(len(_example_texts(e)) for e in examples)
    print(f"{name}: {len(examples)} examples, {lines} lines, {rounds} rounds: per-line "
          f"{statistics.median(cpu['per_line']):.3f} CPU s, batch "
          f"{statistics.median(cpu['batch']):.3f} CPU s (tf.text build included), ratio "
          f"{ratio['median']:.2f} ({ratio['min']:.2f}-{ratio['max']:.2f}), examples differing "
          f"{differing}")
    return {"examples": len(examples), "lines": lines, "cpu_s": {k: med_range(v) for k, v in
            cpu.items()}, "cpu_ratio_per_line_over_batch": ratio, "examples_differing": differing}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    vocab_file = default_vocab()
    results = {"machine": {"lscpu_model": lscpu_model(), "cpus": os.cpu_count(),
                           "load_average_at_start": os.getloadavg()}, "rounds": args.rounds}
    results["mrpc_train"] = run("mrpc_train", examples_of(["MRPC"]), vocab_file, args.rounds)
    both = examples_of(["MRPC", "STS-B"])
    results["mrpc_stsb_all"] = run("mrpc_stsb_all", both, vocab_file, args.rounds)
    # A stand-in for a large task (MNLI, QQP: 0.7-0.8M lines): the same lines 4 times.
    results["mrpc_stsb_all_x4"] = run("mrpc_stsb_all_x4", both * 4, vocab_file, args.rounds)
    results["machine"]["load_average_at_end"] = os.getloadavg()
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    tmp = RESULTS + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(tmp, RESULTS)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
