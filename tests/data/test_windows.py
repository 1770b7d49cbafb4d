"""bert_tf.data.windows: sliding windows worked out by hand from the run_squad rule."""
import numpy as np
import pytest

from bert_tf.data.windows import (check_window_flags, first_window_rows, max_context_windows,
                                  pool_window_logits, split_into_windows, window_spans)
from bert_tf.errors import FlagError, InputDataError


def test_window_spans_follow_the_run_squad_stride_rule():
    # 10 tokens, windows of 4, stride 3: starts 0, 3, 6 (6 + 4 = 10 reaches the end)
    assert [(s.start, s.length) for s in window_spans(10, 4, 3)] == [(0, 4), (3, 4), (6, 4)]
    # 11 tokens: 0, 3, 6, then 9 with the 2 left
    assert [(s.start, s.length) for s in window_spans(11, 4, 3)] == [(0, 4), (3, 4), (6, 4), (9, 2)]
    assert [(s.start, s.length) for s in window_spans(3, 4, 3)] == [(0, 3)]
    assert [(s.start, s.length) for s in window_spans(0, 4, 3)] == [(0, 0)]  # [CLS] [SEP]


def test_max_context_owner_by_hand():
    # windows (0,4) (3,4) (6,4) over 10 tokens.
    # token 3: window 0 score min(3,0)+0.04 = 0.04, window 1 min(0,3)+0.04 = 0.04 -> first (0)
    # token 4: window 1 min(1,2) = 1.04 beats window 0 (end) -> 1; token 5: w1 min(2,1)=1.04 -> 1
    # token 6: w1 min(3,0)=0.04, w2 min(0,3)=0.04 -> 1; token 7: w2 min(1,2) -> 2
    spans = window_spans(10, 4, 3)
    assert max_context_windows(spans, 10) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_pair_keeps_the_shorter_side_whole():
    a = list("abcdefghij")  # 10
    b = ["x", "y"]
    w = split_into_windows(a, b, max_seq_length=9, doc_stride=2)  # room 9 - 3 - 2 = 4
    assert w.windowed == "a"
    assert w.pieces == [(list("abcd"), b), (list("cdef"), b), (list("efgh"), b), (list("ghij"), b)]
    w = split_into_windows(b, a, max_seq_length=9, doc_stride=4)
    assert w.windowed == "b"
    assert w.pieces == [(b, list("abcd")), (b, list("efgh")), (b, list("ij"))]
    # a pair that fits is one window, untouched
    assert split_into_windows(b, b, 9, 4).pieces == [(b, b)]
    # an empty text_b is one text, as the original
    assert split_into_windows(a, [], 6, 2).pieces[0] == (list("abcd"), None)


def test_pair_whose_short_side_leaves_less_than_the_stride_is_refused():
    with pytest.raises(InputDataError, match=r"dev.tsv dev-7: text_b has 5 tokens and is kept "
                                             r"whole in every window, leaving 2 tokens of text_a"):
        split_into_windows(list("abcdefghij"), list("vwxyz"), 10, 3, where="dev.tsv dev-7")
    # the same pair with a stride that fits the room of 2 is fine
    assert len(split_into_windows(list("abcdefghij"), list("vwxyz"), 10, 2).pieces) == 5


@pytest.mark.parametrize("stride, pooling, message", [
    (None, "max", "--window_pooling=max needs --doc_stride"),
    (0, None, "--doc_stride=0: must be at least 1"),
    (-1, "mean", "--doc_stride=-1: must be at least 1"),
    (127, None, "--doc_stride=127 is larger than the window of 126 tokens"),
])
def test_bad_window_flags(stride, pooling, message):
    with pytest.raises(FlagError, match=message):
        check_window_flags(stride, pooling, 128, num_special=2)


def test_window_flags_defaults():
    assert check_window_flags(None, None, 128) is None
    assert check_window_flags(126, None, 128) == "mean"
    assert check_window_flags(64, "max", 128) == "max"


def test_pool_window_logits_mean_and_max_by_hand():
    logits = np.array([[1, 2], [3, -2], [5, 0], [0, 0], [-1, 7]], np.float32)
    index = np.array([0, 0, 1, -1, 0])  # row 3 is TPU padding
    np.testing.assert_allclose(pool_window_logits(logits, index, 2, "mean"),
                               [[1, 7 / 3], [5, 0]], rtol=1e-6)
    np.testing.assert_array_equal(pool_window_logits(logits, index, 2, "max"), [[3, 7], [5, 0]])
    np.testing.assert_array_equal(first_window_rows(index, 2), [0, 2])
    with pytest.raises(ValueError, match="example 2 has no window"):
        pool_window_logits(logits, index, 3, "mean")


def _window_log(caplog):
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(
        ("guid:", "tokens:", "input_ids:", "input_mask:", "segment_ids:", "label:"))]


def test_bert_windows_are_logged_with_their_tokens(tmp_path, caplog):
    from bert_tf.data.classifier import InputExample, convert_example_windows
    from bert_tf.tokenization.wordpiece import FullTokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\nd\ne\n")
    tokenizer = FullTokenizer(str(vocab), do_lower_case=True)
    caplog.set_level("INFO")
    features = convert_example_windows(0, InputExample("g", "a b c d e", label="1"), ["0", "1"],
                                       5, tokenizer, 1)
    # windows of 5 - 2 = 3 tokens, stride 1: a b c / b c d / c d e
    assert [f.input_ids for f in features] == [[2, 4, 5, 6, 3], [2, 5, 6, 7, 3], [2, 6, 7, 8, 3]]
    assert _window_log(caplog) == [
        "guid: g (window 1 of 3)", "tokens: [CLS] a b c [SEP]", "label: 1 (id = 1)",
        "guid: g (window 2 of 3)", "tokens: [CLS] b c d [SEP]", "label: 1 (id = 1)",
        "guid: g (window 3 of 3)", "tokens: [CLS] c d e [SEP]", "label: 1 (id = 1)"]


def test_xlnet_windows_are_logged_with_their_ids(caplog):
    from bert_tf.data.classifier import InputExample
    from bert_tf.xlnet.data.classifier import convert_example_windows

    caplog.set_level("INFO")
    features = convert_example_windows(
        0, InputExample("g", "11 12 13 14 15 16 17", label="0"), ["0", "1"], 8,
        lambda text: [int(x) for x in text.split()], 2)
    # windows of 8 - 2 = 6 ids, stride 2: 11..16, 13..17; then <sep> 4 <cls> 3, left padded
    assert [f.input_ids for f in features] == [[11, 12, 13, 14, 15, 16, 4, 3],
                                               [0, 13, 14, 15, 16, 17, 4, 3]]
    assert _window_log(caplog) == [
        "guid: g (window 1 of 2)", "input_ids: 11 12 13 14 15 16 4 3", "label: 0 (id = 0)",
        "guid: g (window 2 of 2)", "input_ids: 0 13 14 15 16 17 4 3", "label: 0 (id = 0)"]


def test_bert_example_log_lines(tmp_path, caplog):
    from bert_tf.data.classifier import InputExample, convert_single_example
    from bert_tf.tokenization.wordpiece import FullTokenizer

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\n")
    caplog.set_level("INFO")
    convert_single_example(0, InputExample("g", "a b", "c", label="1"), ["0", "1"], 6,
                           FullTokenizer(str(vocab), do_lower_case=True))
    assert _window_log(caplog) == [
        "guid: g", "tokens: [CLS] a b [SEP] c [SEP]", "input_ids: 2 4 5 3 6 3",
        "input_mask: 1 1 1 1 1 1", "segment_ids: 0 0 0 0 1 1", "label: 1 (id = 1)"]


def test_xlnet_example_log_lines(caplog):
    from bert_tf.data.classifier import InputExample
    from bert_tf.xlnet.data.classifier import convert_single_example

    caplog.set_level("INFO")
    convert_single_example(0, InputExample("g", "11 12", "13", label="0"), ["0", "1"], 7,
                           lambda text: [int(x) for x in text.split()])
    # A <sep> 4 B <sep> <cls> 3, left padded (mask 1, segment 4); segments A 0, B 1, <cls> 2
    assert _window_log(caplog) == [
        "guid: g", "input_ids: 0 11 12 4 13 4 3", "input_mask: 1 0 0 0 0 0 0",
        "segment_ids: 4 0 0 0 1 1 2", "label: 0 (id = 0)"]
