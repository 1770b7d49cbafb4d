"""create_pretraining_data: golden runs of the original code, parallel == serial, bad inputs."""
import gzip
import json
import logging
import os
import random

import pytest

from bert_tf.data import (pretraining, pretraining_corpus, pretraining_instances,
                          pretraining_output, tfrecord)
from bert_tf.errors import ConfigError, FlagError, InputDataError
from bert_tf.tokenization.wordpiece import FullTokenizer

# The two runs of golden/bert/pretraining_data/flags.txt.
GOLDEN_RUNS = {
    "tf_examples": dict(dupe_factor=5, do_whole_word_mask=False),
    "tf_examples_wwm": dict(dupe_factor=2, do_whole_word_mask=True),
}
COMMON_FLAGS = dict(do_lower_case=True, max_seq_length=128, max_predictions_per_seq=20,
                    masked_lm_prob=0.15, random_seed=12345)


@pytest.fixture(scope="module")
def golden(golden_dir):
    folder = os.path.join(golden_dir, "bert", "pretraining_data")
    decoded = {}
    for name in GOLDEN_RUNS:
        with gzip.open(os.path.join(folder, name + ".decoded.jsonl.gz"), "rt") as f:
            decoded[name] = [json.loads(line) for line in f]
    return folder, decoded


@pytest.fixture(scope="module")
def tokenizer(uncased_vocab_file):
    return FullTokenizer(uncased_vocab_file, do_lower_case=True)


def test_golden_flags_are_the_ones_tested(golden):
    folder, decoded = golden
    with open(os.path.join(folder, "flags.txt")) as f:
        lines = f.read().splitlines()
    assert "--dupe_factor=5" in lines[0] and "--do_whole_word_mask" not in lines[0]
    assert "--dupe_factor=2" in lines[1] and "--do_whole_word_mask=True" in lines[1]
    for line in lines:
        for flag, value in COMMON_FLAGS.items():
            assert f"--{flag}={value}" in line
    assert len(decoded["tf_examples"]) == 60 and len(decoded["tf_examples_wwm"]) == 29


@pytest.mark.parametrize("name", sorted(GOLDEN_RUNS))
@pytest.mark.parametrize("num_workers", [1, 2])
def test_golden_runs_record_for_record(golden, uncased_vocab_file, tmp_path, name, num_workers):
    folder, decoded = golden
    out = str(tmp_path / "out.tfrecord")
    n = pretraining.create_pretraining_data(
        os.path.join(folder, "sample_text.txt"), out, uncased_vocab_file,
        num_workers=num_workers, **COMMON_FLAGS, **GOLDEN_RUNS[name])
    ours = list(tfrecord.read_examples(out))
    assert n == len(ours) == len(decoded[name])
    for i, (a, b) in enumerate(zip(ours, decoded[name])):
        assert a == b, f"record {i} differs"
    # The golden TFRecord itself decodes to the same records (feature types included).
    theirs = list(tfrecord.read_examples(os.path.join(folder, name + ".tfrecord")))
    assert theirs == ours
    assert all(isinstance(x, float) for r in ours for x in r["masked_lm_weights"])


def test_original_api_reproduces_golden(golden, tokenizer, tmp_path):
    folder, decoded = golden
    rng = random.Random(12345)
    instances = pretraining_instances.create_training_instances(
        [os.path.join(folder, "sample_text.txt")], tokenizer, max_seq_length=128, dupe_factor=2,
        short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=20, rng=rng,
        do_whole_word_mask=True)
    assert len(instances) == 29
    first = decoded["tf_examples_wwm"][0]
    n = sum(first["input_mask"])
    assert tokenizer.convert_tokens_to_ids(instances[0].tokens) == first["input_ids"][:n]
    assert instances[0].is_random_next == bool(first["next_sentence_labels"][0])
    out = str(tmp_path / "api.tfrecord")
    pretraining_output.write_instance_to_example_files(instances, tokenizer, 128, 20, [out])
    assert list(tfrecord.read_examples(out)) == decoded["tf_examples_wwm"]


def test_round_robin_over_output_files(golden, uncased_vocab_file, tmp_path):
    folder, decoded = golden
    outs = [str(tmp_path / f"shard{i}.tfrecord") for i in range(3)]
    pretraining.create_pretraining_data(
        os.path.join(folder, "sample_text.txt"), ",".join(outs), uncased_vocab_file,
        num_workers=2, **COMMON_FLAGS, **GOLDEN_RUNS["tf_examples"])
    for i, path in enumerate(outs):
        assert list(tfrecord.read_examples(path)) == decoded["tf_examples"][i::3]


def test_full_disk_leaves_no_output_file(golden, uncased_vocab_file, tmp_path, monkeypatch):
    # issue 27 item 3: a traceback, and the first file written without the second.
    from bert_tf.errors import OutputPathError
    from tests.test_full_disk import fail_writes_to
    folder, _ = golden
    outs = [str(tmp_path / f"shard{i}.tfrecord") for i in range(2)]
    with open(outs[0], "wb") as f:
        f.write(b"earlier")
    fail_writes_to(monkeypatch, "shard1")
    with pytest.raises(OutputPathError) as caught:
        pretraining.create_pretraining_data(
            os.path.join(folder, "sample_text.txt"), ",".join(outs), uncased_vocab_file,
            **COMMON_FLAGS, **GOLDEN_RUNS["tf_examples"])
    assert str(caught.value) == (f"{outs[1]}: cannot write it (No space left on device); "
                                 "nothing of it was kept")
    assert sorted(os.listdir(tmp_path)) == ["shard0.tfrecord"]
    assert open(outs[0], "rb").read() == b"earlier"


def _documents(store):
    return [[list(seg) for seg in doc] for doc in (store[d] for d in range(len(store)))]


def test_parallel_tokenization_equals_serial_with_many_chunks(golden, tokenizer,
                                                              uncased_vocab_file):
    folder, _ = golden
    path = os.path.join(folder, "sample_text.txt")
    serial = pretraining_corpus.read_documents([path, path], tokenizer, num_workers=1)
    parallel = pretraining_corpus.read_documents([path, path], tokenizer, num_workers=2,
                                          vocab_file=uncased_vocab_file, lines_per_chunk=3)
    assert _documents(parallel) == _documents(serial)
    # sample_text.txt: 3 documents; its last line is not blank, so with the file read twice the
    # third document runs on into the first document of the second copy (no break between files).
    assert len(serial) == 5
    assert serial.num_tokens == 2 * 1019


def _write(path, data: bytes):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_document_building_rules(tokenizer, tmp_path):
    # blank and whitespace-only (incl. NBSP, tab) lines break documents; a control-character
    # line gives no token and is NOT a break; \r is stripped; no break between files.
    a = _write(tmp_path / "a.txt", "hello world\r\n\n \t\u00a0\nhow are you\n\x05\x06\nfine\n"
               .encode("utf-8"))
    b = _write(tmp_path / "b.txt", b"thanks\n\n\nbye")
    docs = _documents(pretraining_corpus.read_documents([a, b], tokenizer))
    assert docs == [[["hello", "world"]], [["how", "are", "you"], ["fine"], ["thanks"]],
                    [["bye"]]]


def test_invalid_utf8_dropped_with_warning(tokenizer, tmp_path, caplog):
    bad = _write(tmp_path / "bad.txt", b"good line\nca\xff\xfet here\n")
    with caplog.at_level(logging.WARNING):
        docs = _documents(pretraining_corpus.read_documents([bad], tokenizer))
    assert docs == [[["good", "line"], ["cat", "here"]]]
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(bad in m and "line 2" in m and "UTF-8" in m for m in messages), messages


def test_one_sentence_documents_are_random_next(uncased_vocab_file, tmp_path):
    src = _write(tmp_path / "one.txt", b"the only sentence of the first document .\n\n"
                 b"a lonely second document .\n")
    out = str(tmp_path / "one.tfrecord")
    n = pretraining.create_pretraining_data(src, out, uncased_vocab_file, dupe_factor=3)
    records = list(tfrecord.read_examples(out))
    assert n == len(records) == 6  # one instance per document and pass
    assert all(r["next_sentence_labels"] == [1] for r in records)


def test_single_document_single_sentence_corpus(uncased_vocab_file, tmp_path):
    # The random document is this same document after 10 tries (spec 5.4): B == A.
    src = _write(tmp_path / "one.txt", b"hello world\n")
    out = str(tmp_path / "one.tfrecord")
    pretraining.create_pretraining_data(src, out, uncased_vocab_file, dupe_factor=1,
                                        masked_lm_prob=0.0, max_predictions_per_seq=1)
    (rec,) = list(tfrecord.read_examples(out))
    # [CLS] hello world [SEP] hello world [SEP]; one prediction (max(1, round(7 * 0)) = 1).
    real = rec["input_ids"][:7]
    assert [real[0], real[3], real[6]] == [101, 102, 102]
    assert sum(rec["input_mask"]) == 7
    assert rec["segment_ids"][:8] == [0, 0, 0, 0, 1, 1, 1, 0]
    assert rec["masked_lm_weights"] == [1.0]
    hello, world = 7592, 2088
    pos = rec["masked_lm_positions"][0]
    assert rec["masked_lm_ids"] == [[None, hello, world, None, hello, world, None][pos]]


def test_no_documents(uncased_vocab_file, tmp_path):
    src = _write(tmp_path / "empty.txt", b"\n  \n\x05\n")
    with pytest.raises(InputDataError, match="no document"):
        pretraining.create_pretraining_data(src, str(tmp_path / "o.tfrecord"), uncased_vocab_file)
    assert not os.path.exists(tmp_path / "o.tfrecord")


def test_missing_input_names_pattern(uncased_vocab_file, tmp_path):
    good = _write(tmp_path / "x.txt", b"hello\n")
    pattern = str(tmp_path / "nothing*.txt")
    with pytest.raises(InputDataError, match="nothing\\*.txt"):
        pretraining.create_pretraining_data(f"{good},{pattern}", str(tmp_path / "o.tfrecord"),
                                            uncased_vocab_file)


def test_globs_and_comma_lists(tokenizer, tmp_path):
    _write(tmp_path / "p2.txt", b"two\n")
    _write(tmp_path / "p1.txt", b"one\n")
    other = _write(tmp_path / "q.txt", b"three\n")
    files = pretraining_corpus.expand_input_patterns(f"{tmp_path}/p*.txt, {other}")
    assert files == [str(tmp_path / "p1.txt"), str(tmp_path / "p2.txt"), other]


def test_folder_as_input_file_is_named_as_a_folder(tmp_path):
    # Found with --input_file=<a folder>: it said "matches no file", as for a missing file.
    with pytest.raises(InputDataError, match=r"matches only folders"):
        pretraining_corpus.expand_input_patterns(str(tmp_path))
    with pytest.raises(InputDataError, match=r"'[^']*nothing\.txt' matches no file"):
        pretraining_corpus.expand_input_patterns(str(tmp_path / "nothing.txt"))


def test_a_file_name_holding_brackets_says_they_are_a_glob_class(tmp_path):
    """Fresh round (cpd_glob_chars_name): --input_file=text[1].txt (an existing file) said only
    "matches no file"; the glob reads [1] as a class, as the original's tf.gfile.Glob does."""
    path = _write(tmp_path / "text[1].txt", b"one\n")
    with pytest.raises(InputDataError) as e:
        pretraining_corpus.expand_input_patterns(path)
    assert str(e.value) == (
        f"input pattern {path!r} matches no file; a file of that very name exists, but its "
        "'[...]' is read as a glob character class (as the original's tf.gfile.Glob): rename "
        "it, or write '[' as '[[]'")
    escaped = str(tmp_path / "text[[]1].txt")
    assert pretraining_corpus.expand_input_patterns(escaped) == [path]


def test_vocab_without_mask(tmp_path):
    vocab = _write(tmp_path / "vocab.txt", b"[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n")
    src = _write(tmp_path / "x.txt", b"hello\n")
    with pytest.raises(ConfigError, match=r"vocab\.txt.*\[MASK\]"):
        pretraining.create_pretraining_data(src, str(tmp_path / "o.tfrecord"), vocab)


def test_max_predictions_warning(uncased_vocab_file, tmp_path, caplog):
    src = _write(tmp_path / "x.txt", b"hello world\n\nbye world\n")
    with caplog.at_level(logging.WARNING):
        pretraining.create_pretraining_data(src, str(tmp_path / "o.tfrecord"), uncased_vocab_file,
                                            max_seq_length=512, max_predictions_per_seq=20,
                                            dupe_factor=1)
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "max_predictions_per_seq=20" in text and "= 77" in text  # round(512 * 0.15) = 77


@pytest.mark.parametrize("kwargs, flag", [
    (dict(max_seq_length=4), "max_seq_length"), (dict(dupe_factor=0), "dupe_factor"),
    (dict(masked_lm_prob=1.5), "masked_lm_prob"), (dict(num_workers=0), "num_workers")])
def test_bad_flags(uncased_vocab_file, tmp_path, kwargs, flag):
    src = _write(tmp_path / "x.txt", b"hello\n")
    with pytest.raises(FlagError, match=flag):
        pretraining.create_pretraining_data(src, str(tmp_path / "o.tfrecord"), uncased_vocab_file,
                                            **kwargs)


# --- hand-worked algorithm checks with a scripted rng ------------------------------------------

class ScriptedRng:
    """Returns the scripted values in order; shuffle() leaves the list as it is."""

    def __init__(self, randoms=(), randints=()):
        self.randoms, self.randints = list(randoms), list(randints)
        self.calls = []

    def random(self):
        self.calls.append("random")
        return self.randoms.pop(0)

    def randint(self, a, b):
        self.calls.append(("randint", a, b))
        value = self.randints.pop(0)
        assert a <= value <= b
        return value

    def shuffle(self, x):
        self.calls.append(("shuffle", len(x)))


def test_truncate_seq_pair_hand_worked():
    a, b = list("abcde"), list("xyz")
    rng = ScriptedRng(randoms=[0.1, 0.9, 0.2])
    pretraining_instances.truncate_seq_pair(a, b, 5, rng)
    # 8 > 5: a longer, 0.1 < 0.5 -> drop a's first; 7: a (4) longer, 0.9 -> drop a's last;
    # 6: tie 3/3 -> b, 0.2 -> drop b's first.
    assert a == list("bcd") and b == list("yz")
    assert rng.calls == ["random"] * 3


def _truncate_one_token_at_a_time(tokens_a, tokens_b, max_num_tokens, rng):
    """The original create_pretraining_data.py truncate_seq_pair, restated (quadratic)."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


@pytest.mark.parametrize("seed", range(40))
def test_truncate_seq_pair_equals_the_original_loop(seed):
    r = random.Random(seed)
    a = list(range(r.randint(0, 400)))
    b = list(range(1000, 1000 + r.randint(1, 400)))
    max_num_tokens = r.randint(1, 300)
    slow_a, slow_b, slow_rng = list(a), list(b), random.Random(seed + 99)
    _truncate_one_token_at_a_time(slow_a, slow_b, max_num_tokens, slow_rng)
    rng = random.Random(seed + 99)
    pretraining_instances.truncate_seq_pair(a, b, max_num_tokens, rng)
    assert (a, b) == (slow_a, slow_b)
    assert rng.random() == slow_rng.random()  # as many draws


def test_truncate_seq_pair_is_linear_in_the_length():
    # issue 15: a one-line 10 MB document (2.6 M tokens) hung the original's loop; 400k
    # tokens took ~35 s there (one del tokens[0] per removed token).
    import time
    a, b = list(range(400_000)), list(range(5))
    start = time.process_time()
    pretraining_instances.truncate_seq_pair(a, b, 125, random.Random(3))
    assert time.process_time() - start < 3.0
    assert len(a) + len(b) == 125 and len(b) == 5
    # kept tokens are a contiguous run of the original list
    assert a == list(range(a[0], a[0] + 120))


def test_masking_hand_worked_whole_word():
    tokens = ["[CLS]", "phil", "##am", "##mon", "is", "[SEP]", "##x", "here", "[SEP]"]
    vocab_words = ["v0", "v1", "v2"]
    # candidates (WWM): [1,2,3], [4], [6] ("##x" after [SEP] joins "is"), [7] -> [[1,2,3],[4,6],[7]]
    # num_to_predict = min(20, max(1, round(9 * 0.5))) = round(4.5) = 4 (half to even).
    rng = ScriptedRng(randoms=[0.5, 0.85, 0.3, 0.9, 0.7, 0.1], randints=[2])
    out, positions, labels = pretraining_instances.create_masked_lm_predictions(
        tokens, 0.5, 20, vocab_words, rng, do_whole_word_mask=True)
    # [1,2,3]: 0.5 -> [MASK]; 0.85 then 0.3 -> keep "##am"; 0.9 then 0.7 -> vocab_words[2].
    # [4,6]: 3 + 2 > 4 -> skipped. [7]: 0.1 -> [MASK]. 4 predictions.
    assert out == ["[CLS]", "[MASK]", "##am", "v2", "is", "[SEP]", "##x", "[MASK]", "[SEP]"]
    assert positions == [1, 2, 3, 7]
    assert labels == ["phil", "##am", "##mon", "here"]
    assert rng.calls[0] == ("shuffle", 3)


def test_masking_count_rounds_half_to_even():
    tokens = ["[CLS]"] + ["w"] * 28 + ["[SEP]"]  # len 30, 30 * 0.15 = 4.5 -> 4 in Python 3
    rng = ScriptedRng(randoms=[0.0] * 10)
    _, positions, _ = pretraining_instances.create_masked_lm_predictions(tokens, 0.15, 20, ["w"],
                                                                         rng)
    assert positions == [1, 2, 3, 4]


@pytest.mark.parametrize("num_workers", [1, 2])
def test_vocab_without_unk_names_vocab_and_line(tmp_path, num_workers):
    vocab = _write(tmp_path / "vocab.txt", b"[PAD]\n[CLS]\n[SEP]\n[MASK]\nhello\n")
    src = _write(tmp_path / "x.txt", b"hello\nhello zebra\n")
    with pytest.raises(ConfigError, match=r"vocab\.txt: token '\[UNK\]' \(from .*x\.txt line 2\)"):
        pretraining.create_pretraining_data(src, str(tmp_path / "o.tfrecord"), vocab,
                                            num_workers=num_workers)


@pytest.mark.slow
def test_root_script(golden, uncased_vocab_file, tmp_path):
    import subprocess
    import sys
    folder, decoded = golden
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(repo, "create_pretraining_data.py")
    out = str(tmp_path / "wwm.tfrecord")
    args = [sys.executable, script, f"--input_file={os.path.join(folder, 'sample_text.txt')}",
            f"--output_file={out}", f"--vocab_file={uncased_vocab_file}", "--dupe_factor=2",
            "--do_whole_word_mask=True", "--num_workers=2"]
    subprocess.run(args, check=True, capture_output=True)
    assert list(tfrecord.read_examples(out)) == decoded["tf_examples_wwm"]
    bad = subprocess.run(args[:2] + [f"--input_file={tmp_path}/none*.txt"] + args[3:],
                         capture_output=True, text=True)
    assert bad.returncode == 1
    assert "error: input pattern" in bad.stderr and "none*.txt" in bad.stderr


def test_a_file_size_limit_is_one_line_and_leaves_no_output(golden, uncased_vocab_file,
                                                            tmp_path):
    """Fresh round 3 (r3_cpd_fsize): under `ulimit -f 16` the spill file's write failed with
    two chained tracebacks (OSError: [Errno 27] File too large)."""
    import resource
    import subprocess
    import sys
    folder, _ = golden
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = tmp_path / "out" / "lm.tfrecord"
    limit = 16 * 1024  # bytes; the 60 instances of dupe_factor 5 take about 36 kB

    def limit_file_size():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, os.path.join(repo, "create_pretraining_data.py"),
         f"--input_file={os.path.join(folder, 'sample_text.txt')}", f"--output_file={out}",
         f"--vocab_file={uncased_vocab_file}", "--dupe_factor=5"],
        capture_output=True, text=True, preexec_fn=limit_file_size, timeout=300,
        env=dict(os.environ, PYTHONPATH=repo))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"error: {out}: cannot write the instances' temporary file in "
                    f"{out.parent} (File too large); no output file was written")
    assert os.listdir(out.parent) == []


@pytest.mark.parametrize("name,num_workers", [("tf_examples", 1), ("tf_examples_wwm", 1),
                                              ("tf_examples", 2)])
def test_golden_runs_byte_for_byte(golden, uncased_vocab_file, tmp_path, name, num_workers,
                                   monkeypatch):
    # The whole file, framing and the map order of every record, equals the original's
    # (with workers really used for the small input).
    monkeypatch.setattr(pretraining, "MIN_INPUT_BYTES_FOR_WORKERS", 0)
    folder, _ = golden
    out = tmp_path / "out.tfrecord"
    pretraining.create_pretraining_data(
        os.path.join(folder, "sample_text.txt"), str(out), uncased_vocab_file,
        num_workers=num_workers, **COMMON_FLAGS, **GOLDEN_RUNS[name])
    with open(os.path.join(folder, name + ".tfrecord"), "rb") as f:
        assert out.read_bytes() == f.read()


def test_original_api_writes_the_golden_bytes(golden, tokenizer, tmp_path):
    folder, _ = golden
    rng = random.Random(12345)
    instances = pretraining_instances.create_training_instances(
        [os.path.join(folder, "sample_text.txt")], tokenizer, 128, 5, 0.1, 0.15, 20, rng)
    out = tmp_path / "out.tfrecord"
    pretraining_output.write_instance_to_example_files(instances, tokenizer, 128, 20, [str(out)])
    with open(os.path.join(folder, "tf_examples.tfrecord"), "rb") as f:
        assert out.read_bytes() == f.read()


def test_record_builder_parses_to_instance_to_example(tokenizer):
    # The bytes decode to the same message instance_to_example builds (tf.train.Example).
    import tensorflow as tf
    inst = pretraining_instances.TrainingInstance(
        tokens=["[CLS]", "the", "[MASK]", "[SEP]", "dog", "[SEP]"],
        segment_ids=[0, 0, 0, 0, 1, 1], masked_lm_positions=[2], masked_lm_labels=["cat"],
        is_random_next=True)
    builder = pretraining_output.RecordBuilder(max(tokenizer.vocab.values()), 8, 3)
    data = builder.from_instance(inst, tokenizer.vocab)
    assert tf.train.Example.FromString(data) == pretraining_output.instance_to_example(
        inst, tokenizer.vocab, 8, 3)
    with pytest.raises(ValueError, match="max_seq_length 5"):
        pretraining_output.RecordBuilder(30521, 5, 3).from_instance(inst, tokenizer.vocab)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 9, 64, 65, 126, 127, 128, 129, 500])
def test_inline_shuffle_equals_random_shuffle(n):
    a, b = random.Random(n), random.Random(n)
    x, y = list(range(n)), list(range(n))
    a.shuffle(x)
    pretraining._inline_shuffle(b, y, [m.bit_length() for m in range(n + 2)])
    assert x == y and a.getstate() == b.getstate()


def test_local_run_imports_no_tensorflow(golden, uncased_vocab_file, tmp_path):
    # The root script's path on local files never imports TensorFlow (~5 CPU s, issue 16).
    import subprocess
    import sys
    folder, _ = golden
    code = ("import sys\nfrom bert_tf.data import pretraining\n"
            f"pretraining.create_pretraining_data({os.path.join(folder, 'sample_text.txt')!r}, "
            f"{str(tmp_path / 'o.tfrecord')!r}, {uncased_vocab_file!r}, dupe_factor=1)\n"
            "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": root}, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_small_input_tokenizes_in_this_process(golden, uncased_vocab_file, tmp_path,
                                               monkeypatch, caplog):
    folder, _ = golden
    made = []
    real = pretraining.make_worker_pool
    monkeypatch.setattr(pretraining, "make_worker_pool",
                        lambda n, *a: made.append(n) or real(n, *a))
    with caplog.at_level(logging.INFO):
        pretraining.create_pretraining_data(
            os.path.join(folder, "sample_text.txt"), str(tmp_path / "o.tfrecord"),
            uncased_vocab_file, num_workers=2, dupe_factor=1)
    assert made == [1]
    assert "num_workers=2: the input is 0.0 MB (< 16 MB), tokenizing in this process" \
        in caplog.text


def test_an_output_file_named_twice_is_refused(tmp_path):
    """Fresh round 2 (cpd_out_dup): --output_file=a,a wrote both round-robin shares into one
    file (the second writer replaced the first: 9 of the 18 instances logged as written)."""
    from bert_tf.data.pretraining_output import split_output_files
    a = str(tmp_path / "a.tfrecord")
    with pytest.raises(FlagError, match=r"--output_file names .*a\.tfrecord twice"):
        split_output_files(f"{a},{tmp_path}/./a.tfrecord")
    assert split_output_files(f"{a}, {tmp_path / 'b.tfrecord'}") == [a, str(tmp_path / "b.tfrecord")]
    assert not os.listdir(tmp_path)
