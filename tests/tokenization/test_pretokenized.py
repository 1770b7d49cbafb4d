"""bert_tf/tokenization/pretokenized.py: tokens of many lines at once, handed out per line."""
import pytest

from bert_tf.tokenization import pretokenized, wordpiece
from tests.tokenization.test_wordpiece_fast_path import EDGE_LINES

pytest.importorskip("tensorflow_text", reason="the batch path uses tf.text")


def test_tokens_equal_tokenize_and_are_fresh_lists(uncased_vocab_file):
    tokenizer = wordpiece.FullTokenizer(uncased_vocab_file)
    lines = EDGE_LINES + ["Hello, world!", "Hello, world!", "caf\xe9 au lait"]
    proxy = pretokenized.PretokenizedTokenizer(tokenizer, lines)
    for line in lines:
        assert proxy.tokenize(line) == tokenizer.tokenize(line), repr(line)
    first = proxy.tokenize("Hello, world!")
    first.pop()  # callers truncate in place: the stored tokens must not change
    assert proxy.tokenize("Hello, world!") == ["hello", ",", "world", "!"]
    assert proxy.tokenize("not given") == ["not", "given"]  # asks the tokenizer
    assert proxy.tokenize(b"bytes too") == ["bytes", "too"]
    assert proxy.vocab is tokenizer.vocab
    assert proxy.convert_tokens_to_ids(["hello"]) == [tokenizer.vocab["hello"]]


def test_worth_batching(uncased_vocab_file):
    import tensorflow  # noqa: F401
    tokenizer = wordpiece.FullTokenizer(uncased_vocab_file)
    assert pretokenized.MIN_LINES == 16384
    assert not pretokenized.worth_batching(tokenizer, 16383)
    assert pretokenized.worth_batching(tokenizer, 16384)

    class Overridden(wordpiece.FullTokenizer):
        def tokenize(self, text):
            return ["x"]
    assert not pretokenized.worth_batching(Overridden(uncased_vocab_file), 1 << 20)
    assert not pretokenized.worth_batching(object(), 1 << 20)


def test_chunked_keeps_order_and_chunks(uncased_vocab_file, monkeypatch):
    tokenizer = wordpiece.FullTokenizer(uncased_vocab_file)
    items = [["a b", "c"], [], ["d"], ["e f", "g"], ["h"]]
    assert [(i, t is tokenizer) for i, _, t in pretokenized.chunked(tokenizer, items, list)] == \
        [(i, True) for i in range(5)]  # too few lines: the tokenizer itself
    monkeypatch.setattr(pretokenized, "MIN_LINES", 0)
    monkeypatch.setattr(pretokenized, "CHUNK_LINES", 2)
    got = list(pretokenized.chunked(tokenizer, items, list))
    assert [(i, item) for i, item, _ in got] == list(enumerate(items))
    proxies = [t for _, _, t in got]
    # chunks of >= 2 lines: [0], [1, 2, 3], [4]... item 0 has 2 lines; 1+2 have 1; 3 ends it
    assert proxies[0] is not proxies[1] and proxies[1] is proxies[2] is proxies[3]
    assert proxies[4] is not proxies[3]
    for _, item, proxy in got:
        for line in item:
            assert line in proxy._tokens and proxy.tokenize(line) == tokenizer.tokenize(line)
