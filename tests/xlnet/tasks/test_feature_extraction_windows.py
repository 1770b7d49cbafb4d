"""XLNet extract_features --doc_stride (issue 13): a long line of consecutive MRPC sentences
(real SentencePiece model, the golden tiny XLNet), each piece's values checked against a direct
run of the model on its max-context window (windows worked out here by the run_squad rule);
<sep>/<cls> are the last window's."""
import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError, InputDataError
from bert_tf.xlnet.tasks.feature_extraction import XLNetExtractFeaturesArgs, run as extract_features
from tests.tasks.reference_windows import reference_owner, reference_spans

MAX_SEQ_LENGTH = 32
DOC_STRIDE = 11


@pytest.fixture(scope="module")
def golden(xlnet_tiny_files):
    return xlnet_tiny_files


def _args(golden, input_file, output_file, **kw):
    base = dict(input_file=str(input_file), output_file=str(output_file),
                model_config_path=golden["config"], spiece_model_file=golden["spiece"],
                init_checkpoint=golden["ckpt"], layers="-1,0", max_seq_length=MAX_SEQ_LENGTH,
                batch_size=8)
    base.update(kw)
    return XLNetExtractFeaturesArgs(**base)


def test_long_line_equals_direct_runs_on_max_context_windows(golden, shared_data_dir, tmp_path):
    import sentencepiece as spm
    from bert_tf.tokenization.sentencepiece_prepro import encode_pieces, preprocess_text
    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.config import RunConfig, XLNetConfig
    from bert_tf.xlnet.model import XLNetModel

    with open(os.path.join(shared_data_dir, "MRPC", "dev.tsv"), encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
    document = " ".join(r[3] for r in rows[:8])
    input_file = tmp_path / "in.txt"
    input_file.write_text(document + "\n\n" + " ".join(rows[9][3].split()[:6]) + "\n",
                          encoding="utf-8")
    out = tmp_path / "out.jsonl"
    extract_features(_args(golden, input_file, out, doc_stride=DOC_STRIDE, pooling="cls"))
    plain = tmp_path / "plain.jsonl"
    extract_features(_args(golden, input_file, plain))
    with open(out, encoding="utf-8") as f:
        lines = f.readlines()
    with open(plain, encoding="utf-8") as f:
        plain_lines = f.readlines()
    assert lines[1:] == plain_lines[1:]  # an empty line (<sep> <cls>) and a short one: as before

    sp = spm.SentencePieceProcessor()
    sp.Load(golden["spiece"])
    pieces = encode_pieces(sp, preprocess_text(document, lower=False))
    features = json.loads(lines[0])["features"]
    assert [f["token"] for f in features] == pieces + ["<sep>", "<cls>"]
    spans = reference_spans(len(pieces), MAX_SEQ_LENGTH - 2, DOC_STRIDE)
    assert len(spans) > 10

    config = XLNetConfig.from_json_file(golden["config"])
    model = XLNetModel(config, RunConfig(is_training=False))
    model({"input_ids": tf.zeros([1, 2], tf.int32), "segment_ids": tf.zeros([1, 2], tf.int32),
           "input_mask": tf.zeros([1, 2], tf.float32)})
    checkpoint_map.load_xlnet_checkpoint(checkpoint_map.xlnet_variable_map(model), golden["ckpt"],
                                         require_all=True, untie_r=config.untie_r)
    window_layers = []
    for start, length in spans:  # each window alone, unpadded: <sep> id 4, <cls> id 3
        ids = [sp.PieceToId(p) for p in pieces[start:start + length]] + [4, 3]
        segs = [0] * (length + 1) + [2]
        o = model({"input_ids": tf.constant([ids], tf.int32),
                   "segment_ids": tf.constant([segs], tf.int32),
                   "input_mask": tf.zeros([1, len(ids)], tf.float32)}, training=False)
        layers = o["all_layer_outputs"][1:]
        window_layers.append([layers[-1].numpy()[0], layers[0].numpy()[0]])
    expected = np.zeros((len(features), 2, config.d_model), np.float32)
    for p in range(len(pieces)):
        w = reference_owner(p, spans)
        for j in range(2):
            expected[p, j] = window_layers[w][j][p - spans[w][0]]
    for j in range(2):
        expected[-2, j] = window_layers[-1][j][-2]  # <sep> and <cls> of the last window
        expected[-1, j] = window_layers[-1][j][-1]
    got = np.array([[layer["values"] for layer in f["layers"]] for f in features], np.float32)
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=0)
    with open(str(out) + ".embeddings.jsonl", encoding="utf-8") as f:
        cls = json.loads(f.readline())["embedding"]
    np.testing.assert_allclose(cls, expected[-1, 0], atol=2e-5, rtol=0)  # the last <cls>


def test_bad_doc_stride_and_long_pairs_write_nothing(golden, tmp_path):
    input_file = tmp_path / "in.txt"
    input_file.write_text("short ||| pair\n" + "word " * 40 + "||| other\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with pytest.raises(FlagError, match="--doc_stride=31 is larger than the window of 30"):
        extract_features(_args(golden, input_file, out, doc_stride=31))
    with pytest.raises(FlagError, match="--doc_stride=0: must be at least 1"):
        extract_features(_args(golden, input_file, out, doc_stride=0))
    with pytest.raises(InputDataError, match=r"in.txt:2: a pair \('a \|\|\| b'\) of \d+ pieces"):
        extract_features(_args(golden, input_file, out, doc_stride=10))
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]
