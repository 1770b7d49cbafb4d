"""Model weights created empty and filled from a checkpoint: no random copy to throw away.

The original (TF1) builds its graph, then ``init_from_checkpoint`` points each variable's
initializer at the checkpoint tensor, so a restored weight is written once, from the file.
A Keras model instead creates every weight with its random initial value and a restore
then overwrites it: a second model-sized allocation (issue 24). Here:

* :func:`building_empty` -- weights created inside are *pending*: shape, dtype and
  initializer known, no value allocated (Keras 3's deferred variables, those a
  ``keras.StatelessScope`` creates). The block runs in a scratch graph, so a build that calls
  the model on a dummy batch only traces it: no initializer runs, no activation is computed.
* :func:`fill` -- a pending weight gets its value straight from the checkpoint array (an
  allocated one is assigned, as before); :func:`bert_tf.checkpoint_io.assign_from_checkpoint`
  fills through it.
* :func:`initialize_pending` -- every weight still pending (a new task head, dropout seed
  states) gets its own initializer's value, the same numbers a plain build gives it: Keras
  initializers draw their seed when they are constructed, not when called.

Keras 3 internals used (``keras.src``: the deferred-variable list, ``_value``,
``_initializer``, ``_deferred_initialize``), all in this module; ``tests/test_pending_variables.py``
fails if a Keras upgrade changes them.
"""

import contextlib
from typing import Any, List


# keras is imported where used: checkpoint_io (the bottom) fills through this module and
# loads without it.
_PENDING = "uninitialized_variables"  # keras.src.backend.common.variables' global list


def is_pending(variable: Any) -> bool:
    """True for a Keras variable created by :func:`building_empty` and not yet filled."""
    return hasattr(variable, "_deferred_initialize") and getattr(variable, "_value", 0) is None


@contextlib.contextmanager
def building_empty():
    """Weights created inside hold no value until :func:`fill` or :func:`initialize_pending`.

    The block runs in a scratch ``FuncGraph``: a dummy forward pass that creates the weights
    is traced, not run (its tensors must not escape the block). Nothing is allocated for a
    pending weight; reading it inside the block traces its initializer without running it.
    """
    import keras
    import tensorflow as tf
    with keras.StatelessScope(initialize_variables=False):
        with tf.__internal__.FuncGraph("bert_tf_building_empty").as_default():
            yield


def fill(variable: Any, value: Any) -> None:
    """Gives ``variable`` the array or tensor ``value`` (same shape; cast to its dtype by the
    caller): a pending weight is created from it (a CPU tensor's buffer is adopted, not
    copied: TF's ``AssignVariableOp`` on a new variable), an allocated one is assigned."""
    if is_pending(variable):
        variable._initializer = lambda shape, dtype=None: value
        variable._deferred_initialize()
    else:
        variable.assign(value)


def pending_variables() -> List[Any]:
    """The Keras variables created empty and not filled yet."""
    from keras.src.backend.common import global_state
    listed = global_state.get_global_attribute(_PENDING) or []
    return [v for v in listed if is_pending(v)]


def initialize_pending() -> int:
    """Gives every pending weight its own initializer's value; returns how many there were.

    The values are those a plain build gives (Keras random initializers hold the seed they
    drew when constructed). Runs in the caller's distribution strategy scope.
    """
    from keras.src.backend.common import global_state
    todo = pending_variables()
    for variable in todo:
        variable._deferred_initialize()
    global_state.set_global_attribute(_PENDING, [])
    return len(todo)


def discard_pending() -> int:
    """Forgets the pending weights without allocating them (a restore that failed: the model
    is dropped, and a random value for each weight would only cost memory, or fail for a
    config too large to allocate and hide the restore's own error); returns how many."""
    from keras.src.backend.common import global_state
    count = len(pending_variables())
    global_state.set_global_attribute(_PENDING, [])
    return count
