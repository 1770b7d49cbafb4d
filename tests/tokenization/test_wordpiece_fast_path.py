"""The fast paths of bert_tf FullTokenizer (issue 16) against the original algorithm.

``FullTokenizer.tokenize`` / ``tokenize_to_ids`` split the raw line with ``str.split()``, cache
per raw word, start with the vocab in their caches and take a regex shortcut for printable
ASCII words. The references here are independent of those paths:

* the ORIGINAL google-research/bert ``tokenization.py`` itself, from ``$BERT_ORIGINAL_DIR``
  (default /tmp/orig_bert; the tests that need it skip with a reason when it is absent), loaded
  with a shim of ours for the ``tf.gfile.GFile`` its load_vocab uses;
* the exact class-level path of bert_tf, which the fast paths do not use:
  ``BasicTokenizer.tokenize`` (whole-line cleaning by the character tables, then
  ``str.split()``) followed by ``WordpieceTokenizer.tokenize`` and ``convert_tokens_to_ids``;
* the golden file written by the original (787 lines, uncased).
"""
import csv
import gzip
import importlib.util
import json
import os
import sys
import types

import pytest

from bert_tf.tokenization import wordpiece

GOLDEN_TOKENIZATION = os.path.join("bert", "tokenization", "tokenization_uncased.jsonl.gz")
ORIGINAL_DIR = os.environ.get("BERT_ORIGINAL_DIR", "/tmp/orig_bert")


class _GFile:
    """``tf.gfile.GFile(path, "r")`` as the original load_vocab reads it: readline() up to and
    including "\\n", decoded as UTF-8."""

    def __init__(self, path, mode="r"):
        self._f = open(path, "rb")

    def readline(self):
        return self._f.readline().decode("utf-8")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


@pytest.fixture(scope="module")
def original():
    """The original tokenization module, imported unchanged with a gfile-only ``tensorflow``."""
    path = os.path.join(ORIGINAL_DIR, "tokenization.py")
    if not os.path.exists(path):
        pytest.skip(f"the original google-research/bert is not at {ORIGINAL_DIR} "
                    "(set BERT_ORIGINAL_DIR)")
    pytest.importorskip("six", reason="the original tokenization.py imports six")
    fake_tf = types.ModuleType("tensorflow")
    fake_tf.gfile = types.SimpleNamespace(GFile=_GFile)
    saved = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = fake_tf
    try:
        spec = importlib.util.spec_from_file_location("original_bert_tokenization", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["tensorflow"]
        else:
            sys.modules["tensorflow"] = saved
    return module


def _exact_ids(tokenizer, text):
    """bert_tf's class-level exact path (not the FullTokenizer fast paths)."""
    basic = wordpiece.BasicTokenizer(do_lower_case=tokenizer.basic_tokenizer.do_lower_case)
    tokens = []
    for token in basic.tokenize(text):
        tokens.extend(tokenizer.wordpiece_tokenizer.tokenize(token))
    return tokens, tokenizer.convert_tokens_to_ids(tokens)


def _glue_lines(data_dir):
    """The 28,858 sentences of MRPC (columns 3, 4) and STS-B (7, 8), all splits."""
    lines = []
    for task, columns in (("MRPC", (3, 4)), ("STS-B", (7, 8))):
        for split in ("train", "dev", "test"):
            with open(os.path.join(data_dir, task, f"{split}.tsv"), encoding="utf-8-sig",
                      newline="") as f:
                rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
            for row in rows:
                lines.extend(row[c] for c in columns)
    return lines


def _write_vocab(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes("".join(t + "\n" for t in tokens).encode("utf-8"))
    return str(path)


# Hand-made lines at the edges of the fast paths.
EDGE_LINES = [
    "", " ", "\t\n\r ", ".", "...!?", "(--)", "[UNK]", "[CLS] hello [SEP]", "#", "##ing",
    "Hello, World!", "HeLLo WORLD the The THE", "don't stop-believing", "U.S.A. $5.00 5%",
    "a\tb\nc\rd", "a\r\nb", "a\x0bb", "a\x0cb", "a\x0b b", "x\x1cy\x1dz\x1ew\x1fv", "a\x85b",
    "a\u2028b", "a\u2029b", "a\xa0b", "a\u3000b", "a\u202fb", "ab\x00cd", "ab\x01cd", "ab\x7fcd",
    "\x07bell", "ab\u200bcd", "ab\ufeffcd", "ab\ufffdcd", "caf\xe9 CAF\xc9 cafe\u0301",
    "\u4e2d\u6587abc\u4e2d", "na\xefve r\xe9sum\xe9", "\u2603 snowman \u2603x",
    "zzzzqqqqxxxx qqqq xxjjqq", "unaffable UNAFFABLE",
    "a" * 200, "a" * 201, "b" * 200 + ".", "." + "c" * 201, "d" * 150 + "," + "e" * 150,
    "\xe9" * 150, "e\u0301" * 150, "x" * 199 + "\xe9", "A" * 201 + " ok",
    "tab\tseparated\twords", "   leading and trailing   ", "\x00", "\x0b\x0c\x1c",
    "1,000,000 3.14159 0xFF", "email@example.com http://x.y/z?q=1&r=2",
    "\x01\x02\x03 \x04", "mixed\x0bcase\x0cHERE",
]


@pytest.fixture(scope="module")
def uncased_tokenizers(uncased_vocab_file):
    return {lower: wordpiece.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
            for lower in (True, False)}


def test_split_deleted_chars_are_exactly_those_str_split_splits_on_but_cleaning_deletes():
    # Over all of Unicode, with the running Python: the characters str.split() treats as
    # whitespace that the original's _clean_text deletes (NUL, U+FFFD, or a control).
    expected, kept = set(), set()
    for cp in range(0x110000):
        char = chr(cp)
        if not char.isspace():
            continue
        if cp == 0 or cp == 0xFFFD or wordpiece._is_control(char):
            expected.add(char)
        elif not wordpiece._is_whitespace(char):
            kept.add(char)
    assert expected == set(wordpiece.SPLIT_DELETED_CHARS)
    # Every other str.isspace() character is whitespace to the original too, or is kept by
    # cleaning (and then split on by its whitespace_tokenize, which is str.split()).
    assert kept == {"\u2028", "\u2029"}


def test_split_deleted_chars_match_the_original(original):
    for char in wordpiece.SPLIT_DELETED_CHARS:
        assert original._is_control(char) and char.isspace()


def test_golden_lines_tokenize_to_ids(golden_dir, uncased_vocab_file):
    with gzip.open(os.path.join(golden_dir, GOLDEN_TOKENIZATION), "rt", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) == 787
    tokenizer = wordpiece.FullTokenizer(uncased_vocab_file, do_lower_case=True)
    assert [tokenizer.tokenize_to_ids(line["text"]) for line in lines] == \
        [line["ids"] for line in lines]
    # A second pass (every word cached) and a tiny cache that is emptied all the time.
    assert [tokenizer.tokenize_to_ids(line["text"]) for line in lines] == \
        [line["ids"] for line in lines]
    tiny = wordpiece.FullTokenizer(uncased_vocab_file, do_lower_case=True, cache_size=3)
    assert [tiny.tokenize(line["text"]) for line in lines] == [line["tokens"] for line in lines]
    assert [tiny.tokenize_to_ids(line["text"]) for line in lines] == \
        [line["ids"] for line in lines]


@pytest.mark.parametrize("lower", [True, False])
def test_edge_lines_equal_the_exact_path(uncased_tokenizers, lower):
    tokenizer = uncased_tokenizers[lower]
    for line in EDGE_LINES:
        tokens, ids = _exact_ids(tokenizer, line)
        assert tokenizer.tokenize(line) == tokens, repr(line)
        assert tokenizer.tokenize_to_ids(line) == ids, repr(line)
        assert tokenizer.tokenize_to_ids(line.encode("utf-8")) == ids, repr(line)


@pytest.mark.parametrize("lower", [True, False])
def test_edge_lines_equal_the_original(original, uncased_vocab_file, uncased_tokenizers, lower):
    theirs = original.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
    ours = uncased_tokenizers[lower]
    for line in EDGE_LINES:
        tokens = theirs.tokenize(line)
        assert ours.tokenize(line) == tokens, repr(line)
        assert ours.tokenize_to_ids(line) == theirs.convert_tokens_to_ids(tokens), repr(line)


def test_edge_lines_worked_by_hand(uncased_tokenizers):
    lower = uncased_tokenizers[True]
    # \x0b, \x0c and \x1c-\x1f, \x85 are deleted (controls), not split on.
    assert lower.tokenize("a\x0bb") == ["ab"]
    assert lower.tokenize("x\x1cy\x1dz\x1ew\x1fv") == lower.tokenize("xyzwv")
    # U+2028 is kept by cleaning, then split on by whitespace_tokenize (str.split()).
    assert lower.tokenize("a\u2028b") == ["a", "b"]
    assert lower.tokenize("ab\x01cd") == lower.tokenize("abcd")
    # 201 chars after the punctuation split -> [UNK]; 200 are split into pieces.
    assert lower.tokenize("a" * 201) == ["[UNK]"]
    assert lower.tokenize("d" * 150 + "," + "e" * 150) != ["[UNK]"]
    assert lower.tokenize("") == [] and lower.tokenize_to_ids(" \t\n") == []
    assert lower.tokenize("[UNK]") == ["[", "un", "##k", "]"]  # no "unk" in the vocab
    assert lower.tokenize("The THE") == ["the", "the"]
    assert uncased_tokenizers[False].tokenize("The the") == ["[UNK]", "the"]


@pytest.fixture(scope="module")
def cased_vocab_file(tmp_path_factory):
    # A small cased vocab: capitalised entries, a 201-char entry (longer than the WordPiece
    # limit: never a whole word), an entry with a space (never a word), pieces.
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "The", "the", "Paris", "par", "##is", "##Is",
              "P", "##aris", ",", ".", "!", "'", "s", "##s", "A", "a", "##b", "x" * 201,
              "x" * 200, "##x", "x", "hello world", "caf", "##\xe9", "Caf", "CAF", "##\xc9", "1",
              "##0", "\u4e2d", "##\u2603"]
    return _write_vocab(tmp_path_factory.mktemp("cased"), tokens)


CASED_LINES = EDGE_LINES + [
    "The Paris, the paris! PARIS Paris's", "x" * 201, "x" * 200, "x" * 202, "hello world",
    "A ab aB Ab", "Caf\xe9 CAF\xc9 caf\xe9", "10 100 1000", "\u4e2d\u2603",
]


@pytest.mark.parametrize("lower", [True, False])
def test_cased_vocab_equals_the_exact_path(cased_vocab_file, lower):
    tokenizer = wordpiece.FullTokenizer(cased_vocab_file, do_lower_case=lower)
    for line in CASED_LINES:
        tokens, ids = _exact_ids(tokenizer, line)
        assert tokenizer.tokenize(line) == tokens, repr(line)
        assert tokenizer.tokenize_to_ids(line) == ids, repr(line)


@pytest.mark.parametrize("lower", [True, False])
def test_cased_vocab_equals_the_original(original, cased_vocab_file, lower):
    theirs = original.FullTokenizer(cased_vocab_file, do_lower_case=lower)
    ours = wordpiece.FullTokenizer(cased_vocab_file, do_lower_case=lower)
    for line in CASED_LINES:
        tokens = theirs.tokenize(line)
        assert ours.tokenize(line) == tokens, repr(line)
        assert ours.tokenize_to_ids(line) == theirs.convert_tokens_to_ids(tokens), repr(line)


def test_cased_vocab_by_hand(cased_vocab_file):
    cased = wordpiece.FullTokenizer(cased_vocab_file, do_lower_case=False)
    assert cased.tokenize("The Paris x" + "x" * 200) == ["The", "Paris", "[UNK]"]
    assert cased.tokenize("x" * 200) == ["x" * 200]
    assert cased.tokenize("Parisx") == ["Paris", "##x"]
    lower = wordpiece.FullTokenizer(cased_vocab_file, do_lower_case=True)
    assert lower.tokenize("The Paris") == ["the", "par", "##is"]


def test_tokenize_to_ids_without_unk_in_vocab(tmp_path):
    vocab = _write_vocab(tmp_path, ["[CLS]", "hello", ","])
    tokenizer = wordpiece.FullTokenizer(vocab)
    assert tokenizer.tokenize_to_ids("Hello, hello") == [1, 2, 1]
    for _ in range(2):  # nothing half-stored in the caches
        with pytest.raises(wordpiece.UnknownTokenError, match=r"vocab\.txt: token '\[UNK\]'"):
            tokenizer.tokenize_to_ids("hello world")
    with pytest.raises(KeyError):
        tokenizer.convert_tokens_to_ids(tokenizer.tokenize("world"))
    with pytest.raises(ValueError, match="Unsupported string type"):
        tokenizer.tokenize_to_ids(3)


def test_every_mrpc_and_stsb_line_equals_the_exact_path(shared_data_dir, uncased_tokenizers):
    lines = _glue_lines(shared_data_dir)
    assert len(lines) == 28858
    for lower, tokenizer in uncased_tokenizers.items():
        fresh = wordpiece.FullTokenizer(tokenizer.vocab_file, do_lower_case=lower)
        bad = []
        for line in lines:
            tokens, ids = _exact_ids(tokenizer, line)
            if fresh.tokenize_to_ids(line) != ids or fresh.tokenize(line) != tokens:
                bad.append(line)
        assert not bad, f"do_lower_case={lower}: {len(bad)} lines differ: {bad[:3]}"


@pytest.mark.slow
def test_every_mrpc_and_stsb_line_equals_the_original(original, shared_data_dir,
                                                      uncased_vocab_file):
    lines = _glue_lines(shared_data_dir)
    assert len(lines) == 28858
    for lower in (True, False):
        theirs = original.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
        ours = wordpiece.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
        bad = []
        for line in lines:
            tokens = theirs.tokenize(line)
            if (ours.tokenize_to_ids(line) != theirs.convert_tokens_to_ids(tokens)
                    or ours.tokenize(line) != tokens):
                bad.append(line)
        assert not bad, f"do_lower_case={lower}: {len(bad)} lines differ: {bad[:3]}"
