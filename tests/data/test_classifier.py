"""Classifier data: golden MRPC feature files of the original run_classifier.py, processors,
hand-worked conversions, TPU padding and bad inputs."""
import gzip
import json
import os

import pytest

from bert_tf.data import classifier, classifier_processors, tfrecord
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.wordpiece import FullTokenizer

# The 11-token vocab of the original tokenization_test.py (spec 12.1), ids 0-10.
TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab_file):
    return FullTokenizer(uncased_vocab_file, do_lower_case=True)


@pytest.fixture(scope="module")
def small_tokenizer(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(TEST_VOCAB) + "\n", encoding="utf-8")
    return FullTokenizer(str(path), do_lower_case=True)


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "bert", "classifier")


def test_golden_flags(golden):
    with open(os.path.join(golden, "flags.txt")) as f:
        flags = f.read()
    for flag in ("--task_name=MRPC", "--max_seq_length=128", "--do_lower_case=True"):
        assert flag in flags
    assert "--use_tpu" not in flags  # so no padding examples in eval/predict.tf_record


@pytest.mark.parametrize("split, getter, count", [
    ("train", "get_train_examples", 40), ("eval", "get_dev_examples", 24),
    ("predict", "get_test_examples", 40)])
def test_mrpc_feature_files_equal_golden(golden, tokenizer, tmp_path, split, getter, count):
    processor = classifier_processors.get_processor("MRPC")
    examples = getattr(processor, getter)(os.path.join(golden, "MRPC"))
    assert len(examples) == count
    out = str(tmp_path / f"{split}.tf_record")
    n = classifier.file_based_convert_examples_to_features(
        examples, processor.get_labels(), 128, tokenizer, out)
    ours = list(tfrecord.read_examples(out))
    theirs = list(tfrecord.read_examples(os.path.join(golden, f"{split}.tf_record")))
    assert n == len(ours) == len(theirs) == count
    for i, (a, b) in enumerate(zip(ours, theirs)):
        assert a == b, f"{split} record {i} differs"


def test_mrpc_train_equals_decoded_golden(golden, tokenizer, tmp_path):
    with gzip.open(os.path.join(golden, "train.tf_record.decoded.jsonl.gz"), "rt") as f:
        decoded = [json.loads(line) for line in f]
    processor = classifier_processors.MrpcProcessor()
    out = str(tmp_path / "train.tf_record")
    classifier.file_based_convert_examples_to_features(
        processor.get_train_examples(os.path.join(golden, "MRPC")), ["0", "1"], 128, tokenizer,
        out)
    assert list(tfrecord.read_examples(out)) == decoded


def test_mrpc_examples_fields(golden):
    processor = classifier_processors.MrpcProcessor()
    train = processor.get_train_examples(os.path.join(golden, "MRPC"))
    assert train[0].guid == "train-1" and train[0].label == "1"
    assert train[0].text_a.startswith("Amrozi accused his brother")
    dev = processor.get_dev_examples(os.path.join(golden, "MRPC"))
    # No quoting: the leading quote of dev row 1 is literal text.
    assert dev[0].text_b.startswith('"The foodservice pie business')
    test = processor.get_test_examples(os.path.join(golden, "MRPC"))
    assert test[0].guid == "test-1" and test[0].label == "0"
    assert test[0].text_a.startswith("PCCW's chief operating officer")
    assert processor.num_labels == 2 and not processor.is_regression


def test_convert_pair_hand_worked(small_tokenizer):
    # "unwanted running" -> un ##want ##ed runn ##ing (5); "want" -> want (1); 6 > 8 - 3, so the
    # longer A loses its LAST token: un ##want ##ed runn.
    ex = classifier.InputExample("g", "unwanted running", "want", "b")
    f = classifier.convert_single_example(0, ex, ["a", "b"], 8, small_tokenizer)
    assert f.input_ids == [1, 7, 4, 5, 8, 2, 3, 2]
    assert f.input_mask == [1] * 8
    assert f.segment_ids == [0, 0, 0, 0, 0, 0, 1, 1]
    assert f.label_id == 1 and f.is_real_example is True


def test_convert_single_and_empty_b(small_tokenizer):
    # single sentence: keep the first max_seq_length - 2 tokens.
    ex = classifier.InputExample("g", "unwanted running", None, "a")
    f = classifier.convert_single_example(0, ex, ["a"], 4, small_tokenizer)
    assert f.input_ids == [1, 7, 4, 2] and f.segment_ids == [0, 0, 0, 0]
    # text_b that gives no token: no second [SEP] (the original tests `if tokens_b`); padding 0.
    ex = classifier.InputExample("g", "want", "\x05", "a")
    f = classifier.convert_single_example(0, ex, ["a"], 6, small_tokenizer)
    assert f.input_ids == [1, 3, 2, 0, 0, 0]
    assert f.input_mask == [1, 1, 1, 0, 0, 0] and f.segment_ids == [0] * 6


def test_truncate_seq_pair_ties_pop_b():
    a, b = [1, 2, 3], [4, 5, 6]
    classifier._truncate_seq_pair(a, b, 4)
    assert a == [1, 2] and b == [4, 5]


def test_tpu_padding_examples(golden, tokenizer, tmp_path):
    processor = classifier_processors.MrpcProcessor()
    dev = processor.get_dev_examples(os.path.join(golden, "MRPC"))
    padded, actual = classifier.add_tpu_padding(dev, 7)
    assert actual == 24 and len(padded) == 28
    assert all(isinstance(x, classifier.PaddingInputExample) for x in padded[24:])
    assert classifier.add_tpu_padding(dev, 7, use_tpu=False) == (dev, 24)
    out = str(tmp_path / "eval.tf_record")
    classifier.file_based_convert_examples_to_features(padded, ["0", "1"], 128, tokenizer, out)
    records = list(tfrecord.read_examples(out))
    golden_records = list(tfrecord.read_examples(os.path.join(golden, "eval.tf_record")))
    assert records[:24] == golden_records
    for r in records[24:]:
        assert r == {"input_ids": [0] * 128, "input_mask": [0] * 128, "segment_ids": [0] * 128,
                     "label_ids": [0], "is_real_example": [0]}


def test_stsb_regression_real_data(shared_data_dir, tokenizer, tmp_path):
    processor = classifier_processors.get_processor("STS-B")
    assert processor.is_regression and processor.get_labels() is None
    assert processor.num_labels == 1
    data_dir = os.path.join(shared_data_dir, "STS-B")
    train = processor.get_train_examples(data_dir)
    assert len(train) == 5749
    assert (train[0].text_a, train[0].text_b, train[0].label) == (
        "A plane is taking off.", "An air plane is taking off.", 5.0)
    assert train[1].label == 3.8
    test = processor.get_test_examples(data_dir)
    assert test[0].text_a == "A girl is styling her hair." and test[0].label == 0.0
    out = str(tmp_path / "train.tf_record")
    classifier.file_based_convert_examples_to_features(train[:3], None, 16, tokenizer, out)
    records = list(tfrecord.read_examples(out))
    assert [r["label_ids"] for r in records] == [[5.0], [3.799999952316284], [3.799999952316284]]
    # [CLS] a plane is taking off . [SEP] an air plane is taking off . [SEP] = 16 tokens
    assert records[0]["input_ids"][:2] == [101, 1037] and sum(records[0]["input_mask"]) == 16


def _write(folder, name, data: bytes):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
    return os.path.join(folder, name)


MRPC_HEADER = b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"


def test_too_few_columns(tmp_path):
    _write(tmp_path, "train.tsv", MRPC_HEADER + b"1\t1\t2\ta\tb\n0\t3\t4\tonly a\n")
    with pytest.raises(InputDataError, match=r"train\.tsv line 3: 4 tab-separated"):
        classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path))


def test_unknown_label(tmp_path):
    _write(tmp_path, "dev.tsv", MRPC_HEADER + b"1\t1\t2\ta\tb\n2\t3\t4\tc\td\n")
    with pytest.raises(InputDataError, match=r"dev\.tsv line 3: unknown label '2'; valid "
                                             r"labels: '0', '1'"):
        classifier_processors.MrpcProcessor().get_dev_examples(str(tmp_path))


def test_unknown_label_at_conversion(small_tokenizer):
    ex = classifier.InputExample("dev-7", "want", None, "maybe")
    with pytest.raises(InputDataError, match=r"dev-7.*'maybe'.*'0', '1'"):
        classifier.convert_single_example(0, ex, ["0", "1"], 8, small_tokenizer)


def test_empty_and_header_only_files(tmp_path):
    _write(tmp_path, "train.tsv", b"")
    with pytest.raises(InputDataError, match=r"train\.tsv is empty"):
        classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path))
    _write(tmp_path, "dev.tsv", MRPC_HEADER)
    with pytest.raises(InputDataError, match=r"dev\.tsv has no data rows"):
        classifier_processors.MrpcProcessor().get_dev_examples(str(tmp_path))


def test_missing_file(tmp_path):
    with pytest.raises(InputDataError, match=r"test\.tsv"):
        classifier_processors.MrpcProcessor().get_test_examples(str(tmp_path))


def test_non_utf8(tmp_path):
    _write(tmp_path, "train.tsv", MRPC_HEADER + b"1\t1\t2\tcaf\xe9\tb\n")
    with pytest.raises(InputDataError, match=r"train\.tsv line 2: not valid UTF-8"):
        classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path))


def test_unknown_task():
    with pytest.raises(FlagError, match=r"'glue'.*cola, mnli, mrpc, xnli, sst-2.*sts-b"):
        classifier_processors.get_processor("glue")
    assert isinstance(classifier_processors.get_processor("CoLA"),
                      classifier_processors.ColaProcessor)


def test_stsb_bad_score(tmp_path):
    header = (b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              b"sentence2\tscore\n")
    _write(tmp_path, "dev.tsv", header + b"0\tg\tf\ty\t1\tn\tn\ta\tb\thigh\n")
    with pytest.raises(InputDataError, match=r"dev\.tsv line 2: label 'high' is not a number"):
        classifier_processors.StsbProcessor().get_dev_examples(str(tmp_path))


@pytest.mark.parametrize("score", ["nan", "inf", "-Infinity"])
def test_stsb_non_finite_score_is_refused_in_both_families(tmp_path, score):
    # issue 27 item 1: a NaN label trained NaN weights and was reported as divergence.
    from bert_tf.xlnet.data import classifier as xlnet_classifier
    header = (b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              b"sentence2\tscore\n")
    _write(tmp_path, "train.tsv", header + b"0\tg\tf\ty\t1\tn\tn\ta\tb\t3.2\n"
                                  + f"1\tg\tf\ty\t1\tn\tn\ta\tb\t{score}\n".encode())
    for processor in (classifier_processors.StsbProcessor(), xlnet_classifier.StsbProcessor()):
        with pytest.raises(InputDataError, match=r"train\.tsv line 3: score .* is not a finite "
                                                 r"number \(STS-B labels are floats\)"):
            processor.get_train_examples(str(tmp_path))


def test_regression_label_id_refuses_a_non_finite_label():
    from bert_tf.data import classifier as bert_classifier
    from bert_tf.xlnet.data import classifier as xlnet_classifier
    example = bert_classifier.InputExample("train-4", "a", "b", "nan")
    for module in (bert_classifier, xlnet_classifier):
        with pytest.raises(InputDataError, match=r"example train-4: label 'nan' is not a finite"):
            module._label_id(example, None)


def test_read_tsv_no_quoting(tmp_path):
    path = _write(tmp_path, "x.tsv", b'a\t"b\tc"\td\r\n\xef\xbb\xbfe\n')
    assert classifier_processors.DataProcessor._read_tsv(path) == [["a", '"b', 'c"', "d"],
                                                                   ["\ufeffe"]]


def test_cola_headers(tmp_path):
    _write(tmp_path, "train.tsv", b"gj04\t1\t\tOur friends won't buy this analysis.\n"
           b"gj04\t0\t*\tThey drank the pub.\n")
    _write(tmp_path, "test.tsv", b"index\tsentence\n0\tBill whistled past the house.\n")
    p = classifier_processors.ColaProcessor()
    train = p.get_train_examples(str(tmp_path))
    assert [(e.guid, e.text_a, e.label) for e in train] == [
        ("train-0", "Our friends won't buy this analysis.", "1"),
        ("train-1", "They drank the pub.", "0")]
    (test,) = p.get_test_examples(str(tmp_path))
    assert (test.guid, test.text_a, test.text_b, test.label) == (
        "test-1", "Bill whistled past the house.", None, "0")


def test_xnli_columns(tmp_path):
    _write(os.path.join(tmp_path, "multinli"), "multinli.train.zh.tsv",
           b"premise\thypo\tlabel\n\xe4\xbd\xa0\xe5\xa5\xbd\tb\tcontradictory\n")
    dev = (b"language\tgold_label\ts1bp\ts2bp\ts1p\ts2p\tsentence1\tsentence2\n"
           b"en\tneutral\n"  # other languages are skipped before their columns are needed
           b"zh\tentailment\tx\tx\tx\tx\tA\tB\n")
    _write(tmp_path, "xnli.dev.tsv", dev)
    p = classifier_processors.get_processor("xnli")
    (train,) = p.get_train_examples(str(tmp_path))
    assert (train.guid, train.text_a, train.label) == ("train-1", "\u4f60\u597d", "contradiction")
    (d,) = p.get_dev_examples(str(tmp_path))
    assert (d.guid, d.text_a, d.text_b, d.label) == ("dev-2", "A", "B", "entailment")
    with pytest.raises(NotImplementedError):
        p.get_test_examples(str(tmp_path))


def test_mnli_columns(tmp_path):
    header = "\t".join(f"c{i}" for i in range(12)).encode() + b"\n"
    row = b"7\t0\t0\t0\t0\t0\t0\t0\tprem\thyp\tneutral\tentailment\n"
    _write(tmp_path, "train.tsv", header + row)
    (ex,) = classifier_processors.MnliProcessor().get_train_examples(str(tmp_path))
    assert (ex.guid, ex.text_a, ex.text_b, ex.label) == ("train-7", "prem", "hyp", "entailment")


def test_stsb_score_outside_0_5_is_kept_with_a_warning(tmp_path, caplog):
    # issue 15 item 10: a score of 7.5 (another column, a typo) was used silently.
    import logging
    from bert_tf.xlnet.data import classifier as xlnet_classifier
    header = (b"index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\t"
              b"sentence2\tscore\n")
    path = _write(tmp_path, "dev.tsv", header + b"0\tg\tf\ty\t1\tn\tn\ta\tb\t3.2\n"
                                                b"1\tg\tf\ty\t1\tn\tn\ta\tb\t7.5\n")
    with caplog.at_level(logging.WARNING):
        bert = classifier_processors.StsbProcessor().get_dev_examples(str(tmp_path))
        xlnet = xlnet_classifier.StsbProcessor().get_dev_examples(str(tmp_path))
    assert [e.label for e in bert] == [3.2, 7.5] and [e.label for e in xlnet] == [3.2, 7.5]
    said = [r.getMessage() for r in caplog.records if "outside" in r.getMessage()]
    assert said == [f"{path} line 3: STS-B score 7.5 is outside 0-5 (kept as it is; another "
                    "column or a typo?)"] * 2


def test_truncated_examples_are_counted_in_one_line(tokenizer, tmp_path, caplog):
    # issue 15 item 10: lines cut to --max_seq_length silently.
    import logging
    examples = [classifier.InputExample("a", "the cat sat", None, "0"),      # 3 + 2 = 5 > 4
                classifier.InputExample("b", "the cat", "on the mat", "1"),  # 2 + 3 + 3 = 8
                classifier.InputExample("c", "hi", None, "0")]               # 1 + 2 = 3
    out = str(tmp_path / "train.tf_record")
    with caplog.at_level(logging.INFO):
        classifier.file_based_convert_examples_to_features(examples, ["0", "1"], 4, tokenizer,
                                                           out)
    said = [r.getMessage() for r in caplog.records if "truncated" in r.getMessage()]
    assert said == ["train.tf_record: 2 of 3 examples were truncated to --max_seq_length=4 "
                    "(the longest had 8 tokens with [CLS]/[SEP])"]
    # the records are the original's: [CLS] the cat [SEP] ... cut as before
    assert [r["input_ids"] for r in tfrecord.read_examples(out)][2] == [101, 7632, 102, 0]


def test_missing_file_is_named_once_with_the_reason(tmp_path):
    # It read "cannot read data file X: X; No such file or directory" (TF's message repeats X).
    path = os.path.join(str(tmp_path / "nodir"), "train.tsv")
    with pytest.raises(InputDataError) as e:
        classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path / "nodir"))
    assert str(e.value) == f"cannot read data file {path} (No such file or directory)"


def test_examples_with_an_empty_sentence_are_kept_with_one_warning(tmp_path, caplog):
    """Issue 27 fresh round: an MRPC row with both sentences empty trained silently (as the
    original, which feeds [CLS] [SEP]); it is kept, named in one warning line."""
    import logging
    header = b"Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    path = _write(tmp_path, "train.tsv", header + b"1\t1\t2\tA cat.\tA dog.\n"
                                                  b"0\t3\t4\t \t\n1\t5\t6\tOne.\t\n")
    with caplog.at_level(logging.WARNING):
        examples = classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path))
    assert [(e.text_a, e.text_b) for e in examples] == [("A cat.", "A dog."), (" ", ""),
                                                         ("One.", "")]
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert said == [f"{path}: 2 example(s) with an empty sentence (first: train-2); kept, as "
                    "the original (an empty sentence gives no tokens)"]
    caplog.clear()
    _write(tmp_path, "train.tsv", header + b"1\t1\t2\tA cat.\tA dog.\n")
    with caplog.at_level(logging.WARNING):
        classifier_processors.MrpcProcessor().get_train_examples(str(tmp_path))
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]
