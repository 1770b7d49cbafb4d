"""SQuAD pre/post-processing and metrics (bert_tf/data/squad*.py; spec bert.md section 9).

Golden files: tests/golden/bert/squad/{v1.1,v2.0}/, written by the original run_squad.py
functions (see tests/golden/bert/README.md section F). Hand cases: the numbers are worked out in
the comments.
"""
import gzip
import json
import logging
import math
import os

import numpy as np
import pytest

from bert_tf.data import squad
from bert_tf.data import squad_metrics as m
from bert_tf.data import squad_postprocess as post
from bert_tf.errors import FlagError, InputDataError

VERSIONS = ["v1.1", "v2.0"]
# Settings the goldens were made with.
MAX_SEQ, STRIDE, MAX_QUERY, N_BEST, MAX_ANSWER = 128, 64, 32, 20, 30


def _jsonl(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _squad_dir(golden_dir, version):
    return os.path.join(golden_dir, "bert", "squad", version)


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab_file):
    from bert_tf.tokenization.wordpiece import FullTokenizer
    return FullTokenizer(uncased_vocab_file, do_lower_case=True)


def _feature_as_json(f):
    """A feature in the golden jsonl layout (int dict keys written as strings)."""
    d = dict(vars(f))
    d["token_to_orig_map"] = {str(k): v for k, v in f.token_to_orig_map.items()}
    d["token_is_max_context"] = {str(k): v for k, v in f.token_is_max_context.items()}
    return d


def _golden_examples(golden_dir, version, mode):
    return [squad.SquadExample(**d)
            for d in _jsonl(os.path.join(_squad_dir(golden_dir, version), f"examples_{mode}.jsonl.gz"))]


def _golden_features(golden_dir, version, mode):
    out = []
    for d in _jsonl(os.path.join(_squad_dir(golden_dir, version), f"features_{mode}.jsonl.gz")):
        d["token_to_orig_map"] = {int(k): v for k, v in d["token_to_orig_map"].items()}
        d["token_is_max_context"] = {int(k): v for k, v in d["token_is_max_context"].items()}
        out.append(squad.InputFeatures(**d))
    return out


def _golden_results(golden_dir, version):
    z = np.load(os.path.join(_squad_dir(golden_dir, version), "logits.npz"))
    # float32 arrays in, as the golden run passed float(x) of the same float32 values.
    return [post.RawResult(int(u), s, e)
            for u, s, e in zip(z["unique_ids"], z["start_logits"], z["end_logits"])]


def _write_json(tmp_path, obj, name="in.json"):
    path = str(tmp_path / name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    return path


# ---- golden: reader and features ------------------------------------------------------------

@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_examples_and_features_match_golden(golden_dir, tokenizer, version, mode):
    folder = _squad_dir(golden_dir, version)
    is_training = mode == "train"
    src = "train-style-subset.json.gz" if is_training else "dev-subset.json.gz"
    examples = squad.read_squad_examples(os.path.join(folder, src), is_training,
                                         version_2_with_negative=(version == "v2.0"))
    golden_examples = _jsonl(os.path.join(folder, f"examples_{mode}.jsonl.gz"))
    assert len(examples) == len(golden_examples)
    for ours, gold in zip(examples, golden_examples):
        assert vars(ours) == gold, gold["qas_id"]

    features = []
    n = squad.convert_examples_to_features(examples, tokenizer, MAX_SEQ, STRIDE, MAX_QUERY,
                                           is_training, features.append)
    golden_features = _jsonl(os.path.join(folder, f"features_{mode}.jsonl.gz"))
    assert n == len(features) == len(golden_features) == {"v1.1": 440, "v2.0": 412}[version]
    for ours, gold in zip(features, golden_features):
        assert _feature_as_json(ours) == gold, gold["unique_id"]
    if version == "v2.0" and is_training:
        assert sum(e.is_impossible for e in examples) == 107


# ---- golden: post-processing -----------------------------------------------------------------

def _check_outputs_equal_golden(folder, out, version):
    with open(out["pred"], "rb") as f, open(os.path.join(folder, "predictions.json"), "rb") as g:
        assert f.read() == g.read()
    with open(out["nbest"], "rb") as f, gzip.open(os.path.join(folder, "nbest_predictions.json.gz")) as g:
        ours_bytes, gold_bytes = f.read(), g.read()
    if ours_bytes != gold_bytes:  # explain the difference before failing
        ours, gold = json.loads(ours_bytes), json.loads(gold_bytes)
        assert list(ours) == list(gold)
        for qid in gold:
            assert [e["text"] for e in ours[qid]] == [e["text"] for e in gold[qid]], qid
            for a, b in zip(ours[qid], gold[qid]):
                assert a["probability"] == pytest.approx(b["probability"], abs=1e-6)
                assert a["start_logit"] == b["start_logit"] and a["end_logit"] == b["end_logit"]
        pytest.fail("nbest_predictions.json is not byte-identical to the golden")
    if version == "v2.0":
        with open(out["odds"], "rb") as f, open(os.path.join(folder, "null_odds.json"), "rb") as g:
            assert f.read() == g.read()
    else:
        assert not os.path.exists(out["odds"])


def _run_write_predictions(tmp_path, examples, features, results, version):
    out = {k: str(tmp_path / f"{k}.json") for k in ("pred", "nbest", "odds")}
    squad.write_predictions(examples, features, results, N_BEST, MAX_ANSWER, True, out["pred"],
                            out["nbest"], out["odds"], version_2_with_negative=(version == "v2.0"),
                            null_score_diff_threshold=0.0, verbose_logging=False)
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_write_predictions_byte_identical_from_golden_features(golden_dir, tmp_path, version):
    folder = _squad_dir(golden_dir, version)
    out = _run_write_predictions(tmp_path, _golden_examples(golden_dir, version, "eval"),
                                 _golden_features(golden_dir, version, "eval"),
                                 _golden_results(golden_dir, version), version)
    _check_outputs_equal_golden(folder, out, version)
    assert sorted(os.listdir(tmp_path)) == sorted(
        f"{k}.json" for k in (("pred", "nbest", "odds") if version == "v2.0" else ("pred", "nbest")))


@pytest.mark.parametrize("version", VERSIONS)
def test_write_predictions_byte_identical_from_our_features(golden_dir, tokenizer, tmp_path, version):
    folder = _squad_dir(golden_dir, version)
    examples = squad.read_squad_examples(os.path.join(folder, "dev-subset.json.gz"), False,
                                         version_2_with_negative=(version == "v2.0"))
    features = []
    squad.convert_examples_to_features(examples, tokenizer, MAX_SEQ, STRIDE, MAX_QUERY, False,
                                       features.append)
    results = list(reversed(_golden_results(golden_dir, version)))  # order must not matter
    out = _run_write_predictions(tmp_path, examples, features, results, version)
    _check_outputs_equal_golden(folder, out, version)


def test_golden_v2_facts(golden_dir):
    """Facts the golden README states about the v2.0 run, read from our output."""
    version = "v2.0"
    preds = squad.compute_predictions(
        _golden_examples(golden_dir, version, "eval"), _golden_features(golden_dir, version, "eval"),
        _golden_results(golden_dir, version), N_BEST, MAX_ANSWER, True,
        version_2_with_negative=True)
    assert sum(1 for v in preds.predictions.values() if v == "") == 1
    # "mostly 21 entries": the null entry appended to the 20 (never more than n_best_size + 1).
    sizes = [len(v) for v in preds.nbest.values()]
    assert max(sizes) == N_BEST + 1 and sizes.count(N_BEST + 1) > len(sizes) // 2


# ---- hand cases: reader ----------------------------------------------------------------------

def test_split_context_whitespace_set():
    # chars: ' ',' ','a',' ','b','c',U+202F,'d',NBSP,'e'. NBSP is not SQuAD whitespace.
    tokens, offsets = squad.split_context("  a bc\u202fd\u00a0e")
    assert tokens == ["a", "bc", "d\u00a0e"]
    assert offsets == [-1, -1, 0, 0, 1, 1, 1, 2, 2, 2]
    assert squad.split_context("") == ([], [])


def _one_question_file(tmp_path, qa, context="The Broncos (Denver) won."):
    return _write_json(tmp_path, {"data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": [qa]}]}]})


def test_read_training_positions_and_eval_mode(tmp_path):
    # "Denver" starts at char 13 of "The Broncos (Denver) won.", inside word 2 "(Denver)".
    qa = {"id": "q1", "question": "Who won?", "answers": [{"text": "Denver", "answer_start": 13}],
          "is_impossible": False}
    path = _one_question_file(tmp_path, qa)
    (ex,) = squad.read_squad_examples(path, is_training=True, version_2_with_negative=True)
    assert (ex.qas_id, ex.question_text, ex.orig_answer_text) == ("q1", "Who won?", "Denver")
    assert ex.doc_tokens == ["The", "Broncos", "(Denver)", "won."]
    assert (ex.start_position, ex.end_position, ex.is_impossible) == (2, 2, False)
    (ev,) = squad.read_squad_examples(path, is_training=False, version_2_with_negative=True)
    assert (ev.orig_answer_text, ev.start_position, ev.end_position, ev.is_impossible) == (
        None, None, None, False)


def test_read_training_impossible_and_eval_ignores_it(tmp_path):
    qa = {"id": "q2", "question": "Who lost?", "answers": [], "is_impossible": True}
    path = _one_question_file(tmp_path, qa)
    (ex,) = squad.read_squad_examples(path, True, version_2_with_negative=True)
    assert (ex.orig_answer_text, ex.start_position, ex.end_position, ex.is_impossible) == ("", -1, -1, True)
    (ev,) = squad.read_squad_examples(path, False, version_2_with_negative=True)
    assert ev.is_impossible is False
    # v1 mode in training: is_impossible is not read, so "no answer" is an error.
    with pytest.raises(InputDataError, match="q2.*exactly 1 answer, found 0"):
        squad.read_squad_examples(path, True, version_2_with_negative=False)


def test_could_not_find_answer_is_skipped_and_counted(tmp_path, caplog):
    # "Panthers" at offset 0 spans chars 0..7 = words 0..1 "The Broncos": not found -> dropped.
    bad = {"id": "bad", "question": "?", "answers": [{"text": "Panthers", "answer_start": 0}]}
    good = {"id": "good", "question": "?", "answers": [{"text": "won", "answer_start": 21}]}
    path = _write_json(tmp_path, {"data": [{"paragraphs": [
        {"context": "The Broncos (Denver) won.", "qas": [bad, good]}]}]})
    with caplog.at_level(logging.WARNING):
        examples = squad.read_squad_examples(path, True)
    assert [e.qas_id for e in examples] == ["good"]
    assert (examples[0].start_position, examples[0].end_position) == (3, 3)
    text = caplog.text
    assert "Could not find answer: 'The Broncos' vs. 'Panthers'" in text
    assert "skipped 1 of 2 questions" in text
    # Eval mode never looks at answers.
    assert len(squad.read_squad_examples(path, False)) == 2


# ---- hand cases: bad input -------------------------------------------------------------------

def test_bad_json_names_file_and_line(tmp_path):
    path = str(tmp_path / "broken.json")
    with open(path, "w") as f:
        f.write('{"data": [\n{"paragraphs": }')
    with pytest.raises(InputDataError, match=r"broken\.json: invalid JSON at line 2"):
        squad.read_squad_examples(path, False)
    with pytest.raises(InputDataError, match="not found"):
        squad.read_squad_examples(str(tmp_path / "absent.json"), False)


@pytest.mark.parametrize("obj, pattern", [
    ({"version": "1.1"}, r"the top level has no key 'data'"),
    ({"data": [{"title": "x"}]}, r"data\[0\] has no key 'paragraphs'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\]\.paragraphs\[0\] has no key 'context'"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [{"question": "q"}]}]}]},
     r"paragraphs\[0\]\.qas\[0\] has no key 'id'"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "x7"}]}]}]},
     r"qas\[0\] \(id x7\) has no key 'question'"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "x8", "question": "q"}]}]}]},
     r"\(id x8\) has no key 'answers'"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [{"id": "x9", "question": "q", "answers": [
        {"text": "c"}]}]}]}]}, r"\(id x9\)\.answers\[0\] has no key 'answer_start'"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "y1", "question": "q", "answers": [
        {"text": "bc", "answer_start": 2}]}]}]}]}, r"y1.*answer_start 2 \+ length 2 lies outside"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "y2", "question": "q", "answers": [
        {"text": "", "answer_start": 0}]}]}]}]}, r"y2.*answer text is empty"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "y3", "question": "q", "answers": [
        {"text": "a", "answer_start": 0}, {"text": "b", "answer_start": 1}]}]}]}]},
     r"y3.*exactly 1 answer, found 2"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "y4", "question": "q", "answers": [
        {"text": "a", "answer_start": "0"}]}]}]}]}, r"y4.*'answer_start' is a str, expected int"),
])
def test_malformed_training_input(tmp_path, obj, pattern):
    path = _write_json(tmp_path, obj, "bad.json")
    with pytest.raises(InputDataError, match=r"bad\.json: .*" + pattern):
        squad.read_squad_examples(path, True)


def test_v2_training_needs_is_impossible(tmp_path):
    qa = {"id": "z1", "question": "q", "answers": [{"text": "won", "answer_start": 21}]}
    with pytest.raises(InputDataError, match=r"\(id z1\) has no key 'is_impossible'"):
        squad.read_squad_examples(_one_question_file(tmp_path, qa), True, version_2_with_negative=True)


def test_empty_paragraphs_warns_and_skips(tmp_path, caplog):
    path = _write_json(tmp_path, {"data": [{"title": "Empty", "paragraphs": []}]})
    with caplog.at_level(logging.WARNING):
        assert squad.read_squad_examples(path, True) == []
    assert "data[0] (title 'Empty') has an empty 'paragraphs' list" in caplog.text
    assert "holds no question" in caplog.text


# ---- hand cases: features --------------------------------------------------------------------

# Ids are line numbers - 1 in the uncased vocab: [CLS] 101, [SEP] 102, who 2040, won 2180,
# ? 1029, the 1996, broncos 14169, ( 1006, denver 7573, ) 1007, . 1012.
HAND_QUERY_IDS = [101, 2040, 2180, 1029, 102]
HAND_DOC = ["the", "broncos", "(", "denver", ")", "won", "."]
HAND_DOC_IDS = [1996, 14169, 1006, 7573, 1007, 2180, 1012]
HAND_DOC_WORD = [0, 1, 2, 2, 2, 3, 3]  # word of each piece


def _hand_example():
    return squad.SquadExample("q1", "Who won?", ["The", "Broncos", "(Denver)", "won."],
                              orig_answer_text="Denver", start_position=2, end_position=2)


def test_single_window_feature_by_hand(tokenizer):
    feats = []
    squad.convert_examples_to_features([_hand_example()], tokenizer, 16, 4, 8, True, feats.append)
    (f,) = feats
    assert f.unique_id == 1000000000 and f.example_index == 0 and f.doc_span_index == 0
    assert f.tokens == ["[CLS]", "who", "won", "?", "[SEP]"] + HAND_DOC + ["[SEP]"]
    assert f.input_ids == HAND_QUERY_IDS + HAND_DOC_IDS + [102, 0, 0, 0]
    assert f.input_mask == [1] * 13 + [0] * 3
    assert f.segment_ids == [0] * 5 + [1] * 8 + [0] * 3
    assert f.token_to_orig_map == {5 + i: w for i, w in enumerate(HAND_DOC_WORD)}
    assert f.token_is_max_context == {5 + i: True for i in range(7)}
    # Word span "(Denver)" = pieces 2..4, improved to piece 3 "denver"; + query 3 + 2 = 8.
    assert (f.start_position, f.end_position, f.is_impossible) == (8, 8, False)
    # Eval mode: no labels.
    feats = []
    ev = squad.SquadExample("q1", "Who won?", ["The", "Broncos", "(Denver)", "won."])
    squad.convert_examples_to_features([ev], tokenizer, 16, 4, 8, False, feats.append)
    assert (feats[0].start_position, feats[0].end_position) == (None, None)


def test_doc_stride_windows_by_hand(tokenizer):
    # max_seq 10 - query 3 - 3 = 4 pieces per window, stride 2: windows (0,4), (2,4), (4,3).
    feats = []
    squad.convert_examples_to_features([_hand_example()], tokenizer, 10, 2, 4, True, feats.append)
    assert [f.unique_id for f in feats] == [1000000000, 1000000001, 1000000002]
    assert [f.doc_span_index for f in feats] == [0, 1, 2]
    assert [f.tokens[5:-1] for f in feats] == [HAND_DOC[0:4], HAND_DOC[2:6], HAND_DOC[4:7]]
    assert feats[2].input_ids == HAND_QUERY_IDS + HAND_DOC_IDS[4:7] + [102, 0]
    assert feats[2].token_to_orig_map == {5: 2, 6: 3, 7: 3}
    # Answer piece 3: window 0 -> 3 - 0 + 5 = 8; window 1 -> 3 - 2 + 5 = 6; window 2 -> 0/0.
    assert [(f.start_position, f.end_position) for f in feats] == [(8, 8), (6, 6), (0, 0)]
    # Piece 3: window 0 score min(3, 0) + 0.04; window 1 min(1, 2) + 0.04 = 1.04 -> window 1.
    # Piece 2: window 0 min(2,1)+.04 = 1.04, window 1 min(0,3)+.04 -> window 0.
    # Piece 4: window 1 min(2,1)+.04 = 1.04; window 2 min(0,2)+.03 -> window 1.
    assert feats[0].token_is_max_context == {5: True, 6: True, 7: True, 8: False}
    assert feats[1].token_is_max_context == {5: False, 6: True, 7: True, 8: False}
    assert feats[2].token_is_max_context == {5: False, 6: True, 7: True}


def test_doc_spans_and_max_context_ties():
    spans = squad.make_doc_spans(10, 4, 3)
    assert spans == [(0, 4), (3, 4), (6, 4)]
    # Piece 3: span 0 min(3,0)+0.04, span 1 min(0,3)+0.04: a tie goes to the earlier span.
    assert squad._check_is_max_context(spans, 0, 3) and not squad._check_is_max_context(spans, 1, 3)
    assert squad._check_is_max_context(spans, 1, 4)
    assert squad.make_doc_spans(5, 4, 10) == [(0, 4), (4, 1)]  # stride capped at the length
    assert squad.make_doc_spans(0, 4, 2) == []


def test_query_truncation(tokenizer):
    feats = []
    ex = squad.SquadExample("q", "the broncos won the game", ["won."])
    squad.convert_examples_to_features([ex], tokenizer, 12, 4, 2, False, feats.append)
    assert feats[0].tokens == ["[CLS]", "the", "broncos", "[SEP]", "won", ".", "[SEP]"]


def test_impossible_training_feature_labels(tokenizer):
    feats = []
    ex = squad.SquadExample("q", "Who won?", ["won."], "", -1, -1, is_impossible=True)
    squad.convert_examples_to_features([ex], tokenizer, 12, 4, 4, True, feats.append)
    assert (feats[0].start_position, feats[0].end_position, feats[0].is_impossible) == (0, 0, True)


@pytest.mark.parametrize("seq, stride, query", [
    (384, 128, 64),  # the original defaults: 317-piece windows
    (128, 64, 32),  # the golden flags: 93-piece windows
    (128, 61, 64),  # stride == window: consecutive windows touch, no piece skipped
    (10, 3, 4),  # 10 - 4 - 3 = 3
])
def test_window_flags_that_skip_no_piece_pass(seq, stride, query):
    squad.check_feature_flags(seq, stride, query)


@pytest.mark.parametrize("seq, stride, query, pattern", [
    (10, 2, 7, r"--max_seq_length=10 must be greater than --max_query_length=7 \+ 3"),
    (128, 128, 32, r"--doc_stride=128 is longer than the document window of 93 pieces "
                   r"\(--max_seq_length=128 - --max_query_length=32 - 3"),
    # The user's case: 128 - 64 - 3 = 61-piece windows, stride 100 -> 39 pieces never seen.
    (128, 100, 64, r"--doc_stride=100 is longer than the document window of 61 pieces "
                   r"\(--max_seq_length=128 - --max_query_length=64 - 3 .*the 39 pieces "
                   r"between two windows would never be seen; pass --doc_stride <= 61"),
    (128, 62, 64, r"--doc_stride=62 is longer than the document window of 61 pieces"),
    (128, 0, 32, r"--doc_stride=0 must be at least 1"),
    (128, 64, 0, r"--max_query_length=0 must be at least 1"),
])
def test_bad_flags(tokenizer, seq, stride, query, pattern):
    with pytest.raises(FlagError, match=pattern):
        squad.convert_examples_to_features([_hand_example()], tokenizer, seq, stride, query, True,
                                           lambda f: None)


def test_feature_writer_round_trip(golden_dir, tmp_path):
    from bert_tf.data import tfrecord
    all_golden = _golden_features(golden_dir, "v2.0", "train")
    golden = all_golden[:3] + [f for f in all_golden if f.is_impossible][:3]
    path = str(tmp_path / "train.tf_record")
    with squad.FeatureWriter(path, is_training=True) as writer:
        for f in golden:
            writer.process_feature(f)
    assert writer.num_features == 6
    records = list(tfrecord.read_examples(path))
    assert [sorted(r) for r in records] == [sorted(["unique_ids", "input_ids", "input_mask",
                                                    "segment_ids", "start_positions",
                                                    "end_positions", "is_impossible"])] * 6
    for r, f in zip(records, golden):
        assert r["unique_ids"] == [f.unique_id] and r["input_ids"] == f.input_ids
        assert r["input_mask"] == f.input_mask and r["segment_ids"] == f.segment_ids
        assert r["start_positions"] == [f.start_position] and r["end_positions"] == [f.end_position]
        assert r["is_impossible"] == [int(f.is_impossible)]
    assert any(r["is_impossible"] == [1] for r in records)

    eval_path = str(tmp_path / "eval.tf_record")
    with squad.FeatureWriter(eval_path, is_training=False) as writer:
        writer.process_feature(golden[0])
    (r,) = tfrecord.read_examples(eval_path)
    assert sorted(r) == ["input_ids", "input_mask", "segment_ids", "unique_ids"]
    assert squad.tfrecord_int_lengths(128, True) == {
        "unique_ids": 1, "input_ids": 128, "input_mask": 128, "segment_ids": 128,
        "start_positions": 1, "end_positions": 1}


# ---- hand cases: post-processing -------------------------------------------------------------

def test_get_final_text():
    # BasicTokenizer("Steve Smith's") = "steve smith ' s"; "steve smith" ends at index 10 ->
    # the 10th non-space char -> "h" at index 10 of the original.
    assert post.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert post.get_final_text("Smith", "Smith's", False) == "Smith"
    # Accent stripping when lower-casing keeps the same number of characters: "cafe" -> "Café".
    assert post.get_final_text("cafe", "Café.", True) == "Café"
    assert post.get_final_text("xyz", "Steve", True) == "Steve"  # not found: original text


def test_softmax_and_best_indexes():
    assert post._compute_softmax([]) == []
    assert post._compute_softmax([1.0, 1.0]) == [0.5, 0.5]
    assert post._compute_softmax([0.0, math.log(3.0)]) == pytest.approx([0.25, 0.75], abs=1e-15)
    assert post._get_best_indexes([1.0, 3.0, 3.0, 2.0], 3) == [1, 2, 3]  # tie: lower index first


def _hand_feature(start_logits, end_logits):
    example = squad.SquadExample("q1", "q", ["Paris", "is", "nice"])
    feature = squad.InputFeatures(
        unique_id=7, example_index=0, doc_span_index=0,
        tokens=["[CLS]", "q", "[SEP]", "paris", "is", "nice", "[SEP]"],
        token_to_orig_map={3: 0, 4: 1, 5: 2}, token_is_max_context={3: True, 4: True, 5: True},
        input_ids=[], input_mask=[], segment_ids=[])
    return [example], [feature], [post.RawResult(7, start_logits, end_logits)]


def test_predictions_by_hand_v1_and_v2():
    # start top-2: 3 (5.0), 4 (1.0); end top-2: 3 (4.0), 5 (2.0) ([CLS] has 0.5, below both).
    # Valid pairs: (3,3)=9 "Paris", (3,5)=7 "Paris is nice", (4,5)=3 "is nice"; (4,3) has
    # end < start. n-best 2 keeps the first two: softmax([9, 7]) = [1/(1+e^-2), e^-2/(1+e^-2)].
    start = [0.5, 0.0, 0.0, 5.0, 1.0, 0.0, 0.0]
    end = [0.5, 0.0, 0.0, 4.0, 0.0, 2.0, 0.0]
    p1 = 1.0 / (1.0 + math.exp(-2.0))
    v1 = post.compute_predictions(*_hand_feature(start, end), n_best_size=2, max_answer_length=30,
                                  do_lower_case=True)
    assert v1.predictions == {"q1": "Paris"}
    assert [e["text"] for e in v1.nbest["q1"]] == ["Paris", "Paris is nice"]
    assert [e["probability"] for e in v1.nbest["q1"]] == pytest.approx([p1, 1 - p1], abs=1e-12)
    assert v1.null_odds == {}
    # max_answer_length 1 drops (3,5) (3 pieces) and (4,5) (2 pieces).
    short = post.compute_predictions(*_hand_feature(start, end), 2, 1, True)
    assert [e["text"] for e in short.nbest["q1"]] == ["Paris"]

    # v2: null = 0.5 + 0.5 = 1 ranks after 9, 7 and 3, so the n-best list is full without it
    # and it is appended (3 entries). Score diff = 1 - 5 - 4 = -8.
    v2 = post.compute_predictions(*_hand_feature(start, end), 2, 30, True,
                                  version_2_with_negative=True)
    nbest = v2.nbest["q1"]
    assert [(e["text"], e["start_logit"], e["end_logit"]) for e in nbest] == [
        ("Paris", 5.0, 4.0), ("Paris is nice", 5.0, 2.0), ("", 0.5, 0.5)]
    z = 1 + math.exp(-2) + math.exp(-8)
    assert [e["probability"] for e in nbest] == pytest.approx(
        [1 / z, math.exp(-2) / z, math.exp(-8) / z], abs=1e-12)
    assert v2.null_odds == {"q1": -8.0} and v2.predictions == {"q1": "Paris"}
    # Threshold -9: -8 > -9 -> predict no answer.
    v2t = post.compute_predictions(*_hand_feature(start, end), 2, 30, True, True, -9.0)
    assert v2t.predictions == {"q1": ""} and v2t.null_odds == {"q1": -8.0}


def test_no_valid_span():
    # Only [CLS] in the top 1: no valid pair. v1: "empty" with probability 1.
    start = [9.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    end = [9.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
    v1 = post.compute_predictions(*_hand_feature(start, end), 1, 30, True)
    assert v1.predictions == {"q1": "empty"}
    assert v1.nbest["q1"] == [{"text": "empty", "probability": 1.0, "start_logit": 0.0, "end_logit": 0.0}]
    # v2: only the null entry; bert_tf predicts "" with null odds = null score 18 (original crashed).
    v2 = post.compute_predictions(*_hand_feature(start, end), 1, 30, True, True)
    assert v2.predictions == {"q1": ""} and v2.null_odds == {"q1": 18.0}
    assert [e["text"] for e in v2.nbest["q1"]] == [""]


def test_missing_result_is_an_error():
    examples, features, _ = _hand_feature([0.0] * 7, [0.0] * 7)
    with pytest.raises(InputDataError, match="unique_id 7 .*q1"):
        post.compute_predictions(examples, features, [], 20, 30, True)


# ---- hand cases: metrics ---------------------------------------------------------------------

def test_normalize_and_token_f1():
    assert m.normalize_answer("The  Quick, brown fox!") == "quick brown fox"
    assert m.normalize_answer("an apple a day") == "apple day"
    assert m.normalize_answer("Theater") == "theater"  # whole words only
    # pred [cat, sat], gold [cat, sat, on, mat]: P = 1, R = 1/2, F1 = 2/3.
    assert m.f1_score("the cat sat", "a cat sat on mat") == pytest.approx(2 / 3)
    # pred [cat]x3, gold [cat, dog]: 1 common, P = 1/3, R = 1/2, F1 = 0.4.
    assert m.f1_score("cat cat cat", "cat dog") == pytest.approx(0.4)
    assert m.exact_match_score("The Broncos.", "broncos")
    # Empty answers: v1.1 gives 0, v2.0 gives 1 when both are empty.
    assert m.f1_score("", "") == 0.0
    assert m.compute_f1("", "") == 1.0 and m.compute_f1("", "x") == 0.0
    assert m.compute_exact("", "the") == 1  # "the" normalises to ""


def _dataset(qas):
    return [{"title": "t", "paragraphs": [{"context": "c", "qas": qas}]}]


def _qa(qid, *texts):
    return {"id": qid, "question": "q", "answers": [{"text": t, "answer_start": 0} for t in texts]}


def test_evaluate_v1_by_hand():
    dataset = _dataset([_qa("a", "Denver Broncos", "Broncos team"), _qa("b", "1964"), _qa("c", "x")])
    # a: "the Broncos" -> "broncos": EM 0, F1 2/3 (vs either gold). b: EM 1, F1 1. c: missing -> 0.
    result = m.evaluate_v1(dataset, {"a": "the Broncos", "b": "1964."})
    assert result["exact_match"] == pytest.approx(100 / 3)
    assert result["f1"] == pytest.approx(100 * (2 / 3 + 1) / 3)


def test_evaluate_v2_and_threshold_search_by_hand():
    dataset = _dataset([_qa("a", "Paris"), _qa("b", "red apple"), _qa("c"), _qa("d")])
    preds = {"a": "Paris", "b": "apple", "c": "", "d": "blue"}
    null_odds = {"a": -3.0, "b": -1.0, "c": 2.0, "d": 0.5}
    # Raw exact a1 b0 c1 d0; raw F1 a1 b2/3 c1 d0. With na_prob_thresh 1.0 only c (2.0) is
    # switched to "no answer", which it already is.
    out = m.evaluate_v2(dataset, preds, null_odds)
    assert out["exact"] == pytest.approx(50.0) and out["f1"] == pytest.approx(100 * (8 / 3) / 4)
    assert out["total"] == 4
    assert out["HasAns_exact"] == pytest.approx(50.0) and out["HasAns_f1"] == pytest.approx(100 * 5 / 6)
    assert out["HasAns_total"] == 2 and out["NoAns_total"] == 2
    assert out["NoAns_exact"] == pytest.approx(50.0) and out["NoAns_f1"] == pytest.approx(50.0)
    # Search: start at 2 (no-answer questions); order a(-3) b(-1) d(0.5) c(2).
    # exact: a +1 -> 3 (best, thresh -3); b +0; d -1; c 0 -> best 3/4.
    # F1: a +1 -> 3 (-3); b +2/3 -> 11/3 (best, thresh -1); d -1; c 0 -> best 11/12.
    assert out["best_exact"] == pytest.approx(75.0) and out["best_exact_thresh"] == -3.0
    assert out["best_f1"] == pytest.approx(100 * 11 / 12) and out["best_f1_thresh"] == -1.0
    assert out["has_ans_exact"] == pytest.approx(0.5) and out["has_ans_f1"] == pytest.approx(5 / 6)
    assert list(out)[:3] == ["exact", "f1", "total"]
    # na_prob_thresh 0.0: d (0.5 > 0) becomes "no answer" too -> exact a1 b0 c1 d1 = 75.
    out0 = m.evaluate_v2(dataset, preds, null_odds, na_prob_thresh=0.0)
    assert out0["exact"] == pytest.approx(75.0)
    # Without null odds: no search keys.
    assert "best_f1" not in m.evaluate_v2(dataset, preds)


def test_threshold_search_keeps_all_null_when_nothing_helps():
    dataset = _dataset([_qa("a", "Paris"), _qa("c")])
    preds = {"a": "Rome", "c": "x"}
    best, thresh, has_ans = m.find_best_thresh_v2(
        preds, {"a": 0, "c": 0}, {"a": 1.0, "c": 2.0}, m.make_qid_to_has_ans(dataset))
    # Start 1 (one no-answer question); a +0 -> 1; c -1 -> 0. Best stays 1 at threshold 0.0.
    assert (best, thresh, has_ans) == (50.0, 0.0, 0.0)


def test_metrics_bad_input(tmp_path):
    with pytest.raises(InputDataError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[0\] has no key 'id'"):
        m.evaluate_v1(_dataset([{"answers": []}]), {})
    with pytest.raises(InputDataError, match="null odds lack 1 predicted question"):
        m.evaluate_v2(_dataset([_qa("a", "x")]), {"a": "x"}, {})
    path = str(tmp_path / "p.json")
    with open(path, "w") as f:
        f.write("{")
    with pytest.raises(InputDataError, match=r"p\.json: invalid JSON"):
        m.load_json(path)


def test_real_normans_article_reads_and_scores_perfect_predictions(shared_data_dir):
    """The real SQuAD 2.0 dev "Normans" article: 208 questions, 112 unanswerable (data README)."""
    path = os.path.join(shared_data_dir, "squad", "normans-dev-v2.0.json")
    examples = squad.read_squad_examples(path, is_training=False, version_2_with_negative=True)
    assert len(examples) == 208
    dataset = m.load_json(path)["data"]
    gold = {qa["id"]: (qa["answers"][0]["text"] if qa["answers"] else "")
            for article in dataset for p in article["paragraphs"] for qa in p["qas"]}
    # Predicting a gold answer (or "" for no answer) everywhere scores 100 on every split.
    out = m.evaluate_v2(dataset, gold, {k: 0.0 for k in gold})
    assert (out["exact"], out["f1"], out["total"]) == (100.0, 100.0, 208)
    assert (out["HasAns_total"], out["NoAns_total"]) == (96, 112)
    # Search from "all null" (112): each answerable +1, each "" prediction 0 -> 208 / 208.
    assert out["best_exact"] == 100.0 and out["best_f1"] == 100.0


def test_threshold_search_on_a_partial_prediction_file_stays_a_percentage():
    # issue 15 item 11: dataset a (answerable), b, c (no answer); only a is predicted and
    # scored. The original started from 2 (b, c) and divided by 1 scored question: 300.0.
    dataset = _dataset([_qa("a", "Paris"), _qa("b"), _qa("c")])
    best, thresh, has_ans = m.find_best_thresh_v2(
        {"a": "Paris"}, {"a": 1.0}, {"a": 0.5}, m.make_qid_to_has_ans(dataset))
    # Start 0 (no scored no-answer question); a +1 -> 1 at 0.5: 100 * 1 / 1.
    assert (best, thresh, has_ans) == (100.0, 0.5, 1.0)


def _duplicate_id_file(tmp_path):
    qas = [{"id": qid, "question": "who won?", "answers": [{"text": "won", "answer_start": 21}],
            "is_impossible": False} for qid in ("a1", "d7", "d7")]
    return _write_json(tmp_path, {"data": [{"paragraphs": [
        {"context": "The Broncos (Denver) won.", "qas": qas[:2]},
        {"context": "The Broncos (Denver) won.", "qas": qas[2:]}]}]})


@pytest.mark.parametrize("version_2", [False, True])
def test_duplicate_question_ids_in_a_predict_file_are_refused(tmp_path, version_2):
    # predictions.json is keyed by id: the original kept one of 16 questions with one id.
    path = _duplicate_id_file(tmp_path)
    with pytest.raises(InputDataError, match=r"in\.json: question id 'd7' occurs 2 times"):
        squad.read_squad_examples(path, False, version_2_with_negative=version_2)
    # training reads them (no output is keyed by id there)
    assert [ex.qas_id for ex in squad.read_squad_examples(path, True, version_2)] == [
        "a1", "d7", "d7"]
