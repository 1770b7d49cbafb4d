"""Real run of the XLNet run_classifier path: STS-B regression, a small XLNet from scratch.

Fine-tunes (from random init: no pretrained XLNet is available offline) a small XLNet config
on the real STS-B train set (5,749 pairs, ``../shared/data/STS-B``) with the real XLNet
SentencePiece model (``../shared/data/xlnet/spiece.model``, 32,000 pieces), then evaluates on
dev (1,500 pairs) and predicts the test set, through the same code as
``run_classifier.py --model_config_path=... --spiece_model_file=...``
(:func:`bert_tf.xlnet.tasks.classifier.run` on :func:`~bert_tf.xlnet.tasks.args.read_args`), with XLNet's original flags::

    python bench/xlnet_stsb_real_run.py --work_dir=/tmp/xlnet_stsb [--train_steps=400]

It prints the eval results (``eval_pearsonr`` also lands in ``<model_dir>/eval_results.txt``)
and the speed, and writes a summary JSON to ``--summary_file`` (default
``bench/results/xlnet_stsb_real_run.json``). CPU is enough (about 2 steps/s of batch 32 x 128
tokens on 2 cores).
"""

import json
import os
import sys
import time

from absl import flags, logging

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

from bert_tf import flags as bert_flags  # noqa: E402
from bert_tf.xlnet.tasks import classifier as xlnet_classifier  # noqa: E402
from bert_tf.atomic_files import atomic_write_text  # noqa: E402
from bert_tf.xlnet.tasks.args import XLNetClassifierArgs, read_args

SHARED_DATA = os.environ.get("BERT_TF_SHARED_DATA",
                             os.path.join(os.path.dirname(REPO_ROOT), "shared", "data"))
# A small XLNet (the released Base is n_layer 12, d_model 768, n_head 12, d_head 64).
SMALL_CONFIG = {"n_layer": 4, "d_model": 128, "n_head": 4, "d_head": 32, "d_inner": 512,
                "ff_activation": "gelu", "untie_r": True, "n_token": 32000}

bert_flags.define(*bert_flags.field_names(xlnet_classifier.XLNetClassifierArgs),
                  profile=bert_flags.XLNET_RUN_CLASSIFIER)
flags.DEFINE_string("work_dir", "/tmp/xlnet_stsb_real_run", "Folder for config, TFRecords, "
                    "checkpoints and predictions (bench only).")
flags.DEFINE_string("summary_file", os.path.join(REPO_ROOT, "bench", "results",
                                                 "xlnet_stsb_real_run.json"),
                    "Where the summary JSON goes (bench only).")
FLAGS = flags.FLAGS

# The run's flags unless given on the command line (XLNet's names and meaning).
RUN_DEFAULTS = dict(task_name="sts-b", is_regression=True, do_train=True, do_eval=True,
                    do_predict=True, eval_split="dev", max_seq_length=128, train_batch_size=32,
                    eval_batch_size=100, predict_batch_size=100, learning_rate=5e-4,
                    train_steps=400, warmup_steps=40, save_steps=200, eval_all_ckpt=True,
                    dropout=0.1, dropatt=0.1, num_core_per_host=1, iterations=50)


def main(_):
    logging.set_verbosity(logging.INFO)
    work = FLAGS.work_dir
    os.makedirs(work, exist_ok=True)
    config_path = os.path.join(work, "xlnet_config.json")
    with open(config_path, "w") as f:
        json.dump(SMALL_CONFIG, f, indent=4, sort_keys=True)
    for name, value in RUN_DEFAULTS.items():
        if not FLAGS[name].present:
            setattr(FLAGS, name, value)
    for name, value in (("model_config_path", config_path),
                        ("spiece_model_file", os.path.join(SHARED_DATA, "xlnet", "spiece.model")),
                        ("data_dir", os.path.join(SHARED_DATA, "STS-B")),
                        ("output_dir", os.path.join(work, "proc_data")),
                        ("model_dir", os.path.join(work, "model")),
                        ("predict_dir", os.path.join(work, "pred"))):
        if not FLAGS[name].present:
            setattr(FLAGS, name, value)
    start = time.time()
    result = xlnet_classifier.run(read_args(XLNetClassifierArgs, FLAGS))
    for line in result.summary_lines():
        print(line)
    seconds = time.time() - start
    best = result.best_eval
    summary = {
        "config": SMALL_CONFIG,
        "flags": {n: FLAGS[n].value for n in sorted(RUN_DEFAULTS)},
        "train_examples": 5749, "global_step": result.train.global_step,
        "last_train_loss": result.train.last_loss,
        "eval": [{k: v for k, v in r.items() if k != "path"} for r in result.eval_results],
        "best": {k: v for k, v in best.items() if k != "path"},
        "num_predictions": result.num_predictions,
        "wall_seconds": round(seconds, 1),
    }
    print(json.dumps(summary, indent=2))
    os.makedirs(os.path.dirname(FLAGS.summary_file), exist_ok=True)
    atomic_write_text(FLAGS.summary_file, json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    bert_flags.run_main(main)
