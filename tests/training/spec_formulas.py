"""The optimizer and schedule of the original release restated in numpy (spec bert.md 7.1, 7.2),
for tests that check our Keras code against the formulas."""
import numpy as np


def spec_lr(step, init_lr, num_train_steps, num_warmup_steps):
    """Spec 7.1: linear decay from step 0; warmup init_lr*step/warmup while step < warmup."""
    if num_warmup_steps and step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return init_lr * (1.0 - min(step, num_train_steps) / num_train_steps)


def spec_clip(grads, clip_norm=1.0):
    """tf.clip_by_global_norm: every gradient times clip_norm / max(global_norm, clip_norm)."""
    norm = np.sqrt(sum(float(np.sum(np.square(g))) for g in grads))
    return [g * clip_norm / max(norm, clip_norm) for g in grads]


def spec_adam_step(param, grad, m, v, lr, decay, weight_decay_rate=0.01,
                   beta_1=0.9, beta_2=0.999, epsilon=1e-6):
    """Spec 7.2 steps 1-5: no bias correction, epsilon after the sqrt, decay scaled by lr."""
    m = beta_1 * m + (1 - beta_1) * grad
    v = beta_2 * v + (1 - beta_2) * grad ** 2
    update = m / (np.sqrt(v) + epsilon)
    if decay:
        update = update + weight_decay_rate * param
    return param - lr * update, m, v
