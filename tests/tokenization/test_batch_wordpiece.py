"""FullTokenizer.tokenize_to_ids_batch (tf.text for printable-ASCII lines,
bert_tf/tokenization/batch_wordpiece.py) against independent references: the golden file of the
ORIGINAL tokenization.py (787 lines), the original code itself from $BERT_ORIGINAL_DIR (skips
when absent), and bert_tf's class-level exact path (BasicTokenizer + WordpieceTokenizer, which
neither the batch path nor the per-line fast path uses).
"""
import gzip
import json
import os
import subprocess
import sys

import pytest

from bert_tf.tokenization import batch_wordpiece, wordpiece
from tests.tokenization.test_wordpiece_fast_path import (  # noqa: F401 (fixtures)
    EDGE_LINES, GOLDEN_TOKENIZATION, _exact_ids, _glue_lines, _write_vocab, cased_vocab_file,
    original)

pytest.importorskip("tensorflow_text", reason="the batch path uses tf.text")

ASCII = [chr(c) for c in range(32, 127)]


def _ascii_edge_lines():
    lines = ["", " ", "   ", "\t", "\n", "\r\n", " \t \n ", "a\tb", "a\nb\rc", "tab\tand\nnew\rline",
             "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[CLS] hello [SEP]", "[UNK]x",
             "zzqxjzzqxj", "hello qqqqxxxxzzzz world", "##", "##ing", "#hash", "un##aff",
             "unaffable", "UNAFFABLE", "Hello, World!", "a.b-c_d~e^f`g|h\\i{j}k"]
    for char in ASCII:
        lines += [char, "a" + char + "b", "ab" + char, char + "ab", "A" + char * 2 + "Z 1" + char + "2"]
    for n in (99, 100, 101, 199, 200, 201, 202):
        lines += ["a" * n, "Q" * n, "x" * n + ".", "ab " + "e" * n + " cd", "b" * n + "!" + "c" * n,
                  "ab" * (n // 2) + "z" * (n % 2), "1" * n]
    return lines


ASCII_EDGE_LINES = _ascii_edge_lines()


def _tokenizer(vocab_file, lower):
    return wordpiece.FullTokenizer(vocab_file, do_lower_case=lower)


def _batch_tokens(tokenizer, lines):
    """The batch path's ids as token strings (each id of a vocab tf.text takes names one)."""
    ids = tokenizer.tokenize_to_ids_batch(lines, use_tf_text=True)
    return [tokenizer.convert_ids_to_tokens(x) for x in ids]


def test_every_ascii_edge_line_is_a_tf_text_line():
    # Else the tests below would not test tf.text on them.
    assert all(batch_wordpiece.is_fast_line(line) for line in ASCII_EDGE_LINES)
    assert not any(batch_wordpiece.is_fast_line(line) for line in
                   ["caf\xe9", "a\x0bb", "a\x0cb", "a\x00b", "a\x12b", "a\x7fb", "a\x85b", "\xa0",
                    "\u2028", "\ufeff", "\x1f"])


def test_golden_lines(golden_dir, uncased_vocab_file):
    with gzip.open(os.path.join(golden_dir, GOLDEN_TOKENIZATION), "rt", encoding="utf-8") as f:
        golden = [json.loads(line) for line in f]
    assert len(golden) == 787
    texts = [g["text"] for g in golden]
    tokenizer = _tokenizer(uncased_vocab_file, True)
    assert tokenizer.tokenize_to_ids_batch(texts, use_tf_text=True) == [g["ids"] for g in golden]
    assert tokenizer._batch.uses_tf_text
    assert _batch_tokens(tokenizer, texts) == [g["tokens"] for g in golden]
    # Most golden lines go to tf.text. Plain FastBertTokenizer gets 65 golden lines wrong: with
    # its default max_bytes_per_word=100, the 2 ASCII lines with a word of 101-200 characters
    # (the original splits those, tf.text gives [UNK]); with 200 as here, only lines that are
    # not tf.text lines (non-ASCII: NFKC case folding, controls as word breaks).
    fast = [t for t in texts if batch_wordpiece.is_fast_line(t)]
    assert len(fast) > 400
    import tensorflow as tf
    import tensorflow_text as tf_text
    for max_bytes, n_wrong, ascii_wrong in ((100, 65, 2), (200, 61, 0)):
        plain = tf_text.FastBertTokenizer(vocab=list(tokenizer.vocab), token_out_type=tf.int64,
                                          lower_case_nfd_strip_accents=True,
                                          max_bytes_per_word=max_bytes)
        plain_ids = plain.tokenize(tf.constant(texts)).to_list()
        wrong = [t for t, ids, g in zip(texts, plain_ids, golden) if ids != g["ids"]]
        assert len(wrong) == n_wrong
        wrong_fast = [t for t in wrong if batch_wordpiece.is_fast_line(t)]
        assert len(wrong_fast) == ascii_wrong
        assert all(100 < max(map(len, t.split())) <= 200 for t in wrong_fast)


@pytest.mark.parametrize("lower", [True, False])
def test_edge_lines_equal_the_exact_path(uncased_vocab_file, lower):
    tokenizer = _tokenizer(uncased_vocab_file, lower)
    lines = ASCII_EDGE_LINES + EDGE_LINES
    exact = [_exact_ids(tokenizer, line) for line in lines]
    assert tokenizer.tokenize_to_ids_batch(lines, use_tf_text=True) == [ids for _, ids in exact]
    assert _batch_tokens(tokenizer, lines) == [tokens for tokens, _ in exact]
    # As bytes too (UTF-8, invalid bytes dropped as convert_to_unicode does).
    raw = [line.encode("utf-8") for line in lines] + [b"ab\xffcd", b"\xc3"]
    assert tokenizer.tokenize_to_ids_batch(raw, use_tf_text=True) == \
        [ids for _, ids in exact] + [tokenizer.tokenize_to_ids("abcd"), []]


@pytest.mark.parametrize("lower", [True, False])
def test_edge_lines_equal_the_original(original, uncased_vocab_file, lower):
    theirs = original.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
    ours = _tokenizer(uncased_vocab_file, lower)
    lines = ASCII_EDGE_LINES + EDGE_LINES
    tokens = [theirs.tokenize(line) for line in lines]
    assert _batch_tokens(ours, lines) == tokens
    assert ours.tokenize_to_ids_batch(lines, use_tf_text=True) == \
        [theirs.convert_tokens_to_ids(t) for t in tokens]


def test_edge_lines_worked_by_hand(uncased_vocab_file):
    tokenizer = _tokenizer(uncased_vocab_file, True)
    v = tokenizer.vocab
    lines = ["", " \t\n", "[UNK]", "Hello, world!", "a" * 200, "a" * 201, "x" * 199 + ".",
             "a\tb"]
    got = _batch_tokens(tokenizer, lines)
    assert got[0] == [] and got[1] == []
    assert got[2] == ["[", "un", "##k", "]"]  # no never-split list: [UNK] in text is 3 words
    assert got[3] == ["hello", ",", "world", "!"]
    # 200 characters: split into pieces that spell the word
    assert len(got[4]) > 1 and "".join(p.replace("##", "") for p in got[4]) == "a" * 200
    assert got[5] == ["[UNK]"]  # 201 characters: [UNK] (the original's limit is 200)
    assert got[6][-1] == "." and "".join(p.replace("##", "") for p in got[6][:-1]) == "x" * 199
    assert got[7] == ["a", "b"]
    assert tokenizer.tokenize_to_ids_batch(lines[2:4], use_tf_text=True) == [
        [v["["], v["un"], v["##k"], v["]"]], [v["hello"], v[","], v["world"], v["!"]]]


def test_cased_vocab_through_tf_text(tmp_path, original):
    # A small cased vocab tf.text takes (no token with a space): "x" * 200 is a token, so the
    # 200/201-character boundary decides between a whole-word match and [UNK].
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "The", "the", "Paris", "par", "##is", "##Is",
              "P", "##aris", ",", ".", "!", "'", "s", "##s", "A", "a", "##b", "x" * 201,
              "x" * 200, "##x", "x", "1", "##0", "[", "]", "UNK", "un", "##k"]
    vocab_file = _write_vocab(tmp_path, tokens)
    lines = ["The Paris, Parisx.", "the PARIS par ##is", "x" * 199, "x" * 200, "x" * 201,
             "x" * 202, "A ab abbb 10 100 1000", "[UNK] UNK unk", "Ab\taB\nAB", "qq Q"]
    for lower in (True, False):
        theirs = original.FullTokenizer(vocab_file, do_lower_case=lower)
        ours = _tokenizer(vocab_file, lower)
        want = [theirs.tokenize(line) for line in lines]
        assert _batch_tokens(ours, lines) == want
        assert ours._batch.uses_tf_text
        assert ours.tokenize_to_ids_batch(lines, use_tf_text=True) == \
            [theirs.convert_tokens_to_ids(t) for t in want]
    cased = _tokenizer(vocab_file, False)
    assert _batch_tokens(cased, ["x" * 200, "x" * 201, "The Parisx"]) == \
        [["x" * 200], ["[UNK]"], ["The", "Paris", "##x"]]
    # Unknown words (a character with no piece) -> [UNK], the whole word.
    assert _batch_tokens(cased, ["qq Q Pq P", "ab!q"]) == \
        [["[UNK]", "[UNK]", "[UNK]", "P"], ["a", "##b", "!", "[UNK]"]]


@pytest.mark.parametrize("tokens, why", [
    (["[UNK]", "a", "b", "a", "##b"], "a repeated token"),
    (["[UNK]", "a", "", "##b"], "a blank line"),
    (["[UNK]", "a", "a b", "##b"], "a token with a space"),
    (["[CLS]", "a", "##b", ","], "no [UNK]"),
])
def test_a_vocab_tf_text_would_read_otherwise_takes_the_exact_path(tmp_path, tokens, why):
    tokenizer = wordpiece.FullTokenizer(_write_vocab(tmp_path, tokens))
    lines = ["ab a", "A, b", "ab" * 3]
    if "[UNK]" in tokens:
        want = [tokenizer.tokenize_to_ids(line) for line in lines]
        assert tokenizer.tokenize_to_ids_batch(lines, use_tf_text=True) == want, why
    else:
        assert tokenizer.tokenize_to_ids_batch(["ab a", "A, ab"], use_tf_text=True) == \
            [[1, 2, 1], [1, 3, 1, 2]]
        with pytest.raises(wordpiece.UnknownTokenError, match=r"token '\[UNK\]'"):
            tokenizer.tokenize_to_ids_batch(["ab c"], use_tf_text=True)
    assert not tokenizer._batch.uses_tf_text, why


def test_automatic_choice(uncased_vocab_file, monkeypatch):
    tokenizer = _tokenizer(uncased_vocab_file, True)
    import tensorflow  # noqa: F401 (loaded: the automatic choice may use tf.text)
    assert (wordpiece._MIN_FAST_LINES, wordpiece._MIN_BUILD_LINES) == (256, 32768)
    monkeypatch.setattr(wordpiece, "_MIN_BUILD_LINES", 1000)  # the real one: 32768
    many = ["Hello, world!"] * 999
    want = tokenizer.tokenize_to_ids(many[0])
    assert tokenizer.tokenize_to_ids_batch(many) == [want] * 999
    assert tokenizer._batch is None  # too few lines to pay building the tf.text tokenizer
    assert tokenizer.tokenize_to_ids_batch(many + ["x"], use_tf_text=False)[0] == want
    assert tokenizer._batch is None
    assert tokenizer.tokenize_to_ids_batch(many + ["x"])[0] == want
    assert tokenizer._batch is not None and tokenizer._batch.uses_tf_text
    # Built: from 256 lines on it is used (a spy counts the calls).
    calls = []
    real = tokenizer._batch.tokenize_to_ids
    monkeypatch.setattr(tokenizer._batch, "tokenize_to_ids",
                        lambda texts: calls.append(len(texts)) or real(texts))
    assert tokenizer.tokenize_to_ids_batch(many[:255]) == [want] * 255
    assert tokenizer.tokenize_to_ids_batch(many[:256]) == [want] * 256
    assert calls == [256]


def test_no_tensorflow_import_without_tensorflow_loaded(uncased_vocab_file, tmp_path):
    # create_pretraining_data runs without TensorFlow: the batch entry must not load it then.
    code = ("import sys\n"
            "from bert_tf.tokenization import wordpiece, batch_wordpiece\n"
            f"tok = wordpiece.FullTokenizer({uncased_vocab_file!r})\n"
            "ids = tok.tokenize_to_ids_batch(['Hello, world!'] * 1000)\n"
            "assert ids[0] == tok.tokenize_to_ids('Hello, world!'), ids[0]\n"
            "assert 'tensorflow' not in sys.modules\n"
            "print('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_every_mrpc_and_stsb_line_equals_the_per_line_path(shared_data_dir, uncased_vocab_file):
    lines = _glue_lines(shared_data_dir)
    assert len(lines) == 28858
    for lower in (True, False):
        per_line = _tokenizer(uncased_vocab_file, lower)
        batch = _tokenizer(uncased_vocab_file, lower)
        want = list(map(per_line.tokenize_to_ids, lines))
        got = batch.tokenize_to_ids_batch(lines, use_tf_text=True)
        bad = [line for line, a, b in zip(lines, got, want) if a != b]
        assert not bad, f"do_lower_case={lower}: {len(bad)} lines differ: {bad[:3]}"
        assert sum(map(batch_wordpiece.is_fast_line, lines)) > 28000  # tf.text did the bulk


@pytest.mark.slow
def test_every_mrpc_and_stsb_line_equals_the_original(original, shared_data_dir,
                                                      uncased_vocab_file):
    lines = _glue_lines(shared_data_dir)
    for lower in (True, False):
        theirs = original.FullTokenizer(uncased_vocab_file, do_lower_case=lower)
        tokens = [theirs.tokenize(line) for line in lines]
        ours = _tokenizer(uncased_vocab_file, lower)
        bad = [i for i, ids in enumerate(ours.tokenize_to_ids_batch(lines, use_tf_text=True))
               if ids != theirs.convert_tokens_to_ids(tokens[i])]
        assert not bad, f"do_lower_case={lower}: {len(bad)} lines differ: {lines[bad[0]]!r}"
        assert _batch_tokens(ours, lines) == tokens
