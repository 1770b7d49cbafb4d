"""GPU throughput of bert_tf (one command: ``bench/gpu.sh``): BERT-Base inference and a
BERT-Large SQuAD fine-tuning step, random weights (throughput does not depend on them).

    python bench/bench_gpu.py [--quick] [--out bench/results/gpu.json]

* inference: BERT-Base, seq 128, batch 8, 32, 64, 128, 256; float32, bfloat16 (Keras
  ``mixed_bfloat16``, as ``--dtype=bfloat16``), each with and without XLA; sequences/s.
* fine-tuning: BERT-Large (24 x 1024, 16 heads, 4096), :class:`bert_tf.bert.squad.BertSquad`,
  seq 384, batch 24 (``--train_batch_size`` of NVIDIA's recipe per GPU: 24-32 at bf16 on
  80 GB), ``squad_loss`` + the original optimizer (``create_optimizer``: AdamWeightDecay,
  clip 1.0), bfloat16 + XLA; sequences/s over timed steps after two warm-up steps.
  NVIDIA's published TF2 BERT-Large SQuAD fine-tuning figure (A100 80 GB, AMP): about
  134 seq/s per GPU.

Each measurement runs in its own subprocess (Keras' dtype policy and XLA caches stay apart);
one that fails (e.g. out of memory) is recorded with its error and the rest go on.
"""

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def measure(kind, batch, seq, dtype, xla, steps):
    """Runs in the child: returns sequences/s of one configuration."""
    import keras
    import numpy as np
    import tensorflow as tf

    from bert_tf.bert.config import BertConfig
    from bert_tf.training.precision import dtype_policy

    if kind == "inference":
        config = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                            num_attention_heads=12, intermediate_size=3072, type_vocab_size=2)
    else:
        config = BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                            num_attention_heads=16, intermediate_size=4096, type_vocab_size=2)
    rng = np.random.RandomState(0)
    features = {"input_ids": tf.constant(rng.randint(1000, 30000, (batch, seq)), tf.int32),
                "input_mask": tf.ones((batch, seq), tf.int32),
                "segment_ids": tf.zeros((batch, seq), tf.int32)}
    with dtype_policy(dtype):
        if kind == "inference":
            from bert_tf.bert.model import BertModel
            model = BertModel(config).build_with_dummy_input()
            step = tf.function(lambda f: model(f)["sequence_output"], jit_compile=xla)
            run = lambda: step(features).numpy()  # noqa: E731
        else:
            from bert_tf.bert.squad import BertSquad, squad_loss
            from bert_tf.training.optimizer import create_optimizer
            model = BertSquad(config).build_with_dummy_input()
            optimizer, _ = create_optimizer(3e-5, 1000, 100)
            positions = tf.constant(rng.randint(0, seq, (batch,)), tf.int32)

            @tf.function(jit_compile=xla)
            def train_step(f):
                with tf.GradientTape() as tape:
                    out = model(f, training=True)
                    loss = squad_loss(out["start_logits"], out["end_logits"], positions, positions)
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))
                return loss

            run = lambda: float(train_step(features))  # noqa: E731
    run()
    run()
    start = time.perf_counter()
    for _ in range(steps):
        run()
    return batch * steps / (time.perf_counter() - start)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="batches 8 and 128 only, fewer steps")
    p.add_argument("--out", default=os.path.join(HERE, "results", "gpu.json"))
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        c = json.loads(args.child)
        print(json.dumps({"seq_per_s": measure(**c)}))
        return
    import tensorflow as tf
    gpus = tf.config.list_physical_devices("GPU")
    info = {"tensorflow": tf.__version__, "gpus": [g.name for g in gpus], "runs": []}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True).stdout.strip()
    except OSError:
        info["nvidia_smi"] = None
    if not gpus:
        print("no GPU visible to TensorFlow; measuring anyway on", tf.config.list_logical_devices()[-1])
    batches = (8, 128) if args.quick else (8, 32, 64, 128, 256)
    configs = [dict(kind="inference", batch=b, seq=128, dtype=d, xla=x, steps=5 if args.quick else 20)
               for d in ("float32", "bfloat16") for x in (False, True) for b in batches]
    configs.append(dict(kind="squad_finetune_large", batch=24, seq=384, dtype="bfloat16", xla=True,
                        steps=5 if args.quick else 20))
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    for c in configs:
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(c)], cwd=REPO,
                              env=env, capture_output=True, text=True)
        row = dict(c)
        try:
            row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
        except (IndexError, ValueError):
            row["error"] = (proc.stderr.strip().splitlines() or ["no output"])[-1][:300]
        info["runs"].append(row)
        print(json.dumps(row), flush=True)
    info["reference"] = ("NVIDIA TF2 BERT-Large SQuAD fine-tuning, A100 80 GB, AMP: "
                         "about 134 seq/s per GPU (published figure)")
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
