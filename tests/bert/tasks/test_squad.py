"""run_squad.py / bert_tf.bert.tasks.squad: the whole run (spec bert.md section 9).

Golden files: tests/golden/bert/squad/{v1.1,v2.0}/ (original run_squad.py functions, see
tests/golden/bert/README.md section F: max_seq_length 128, doc_stride 64, max_query_length 32,
n_best_size 20, max_answer_length 30, uncased vocab) and tests/golden/bert/tiny_random/ (a tiny
random BERT checkpoint in the original layout: hidden 64, 2 layers, vocab 30522).
"""
import copy
import gzip
import dataclasses
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest
from absl import logging as absl_logging

from bert_tf.errors import CheckpointError, FlagError, InputDataError
from bert_tf.bert.tasks import squad as task
from bert_tf import checkpoint_io

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
GOLDEN_SETTINGS = dict(max_seq_length=128, doc_stride=64, max_query_length=32, n_best_size=20,
                       max_answer_length=30)
NUM_QUESTIONS = {"v1.1": 203, "v2.0": 214}  # golden README section F
NUM_FEATURES = {"v1.1": 440, "v2.0": 412}


def _squad_dir(golden_dir, version):
    return os.path.join(golden_dir, "bert", "squad", version)


def _tiny(golden_dir, name):
    return os.path.join(golden_dir, "bert", "tiny_random", name)


def _read_gz(path):
    with gzip.open(path, "rb") as f:
        return f.read()


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _load_json_gz(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    return str(path)


def _golden_args(golden_dir, vocab, out, version, **kw):
    args = dict(bert_config_file=_tiny(golden_dir, "bert_config.json"), vocab_file=vocab,
                output_dir=str(out), do_predict=True,
                predict_file=os.path.join(_squad_dir(golden_dir, version), "dev-subset.json.gz"),
                version_2_with_negative=(version == "v2.0"), **GOLDEN_SETTINGS)
    args.update(kw)
    return task.SquadArgs(**args)


def _golden_logits_fn(golden_dir, version):
    """A predict_fn that returns the golden logits of each feature, found by unique_id."""
    z = np.load(os.path.join(_squad_dir(golden_dir, version), "logits.npz"))
    row = {int(u): i for i, u in enumerate(z["unique_ids"])}
    calls = []

    def predict_fn(batch):
        calls.append(len(batch["unique_ids"]))
        rows = [row[int(u)] for u in batch["unique_ids"]]
        return z["start_logits"][rows], z["end_logits"][rows]

    predict_fn.calls = calls
    return predict_fn


# ---- the task's prediction path fed with the golden logits --------------------------------------

@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_golden_logits_through_the_run_give_the_golden_files(golden_dir, uncased_vocab_file,
                                                             tmp_path, version):
    # Reader, features, eval.tf_record, batching (7 does not divide the feature count), RawResult
    # collection, write_predictions and metrics all run as in a real run; only the model is
    # replaced by the golden logits.
    out = tmp_path / "out"
    predict_fn = _golden_logits_fn(golden_dir, version)
    summary = task.run(_golden_args(golden_dir, uncased_vocab_file, out, version,
                                    predict_batch_size=7), predict_fn=predict_fn)
    gold = _squad_dir(golden_dir, version)
    assert _read(out / "predictions.json") == _read(os.path.join(gold, "predictions.json"))
    assert _read(out / "nbest_predictions.json") == _read_gz(
        os.path.join(gold, "nbest_predictions.json.gz"))
    if version == "v2.0":
        assert _read(out / "null_odds.json") == _read(os.path.join(gold, "null_odds.json"))
    else:
        assert not (out / "null_odds.json").exists()
    n = NUM_FEATURES[version]
    assert predict_fn.calls == [7] * (n // 7) + [n % 7]  # last batch kept (drop_remainder False)
    assert summary.num_predict_examples == NUM_QUESTIONS[version]
    assert summary.num_predict_features == n
    from bert_tf.data import tfrecord
    records = list(tfrecord.read_examples(str(out / "eval.tf_record")))
    assert len(records) == n
    assert sorted(records[0]) == ["input_ids", "input_mask", "segment_ids", "unique_ids"]
    assert records[0]["unique_ids"] == [1000000000] and len(records[0]["input_ids"]) == 128

    results = json.loads(_read(out / "eval_results.json"))
    assert results == summary.eval_results
    if version == "v1.1":
        assert list(results) == ["exact_match", "f1"]
    else:
        assert list(results) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1",
                                 "HasAns_total", "NoAns_exact", "NoAns_f1", "NoAns_total",
                                 "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh",
                                 "has_ans_exact", "has_ans_f1"]
        # 107 answerable and 107 impossible questions; the golden predictions.json answers
        # exactly one question with "" (README F), and that question is impossible.
        golden_preds = json.loads(_read(os.path.join(gold, "predictions.json")))
        assert list(golden_preds.values()).count("") == 1
        assert (results["total"], results["HasAns_total"], results["NoAns_total"]) == (214, 107, 107)
        assert results["NoAns_exact"] == pytest.approx(100.0 / 107)
        assert results["HasAns_exact"] == 0.0


def _mid_word(context, start, text):
    """The answer starts or ends inside a run of letters/digits of the context."""
    end = start + len(text)
    inside_start = start > 0 and context[start - 1].isalnum() and context[start].isalnum()
    inside_end = end < len(context) and context[end - 1].isalnum() and context[end].isalnum()
    return inside_start or inside_end


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_logits_peaked_at_the_gold_span_score_perfectly(golden_dir, uncased_vocab_file,
                                                        tmp_path, version):
    # Logits 10 at the golden training labels of each window (0/0 = [CLS] for a window without
    # the answer or an impossible question), 0 elsewhere. The best valid span of an answerable
    # question is its gold span (20 against 10 or 0); an impossible question has null score 20
    # against a best non-null <= 10, so "" (threshold 0). Every answer is then exact, except
    # those that start or end inside a word ('gold' in '"golden"', '8' in '20-18'): WordPiece
    # spans cover whole words there, a known limit of the original.
    gold = _squad_dir(golden_dir, version)
    positions = {}
    with gzip.open(os.path.join(gold, "features_train.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            positions[d["unique_id"]] = (d["start_position"], d["end_position"])

    def predict_fn(batch):
        start = np.zeros(batch["input_ids"].shape, np.float32)
        end = np.zeros(batch["input_ids"].shape, np.float32)
        for i, u in enumerate(batch["unique_ids"]):
            s, e = positions[int(u)]
            start[i, s] = end[i, e] = 10.0
        return start, end

    summary = task.run(_golden_args(golden_dir, uncased_vocab_file, tmp_path / "out", version),
                       predict_fn=predict_fn)
    train_style = _load_json_gz(os.path.join(gold, "train-style-subset.json.gz"))["data"]
    mid_word = set()
    for article in train_style:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                if qa["answers"] and _mid_word(paragraph["context"], qa["answers"][0]["answer_start"],
                                               qa["answers"][0]["text"]):
                    mid_word.add(qa["id"])
    preds = json.loads(_read(tmp_path / "out" / "predictions.json"))
    dev = _load_json_gz(os.path.join(gold, "dev-subset.json.gz"))["data"]
    wrong = {qa["id"] for article in dev for p in article["paragraphs"] for qa in p["qas"]
             if preds[qa["id"]] not in ([a["text"] for a in qa["answers"]] or [""])}
    assert wrong == mid_word
    metrics = summary.eval_results
    if version == "v1.1":
        # Five mid-word answers; one of them, 'Japanese)' for gold 'Japan' (of "(Japanese)"),
        # still matches the third gold answer 'Japanese' after normalisation. The other four
        # share no token with their gold answers ('"golden' / 'gold', '20-18' / '8' ...): F1 0.
        assert len(mid_word) == 5 and preds["573060b48ab72b1400f9c4c9"] == "Japanese)"
        assert metrics["exact_match"] == pytest.approx(100.0 * (203 - 4) / 203)
        assert metrics["f1"] == pytest.approx(100.0 * (203 - 4) / 203)
    else:
        assert not mid_word
        for key in ("exact", "f1", "HasAns_exact", "HasAns_f1", "NoAns_exact", "NoAns_f1",
                    "best_exact", "best_f1"):
            assert metrics[key] == 100.0, key
        # Threshold search: answerable questions (odds -20) first, each +1 with its correct
        # best non-null answer; impossible ones (odds 20) would each cost 1: best at -20.
        assert metrics["best_exact_thresh"] == metrics["best_f1_thresh"] == -20.0
        assert metrics["has_ans_exact"] == metrics["has_ans_f1"] == 1.0
        # null odds = min over windows of start[0] + end[0], minus the best non-null span:
        # answerable: 0 (the window with the answer) - 20 = -20; impossible: 20 - 0 = 20
        # (every window has 10 at [CLS] and 0 at every document position).
        odds = json.loads(_read(tmp_path / "out" / "null_odds.json"))
        assert {v for k, v in odds.items() if preds[k]} == {-20.0}
        assert {v for k, v in odds.items() if not preds[k]} == {20.0}


def test_threshold_search_switches_on_answers_that_predictions_json_left_empty(tmp_path):
    # q1 answerable (gold "Rollo"), null odds 1.0 > threshold 0: predictions.json says "".
    # q2 impossible, null odds 3.0: "". predictions.json scores 1 of 2 (q2) -> 50.
    # The search walks q1 (1.0) then q2 (3.0) from "all null" = 1 (q2): switching q1 on with
    # its best non-null "Rollo" gives 2 -> 100 at threshold 1.0; switching q2 on ("the
    # Seine" is not "") would give 1. has_ans_exact = 1.0 (q1's best non-null is right).
    data = {"data": [{"title": "T", "paragraphs": [{"context": "Rollo ruled by the Seine.", "qas": [
        {"id": "q1", "question": "Who?", "answers": [{"text": "Rollo", "answer_start": 0}],
         "is_impossible": False},
        {"id": "q2", "question": "What?", "answers": [], "is_impossible": True}]}]}]}
    path = _write_json(tmp_path / "d.json", data)

    def entries(*texts_and_scores):
        return [{"text": t, "probability": 0.5, "start_logit": s, "end_logit": 0.0}
                for t, s in texts_and_scores]

    preds = task.SquadPredictions(
        predictions={"q1": "", "q2": ""},
        nbest={"q1": entries(("", 2.0), ("Rollo", 1.0)), "q2": entries(("", 4.0), ("the Seine", 1.0))},
        null_odds={"q1": 1.0, "q2": 3.0})
    m = task.evaluate_predictions(path, preds, version_2_with_negative=True)
    assert (m["exact"], m["HasAns_exact"], m["NoAns_exact"]) == (50.0, 0.0, 100.0)
    assert (m["best_exact"], m["best_exact_thresh"]) == (100.0, 1.0)
    assert (m["best_f1"], m["best_f1_thresh"]) == (100.0, 1.0)
    assert m["has_ans_exact"] == 1.0


def test_all_null_best_names_a_threshold_that_reproduces_it(tmp_path, caplog):
    # A new user reran with --null_score_diff_threshold=<best_f1_thresh> = 0.0 and did not get
    # best_f1: every null odds was negative. q1 answerable, best non-null "the Seine" (wrong);
    # q2 impossible with a non-empty best non-null. Answering nothing scores 1 of 2 = 50, and
    # no switch beats it, so the official search reports 50 at 0.0 (kept); with the null odds
    # -0.8 and -0.05 a threshold of 0.0 answers both (0 of 2). Below -0.8 answers none.
    data = {"data": [{"title": "T", "paragraphs": [{"context": "Rollo ruled by the Seine.", "qas": [
        {"id": "q1", "question": "Who?", "answers": [{"text": "Rollo", "answer_start": 0}],
         "is_impossible": False},
        {"id": "q2", "question": "What?", "answers": [], "is_impossible": True}]}]}]}
    path = _write_json(tmp_path / "d.json", data)
    entries = [{"text": "the Seine", "probability": 0.5, "start_logit": 1.0, "end_logit": 0.0}]
    preds = task.SquadPredictions(predictions={"q1": "the Seine", "q2": "the Seine"},
                                  nbest={"q1": entries, "q2": entries},
                                  null_odds={"q1": -0.8, "q2": -0.05})
    with caplog.at_level(logging.WARNING):
        m = task.evaluate_predictions(path, preds, version_2_with_negative=True)
    assert (m["exact"], m["best_exact"], m["best_exact_thresh"]) == (0.0, 50.0, 0.0)
    assert (m["best_f1"], m["best_f1_thresh"]) == (50.0, 0.0)
    assert ("best_exact = 50 and best_f1 = 50: the score of answering no question; the reported "
            "best_exact_thresh = 0.0 and best_f1_thresh = 0.0 (the official script's value for "
            "that case) answers every question whose null odds are at or below it (the lowest "
            "is -0.8): --null_score_diff_threshold=-2 gives it") in caplog.text
    caplog.clear()
    preds.null_odds.update(q1=0.5, q2=0.7)  # all above 0.0: the reported 0.0 reproduces it
    with caplog.at_level(logging.WARNING):
        task.evaluate_predictions(path, preds, version_2_with_negative=True)
    assert "answering no question" not in caplog.text


def test_predict_file_without_answers_writes_no_metrics(golden_dir, uncased_vocab_file, tmp_path):
    data = _load_json_gz(os.path.join(_squad_dir(golden_dir, "v1.1"), "dev-subset.json.gz"))
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                del qa["answers"]
    path = _write_json(tmp_path / "test.json", data)
    out = tmp_path / "out"
    summary = task.run(_golden_args(golden_dir, uncased_vocab_file, out, "v1.1",
                                    predict_file=path),
                       predict_fn=_golden_logits_fn(golden_dir, "v1.1"))
    assert summary.eval_results is None and not (out / "eval_results.json").exists()
    gold = _squad_dir(golden_dir, "v1.1")
    assert _read(out / "predictions.json") == _read(os.path.join(gold, "predictions.json"))


# ---- a real run with a tiny random model --------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_run(golden_dir, uncased_vocab_file, tmp_path_factory):
    """Train 1 epoch on 2 Normans paragraphs (v2.0 train-style subset, one answer moved off its
    text), predict on 2 other paragraphs, then predict again from the saved checkpoint."""
    tmp = tmp_path_factory.mktemp("squad_tiny")
    gold = _squad_dir(golden_dir, "v2.0")
    train = _load_json_gz(os.path.join(gold, "train-style-subset.json.gz"))
    dev = _load_json_gz(os.path.join(gold, "dev-subset.json.gz"))
    train["data"] = [dict(train["data"][0], paragraphs=train["data"][0]["paragraphs"][:2])]
    dev["data"] = [dict(dev["data"][0], paragraphs=dev["data"][0]["paragraphs"][2:4])]
    # An extra article with an empty paragraphs list: warned about and skipped.
    dev["data"].append({"title": "Empty", "paragraphs": []})
    qas = [qa for p in train["data"][0]["paragraphs"] for qa in p["qas"]]
    bad = next(qa for qa in qas if qa["answers"] and qa["answers"][0]["answer_start"] > 100)
    context = train["data"][0]["paragraphs"][0]["context"]
    assert bad in train["data"][0]["paragraphs"][0]["qas"]
    bad["answers"][0]["answer_start"] = 0  # the text is no longer at its offset:
    assert not context.startswith(bad["answers"][0]["text"])
    train_file = _write_json(tmp / "train.json", train)
    dev_file = _write_json(tmp / "dev.json", dev)
    args = dict(bert_config_file=_tiny(golden_dir, "bert_config.json"),
                vocab_file=uncased_vocab_file,
                init_checkpoint=_tiny(golden_dir, "bert_model.ckpt"), train_file=train_file,
                predict_file=dev_file, max_seq_length=64, doc_stride=32, max_query_length=16,
                version_2_with_negative=True, train_batch_size=4, num_train_epochs=1.0,
                predict_batch_size=5)
    out = tmp / "out"
    handler = _ListHandler()
    logging.getLogger("absl").addHandler(handler)
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    try:
        first = task.run(task.SquadArgs(output_dir=str(out), do_train=True, do_predict=True,
                                        **args))
    finally:
        absl_logging.set_verbosity(verbosity)
        logging.getLogger("absl").removeHandler(handler)
    first_preds = _read(out / "predictions.json")
    second = task.run(task.SquadArgs(output_dir=str(out), do_predict=True, **args))
    return dict(out=out, first=first, second=second, first_preds=first_preds, logs=handler.lines,
                num_train_questions=len(qas), bad_id=bad["id"],
                dev_ids=[qa["id"] for p in dev["data"][0]["paragraphs"] for qa in p["qas"]])


class _ListHandler(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def test_tiny_run_counts_steps_from_examples_and_skips_the_moved_answer(tiny_run):
    s = tiny_run["first"]
    n = tiny_run["num_train_questions"]
    assert n == 17
    assert s.num_train_examples == n - 1  # the moved answer is skipped...
    assert any("Could not find answer" in line for line in tiny_run["logs"])
    assert any(f"skipped 1 of {n} questions" in line for line in tiny_run["logs"])  # ...counted
    assert any("empty 'paragraphs' list" in line for line in tiny_run["logs"])
    # num_train_steps = int(16 examples / 4 * 1.0) = 4 (examples, not the split features);
    # warmup int(4 * 0.1) = 0.
    assert (s.num_train_steps, s.num_warmup_steps, s.global_step) == (4, 0, 4)
    assert s.num_train_features > s.num_train_examples
    from bert_tf.data import tfrecord
    records = list(tfrecord.read_examples(str(tiny_run["out"] / "train.tf_record")))
    assert len(records) == s.num_train_features
    assert sorted(records[0]) == ["end_positions", "input_ids", "input_mask", "is_impossible",
                                  "segment_ids", "start_positions", "unique_ids"]
    assert any("Num split examples = %d" % s.num_train_features in line
               for line in tiny_run["logs"])


def test_tiny_run_checkpoint_has_original_names_and_adam_slots(tiny_run):
    prefix = tiny_run["first"].checkpoint
    assert prefix.endswith("model.ckpt-4")
    names = checkpoint_io.list_checkpoint(prefix)
    assert names["cls/squad/output_weights"] == ((2, 64), "float32")
    assert names["cls/squad/output_bias"] == ((2,), "float32")
    for base in ("cls/squad/output_weights", "cls/squad/output_bias",
                 "bert/embeddings/word_embeddings", "bert/encoder/layer_1/output/dense/kernel"):
        assert names[base + "/adam_m"] == names[base]
        assert names[base + "/adam_v"] == names[base]
    assert names["global_step"] == ((), "int64")
    assert int(checkpoint_io.read_checkpoint(prefix, include_optimizer=True)["global_step"]) == 4
    model_names = [n for n in names if not checkpoint_io.is_optimizer_entry(n)]
    assert all(n.startswith(("bert/", "cls/squad/")) for n in model_names)
    assert len(model_names) == 16 * 2 + 5 + 2 + 2  # 2 layers, embeddings, pooler, head


def test_tiny_run_writes_prediction_files_of_the_original_structure(tiny_run):
    out = tiny_run["out"]
    ids = tiny_run["dev_ids"]
    preds = json.loads(_read(out / "predictions.json"))
    nbest = json.loads(_read(out / "nbest_predictions.json"))
    odds = json.loads(_read(out / "null_odds.json"))
    assert list(preds) == ids and list(nbest) == ids and list(odds) == ids
    assert _read(out / "predictions.json").decode() == json.dumps(preds, indent=4) + "\n"
    for qid, entries in nbest.items():
        assert 1 <= len(entries) <= 21  # n_best_size + the null entry
        assert "" in [e["text"] for e in entries]  # v2: the null entry is always there
        for e in entries:
            assert list(e) == ["text", "probability", "start_logit", "end_logit"]
        assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
        non_null = next((e for e in entries if e["text"]), None)
        if non_null is not None:  # null_odds = null score - best non-null score
            null = next(e for e in entries if not e["text"])
            assert odds[qid] == pytest.approx(null["start_logit"] + null["end_logit"]
                                              - non_null["start_logit"] - non_null["end_logit"])
            assert preds[qid] == ("" if odds[qid] > 0.0 else non_null["text"])
    results = json.loads(_read(out / "eval_results.json"))
    assert results["total"] == len(ids)
    for key in ("exact", "f1", "HasAns_exact", "NoAns_exact", "best_exact", "best_exact_thresh",
                "best_f1", "best_f1_thresh"):
        assert key in results
    s = tiny_run["first"]
    assert s.num_predict_examples == len(ids) and s.predict_examples_per_second > 0


def test_tiny_run_predict_only_restores_the_trained_checkpoint(tiny_run):
    # The second run builds a new model and restores model.ckpt-4 from output_dir (not the
    # init_checkpoint): its answers are those of the model in memory after training.
    assert tiny_run["second"].weights_from.endswith("model.ckpt-4")
    assert _read(tiny_run["out"] / "predictions.json") == tiny_run["first_preds"]


# ---- bad input: clear errors, nothing written ---------------------------------------------------

def _bad_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"data": [{"paragraphs": [\n{"context": "x", }]}]}')
    return str(path)


BAD_CASES = {
    "predict_file_malformed": (lambda tp: dict(predict_file=_bad_json(tp)), InputDataError,
                               r"bad\.json: invalid JSON at line 2"),
    "train_file_malformed": (lambda tp: dict(do_train=True, train_file=_bad_json(tp)),
                             InputDataError, r"bad\.json: invalid JSON at line 2"),
    "no_mode": (lambda tp: dict(do_predict=False), FlagError,
                r"At least one of `do_train`, `do_predict` must be True"),
    "train_without_file": (lambda tp: dict(do_train=True), FlagError,
                           r"If `do_train` is True, then `train_file` must be specified"),
    "predict_without_file": (lambda tp: dict(predict_file=None), FlagError,
                             r"If `do_predict` is True, then `predict_file` must be specified"),
    "predict_file_missing": (lambda tp: dict(predict_file=str(tp / "nope.json")), InputDataError,
                             r"--predict_file=.*nope\.json: file not found"),
    "predict_file_folder": (lambda tp: dict(predict_file=str(tp)), InputDataError,
                            r"--predict_file=.* is a folder, not a file$"),
    "stride_too_long": (lambda tp: dict(doc_stride=128), FlagError,
                        r"--doc_stride=128 is longer than the document window of 93 pieces "
                        r"\(--max_seq_length=128 - --max_query_length=32 - 3"),
    "stride_skips_pieces": (lambda tp: dict(doc_stride=100, max_query_length=64), FlagError,
                            r"--doc_stride=100 is longer than the document window of 61 pieces "
                            r"\(--max_seq_length=128 - --max_query_length=64 - 3"),
    "query_too_long": (lambda tp: dict(max_query_length=125), FlagError,
                       r"--max_seq_length=128 must be greater than --max_query_length=125 \+ 3"),
    "seq_too_long": (lambda tp: dict(max_seq_length=256), FlagError,
                     r"Cannot use sequence length 256 .* up to sequence length 128"),
    "case_mismatch": (lambda tp: dict(init_checkpoint="/x/cased_L-12_H-768_A-12/bert_model.ckpt"),
                      FlagError, r"cased"),
    "batch_size_zero": (lambda tp: dict(predict_batch_size=0), FlagError,
                        r"--predict_batch_size=0 must be at least 1"),
    "too_few_examples": (lambda tp: dict(do_train=True, train_batch_size=1000,
                                         train_file=os.path.join(
                                             REPO, "tests", "golden", "bert", "squad", "v1.1",
                                             "train-style-subset.json.gz")),
                         FlagError, r"num_train_steps = int\(203 examples / --train_batch_size=1000"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_input_fails_clearly_and_leaves_output_dir_alone(golden_dir, uncased_vocab_file,
                                                             tmp_path, case):
    make_kw, error, pattern = BAD_CASES[case]
    out = tmp_path / "out"
    out.mkdir()
    (out / "predictions.json").write_text("earlier run\n")
    args = _golden_args(golden_dir, uncased_vocab_file, out, "v1.1", **make_kw(tmp_path))
    never = None if args.do_train else (lambda batch: pytest.fail("must fail before predicting"))
    with pytest.raises(error, match=pattern):
        task.run(args, predict_fn=never)
    assert sorted(os.listdir(out)) == ["predictions.json"]
    assert (out / "predictions.json").read_text() == "earlier run\n"


def test_file_with_only_empty_paragraphs_is_an_error(golden_dir, uncased_vocab_file, tmp_path):
    path = _write_json(tmp_path / "empty.json", {"data": [{"title": "T", "paragraphs": []}]})
    with pytest.raises(InputDataError, match=r"empty\.json: the file holds no question"):
        task.run(_golden_args(golden_dir, uncased_vocab_file, tmp_path / "out", "v1.1",
                              predict_file=path), predict_fn=lambda b: None)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("context", ["", "   ", "\u0301\u0301", "\x00\ufffd"])
def test_v2_context_without_a_token_is_refused_before_predicting(golden_dir, uncased_vocab_file,
                                                                tmp_path, context):
    # A new user's empty paragraph: the original's v2 write_predictions fails on features[0]
    # (IndexError) after the whole prediction; refused in one line, nothing kept.
    data = {"version": "v2.0", "data": [{"title": "T", "paragraphs": [
        {"context": "Rollo ruled Normandy.", "qas": [
            {"id": "ok", "question": "Who?", "answers": [], "is_impossible": True}]},
        {"context": context, "qas": [
            {"id": "q-empty", "question": "Who?", "answers": [], "is_impossible": True}]}]}]}
    path = _write_json(tmp_path / "d.json", data)
    out = tmp_path / "out"
    with pytest.raises(InputDataError, match=r"d\.json: question id q-empty: its paragraph's "
                                             r"context has no WordPiece token"):
        task.run(_golden_args(golden_dir, uncased_vocab_file, out, "v2.0", predict_file=path),
                 predict_fn=lambda batch: pytest.fail("must fail before predicting"))
    assert not out.exists() or os.listdir(out) == []


def test_v2_file_scored_as_v1_keeps_predictions_and_skips_metrics(golden_dir, uncased_vocab_file,
                                                                  tmp_path, caplog):
    # Impossible questions have no gold answer, which SQuAD 1.1 scoring cannot handle.
    out = tmp_path / "out"
    args = _golden_args(golden_dir, uncased_vocab_file, out, "v2.0",
                        version_2_with_negative=False)
    with caplog.at_level(logging.WARNING):
        summary = task.run(args, predict_fn=_golden_logits_fn(golden_dir, "v2.0"))
    assert summary.eval_results is None and not (out / "eval_results.json").exists()
    assert (out / "predictions.json").exists()
    assert "--version_2_with_negative" in caplog.text


@pytest.mark.slow  # heavy (10-20 s); run with -m slow
def test_predict_with_a_checkpoint_of_another_size_names_the_variable(golden_dir,
                                                                      uncased_vocab_file,
                                                                      minilm_checkpoint_dir,
                                                                      tmp_path):
    args = _golden_args(golden_dir, uncased_vocab_file, tmp_path / "out", "v1.1",
                        init_checkpoint=os.path.join(minilm_checkpoint_dir, "bert_model.ckpt"))
    with pytest.raises(CheckpointError, match=r"bert/embeddings/word_embeddings has shape "
                                              r"\[30522, 384\] in the checkpoint but \[30522, 64\]"):
        task.run(args)
    assert os.listdir(tmp_path / "out") == []  # fails before writing eval.tf_record


def test_script_error_is_one_line_and_nonzero_exit(golden_dir, uncased_vocab_file, tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_squad.py"),
         f"--bert_config_file={_tiny(golden_dir, 'bert_config.json')}",
         f"--vocab_file={uncased_vocab_file}", f"--output_dir={out}", "--do_train=True",
         "--max_seq_length=128"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == ["error: If `do_train` is True, then `train_file` must be specified."]
    assert not out.exists()


def test_script_flags_and_original_defaults():
    proc = subprocess.run([sys.executable, os.path.join(REPO, "run_squad.py"), "--helpfull"],
                          capture_output=True, text=True, timeout=300)
    text = proc.stdout
    for flag, default in [("max_seq_length", "384"), ("doc_stride", "128"),
                          ("max_query_length", "64"), ("train_batch_size", "32"),
                          ("predict_batch_size", "8"), ("learning_rate", "5e-05"),
                          ("num_train_epochs", "3.0"), ("warmup_proportion", "0.1"),
                          ("save_checkpoints_steps", "1000"), ("iterations_per_loop", "1000"),
                          ("n_best_size", "20"), ("max_answer_length", "30"),
                          ("num_tpu_cores", "8"), ("null_score_diff_threshold", "0.0"),
                          ("do_lower_case", "true"), ("version_2_with_negative", "false")]:
        assert f"--{flag}:" in text or f"--[no]{flag}:" in text, flag
        block = text.split(f"{flag}:", 1)[1].split("--", 1)[0]
        assert f"(default: '{default}')" in block, (flag, block)
    for flag in ("bert_config_file", "vocab_file", "output_dir", "train_file", "predict_file",
                 "init_checkpoint", "do_train", "do_predict", "use_tpu", "tpu_name", "tpu_zone",
                 "gcp_project", "master", "verbose_logging", "use_xla", "dtype",
                 "gradient_accumulation_steps"):
        assert f"{flag}:" in text, flag


def test_args_fields_are_the_script_flags():
    import ast
    with open(os.path.join(REPO, "run_squad.py"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    # the BERT part of define_args: SquadArgs' fields are the script's BERT flags
    call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", "") == "define_args")
    assert call.args[0].id == "SquadArgs"
    assert copy.copy(task.SquadArgs()).max_seq_length == 384


# ---- the original command lines (slow) ----------------------------------------------------------

@pytest.mark.slow
def test_original_v11_command_line_predicts_on_the_golden_subset(golden_dir,
                                                                 minilm_checkpoint_dir, tmp_path):
    # README's v1.1 command with the converted MiniLM (no SQuAD head yet: random cls/squad, so
    # only the run and the file structure are checked), max_seq_length 384, doc_stride 128.
    d = minilm_checkpoint_dir
    out = tmp_path / "squad_base"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_squad.py"), f"--vocab_file={d}/vocab.txt",
         f"--bert_config_file={d}/bert_config.json", f"--init_checkpoint={d}/bert_model.ckpt",
         "--do_train=False", "--do_predict=True",
         f"--predict_file={_squad_dir(golden_dir, 'v1.1')}/dev-subset.json.gz",
         "--train_batch_size=12", "--learning_rate=3e-5", "--num_train_epochs=2.0",
         "--max_seq_length=384", "--doc_stride=128", f"--output_dir={out}"],
        capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    preds = json.loads(_read(out / "predictions.json"))
    assert len(preds) == 203
    assert sorted(os.listdir(out)) == ["eval.tf_record", "eval_results.json",
                                       "nbest_predictions.json", "predictions.json"]
    assert "predicted 203 questions" in proc.stdout


def test_predict_with_every_path_on_ram_writes_the_golden_predictions(golden_dir, uncased_vocab_file,
                                                                     tmp_path, monkeypatch):
    """Issue 17 deliverable 2: config, vocab, predict_file and output_dir on ``ram://`` (the
    ``tf.io.gfile`` API of ``gs://``); the files are the ORIGINAL's (golden F) and the local run's."""
    import uuid

    import tensorflow as tf

    gfile = tf.io.gfile
    ram = f"ram://squad-{uuid.uuid4().hex}"
    gold = _squad_dir(golden_dir, "v2.0")
    gfile.makedirs(ram)
    for name, src in (("bert_config.json", _tiny(golden_dir, "bert_config.json")),
                      ("vocab.txt", uncased_vocab_file),
                      ("dev-subset.json.gz", os.path.join(gold, "dev-subset.json.gz"))):
        gfile.copy(src, f"{ram}/{name}")
    try:
        local = tmp_path / "out"
        task.run(_golden_args(golden_dir, uncased_vocab_file, local, "v2.0"),
                 predict_fn=_golden_logits_fn(golden_dir, "v2.0"))
        cwd = tmp_path / "cwd"
        cwd.mkdir()
        monkeypatch.chdir(cwd)
        summary = task.run(_golden_args(golden_dir, f"{ram}/vocab.txt", f"{ram}/out", "v2.0",
                                        bert_config_file=f"{ram}/bert_config.json",
                                        predict_file=f"{ram}/dev-subset.json.gz"),
                           predict_fn=_golden_logits_fn(golden_dir, "v2.0"))
        assert os.listdir(cwd) == []  # nothing written under a local "ram:" folder
        assert summary.predictions_file == f"{ram}/out/predictions.json"

        def ram_bytes(name):
            with gfile.GFile(f"{ram}/out/{name}", "rb") as f:
                return f.read()

        for name in ("predictions.json", "null_odds.json"):
            assert ram_bytes(name) == _read(os.path.join(gold, name)), name
        for name in ("nbest_predictions.json", "null_odds.json", "eval_results.json"):
            assert ram_bytes(name) == _read(local / name), name
    finally:
        gfile.rmtree(ram)


def test_predict_file_that_predict_would_replace_is_refused(golden_dir, uncased_vocab_file,
                                                            tmp_path):
    # fresh round of issue 27: --predict_file=<output_dir>/predictions.json was replaced by the
    # predictions (exit 0); also through a symlink and a hard link.
    out = tmp_path / "out"
    out.mkdir()
    args = _golden_args(golden_dir, uncased_vocab_file, out, "v1.1")
    data = open(args.predict_file, "rb").read()
    (out / "predictions.json").write_bytes(data)
    (tmp_path / "link.json").symlink_to(out / "predictions.json")
    os.link(out / "predictions.json", tmp_path / "hard.json")
    never = lambda batch: pytest.fail("must fail before predicting")  # noqa: E731
    for given in (out / "predictions.json", tmp_path / "link.json", tmp_path / "hard.json"):
        args.predict_file = str(given)
        with pytest.raises(FlagError, match=r"^--predict_file=.* is .*predictions\.json, which "
                                            r"--do_predict writes"):
            task.run(args, predict_fn=never)
    assert (out / "predictions.json").read_bytes() == data


def test_absurd_num_train_epochs_names_the_flags_and_the_steps():
    """Issue 27 fresh round: --num_train_epochs=1e30 gave an OverflowError traceback. By hand:
    88641 / 12 x 3e5 = 2216025000 steps, above 2**31 - 1; x 2e5 = 1477350000, below."""
    with pytest.raises(FlagError, match=r"^88641 examples / --train_batch_size=12 x "
                                        r"--num_train_epochs=300000.0 gives 2216025000 training "
                                        r"steps: more than 2147483647"):
        task.num_train_steps_for(88641, 12, 3e5, 0.1)
    assert task.num_train_steps_for(88641, 12, 2e5, 0.1) == (1477350000, 147735000)


@pytest.mark.parametrize("name", ["nbest_predictions.json", "eval_results.json"])
def test_an_output_file_name_that_is_a_folder_is_refused_before_any_work(
        golden_dir, uncased_vocab_file, tmp_path, name):
    """Issue 27: a folder O/nbest_predictions.json failed after prediction, with
    predictions.json already replaced."""
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    args = _golden_args(golden_dir, uncased_vocab_file, out, "v1.1")
    with pytest.raises(FlagError) as e:
        task.run(args, predict_fn=lambda batch: pytest.fail("must fail before predicting"))
    assert str(e.value) == (f"--output_dir={out}: {out / name} is a folder, but the run writes "
                            f"the file {name} there; remove or rename that folder")
    assert os.listdir(out) == [name]


def test_a_vocab_far_smaller_than_the_config_is_warned(golden_dir, shared_data_dir, tmp_path,
                                                       caplog):
    """Fresh round 3 (r3_sq_vocab_toy15): questions and contexts all [UNK], predictions
    written, exit 0, no word (the original is silent too: a warning)."""
    import logging
    vocab = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining", "vocab.txt")
    with caplog.at_level(logging.WARNING):
        task.check_args(_golden_args(golden_dir, vocab, tmp_path / "out", "v1.1"))
    assert (f"{vocab} has 15 tokens but {_tiny(golden_dir, 'bert_config.json')} says "
            "vocab_size=30522: a vocabulary of another model?") in caplog.text


def test_null_threshold_without_v2_is_said_to_be_ignored(golden_dir, uncased_vocab_file, tmp_path,
                                                         caplog):
    # a new user's --null_score_diff_threshold=2 on SQuAD 1.1 ran without a word (the
    # original ignores it too; the prediction is the same either way)
    args = _golden_args(golden_dir, uncased_vocab_file, tmp_path / "out", "v1.1",
                        null_score_diff_threshold=2.0)
    with caplog.at_level(logging.WARNING):
        task.check_args(args)
    assert ("--null_score_diff_threshold=2.0 is read only with --version_2_with_negative=True "
            "(SQuAD 2.0): ignored") in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        task.check_args(dataclasses.replace(args, null_score_diff_threshold=0.0))
    assert "null_score_diff_threshold" not in caplog.text
