"""Real run of XLNet's run_squad.py (SQuAD 2.0) and run_race.py on CPU, through the root scripts.

Each run is a subprocess with the command line a user would type (XLNet's original flags):

1. SQuAD 2.0, the Normans article of ``../shared/data/squad/normans-dev-v2.0.json``: train on
   paragraphs 0-24 (answerable questions cut to their first answer, as README.md's BERT SQuAD
   run does), predict on paragraphs 25-38 with the threshold search
   (``<predict_dir>/eval_results.json``: ``best_exact``, ``best_f1``, their thresholds, and the
   official v2 metrics). Once from the XLNet checkpoint of the pretraining real run
   (``bench/xlnet_pretraining_real_run.py``: ``--pretrained``, default
   ``/tmp/xlnet_real/model/model.ckpt-200``; from scratch, said in the JSON, when it is
   absent) and once from scratch as the peer.
2. RACE on the golden RACE-format folder (``tests/golden/xlnet_squad/race/RACE/dev``: 14
   articles of real MRPC sentences, 34 questions): articles 1-10 become the ``train`` split
   (24 questions), 11-14 the ``dev`` split (10 questions), files copied unchanged. Train and
   eval (``--do_train --do_eval --eval_split=dev``), then a second eval of the same checkpoint
   on the train split (how well it fits what it saw), from the pretrained checkpoint and from
   scratch.

    nice -n 5 python bench/xlnet_squad_race_real_run.py --work_dir=/tmp/xlnet_squad_race

Writes bench/results/xlnet_squad_race_real_run.json (flags, steps, seconds, metrics).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO), "shared",
                                                             "data"))
RESULTS = os.path.join(REPO, "bench", "results")
SPIECE = os.path.join(SHARED, "xlnet", "spiece.model")
NORMANS = os.path.join(SHARED, "squad", "normans-dev-v2.0.json")
RACE_GOLDEN = os.path.join(REPO, "tests", "golden", "xlnet_squad", "race", "RACE", "dev")
# The model of the pretraining real run (bench/xlnet_pretraining_real_run.py).
MODEL = {"n_layer": 4, "d_model": 128, "n_head": 4, "d_head": 32, "d_inner": 512,
         "ff_activation": "gelu", "untie_r": True, "n_token": 32000}
SQUAD_FLAGS = ["--max_seq_length=192", "--doc_stride=64", "--max_query_length=64",
               "--max_answer_length=64", "--train_batch_size=8", "--learning_rate=3e-4",
               "--warmup_steps=10", "--save_steps=100", "--iterations=20",
               "--predict_batch_size=32", "--uncased=False", "--dropout=0.1", "--dropatt=0.1",
               "--num_core_per_host=1", "--random_seed=1234"]
RACE_FLAGS = ["--max_seq_length=128", "--max_qa_length=32", "--train_batch_size=4",
              "--eval_batch_size=2", "--learning_rate=1e-4", "--warmup_steps=10",
              "--save_steps=100", "--iterations=20", "--uncased=False", "--dropout=0.1",
              "--dropatt=0.1", "--num_core_per_host=1", "--random_seed=1234"]
LOSS_LINE = re.compile(r"global_step = (\d+), loss = ([0-9.eE+-]+), examples/sec = ([0-9.]+)")


def run(cmd, log_path):
    """Runs ``cmd`` (stdout + stderr to ``log_path``); returns (seconds, stdout, log text)."""
    print("+", " ".join(cmd), flush=True)
    start = time.time()
    out = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.time() - start
    with open(log_path, "w") as f:
        f.write(out.stdout + out.stderr)
    if out.returncode != 0:
        sys.exit(f"{cmd[1]} failed (exit {out.returncode}); last lines of {log_path}:\n"
                 + "\n".join(out.stderr.strip().splitlines()[-5:]))
    return seconds, out.stdout, out.stderr


def loss_curve(log_text):
    return [{"step": int(s), "loss": round(float(v), 4), "examples_per_sec": float(e)}
            for s, v, e in LOSS_LINE.findall(log_text)]


def normans_split(work):
    """The README's split: paragraphs 0-24 (first answers only) and 25-38."""
    with open(NORMANS, encoding="utf-8") as f:
        d = json.load(f)
    article = d["data"][0]
    train = json.loads(json.dumps(article["paragraphs"][:25]))
    for qa in (qa for p in train for qa in p["qas"] if not qa["is_impossible"]):
        qa["answers"] = qa["answers"][:1]
    dev = article["paragraphs"][25:]
    paths = {}
    for name, paragraphs in (("train", train), ("dev", dev)):
        paths[name] = os.path.join(work, f"normans-{name}.json")
        with open(paths[name], "w", encoding="utf-8") as f:
            json.dump(dict(d, data=[dict(article, paragraphs=paragraphs)]), f)
    counts = {name: {"questions": sum(len(p["qas"]) for p in ps),
                     "impossible": sum(qa["is_impossible"] for p in ps for qa in p["qas"])}
              for name, ps in (("train", train), ("dev", dev))}
    return paths, counts


def squad_run(work, name, paths, config_path, init_checkpoint, train_steps):
    base = os.path.join(work, name)
    shutil.rmtree(base, ignore_errors=True)
    cmd = [sys.executable, os.path.join(REPO, "run_squad.py"), "--do_train=True",
           "--do_predict=True", f"--train_file={paths['train']}",
           f"--predict_file={paths['dev']}", f"--model_config_path={config_path}",
           f"--spiece_model_file={SPIECE}", f"--output_dir={base}/proc_data",
           f"--model_dir={base}/model", f"--predict_dir={base}/pred",
           f"--train_steps={train_steps}", *SQUAD_FLAGS]
    if init_checkpoint:
        cmd.append(f"--init_checkpoint={init_checkpoint}")
    seconds, stdout, log = run(cmd, os.path.join(work, f"{name}.log"))
    with open(os.path.join(base, "pred", "eval_results.json")) as f:
        metrics = json.load(f)
    features = re.search(r"Total number of instances: (\d+) = pos (\d+) neg (\d+)", log)
    eval_features = re.findall(r"Wrote (\d+) eval features", log)
    return {"init_checkpoint": init_checkpoint, "command": " ".join(cmd[1:]),
            "train_features": int(features.group(1)) if features else None,
            "train_features_answer_in_window": int(features.group(2)) if features else None,
            "eval_features": int(eval_features[0]) if eval_features else None,
            "stdout": stdout.strip().splitlines(), "loss_curve": loss_curve(log),
            "eval_results": metrics, "wall_seconds": round(seconds, 1)}


def race_folders(work):
    """RACE/train = golden articles 1-10, RACE/dev = 11-14 (files copied unchanged)."""
    root = os.path.join(work, "RACE")
    shutil.rmtree(root, ignore_errors=True)
    counts = {"train": 0, "dev": 0}
    for level in ("middle", "high"):
        for file_name in sorted(os.listdir(os.path.join(RACE_GOLDEN, level))):
            split = "train" if int(file_name.split(".")[0]) <= 10 else "dev"
            os.makedirs(os.path.join(root, split, level), exist_ok=True)
            src = os.path.join(RACE_GOLDEN, level, file_name)
            shutil.copyfile(src, os.path.join(root, split, level, file_name))
            with open(src, encoding="utf-8") as f:
                counts[split] += len(json.load(f)["questions"])
    return root, counts


def read_eval_results(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition(" = ")
            out[key] = float(value) if "." in value or "e" in value else int(value)
    return out


def race_run(work, name, data_dir, config_path, init_checkpoint, train_steps):
    base = os.path.join(work, name)
    shutil.rmtree(base, ignore_errors=True)
    common = [f"--data_dir={data_dir}", f"--model_config_path={config_path}",
              f"--spiece_model_file={SPIECE}", f"--model_dir={base}/model", *RACE_FLAGS]
    cmd = [sys.executable, os.path.join(REPO, "run_race.py"), "--do_train=True",
           "--do_eval=True", "--eval_split=dev", f"--output_dir={base}/proc_data",
           f"--train_steps={train_steps}", *common]
    if init_checkpoint:
        cmd.append(f"--init_checkpoint={init_checkpoint}")
    seconds, stdout, log = run(cmd, os.path.join(work, f"{name}.log"))
    dev = read_eval_results(os.path.join(base, "model", "eval_results.txt"))
    # The same checkpoint on the questions it was trained on (another --output_dir: the
    # train split's cached file is the shuffled training one).
    fit_cmd = [sys.executable, os.path.join(REPO, "run_race.py"), "--do_train=False",
               "--do_eval=True", "--eval_split=train", f"--output_dir={base}/proc_data_fit",
               *common]
    fit_seconds, _, _ = run(fit_cmd, os.path.join(work, f"{name}.fit.log"))
    fit = read_eval_results(os.path.join(base, "model", "eval_results.txt"))
    return {"init_checkpoint": init_checkpoint, "command": " ".join(cmd[1:]),
            "stdout": stdout.strip().splitlines(), "loss_curve": loss_curve(log),
            "dev": dev, "train_split": fit, "wall_seconds": round(seconds + fit_seconds, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work_dir", default="/tmp/xlnet_squad_race_real_run")
    parser.add_argument("--pretrained", default="/tmp/xlnet_real/model/model.ckpt-200")
    parser.add_argument("--squad_steps", type=int, default=100)
    parser.add_argument("--race_steps", type=int, default=80)
    args = parser.parse_args()
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    start = time.time()
    pretrained = args.pretrained if os.path.exists(args.pretrained + ".index") else None
    summary = {"model": MODEL, "pretrained_checkpoint": pretrained or
               f"{args.pretrained} absent: both runs from scratch",
               "squad_flags": SQUAD_FLAGS + [f"--train_steps={args.squad_steps}"],
               "race_flags": RACE_FLAGS + [f"--train_steps={args.race_steps}"]}
    # A config json next to the checkpoint (the pretraining run wrote one), else ours.
    config_path = os.path.join(os.path.dirname(os.path.dirname(args.pretrained)),
                               "xlnet_config.json")
    if not os.path.exists(config_path):
        config_path = os.path.join(work, "xlnet_config.json")
        with open(config_path, "w") as f:
            json.dump(MODEL, f, indent=4, sort_keys=True)
    with open(config_path) as f:
        if json.load(f) != MODEL:
            sys.exit(f"{config_path} is not the config of the pretraining real run")
    summary["config_file"] = config_path

    paths, summary["squad_data"] = normans_split(work)
    runs = [("squad_pretrained", pretrained), ("squad_scratch", None)]
    for name, init in (runs if pretrained else runs[1:]):
        summary[name] = squad_run(work, name, paths, config_path, init, args.squad_steps)
        print(json.dumps(summary[name]["eval_results"]), flush=True)

    data_dir, summary["race_data"] = race_folders(work)
    runs = [("race_pretrained", pretrained), ("race_scratch", None)]
    for name, init in (runs if pretrained else runs[1:]):
        summary[name] = race_run(work, name, data_dir, config_path, init, args.race_steps)
        print(json.dumps({"dev": summary[name]["dev"], "train": summary[name]["train_split"]}),
              flush=True)
    summary["wall_seconds"] = round(time.time() - start, 1)
    summary["machine"] = f"{os.cpu_count()} CPU cores, shared with other jobs"
    text = json.dumps(summary, indent=2) + "\n"
    os.makedirs(RESULTS, exist_ok=True)
    out_path = os.path.join(RESULTS, "xlnet_squad_race_real_run.json")
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_path)
    print(text)


if __name__ == "__main__":
    main()
