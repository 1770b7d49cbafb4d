"""Per-block gradient recomputation (``--recompute_grad``; bert_tf, beyond the original).

Training keeps, for the backward pass, every intermediate tensor of every transformer block:
at BERT-Large, seq 384, about 20 ``[B, S, H]``-sized tensors and the ``[B, N, S, S]``
attention scores and probabilities per block. :func:`call_recomputed` runs one block so
that only its INPUTS are kept; the backward pass runs the block's forward again (inside
``tf.recompute_grad``) and takes the gradients from that second run. Memory for activations
goes from O(L * block) to O(L * input + one block), for one more forward pass of compute
(about a third more per step).

Dropout. Keras' ``Dropout`` is stateless dropout seeded from its layer's ``SeedGenerator``,
whose state variable advances by one at each draw; recomputed as is, the backward pass would
draw the NEXT masks, not the ones the loss was computed with, and its gradient would belong to
another network. So :func:`call_recomputed` pins the seeds: before the block runs it reads the
state of every ``SeedGenerator`` of the block's ``Dropout`` layers and passes those values
into the recomputed function as inputs; the function first assigns them back to the
generators, then runs the block. The first forward and the recomputation therefore draw from
the same states, and get the same masks (stateless dropout: the mask is a function of the
seed alone). After the first forward the generators are moved on to ``state + [1, 0]``, a
fresh stream for the next call of the same block (ALBERT calls one block L times); after the
backward pass each generator is left at its first call's ``state + [0, draws]``, never a seed
used before. For a block called once per step (BERT, XLNet) the masks of every step are the
ones training without recomputation draws.

What is recomputed: the block's call with every tensor argument passed explicitly (weights
are read inside, and their gradients come back through ``tf.recompute_grad``'s variable
watcher); non-tensor arguments (None, Python values) are closed over.
"""

from typing import Callable, List, Sequence

import keras
import tensorflow as tf

from bert_tf.dropout import dropout_seed_generators

#: Added to a seed state after a block's first forward: a new first component, so the next
#: call of the same block draws from a stream no earlier call used.
_NEXT_STREAM = (1, 0)


def call_recomputed(block: keras.layers.Layer, call: Callable, args: Sequence):
    """``call(*args)``, with ``block``'s activations recomputed in the backward pass.

    Args:
      block: the Keras layer that ``call`` runs (its ``Dropout`` layers' seeds are pinned;
        its weights are read inside ``call``).
      call: the block's forward, ``call(*args) -> tensor or tuple of tensors``; it must read
        no random state other than the ``Dropout`` layers of ``block``.
      args: the positional arguments of ``call``: tensors (passed to the recomputed function,
        so gradients flow to them) and non-tensors such as None (closed over).

    Returns:
      what ``call(*args)`` returns (same values; gradients equal within float rounding to
      those of a plain call drawing the same dropout masks).
    """
    generators = dropout_seed_generators(block)
    tensor_at = [i for i, a in enumerate(args) if tf.is_tensor(a)]
    seeds = [tf.identity(g.state.value) for g in generators]

    def forward(*tensors):
        for generator, seed in zip(generators, seeds):
            generator.state.assign(seed)
        full = list(args)
        for i, tensor in zip(tensor_at, tensors):
            full[i] = tensor
        return call(*full)

    outputs = tf.recompute_grad(forward)(*[args[i] for i in tensor_at])
    for generator, seed in zip(generators, seeds):
        generator.state.assign(seed + tf.constant(_NEXT_STREAM, seed.dtype))
    return outputs


def set_recompute_grad(model: keras.layers.Layer, on: bool) -> int:
    """Sets ``recompute_grad`` on every encoder inside ``model`` (itself included): the layers
    that have that attribute (``BertModel``, ``AlbertModel``, ``XLNetModel``). Set it before
    the first traced training step.

    Returns:
      the number of encoders set (int; 0: ``model`` holds none).
    """
    encoders = [layer for layer in model._flatten_layers(include_self=True, recursive=True)
                if hasattr(layer, "recompute_grad")]
    for encoder in encoders:
        encoder.recompute_grad = bool(on)
    return len(encoders)
