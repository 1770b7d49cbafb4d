"""extract_features --doc_stride (issue 13): a real ~3,000-token document of consecutive MRPC
sentences through the real MiniLM, checked token by token against a direct run of the model on
each token's max-context window (windows and max context worked out here, independently of
bert_tf.data.windows, by the original run_squad rule)."""
import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError, InputDataError
from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features
from tests.tasks.reference_windows import reference_owner, reference_spans

MAX_SEQ_LENGTH = 64
DOC_STRIDE = 24
LAYERS = "-1,-4"  # the vectors of two layers are checked


def _args(ckpt_dir, input_file, output_file, **kw):
    base = dict(input_file=input_file, output_file=output_file,
                bert_config_file=os.path.join(ckpt_dir, "bert_config.json"),
                vocab_file=os.path.join(ckpt_dir, "vocab.txt"),
                init_checkpoint=os.path.join(ckpt_dir, "bert_model.ckpt"),
                max_seq_length=MAX_SEQ_LENGTH, layers=LAYERS, batch_size=16)
    base.update(kw)
    return ExtractFeaturesArgs(**base)


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _mrpc_document(shared_data_dir, tokenizer, num_tokens=3000):
    """Consecutive MRPC train #1 sentences joined by spaces until ~num_tokens WordPieces."""
    path = os.path.join(shared_data_dir, "MRPC", "train.tsv")
    with open(path, encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
    sentences, count = [], 0
    for row in rows:
        sentences.append(row[3])
        count += len(tokenizer.tokenize(row[3]))
        if count >= num_tokens:
            break
    return " ".join(sentences)


@pytest.fixture(scope="module")
def tokenizer(minilm_checkpoint_dir):
    from bert_tf.tokenization.wordpiece import FullTokenizer
    return FullTokenizer(os.path.join(minilm_checkpoint_dir, "vocab.txt"), do_lower_case=True)


@pytest.fixture(scope="module")
def long_run(minilm_checkpoint_dir, shared_data_dir, tokenizer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ef_windows")
    document = _mrpc_document(shared_data_dir, tokenizer)
    input_file = str(folder / "input.txt")
    with open(input_file, "w", encoding="utf-8") as f:  # an empty and a short line among long ones
        f.write(document + "\n\nA short line that fits in one window.\n" + document[:400] + "\n")
    out = str(folder / "windows.jsonl")
    summary = extract_features(_args(minilm_checkpoint_dir, input_file, out,
                                     doc_stride=DOC_STRIDE, pooling="mean"))
    plain = str(folder / "plain.jsonl")
    extract_features(_args(minilm_checkpoint_dir, input_file, plain))
    return dict(document=document, input_file=input_file, out=out, plain=plain,
                summary=summary)


def _direct_model(ckpt_dir):
    from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint
    from bert_tf.bert.config import BertConfig
    from bert_tf.bert.model import BertModel

    config = BertConfig.from_json_file(os.path.join(ckpt_dir, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    load_bert_checkpoint(bert_model_map(model), os.path.join(ckpt_dir, "bert_model.ckpt"),
                         require_all=True)
    return model


@pytest.mark.slow  # ~40 s here: two extract runs and a direct run over 125 windows
def test_long_document_tokens_and_values_equal_direct_runs_on_max_context_windows(
        long_run, tokenizer, minilm_checkpoint_dir):
    pieces = tokenizer.tokenize(long_run["document"])
    assert len(pieces) >= 3000
    lines = _read_jsonl(long_run["out"])
    assert [line["linex_index"] for line in lines] == [0, 1, 2, 3]
    features = lines[0]["features"]
    # every token of the line once, in order
    assert [f["token"] for f in features] == ["[CLS]"] + pieces + ["[SEP]"]

    window = MAX_SEQ_LENGTH - 2
    spans = reference_spans(len(pieces), window, DOC_STRIDE)
    assert len(spans) > 100
    ids = np.zeros((len(spans), MAX_SEQ_LENGTH), np.int32)
    mask = np.zeros_like(ids)
    for row, (start, length) in enumerate(spans):
        window_ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + pieces[start:start + length] + ["[SEP]"])
        ids[row, :len(window_ids)] = window_ids
        mask[row, :len(window_ids)] = 1
    model = _direct_model(minilm_checkpoint_dir)
    out = model({"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
                 "segment_ids": tf.zeros_like(ids)}, training=False)
    layers = [out["all_encoder_layers"][int(i)].numpy() for i in LAYERS.split(",")]

    expected = np.zeros((len(features), len(layers), layers[0].shape[-1]), np.float32)
    for j, layer in enumerate(layers):
        expected[0, j] = layer[0, 0]  # [CLS] of the first window
        last_start, last_length = spans[-1]
        expected[-1, j] = layer[len(spans) - 1, last_length + 1]  # [SEP] of the last window
        for p in range(len(pieces)):
            w = reference_owner(p, spans)
            expected[1 + p, j] = layer[w, 1 + p - spans[w][0]]
    got = np.array([[layer["values"] for layer in f["layers"]] for f in features], np.float32)
    assert [layer["index"] for layer in features[5]["layers"]] == [-1, -4]
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)
    # the max-context rule matters: many tokens take another window than the first holding them
    first_holder = [min(i for i, (s, n) in enumerate(spans) if s <= p < s + n)
                    for p in range(len(pieces))]
    assert sum(reference_owner(p, spans) != first_holder[p] for p in range(len(pieces))) > 1000

    # the --pooling=mean embedding pools the stitched last-layer rows
    with open(long_run["out"] + ".embeddings.jsonl", encoding="utf-8") as f:
        embeddings = [json.loads(line) for line in f]
    np.testing.assert_allclose(embeddings[0]["embedding"], expected[:, 0].mean(axis=0),
                               atol=2e-5, rtol=0)


@pytest.mark.slow  # shares the long run above
def test_lines_that_fit_one_window_are_written_as_without_doc_stride(long_run):
    with open(long_run["out"], encoding="utf-8") as f:
        windowed = f.readlines()
    with open(long_run["plain"], encoding="utf-8") as f:
        plain = f.readlines()
    assert windowed[1] == plain[1]  # the empty line: the original's [CLS] [SEP]
    assert [x["token"] for x in json.loads(windowed[1])["features"]] == ["[CLS]", "[SEP]"]
    assert windowed[2] == plain[2]
    # the long lines are longer than the truncated ones of the original behaviour
    assert len(json.loads(plain[0])["features"]) == MAX_SEQ_LENGTH
    assert len(json.loads(windowed[3])["features"]) > MAX_SEQ_LENGTH


@pytest.mark.parametrize("stride, message", [
    (MAX_SEQ_LENGTH - 1, "--doc_stride=63 is larger than the window of 62 tokens"),
    (0, "--doc_stride=0: must be at least 1"),
    (-3, "--doc_stride=-3: must be at least 1"),
])
def test_bad_doc_stride_is_refused_before_anything_is_written(minilm_checkpoint_dir, tmp_path,
                                                               stride, message):
    input_file = tmp_path / "in.txt"
    input_file.write_text("hello world\n")
    out = tmp_path / "out.jsonl"
    with pytest.raises(FlagError, match=message):
        extract_features(_args(minilm_checkpoint_dir, str(input_file), str(out),
                               doc_stride=stride))
    assert os.listdir(tmp_path) == ["in.txt"]


def test_long_pair_line_is_refused_and_nothing_written(minilm_checkpoint_dir, tmp_path):
    input_file = tmp_path / "in.txt"
    input_file.write_text("short ||| pair\n" + " ".join(["word"] * 80) + " ||| other words\n")
    out = tmp_path / "out.jsonl"
    with pytest.raises(InputDataError, match=r"in.txt:2: a pair \('a \|\|\| b'\) of 85 tokens"):
        extract_features(_args(minilm_checkpoint_dir, str(input_file), str(out), doc_stride=20))
    assert os.listdir(tmp_path) == ["in.txt"]
