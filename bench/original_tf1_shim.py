"""Runs an UNMODIFIED original google-research/bert script (TF 1.x) under TF 2.15 (issue 16).

    python bench/original_tf1_shim.py $BERT_ORIGINAL_DIR/extract_features.py --input_file=... ...

(with the TF 2.15 venv's python: ``bash bench/original_venv.sh`` prints its path). The script's
own folder goes first on ``sys.path`` (its ``import modeling`` / ``import tokenization``), its
flags are the rest of the command line, and it runs as ``__main__``.

What stands in for TF 1.x (ours, built from TF 2.15's own modules; nothing of the original is
copied here):

* ``import tensorflow as tf`` gives ``tf.compat.v1`` (after ``disable_v2_behavior()``): graph
  mode, ``tf.flags``, ``tf.app``, ``tf.gfile``, ``tf.logging``, ``tf.python_io``, ``tf.layers``,
  ``tf.estimator``, ``tf.train`` ... as TF 1.15 had them;
* ``tf.contrib``, which TF 2 no longer has, with the names the original BERT scripts use:
  ``tpu.{TPUEstimator, TPUEstimatorSpec, RunConfig, TPUConfig, InputPipelineConfig,
  CrossShardOptimizer}`` (``tf.compat.v1.estimator.tpu`` / ``tf.compat.v1.tpu``),
  ``data.{map_and_batch, parallel_interleave}`` (``tf.compat.v1.data.experimental``),
  ``cluster_resolver.TPUClusterResolver`` (``tf.compat.v1.distribute.cluster_resolver``) and
  ``layers.layer_norm``, restated from TF 1.15's ``tf.contrib.layers.layer_norm`` as BERT calls
  it: variable scope ``scope`` (default ``LayerNorm``) holding ``beta`` (zeros) then ``gamma``
  (ones) of shape ``inputs.shape[begin_params_axis:]``, moments over axes
  ``begin_norm_axis..rank-1``, ``tf.nn.batch_normalization`` with epsilon 1e-12.

Checked end to end with extract_features.py, create_pretraining_data.py and run_classifier.py
(``--do_train/--do_eval/--do_predict`` with ``--use_tpu=False``). Bench-time only: no test and no
module of bert_tf imports this file.
"""

import os
import runpy
import sys
import types


def _layer_norm_factory(v1):
    """TF 1.15 ``tf.contrib.layers.layer_norm`` restated on ``tf.compat.v1`` (graph mode)."""

    def layer_norm(inputs, center=True, scale=True, activation_fn=None, reuse=None,
                   variables_collections=None, outputs_collections=None, trainable=True,
                   begin_norm_axis=1, begin_params_axis=-1, scope=None):
        """``inputs`` [..., H] float -> same shape and dtype, normalized over
        ``begin_norm_axis..`` with a learned ``beta`` / ``gamma`` over ``begin_params_axis..``."""
        if variables_collections or outputs_collections:
            raise NotImplementedError("layer_norm shim: *_collections are not supported")
        inputs = v1.convert_to_tensor(inputs)
        rank = inputs.shape.ndims
        if rank is None:
            raise ValueError(f"layer_norm shim: inputs {inputs.name} have unknown rank")
        if begin_norm_axis < 0:
            begin_norm_axis += rank
        if begin_params_axis < 0:
            begin_params_axis += rank
        if begin_norm_axis >= rank or begin_params_axis >= rank:
            raise ValueError(f"layer_norm shim: begin axes out of range for rank {rank}")
        params_shape = inputs.shape[begin_params_axis:]
        if not params_shape.is_fully_defined():
            raise ValueError(f"layer_norm shim: {inputs.name} has undefined dims {params_shape}")
        with v1.variable_scope(scope, "LayerNorm", [inputs], reuse=reuse):
            beta = gamma = None
            if center:
                beta = v1.get_variable("beta", shape=params_shape, dtype=inputs.dtype.base_dtype,
                                       initializer=v1.zeros_initializer(), trainable=trainable)
            if scale:
                gamma = v1.get_variable("gamma", shape=params_shape, dtype=inputs.dtype.base_dtype,
                                        initializer=v1.ones_initializer(), trainable=trainable)
            norm_axes = list(range(begin_norm_axis, rank))
            mean, variance = v1.nn.moments(inputs, norm_axes, keep_dims=True)
            outputs = v1.nn.batch_normalization(inputs, mean, variance, offset=beta, scale=gamma,
                                                variance_epsilon=1e-12)
            outputs.set_shape(inputs.shape)
            if activation_fn is not None:
                outputs = activation_fn(outputs)
            return outputs

    return layer_norm


class _TF1Module(types.ModuleType):
    """``tensorflow`` as TF 1.x scripts see it: ``tf.compat.v1`` plus ``contrib``."""

    def __init__(self, real, v1, contrib):
        super().__init__("tensorflow", getattr(v1, "__doc__", None))
        self.__dict__["_v1"] = v1
        self.__dict__["contrib"] = contrib
        # Submodule imports (``import tensorflow.python.x``) keep resolving in the real package.
        for key in ("__path__", "__file__", "__spec__", "__loader__", "__version__"):
            if hasattr(real, key):
                self.__dict__[key] = getattr(real, key)

    def __getattr__(self, name):
        return getattr(self.__dict__["_v1"], name)


def install():
    """Puts the TF 1.x stand-in at ``sys.modules['tensorflow']``; returns it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as real  # noqa: E402  (the TF 2.15 venv's)

    v1 = real.compat.v1
    v1.disable_v2_behavior()
    # Resolve the lazily loaded pieces before the swap, while ``tensorflow`` is still the real one.
    estimator_tpu = v1.estimator.tpu
    _ = (v1.layers.dense, v1.estimator.Estimator, v1.data.experimental.map_and_batch)
    contrib = types.SimpleNamespace(
        tpu=types.SimpleNamespace(
            TPUEstimator=estimator_tpu.TPUEstimator,
            TPUEstimatorSpec=estimator_tpu.TPUEstimatorSpec,
            RunConfig=estimator_tpu.RunConfig,
            TPUConfig=estimator_tpu.TPUConfig,
            InputPipelineConfig=estimator_tpu.InputPipelineConfig,
            CrossShardOptimizer=v1.tpu.CrossShardOptimizer,
        ),
        data=types.SimpleNamespace(
            map_and_batch=v1.data.experimental.map_and_batch,
            parallel_interleave=v1.data.experimental.parallel_interleave,
        ),
        cluster_resolver=types.SimpleNamespace(
            TPUClusterResolver=v1.distribute.cluster_resolver.TPUClusterResolver,
        ),
        layers=types.SimpleNamespace(layer_norm=_layer_norm_factory(v1)),
    )
    module = _TF1Module(real, v1, contrib)
    sys.modules["tensorflow"] = module
    return module


def main(argv):
    if len(argv) < 2 or not argv[1].endswith(".py"):
        sys.stderr.write("usage: python bench/original_tf1_shim.py ORIGINAL_SCRIPT.py [--flags...]\n")
        return 2
    script = os.path.abspath(argv[1])
    if not os.path.isfile(script):
        sys.stderr.write(f"original_tf1_shim: {script}: no such script\n")
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path.insert(0, os.path.dirname(script))
    install()
    sys.argv = [script] + list(argv[2:])
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
