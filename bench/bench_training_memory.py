"""Peak training memory (RSS) by batch size, with and without ``--recompute_grad`` (issue 24
item 4): BERT-Large SQuAD (seq 384) and XLNet-Large (seq 512), also with gradient
accumulation and bfloat16 compute.

    python bench/bench_training_memory.py [--cells large,base] [--only 0,1] [--steps 1]
        [--limit_gb 10] [--out bench/results/training_memory.json]

Each cell is a fresh child process, one after another; the cells run in pairs (the same
shape without and with recomputation, or the next two), each pair while this script holds
``flock /tmp/bert_tf_bigmem.lock`` (one big process at a time on the shared machine; the lock is
released between pairs), so the two cells of a pair see the same machine load. The child builds what the task trains:

* ``bert``: :class:`bert_tf.bert.squad.BertSquad` (``run_squad.py``'s model) at the official
  BERT config (``/tmp/official/<size>/bert_config.json`` when there, else the official
  numbers), SQuAD's loss (mean of the start and end cross entropies);
* ``xlnet``: :class:`bert_tf.xlnet.model.XLNetClassifier` (``run_classifier.py``'s XLNet
  model; dropout 0.1, dropatt 0.1) at XLNet's official Large (or Base) shape;

with random initial weights (the values do not change the memory; a checkpoint restore is
the other helper's measure), :func:`bert_tf.training.optimizer.create_optimizer`
(AdamWeightDecay: two slots per weight) and :class:`bert_tf.training.train_step.TrainStep`
(the training loop's step; ``accumulation`` batches per update), dropout on, one fixed random
batch ``[B, S]`` fed by a ``tf.data`` iterator, ``--steps`` updates. The encoder's
``recompute_grad`` is set as ``--recompute_grad`` sets it (``set_recompute_grad``);
``--dtype=bfloat16`` builds the model under Keras' ``mixed_bfloat16`` policy, as the tasks do.
The child sets glibc's malloc thresholds and hands back TensorFlow's start-up-only library
pages as the entry points do (``tune_malloc``, ``release_startup_pages``).

Per cell: ``peak_rss_gb`` (the child's ``ru_maxrss``: the whole process, TF included),
``rss_after_build_gb`` (model + optimizer slots, before the first step), ``step_s`` (wall
seconds of the last update, the first one is traced). A child whose RSS passes ``--limit_gb``
is stopped by its own watchdog and recorded as ``over_limit`` (the machine is shared: no
process above ~10 GB).
"""

import argparse
import fcntl
import json
import os
import resource
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LOCK = os.environ.get("BERT_TF_BIG_LOCK", "/tmp/bert_tf_bigmem.lock")
BERT_SHAPES = {
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                  intermediate_size=4096),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                 intermediate_size=3072),
}
BERT_SHAPES["small"] = dict(hidden_size=256, num_hidden_layers=12, num_attention_heads=4,
                           intermediate_size=1024)  # the official miniature L-12_H-256_A-4
XLNET_SHAPES = {
    "large": dict(n_layer=24, d_model=1024, n_head=16, d_head=64, d_inner=4096),
    "base": dict(n_layer=12, d_model=768, n_head=12, d_head=64, d_inner=3072),
    "small": dict(n_layer=12, d_model=256, n_head=4, d_head=64, d_inner=1024),  # BERT's L-12_H-256
}
# (family, size, seq, batch, recompute, accumulation, dtype), most telling first. On the
# 2-core machine of the first run a Large cell took 6-10 minutes (most of it the first trace),
# so the cells beyond batch 1-2 run at Base size with the same sequence lengths.
_F32, _BF16 = "float32", "bfloat16"
CELLS = {
    "large": [("bert", "large", 384, 1, False, 1, _F32), ("bert", "large", 384, 1, True, 1, _F32),
              ("xlnet", "large", 512, 1, False, 1, _F32), ("xlnet", "large", 512, 1, True, 1, _F32),
              ("bert", "large", 384, 2, True, 1, _F32), ("bert", "large", 384, 2, False, 1, _F32)],
    "base": [("bert", "base", 384, b, r, a, d) for (b, r, a, d) in [
        (4, False, 1, _F32), (4, True, 1, _F32), (2, False, 2, _F32), (4, False, 1, _BF16),
        (8, True, 1, _F32), (8, False, 1, _F32)]]
    + [("xlnet", "base", 512, b, r, a, d) for (b, r, a, d) in [
        (2, False, 1, _F32), (2, True, 1, _F32), (2, False, 1, _BF16), (1, False, 2, _F32)]],
    # the rest of issue 24 item 4 at the official sizes: batch sizes, accumulation, bfloat16
    "large_levers": [("bert", "large", 384, b, r, a, d) for (b, r, a, d) in [
        (4, False, 1, _F32), (4, True, 1, _F32), (2, False, 2, _F32), (2, True, 2, _F32),
        (1, False, 1, _BF16), (4, True, 1, _BF16)]]
    + [("xlnet", "large", 512, b, r, a, d) for (b, r, a, d) in [
        (2, True, 1, _F32), (4, True, 1, _F32), (1, True, 2, _F32), (1, True, 1, _BF16)]],
    # 12 layers of width 256: every cell under 3 GB (--no_lock --limit_gb 3), the levers at
    # the official sequence lengths when the big-memory lock is busy
    "small": [("bert", "small", 384, b, r, a, d) for (b, r, a, d) in [
        (4, False, 1, _F32), (4, True, 1, _F32), (8, True, 1, _F32), (2, False, 2, _F32),
        (4, False, 1, _BF16), (8, False, 1, _F32)]]
    + [("xlnet", "small", 512, b, r, a, d) for (b, r, a, d) in [
        (4, False, 1, _F32), (4, True, 1, _F32), (4, False, 1, _BF16), (2, False, 2, _F32)]],
}


def rss_gb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 2 ** 20
    return 0.0


def watchdog(limit_gb: float):
    def watch():
        while True:
            if rss_gb() > limit_gb:
                print(json.dumps({"over_limit": True, "rss_gb": round(rss_gb(), 2)}),
                      flush=True)
                os._exit(3)
            time.sleep(0.1)
    threading.Thread(target=watch, daemon=True).start()


def build(family, size, seq, dtype):
    """``(model, features, labels, loss_fn)`` of one cell, built under ``dtype``'s policy."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.training.precision import dtype_policy
    rng = np.random.RandomState(0)
    with dtype_policy(dtype):
        if family == "bert":
            from bert_tf.bert.config import BertConfig
            from bert_tf.bert.squad import BertSquad
            path = f"/tmp/official/bert_{size}/bert_config.json"
            config = (BertConfig.from_json_file(path) if os.path.exists(path)
                      else BertConfig(vocab_size=30522, **BERT_SHAPES[size]))
            model = BertSquad(config, name="bert_squad")
            model.build_with_dummy_input(seq)
            vocab = config.vocab_size
        else:
            from bert_tf.xlnet.config import RunConfig, XLNetConfig
            from bert_tf.xlnet.model import XLNetClassifier
            config = XLNetConfig(ff_activation="gelu", untie_r=True, n_token=32000,
                                 **XLNET_SHAPES[size])
            model = XLNetClassifier(config, RunConfig(is_training=True, dropout=0.1,
                                                      dropatt=0.1), n_class=2, task_name="bench")
            vocab = config.n_token
    return model, rng, vocab


def batch_of(family, rng, vocab, batch, seq):
    import numpy as np
    import tensorflow as tf
    ids = tf.constant(rng.randint(5, vocab, (batch, seq)), tf.int32)
    segments = tf.constant(np.concatenate([np.zeros((batch, seq // 2)),
                                           np.ones((batch, seq - seq // 2))], 1), tf.int32)
    if family == "bert":
        features = {"input_ids": ids, "input_mask": tf.ones_like(ids), "segment_ids": segments}
        labels = {"start_positions": tf.constant(rng.randint(0, seq, batch), tf.int32),
                  "end_positions": tf.constant(rng.randint(0, seq, batch), tf.int32)}
    else:
        features = {"input_ids": ids, "segment_ids": segments,
                    "input_mask": tf.zeros([batch, seq], tf.float32)}
        labels = tf.constant(rng.randint(0, 2, batch), tf.int32)
    return features, labels


def loss_fn_of(family):
    import tensorflow as tf

    def bert_loss(model, features, labels):
        out = model(features, training=True)
        total = 0.0
        for key, label in (("start_logits", "start_positions"), ("end_logits", "end_positions")):
            total += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels[label], logits=tf.cast(out[key], tf.float32)))
        return total / 2.0

    def xlnet_loss(model, features, labels):
        return model.task_loss(model(features, training=True)["logits"], labels)[1]

    return bert_loss if family == "bert" else xlnet_loss


def run_child(family, size, seq, batch, recompute, accumulation, dtype, steps, limit_gb):
    watchdog(limit_gb)
    import tensorflow as tf

    from bert_tf.flags.process import release_startup_pages, tune_malloc
    from bert_tf.recompute import set_recompute_grad
    from bert_tf.training.optimizer import create_optimizer
    from bert_tf.training.train_step import TrainStep, distributed_iterator
    import numpy as np
    tune_malloc()  # as run_squad.py / run_classifier.py do (run_main)
    release_startup_pages()
    rss_start = rss_gb()
    model, rng, vocab = build(family, size, seq, dtype)
    features, labels = batch_of(family, rng, vocab, batch, seq)
    loss_fn = loss_fn_of(family)
    if family == "xlnet":
        model(features, training=False)  # creates every weight
    set_recompute_grad(model, recompute)
    strategy = tf.distribute.get_strategy()
    optimizer, _ = create_optimizer(3e-5, 1000, 0)
    optimizer.build(model.trainable_variables)
    step = TrainStep(model, loss_fn, optimizer, strategy, accumulation)
    rss_built = rss_gb()
    params = sum(int(np.prod(v.shape)) for v in model.trainable_variables)
    dataset = tf.data.Dataset.from_tensors((features, labels))
    iterator = distributed_iterator(strategy, dataset)
    times, losses = [], []
    for _ in range(steps):
        t0 = time.time()
        loss, _ = step(iterator, 1)
        losses.append(float(loss))
        times.append(time.time() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(json.dumps({"params": params, "rss_start_gb": round(rss_start, 2),
                      "rss_after_build_gb": round(rss_built, 2), "peak_rss_gb": round(peak, 2),
                      "first_step_s": round(times[0], 1), "step_s": round(times[-1], 1),
                      "losses": [round(x, 4) for x in losses]}), flush=True)


def run_cell(cell, steps, limit_gb, timeout_s):
    """One child process (run while the caller holds the big-memory lock); its JSON row."""
    family, size, seq, batch, recompute, accumulation, dtype = cell
    cmd = [sys.executable, os.path.abspath(__file__), "--child",
           json.dumps(list(cell)), "--steps", str(steps), "--limit_gb", str(limit_gb)]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        lines = [l for l in proc.stdout.splitlines() if l.startswith("{")]
        out = json.loads(lines[-1]) if lines else {"error": proc.stderr.strip()[-400:]}
    except subprocess.TimeoutExpired:
        out = {"timed_out_s": timeout_s}
    row = dict(family=family, size=size, seq_length=seq, batch_size=batch,
               recompute_grad=recompute, gradient_accumulation_steps=accumulation, dtype=dtype,
               examples_per_update=batch * accumulation, wall_s=round(time.time() - t0, 1))
    row.update(out)
    return row


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--child")
    parser.add_argument("--cells", default="large,base")
    parser.add_argument("--only", default=None,
                        help="comma-separated indices into the chosen cells, in order")
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--no_lock", action="store_true",
                        help="cells known to stay under 3 GB (the small group with --limit_gb 3)")
    parser.add_argument("--limit_gb", type=float, default=10.0)
    parser.add_argument("--timeout_s", type=int, default=1800)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "results", "training_memory.json"))
    args = parser.parse_args()
    if args.child:
        run_child(*json.loads(args.child), args.steps, args.limit_gb)
        return
    from machine_info import machine
    result = {"machine": machine(), "steps": args.steps, "limit_gb": args.limit_gb,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rows": []}
    if os.path.exists(args.out):  # cells measured by an earlier invocation are kept
        with open(args.out) as f:
            result["rows"] = json.load(f).get("rows", [])
    cells = [cell for name in args.cells.split(",") for cell in CELLS[name]]
    if args.only:
        cells = [cells[int(i)] for i in args.only.split(",")]
    for first in range(0, len(cells), 2):
        with open(LOCK, "a") as lock:
            if not args.no_lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
            rows = [run_cell(cell, args.steps, args.limit_gb, args.timeout_s)
                    for cell in cells[first:first + 2]]
        for cell, row in zip(cells[first:first + 2], rows):
            print(json.dumps(row), flush=True)
            if os.path.exists(args.out):  # rows another invocation wrote meanwhile
                with open(args.out) as f:
                    result["rows"] = json.load(f).get("rows", [])
            result["rows"] = [r for r in result["rows"] if
                              [r[k] for k in ("family", "size", "seq_length", "batch_size",
                                              "recompute_grad", "gradient_accumulation_steps",
                                              "dtype")] != list(cell)] + [row]
            with open(args.out, "w") as f:
                json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
