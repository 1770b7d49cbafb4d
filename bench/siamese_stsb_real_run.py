"""Real run of the Siamese (Sentence-BERT) mode on STS-B, from the embedded MiniLM.

1. Before: ``run_classifier.py --siamese=True --do_eval`` with the embedded default model
   (real all-MiniLM-L6-v2 in the original layout) as it is: Pearson / Spearman of the cosine
   similarity of its mean-pooled embeddings against the STS-B dev scores.
2. After: the same model trained ``--num_train_epochs`` (1) on the STS-B train set with the
   cosine-similarity regression objective (``--siamese=True --do_train --do_eval``), then the
   same dev figures.
3. Beside them the cross-encoder figure of ``run_classifier.py --task_name=sts-b`` (one epoch
   from the same model), measured earlier and quoted, not rerun.

    nice -n 10 python bench/siamese_stsb_real_run.py --work_dir=/tmp/siamese_real \
        [--max_seq_length 64 --batch_size 16 --learning_rate 2e-5 --epochs 1.0]

Writes bench/results/siamese_stsb_real_run.json.
"""

import argparse
import json
import os
import shutil
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
SHARED = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared",
                                                             "data"))
RESULTS = os.path.join(REPO, "bench", "results")
# run_classifier.py --task_name=sts-b from the embedded MiniLM, one epoch (cross-encoder),
# measured earlier in this project; quoted, not rerun.
CROSS_ENCODER_ONE_EPOCH = {"eval_pearson": 0.762, "eval_spearman": 0.770}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work_dir", default="/tmp/siamese_stsb_real_run")
    parser.add_argument("--data_dir", default=os.path.join(SHARED, "STS-B"))
    parser.add_argument("--max_seq_length", type=int, default=64)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--output", default=os.path.join(RESULTS, "siamese_stsb_real_run.json"))
    opts = parser.parse_args(argv)

    from absl import logging
    from bert_tf.bert.tasks.classifier import ClassifierArgs, run

    logging.set_verbosity(logging.INFO)
    if os.path.exists(opts.work_dir):
        shutil.rmtree(opts.work_dir)
    common = dict(task_name="sts-b", data_dir=opts.data_dir, siamese=True, do_eval=True,
                  max_seq_length=opts.max_seq_length, eval_batch_size=64)

    start = time.time()
    before = run(ClassifierArgs(output_dir=os.path.join(opts.work_dir, "before"), **common))
    before_s = time.time() - start

    start = time.time()
    after = run(ClassifierArgs(output_dir=os.path.join(opts.work_dir, "after"), do_train=True,
                               train_batch_size=opts.batch_size,
                               learning_rate=opts.learning_rate,
                               num_train_epochs=opts.epochs, save_checkpoints_steps=100000,
                               **common))
    after_s = time.time() - start

    def figures(result):
        return {k: round(float(result.eval_results[k]), 4)
                for k in ("eval_pearson", "eval_spearman", "eval_loss")}

    report = {
        "task": "STS-B (GLUE), train.tsv for training, dev.tsv (1500 pairs) for the figures",
        "model": "embedded default: all-MiniLM-L6-v2 in the original layout (tanh GELU)",
        "settings": {"max_seq_length": opts.max_seq_length, "train_batch_size": opts.batch_size,
                     "learning_rate": opts.learning_rate, "num_train_epochs": opts.epochs,
                     "warmup_proportion": 0.1, "objective": "MSE(cos(u, v), score / 5)",
                     "pooling": "mean"},
        "before_training": figures(before),
        "after_training": {**figures(after), "global_step": int(after.global_step),
                           "num_train_examples": after.num_train_steps * opts.batch_size},
        "cross_encoder_one_epoch_quoted": CROSS_ENCODER_ONE_EPOCH,
        "seconds": {"eval_before": round(before_s, 1), "train_and_eval": round(after_s, 1)},
        "machine": "2-core AMD EPYC, shared with other jobs (nice -n 10)",
    }
    os.makedirs(os.path.dirname(opts.output), exist_ok=True)
    with open(opts.output + ".tmp", "w", encoding="utf-8") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    os.replace(opts.output + ".tmp", opts.output)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
