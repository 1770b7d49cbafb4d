"""Raw-text SavedModels of --export_dir (issue 12, deliverable 2), read in a FRESH process.

Each task's main runs in-process on real data (MRPC / STS-B lines, the real MiniLM weights;
XLNet: the golden tiny model, a row with a digit-comma among them), writing its own predictions and the export; then a subprocess
that imports only tensorflow + tensorflow_text loads the export and feeds it the raw strings
(and the script's own ids records to ``serving_ids``): its outputs must equal the script's
``test_results.tsv`` / embeddings / ``<task>.logits.json`` within 1e-5. ``saved_model_cli run``
and TF Serving's REST API are driven the same way.
"""
import csv
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request

import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.data.tfrecord import read_examples
from bert_tf.xlnet.tasks import classifier as xc
from bert_tf.bert.tasks.classifier import ClassifierArgs, run
from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features

# the raw strings of 6 real rows of each file (the MRPC rows hold digits, commas, quotes)
NUM_ROWS = 6
TOL = 1e-5


def _tsv_rows(path, n):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:n + 1]


def _write_tsv_head(src, dst_folder, n):
    os.makedirs(dst_folder, exist_ok=True)
    with open(src, encoding="utf-8") as f:
        lines = f.read().splitlines()[:n + 1]
    with open(os.path.join(dst_folder, "test.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def _one_version(export_dir):
    versions = [v for v in os.listdir(export_dir) if not v.startswith(".")]
    assert len(versions) == 1 and versions[0].isdigit(), versions  # no .tmp- folder left
    return os.path.join(export_dir, versions[0])


def _xlnet_lines(shared_data_dir):
    """The MRPC test header, 5 rows, and the first row with a digit-comma ("$395,000": the
    original encode_pieces re-encodes such pieces)."""
    with open(os.path.join(shared_data_dir, "MRPC", "test.tsv"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    comma = next(line for line in lines[6:] if re.search(r"\d,\d", line))
    return lines[:6] + [comma]


@pytest.fixture(scope="module")
def mrpc_rows(shared_data_dir):
    rows = _tsv_rows(os.path.join(shared_data_dir, "MRPC", "test.tsv"), NUM_ROWS)
    return [(r[3], r[4]) for r in rows]


@pytest.fixture(scope="module")
def bert_classifier(minilm_dir, golden_dir, shared_data_dir, tmp_path_factory):
    """run_classifier BERT --do_predict --export_dir on 6 real MRPC test rows (MiniLM with the
    golden classifier head)."""
    from bert_tf.convert import convert_hf_folder

    root = tmp_path_factory.mktemp("serve_clf")
    ckpt = str(root / "ckpt")
    convert_hf_folder(minilm_dir, ckpt, extra_npz=os.path.join(
        golden_dir, "bert", "classifier", "classifier_head.npz"))
    _write_tsv_head(os.path.join(shared_data_dir, "MRPC", "test.tsv"), str(root / "data"),
                    NUM_ROWS)
    out = root / "out"
    result = run(ClassifierArgs(
        task_name="MRPC", data_dir=str(root / "data"), output_dir=str(out),
        vocab_file=os.path.join(ckpt, "vocab.txt"),
        bert_config_file=os.path.join(ckpt, "bert_config.json"),
        init_checkpoint=os.path.join(ckpt, "bert_model.ckpt"), do_train=False, do_eval=False,
        do_predict=True, do_lower_case=True, max_seq_length=64, predict_batch_size=4,
        export_dir=str(root / "export")))
    probabilities = np.loadtxt(out / "test_results.tsv", dtype=np.float64, ndmin=2)
    records = list(read_examples(str(out / "predict.tf_record")))[:NUM_ROWS]
    ids = {k: np.array([r[k] for r in records], np.int32)
           for k in ("input_ids", "input_mask", "segment_ids")}
    return {"export": _one_version(str(root / "export")), "path": result.export_path,
            "probabilities": probabilities, "ids": ids}


@pytest.fixture(scope="module")
def bert_features(minilm_checkpoint_dir, shared_data_dir, tmp_path_factory):
    """extract_features --pooling=mean --layers=-1,-2 --export_dir on 5 real STS-B test rows:
    3 as ``a ||| b`` lines, 2 as single sentences."""
    root = tmp_path_factory.mktemp("serve_ef")
    rows = _tsv_rows(os.path.join(shared_data_dir, "STS-B", "test.tsv"), 5)
    pairs, singles = [(r[7], r[8]) for r in rows[:3]], [r[7] for r in rows[3:]]
    with open(root / "input.txt", "w", encoding="utf-8") as f:
        f.write("".join(f"{a} ||| {b}\n" for a, b in pairs) + "".join(f"{s}\n" for s in singles))
    ckpt = minilm_checkpoint_dir
    summary = extract_features(ExtractFeaturesArgs(
        input_file=str(root / "input.txt"), output_file=str(root / "out.jsonl"),
        bert_config_file=os.path.join(ckpt, "bert_config.json"),
        vocab_file=os.path.join(ckpt, "vocab.txt"),
        init_checkpoint=os.path.join(ckpt, "bert_model.ckpt"), layers="-1,-2",
        max_seq_length=32, pooling="mean", export_dir=str(root / "export")))
    with open(summary.embeddings_file, encoding="utf-8") as f:
        embeddings = np.array([json.loads(line)["embedding"] for line in f])
    with open(root / "out.jsonl", encoding="utf-8") as f:
        features = [json.loads(line)["features"] for line in f]
    layers = [np.array([[t["layers"][j]["values"] for t in feats] for j in range(2)])
              for feats in features]  # [2, tokens, H] each, 6 decimals
    return {"export": _one_version(str(root / "export")), "pairs": pairs, "singles": singles,
            "embeddings": embeddings, "layers": layers}


@pytest.fixture(scope="module")
def xlnet_classifier(golden_dir, shared_data_dir, tmp_path_factory):
    """XLNet run_classifier --do_predict --export_dir on the same 6 MRPC rows: the golden tiny
    model plus a fixed logit head as model.ckpt-0."""
    root = tmp_path_factory.mktemp("serve_xlnet")
    golden = os.path.join(golden_dir, "xlnet", "tiny_random")
    arrays = checkpoint_io.read_checkpoint(os.path.join(golden, "xlnet_model.ckpt"))
    rng = np.random.RandomState(0)
    arrays["model/classification_mrpc/logit/kernel"] = rng.normal(0, 0.5, [64, 2]).astype(np.float32)
    arrays["model/classification_mrpc/logit/bias"] = rng.normal(0, 0.5, [2]).astype(np.float32)
    arrays["global_step"] = np.int64(0)
    checkpoint_io.write_checkpoint(str(root / "model" / "model.ckpt-0"), arrays)
    lines = _xlnet_lines(shared_data_dir)
    os.makedirs(root / "data")
    with open(root / "data" / "test.tsv", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    result = xc.run(xc.XLNetClassifierArgs(
        output_dir=str(root / "proc"), model_dir=str(root / "model"),
        predict_dir=str(root / "pred"), data_dir=str(root / "data"),
        model_config_path=os.path.join(golden, "xlnet_config.json"),
        spiece_model_file=os.path.join(golden_dir, "xlnet", "spiece.model"), task_name="MRPC",
        do_predict=True, eval_split="test", max_seq_length=64, predict_batch_size=4,
        export_dir=str(root / "export")))
    with open(root / "pred" / "mrpc.logits.json", encoding="utf-8") as f:
        logits = np.array(json.load(f))
    rows = [line.split("\t") for line in lines[1:]]
    return {"export": _one_version(str(root / "export")), "path": result.export_path,
            "logits": logits, "rows": [(r[3], r[4]) for r in rows]}


_LOADER = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # registers the tokenizer ops the text signatures use

    job = json.load(open(sys.argv[1], encoding="utf-8"))
    out = {}
    for name, call in job.items():
        model = tf.saved_model.load(call["export"])
        fn = model.signatures[call["signature"]]
        inputs = {k: tf.constant(v, dtype=call.get("dtypes", {}).get(k, "string"))
                  for k, v in call["inputs"].items()}
        out[name] = {"signatures": sorted(model.signatures),
                     "outputs": {k: v.numpy().tolist() for k, v in fn(**inputs).items()}}
    json.dump(out, open(sys.argv[2], "w"))
""")


def _fresh_process_calls(tmp_path, job):
    """Runs ``job`` (name -> export, signature, inputs) in a new Python process; returns its
    outputs. The process imports neither bert_tf nor keras."""
    job_file, out_file = tmp_path / "job.json", tmp_path / "out.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _LOADER, str(job_file), str(out_file)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out_file.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_exports_reproduce_the_scripts_outputs_in_a_fresh_process(
        bert_classifier, bert_features, xlnet_classifier, mrpc_rows, tmp_path):
    a, b = [r[0] for r in mrpc_rows], [r[1] for r in mrpc_rows]
    ef = bert_features
    ids = bert_classifier["ids"]
    job = {
        "clf_text": {"export": bert_classifier["export"], "signature": "serving_default",
                     "inputs": {"text_a": a, "text_b": b}},
        "clf_ids": {"export": bert_classifier["export"], "signature": "serving_ids",
                    "inputs": {k: v.tolist() for k, v in ids.items()},
                    "dtypes": {k: "int32" for k in ids}},
        "ef_pairs": {"export": ef["export"], "signature": "serving_default",
                     "inputs": {"text_a": [p[0] for p in ef["pairs"]],
                                "text_b": [p[1] for p in ef["pairs"]]}},
        "ef_single": {"export": ef["export"], "signature": "serving_single",
                      "inputs": {"text_a": ef["singles"]}},
        "xlnet_text": {"export": xlnet_classifier["export"], "signature": "serving_default",
                       "inputs": {"text_a": [r[0] for r in xlnet_classifier["rows"]],
                                  "text_b": [r[1] for r in xlnet_classifier["rows"]]}},
    }
    out = _fresh_process_calls(tmp_path, job)

    assert bert_classifier["path"] == bert_classifier["export"]
    assert out["clf_text"]["signatures"] == ["serving_default", "serving_ids", "serving_single"]
    gold = bert_classifier["probabilities"]
    assert gold.shape == (NUM_ROWS, 2)
    for name in ("clf_text", "clf_ids"):
        o = out[name]["outputs"]
        np.testing.assert_allclose(np.array(o["probabilities"]), gold, atol=TOL, rtol=0)
        logits = np.array(o["logits"])  # softmax of the logits gives the probabilities
        e = np.exp(logits - logits.max(1, keepdims=True))
        np.testing.assert_allclose(e / e.sum(1, keepdims=True), gold, atol=TOL, rtol=0)

    # embeddings (6 decimals in the file) and the --layers values of every real token
    got = np.concatenate([np.array(out["ef_pairs"]["outputs"]["embedding"]),
                          np.array(out["ef_single"]["outputs"]["embedding"])])
    np.testing.assert_allclose(got, ef["embeddings"], atol=TOL, rtol=0)
    layers = (out["ef_pairs"]["outputs"]["layers"] + out["ef_single"]["outputs"]["layers"])
    masks = (out["ef_pairs"]["outputs"]["input_mask"] + out["ef_single"]["outputs"]["input_mask"])
    assert len(layers) == len(ef["layers"]) == 5
    for row, mask, expected in zip(layers, masks, ef["layers"]):
        n = expected.shape[1]
        assert sum(mask) == n and all(mask[:n])  # the JSON line's tokens are the real ones
        np.testing.assert_allclose(np.array(row)[:, :n], expected, atol=TOL, rtol=0)

    o = out["xlnet_text"]["outputs"]
    assert xlnet_classifier["logits"].shape == (6, 2)
    np.testing.assert_allclose(np.array(o["logits"]), xlnet_classifier["logits"], atol=TOL, rtol=0)
    np.testing.assert_allclose(np.exp(o["logits"]) / np.exp(o["logits"]).sum(1, keepdims=True),
                               o["probabilities"], atol=1e-6, rtol=0)
    assert xlnet_classifier["path"] == xlnet_classifier["export"]


_SAVED_MODEL_CLI = ("import sys, tensorflow_text; from tensorflow.python.tools import "
                    "saved_model_cli; sys.argv[0] = 'saved_model_cli'; "
                    "sys.exit(saved_model_cli.main())")


def _parse_cli_results(stdout):
    """``Result for output key NAME:`` followed by a printed numpy array -> {NAME: array}."""
    results, key, text = {}, None, []
    for line in stdout.splitlines() + ["Result for output key <end>:"]:
        if line.startswith("Result for output key "):
            if key is not None:
                flat = re.sub(r"\s+", ",", " ".join(text).strip())
                flat = re.sub(r"\[,", "[", re.sub(r",\]", "]", flat))
                results[key] = np.array(json.loads(flat))
            key, text = line[len("Result for output key "):-1], []
        elif key is not None:
            text.append(line.strip())
    return results


@pytest.mark.slow
def test_saved_model_cli_run_on_raw_text(bert_classifier, mrpc_rows):
    """``saved_model_cli run --input_exprs 'text_a=[...];text_b=[...]'`` (TF's own CLI; run
    with tensorflow_text imported so the tokenizer ops are registered)."""
    rows = [r for r in mrpc_rows if ";" not in r[0] + r[1]][:2]
    exprs = f"text_a={[r[0] for r in rows]!r};text_b={[r[1] for r in rows]!r}"
    proc = subprocess.run(
        [sys.executable, "-c", _SAVED_MODEL_CLI, "run", "--dir", bert_classifier["export"],
         "--tag_set", "serve", "--signature_def", "serving_default", "--input_exprs", exprs],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = _parse_cli_results(proc.stdout)
    assert sorted(results) == ["logits", "probabilities"]
    index = [mrpc_rows.index(r) for r in rows]
    np.testing.assert_allclose(results["probabilities"], bert_classifier["probabilities"][index],
                               atol=TOL, rtol=0)


# Checked on this machine (Debian, 2026-12): `apt-get update; apt-cache policy
# tensorflow-model-server` finds no candidate (Google's TF Serving apt repository is not in the
# sources and cannot be reached), and PyPI has only the client protos (`tensorflow-serving-api`),
# no server (`pip index versions tensorflow-model-server`: no matching distribution).
_NO_SERVER = ("tensorflow_model_server is not installed: no Debian package in the configured "
              "apt sources and no server on PyPI (only the tensorflow-serving-api client)")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_tf_serving_rest_api_on_raw_text(bert_classifier, mrpc_rows, tmp_path):
    server = shutil.which("tensorflow_model_server")
    if server is None:
        pytest.skip(_NO_SERVER)
    base = tmp_path / "models" / "bert"
    shutil.copytree(bert_classifier["export"],
                    base / os.path.basename(bert_classifier["export"]))
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([server, f"--rest_api_port={port}", "--port=0",
                             "--rest_api_num_threads=2", "--model_name=bert",
                             f"--model_base_path={base}"], stdout=log, stderr=log)
    try:
        status_url = f"http://127.0.0.1:{port}/v1/models/bert"
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                with urllib.request.urlopen(status_url, timeout=5) as r:
                    if b'"AVAILABLE"' in r.read():
                        break
            except OSError:
                pass
            assert time.time() < deadline, "TF Serving did not load the model in 120 s"
            time.sleep(1)
        body = json.dumps({"signature_name": "serving_default",
                           "instances": [{"text_a": a, "text_b": b} for a, b in mrpc_rows]})
        request = urllib.request.Request(status_url + ":predict", data=body.encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as r:
            predictions = json.loads(r.read())["predictions"]
        np.testing.assert_allclose(np.array([p["probabilities"] for p in predictions]),
                                   bert_classifier["probabilities"], atol=TOL, rtol=0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


# ---- fast checks ------------------------------------------------------------------------------

def test_pool_in_graph_by_hand():
    """cls / mean / max over the real tokens of padded rows, worked out by hand (BERT: right
    padding, first token; XLNet: left padding, last token)."""
    import tensorflow as tf

    from bert_tf.run.feature_lines import pool_in_graph

    seq = tf.constant([[[1., 2.], [3., -4.], [100., 100.]],     # 2 real tokens, then padding
                       [[100., 100.], [5., 6.], [-7., 8.]]])   # padding, then 2 real tokens
    real = tf.constant([[1, 1, 0], [0, 1, 1]])
    np.testing.assert_array_equal(pool_in_graph(seq, real, "mean").numpy(),
                                  [[2., -1.], [-1., 7.]])
    np.testing.assert_array_equal(pool_in_graph(seq, real, "max").numpy(), [[3., 2.], [5., 8.]])
    np.testing.assert_array_equal(pool_in_graph(seq, real, "cls").numpy(), [[1., 2.], [5., 6.]])
    np.testing.assert_array_equal(pool_in_graph(seq, real, "cls", cls_position="last").numpy(),
                                  [[3., -4.], [-7., 8.]])


def test_l2_normalize_in_graph_by_hand():
    """(3, 4) / 5 and a zero row kept zero (sentence-transformers' eps 1e-12)."""
    import tensorflow as tf

    from bert_tf.run.feature_lines import l2_normalize_in_graph

    out = l2_normalize_in_graph(tf.constant([[3., 4.], [0., 0.]])).numpy()
    np.testing.assert_allclose(out, [[0.6, 0.8], [0., 0.]], rtol=1e-7)


def test_unwritable_export_dir_is_one_flag_error(tmp_path):
    import tensorflow as tf

    from bert_tf.errors import FlagError
    from bert_tf.run import serving

    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    with pytest.raises(FlagError, match=r"^--export_dir=.*a_file/export: cannot create it"):
        serving.write_saved_model(str(blocker / "export"), [], [(
            serving.DEFAULT_SIGNATURE, lambda x: {"y": x},
            [tf.TensorSpec([None], tf.float32, name="x")])])
    assert os.listdir(tmp_path) == ["a_file"]


def test_bad_export_dir_fails_before_extract_features_writes(minilm_checkpoint_dir, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    (tmp_path / "in.txt").write_text("Hello world.\n", encoding="utf-8")
    ckpt = minilm_checkpoint_dir
    from bert_tf.errors import FlagError

    with pytest.raises(FlagError, match=r"^--export_dir=.*a_file/x: cannot create it"):
        extract_features(ExtractFeaturesArgs(
            input_file=str(tmp_path / "in.txt"), output_file=str(tmp_path / "out.jsonl"),
            bert_config_file=os.path.join(ckpt, "bert_config.json"),
            vocab_file=os.path.join(ckpt, "vocab.txt"),
            init_checkpoint=os.path.join(ckpt, "bert_model.ckpt"), pooling="mean",
            export_dir=str(blocker / "x")))
    assert sorted(os.listdir(tmp_path)) == ["a_file", "in.txt"]  # no output written


def test_export_beside_a_higher_version_says_tf_serving_would_not_serve_it(tmp_path, caplog):
    # A leftover (or corrupted) version folder named higher than now stays what TF Serving
    # loads (the highest number); the new export used to be written beside it silently.
    import logging

    import tensorflow as tf

    from bert_tf.run import serving

    (tmp_path / "9999999999" / "variables").mkdir(parents=True)
    (tmp_path / "9999999999" / "saved_model.pb").write_text("junk")
    with caplog.at_level(logging.WARNING):
        final = serving.write_saved_model(str(tmp_path), [], [(
            serving.DEFAULT_SIGNATURE, tf.function(lambda x: {"y": x * 2.0}),
            [tf.TensorSpec([None], tf.float32, name="x")])])
    assert os.path.basename(final).isdigit() and int(os.path.basename(final)) < 9999999999
    assert sorted(os.listdir(tmp_path)) == sorted([os.path.basename(final), "9999999999"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("already holds version 9999999999" in w and "TF Serving" in w for w in warnings)


def test_export_with_doc_stride_warns_that_the_signatures_truncate(tmp_path, caplog):
    # --doc_stride windows the run's own inputs, but the SavedModel's text signatures cut each
    # input to --max_seq_length: the served results of a long input differ, and said so nowhere
    import logging

    from bert_tf.run import serving

    with caplog.at_level(logging.WARNING):
        serving.check_export_dir(str(tmp_path / "a"))
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
    with caplog.at_level(logging.WARNING):
        serving.check_export_dir(str(tmp_path / "b"), doc_stride=16, max_seq_length=64)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "--doc_stride=16" in warnings[0] and "--max_seq_length=64" in warnings[0]
    assert sorted(os.listdir(tmp_path)) == ["a", "b"]
