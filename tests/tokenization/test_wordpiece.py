"""Tests of bert_tf.tokenization.wordpiece against the original tokenization.py.

Expected values come from the golden file written by the original code
(tests/golden/bert/tokenization/tokenization_uncased.jsonl.gz), from the original
tokenization_test.py cases (spec bert.md 12.1), or are worked by hand from spec section 4.
"""
import collections
import gzip
import json
import os

import pytest

from bert_tf.errors import ConfigError, FlagError
from bert_tf.tokenization import wordpiece as tokenization

GOLDEN_TOKENIZATION = os.path.join("bert", "tokenization", "tokenization_uncased.jsonl.gz")

# The vocab of the original tokenization_test.py (spec 12.1), ids 0-10 / 0-9.
TEST_VOCAB_TOKENS = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn",
                     "##ing", ","]


def _write_vocab(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_bytes("".join(t + "\n" for t in tokens).encode("utf-8"))
    return str(path)


@pytest.fixture(scope="module")
def golden_lines(golden_dir):
    with gzip.open(os.path.join(golden_dir, GOLDEN_TOKENIZATION), "rt", encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert len(lines) == 787
    assert all(line["lower"] for line in lines)
    return lines


@pytest.fixture(scope="module")
def uncased_tokenizer(uncased_vocab_file):
    return tokenization.FullTokenizer(uncased_vocab_file, do_lower_case=True)


def _mismatch_report(lines, outputs):
    bad = collections.defaultdict(list)
    for line, (tokens, ids) in zip(lines, outputs):
        if tokens != line["tokens"] or ids != line["ids"]:
            bad[line["source"].split(":")[0]].append(
                (line["source"], line["text"][:60], tokens[:12], line["tokens"][:12]))
    return {source: items[:3] + [f"... {len(items)} in all"] for source, items in bad.items()}


# ---- golden: every line of the original's output ------------------------------------------------

def test_golden_uncased_every_line(golden_lines, uncased_tokenizer):
    outputs = []
    for line in golden_lines:
        tokens = uncased_tokenizer.tokenize(line["text"])
        outputs.append((tokens, uncased_tokenizer.convert_tokens_to_ids(tokens)))
    report = _mismatch_report(golden_lines, outputs)
    assert not report, f"mismatches by source: {report}"


def test_golden_uncached_and_split_classes(golden_lines, uncased_vocab_file):
    # The plain path (no cache), and BasicTokenizer + WordpieceTokenizer called separately.
    full = tokenization.FullTokenizer(uncased_vocab_file, cache_size=0)
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    wordpiece = tokenization.WordpieceTokenizer(full.vocab)
    outputs_full, outputs_split = [], []
    for line in golden_lines:
        tokens = full.tokenize(line["text"])
        outputs_full.append((tokens, full.convert_tokens_to_ids(tokens)))
        pieces = []
        for token in basic.tokenize(line["text"]):
            pieces.extend(wordpiece.tokenize(token))
        outputs_split.append((pieces, tokenization.convert_tokens_to_ids(full.vocab, pieces)))
    assert not _mismatch_report(golden_lines, outputs_full)
    assert not _mismatch_report(golden_lines, outputs_split)


def test_golden_batch_and_bytes(golden_lines, uncased_tokenizer):
    batch = uncased_tokenizer.tokenize_batch([line["text"] for line in golden_lines])
    assert batch == [line["tokens"] for line in golden_lines]
    # UTF-8 bytes of each text decode back to the same str (no golden text has lone surrogates).
    assert [uncased_tokenizer.tokenize(line["text"].encode("utf-8")) for line in golden_lines] \
        == [line["tokens"] for line in golden_lines]


def test_golden_ids_round_trip(golden_lines, uncased_tokenizer):
    for line in golden_lines[:50]:
        assert uncased_tokenizer.convert_ids_to_tokens(line["ids"]) == line["tokens"]


# ---- original tokenization_test.py (spec 12.1) ----------------------------------------------------

def test_full_tokenizer(tmp_path):
    vocab_file = _write_vocab(tmp_path, TEST_VOCAB_TOKENS)
    tokenizer = tokenization.FullTokenizer(vocab_file)
    os.unlink(vocab_file)  # the original deletes the file right after loading
    tokens = tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]


def test_chinese():
    tokenizer = tokenization.BasicTokenizer()
    assert tokenizer.tokenize("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]


def test_basic_tokenizer_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == \
        ["hello", "!", "how", "are", "you", "?"]
    assert tokenizer.tokenize("H\u00E9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == \
        ["HeLLo", "!", "how", "Are", "yoU", "?"]


def test_wordpiece_tokenizer():
    vocab = {token: i for i, token in enumerate(TEST_VOCAB_TOKENS[:10])}
    tokenizer = tokenization.WordpieceTokenizer(vocab=vocab)
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]


def test_convert_tokens_to_ids():
    vocab = {token: i for i, token in enumerate(TEST_VOCAB_TOKENS[:10])}
    assert tokenization.convert_tokens_to_ids(
        vocab, ["un", "##want", "##ed", "runn", "##ing"]) == [7, 4, 5, 8, 9]


def test_is_whitespace():
    for char in [" ", "\t", "\r", "\n", "\u00A0"]:
        assert tokenization._is_whitespace(char)
    for char in ["A", "-"]:
        assert not tokenization._is_whitespace(char)


def test_is_control():
    assert tokenization._is_control("\u0005")
    for char in ["A", " ", "\t", "\r", "\U0001F4A9"]:
        assert not tokenization._is_control(char)


def test_is_punctuation():
    for char in ["-", "$", "`", "."]:
        assert tokenization._is_punctuation(char)
    for char in ["A", " "]:
        assert not tokenization._is_punctuation(char)


# ---- hand-worked from spec section 4 ------------------------------------------------------------

def test_readme_example(tmp_path):
    # Spec 4.7: "John Johanson's," -> john johan ##son ' s ,
    vocab_file = _write_vocab(tmp_path, ["[UNK]", "john", "johan", "##son", "'", "s", ",", "house"])
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    assert tokenizer.tokenize("John Johanson's,") == ["john", "johan", "##son", "'", "s", ","]
    bert_tokens, orig_to_tok_map = ["[CLS]"], []
    for word in ["John", "Johanson", "'s", "house"]:
        orig_to_tok_map.append(len(bert_tokens))
        bert_tokens.extend(tokenizer.tokenize(word))
    bert_tokens.append("[SEP]")
    assert bert_tokens == ["[CLS]", "john", "johan", "##son", "'", "s", "house", "[SEP]"]
    assert orig_to_tok_map == [1, 2, 4, 6]


def test_basic_tokenizer_cleaning_and_punctuation():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    # Controls (\x0b, ZWSP U+200B, soft hyphen U+00AD, NUL, U+FFFD) are deleted, gluing words;
    # NBSP and U+3000 are whitespace; U+2028 splits; ASCII symbols $ ^ ` + < = > | ~ are
    # punctuation; literal [CLS] is split.
    assert tokenizer.tokenize("line\x0bfeed a\u200bb c\u00add e\x00f\ufffdg") == \
        ["linefeed", "ab", "cd", "efg"]
    assert tokenizer.tokenize("x\u00a0y\u3000z\u2028w") == ["x", "y", "z", "w"]
    assert tokenizer.tokenize("a$b^c`d+e<f=g>h|i~j") == \
        ["a", "$", "b", "^", "c", "`", "d", "+", "e", "<", "f", "=", "g", ">", "h", "|", "i",
         "~", "j"]
    assert tokenizer.tokenize("[CLS] x") == ["[", "cls", "]", "x"]
    # Accent stripping only when lower-casing; NFD splits Hangul into jamo (kept: category Lo).
    assert tokenizer.tokenize("Caf\u00e9") == ["cafe"]
    assert tokenization.BasicTokenizer(do_lower_case=False).tokenize("Caf\u00e9") == ["Caf\u00e9"]
    assert tokenizer.tokenize("\ud55c") == ["\u1112\u1161\u11ab"]
    # CJK spacing applies without lower-casing too; Hiragana is not spaced.
    assert tokenization.BasicTokenizer(do_lower_case=False).tokenize("A\u4e2dB\u3042C") == \
        ["A", "\u4e2d", "B\u3042C"]
    assert tokenizer.tokenize("") == [] and tokenizer.tokenize(" \t\n ") == []


def test_original_private_helpers():
    basic = tokenization.BasicTokenizer()
    assert basic._run_split_on_punc("ab,c!!d") == ["ab", ",", "c", "!", "!", "d"]
    assert basic._run_split_on_punc("") == []
    assert basic._run_strip_accents("\u00e9a\u0301") == "ea"
    assert basic._clean_text("a\tb\x00c\u200bd") == "a bcd"
    assert basic._tokenize_chinese_chars("a\u535Ab") == "a \u535A b"


def test_max_input_chars_per_word():
    vocab = {"[UNK]": 0, "a": 1, "##a": 2, "b": 3}
    tokenizer = tokenization.WordpieceTokenizer(vocab)
    assert tokenizer.tokenize("a" * 200) == ["a"] + ["##a"] * 199
    assert tokenizer.tokenize("a" * 201) == ["[UNK]"]
    # A word with an unmatched part becomes one [UNK]; matched pieces are dropped.
    assert tokenizer.tokenize("aab ab b") == ["[UNK]", "[UNK]", "b"]
    small = tokenization.WordpieceTokenizer(vocab, unk_token="<unk>", max_input_chars_per_word=3)
    assert small.tokenize("aaaa aaa") == ["<unk>", "a", "##a", "##a"]


def test_longest_match_first(tmp_path):
    vocab = {"[UNK]": 0, "un": 1, "una": 2, "##ff": 3, "##aff": 4, "##able": 5, "##a": 6,
             "##ble": 7}
    tokenizer = tokenization.WordpieceTokenizer(vocab)
    # Greedy from the left: "una" is longer than "un", then "##ff", then "##able".
    assert tokenizer.tokenize("unaffable") == ["una", "##ff", "##able"]


def test_hash_pieces():
    # "##..." vocab entries also match literally at the start of a word (hand-worked, spec 4.5).
    vocab = {"[UNK]": 0, "a": 1, "###": 2, "##a": 3, "##": 4}
    tokenizer = tokenization.WordpieceTokenizer(vocab)
    assert tokenizer.tokenize("###a") == ["###", "##a"]
    assert tokenizer.tokenize("a# ## #") == ["a", "###", "##", "[UNK]"]
    # A blank vocab line is the token "": it never matches (words are never empty).
    with_blank = tokenization.WordpieceTokenizer({"": 0, "[UNK]": 1, "a": 2})
    assert with_blank.tokenize_word("") == []
    assert with_blank.tokenize(" a  ab ") == ["a", "[UNK]"]


# ---- vocab ------------------------------------------------------------------------------------

def test_load_vocab_edge_cases(tmp_path):
    path = tmp_path / "vocab.txt"
    # Blank line uses an id; whitespace around tokens is stripped; "\r\n" endings; a duplicate
    # keeps its first position with the later id; no final newline.
    path.write_bytes(b"[PAD]\n  hello \t\r\n\nworld\n[PAD]\nlast")
    vocab = tokenization.load_vocab(str(path))
    assert list(vocab.items()) == [("[PAD]", 4), ("hello", 1), ("", 2), ("world", 3), ("last", 5)]
    assert isinstance(vocab, collections.OrderedDict)


def test_real_uncased_vocab(uncased_tokenizer):
    assert len(uncased_tokenizer.vocab) == 30522
    assert uncased_tokenizer.vocab["[PAD]"] == 0 and uncased_tokenizer.vocab["[UNK]"] == 100
    assert uncased_tokenizer.vocab["[CLS]"] == 101 and uncased_tokenizer.vocab["[SEP]"] == 102
    assert uncased_tokenizer.inv_vocab[103] == "[MASK]"


def test_missing_vocab_file(tmp_path):
    missing = str(tmp_path / "no_such_vocab.txt")
    with pytest.raises(ConfigError, match="no_such_vocab.txt"):
        tokenization.FullTokenizer(missing)
    with pytest.raises(ConfigError, match=str(tmp_path)):
        tokenization.load_vocab(str(tmp_path))  # a directory


def test_vocab_invalid_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"[UNK]\nok\nbad\xff\n")
    with pytest.raises(ConfigError, match=r"bad\.txt.*line 3"):
        tokenization.load_vocab(str(path))


def test_unknown_token_raises_key_error(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB_TOKENS))
    with pytest.raises(KeyError) as info:
        tokenizer.convert_tokens_to_ids(["un", "nope"])
    assert info.value.args[0] == "nope"
    assert "'nope'" in str(info.value) and "vocab" in str(info.value)
    with pytest.raises(KeyError) as info:
        tokenizer.convert_ids_to_tokens([3, 99])
    assert info.value.args[0] == 99
    with pytest.raises(KeyError):
        tokenization.convert_by_vocab({"a": 0}, ["b"])


# ---- unicode helpers (spec 4.1) -------------------------------------------------------------

def test_convert_to_unicode():
    assert tokenization.convert_to_unicode("caf\u00e9") == "caf\u00e9"
    assert tokenization.convert_to_unicode(b"caf\xc3\xa9") == "caf\u00e9"
    assert tokenization.convert_to_unicode(b"hel\xfflo \xc3") == "hello "  # bad bytes dropped
    assert tokenization.printable_text(b"abc") == "abc"
    with pytest.raises(ValueError):
        tokenization.convert_to_unicode(123)


def test_bytes_with_invalid_utf8_are_dropped(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB_TOKENS))
    assert tokenizer.tokenize(b"UNw\xffant\xc3\xa9d,run\x80ning") == \
        ["un", "##want", "##ed", ",", "runn", "##ing"]


# ---- case checks (spec 4.6 and the cased-vocab check) ------------------------------------------

@pytest.mark.parametrize("name", ["uncased_L-24_H-1024_A-16", "uncased_L-12_H-768_A-12",
                                  "multilingual_L-12_H-768_A-12", "chinese_L-12_H-768_A-12"])
def test_validate_case_lowercased_models(name):
    ckpt = f"/models/{name}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(True, ckpt)
    with pytest.raises(tokenization.CaseMismatchError) as info:
        tokenization.validate_case_matches_checkpoint(False, ckpt)
    message = str(info.value)
    for part in ["--do_lower_case=False", ckpt, name, "lowercased", "--do_lower_case=True",
                 "folder with another name"]:
        assert part in message


@pytest.mark.parametrize("name", ["cased_L-12_H-768_A-12", "cased_L-24_H-1024_A-16",
                                  "multi_cased_L-12_H-768_A-12"])
def test_validate_case_cased_models(name):
    ckpt = f"gs://bucket/{name}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(False, ckpt)
    with pytest.raises(ValueError) as info:
        tokenization.validate_case_matches_checkpoint(True, ckpt)
    assert isinstance(info.value, FlagError)
    message = str(info.value)
    for part in ["--do_lower_case=True", name, "cased model", "--do_lower_case=False"]:
        assert part in message


@pytest.mark.parametrize("ckpt", [
    "", None, "/out/model.ckpt-1000", "/m/wwm_uncased_L-24_H-1024_A-16/bert_model.ckpt",
    "/m/uncased_L-4_H-256_A-4/bert_model.ckpt", "uncased_L-12_H-768_A-12/model.ckpt",
    "bert_model.ckpt",
])
def test_validate_case_unchecked(ckpt):
    tokenization.validate_case_matches_checkpoint(True, ckpt)
    tokenization.validate_case_matches_checkpoint(False, ckpt)


def test_case_mismatch_error_classes():
    assert issubclass(tokenization.CaseMismatchError, FlagError)
    assert issubclass(tokenization.CaseMismatchError, ValueError)


def test_vocab_looks_cased(uncased_tokenizer, tmp_path):
    assert not tokenization.vocab_looks_cased(uncased_tokenizer.vocab)
    cased = ["[PAD]", "[UNK]", "[CLS]", "The", "the", "Paris", "##ing", "a", "b", "c"]
    assert tokenization.vocab_looks_cased(cased)
    assert not tokenization.vocab_looks_cased(["[UNK]", "[CLS]"])
    tokenization.check_vocab_matches_case(uncased_tokenizer.vocab, True)
    tokenization.check_vocab_matches_case(cased, False)
    with pytest.raises(tokenization.CaseMismatchError,
                       match=r"a cased vocab --vocab_file=v\.txt with --do_lower_case=True"):
        tokenization.check_vocab_matches_case(cased, True, vocab_file="v.txt")


def test_pickle_round_trip(tmp_path):
    import pickle
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB_TOKENS))
    tokenizer.tokenize("unwanted")
    copy = pickle.loads(pickle.dumps(tokenizer))
    assert copy.tokenize("UNwant\u00E9d,running") == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert copy.vocab == tokenizer.vocab


# ---- module names -------------------------------------------------------------------------------

def test_original_module_name(tmp_path):
    from bert_tf.bert import tokenization as original_name
    import bert_tf.tokenization as package
    tokenizer = original_name.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB_TOKENS),
                                            do_lower_case=True)
    assert isinstance(tokenizer.basic_tokenizer, package.BasicTokenizer)
    assert isinstance(tokenizer.wordpiece_tokenizer, original_name.WordpieceTokenizer)
    assert original_name.validate_case_matches_checkpoint is package.validate_case_matches_checkpoint
    assert original_name._is_punctuation("~")


def test_empty_vocab_file_is_one_clear_error(tmp_path):
    # issue 15 item 3: an empty vocab failed later with a bare KeyError '[UNK]' traceback.
    path = tmp_path / "vocab.txt"
    path.write_bytes(b"")
    with pytest.raises(ConfigError, match=r"vocab\.txt' is empty"):
        tokenization.FullTokenizer(str(path))


def test_vocab_without_unk_says_why_not_that_tokenize_is_always_in_vocab(tmp_path):
    from bert_tf.errors import BertTfError
    vocab_file = _write_vocab(tmp_path, ["[CLS]", "[SEP]", "hello"])
    tokenizer = tokenization.FullTokenizer(vocab_file)
    tokens = tokenizer.tokenize("hello qqqq")
    assert tokens == ["hello", "[UNK]"]
    with pytest.raises(KeyError) as info:
        tokenizer.convert_tokens_to_ids(tokens)
    assert info.value.args[0] == "[UNK]"
    assert isinstance(info.value, BertTfError)  # the scripts print one error: line
    msg = str(info.value)
    assert msg.startswith(vocab_file + ": token '[UNK]' is not in the vocabulary (3 entries)")
    assert "needs an [UNK] line" in msg and "always in the vocab" not in msg
