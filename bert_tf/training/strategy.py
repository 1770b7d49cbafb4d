"""A ``tf.distribute`` strategy chosen from the original TPU flags and the machine.

The original scripts run under ``TPUEstimator``: on a TPU when ``--use_tpu`` is set (a
``TPUClusterResolver(tpu_name, zone=tpu_zone, project=gcp_project)`` is built only when
``tpu_name`` is given, else ``--master`` is used), otherwise on one CPU or GPU (spec
`bert.md` section 6.3, "TPU plumbing"). Here the same flags select, in order:

1. ``use_tpu``: ``TPUClusterResolver`` + ``TPUStrategy``;
2. a ``TF_CONFIG`` cluster with more than one chief/worker task:
   ``MultiWorkerMirroredStrategy``;
3. more than one visible GPU: ``MirroredStrategy`` over all of them;
4. otherwise the default strategy (one device).

XLNet's ``run_classifier.py`` names these flags ``--tpu`` (the TPU name) and
``--num_core_per_host`` x ``--num_hosts`` (the TPU cores), and runs on GPUs with a
``MirroredStrategy`` over ``--num_core_per_host`` of them (spec `xlnet.md` 8.1);
:func:`strategy_from_flags` reads either vocabulary.
"""

import json
import os
from typing import Any, Optional

import tensorflow as tf
from absl import logging

from bert_tf.errors import ConfigError, FlagError


def tf_config_num_workers(tf_config: Optional[str]) -> int:
    """Number of chief + worker tasks in a ``TF_CONFIG`` JSON string (0 when unset or empty).

    Raises:
      ConfigError: the string is not JSON or not a JSON object, its ``cluster`` is not a
        mapping of task lists, it declares parameter servers (``ps``), which the custom loop
        does not support, or its
        ``task`` does not name one of the cluster's chief/worker tasks (bert_tf: TensorFlow
        raised a traceback without ``task``, and ignored an index beyond a one-worker cluster).
    """
    if not tf_config or not tf_config.strip():
        return 0
    try:
        config = json.loads(tf_config)
    except ValueError as e:
        raise ConfigError(f"TF_CONFIG: not valid JSON ({e})") from e
    if not isinstance(config, dict):  # bert_tf: a list was ignored; TF's RunConfig fails on it
        raise ConfigError(f"TF_CONFIG must be a JSON object with 'cluster' and 'task', got a "
                          f"{type(config).__name__}")
    cluster = config.get("cluster")
    if not cluster:
        return 0
    if not isinstance(cluster, dict):
        raise ConfigError(f"TF_CONFIG: 'cluster' must be a mapping of task lists, got {cluster!r}")
    if cluster.get("ps"):
        raise ConfigError("TF_CONFIG: parameter-server clusters ('ps' tasks) are not supported; "
                          "use chief/worker tasks (MultiWorkerMirroredStrategy)")
    count = 0
    for job in ("chief", "worker"):
        tasks = cluster.get(job) or []
        if not isinstance(tasks, (list, tuple)):
            raise ConfigError(f"TF_CONFIG: cluster['{job}'] must be a list of host:port, "
                              f"got {tasks!r}")
        count += len(tasks)
    if count:
        _check_task(config.get("task"), cluster)
    return count


def _check_task(task, cluster) -> None:
    """Raises ConfigError unless ``task`` is ``{"type": "chief"|"worker", "index": i}`` with
    ``i`` an index of that job's list in ``cluster``."""
    where = 'TF_CONFIG: a cluster needs its "task": {"type": "worker", "index": <this ' \
            'process\'s place in cluster["worker"]>}'
    if not isinstance(task, dict):
        raise ConfigError(f"{where}; got {task!r}")
    job, index = task.get("type"), task.get("index")
    if job not in ("chief", "worker") or not cluster.get(job):
        jobs = [j for j in ("chief", "worker") if cluster.get(j)]
        raise ConfigError(f"TF_CONFIG: task type {job!r} is not a job of the cluster "
                          f"({', '.join(jobs)})")
    if not isinstance(index, int) or isinstance(index, bool) or not \
            0 <= index < len(cluster[job]):
        raise ConfigError(f"TF_CONFIG: task index {index!r} is not in [0, {len(cluster[job])}) "
                          f"(cluster['{job}'] has {len(cluster[job])} task(s))")


def _cluster_tasks(tf_config: str):
    cluster = json.loads(tf_config)["cluster"]
    return [f"{job} {i} at {address}" for job in ("chief", "worker")
            for i, address in enumerate(cluster.get(job) or [])]


def get_strategy(use_tpu: bool = False, tpu_name: Optional[str] = None,
                 tpu_zone: Optional[str] = None, gcp_project: Optional[str] = None,
                 master: Optional[str] = None, num_tpu_cores: int = 8,
                 max_gpus: Optional[int] = None, multi_worker: bool = True):
    """Returns the ``tf.distribute.Strategy`` for these flags and this machine.

    Args:
      use_tpu, tpu_name, tpu_zone, gcp_project, master, num_tpu_cores: the original flags.
        On TPU the resolver gets ``tpu_name``, else ``master``, else ``""`` (a local TPU VM).
        ``num_tpu_cores`` is checked against the replicas found (a warning when different:
        TPUStrategy uses every core of the slice).
      max_gpus: use at most this many of the visible GPUs (XLNet's ``--num_core_per_host``;
        None: all of them).
      multi_worker: honour a ``TF_CONFIG`` cluster (BERT); False for XLNet, whose original
        runs on the GPUs of one host.

    Returns:
      ``TPUStrategy``, ``MultiWorkerMirroredStrategy``, ``MirroredStrategy`` or the default
      strategy (see the module docstring). Build models and optimizers under its ``scope()``.

    Raises:
      FlagError: ``use_tpu`` is set and no TPU can be reached (names the flags).
      ConfigError: a malformed ``TF_CONFIG``.
    """
    if use_tpu:
        tpu = tpu_name or master or ""
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=tpu, zone=tpu_zone, project=gcp_project)
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except (ValueError, OSError, tf.errors.OpError) as e:  # OSError: URLError, DNS
            raise FlagError(f"--use_tpu: cannot reach TPU {tpu!r} (--tpu_name/--master, "
                            f"--tpu_zone={tpu_zone}, --gcp_project={gcp_project}): {e}") from e
        strategy = tf.distribute.TPUStrategy(resolver)
        if num_tpu_cores and strategy.num_replicas_in_sync != num_tpu_cores:
            logging.warning("--num_tpu_cores=%d but the TPU has %d cores; using all of them",
                            num_tpu_cores, strategy.num_replicas_in_sync)
        logging.info("Running on TPU %r with %d replicas", tpu, strategy.num_replicas_in_sync)
        return strategy
    workers = tf_config_num_workers(os.environ.get("TF_CONFIG")) if multi_worker else 0
    if workers > 1:
        logging.info("TF_CONFIG declares %d workers: MultiWorkerMirroredStrategy; it waits "
                     "here until every task of the cluster has started (%s)", workers,
                     ", ".join(_cluster_tasks(os.environ["TF_CONFIG"])))
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if max_gpus is not None and max_gpus < len(gpus):
        logging.info("--num_core_per_host=%d but %d GPU(s) visible: using %d", max_gpus,
                     len(gpus), max_gpus)
        gpus = gpus[:max_gpus]
    if len(gpus) > 1:
        logging.info("%d GPUs: MirroredStrategy", len(gpus))
        return tf.distribute.MirroredStrategy([d.name for d in gpus])
    logging.info("Running on one device (%s)", gpus[0].name if gpus else "CPU")
    return tf.distribute.get_strategy()


def strategy_from_flags(flags: Any, multi_worker: Optional[bool] = None):
    """:func:`get_strategy` with the values of an absl ``FLAGS`` (or any object with them).

    BERT's flags: ``use_tpu``, ``tpu_name``, ``tpu_zone``, ``gcp_project``, ``master``,
    ``num_tpu_cores``. XLNet's, used when ``flags`` has ``num_core_per_host`` and no
    ``num_tpu_cores`` (e.g.
    :class:`bert_tf.xlnet.tasks.classifier.XLNetClassifierArgs`): ``tpu`` for the TPU name,
    ``num_hosts * num_core_per_host`` TPU cores, at most ``num_core_per_host`` GPUs, no
    ``TF_CONFIG`` cluster. Flags that are not defined take the original defaults (use_tpu
    False, num_tpu_cores 8, num_hosts 1). :func:`check_tpu_flags` runs first.
    ``multi_worker``: honour a ``TF_CONFIG`` cluster; default True for BERT's flags, False for
    XLNet's (XLNet's pretraining passes True: bert_tf's two-host run of train_gpu.py).

    Raises:
      FlagError: see :func:`check_tpu_flags` and :func:`get_strategy`.
    """
    def value(name, default):
        try:
            return getattr(flags, name)
        except AttributeError:
            return default

    check_tpu_flags(flags)
    cores_per_host = value("num_core_per_host", None)
    if cores_per_host is not None and value("num_tpu_cores", None) is None:
        return get_strategy(use_tpu=value("use_tpu", False), tpu_name=value("tpu", None),
                            tpu_zone=value("tpu_zone", None),
                            gcp_project=value("gcp_project", None),
                            master=value("master", None),
                            num_tpu_cores=value("num_hosts", 1) * cores_per_host,
                            max_gpus=cores_per_host, multi_worker=bool(multi_worker))
    return get_strategy(use_tpu=value("use_tpu", False), tpu_name=value("tpu_name", None),
                        tpu_zone=value("tpu_zone", None), gcp_project=value("gcp_project", None),
                        master=value("master", None), num_tpu_cores=value("num_tpu_cores", 8),
                        multi_worker=multi_worker is None or multi_worker)


# Flags whose paths a TPU's own hosts open (input pipelines, checkpoint save and restore, event
# files): on a Cloud TPU node those hosts cannot see this machine's disk.
TPU_PATH_FLAGS = ("output_dir", "init_checkpoint", "data_dir", "input_file", "model_dir",
                  "record_info_dir", "predict_dir", "summary_dir", "cached_dir")
TPU_BATCH_FLAGS = ("train_batch_size", "eval_batch_size", "predict_batch_size")


def check_tpu_flags(flags: Any) -> None:
    """With ``--use_tpu``, the TPU mistakes of google-research/bert#384 and #445 as one line each,
    before any work (bert_tf: the original fails later, deep in a TPU error).

    Checks, only when ``use_tpu`` is set:

    * every path flag of :data:`TPU_PATH_FLAGS` that is given (comma-separated lists included)
      is a ``gs://`` path, unless the TPU is ``local`` (a TPU VM, whose host is this machine:
      ``--tpu_name=local`` / ``--tpu=local`` / ``--master=local``);
    * BERT: each batch flag of :data:`TPU_BATCH_FLAGS` divides by ``--num_tpu_cores``
      (TPUEstimator shards the global batch over the cores, spec `bert.md` 6.3);
    * XLNet (flags with ``num_core_per_host`` and no ``num_tpu_cores``): each batch divides by
      ``num_hosts * num_core_per_host`` and, with ``--bi_data``, the training batch per core is
      even (data_utils.py / train.py ``assert bsz_per_core % 2 == 0``).

    Args:
      flags: absl ``FLAGS`` or an args dataclass; flags it does not have are skipped.

    Raises:
      FlagError: naming the flag and its value.
    """
    def value(name, default=None):
        try:
            return getattr(flags, name)
        except AttributeError:
            return default

    if not value("use_tpu", False):
        return
    tpu_vm = "local" in (value("tpu_name"), value("tpu"), value("master"))
    for name in () if tpu_vm else TPU_PATH_FLAGS:
        paths = value(name)
        if not paths or not isinstance(paths, str):
            continue
        for path in paths.split(","):
            path = path.strip()
            if path and not path.startswith("gs://"):
                raise FlagError(f"--{name}={path}: a TPU needs gs:// paths (its hosts cannot "
                                f"read or write this machine's disk); copy it to a Cloud "
                                f"Storage bucket, or run without --use_tpu")
    cores_per_host = value("num_core_per_host")
    xlnet = cores_per_host is not None and value("num_tpu_cores") is None
    if xlnet:
        cores = value("num_hosts", 1) * cores_per_host
        core_flags = f"--num_hosts={value('num_hosts', 1)} x --num_core_per_host={cores_per_host}"
    else:
        cores = value("num_tpu_cores", 8)
        core_flags = f"--num_tpu_cores={cores}"
    if not cores or cores < 1:
        raise FlagError(f"{core_flags}: a TPU needs at least one core")
    for name in TPU_BATCH_FLAGS:
        batch = value(name)
        if batch is None:
            continue
        if batch % cores:
            raise FlagError(f"--{name}={batch} does not divide by the {cores} TPU cores "
                            f"({core_flags}): use a multiple of {cores}")
    train_batch = value("train_batch_size")
    if xlnet and value("bi_data", False) and train_batch is not None and (train_batch // cores) % 2:
        raise FlagError(f"--bi_data=True needs an even batch per TPU core (forward and backward "
                        f"halves): --train_batch_size={train_batch} over {cores} cores "
                        f"({core_flags}) gives {train_batch // cores}")
