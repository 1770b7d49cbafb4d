"""XLNet classifier data: the golden classifier_features.jsonl (original classifier_utils),
the spec 5.4 worked example, TFRecords as the original writes them, processors on real data."""
import json
import logging
import os

import pytest

from bert_tf.data import tfrecord
from bert_tf.xlnet.data import classifier as xc
from bert_tf.data.classifier import InputExample, PaddingInputExample
from bert_tf.data.classifier_processors import MrpcProcessor
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model, tokenize_fn


@pytest.fixture(scope="module")
def golden_sp(golden_dir):
    return load_sp_model(os.path.join(golden_dir, "xlnet", "spiece.model"))


@pytest.fixture(scope="module")
def golden_records(golden_dir):
    path = os.path.join(golden_dir, "xlnet", "classifier_features.jsonl")
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _example(record):
    if record["guid"] == "PaddingInputExample":
        return PaddingInputExample()
    return InputExample(record["guid"], record["text_a"], record["text_b"], record["label"])


def test_golden_classifier_features(golden_sp, golden_records):
    """All 36 records of the original convert_single_example (pairs, truncated pairs, single
    sentences, uncased, padding example, regression pass-through)."""
    assert len(golden_records) == 36
    for r in golden_records:
        f = xc.convert_single_example(10, _example(r), r["label_list"], r["max_seq_length"],
                                      lambda t, u=r["uncased"]: tokenize_fn(golden_sp, t, u))
        assert f.input_ids == r["input_ids"], r["guid"]
        assert f.input_mask == r["input_mask"], r["guid"]
        assert f.segment_ids == r["segment_ids"], r["guid"]
        assert f.label_id == r["label_id"], r["guid"]
        assert f.is_real_example == r["is_real_example"], r["guid"]


def test_spec_worked_example():
    """Spec 5.4: S=10, A = a1 a2, B = b1."""
    ids = {"A": [101, 102], "B": [201]}
    f = xc.convert_single_example(0, InputExample("x", "A", "B", "1"), ["0", "1"], 10,
                                  lambda t: list(ids[t]))
    assert f.input_ids == [0, 0, 0, 0, 101, 102, 4, 201, 4, 3]
    assert f.segment_ids == [4, 4, 4, 4, 0, 0, 0, 1, 1, 2]
    assert f.input_mask == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
    assert f.label_id == 1


def test_truncation_pops_the_longer_side_from_the_end():
    ids = {"A": list(range(10, 16)), "B": list(range(20, 23))}  # 6 + 3 > 8 - 3
    f = xc.convert_single_example(0, InputExample("x", "A", "B", "0"), ["0", "1"], 8,
                                  lambda t: list(ids[t]))
    # 5 slots: pop A (6>3) -> 5, A (5>3) -> 4, A (4>3) -> 3, then B on the tie -> 2.
    assert f.input_ids == [10, 11, 12, 4, 20, 21, 4, 3]
    single = xc.convert_single_example(0, InputExample("y", "A", None, "0"), ["0", "1"], 5,
                                       lambda t: list(ids[t]))
    assert single.input_ids == [10, 11, 12, 4, 3]
    assert single.segment_ids == [0, 0, 0, 0, 2]


def test_tfrecords_as_the_original_writes_them(golden_sp, golden_records, tmp_path):
    """input_mask is a float list; label_ids int64 (float for regression); is_real_example."""
    tok = lambda t: tokenize_fn(golden_sp, t, False)
    cls_records = [r for r in golden_records if r["label_list"] and not r["uncased"]]
    path = str(tmp_path / "spiece.model.len-64.train.tf_record")
    n = xc.file_based_convert_examples_to_features([_example(r) for r in cls_records], ["0", "1"],
                                                   64, tok, path)
    assert n == len(cls_records)
    decoded = list(tfrecord.read_examples(path))
    for r, d in zip(cls_records, decoded):
        assert d["input_ids"] == r["input_ids"]
        assert d["input_mask"] == [float(x) for x in r["input_mask"]]
        assert all(isinstance(x, float) for x in d["input_mask"])
        assert d["segment_ids"] == r["segment_ids"]
        assert d["label_ids"] == [r["label_id"]] and isinstance(d["label_ids"][0], int)
        assert d["is_real_example"] == [int(r["is_real_example"])]
    reg = [r for r in golden_records if r["guid"] == "regression-0"][0]
    reg_path = str(tmp_path / "reg.tf_record")
    xc.file_based_convert_examples_to_features([_example(reg)], None, 64, tok, reg_path)
    (d,) = list(tfrecord.read_examples(reg_path))
    assert d["label_ids"] == [3.25] and d["input_ids"] == reg["input_ids"]


def test_existing_records_are_reused_unless_overwrite(tmp_path):
    path = str(tmp_path / "x.tf_record")
    ex = [InputExample("a", "A", None, "0")]
    tok = lambda t: [7]
    assert xc.file_based_convert_examples_to_features(ex, ["0", "1"], 4, tok, path) == 1
    before = open(path, "rb").read()
    assert xc.file_based_convert_examples_to_features(ex * 3, ["0", "1"], 4, tok, path) is None
    assert open(path, "rb").read() == before
    assert xc.file_based_convert_examples_to_features(ex, ["0", "1"], 4, tok, path,
                                                      num_passes=2, overwrite=True) == 2


def test_record_file_names():
    assert xc.record_file_name("spiece.model", 128, "train") == \
        "spiece.model.len-128.train.tf_record"
    assert xc.record_file_name("spiece.model", 128, "eval", "dev") == \
        "spiece.model.len-128.dev.eval.tf_record"
    assert xc.record_file_name("sp.model", 64, "predict", "test") == \
        "sp.model.len-64.test.predict.tf_record"


def test_stsb_processor_on_the_real_data(shared_data_dir):
    """The original StsbProcessor: cols 7/8, float(col 9), guid <set>-<row index>."""
    p = xc.get_processor("STS-B")
    data_dir = os.path.join(shared_data_dir, "STS-B")
    train = p.get_train_examples(data_dir)
    assert len(train) == 5749
    assert (train[0].guid, train[0].text_a, train[0].text_b, train[0].label) == (
        "train-1", "A plane is taking off.", "An air plane is taking off.", 5.0)
    assert train[1].label == 3.8
    dev = p.get_dev_examples(data_dir)
    assert len(dev) == 1500 and dev[0].guid == "dev-1"
    test = p.get_test_examples(data_dir)
    assert len(test) == 1379
    assert (test[0].text_a, test[0].text_b, test[0].label) == (
        "A girl is styling her hair.", "A girl is brushing her hair.", 0.0)
    assert p.is_regression and p.get_labels() == [0.0]


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def test_mnli_processors_and_incomplete_lines(tmp_path, caplog):
    header = "\t".join(f"c{i}" for i in range(12)) + "\n"
    row = lambda a, b, label: "\t".join(["0"] * 8 + [a, b, "x", label]) + "\n"
    _write(str(tmp_path / "train.tsv"), header + row("a1", "b1", "neutral") + "\n"
           + "short\tline\n" + row("a2", "b2", "entailment"))
    _write(str(tmp_path / "dev_mismatched.tsv"), header + row("m1", "n1", "contradiction"))
    p = xc.get_processor("MNLI_matched")
    with caplog.at_level(logging.WARNING):
        train = p.get_train_examples(str(tmp_path))
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in train] == [
        ("train-1", "a1", "b1", "neutral"), ("train-3", "a2", "b2", "entailment")]
    # columns counted from 1 (a new user read "8 column(s), column 8 needed")
    assert "train.tsv line 4: incomplete line ignored (2 column(s); column 9 is read)" in caplog.text
    dev = xc.get_processor("mnli_mismatched").get_dev_examples(str(tmp_path))
    assert [(e.text_a, e.label) for e in dev] == [("m1", "contradiction")]
    _write(str(tmp_path / "bad" / "train.tsv"), header + row("a", "b", "maybe"))
    with pytest.raises(InputDataError, match=r"train.tsv line 2: unknown label 'maybe'"):
        p.get_train_examples(str(tmp_path / "bad"))


def test_yelp5_and_imdb(tmp_path):
    _write(str(tmp_path / "yelp" / "train.csv"),
           '"5","Great ""food"", said \\""me\\""."\n"1","bad"\n')
    ex = xc.get_processor("yelp5").get_train_examples(str(tmp_path / "yelp"))
    assert [(e.guid, e.text_a, e.label) for e in ex] == [
        ("0", 'Great "food", said "me".', "5"), ("1", "bad", "1")]
    for label, text in (("neg", "  Dull.<br />Very dull. "), ("pos", "Fine<br />film")):
        _write(str(tmp_path / "imdb" / "test" / label / "1_3.txt"), text)
    _write(str(tmp_path / "imdb" / "test" / "pos" / "urls.lst"), "ignored")
    ex = xc.get_processor("imdb").get_dev_examples(str(tmp_path / "imdb"))
    assert [(e.text_a, e.label) for e in ex] == [("Dull. Very dull.", "neg"), ("Fine film", "pos")]
    with pytest.raises(FlagError, match="imdb has no test split"):
        xc.get_processor("imdb").get_test_examples(str(tmp_path / "imdb"))


def test_bert_glue_processors_are_available_and_unknown_task_is_named():
    assert isinstance(xc.get_processor("MRPC"), MrpcProcessor)
    with pytest.raises(FlagError, match=r"Task not found: 'squad'.*mnli_matched.*yelp5.*mrpc"):
        xc.get_processor("squad")


def test_literal_special_symbols_are_kept_and_reported(golden_sp, golden_dir, tmp_path, caplog):
    """`<eop>` (user-defined) becomes id 8, `<cls>` (control) is split into pieces: the
    original's ids (golden prepro.jsonl lines 281-282); both reported with the example."""
    with open(os.path.join(golden_dir, "xlnet", "prepro.jsonl"), encoding="utf-8") as f:
        prepro = {r["text"]: r for r in map(json.loads, f)}
    eop_text = "text with <eod> inside and <eop> too"
    cls_text = "<cls> <sep> <mask> <pad> <unk> <s> </s>"
    report = xc.LiteralSymbolReport(golden_sp, "train examples")
    path = str(tmp_path / "r.tf_record")
    with caplog.at_level(logging.WARNING):
        xc.file_based_convert_examples_to_features(
            [InputExample("train-7", eop_text, cls_text, "1")], ["0", "1"], 64,
            lambda t: tokenize_fn(golden_sp, t, False), path, symbol_report=report)
    (d,) = list(tfrecord.read_examples(path))
    a_ids, b_ids = prepro[eop_text]["ids"], prepro[cls_text]["ids"]
    real = a_ids + [4] + b_ids + [4, 3]
    assert d["input_ids"] == [0] * (64 - len(real)) + real
    assert 8 in a_ids and 3 not in b_ids
    assert "example train-7, text_a contains '<eop>' written literally: encoded as the symbol " \
           "<eop> itself (id 8" in caplog.text
    assert "example train-7, text_b contains '<cls>' written literally: NOT the <cls> symbol" \
        in caplog.text
    assert report.count == 2
    assert "train examples: 2 text field(s) contain special symbols written literally" \
        in caplog.text


def test_missing_csv_is_named_once_with_the_reason(tmp_path):
    path = os.path.join(str(tmp_path / "nodir"), "train.csv")
    with pytest.raises(InputDataError) as e:
        xc.get_processor("yelp5").get_train_examples(str(tmp_path / "nodir"))
    assert str(e.value) == f"cannot read data file {path} (No such file or directory)"
