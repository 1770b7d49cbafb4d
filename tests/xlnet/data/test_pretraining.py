"""XLNet pretraining records (original data_utils.py create_data) against the golden run of the
original code (tests/golden/xlnet/pretraining_data, README section E), plus hand-worked cases
of the algorithm's pieces (spec xlnet.md 6.3-6.5)."""

import os
import random
import shutil
import types

import numpy as np
import pytest

from bert_tf.xlnet.data import pretraining as xp
from bert_tf.errors import FlagError, InputDataError
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model

GOLDEN_RECORDS = "train-0-0.bsz-4.seqlen-128.reuse-64.bi.alpha-6.beta-1.fnp-21.tfrecords"
GOLDEN_INFO = "record_info-train-0-0.bsz-4.seqlen-128.reuse-64.bi.alpha-6.beta-1.fnp-21.json"


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "xlnet", "pretraining_data")


@pytest.fixture(scope="module")
def sp_model(golden_dir):
    return load_sp_model(os.path.join(golden_dir, "xlnet", "spiece.model"))


def golden_args(**overrides):
    """The flags of the golden run (README section E)."""
    args = dict(use_tpu=False, bsz_per_host=4, num_core_per_host=1, seq_len=128, reuse_len=64,
                uncased=False, bi_data=True, mask_alpha=6, mask_beta=1, use_eod=True,
                from_raw_text=True, num_predict=21, input_glob="sotu_pretrain.txt",
                sp_path="spiece.model", save_dir="pretraining_data", split="train", pass_id=0,
                num_task=1, task=0, num_passes=1, num_workers=1)
    args.update(overrides)
    return types.SimpleNamespace(**args)


@pytest.fixture
def golden_workdir(tmp_path, monkeypatch, golden, golden_dir):
    """A folder holding the golden input and spiece.model, as the original was run."""
    shutil.copy(os.path.join(golden, "sotu_pretrain.txt"), tmp_path)
    shutil.copy(os.path.join(golden_dir, "xlnet", "spiece.model"), tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def decoded(path):
    from bert_tf.data.tfrecord import read_examples
    return list(read_examples(path))


def test_token_stream_equals_golden(golden, sp_model):
    with open(os.path.join(golden, "sotu_pretrain.txt"), encoding="utf-8") as f:
        ids, sent_ids, _ = xp.encode_corpus_file(f, sp_model, uncased=False)
    want = np.load(os.path.join(golden, "token_stream.npz"))
    np.testing.assert_array_equal(ids, want["input_data"])
    np.testing.assert_array_equal(sent_ids, want["sent_ids"])


def test_records_equal_the_original(golden_workdir, golden, sp_model):
    """Every record, in order, and the two JSON files byte for byte. (The TFRecord bytes
    themselves differ: protobuf serializes the feature map in an implementation-defined
    order.)"""
    infos = xp.create_data(golden_args(), sp_model, random.Random(20190619))
    assert infos == [{"filenames": [f"pretraining_data/tfrecords/{GOLDEN_RECORDS}"],
                      "num_batch": 116}]
    ours = golden_workdir / "pretraining_data"
    for rel in ("corpus_info.json", f"tfrecords/{GOLDEN_INFO}"):
        assert (ours / rel).read_bytes() == open(os.path.join(golden, rel), "rb").read(), rel
    records = decoded(str(ours / "tfrecords" / GOLDEN_RECORDS))
    want = np.load(os.path.join(golden, "decoded_tfrecords.npz"))
    assert len(records) == 464
    for key in ("input", "target", "seg_id", "is_masked"):
        np.testing.assert_array_equal(np.array([r[key] for r in records]), want[key])
    np.testing.assert_array_equal([r["label"][0] for r in records], want["label"])


def test_worker_processes_give_the_same_records(golden_workdir, golden, sp_model):
    xp.create_data(golden_args(num_workers=2), sp_model, random.Random(20190619))
    records = decoded(str(golden_workdir / "pretraining_data" / "tfrecords" / GOLDEN_RECORDS))
    want = np.load(os.path.join(golden, "decoded_tfrecords.npz"))
    for key in ("input", "target", "seg_id", "is_masked"):
        np.testing.assert_array_equal(np.array([r[key] for r in records]), want[key])


def test_ids_input_gives_the_same_records(golden_workdir, golden, sp_model):
    """from_raw_text=False: the golden token stream written as id lines (one sentence a line,
    blank lines for <eod>) gives the golden records too."""
    stream = np.load(os.path.join(golden, "token_stream.npz"))
    ids, sent_ids = stream["input_data"], stream["sent_ids"]
    lines, start = [], 0
    for end in range(1, len(ids) + 1):
        if end == len(ids) or sent_ids[end] != sent_ids[start]:
            sentence = ids[start:end].tolist()
            if sentence[-1] == 7:  # <eod> is glued to its document's last sentence
                if sentence[:-1]:
                    lines.append(" ".join(map(str, sentence[:-1])))
                lines.append("")
            else:
                lines.append(" ".join(map(str, sentence)))
            start = end
    (golden_workdir / "ids.txt").write_text("\n".join(lines) + "\n")
    xp.create_data(golden_args(from_raw_text=False, input_glob="ids.txt"), sp_model,
                   random.Random(20190619))
    records = decoded(str(golden_workdir / "pretraining_data" / "tfrecords" / GOLDEN_RECORDS))
    want = np.load(os.path.join(golden, "decoded_tfrecords.npz"))
    np.testing.assert_array_equal(np.array([r["input"] for r in records]), want["input"])
    np.testing.assert_array_equal(np.array([r["is_masked"] for r in records]), want["is_masked"])


def test_format_filename_spec_example():
    assert xp.format_filename("record_info-train-0-0", 32, 512, True, "json", mask_alpha=6,
                              mask_beta=1, reuse_len=256, fixed_num_predict=85) == (
        "record_info-train-0-0.bsz-32.seqlen-512.reuse-256.bi.alpha-6.beta-1.fnp-85.json")
    assert xp.format_filename("dev-1-2", 8, 128, False, "tfrecords", uncased=True) == (
        "dev-1-2.bsz-8.seqlen-128.uncased.uni.alpha-5.beta-1.tfrecords")


def test_encode_corpus_file_sentence_ids_and_eod(sp_model):
    """Spec 6.3 by hand: ids alternate per line; a blank line's <eod> keeps the last id."""
    ids, sent_ids, n = xp.encode_corpus_file(["1 2\n", "3\n", "\n", "4 5\n"], sp_model,
                                             uncased=False, from_raw_text=False)
    assert ids.tolist() == [1, 2, 3, 7, 4, 5]
    assert sent_ids.tolist() == [True, True, False, False, True, True]
    assert n == 4
    ids, _, _ = xp.encode_corpus_file(["1\n", "\n", "2\n"], sp_model, uncased=False,
                                      from_raw_text=False, use_eod=False)
    assert ids.tolist() == [1, 2]
    with pytest.raises(InputDataError, match="ids.txt:2"):
        xp.encode_corpus_file(["1\n", "a b\n"], sp_model, False, from_raw_text=False,
                              path="ids.txt")


def test_stream_rows_bi_data_by_hand():
    """[0..11] in 4 rows with bi_data, one core: 2 forward chunks of 6, then them reversed."""
    ids = np.arange(13)
    rows, sents = xp.stream_rows(ids, ids % 2 == 0, 4, 1, True)
    assert rows.tolist() == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11],
                             [5, 4, 3, 2, 1, 0], [11, 10, 9, 8, 7, 6]]
    assert sents[2].tolist() == [False, True, False, True, False, True]
    assert xp.stream_rows(ids, ids > 0, 3, 1, False)[0].tolist() == [
        [0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


class Scripted:
    """A random source that returns scripted values and records the calls."""

    def __init__(self, *values):
        self.values = list(values)
        self.calls = []

    def _next(self, name, *args):
        self.calls.append((name,) + args)
        return self.values.pop(0)

    def random(self):
        return self._next("random")

    def choice(self, seq, p=None):
        return self._next("choice", tuple(seq) if not isinstance(seq, int) else seq)

    def randint(self, *args):
        return self._next("randint", *args)


def test_sample_mask_quirk_spans_are_n_pieces():
    """The span is n pieces from a word start even inside a word (spec 6.5 quirk):
    pieces ▁a b c ▁d e; n=2, ctx 12, l_ctx 0 -> [0, 2) although the word ▁a b c is 3 long;
    then r_ctx=12 moves past the end, leaving 1 to fill: randint -> 4."""
    pieces = ["\u2581a", "b", "c", "\u2581d", "e"]
    rng = Scripted(2, 0, 4)
    starts = [xp.is_start_piece(p) for p in pieces]
    mask = xp.sample_mask(starts, rng, mask_alpha=6, mask_beta=1, goal_num_predict=3)
    assert mask.tolist() == [True, True, False, False, True]
    assert [c[0] for c in rng.calls] == ["choice", "choice", "randint"]
    assert rng.calls[1] == ("choice", 12)
    # reverse: sampled on ▁? order flipped: e ▁d c b ▁a -> first start piece is ▁d (index 1)
    rng = Scripted(1, 0)
    mask = xp.sample_mask(starts, rng, mask_alpha=6, mask_beta=1, reverse=True,
                          goal_num_predict=1)
    assert mask.tolist() == [False, False, False, True, False]


def test_sample_mask_span_reaching_the_end_stops_spans():
    """n=3 from the start piece at 3 of 5 pieces reaches the end: no span, 2 random picks."""
    starts = [xp.is_start_piece(p) for p in ["a", "b", "c", "\u2581d", "e"]]
    assert starts == [False, False, False, True, False]
    rng = Scripted(3, 0, 0, 0, 1)
    mask = xp.sample_mask(starts, rng, mask_alpha=1, mask_beta=1, goal_num_predict=2)
    assert mask.tolist() == [True, True, False, False, False]
    assert [c[0] for c in rng.calls] == ["choice", "choice", "randint", "randint", "randint"]


def test_split_a_and_b_by_hand():
    """Sentences [0,3) [3,5) [5,8) [8,12); begin 0, tot_len 6: cut points 3 and 5, end 8.
    random 0.7 (>= 0.5) -> label 1, choice -> 3: A = [0,3), B = [3,8) trimmed to 6 tokens:
    B longer -> drop B's last token -> B = [3,6)... until len(A)+len(B) = 6."""
    data = np.arange(100, 112)
    sent = np.array([0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1], dtype=bool)
    rng = Scripted(0.7, 3)
    a, b, label, a_tgt, b_tgt = xp.split_a_and_b(data, sent, 0, 6, rng)
    assert label == 1
    assert a.tolist() == [100, 101, 102] and b.tolist() == [103, 104, 105]
    assert a_tgt.tolist() == [101, 102, 103] and b_tgt.tolist() == [103, 104, 105, 106]
    assert rng.calls == [("random",), ("choice", (3, 5))]
    # label 0: random 0.2, choice 5 -> A = [0,5), b_len = 1, randint(0, 10) -> 9: B = [9,10)
    # grown to its sentence [8, 11) (not past len - 1 = 11); 5 + 3 > 6, A longer: A -> [0,4),
    # then [0,3) (3 + 3 = 6).
    rng = Scripted(0.2, 5, 9)
    a, b, label, _, b_tgt = xp.split_a_and_b(data, sent, 0, 6, rng)
    assert label == 0 and a.tolist() == [100, 101, 102] and b.tolist() == [108, 109, 110]
    assert b_tgt.tolist() == [108, 109, 110, 111]
    assert rng.calls[2] == ("randint", 0, 10)
    assert xp.split_a_and_b(data, sent, 6, 6, Scripted()) is None  # 6 + 6 >= 12


def _original_split_a_and_b(data, sent_ids, begin_idx, tot_len, rng):
    """bert_tf's split_a_and_b as it was at fd13b15: token-at-a-time loops that
    follow the original ``_split_a_and_b`` step by step (extend_target=True), and give the
    golden records (test_records_equal_the_original); the reference of the test below."""
    data_len = data.shape[0]
    if begin_idx + tot_len >= data_len:
        return None
    end_idx, cut_points = begin_idx + 1, []
    while end_idx < data_len:
        if sent_ids[end_idx] != sent_ids[end_idx - 1]:
            if end_idx - begin_idx >= tot_len:
                break
            cut_points.append(end_idx)
        end_idx += 1
    a_begin = begin_idx
    if len(cut_points) == 0 or rng.random() < 0.5:
        label = 0
        a_end = end_idx if len(cut_points) == 0 else rng.choice(cut_points)
        b_len = max(1, tot_len - (a_end - a_begin))
        b_begin = rng.randint(0, data_len - 1 - b_len)
        b_end = b_begin + b_len
        while b_begin > 0 and sent_ids[b_begin - 1] == sent_ids[b_begin]:
            b_begin -= 1
        while b_end < data_len - 1 and sent_ids[b_end - 1] == sent_ids[b_end]:
            b_end += 1
    else:
        label = 1
        a_end = rng.choice(cut_points)
        b_begin, b_end = a_end, end_idx
    while a_end - a_begin + b_end - b_begin > tot_len:
        if a_end - a_begin > b_end - b_begin:
            a_end -= 1
        else:
            b_end -= 1
    if a_end >= data_len or b_end >= data_len:
        return None
    return (data[a_begin:a_end], data[b_begin:b_end], label, data[a_begin + 1:a_end + 1],
            data[b_begin:b_end + 1])


@pytest.mark.parametrize("seed", range(4))
def test_split_a_and_b_equals_the_original_loops_with_long_sentences(seed):
    """Fresh round 3 (r3_xcpd_fsize): one 40,000-token sentence ran for minutes in the
    original's token-at-a-time loops (quadratic in its length); the numpy scans give the
    same segments, labels and random draws, also across sentences longer than the scan
    window (4096)."""
    import random as pyrandom
    rs = np.random.RandomState(seed)
    lengths = rs.choice([1, 2, 5, 30, 300, 5000, 9000], size=40)
    sent = np.concatenate([np.full(n, i % 2 == 1) for i, n in enumerate(lengths)])
    data = np.arange(len(sent))
    for begin, tot_len in [(int(b), int(t)) for b, t in zip(
            rs.randint(0, len(sent), 60), rs.choice([3, 64, 128, 6000], 60))]:
        ours_rng, theirs_rng = pyrandom.Random(begin), pyrandom.Random(begin)
        ours = xp.split_a_and_b(data, sent, begin, tot_len, ours_rng)
        theirs = _original_split_a_and_b(data, sent, begin, tot_len, theirs_rng)
        assert (ours is None) == (theirs is None), (begin, tot_len)
        if ours is not None:
            assert ours[2] == theirs[2], (begin, tot_len)
            for x, y in zip(ours[:2] + ours[3:], theirs[:2] + theirs[3:]):
                assert x.tolist() == y.tolist(), (begin, tot_len)
        assert ours_rng.random() == theirs_rng.random()  # the same draws were taken


def test_trimmed_lengths_by_hand():
    # (5, 3) to 6: A longer -> 4, 3 -> 3, 3 (2 steps); (3, 3) to 4: B, A -> 2, 2;
    # (2, 9) to 4: B down to 2 (7 steps) -> (2, 2); (4, 4) to 5: B, A, B -> 3, 2
    assert xp._trimmed_lengths(5, 3, 6) == (3, 3)
    assert xp._trimmed_lengths(3, 3, 4) == (2, 2)
    assert xp._trimmed_lengths(2, 9, 4) == (2, 2)
    assert xp._trimmed_lengths(4, 4, 5) == (3, 2)
    assert xp._trimmed_lengths(2, 2, 9) == (2, 2)


@pytest.mark.parametrize("overrides,message", [
    (dict(reuse_len=200), "--reuse_len=200"),
    (dict(seq_len=0), "^--seq_len=0 must be at least 5"),  # fresh round: it blamed --reuse_len
    (dict(seq_len=4, reuse_len=1), "^--seq_len=4 must be at least 5"),
    (dict(num_predict=140), "--num_predict=140 cannot be masked"),
    (dict(bsz_per_host=5), r"--bsz_per_host \(5\) to be a multiple of 2"),
    (dict(use_tpu=True, num_core_per_host=3), "multiple of --num_core_per_host=3"),
    (dict(task=1), "--task=1"),
    (dict(input_glob="nothing-*.txt"), "matches no file"),
])
def test_bad_flags_are_one_line_and_write_nothing(golden_workdir, sp_model, overrides, message):
    with pytest.raises(FlagError, match=message):
        xp.create_data(golden_args(**overrides), sp_model, random.Random(0))
    assert not (golden_workdir / "pretraining_data" / "tfrecords").exists() or not os.listdir(
        golden_workdir / "pretraining_data" / "tfrecords")


def test_corpus_too_small_for_one_batch(golden_workdir, sp_model):
    (golden_workdir / "small.txt").write_text("One short line.\n")
    with pytest.raises(InputDataError, match="give no batch of 4 rows"):
        xp.create_data(golden_args(input_glob="small.txt"), sp_model, random.Random(0))
    assert os.listdir(golden_workdir / "pretraining_data" / "tfrecords") == []


def test_spiece_without_the_special_symbols(tmp_path):
    import sentencepiece as spm
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(f"word{i} other{i % 7} text" for i in range(300)))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "plain"),
                                   vocab_size=30, minloglevel=2)
    sp = load_sp_model(str(tmp_path / "plain.model"))
    with pytest.raises(FlagError, match="<cls> is not id 3"):
        xp.check_special_symbols(sp, "plain.model")


def test_num_passes_write_each_pass(golden_workdir, golden, sp_model):
    """bert_tf's --num_passes: pass k is the original's --pass_id=k run (numpy seed k) with
    Python's random carried on."""
    infos = xp.create_data(golden_args(num_passes=2), sp_model, random.Random(20190619))
    assert [i["filenames"][0].split("/")[-1].split(".")[0] for i in infos] == [
        "train-0-0", "train-0-1"]
    first = decoded(str(golden_workdir / "pretraining_data" / "tfrecords" / GOLDEN_RECORDS))
    want = np.load(os.path.join(golden, "decoded_tfrecords.npz"))
    np.testing.assert_array_equal(np.array([r["is_masked"] for r in first]), want["is_masked"])
    second = decoded(infos[1]["filenames"][0])
    assert infos[1]["num_batch"] == 116 and len(second) == 464
    assert any(r["is_masked"] != w.tolist() for r, w in zip(second, want["is_masked"]))


@pytest.mark.parametrize("flag", ["mask_alpha", "mask_beta"])
def test_mask_alpha_or_beta_zero_is_refused_naming_the_flag(flag):
    # issue 27 item 4: --mask_alpha=0 was numpy's "a must be greater than 0" traceback.
    args = types.SimpleNamespace(bsz_per_host=4, num_core_per_host=1, use_tpu=False,
                                 mask_alpha=6, mask_beta=1, reuse_len=8, seq_len=16,
                                 num_predict=None, bi_data=False, task=0, num_task=1, pass_id=0)
    setattr(args, flag, 0)
    with pytest.raises(FlagError, match=f"^--{flag}=0: must be at least 1"):
        xp.check_args(args)
    setattr(args, flag, 1)
    assert xp.check_args(args) == 1


def test_mask_beta_above_mask_alpha_is_refused_naming_both_flags():
    # found by a new user: --mask_beta=10 (alpha 6) gave numpy's "a must be greater than 0"
    # traceback (a 1-token span's context 1 * 6 // 10 = 0) and an empty tfrecords/ folder
    args = types.SimpleNamespace(bsz_per_host=4, num_core_per_host=1, use_tpu=False,
                                 mask_alpha=6, mask_beta=7, reuse_len=8, seq_len=16,
                                 num_predict=None, bi_data=False, task=0, num_task=1, pass_id=0)
    with pytest.raises(FlagError, match="^--mask_beta=7: must not exceed --mask_alpha=6 "):
        xp.check_args(args)
    args.mask_beta = 6
    assert xp.check_args(args) == 1
    mask = xp.sample_mask([True] * 40, np.random.RandomState(0), mask_alpha=6, mask_beta=6,
                          goal_num_predict=8)
    assert mask.sum() == 8


def test_full_disk_leaves_neither_records_nor_their_info(golden_workdir, sp_model, monkeypatch):
    # issue 27 item 3, XLNet mode: the records and record_info JSON appear together or not
    from bert_tf.errors import OutputPathError
    from tests.test_full_disk import fail_writes_to
    fail_writes_to(monkeypatch, "train-0-0")
    with pytest.raises(OutputPathError, match=r"train-0-0\.bsz-4.*: cannot write it \(No "
                                              r"space left on device\)"):
        xp.create_data(golden_args(), sp_model, random.Random(20190619))
    folder = golden_workdir / "pretraining_data"
    assert not folder.exists() or [f for _, _, fs in os.walk(folder) for f in fs] == []


def test_non_utf8_input_is_dropped_with_a_warning_and_unreadable_is_one_line(
        golden_workdir, sp_model, monkeypatch, caplog):
    # issue 27 item 5: XLNet data on non-UTF-8 text was a UnicodeDecodeError trace.
    import logging
    from tests.data.test_text_lines import deny
    text = (golden_workdir / "sotu_pretrain.txt").read_bytes()
    (golden_workdir / "sotu_pretrain.txt").write_bytes(b"caf\xff\xfe here.\n" + text)
    with caplog.at_level(logging.WARNING):
        infos = xp.create_data(golden_args(), sp_model, random.Random(20190619))
    assert infos[0]["num_batch"] > 0
    assert "sotu_pretrain.txt:1: invalid UTF-8 byte(s) dropped" in caplog.text
    deny(monkeypatch, "sotu_pretrain.txt")
    with pytest.raises(InputDataError, match=r"^sotu_pretrain\.txt: cannot read it \(permission "
                                             r"denied\)$"):
        xp.create_data(golden_args(save_dir="other"), sp_model, random.Random(1))


@pytest.mark.parametrize("where,name,kind", [
    ("pretraining_data", "corpus_info.json", "folder"), ("pretraining_data", "tfrecords", "file"),
    ("pretraining_data/tfrecords", GOLDEN_RECORDS, "folder")])
def test_an_output_name_of_the_other_kind_is_refused_before_the_corpus_is_read(
        golden_workdir, sp_model, monkeypatch, where, name, kind):
    """Issue 27: a folder named like corpus_info.json or the records failed only after the
    corpus was encoded and the records written; a file named tfrecords was named as if the
    folder --save_dir were a file."""
    folder = golden_workdir / where
    folder.mkdir(parents=True)
    (folder / name).mkdir() if kind == "folder" else (folder / name).write_text("x")
    monkeypatch.setattr(xp, "encode_corpus_file",
                        lambda *a, **k: pytest.fail("the corpus must not be read"))
    written = "file" if kind == "folder" else "folder"
    with pytest.raises(FlagError) as e:
        xp.create_data(golden_args(), sp_model, random.Random(20190619))
    assert str(e.value) == (f"--save_dir={where}: {where}/{name} is a {kind}, but the run "
                            f"writes the {written} {name} there; remove or rename that {kind}")
    assert os.listdir(folder) == [name]
