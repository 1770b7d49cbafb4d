"""XLNet SQuAD 2.0 examples and features (original XLNet run_squad.py, spec xlnet.md 9.2-9.4)
against the in-memory features the original produced (tests/golden/xlnet_squad/squad, README
"Files"), with the real 32k spiece.model of ../shared/data."""

import gzip
import json
import os
import random

import pytest

from bert_tf.xlnet.data import squad as xs
from bert_tf.errors import InputDataError
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad", "squad")


@pytest.fixture(scope="module")
def sp_model(shared_data_dir):
    return load_sp_model(os.path.join(shared_data_dir, "xlnet", "spiece.model"))


def golden_features(golden, mode):
    with gzip.open(os.path.join(golden, f"features_{mode}.jsonl.gz"), "rt") as f:
        return [json.loads(line) for line in f]


def as_golden_dict(feature):
    d = dict(feature.__dict__)
    d["token_is_max_context"] = {str(k): v for k, v in d["token_is_max_context"].items()}
    return d


@pytest.mark.parametrize("mode", ["predict", "train"])
def test_features_equal_the_original(golden, sp_model, mode):
    is_training = mode == "train"
    examples = xs.read_squad_examples(
        os.path.join(golden, "inputs", "train.json" if is_training else "dev.json"), is_training)
    assert len(examples) == 120
    if is_training:
        # The original shuffles with Python's global random; the golden run seeded it first.
        random.Random(20190701).shuffle(examples)
        with open(os.path.join(golden, "examples_train.jsonl"), encoding="utf-8") as f:
            assert [e.qas_id for e in examples] == [json.loads(line)["qas_id"] for line in f]
    features = list(xs.convert_examples_to_features(examples, sp_model, max_seq_length=192,
                                                    doc_stride=64, max_query_length=64,
                                                    is_training=is_training))
    want = golden_features(golden, mode)
    assert len(features) == len(want) == 192
    for feature, expected in zip(features, want):
        got = as_golden_dict(feature)
        assert got == {k: expected[k] for k in got}, feature.unique_id
    if is_training:
        labelled = [f for f in features if not f.is_impossible]
        assert len(labelled) == 62  # README "Counts": 62 answers in span


def test_convert_index_by_hand():
    """Spec 9.3: gaps filled from the nearest defined neighbours."""
    index = [None, 2, None, None, 7, None]
    assert xs.convert_index(index, 1) == 2
    assert xs.convert_index(index, 0, is_start=True) == 0          # no left: rear 2 >= 1
    assert xs.convert_index(index, 0, is_start=False) == 1         # rear - 1
    assert xs.convert_index(index, 2, is_start=True) == 3          # front + 1 (7 > 2 + 1)
    assert xs.convert_index(index, 3, is_start=False) == 6         # rear - 1
    assert xs.convert_index(index, 5, M=9, is_start=True) == 8     # no right: front + 1
    assert xs.convert_index(index, 5, M=9, is_start=False) == 8    # M - 1
    assert xs.convert_index(index, 5, is_start=True) == 7          # no M: front
    assert xs.convert_index([None, 3, 4], 0, is_start=True) == 0
    assert xs.convert_index([1, None, 2], 1, is_start=True) == 2   # rear not > front + 1


def test_layout_of_a_window(sp_model):
    """P <sep> Q <sep> <cls>, right padding, segment 3 for padding, p_mask 0 on P and CLS."""
    example = xs.XLNetSquadExample("q1", "Who?", "Rollo led the Normans.")
    (feature,) = xs.convert_examples_to_features([example], sp_model, 24, 8, 8, False)
    n, q = feature.paragraph_len, len(sp_model.EncodeAsIds("Who?"))
    assert feature.cls_index == n + q + 2
    assert feature.input_ids[n] == 4 and feature.input_ids[n + q + 1] == 4
    assert feature.input_ids[feature.cls_index] == 3
    assert feature.segment_ids == [0] * (n + 1) + [1] * (q + 1) + [2] + [3] * (23 - n - q - 2)
    assert feature.p_mask == [0] * n + [1] * (q + 2) + [0] + [1] * (23 - n - q - 2)
    assert feature.input_mask == [0] * (n + q + 3) + [1] * (24 - n - q - 3)
    # Pieces ▁Roll o ▁led ▁the ▁Norman s . : each ▁ sits on the space before its word
    # (none before the first), so the spans tile the text.
    text = example.paragraph_text
    assert [text[s:e + 1] for s, e in zip(feature.tok_start_to_orig_index,
                                          feature.tok_end_to_orig_index)] == [
        "Roll", "o", " led", " the", " Norman", "s", "."]


def test_training_reader_wants_one_answer(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": [
        {"id": "x1", "question": "q", "answers": [{"text": "a", "answer_start": 0}] * 2,
         "is_impossible": False}]}]}]}))
    with pytest.raises(InputDataError, match="question x1: For training, each question should "
                                             "have exactly 1 answer"):
        xs.read_squad_examples(str(path), is_training=True)
    assert xs.read_squad_examples(str(path), is_training=False)[0].qas_id == "x1"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(InputDataError, match="bad.json: not a SQuAD JSON file"):
        xs.read_squad_examples(str(tmp_path / "bad.json"), is_training=False)


def test_record_file_names():
    assert xs.record_file_names("spiece.model", 192, 64) == (
        "spiece.model.0.slen-192.qlen-64.train.tf_record",
        "spiece.model.slen-192.qlen-64.eval.tf_record",
        "spiece.model.slen-192.qlen-64.eval.features.pkl")


# ---- answers from the head outputs (spec 9.6) ------------------------------------------------

def test_prediction_files_equal_the_original_from_its_raw_results(golden, sp_model, tmp_path):
    from bert_tf.xlnet.data import squad_postprocess as pp

    examples = xs.read_squad_examples(os.path.join(golden, "inputs", "dev.json"), False)
    features = list(xs.convert_examples_to_features(examples, sp_model, 192, 64, 64, False))
    with open(os.path.join(golden, "raw_results.jsonl")) as f:
        results = pp.results_from_json_lines(f)
    preds = pp.compute_predictions(examples, features, results, n_best_size=5,
                                   max_answer_length=64, start_n_top=5, end_n_top=5)
    paths = [str(tmp_path / f"{n}.json") for n in ("predictions", "nbest_predictions",
                                                    "null_odds")]
    pp.write_predictions(preds, *paths)
    for path in paths:
        with open(path, "rb") as ours, open(os.path.join(
                golden, "predict_dir", os.path.basename(path)), "rb") as theirs:
            assert ours.read() == theirs.read(), path
    with open(os.path.join(golden, "inputs", "dev.json"), encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    with open(os.path.join(golden, "eval_result.json")) as f:
        want = json.load(f)
    assert pp.evaluate(dataset, preds) == {k: v for k, v in want.items() if k != "logged_line"}


def test_candidate_rules_by_hand():
    """Window of paragraph_len 4 over "aa bb cc dd": starts at 3 are dropped (the last
    paragraph piece never answers), (1, 0) has end < start; the second window has no
    max-context start; null odds are the min cls logit over the two windows."""
    from bert_tf.xlnet.data import squad_postprocess as pp

    example = xs.XLNetSquadExample("q", "?", "aa bb cc dd")
    window = xs.XLNetSquadFeatures(
        unique_id=1, example_index=0, doc_span_index=0, tok_start_to_orig_index=[0, 3, 6, 9],
        tok_end_to_orig_index=[1, 4, 7, 10], token_is_max_context={0: True, 1: True, 2: True,
                                                                  3: True},
        input_ids=[], input_mask=[], p_mask=[], segment_ids=[], paragraph_len=4, cls_index=7)
    other = xs.XLNetSquadFeatures(**dict(window.__dict__, unique_id=2, doc_span_index=1,
                                         token_is_max_context={0: False, 1: False, 2: False,
                                                               3: False}))
    results = [pp.XLNetRawResult(1, [-0.5, -1.0, -2.0], [3, 1, 0], [-0.1, -0.2, -0.3, -0.4, -1.0,
                                                                     -3.0],
                                 [1, 2, 2, 0, 0, 1], cls_logits=0.7),
               pp.XLNetRawResult(2, [-0.1, -0.1, -0.1], [0, 1, 2], [-0.1] * 6, [1, 2, 2, 1, 2, 2],
                                 cls_logits=-0.3)]
    preds = pp.compute_predictions([example], [window, other], results, n_best_size=3,
                                   max_answer_length=2, start_n_top=3, end_n_top=2)
    # window 1, entry i*2+j: start 3 (i=0) dropped; start 1 (i=1): end 2 -> "bb cc"
    # (-1.0 - 0.3), end 0 < start dropped; start 0 (i=2): end 0 -> "aa" (-2.0 - 1.0), end 1 ->
    # "aa bb" (-2.0 - 3.0). Window 2: no start has max context.
    assert [(e["text"], e["start_log_prob"] + e["end_log_prob"]) for e in preds.nbest["q"]] == [
        ("bb cc", -1.3), ("aa", -3.0), ("aa bb", -5.0)]
    assert preds.predictions == {"q": "bb cc"}
    assert preds.null_odds == {"q": -0.3}


@pytest.mark.parametrize("mode", ["predict", "train"])
def test_tfrecords_equal_the_originals(golden, sp_model, tmp_path, mode):
    """Our records decode to exactly the original's cached ones (record by record)."""
    from bert_tf.data.tfrecord import read_examples

    is_training = mode == "train"
    examples = xs.read_squad_examples(
        os.path.join(golden, "inputs", "train.json" if is_training else "dev.json"), is_training)
    if is_training:
        random.Random(20190701).shuffle(examples)
    features = xs.convert_examples_to_features(examples, sp_model, 192, 64, 64, is_training)
    train_name, eval_name, _ = xs.record_file_names("spiece.model", 192, 64)
    name = train_name if is_training else eval_name
    assert xs.write_feature_records(features, str(tmp_path / name), is_training) == 192
    ours = list(read_examples(str(tmp_path / name)))
    theirs = list(read_examples(os.path.join(golden, "output_dir", name)))
    assert ours == theirs


@pytest.mark.parametrize("paragraph,message", [
    ({"qas": []}, r"data\[0\]\.paragraphs\[0\] has no key 'context'"),
    ({"context": "abc", "qas": [{"id": "q9", "question": "?", "is_impossible": False,
                                 "answers": [{"text": "bc", "answer_start": 7}]}]},
     "question q9: answer_start 7 with text 'bc' is not inside its context"),
])
def test_malformed_training_files(tmp_path, paragraph, message):
    """Fresh-user findings: a missing context (KeyError) and an answer beyond the context
    (IndexError later) are one clear error naming the file."""
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [paragraph]}]}))
    with pytest.raises(InputDataError, match=message):
        xs.read_squad_examples(str(path), is_training=True)


@pytest.mark.parametrize("is_training,qa,message", [
    (False, {"id": None, "question": "q"},
     r"dev\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\]: 'id' is a NoneType, expected str/int$"),
    (False, {"id": "x1", "question": 3},
     r"dev\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\] \(id x1\): 'question' is a int, "
     "expected str$"),
    (True, {"id": "x1", "question": "q", "answers": [{"text": 7, "answer_start": 0}]},
     r"dev\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\] \(id x1\)\.answers\[0\]: 'text' is "
     "a int, expected str$"),
    (True, {"id": "x1", "question": "q", "answers": [{"text": "a", "answer_start": "0"}]},
     r"\.answers\[0\]: 'answer_start' is a str, expected int$"),
])
def test_question_fields_of_another_type_are_refused_as_the_bert_mode_does(
        tmp_path, is_training, qa, message):
    """Fresh round 3: "id": null gave predictions under the key "null", exit 0
    (r3_xsq_id_null); an answer "text" of 7 was said not to be inside its context
    (r3_xsqt_answer_text_int). The BERT mode names the field and both types."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": [qa]}]}]}))
    with pytest.raises(InputDataError, match=message):
        xs.read_squad_examples(str(path), is_training=is_training)


def test_duplicate_question_ids_in_a_predict_file_are_refused(tmp_path):
    # XLNet's null-odds search counted `total = 1` for 16 questions with one id.
    path = tmp_path / "dev.json"
    qas = [{"id": qid, "question": "q", "answers": [{"text": "a", "answer_start": 0}],
            "is_impossible": False} for qid in ("x1", "x2", "x2")]
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": qas}]}]}))
    with pytest.raises(InputDataError, match=r"dev\.json: question id 'x2' occurs 2 times"):
        xs.read_squad_examples(str(path), is_training=False)
    assert len(xs.read_squad_examples(str(path), is_training=True)) == 3


@pytest.mark.parametrize("value", ["false", 0, None])
def test_is_impossible_that_is_not_a_bool_is_refused(tmp_path, value):
    # bool("false") is True: XLNet trained on it as impossible; BERT's reader refuses it.
    path = tmp_path / "train.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": [
        {"id": "x1", "question": "q", "answers": [{"text": "a", "answer_start": 0}],
         "is_impossible": value}]}]}]}))
    kind = type(value).__name__
    with pytest.raises(InputDataError, match=f"train.json: question x1: 'is_impossible' is a "
                                             f"{kind}, expected bool"):
        xs.read_squad_examples(str(path), is_training=True)


def test_a_blank_context_aligns_to_nothing_instead_of_crashing(sp_model):
    """Fresh round (xsq_ctx_ws): a context of whitespace only gives no pieces, and the LCS
    table (N x 0) raised IndexError. The original's table is at least 1024 wide and reads a
    score of 0 there: "MISMATCH DETECTED!", the example is skipped (align_text's None)."""
    assert xs.align_text([], "   \n\t ", uncased=False) is None
    assert xs.align_pieces(sp_model, "   \n\t ", False) is None
