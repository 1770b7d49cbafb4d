"""XLNet preprocessing against the original prepro_utils.py outputs (golden prepro.jsonl)."""
import json
import os

import pytest

sentencepiece = pytest.importorskip("sentencepiece")

from bert_tf.errors import ConfigError
from bert_tf.tokenization import sentencepiece_prepro as prepro


@pytest.fixture(scope="module")
def golden_rows(golden_dir):
    with open(os.path.join(golden_dir, "xlnet", "prepro.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def golden_sp(golden_dir):
    return prepro.load_sp_model(os.path.join(golden_dir, "xlnet", "spiece.model"))


def test_golden_has_all_lines(golden_rows):
    assert len(golden_rows) == 298
    # The digit-comma fix-up fires on 21 lines (golden README, section A).
    assert sum(r["sp_pieces"] != r["pieces"] for r in golden_rows) == 21


def test_preprocess_text_every_line(golden_rows):
    for r in golden_rows:
        assert prepro.preprocess_text(r["text"], lower=False) == r["prepro"], r["id"]
        assert prepro.preprocess_text(r["text"], lower=True) == r["prepro_lower"], r["id"]
        assert prepro.preprocess_text(r["text"], keep_accents=True) == r["prepro_keep_accents"], r["id"]


def test_encode_pieces_and_ids_every_line(golden_rows, golden_sp):
    for r in golden_rows:
        assert prepro.encode_pieces(golden_sp, r["prepro"]) == r["pieces"], r["id"]
        assert prepro.encode_ids(golden_sp, r["prepro"]) == r["ids"], r["id"]
        assert prepro.encode_pieces(golden_sp, r["prepro_lower"]) == r["pieces_lower"], r["id"]
        assert prepro.encode_ids(golden_sp, r["prepro_lower"]) == r["ids_lower"], r["id"]


def test_tokenize_fn_matches_golden_ids(golden_rows, golden_sp):
    for r in golden_rows[:40]:
        assert prepro.tokenize_fn(golden_sp, r["text"]) == r["ids"]
        assert prepro.tokenize_fn(golden_sp, r["text"], uncased=True) == r["ids_lower"]


def test_bytes_input_is_decoded():
    text = "I was born in 2000, and this is falsé."
    assert prepro.preprocess_text(text.encode("utf-8")) == "I was born in 2000, and this is false."


def test_golden_model_special_ids(golden_sp):
    # Golden README: ids 0..16 of the golden model, in order.
    expected = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>",
                ".", "(", ")", '"', "-", "\u2013", "\u00a3", "\u20ac"]
    assert [golden_sp.IdToPiece(i) for i in range(17)] == expected


def test_real_xlnet_spiece_model(shared_data_dir):
    sp = prepro.load_sp_model(os.path.join(shared_data_dir, "xlnet", "spiece.model"))
    assert sp.GetPieceSize() == 32000 == prepro.VOCAB_SIZE
    names = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
    assert [sp.IdToPiece(i) for i in range(9)] == names
    for name, idx in prepro.special_symbols.items():
        assert sp.PieceToId(name) == idx
    assert (prepro.UNK_ID, prepro.CLS_ID, prepro.SEP_ID, prepro.MASK_ID, prepro.EOD_ID) == (0, 3, 4, 6, 7)
    # Spec 5.3: <cls>..<eod> are control symbols, <eop> is user-defined (matched in text).
    assert all(sp.IsControl(i) for i in range(3, 8))
    assert sp.IsUnknown(0)
    assert prepro.encode_ids(sp, "a<eop>")[-1] == 8
    # The digit-comma rule puts the comma in its own piece.
    pieces = prepro.encode_pieces(sp, prepro.preprocess_text("I was born in 2000, and this is falsé."))
    assert pieces[pieces.index(",") - 1].endswith("0")
    assert "," in pieces and all(not (len(p) > 1 and p.endswith(",")) for p in pieces)


def test_load_missing_model_names_path(tmp_path):
    missing = str(tmp_path / "nope.model")
    with pytest.raises(ConfigError, match="nope.model"):
        prepro.load_sp_model(missing)
