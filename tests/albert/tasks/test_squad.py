"""ALBERT run_squad_v1 / run_squad_v2 (original google-research/albert squad_utils.py): the
feature layout worked out by hand on a real SQuAD question, a short train + predict of the
golden tiny ALBERT on real paragraphs (../shared/data/squad) with the real SentencePiece model,
and the metrics / v2 threshold recomputed with the official formulas written out here."""

import collections
import dataclasses
import json
import logging
import math
import os
import re
import string

import numpy as np
import pytest
import tensorflow as tf
from absl import flags as absl_flags

from bert_tf import flags as bert_flags
from bert_tf.albert.checkpoint_map import load_albert_checkpoint, save_albert_checkpoint
from bert_tf.albert.config import AlbertConfig
from bert_tf.albert.squad import AlbertSquadV1, AlbertSquadV2
from bert_tf.albert.data import squad as data
from bert_tf.errors import FlagError
from bert_tf.albert.tasks import squad as task
from bert_tf.albert.tasks.args import ALBERT_SQUAD_V1_FLAGS, ALBERT_SQUAD_V2_FLAGS
from bert_tf.albert.tokenization import load_sp_model

SPM_PIECES = 32000  # the XLNet model: more pieces than the golden config's 30522 ids


@pytest.fixture(scope="module")
def spm_file(shared_data_dir):
    """The real XLNet SentencePiece model (32000 pieces; ALBERT's own is not available)."""
    path = os.path.join(shared_data_dir, "xlnet", "spiece.model")
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module")
def sp(spm_file):
    return load_sp_model(spm_file)


@pytest.fixture(scope="module")
def squad_file(shared_data_dir):
    path = os.path.join(shared_data_dir, "squad", "normans-dev-v2.0.json")
    if not os.path.exists(path):
        pytest.skip(f"{path} is absent")
    return path


@pytest.fixture(scope="module")
def small_files(squad_file, tmp_path_factory):
    """v1 / v2 train and predict files from the first paragraphs of the real file: v1 keeps
    the answerable questions with their first answer (training needs exactly one)."""
    with open(squad_file) as f:
        article = json.load(f)["data"][0]
    folder = tmp_path_factory.mktemp("albert_squad_data")

    def write(name, paragraphs, v1):
        out = []
        for p in paragraphs:
            qas = []
            for qa in p["qas"]:
                if v1 and qa.get("is_impossible"):
                    continue
                qa = dict(qa)
                if v1:
                    qa.pop("is_impossible", None)
                qas.append(qa)
            out.append({"context": p["context"], "qas": qas})
        path = str(folder / name)
        with open(path, "w") as f:
            json.dump({"version": "test", "data": [{"title": article["title"],
                                                     "paragraphs": out}]}, f)
        return path

    train_paragraphs = article["paragraphs"][:2]
    train_v1 = [dict(p, qas=[dict(qa, answers=qa["answers"][:1]) for qa in p["qas"]])
                for p in train_paragraphs]
    train_v2 = [dict(p, qas=[dict(qa, answers=qa["answers"][:1]) for qa in p["qas"]])
                for p in train_paragraphs]
    predict = article["paragraphs"][2:4]
    return {"train_v1": write("train_v1.json", train_v1, True),
            "train_v2": write("train_v2.json", train_v2, False),
            "predict_v1": write("predict_v1.json", predict, True),
            "predict_v2": write("predict_v2.json", predict, False)}


@pytest.fixture(scope="module")
def albert_dir(golden_dir, tmp_path_factory):
    """The golden tiny ALBERT with its word embeddings padded to the 32000 SentencePiece ids
    (rows 30522.. from RandomState(0), std 0.2) and its config saying so; every other
    variable is the golden one."""
    src = os.path.join(golden_dir, "albert", "model")
    config = AlbertConfig.from_json_file(os.path.join(src, "albert_config.json"))
    reader = tf.train.load_checkpoint(os.path.join(src, "model.ckpt"))
    cfg = config.to_dict()
    cfg["vocab_size"] = SPM_PIECES
    big = AlbertConfig.from_dict(cfg)
    model = AlbertSquadV1(big).build_with_dummy_input()
    table = {k: v for k, v in model.name_map().items() if k.startswith("bert/")}
    for name, variable in table.items():
        value = reader.get_tensor(name)
        if name == "bert/embeddings/word_embeddings":
            extra = np.random.RandomState(0).normal(0, 0.2, (SPM_PIECES - value.shape[0],
                                                             value.shape[1]))
            value = np.concatenate([value, extra.astype(np.float32)])
        variable.assign(value)
    folder = tmp_path_factory.mktemp("albert_squad_model")
    save_albert_checkpoint(table, str(folder / "model.ckpt"))
    with open(folder / "albert_config.json", "w") as f:
        json.dump(cfg, f)
    return str(folder)


def make_args(albert_dir, spm_file, out, **kw):
    settings = dict(albert_config_file=os.path.join(albert_dir, "albert_config.json"),
                    spm_model_file=spm_file, output_dir=str(out),
                    init_checkpoint=os.path.join(albert_dir, "model.ckpt"),
                    max_seq_length=128, doc_stride=64, max_query_length=24,
                    train_batch_size=4, predict_batch_size=8, num_train_epochs=1.0,
                    learning_rate=1e-3, save_checkpoints_steps=1000,
                    train_feature_file=str(out / "train.tf_record"),
                    predict_feature_file=str(out / "predict.tf_record"),
                    predict_feature_left_file=str(out / "predict_features.json.gz"))
    settings.update(kw)
    return task.AlbertSquadArgs(**settings)


# ---- features -------------------------------------------------------------------------------

def test_feature_layout_by_hand(sp, squad_file):
    """"In what country is Normandy located?" (answer "France" at character 159): the window
    is [CLS] query [SEP] paragraph-span [SEP], worked out from SentencePiece directly."""
    first = data.read_squad_examples(squad_file, is_training=False)[0]
    assert first.question_text == "In what country is Normandy located?"
    # its first gold answer (the dev file has four; training takes exactly one)
    ex = data.SquadExample(first.qas_id, first.question_text, first.paragraph_text,
                           orig_answer_text="France", start_position=159)
    assert ex.paragraph_text[159:165] == "France"
    seq, stride, qlen = 64, 32, 16
    feats = list(data.convert_examples_to_features([ex], sp, seq, stride, qlen, True, True))
    # The question: lower-cased, no digits, so plain EncodeAsIds.
    query = sp.EncodeAsIds("in what country is normandy located?")
    assert len(query) == 9
    # The paragraph: pieces of the lower-cased, whitespace-collapsed context. "10th and
    # 11th" has no digit-comma piece, so plain EncodeAsPieces too for this paragraph's head.
    context = ex.paragraph_text
    pieces = sp.EncodeAsPieces(" ".join(context.split()).lower())
    doc_len = seq - len(query) - 3  # 52 paragraph pieces per window
    f0 = feats[0]
    assert f0.input_ids[:11] == [0] + query + [0]  # [CLS] / [SEP] are <unk> (0) here
    assert f0.tokens[0] == f0.tokens[10] == "<unk>"
    assert f0.input_ids[11:11 + doc_len] == [sp.PieceToId(p) for p in pieces[:doc_len]]
    assert f0.input_ids[11 + doc_len] == 0 and len(f0.input_ids) == seq
    assert f0.segment_ids == [0] * 11 + [1] * (doc_len + 1)
    assert f0.p_mask == [0] + [1] * 10 + [0] * doc_len + [1]
    assert f0.input_mask == [1] * seq and f0.paragraph_len == seq and f0.doc_offset == 11
    # Window starts step by the stride until one reaches the end.
    starts = [f.tok_start_to_orig_index for f in feats]
    assert len(feats) == 1 + -(-(len(pieces) - doc_len) // stride)
    assert [len(s) for s in starts[:-1]] == [doc_len] * (len(feats) - 1)
    # The label: the cased XLNet model splits lower-cased "france" as "▁" "franc" "e"; the
    # answer's characters 159..164 are those of "franc" (its first) to "e" (its last); the
    # lone "▁" is the space before (158).
    k = pieces.index("franc")
    assert pieces[k - 1:k + 2] == ["\u2581", "franc", "e"]
    assert k == 51 and k + 1 == doc_len  # window 0 (pieces 0..51) holds "franc", not "e"
    assert (f0.start_position, f0.end_position, f0.is_impossible) == (0, 0, True)
    f1 = feats[1]  # pieces 32..83
    assert f1.input_ids[11:11 + doc_len] == [sp.PieceToId(p) for p in pieces[32:32 + doc_len]]
    assert (f1.start_position, f1.end_position) == (11 + k - 32, 11 + k - 32 + 1)
    assert not f1.is_impossible
    i = k - 32
    assert f1.tok_start_to_orig_index[i] == 159 and f1.tok_end_to_orig_index[i + 1] == 164
    assert f1.tok_start_to_orig_index[i - 1] == f1.tok_end_to_orig_index[i - 1] == 158
    # Later windows (from piece 64) lack the answer: [CLS] labels, impossible.
    later = feats[2:]
    assert later and all((f.start_position, f.end_position, f.is_impossible) == (0, 0, True)
                         for f in later)
    # Max context: a piece in two windows belongs to the one where it is more central.
    assert f0.token_is_max_context[11] is True
    assert f0.token_is_max_context[11 + doc_len - 1] is False  # window 1 centres it better


def test_alignment_maps_pieces_to_characters(sp, squad_file):
    """Every paragraph piece's character span, lower-cased without spaces, spells the piece
    (the paragraphs of the first 20 questions; NFKD-only differences aside)."""
    examples = data.read_squad_examples(squad_file, is_training=False)[:20]
    feats = list(data.convert_examples_to_features(examples, sp, 128, 64, 24, False, True))
    checked = 0
    for f in feats:
        text = examples[f.example_index].paragraph_text
        pieces = f.tokens[f.doc_offset:f.doc_offset + len(f.tok_start_to_orig_index)]
        for piece, s, e in zip(pieces, f.tok_start_to_orig_index, f.tok_end_to_orig_index):
            want = piece.replace("\u2581", "")
            if want and want.isascii() and text[s:e + 1].isascii():
                assert text[s:e + 1].replace(" ", "").lower() == want, (piece, s, e)
                checked += 1
    assert checked > 1000


def test_training_records_are_int64(sp, squad_file, tmp_path):
    first = data.read_squad_examples(squad_file, is_training=False)[0]
    examples = [data.SquadExample(first.qas_id, first.question_text, first.paragraph_text,
                                  orig_answer_text="France", start_position=159)]
    feats = list(data.convert_examples_to_features(examples, sp, 64, 32, 16, True, True))
    path = str(tmp_path / "train.tf_record")
    assert data.write_feature_records(feats, path, True) == len(feats)
    raw = next(iter(tf.data.TFRecordDataset(path))).numpy()
    ex = tf.train.Example.FromString(raw).features.feature
    assert sorted(ex) == sorted(["unique_ids", "input_ids", "input_mask", "segment_ids",
                                 "p_mask", "start_positions", "end_positions", "is_impossible"])
    assert all(ex[k].WhichOneof("kind") == "int64_list" for k in ex)
    assert ex["unique_ids"].int64_list.value == [1000000000]
    assert list(ex["p_mask"].int64_list.value) == feats[0].p_mask


def _hand_feature():
    """"The cat sat on the mat." as 6 pieces after [CLS] q q [SEP] (window positions 4..9);
    position 5 ("cat") is not its max context."""
    return data.AlbertSquadFeatures(
        unique_id=7, example_index=0, doc_span_index=0,
        tok_start_to_orig_index=[0, 4, 8, 12, 15, 19], tok_end_to_orig_index=[2, 6, 10, 13, 17, 22],
        token_is_max_context={4: True, 5: False, 6: True, 7: True, 8: True, 9: True},
        tokens=[], input_ids=[0] * 12, input_mask=[1] * 11 + [0], segment_ids=[0] * 12,
        paragraph_len=11, p_mask=[0] * 12)


def test_v1_postprocess_by_hand():
    from bert_tf.albert.data import squad_postprocess as post
    example = data.SquadExample("q1", "?", "The cat sat on the mat.")
    start = [9, 0, 0, 0, 1, 8, 5, 0, 0, 6, 0, 0]  # best: 0 ([CLS]), 5 (not max), 9, 6
    end = [0, 0, 0, 0, 0, 0, 0, 4, 0, 7, 0, 0]    # best: 9, 7, then 0, 1 (ties: lower first)
    result = post.RawResultV1(7, start, end)
    preds = post.compute_predictions_v1([example], [_hand_feature()], [result], 4, 30)
    # kept: (9, 9) "mat." 6+7; (6, 9) "sat on the mat." 5+7; (6, 7) "sat on" 5+4
    texts = [e["text"] for e in preds.nbest["q1"]]
    assert texts == ["mat.", "sat on the mat.", "sat on"] and preds.predictions["q1"] == "mat."
    z = [math.exp(13 - 13), math.exp(12 - 13), math.exp(9 - 13)]
    assert [e["probability"] for e in preds.nbest["q1"]] == [x / sum(z) for x in z]
    assert [(e["start_log_prob"], e["end_log_prob"]) for e in preds.nbest["q1"]] == [
        (6.0, 7.0), (5.0, 7.0), (5.0, 4.0)]
    short = post.compute_predictions_v1([example], [_hand_feature()], [result], 4, 3)
    assert [e["text"] for e in short.nbest["q1"]] == ["mat.", "sat on"]  # (6, 9) is 4 long
    none = post.compute_predictions_v1([example], [_hand_feature()],
                                       [post.RawResultV1(7, [1] + [0] * 11, [1] + [0] * 11)], 1, 30)
    assert none.nbest["q1"] == [{"text": "empty", "probability": 1.0, "start_log_prob": 0.0,
                                 "end_log_prob": 0.0}]


# ---- official metrics, restated ----------------------------------------------------------------

def _normalize(s):
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def _f1(pred, gold):
    p, g = _normalize(pred).split(), _normalize(gold).split()
    if not p or not g:
        return float(p == g)
    same = sum((collections.Counter(p) & collections.Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def _qas(path):
    with open(path) as f:
        return [qa for a in json.load(f)["data"] for p in a["paragraphs"] for qa in p["qas"]]


def _read(path):
    with open(path) as f:
        return f.read()


# ---- runs ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_v1_train_then_predict(albert_dir, spm_file, small_files, tmp_path):
    out = tmp_path / "v1"
    out.mkdir()
    args = make_args(albert_dir, spm_file, out, train_file=small_files["train_v1"],
                     predict_file=small_files["predict_v1"], do_train=True, do_predict=True)
    result = task.run(args, version=1)
    n_train = len(_qas(small_files["train_v1"]))
    assert result.num_train_steps == int(n_train / 4 * 1.0)
    assert result.train.global_step == result.num_train_steps
    assert np.isfinite(result.train.last_loss)
    ckpt = result.train.checkpoint
    names = dict(tf.train.list_variables(ckpt))
    assert names["cls/squad/output_weights"] == [2, 64]
    assert names["bert/embeddings/word_embeddings"] == [SPM_PIECES, 16]
    assert result.weights_from == ckpt
    qas = _qas(small_files["predict_v1"])
    preds = json.loads(_read(out / "predictions.json"))
    nbest = json.loads(_read(out / "nbest_predictions.json"))
    assert list(preds) == [qa["id"] for qa in qas] == list(nbest)
    contexts = {qa["id"]: p["context"] for a in json.load(open(small_files["predict_v1"]))["data"]
                for p in a["paragraphs"] for qa in p["qas"]}
    for qid, entries in nbest.items():
        assert preds[qid] == entries[0]["text"] and preds[qid] in contexts[qid]
        assert list(entries[0]) == ["text", "probability", "start_log_prob", "end_log_prob"]
        assert abs(sum(e["probability"] for e in entries) - 1.0) < 1e-9
        scores = [e["start_log_prob"] + e["end_log_prob"] for e in entries]
        assert scores == sorted(scores, reverse=True) and len(entries) <= 20
    # The official v1.1 formula, restated: max over gold answers, percent over questions.
    em = 100.0 * sum(max(float(_normalize(preds[qa["id"]]) == _normalize(a["text"]))
                         for a in qa["answers"]) for qa in qas) / len(qas)
    f1 = 100.0 * sum(max(_f1(preds[qa["id"]], a["text"]) for a in qa["answers"])
                     for qa in qas) / len(qas)
    text = _read(out / "eval_results.txt")
    block = f"exact_match = {em}\nf1 = {f1}\n"
    step = result.train.global_step
    assert text == block + f"best f1 = {f1}\n" + "=" * 50 + "\n" + block + \
        f"best perf happened at step: {step}"
    # The predict features are reused on a second run (same settings), giving the same files.
    before = _read(out / "nbest_predictions.json")
    again = task.run(make_args(albert_dir, spm_file, out, predict_file=small_files["predict_v1"],
                               do_predict=True), version=1)
    assert again.weights_from == ckpt and _read(out / "nbest_predictions.json") == before


@pytest.mark.slow
def test_v2_train_then_predict_with_threshold_search(albert_dir, spm_file, small_files,
                                                     tmp_path):
    out = tmp_path / "v2"
    out.mkdir()
    args = make_args(albert_dir, spm_file, out, train_file=small_files["train_v2"],
                     predict_file=small_files["predict_v2"], do_train=True, do_predict=True)
    result = task.run(args, version=2)
    assert np.isfinite(result.train.last_loss)
    names = dict(tf.train.list_variables(result.train.checkpoint))
    for name, shape in (("start_logits/dense/kernel", [64, 1]),
                        ("end_logits/dense_0/kernel", [128, 64]),
                        ("end_logits/LayerNorm/gamma", [64]),
                        ("answer_class/dense_0/kernel", [128, 64]),
                        ("answer_class/dense_1/kernel", [64, 1])):
        assert names[name] == shape
    assert "answer_class/dense_1/bias" not in names
    check_v2_outputs(out, small_files["predict_v2"], result.metrics)


def test_v2_predict_from_init_checkpoint(albert_dir, spm_file, small_files, tmp_path):
    """Predict only: the encoder from --init_checkpoint, the heads at their initial values
    (reported), beam search, the two-pass threshold."""
    out = tmp_path / "v2p"
    out.mkdir()
    args = make_args(albert_dir, spm_file, out, predict_file=small_files["predict_v2"],
                     do_predict=True, start_n_top=3, end_n_top=2, predict_batch_size=32)
    result = task.run(args, version=2)
    assert result.weights_from == os.path.join(albert_dir, "model.ckpt")
    assert result.global_step == 0
    assert result.num_predict_features > result.num_predict_examples
    check_v2_outputs(out, small_files["predict_v2"], result.metrics)


@pytest.mark.parametrize("version", [1, 2])
def test_predict_with_dtype_bfloat16_computes_in_bfloat16(albert_dir, spm_file, small_files,
                                                          tmp_path, version, caplog):
    """--dtype=bfloat16 (bert_tf): a predict run builds the model in bfloat16 with its matmul
    kernels held in bfloat16 (cast once at the restore, issue 25; before, the flag was taken
    and ignored), writes its predictions, and the model's outputs stay within bfloat16 reach
    of the float32 run's: the encoder's sequence output within 0.05 (measured 0.021 on EPYC
    family 26, mean 0.0042 of mean |value| 0.84)."""
    key = "predict_v1" if version == 1 else "predict_v2"
    models = {}
    for dtype in ("float32", "bfloat16"):
        out = tmp_path / dtype
        out.mkdir()
        args = make_args(albert_dir, spm_file, out, predict_file=small_files[key],
                         do_predict=True, dtype=dtype)
        built = []
        real_build = task.build_model
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(task, "build_model", lambda *a: built.append(real_build(*a)) or built[-1])
            with caplog.at_level(logging.INFO):
                task.run(args, version=version)
        models[dtype] = model = built[0]
        assert model.bert.compute_dtype == dtype
        kernel = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"
        assert model.name_map()[kernel].dtype == getattr(tf, dtype)
        assert json.loads(_read(out / "predictions.json"))
        # the heads in float32 (as BERT's SQuAD head): written scores not rounded to bfloat16
        nbest = json.loads(_read(out / "nbest_predictions.json"))
        scores = np.array([e["start_log_prob"] for q in nbest.values() for e in q], np.float32)
        assert not np.array_equal(scores, tf.cast(tf.cast(scores, tf.bfloat16), tf.float32))
    assert "cast to bfloat16" in caplog.text
    # the encoder (from --init_checkpoint; the heads start from their own random values)
    ids = np.random.RandomState(5).randint(5, 1000, (2, 40)).astype(np.int32)
    features = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids)}
    want, got = (tf.cast(models[d].bert(features)["sequence_output"], tf.float32).numpy()
                 for d in ("float32", "bfloat16"))
    assert 0 < np.abs(got - want).max() < 0.05


def check_v2_outputs(out, predict_file, metrics):
    """predictions / null_odds / eval_results.txt of a v2 run against the official threshold
    search and metrics, restated here."""
    qas = _qas(predict_file)
    preds = json.loads(_read(out / "predictions.json"))
    nbest = json.loads(_read(out / "nbest_predictions.json"))
    null = json.loads(_read(out / "null_odds.json"))
    assert list(preds) == list(null) == [qa["id"] for qa in qas]
    thresh = metrics["null_score_diff_threshold"]
    # The official threshold search, restated, over the first pass (every best span kept).
    first = {q: nbest[q][0]["text"] for q in preds}
    has_ans = {qa["id"]: bool(qa["answers"]) for qa in qas}
    gold = {qa["id"]: [a["text"] for a in qa["answers"] if _normalize(a["text"])] or [""]
            for qa in qas}
    f1_raw = {q: max(_f1(first[q], g) for g in gold[q]) for q in preds}
    cur = best = sum(1 for q in preds if not has_ans[q])
    want_thresh = 0.0
    for q in sorted(null, key=lambda k: null[k]):
        cur += f1_raw[q] if has_ans[q] else (-1 if first[q] else 0)
        if cur > best:
            best, want_thresh = cur, null[q]
    assert thresh == want_thresh
    # The second pass: no answer where the null score is >= the threshold.
    for q in preds:
        assert preds[q] == ("" if null[q] >= thresh else first[q])
    # exact / f1 with the official na_prob_thresh 1.0 on the null scores.
    def final(q, score):
        return float(not has_ans[q]) if null[q] > 1.0 else score
    f1_final = [final(q, max(_f1(preds[q], g) for g in gold[q])) for q in preds]
    em_final = [final(q, max(float(_normalize(preds[q]) == _normalize(g)) for g in gold[q]))
                for q in preds]
    assert metrics["f1"] == pytest.approx(100.0 * np.mean(f1_final), abs=1e-9)
    assert metrics["exact"] == pytest.approx(100.0 * np.mean(em_final), abs=1e-9)
    assert metrics["total"] == len(qas)
    assert _read(out / "eval_results.txt").startswith(
        "exact = {}\nf1 = {}\nnull_score_diff_threshold = {}\ntotal = {}\n".format(
            metrics["exact"], metrics["f1"], thresh, len(qas)))




def test_v2_heads_use_cls_position_zero(albert_dir):
    """The answer-class head reads position 0 ([CLS]) and the start distribution: recomputed
    in numpy from the encoder output and the head weights."""
    config = AlbertConfig.from_json_file(os.path.join(albert_dir, "albert_config.json"))
    model = AlbertSquadV2(config, 2, 2, 0.1).build_with_dummy_input(8)
    load_albert_checkpoint(model.name_map(), os.path.join(albert_dir, "model.ckpt"))
    rng = np.random.RandomState(3)
    ids = rng.randint(10, 30000, (2, 12)).astype(np.int32)
    p_mask = np.zeros((2, 12), np.int32)
    p_mask[:, 1:4] = 1
    feats = {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": np.zeros_like(ids),
             "p_mask": p_mask}
    out = model(feats, training=False)
    h = model.bert(feats)["sequence_output"].numpy().astype(np.float64)
    w = {k: v.numpy().astype(np.float64) for k, v in model.name_map().items()
         if not k.startswith("bert/")}
    start = (h @ w["start_logits/dense/kernel"])[..., 0] + w["start_logits/dense/bias"][0]
    start = start * (1 - p_mask) - 1e30 * p_mask
    p = np.exp(start - start.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    x = np.concatenate([np.einsum("bl,blh->bh", p, h), h[:, 0]], -1)
    x = np.tanh(x @ w["answer_class/dense_0/kernel"] + w["answer_class/dense_0/bias"])
    want = (x @ w["answer_class/dense_1/kernel"])[:, 0]
    np.testing.assert_allclose(out["cls_logits"].numpy(), want, atol=1e-4)
    top = np.argsort(-p, -1, kind="stable")[:, :2]  # log-softmax order = softmax order
    np.testing.assert_array_equal(out["start_top_index"].numpy(), top)


# ---- flags ---------------------------------------------------------------------------------

def test_flag_checks(albert_dir, spm_file, small_files, tmp_path):
    def fails(match, version=1, **kw):
        with pytest.raises(FlagError, match=match):
            task.run(make_args(albert_dir, spm_file, tmp_path, **kw), version)

    fails("At least one of `do_train` or `do_predict` must be True")
    fails("`predict_feature_left_file` must be specified", do_predict=True,
          predict_file=small_files["predict_v1"], predict_feature_left_file=None)
    fails("must be greater than max_query_length", do_predict=True,
          predict_file=small_files["predict_v1"], max_seq_length=27)
    fails("only trained up to sequence length 128", do_predict=True,
          predict_file=small_files["predict_v1"], max_seq_length=256)
    fails("--export_dir", export_dir=str(tmp_path / "export"), do_train=True,
          train_file=small_files["train_v1"])
    fails("--spm_model_file is required", do_predict=True, spm_model_file=None)
    # bert_tf (a new user's runs took these): as BERT's run_squad
    fails(r"^--doc_stride=120 is longer than the document window of 101 pieces", do_predict=True,
          predict_file=small_files["predict_v1"], max_seq_length=128, doc_stride=120)
    fails(r"^--max_query_length=0 must be at least 1", do_predict=True,
          predict_file=small_files["predict_v1"], max_query_length=0)
    fails(r"^--warmup_proportion=2: must be in \[0, 1\]", version=2, do_train=True,
          train_file=small_files["train_v1"], warmup_proportion=2)
    assert not os.path.exists(tmp_path / "predictions.json")
    assert not os.path.exists(tmp_path / "train.tf_record")


# The original's flags.DEFINE_* defaults (google-research/albert@b772393 run_squad_v1.py;
# run_squad_v2.py: the same without use_einsum / export_dir, plus start_n_top, end_n_top,
# dropout_prob).
V1_DEFAULTS = {
    "albert_config_file": None, "vocab_file": None, "spm_model_file": None, "output_dir": None,
    "train_file": None, "predict_file": None, "train_feature_file": None,
    "predict_feature_file": None, "predict_feature_left_file": None, "init_checkpoint": None,
    "albert_hub_module_handle": None, "do_lower_case": True, "max_seq_length": 384,
    "doc_stride": 128, "max_query_length": 64, "do_train": False, "do_predict": False,
    "train_batch_size": 32, "predict_batch_size": 8, "learning_rate": 5e-5,
    "num_train_epochs": 3.0, "warmup_proportion": 0.1, "save_checkpoints_steps": 1000,
    "iterations_per_loop": 1000, "n_best_size": 20, "max_answer_length": 30,
    "use_tpu": False, "tpu_name": None, "tpu_zone": None, "gcp_project": None, "master": None,
    "num_tpu_cores": 8, "use_einsum": True, "export_dir": None}
V2_ONLY = {"start_n_top": 5, "end_n_top": 5, "dropout_prob": 0.1}
BERT_TF_EXTRAS = {"use_xla": False, "gradient_accumulation_steps": 1, "dtype": "float32",
                  "allow_partial_init_checkpoint": False, "recompute_grad": False}


def test_args_are_the_original_flags_with_their_defaults():
    defaults = {f.name: f.default for f in dataclasses.fields(task.AlbertSquadArgs)}
    assert defaults == {**V1_DEFAULTS, **V2_ONLY, **BERT_TF_EXTRAS}
    assert set(ALBERT_SQUAD_V1_FLAGS) == set(V1_DEFAULTS) | set(BERT_TF_EXTRAS)
    assert set(ALBERT_SQUAD_V2_FLAGS) == (set(V1_DEFAULTS) - {"use_einsum", "export_dir"}
                                  | set(V2_ONLY) | set(BERT_TF_EXTRAS))


def _root_flags(argv):
    """run_squad.py's three profiles on fresh FlagValues, parsed."""
    from bert_tf.bert.tasks.args import SquadArgs
    from bert_tf.xlnet.tasks.args import XLNetSquadArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_SQUAD, SquadArgs.__dataclass_fields__),
        (bert_flags.XLNET_RUN_SQUAD, bert_flags.field_names(XLNetSquadArgs)),
        (bert_flags.ALBERT_RUN_SQUAD_V1, tuple(task.AlbertSquadArgs.__dataclass_fields__)),
        flag_values=fv)
    fv(["prog"] + argv)
    return fv


def test_root_script_reads_albert_defaults_and_picks_the_version():
    import run_squad
    fv = _root_flags(["--albert_config_file=c.json", "--spm_model_file=s", "--output_dir=o",
                      "--export_dir=x"])
    args = bert_flags.args_from_flags(task.AlbertSquadArgs, fv)
    assert (args.max_seq_length, args.learning_rate, args.start_n_top) == (384, 5e-5, 5)
    assert fv.max_seq_length == 384 and fv.learning_rate == 5e-5  # BERT's run_squad defaults
    with pytest.raises(FlagError, match="not supported for ALBERT SQuAD v1"):
        run_squad.albert_main(fv)
    fv = _root_flags(["--albert_config_file=c.json", "--spm_model_file=s", "--output_dir=o",
                      "--export_dir=x", "--version_2_with_negative"])
    with pytest.raises(FlagError, match="ALBERT's run_squad_v2 has no such flag"):
        run_squad.albert_main(fv)
    fv = _root_flags(["--albert_config_file=c.json", "--bert_config_file=b.json"])
    with pytest.raises(FlagError, match="does not read --bert_config_file"):
        run_squad.albert_main(fv)


def test_v1_on_a_squad2_file_keeps_the_predictions(albert_dir, spm_file, small_files, tmp_path,
                                                   caplog):
    """v1 predicting a SQuAD 2.0 file (questions without a gold answer): the predictions are
    written and one warning says why there is no eval_results.txt (it raised after the whole
    prediction, writing nothing), as BERT's run_squad does."""
    import logging
    out = tmp_path / "v1on2"
    out.mkdir()
    args = make_args(albert_dir, spm_file, out, predict_file=small_files["predict_v2"],
                     do_predict=True, predict_batch_size=32)
    with caplog.at_level(logging.WARNING):
        result = task.run(args, version=1)
    assert result.metrics is None
    preds = json.loads(_read(out / "predictions.json"))
    assert list(preds) == [qa["id"] for qa in _qas(small_files["predict_v2"])]
    assert not (out / "eval_results.txt").exists()
    assert any("has no gold answer" in r.getMessage() and "run_squad_v2" in r.getMessage()
               for r in caplog.records if r.levelno == logging.WARNING)


def test_an_output_file_name_that_is_a_folder_is_refused_before_any_work(
        albert_dir, spm_file, small_files, tmp_path):
    """Issue 27: a folder O/nbest_predictions.json failed only after prediction."""
    from bert_tf.errors import FlagError
    out = tmp_path / "out"
    (out / "nbest_predictions.json").mkdir(parents=True)
    with pytest.raises(FlagError) as e:
        task.run(make_args(albert_dir, spm_file, tmp_path / "feats", output_dir=str(out),
                           do_predict=True, predict_file=small_files["predict_v1"]), version=1)
    assert str(e.value) == (f"--output_dir={out}: {out / 'nbest_predictions.json'} is a folder, "
                            "but the run writes the file nbest_predictions.json there; remove "
                            "or rename that folder")
    assert os.listdir(out) == ["nbest_predictions.json"]
