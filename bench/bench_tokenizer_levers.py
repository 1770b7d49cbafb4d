"""Benchmark: each lever of bert_tf's FullTokenizer fast path, switched off one at a time.

Not a test. How to run:  python bench/bench_tokenizer_levers.py [--rounds 5]

On the 28,858 MRPC+STS-B lines (bench_tokenizer.glue_lines), uncased vocab, a fresh tokenizer
per run, ``tokenize_to_ids`` per line. Variants (subclasses written here, same outputs: each
run's ids are checked against ``current``'s):
  current               FullTokenizer as it is
  no_ascii_shortcut     every new word goes through the exact per-word steps (translate
                        tables), not the printable-ASCII str.lower + regex shortcut
  translate_then_split  the line is cleaned by the translate table before str.split()
                        (the way before issue 16), not split raw
  no_basic_token_cache  no cache shared by the words' basic tokens (said / Said / said,)
Rounds interleaved, order rotating; reported: each variant's CPU time / current's, median
(min-max). Writes bench/results/tokenizer_levers.json.
"""
import argparse
import itertools
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_tokenizer import default_vocab, glue_lines, lscpu_model  # noqa: E402
from bert_tf.tokenization import wordpiece  # noqa: E402

RESULTS = os.path.join(HERE, "results", "tokenizer_levers.json")
_chain = itertools.chain.from_iterable


class NoAsciiShortcut(wordpiece.FullTokenizer):
    def _make_word_fn(self, of_basic):
        exact = self._exact_basic_tokens
        return lambda word: tuple(_chain(map(of_basic, exact(word))))


class TranslateThenSplit(wordpiece.FullTokenizer):
    def tokenize_to_ids(self, text):
        words = self.basic_tokenizer.split_words(wordpiece.convert_to_unicode(text))
        return list(_chain(map(self._word_ids, words)))


class NoBasicTokenCache(wordpiece.FullTokenizer):
    def _make_cache(self):
        super()._make_cache()
        self._ids_of_basic = self._uncached_basic_ids
        self._word_ids = wordpiece._WordCache(self._make_word_fn(self._ids_of_basic),
                                              self._cache_size).__getitem__


VARIANTS = {"current": wordpiece.FullTokenizer, "no_ascii_shortcut": NoAsciiShortcut,
            "translate_then_split": TranslateThenSplit,
            "no_basic_token_cache": NoBasicTokenCache}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    vocab_file = default_vocab()
    lines = glue_lines()
    names = list(VARIANTS)
    cpu = {n: [] for n in names}
    load_start = os.getloadavg()
    reference = None
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            tokenizer = VARIANTS[name](vocab_file)
            start = time.process_time()
            out = list(map(tokenizer.tokenize_to_ids, lines))
            cpu[name].append(time.process_time() - start)
            if reference is None:
                reference = out
            elif out != reference:
                raise SystemExit(f"variant {name} changed the ids")
    rows = {}
    for name in names:
        ratios = [a / b for a, b in zip(cpu[name], cpu["current"])]
        rows[name] = {"cpu_s_median": statistics.median(cpu[name]),
                      "time_vs_current": {"median": statistics.median(ratios),
                                          "min": min(ratios), "max": max(ratios)}}
        t = rows[name]["time_vs_current"]
        print(f"{name:<22} cpu {rows[name]['cpu_s_median']:.3f} s   time / current "
              f"{t['median']:.2f} ({t['min']:.2f}-{t['max']:.2f})")
    results = {"machine": {"lscpu_model": lscpu_model(), "cpus": os.cpu_count(),
                           "load_average_at_start": load_start,
                           "load_average_at_end": os.getloadavg()},
               "rounds": args.rounds, "lines": len(lines), "rows": rows}
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    tmp = RESULTS + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(tmp, RESULTS)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
