"""In-graph XLNet preprocessing (bert_tf.tokenization.in_graph_sentencepiece) against the original.

Expected values: the original prepro_utils outputs (tests/golden/xlnet/prepro.jsonl), the
original classifier_utils.convert_single_example features (classifier_features.jsonl), and, for
all of MRPC and STS-B, bert_tf's Python convert_single_example (itself equal to those goldens).
"""
import csv
import json
import math
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.xlnet.data import classifier as xlnet_classifier
from bert_tf.data.classifier import InputExample
from bert_tf.errors import ConfigError
from bert_tf.tokenization import sentencepiece_prepro
from bert_tf.tokenization.in_graph_sentencepiece import XLNetTextPreprocessor
from tests.tokenization.saved_layers import saved_and_loaded


@pytest.fixture(scope="module")
def spiece(golden_dir):
    return os.path.join(golden_dir, "xlnet", "spiece.model")


@pytest.fixture(scope="module")
def prepro_lines(golden_dir):
    with open(os.path.join(golden_dir, "xlnet", "prepro.jsonl"), encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) == 298
    return lines


@pytest.fixture(scope="module")
def layers(spiece):
    return {uncased: XLNetTextPreprocessor(spiece, uncased, 64) for uncased in (False, True)}


def _utf8(texts):
    return tf.constant([t.encode("utf-8") for t in texts])


@pytest.mark.parametrize("uncased", [False, True])
def test_golden_prepro_pieces_and_ids(prepro_lines, layers, uncased):
    suffix = "_lower" if uncased else ""
    layer = layers[uncased]
    texts = _utf8([line["text"] for line in prepro_lines])
    prepro = [t.decode("utf-8") for t in layer.preprocess_text(texts).numpy()]
    pieces = [[p.decode("utf-8") for p in row] for row in layer.pieces(texts).to_list()]
    ids = layer.piece_ids(texts).to_list()
    for i, line in enumerate(prepro_lines):
        assert prepro[i] == line["prepro" + suffix], (i, line["text"])
        # An unknown piece (id 0) reads "<unk>" here; the original keeps its text.
        assert pieces[i] == [p if j else "<unk>" for p, j in
                             zip(line["pieces" + suffix], line["ids" + suffix])], i
        assert ids[i] == line["ids" + suffix], (i, line["text"])
    # The digit-comma fix fired on 21 lines (cased), where plain SentencePiece differs.
    if not uncased:
        assert sum(line["sp_pieces"] != line["pieces"] for line in prepro_lines) == 21


def test_golden_classifier_features(golden_dir, spiece):
    with open(os.path.join(golden_dir, "xlnet", "classifier_features.jsonl"),
              encoding="utf-8") as f:
        records = [json.loads(line) for line in f if '"PaddingInputExample"' not in line]
    assert len(records) == 35
    for uncased in (False, True):
        group = [r for r in records if r["uncased"] == uncased]
        layer = XLNetTextPreprocessor(spiece, uncased, group[0]["max_seq_length"])
        pairs = [r for r in group if r["text_b"] is not None]
        singles = [r for r in group if r["text_b"] is None]
        outputs = []
        if pairs:
            outputs.append((pairs, layer(_utf8([r["text_a"] for r in pairs]),
                                         _utf8([r["text_b"] for r in pairs]))))
        if singles:
            outputs.append((singles, layer(_utf8([r["text_a"] for r in singles]))))
        for rows, out in outputs:
            assert out["input_ids"].dtype == tf.int32 and out["input_mask"].dtype == tf.float32
            for name in ("input_ids", "input_mask", "segment_ids"):
                np.testing.assert_array_equal(out[name].numpy(), [r[name] for r in rows],
                                              err_msg=name)


@pytest.mark.parametrize("max_seq_length", [3, 7, 20])
def test_truncation_and_left_padding(prepro_lines, layers, spiece, max_seq_length):
    sp = sentencepiece_prepro.load_sp_model(spiece)
    layer = XLNetTextPreprocessor(spiece, False, max_seq_length)
    texts_a = [line["text"] for line in prepro_lines[:140]]
    texts_b = [line["text"] for line in prepro_lines[140:280]]  # some empty or blank
    pair = layer(_utf8(texts_a), _utf8(texts_b))
    single = layer(_utf8(texts_a))
    pair = {k: v.numpy().tolist() for k, v in pair.items()}
    single = {k: v.numpy().tolist() for k, v in single.items()}
    tokenize = lambda text: sentencepiece_prepro.tokenize_fn(sp, text, uncased=False)  # noqa
    for i, (a, b) in enumerate(zip(texts_a, texts_b)):
        for out, example in ((pair, InputExample("p", a, b, "0")),
                             (single, InputExample("s", a, None, "0"))):
            want = xlnet_classifier.convert_single_example(i, example, ["0"], max_seq_length,
                                                           tokenize)
            assert out["input_ids"][i] == want.input_ids, (i, a, b)
            assert out["input_mask"][i] == [float(m) for m in want.input_mask], i
            assert out["segment_ids"][i] == want.segment_ids, i


def test_tf_function_and_get_config(prepro_lines, layers):
    layer = layers[True]
    texts_a = _utf8([line["text"] for line in prepro_lines[:32]])
    texts_b = _utf8([line["text"] for line in prepro_lines[32:64]])
    eager = layer(texts_a, texts_b)
    graph = tf.function(lambda a, b: layer(a, b))(texts_a, texts_b)
    clone = XLNetTextPreprocessor.from_config(layer.get_config())
    assert clone.get_config()["uncased"] is True and clone.max_seq_length == 64
    cloned = clone(texts_a, texts_b)
    for name in ("input_ids", "input_mask", "segment_ids"):
        np.testing.assert_array_equal(eager[name].numpy(), graph[name].numpy())
        np.testing.assert_array_equal(eager[name].numpy(), cloned[name].numpy())


@pytest.mark.slow
def test_saved_model_holds_the_sentencepiece_model(tmp_path, spiece, prepro_lines):
    model = tmp_path / "spiece.model"
    model.write_bytes(open(spiece, "rb").read())
    layer = XLNetTextPreprocessor(str(model), True, 48)
    loaded = saved_and_loaded(layer, model, tmp_path / "saved")
    texts_a = [line["text"] for line in prepro_lines[:60]]
    texts_b = [line["text"] for line in prepro_lines[60:120]]
    got = loaded.serve(_utf8(texts_a), _utf8(texts_b))["input_ids"].numpy().tolist()
    sp = sentencepiece_prepro.load_sp_model(spiece)
    tokenize = lambda text: sentencepiece_prepro.tokenize_fn(sp, text, uncased=True)  # noqa
    for i, (a, b) in enumerate(zip(texts_a, texts_b)):
        want = xlnet_classifier.convert_single_example(i, InputExample("x", a, b, "0"), ["0"],
                                                       48, tokenize)
        assert got[i] == want.input_ids, i


def test_bad_model_and_length(tmp_path, spiece):
    bad = tmp_path / "spiece.model"
    bad.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="spiece.model"):
        XLNetTextPreprocessor(str(bad), False, 64)
    with pytest.raises(ConfigError, match="max_seq_length=2"):
        XLNetTextPreprocessor(spiece, False, 2)


def _glue_pairs(data_dir):
    pairs = []
    for task, (col_a, col_b) in (("MRPC", (3, 4)), ("STS-B", (7, 8))):
        for split in ("train", "dev", "test"):
            with open(os.path.join(data_dir, task, f"{split}.tsv"), encoding="utf-8-sig",
                      newline="") as f:
                rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
            pairs.extend((row[col_a], row[col_b]) for row in rows)
    return pairs


def _is_score_tie(sp, ids, want):
    """Both id lists spell the same text with the same total piece score (exact sum): two
    segmentations the unigram Viterbi cannot tell apart, where float rounding picks one."""
    total = lambda row: math.fsum(sp.GetScore(i) for i in row)  # noqa: E731
    return sp.DecodeIds(ids) == sp.DecodeIds(want) and total(ids) == total(want)


# A real MRPC line where "666" has two segmentations of equal score ("6 66", "66 6"):
# tf_text.SentencepieceTokenizer picks "66 6", sentencepiece 0.2.3 (the golden's) "6 66".
NASDAQ = ("The technology-laced Nasdaq Composite Index .IXIC climbed 40.09 points, or 2.46 "
          "percent, to 1,666.58, based on the latest data, and marking its highest close since "
          "May 23, 2002.")


def test_sentencepiece_score_tie_as_sentencepiece_python(spiece, layers):
    sp = sentencepiece_prepro.load_sp_model(spiece)
    want = sentencepiece_prepro.tokenize_fn(sp, NASDAQ, uncased=False)
    six, sixty_six = sp.PieceToId("6"), sp.PieceToId("66")
    bigrams = [want[i:i + 2] for i in range(len(want) - 1)]
    assert [six, sixty_six] in bigrams and [sixty_six, six] not in bigrams
    assert _is_score_tie(sp, [six, sixty_six], [sixty_six, six])
    assert layers[False].piece_ids(_utf8([NASDAQ])).to_list() == [want]


@pytest.mark.slow
def test_every_mrpc_and_stsb_pair(shared_data_dir, spiece, layers):
    # Every sentence's ids equal tokenize_fn's, and every pair gives convert_single_example's
    # features. A difference that is an exact SentencePiece score tie is reported apart (seen
    # with tf_text.SentencepieceTokenizer: 2 of 28,858 sentences, see NASDAQ).
    pairs = _glue_pairs(shared_data_dir)
    assert len(pairs) == 14429
    sp = sentencepiece_prepro.load_sp_model(spiece)
    for uncased in (False, True):
        layer = XLNetTextPreprocessor(spiece, uncased, 128)
        tokenize = lambda text: sentencepiece_prepro.tokenize_fn(sp, text, uncased)  # noqa
        ties, bad = [], []
        for start in range(0, len(pairs), 2048):
            chunk = pairs[start:start + 2048]
            text_a, text_b = _utf8([a for a, _ in chunk]), _utf8([b for _, b in chunk])
            ids_a, ids_b = layer.piece_ids(text_a).to_list(), layer.piece_ids(text_b).to_list()
            out = {k: v.numpy().tolist() for k, v in layer(text_a, text_b).items()}
            for i, (a, b) in enumerate(chunk):
                tie = False
                for text, ids in ((a, ids_a[i]), (b, ids_b[i])):
                    want = tokenize(text)
                    if ids != want:
                        (ties if _is_score_tie(sp, ids, want) else bad).append(text)
                        tie = True
                if tie:
                    continue
                want = xlnet_classifier.convert_single_example(
                    i, InputExample("x", a, b, "0"), ["0"], 128, tokenize)
                if (out["input_ids"][i] != want.input_ids
                        or out["segment_ids"][i] != want.segment_ids
                        or out["input_mask"][i] != [float(m) for m in want.input_mask]):
                    bad.append((a, b))
        print(f"uncased={uncased}: {len(ties)} SentencePiece score ties of {2 * len(pairs)} "
              f"sentences: {ties}")
        assert not bad, f"uncased={uncased}: {len(bad)} differ: {bad[:3]}"
        assert not ties


@pytest.mark.parametrize("uncased", [False, True])
def test_nul_character_keeps_the_text_after_it(layers, uncased):
    # tf_text.regex_split stops at NUL; the lower-case map split risky rows with it and dropped
    # everything after a NUL ("a\x00b c" -> [24]). Expected: the original prepro_utils
    # encode_ids(sp, preprocess_text(text, lower=uncased)) on tests/golden/xlnet/spiece.model
    # (sentencepiece 0.2.x), both cases alike.
    texts = ["a\x00b c", "\x00", "x\x00", "a\x00\x00b c"]
    expected = [[24, 0, 2288, 988], [20, 0], [20, 5241, 0], [24, 0, 2288, 988]]
    assert layers[uncased].piece_ids(_utf8(texts)).to_list() == expected


@pytest.mark.parametrize("uncased", [False, True])
def test_invalid_utf8_row_does_not_fail_the_batch(layers, uncased):
    # A served batch with one invalid UTF-8 row failed whole (InvalidArgumentError). Now its
    # bad bytes are dropped, as BertTextPreprocessor and the original BERT's convert_to_unicode
    # (decode("utf-8", "ignore")) do; the other rows are untouched. Expected: the original
    # prepro_utils encode_ids on the golden spiece.model of the ignore-decoded text.
    texts = [b"Caf\xc3 ok", b"\xff\xfe", b"Paris is big", b"a\xe2\x82b"]
    expected = {False: [[2195, 1651, 20, 855, 3884], [], [1774, 25, 2217], [24, 2288]],
                True: [[3533, 1651, 20, 855, 3884], [], [2278, 1532, 25, 2217], [24, 2288]]}
    assert layers[uncased].piece_ids(tf.constant(texts)).to_list() == expected[uncased]
