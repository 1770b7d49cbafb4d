"""get_strategy selection logic (spec bert.md 6.3 TPU plumbing), without TPUs or clusters."""
import json
import types

import pytest
import tensorflow as tf

from bert_tf.errors import ConfigError, FlagError
from bert_tf.training import strategy as strategy_lib


class FakeStrategy:
    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs
        self.num_replicas_in_sync = 8


@pytest.fixture
def no_tf_config(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)


def cluster(workers, chief=0, ps=0):
    c = {"worker": [f"host{i}:2222" for i in range(workers)]}
    if chief:
        c["chief"] = ["chief0:2222"]
    if ps:
        c["ps"] = ["ps0:2222"]
    return json.dumps({"cluster": c, "task": {"type": "worker", "index": 0}})


@pytest.mark.parametrize("value,expected", [
    (None, 0), ("", 0), ("  ", 0), ('{"task": {"type": "worker", "index": 0}}', 0),
    (cluster(1), 1), (cluster(2), 2), (cluster(1, chief=1), 2), (cluster(3, chief=1), 4),
])
def test_tf_config_num_workers(value, expected):
    assert strategy_lib.tf_config_num_workers(value) == expected


@pytest.mark.parametrize("value,match", [
    # fresh round of issue 27: a traceback from TensorFlow, and an index silently ignored
    ('{"cluster": {"worker": ["a:1", "b:2"]}}', r'^TF_CONFIG: a cluster needs its "task"'),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 5}}',
     r"^TF_CONFIG: task index 5 is not in \[0, 1\) \(cluster\['worker'\] has 1 task\(s\)\)$"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "chief", "index": 0}}',
     r"^TF_CONFIG: task type 'chief' is not a job of the cluster \(worker\)$"),
    ('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "0"}}',
     "task index '0' is not in"),
])
def test_tf_config_task_must_name_a_task_of_the_cluster(value, match):
    with pytest.raises(ConfigError, match=match):
        strategy_lib.tf_config_num_workers(value)


@pytest.mark.parametrize("value,match", [
    ("{not json", "not valid JSON"),
    (cluster(2, ps=1), "parameter-server"),
    ('{"cluster": {"worker": "host0:2222"}}', "must be a list"),
    ('{"cluster": ["host0:2222"]}', "mapping"),
    # fresh round 3 (r3_cls_tfconfig_list): a list was ignored, one device, exit 0
    ("[]", r"^TF_CONFIG must be a JSON object with 'cluster' and 'task', got a list$"),
    ('"worker"', r"^TF_CONFIG must be a JSON object with 'cluster' and 'task', got a str$"),
])
def test_tf_config_errors(value, match):
    with pytest.raises(ConfigError, match=match):
        strategy_lib.tf_config_num_workers(value)


def test_cpu_gives_default_strategy(no_tf_config):
    if len(tf.config.list_logical_devices("GPU")) > 1:
        pytest.skip("machine has several GPUs")
    s = strategy_lib.get_strategy()
    assert s is tf.distribute.get_strategy()
    assert not tf.distribute.has_strategy()
    assert s.num_replicas_in_sync == 1


def test_single_worker_tf_config_gives_default(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", cluster(1))
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda kind=None: [])
    assert strategy_lib.get_strategy() is tf.distribute.get_strategy()


def test_multi_worker_tf_config_gives_multi_worker_mirrored(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", cluster(2))
    monkeypatch.setattr(tf.distribute, "MultiWorkerMirroredStrategy", FakeStrategy)
    assert isinstance(strategy_lib.get_strategy(), FakeStrategy)


def test_several_gpus_give_mirrored(no_tf_config, monkeypatch):
    gpus = [types.SimpleNamespace(name="/device:GPU:0"), types.SimpleNamespace(name="/device:GPU:1")]
    monkeypatch.setattr(tf.config, "list_logical_devices",
                        lambda kind=None: gpus if kind == "GPU" else [])
    monkeypatch.setattr(tf.distribute, "MirroredStrategy", FakeStrategy)
    s = strategy_lib.get_strategy()
    assert isinstance(s, FakeStrategy)
    assert s.args == (["/device:GPU:0", "/device:GPU:1"],)


def fake_tpu(monkeypatch, fail=False):
    calls = {}

    class Resolver:
        def __init__(self, tpu=None, zone=None, project=None):
            if fail:
                raise ValueError("Please provide a TPU Name to connect to.")
            calls["resolver"] = (tpu, zone, project)

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", Resolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster",
                        lambda r: calls.setdefault("connect", r))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system",
                        lambda r: calls.setdefault("init", r))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", FakeStrategy)
    return calls


def test_use_tpu_builds_resolver_from_flags(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", cluster(4))  # TPU wins over TF_CONFIG
    calls = fake_tpu(monkeypatch)
    s = strategy_lib.get_strategy(use_tpu=True, tpu_name="my-tpu", tpu_zone="us-central1-b",
                                  gcp_project="proj", master="grpc://ignored:8470")
    assert isinstance(s, FakeStrategy)
    assert calls["resolver"] == ("my-tpu", "us-central1-b", "proj")
    assert "connect" in calls and "init" in calls


def test_use_tpu_falls_back_to_master_then_local(monkeypatch):
    calls = fake_tpu(monkeypatch)
    strategy_lib.get_strategy(use_tpu=True, master="grpc://10.0.0.2:8470")
    assert calls["resolver"][0] == "grpc://10.0.0.2:8470"
    calls = fake_tpu(monkeypatch)
    strategy_lib.get_strategy(use_tpu=True)
    assert calls["resolver"][0] == ""


def test_unreachable_tpu_is_a_flag_error(monkeypatch):
    fake_tpu(monkeypatch, fail=True)
    with pytest.raises(FlagError, match="--use_tpu"):
        strategy_lib.get_strategy(use_tpu=True, tpu_name="nope")


def test_strategy_from_flags(no_tf_config, monkeypatch):
    calls = fake_tpu(monkeypatch)
    flags = types.SimpleNamespace(use_tpu=True, tpu_name="t", tpu_zone="z", gcp_project="p",
                                  master=None, num_tpu_cores=8)
    assert isinstance(strategy_lib.strategy_from_flags(flags), FakeStrategy)
    assert calls["resolver"] == ("t", "z", "p")
    monkeypatch.setattr(tf.config, "list_logical_devices", lambda kind=None: [])
    assert strategy_lib.strategy_from_flags(types.SimpleNamespace()) is tf.distribute.get_strategy()


def test_strategy_from_xlnet_flags(no_tf_config, monkeypatch):
    """XLNet's vocabulary: --tpu names the TPU, num_hosts x num_core_per_host cores; on GPUs
    a MirroredStrategy over at most --num_core_per_host of them, TF_CONFIG not read."""
    calls = fake_tpu(monkeypatch)
    xlnet = types.SimpleNamespace(use_tpu=True, tpu="xt", tpu_zone="z", gcp_project="p",
                                  master=None, num_hosts=2, num_core_per_host=4)
    s = strategy_lib.strategy_from_flags(xlnet)
    assert isinstance(s, FakeStrategy) and calls["resolver"] == ("xt", "z", "p")
    gpus = [types.SimpleNamespace(name=f"/device:GPU:{i}") for i in range(3)]
    monkeypatch.setattr(tf.config, "list_logical_devices",
                        lambda kind=None: gpus if kind == "GPU" else [])
    monkeypatch.setattr(tf.distribute, "MirroredStrategy", FakeStrategy)
    monkeypatch.setenv("TF_CONFIG", cluster(2))
    two = strategy_lib.strategy_from_flags(types.SimpleNamespace(num_core_per_host=2))
    assert two.args == (["/device:GPU:0", "/device:GPU:1"],)
    eight = strategy_lib.strategy_from_flags(types.SimpleNamespace(num_core_per_host=8))
    assert eight.args == ([g.name for g in gpus],)  # fewer GPUs than cores: all of them
    one = strategy_lib.strategy_from_flags(types.SimpleNamespace(num_core_per_host=1))
    assert one is tf.distribute.get_strategy()
