"""Real run of XLNet pretraining on CPU, with a kill and a resume, then STS-B fine-tuning.

1. Corpus: the real MRPC and STS-B sentences of ``../shared/data`` (train sets for training,
   dev sets held out), 8 sentences a document, written as data_utils.py input text.
2. Records through ``create_pretraining_data.py``'s XLNet path with the real 32k
   ``spiece.model`` (bsz_per_host 16, seq_len 128, reuse_len 64, num_predict 21, bi_data).
3. ``run_pretraining.py``'s XLNet path (a small XLNet: 4 layers, d_model 128, mem_len 64,
   perm_size 32) as a subprocess, killed with SIGKILL once ``model.ckpt-<kill_after>`` exists,
   then started again with the same command line: it resumes from the newest checkpoint.
4. The held-out LM loss of every checkpoint: the mean two-stream loss over the first
   ``eval_batches`` dev batches, with a fixed permutation and memory carried from zeros.
5. ``run_classifier.py``'s XLNet path on STS-B (bench/xlnet_stsb_real_run.py) from the last
   checkpoint, to compare with the from-scratch Pearson in bench/results.

    python bench/xlnet_pretraining_real_run.py --work_dir=/tmp/xlnet_pretrain

Writes bench/results/xlnet_pretraining_real_run.json and xlnet_pretraining_loss.png.
"""

import argparse
import glob
import json
import os
import signal
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
SPIECE = os.path.join(SHARED, "xlnet", "spiece.model")
MODEL = {"n_layer": 4, "d_model": 128, "n_head": 4, "d_head": 32, "d_inner": 512,
         "ff_activation": "gelu", "untie_r": True, "n_token": 32000}
DATA_FLAGS = ["--use_tpu=False", "--bsz_per_host=16", "--num_core_per_host=1", "--seq_len=128",
              "--reuse_len=64", "--uncased=False", "--bi_data=True", "--num_predict=21",
              f"--sp_path={SPIECE}", "--random_seed=1234"]


def run(cmd, **kwargs):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kwargs)


def held_out_losses(model_dir, dev_dir, eval_batches):
    import numpy as np
    import tensorflow as tf

    from bert_tf.xlnet.data.pretraining_input import (dataset_fn_builder, find_record_info,
                                                      make_parser)
    from bert_tf.xlnet.tasks.pretraining import Memory, pretraining_loss_fn
    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.config import RunConfig, XLNetConfig
    from bert_tf.xlnet.model import XLNetPretrainingModel

    info = find_record_info(dev_dir, "dev", 16, 128, 64, True, 6, 1, False, 21)
    perm = tf.constant(np.random.RandomState(0).permutation(32))
    parser = make_parser(128, 64, 32, 21, shuffle_fn=lambda index: tf.gather(index, perm))
    batches = list(dataset_fn_builder(info["filenames"], 16, parser)().take(eval_batches))
    config = XLNetConfig(**MODEL)
    model = XLNetPretrainingModel(config, RunConfig(mem_len=64, reuse_len=64, bi_data=True))
    model(batches[0], mems=[tf.zeros([16, 64, 128])] * 4)
    table = checkpoint_map.xlnet_variable_map(model)
    out = []
    prefixes = sorted(glob.glob(os.path.join(model_dir, "model.ckpt-*.index")),
                      key=lambda p: int(p.split("-")[-1].split(".")[0]))
    for index_file in prefixes:
        prefix = index_file[:-len(".index")]
        checkpoint_map.load_xlnet_checkpoint(table, prefix, require_all=True)
        memory = Memory(4, 16, 64, 128)
        loss_fn = pretraining_loss_fn(memory)
        step_fn = tf.function(lambda f: loss_fn(model, f))
        losses = [float(step_fn(b)) for b in batches]
        out.append({"step": int(prefix.split("-")[-1]), "held_out_loss": float(np.mean(losses))})
        print(out[-1], flush=True)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", default="/tmp/xlnet_pretraining_real_run")
    parser.add_argument("--train_steps", type=int, default=600)
    parser.add_argument("--save_steps", type=int, default=100)
    parser.add_argument("--kill_after", type=int, default=300)
    parser.add_argument("--eval_batches", type=int, default=20)
    parser.add_argument("--finetune_steps", type=int, default=400)
    args = parser.parse_args()
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    summary = {"model": MODEL}

    # 1-2. corpus and records
    train_txt, dev_txt = os.path.join(work, "train.txt"), os.path.join(work, "dev.txt")
    summary["train_sentences"] = write_corpus(train_txt, [
        (os.path.join(SHARED, "MRPC", "train.tsv"), ["#1 String", "#2 String"]),
        (os.path.join(SHARED, "STS-B", "train.tsv"), ["sentence1", "sentence2"])])
    summary["dev_sentences"] = write_corpus(dev_txt, [
        (os.path.join(SHARED, "MRPC", "dev.tsv"), ["#1 String", "#2 String"]),
        (os.path.join(SHARED, "STS-B", "dev.tsv"), ["sentence1", "sentence2"])])
    script = os.path.join(REPO, "create_pretraining_data.py")
    start = time.time()
    out = run([sys.executable, script, *DATA_FLAGS, f"--input_glob={train_txt}",
               f"--save_dir={work}/data", "--split=train", "--num_workers=2"],
              capture_output=True, text=True)
    summary["records_seconds"] = round(time.time() - start, 1)
    summary["records_train"] = out.stdout.strip()
    out = run([sys.executable, script, *DATA_FLAGS, f"--input_glob={dev_txt}",
               f"--save_dir={work}/dev", "--split=dev"], capture_output=True, text=True)
    summary["records_dev"] = out.stdout.strip()

    # 3. pretraining, killed once, resumed
    config_path = os.path.join(work, "xlnet_config.json")
    with open(config_path, "w") as f:
        json.dump(MODEL, f, indent=4, sort_keys=True)
    model_dir = os.path.join(work, "model")
    cmd = [sys.executable, os.path.join(REPO, "run_pretraining.py"),
           f"--record_info_dir={work}/data/tfrecords", f"--model_dir={model_dir}",
           f"--model_config_path={config_path}", "--train_batch_size=16", "--seq_len=128",
           "--reuse_len=64", "--mem_len=64", "--perm_size=32", "--num_predict=21",
           "--bi_data=True", f"--train_steps={args.train_steps}", "--iterations=50",
           f"--save_steps={args.save_steps}", "--learning_rate=4e-4", "--warmup_steps=50",
           "--dropout=0.1", "--dropatt=0.1", "--num_core_per_host=1"]
    print("+", " ".join(cmd), flush=True)
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    kill_mark = os.path.join(model_dir, f"model.ckpt-{args.kill_after}.index")
    while proc.poll() is None and not os.path.exists(kill_mark):
        time.sleep(0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    first = time.time() - start
    done = run(cmd, capture_output=True, text=True)
    summary["killed_after_checkpoint"] = args.kill_after
    summary["resumed"] = [line for line in done.stderr.splitlines()
                          if "Restor" in line or "resum" in line.lower()][:2]
    summary["pretrain_seconds"] = round(time.time() - start, 1)
    summary["pretrain_seconds_before_kill"] = round(first, 1)
    summary["pretrain_result"] = done.stdout.strip()

    # 4. held-out loss curve
    summary["held_out"] = held_out_losses(model_dir, f"{work}/dev/tfrecords", args.eval_batches)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([h["step"] for h in summary["held_out"]],
                [h["held_out_loss"] for h in summary["held_out"]], marker="o")
        ax.axvline(args.kill_after, color="gray", linestyle="--", label="kill -9 + resume")
        ax.set_xlabel("global step")
        ax.set_ylabel("held-out LM loss (nats)")
        ax.set_title("XLNet 4x128 pretraining on MRPC + STS-B (CPU)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(RESULTS, "xlnet_pretraining_loss.png"), dpi=100)
    except ImportError:
        print("matplotlib not installed: no plot")

    # 5. fine-tune STS-B from the pretrained checkpoint
    last = max(h["step"] for h in summary["held_out"])
    stsb_summary = os.path.join(work, "stsb_from_pretrained.json")
    run([sys.executable, os.path.join(REPO, "bench", "xlnet_stsb_real_run.py"),
         f"--work_dir={work}/stsb", f"--summary_file={stsb_summary}",
         f"--init_checkpoint={model_dir}/model.ckpt-{last}",
         f"--train_steps={args.finetune_steps}"], capture_output=True, text=True)
    with open(stsb_summary) as f:
        summary["stsb_from_pretrained"] = json.load(f)["best"]
    with open(os.path.join(RESULTS, "xlnet_stsb_real_run.json")) as f:
        summary["stsb_from_scratch"] = json.load(f)["best"]
    text = json.dumps(summary, indent=2) + "\n"
    print(text)
    with open(os.path.join(RESULTS, "xlnet_pretraining_real_run.json"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
