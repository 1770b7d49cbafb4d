"""Transient memory of one AdamWeightDecay update in a traced step (issue 24): a bare
optimizer on ``--variables`` weights of ``--size`` floats each, gradients filled in the step.

    python bench/bench_optimizer_memory.py [--repo DIR] [--variables 16] [--size 16777216]

``--repo``: the bert_tf tree to import (default this one), so two commits compare in the same
run (e.g. a ``git worktree`` of the previous commit). Prints RSS before the step (weights +
two Adam slots), the peak over a second traced step, its wall and CPU seconds, and one
updated value (equal between trees: the update's arithmetic is unchanged).
"""

import argparse
import os
import resource
import sys
import time


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p.add_argument("--variables", type=int, default=16)
    p.add_argument("--size", type=int, default=16 * 1024 * 1024)
    args = p.parse_args()
    sys.path.insert(0, args.repo)
    import keras
    import tensorflow as tf
    from bert_tf.training.optimizer import AdamWeightDecay
    weights = [keras.Variable(tf.zeros([args.size]), name=f"w{i}") for i in range(args.variables)]
    optimizer = AdamWeightDecay(learning_rate=1e-3, weight_decay_rate=0.01)
    optimizer.build(weights)

    @tf.function
    def step(scale):
        optimizer.apply_gradients(zip([tf.fill([args.size], scale) for _ in weights], weights))

    with open("/proc/self/status") as f:
        before = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 2 ** 20
    step(tf.constant(1.0))
    cpu, wall = time.process_time(), time.perf_counter()
    step(tf.constant(2.0))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20
    print(f"{args.repo}: RSS before the step {before:.2f} GiB, peak {peak:.2f} GiB, second step "
          f"{wall:.1f} s wall / {cpu:.1f} s CPU, w3[5] = {float(weights[3][5]):.9f}")


if __name__ == "__main__":
    main()
