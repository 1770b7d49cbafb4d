"""Fine-tuning recipes beyond the original (issue 26): seeds, determinism, layer-wise learning
rates, gradual unfreezing and a frozen encoder.

The original scripts fine-tune every variable at one learning rate (linear warmup + linear
decay, `optimization.py`), seed nothing but the training shuffle, and leave op determinism to
the device. This module holds the family-free parts of the recipes the transfer-learning
literature uses on top (ULMFiT: Howard & Ruder 2018; the NAACL 2019 transfer-learning
tutorial; XLNet's ``--lr_layer_decay_rate``, `model_utils.py` of the original XLNet):

* :func:`seed_run`: ``--seed`` seeds Python's ``random``, numpy, TensorFlow and Keras (the new
  head's initializers and the dropout layers draw their seeds from Keras' global generator when
  they are created), ``--deterministic`` turns on TensorFlow's op determinism;
* :class:`LayerRecipe`: per variable (by original name) an update multiplier
  ``lr_layer_decay_rate ** depth`` and the step it starts training at (gradual unfreezing), from
  the family's ``block_of(name)``: 0 for the head and pooler, 1 for the top encoder block, ...,
  ``num_blocks`` for the bottom one, ``num_blocks + 1`` for the embeddings.

Layer-wise rates scale the UPDATE (``lr * multiplier``), not the gradient as XLNet's original
does: AdamWeightDecay divides the gradient by its running RMS, so a gradient scaled by a
constant gives the same update (up to ``epsilon``), and XLNet's scaling barely changes
anything for Adam. The rate meaning is XLNet's: the top layer at ``learning_rate``, each lower
layer times the rate; bert_tf puts the embeddings one step below the bottom layer (XLNet's
original leaves them at the full rate).
"""

import random
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

import numpy as np

from bert_tf.errors import FlagError

BlockOf = Callable[[str], int]


def seed_run(seed: Optional[int], deterministic: bool = False) -> None:
    """Seeds every random source of the run and optionally turns on op determinism.

    ``seed`` (int or None): ``keras.utils.set_random_seed`` (Python ``random``, numpy,
    ``tf.random.set_seed`` and Keras' global seed generator), before the model is built so the
    initializers and dropout layers created afterwards draw from it. None: nothing seeded (the
    original). ``deterministic``: ``tf.config.experimental.enable_op_determinism()`` (every op
    deterministic on this device; tf.data in order); it needs a seed for bit-identical runs.

    Raises:
      FlagError: ``--deterministic`` without ``--seed`` (runs would still differ).
    """
    if deterministic and seed is None:
        raise FlagError("--deterministic needs --seed (without it the new head's "
                        "initialisation and dropout differ run to run)")
    if seed is None:
        return
    import keras  # TensorFlow-heavy; imported when a seed is given
    import tensorflow as tf
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    keras.utils.set_random_seed(int(seed) % 2 ** 32)
    if deterministic:
        tf.config.experimental.enable_op_determinism()


def parse_feature_layers(text: Optional[str], num_layers: int) -> Optional[Tuple[int, ...]]:
    """``--feature_layers`` (``"-1,-2,-3,-4"``) -> a tuple of negative layer indexes, or None.

    Raises:
      FlagError: not a comma-separated list of layer indexes in ``[-num_layers, -1]``
        (or ``[0, num_layers)``), or a layer given twice.
    """
    if not text:
        return None
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise FlagError(f"--feature_layers={text}: give comma-separated layer indexes, e.g. "
                        f"-1,-2,-3,-4") from None
    out = []
    for v in values:
        if not -num_layers <= v < num_layers:
            raise FlagError(f"--feature_layers={text}: layer {v} is not one of the model's "
                            f"{num_layers} layers ({-num_layers}..-1)")
        out.append(v - num_layers if v >= 0 else v)
    if not out or len(set(out)) != len(out):
        raise FlagError(f"--feature_layers={text}: give each layer once")
    return tuple(out)


@dataclass
class LayerRecipe:
    """Layer-wise learning rates and gradual unfreezing over the blocks of one model.

    Attributes:
      block_of: original variable name -> its block counted from the top: 0 head (and pooler),
        1 the top encoder layer, ..., ``num_blocks`` the bottom one, ``num_blocks + 1`` the
        embeddings (the family's function).
      lr_layer_decay_rate: the update of block ``b`` is multiplied by ``rate ** max(0, b - 1)``
        (the head and the top layer at the learning rate); 1.0: off.
      unfreeze_every: block ``b`` trains from update ``b * unfreeze_every`` on (0: from the
        start).

    Raises:
      FlagError: a rate not in (0, 1] or a negative ``unfreeze_every``.
    """

    block_of: BlockOf
    lr_layer_decay_rate: float = 1.0
    unfreeze_every: int = 0

    def __post_init__(self):
        if not 0.0 < float(self.lr_layer_decay_rate) <= 1.0:
            raise FlagError(f"--lr_layer_decay_rate={self.lr_layer_decay_rate}: must be in "
                            f"(0, 1] (1.0: off)")
        if int(self.unfreeze_every) < 0:
            raise FlagError(f"--unfreeze_schedule={self.unfreeze_every}: must be >= 0 steps "
                            f"(0: off)")

    @property
    def active(self) -> bool:
        """Whether the recipe changes anything (a rate below 1 or an unfreezing schedule)."""
        return self.lr_layer_decay_rate != 1.0 or self.unfreeze_every > 0

    def update_multiplier(self, name: str) -> float:
        """``lr_layer_decay_rate ** max(0, block_of(name) - 1)`` (float)."""
        return float(self.lr_layer_decay_rate) ** max(0, self.block_of(name) - 1)

    def train_from_step(self, name: str) -> int:
        """The first update (0-based global step) at which ``name`` trains."""
        return int(self.block_of(name)) * int(self.unfreeze_every)


def block_counter(layer_of: Callable[[str], Optional[int]], num_layers: int,
                  is_embedding: Callable[[str], bool]) -> BlockOf:
    """A ``block_of`` for :class:`LayerRecipe` from a family's name rules.

    Args:
      layer_of: original name -> its encoder layer index (0 = bottom) or None (not a layer).
      num_layers: encoder layers with variables of their own (ALBERT's shared group: 1).
      is_embedding: original name -> whether it is an embedding variable (block
        ``num_layers + 1``).

    Returns:
      ``name -> block``: embeddings ``num_layers + 1``, layer ``l`` -> ``num_layers - l``,
      anything else (pooler, head) 0.
    """
    def block_of(name: str) -> int:
        if is_embedding(name):
            return num_layers + 1
        layer = layer_of(name)
        return 0 if layer is None else num_layers - int(layer)

    return block_of


def summarize_blocks(names: Sequence[str], recipe: LayerRecipe) -> str:
    """One log line: per block its multiplier and first step (``block 0: x1.0 from 0; ...``)."""
    seen = {}
    for name in names:
        b = recipe.block_of(name)
        seen.setdefault(b, (recipe.update_multiplier(name), recipe.train_from_step(name)))
    return "; ".join(f"block {b}: x{m:.4g} from step {s}" for b, (m, s) in sorted(seen.items()))
