"""Two worker processes on 127.0.0.1 train run_classifier, run_pretraining (BERT) and XLNet's
pretraining with MultiWorkerMirroredStrategy (issue 17, deliverable 6).

TF_CONFIG declares two workers (spec `bert.md` 6.3 "TPU plumbing" has no multi-worker path;
this is bert_tf's `strategy_from_flags`). Both must finish, the chief (worker 0) alone writes
the one checkpoint, and the weights after training are the same on both workers and in the
checkpoint. Only 127.0.0.1 is used (proxies are cleared); each worker is killed after a
bounded time.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN_MRPC = os.path.join(REPO, "tests", "golden", "bert", "classifier", "MRPC")
TIME_LIMIT_S = 300

WORKER = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from absl import logging
    from bert_tf.bert.tasks.classifier import ClassifierArgs, run

    logging.set_verbosity(logging.INFO)
    spec = json.loads(sys.argv[1])
    args = ClassifierArgs(**spec["args"])
    result = run(args)
    np.savez(spec["weights"], **{name: np.asarray(v.numpy())
                                 for name, v in result.model.name_map().items()})
    with open(spec["report"], "w") as f:
        json.dump({"global_step": result.global_step,
                   "eval_results": {k: float(v) for k, v in result.eval_results.items()}}, f)
""")


def _free_ports(n):
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _worker_env(tf_config):
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "grpc_proxy")}
    env.update(TF_CONFIG=json.dumps(tf_config), no_proxy="127.0.0.1,localhost",
               NO_PROXY="127.0.0.1,localhost", TF_CPP_MIN_LOG_LEVEL="2",
               CUDA_VISIBLE_DEVICES="",
               PYTHONPATH=os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p))
    return env


def run_two_workers(tmp_path, worker_code, make_spec):
    """Starts ``worker_code`` (a script taking one JSON argument, ``make_spec(i)``) as workers
    0 and 1 of a TF_CONFIG cluster on 127.0.0.1, in ``tmp_path``; waits at most
    ``TIME_LIMIT_S`` (then kills them). Returns ``(return codes, logs)``."""
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    script = tmp_path / "worker.py"
    script.write_text(worker_code)
    procs, logs = [], []
    for i in range(2):
        log = open(tmp_path / f"worker_{i}.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, str(script), json.dumps(make_spec(i))], cwd=str(tmp_path),
            stdout=log, stderr=subprocess.STDOUT,
            env=_worker_env({"cluster": cluster, "task": {"type": "worker", "index": i}})))
    deadline = time.time() + TIME_LIMIT_S
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.time()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for log in logs:
            log.close()
    worker_logs = [(tmp_path / f"worker_{i}.log").read_text() for i in range(2)]
    codes = [p.returncode for p in procs]
    assert codes == [0, 0], "\n----\n".join(log[-3000:] for log in worker_logs)
    return codes, worker_logs


@pytest.mark.slow  # heavy (tens of seconds); run with -m slow
def test_two_workers_train_one_checkpoint_same_weights(uncased_vocab_file, tmp_path):
    model_dir = tmp_path / "tiny"
    model_dir.mkdir()
    (model_dir / "bert_config.json").write_text(json.dumps(dict(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=64, type_vocab_size=2,
        initializer_range=0.02)))
    shutil.copy(uncased_vocab_file, model_dir / "vocab.txt")
    out = tmp_path / "out"
    # 40 train rows / global batch 8 (4 per worker) * 0.8 epochs = 4 steps, no init_checkpoint:
    # the initial values must also agree (broadcast from worker 0).
    clf_args = dict(task_name="MRPC", data_dir=GOLDEN_MRPC, output_dir=str(out),
                    vocab_file=str(model_dir / "vocab.txt"),
                    bert_config_file=str(model_dir / "bert_config.json"),
                    do_train=True, do_eval=True, max_seq_length=32, train_batch_size=8,
                    eval_batch_size=8, num_train_epochs=0.8, learning_rate=1e-3)
    def make_spec(i):
        return {"args": clf_args, "weights": str(tmp_path / f"weights_{i}.npz"),
                "report": str(tmp_path / f"report_{i}.json")}

    _, worker_logs = run_two_workers(tmp_path, WORKER, make_spec)
    for log in worker_logs:
        assert "TF_CONFIG declares 2 workers: MultiWorkerMirroredStrategy" in log
        assert "global_step = 4, loss = " in log
    assert worker_logs[0].count("Saved checkpoint") == 1
    assert "Saved checkpoint" not in worker_logs[1]

    index_files = sorted(f for f in os.listdir(out) if f.endswith(".index"))
    assert index_files == ["model.ckpt-4.index"]
    reports = [json.loads((tmp_path / f"report_{i}.json").read_text()) for i in range(2)]
    assert [r["global_step"] for r in reports] == [4, 4]
    assert reports[0]["eval_results"] == pytest.approx(reports[1]["eval_results"], abs=1e-6)

    w0, w1 = (np.load(tmp_path / f"weights_{i}.npz") for i in range(2))
    assert sorted(w0.files) == sorted(w1.files)
    ckpt = tf.train.load_checkpoint(str(out / "model.ckpt-4"))
    assert int(ckpt.get_tensor("global_step")) == 4
    for name in w0.files:
        np.testing.assert_allclose(w0[name], w1[name], rtol=0, atol=1e-6, err_msg=name)
        np.testing.assert_array_equal(ckpt.get_tensor(name), w0[name], err_msg=name)


PRETRAINING_WORKER = textwrap.dedent("""
    import json, sys
    from absl import logging

    logging.set_verbosity(logging.INFO)
    spec = json.loads(sys.argv[1])
    if spec["family"] == "bert":
        from bert_tf.bert.tasks.pretraining import PretrainingArgs, run as run_pretraining
        result = run_pretraining(PretrainingArgs(**spec["args"]))
        train, metrics = result.train, result.eval_metrics
    else:
        from tests.xlnet.tasks.test_pretraining import tiny_args
        from bert_tf.xlnet.tasks import pretraining as xlnet_pretraining
        train, metrics = xlnet_pretraining.run(tiny_args(**spec["args"])).train, None
    with open(spec["report"], "w") as f:
        json.dump({"global_step": train.global_step, "last_loss": train.last_loss,
                   "eval": {k: float(v) for k, v in (metrics or {}).items()}}, f)
""")


def _check_pretraining_workers(tmp_path, worker_logs, out, steps):
    """Both workers ran ``steps`` updates under MultiWorkerMirroredStrategy with the same
    (all-reduced) loss; the chief alone wrote the checkpoints."""
    for log in worker_logs:
        assert "TF_CONFIG declares 2 workers: MultiWorkerMirroredStrategy" in log
    assert "Saved checkpoint" in worker_logs[0] and "Saved checkpoint" not in worker_logs[1]
    reports = [json.loads((tmp_path / f"report_{i}.json").read_text()) for i in range(2)]
    assert [r["global_step"] for r in reports] == [steps, steps]
    assert reports[0]["last_loss"] == pytest.approx(reports[1]["last_loss"], abs=1e-6)
    assert reports[0]["eval"] == pytest.approx(reports[1]["eval"], abs=1e-6)
    ckpt = tf.train.load_checkpoint(str(out / f"model.ckpt-{steps}"))
    assert int(ckpt.get_tensor("global_step")) == steps
    return reports


@pytest.mark.slow  # two TF processes; a minute or more on 2 shared cores
def test_two_workers_run_pretraining_bert(tmp_path):
    """run_pretraining.py (BERT) on two workers: global batch 8 (4 per worker) from the golden
    pretraining records, 2 steps, then eval on both."""
    config = tmp_path / "bert_config.json"
    config.write_text(json.dumps(dict(
        vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=128, type_vocab_size=2,
        initializer_range=0.02)))
    out = tmp_path / "out"
    args = dict(bert_config_file=str(config), output_dir=str(out),
                input_file=os.path.join(REPO, "tests", "golden", "bert", "pretraining_data",
                                        "tf_examples.tfrecord"),
                do_train=True, do_eval=True, train_batch_size=8, eval_batch_size=8,
                num_train_steps=2, num_warmup_steps=1, save_checkpoints_steps=2,
                max_eval_steps=2, learning_rate=1e-3)
    _, logs = run_two_workers(tmp_path, PRETRAINING_WORKER, lambda i: {
        "family": "bert", "args": args, "report": str(tmp_path / f"report_{i}.json")})
    reports = _check_pretraining_workers(tmp_path, logs, out, 2)
    assert "masked_lm_accuracy" in reports[0]["eval"]


@pytest.mark.slow  # two TF processes; a minute or more on 2 shared cores
def test_two_workers_run_pretraining_xlnet(tmp_path):
    """XLNet train_gpu.py's run on two workers (memory carried per replica): the golden
    records (bsz 4), 2 steps."""
    records = os.path.join(REPO, "tests", "golden", "xlnet", "pretraining_data", "tfrecords")
    out = tmp_path / "model"
    args = dict(record_info_dir=records, model_dir=str(out), train_steps=2, iterations=1,
                save_steps=2)
    _, logs = run_two_workers(tmp_path, PRETRAINING_WORKER, lambda i: {
        "family": "xlnet", "args": args, "report": str(tmp_path / f"report_{i}.json")})
    _check_pretraining_workers(tmp_path, logs, out, 2)
