"""extract_features continues an interrupted run (issue 15 item 5): complete chunks survive,
a rerun with the same flags resumes after them and writes the bytes of an uninterrupted run;
a rerun with other flags starts over and says so."""
import json
import os
from types import SimpleNamespace

import numpy as np
import pytest

from bert_tf import resumable_files
from bert_tf.errors import InputDataError
from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features
from bert_tf.run import feature_lines
from bert_tf.run.feature_lines import write_feature_lines
from bert_tf.data.text_lines import TextExample

LINES = 150  # batch_size 1: chunks of 64 lines, so two complete chunks and one of 22


def _args(ckpt_dir, tmp_path, out, **kw):
    base = dict(input_file=str(tmp_path / "in.txt"), output_file=str(out),
                bert_config_file=os.path.join(ckpt_dir, "bert_config.json"),
                vocab_file=os.path.join(ckpt_dir, "vocab.txt"),
                init_checkpoint=os.path.join(ckpt_dir, "bert_model.ckpt"),
                layers="-1", max_seq_length=16, batch_size=1, pooling="mean")
    base.update(kw)
    return ExtractFeaturesArgs(**base)


@pytest.fixture
def warnings(monkeypatch):
    seen = []
    for module in (resumable_files, feature_lines):
        monkeypatch.setattr(module.logging, "warning", lambda fmt, *a: seen.append(fmt % a))
    return seen


def _interrupt_at(monkeypatch, line_number, exc):
    real, calls = feature_lines.feature_json_line, []

    def line(*args):
        calls.append(1)
        if len(calls) == line_number:
            raise exc
        return real(*args)
    monkeypatch.setattr(feature_lines, "feature_json_line", line)


@pytest.mark.slow  # three MiniLM runs over 150 lines (~90 s on the shared machine)
def test_interrupted_run_resumes_to_the_uninterrupted_bytes(minilm_checkpoint_dir, tmp_path,
                                                            monkeypatch, warnings):
    text = "".join(f"line number {i} of the input ||| and its pair {i % 7}\n"
                   for i in range(LINES))
    (tmp_path / "in.txt").write_text(text)
    ref = tmp_path / "ref" / "out.jsonl"
    ref.parent.mkdir()
    extract_features(_args(minilm_checkpoint_dir, tmp_path, ref))
    out = tmp_path / "run" / "out.jsonl"
    out.parent.mkdir()
    with monkeypatch.context() as mp:  # Ctrl-C while writing line 100 (in the 2nd chunk)
        _interrupt_at(mp, 100, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            extract_features(_args(minilm_checkpoint_dir, tmp_path, out))
    partial = str(out) + ".partial"
    assert sorted(os.listdir(out.parent)) == ["out.jsonl.embeddings.jsonl.partial",
                                              "out.jsonl.partial", "out.jsonl.partial.state.json"]
    with open(partial) as f:
        kept = f.readlines()
    assert len(kept) == 99  # 64 checkpointed + 35 of the cut chunk
    assert [json.loads(x)["linex_index"] for x in kept[:64]] == list(range(64))
    assert json.load(open(str(out) + ".partial.state.json"))["done"] == 64
    assert warnings == [f"{partial}: 64 complete lines kept; rerun the same command to "
                        f"continue after them"]
    warnings.clear()
    summary = extract_features(_args(minilm_checkpoint_dir, tmp_path, out))
    assert warnings == [f"resuming {out} after 64 lines written by an interrupted run with the "
                        f"same flags and inputs"]
    assert summary.num_lines == LINES
    assert out.read_bytes() == ref.read_bytes()
    assert (tmp_path / "run" / "out.jsonl.embeddings.jsonl").read_bytes() == \
        (tmp_path / "ref" / "out.jsonl.embeddings.jsonl").read_bytes()
    assert sorted(os.listdir(out.parent)) == ["out.jsonl", "out.jsonl.embeddings.jsonl"]


@pytest.mark.slow  # two MiniLM runs (~60 s on the shared machine)
def test_rerun_with_other_flags_starts_over(minilm_checkpoint_dir, tmp_path, monkeypatch,
                                            warnings):
    (tmp_path / "in.txt").write_text("".join(f"short line {i}\n" for i in range(70)))
    out = tmp_path / "out.jsonl"
    with monkeypatch.context() as mp:
        _interrupt_at(mp, 66, RuntimeError("crash"))
        with pytest.raises(RuntimeError):
            extract_features(_args(minilm_checkpoint_dir, tmp_path, out, pooling="none"))
    warnings.clear()
    extract_features(_args(minilm_checkpoint_dir, tmp_path, out, pooling="none",
                           layers="-1,-2"))
    assert warnings == [f"{out}.partial: an interrupted run with other flags or inputs "
                        f"(--layers differ); starting over"]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["linex_index"] for x in lines] == list(range(70))
    assert [layer["index"] for layer in lines[0]["features"][0]["layers"]] == [-1, -2]


@pytest.mark.slow  # one MiniLM run (~35 s on the shared machine)
def test_bad_input_mid_run_leaves_nothing(minilm_checkpoint_dir, tmp_path, monkeypatch,
                                          warnings):
    (tmp_path / "in.txt").write_text("".join(f"short line {i}\n" for i in range(70)))
    with monkeypatch.context() as mp:
        _interrupt_at(mp, 66, InputDataError("in.txt line 66: bad"))
        with pytest.raises(InputDataError):
            extract_features(_args(minilm_checkpoint_dir, tmp_path, tmp_path / "o.jsonl"))
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]


# ---- the same on write_feature_lines with a stand-in model (fast) ---------------------------

def _examples(n):
    return [TextExample(unique_id=i, text_a=f"w{i} " * (1 + i % 5), text_b=None)
            for i in range(n)]


def _featurize(ex):
    tokens = ["[CLS]"] + ex.text_a.split() + ["[SEP]"]
    return SimpleNamespace(tokens=tokens, input_ids=list(range(len(tokens))))


def _run_batch(batch):
    """A stand-in model: each token's value depends on its example and position only."""
    out = []
    for f in batch:
        n = len(f.input_ids)
        values = np.arange(n * 2, dtype=np.float32).reshape(1, n, 2) / (n + 1)
        out.append((values, values[0], np.ones(n, bool)))
    return out


def _write(out, n=300, key=None, interrupt_at=None, exc=KeyboardInterrupt, pooling="mean"):
    calls = []

    def run_batch(batch):
        calls.append(1)
        if interrupt_at is not None and len(calls) == interrupt_at:
            raise exc("stop")
        return _run_batch(batch)
    return write_feature_lines(_examples(n), _featurize, run_batch, [-1], str(out), 2,
                               pooling, resume_key=key or {"--layers": "-1"})


def test_fake_model_resume_gives_the_uninterrupted_bytes(tmp_path, warnings):
    # batch_size 2: chunks of 128 lines; batch 100 is in the 2nd chunk
    _write(tmp_path / "ref.jsonl")
    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        _write(out, interrupt_at=100)
    state = json.load(open(f"{out}.partial.state.json"))
    assert state["done"] == 128 and state["key"] == {"--layers": "-1", "chunk_size": 128}
    with open(f"{out}.partial", "a") as f:
        f.write('{"linex_index": 128, "feat')  # a line cut by a kill -9
    warnings.clear()
    summary = _write(out)
    assert warnings == [f"resuming {out} after 128 lines written by an interrupted run with "
                        f"the same flags and inputs"]
    assert summary["num_lines"] == 300
    # line i has 2 + 1 + i % 5 tokens: 600 + 60 * 15 = 1500 in all, 256 + 25 * 15 + 6 = 637
    # in the 128 lines resumed; the speed is this process's: 863 tokens in its seconds
    # (fresh-user round of 2026-12-03: the resumed lines counted, 1.7x the real speed)
    assert summary["num_tokens"] == 1500
    assert summary["tokens_per_second"] * summary["seconds"] == pytest.approx(863)
    assert out.read_bytes() == (tmp_path / "ref.jsonl").read_bytes()
    assert (tmp_path / "out.jsonl.embeddings.jsonl").read_bytes() == \
        (tmp_path / "ref.jsonl.embeddings.jsonl").read_bytes()
    assert sorted(os.listdir(tmp_path)) == ["out.jsonl", "out.jsonl.embeddings.jsonl",
                                            "ref.jsonl", "ref.jsonl.embeddings.jsonl"]


def test_fake_model_other_key_or_no_state_starts_over(tmp_path, warnings):
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        _write(out, interrupt_at=70, exc=RuntimeError)
    warnings.clear()
    _write(out, n=10, key={"--layers": "-1,-2"})
    assert warnings == [f"{out}.partial: an interrupted run with other flags or inputs "
                        f"(--layers differ); starting over"]
    assert len(out.read_text().splitlines()) == 10
    (tmp_path / "out.jsonl.partial").write_text("left before the first chunk\n")
    warnings.clear()
    _write(out, n=10, pooling="none")
    assert warnings == [f"{out}.partial: no state file beside it (interrupted before its "
                        f"first complete piece); starting over"]
    assert [json.loads(x)["linex_index"] for x in out.read_text().splitlines()] == \
        list(range(10))


def test_fake_model_bad_input_mid_run_leaves_nothing(tmp_path):
    with pytest.raises(InputDataError):
        _write(tmp_path / "o.jsonl", interrupt_at=70, exc=InputDataError)
    assert os.listdir(tmp_path) == []


def test_lines_cut_to_max_seq_length_are_counted(tmp_path):
    """issue 15 item 10 for extract_features: 'a b c a b c' is 6 tokens + [CLS]/[SEP] = 8 > 5."""
    from bert_tf.data.sequence_pairs import TruncationCount
    from bert_tf.bert.tasks.feature_extraction import _featurize
    from bert_tf.tokenization.wordpiece import FullTokenizer
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\nb\nc\n")
    tokenizer = FullTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=True)
    count = TruncationCount(5)
    f = _featurize(TextExample(0, "a b c a b c", None), tokenizer, 5, count)
    assert f.tokens == ["[CLS]", "a", "b", "c", "[SEP]"]
    _featurize(TextExample(1, "a", "b"), tokenizer, 5, count)  # 5 tokens: not cut
    assert count.summary("lines") == ("1 of 2 lines were truncated to --max_seq_length=5 (the "
                                      "longest had 8 tokens with [CLS]/[SEP])")


def test_fake_model_full_disk_is_one_line_and_frees_the_partial_files(tmp_path, monkeypatch):
    # issue 27 item 3: a full disk was a traceback and the .partial files kept the disk full.
    import errno
    from bert_tf.errors import OutputPathError
    from bert_tf.resumable_files import ResumableOutputs
    (tmp_path / "o.jsonl").write_text("an earlier run's output\n")
    real = ResumableOutputs.checkpoint

    def checkpoint(self, done, extra=None):
        if done > 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, done, extra)
    monkeypatch.setattr(ResumableOutputs, "checkpoint", checkpoint)
    with pytest.raises(OutputPathError) as caught:
        _write(tmp_path / "o.jsonl")
    assert str(caught.value) == (f"{tmp_path / 'o.jsonl'}: cannot write it (No space left on "
                                 "device); nothing of it was kept")
    assert sorted(os.listdir(tmp_path)) == ["o.jsonl"]
    assert (tmp_path / "o.jsonl").read_text() == "an earlier run's output\n"


def test_empty_input_keeps_the_earlier_output(tmp_path):
    # issue 27 item 7: an empty input replaced the earlier output (and embeddings) by empty
    # files. Refused now, both kept; without an earlier output the empty files are written.
    out = tmp_path / "out.jsonl"
    _write(out, n=5)
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    for key in (None, {"--layers": "-2"}):
        with pytest.raises(InputDataError, match=f"--input_file holds no line: refusing to "
                                                 f"replace the earlier {out} with an empty"):
            _write(out, n=0, key=key)
        assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before
    fresh = tmp_path / "fresh" / "out.jsonl"
    fresh.parent.mkdir()
    assert _write(fresh, n=0)["num_lines"] == 0
    assert fresh.read_bytes() == b"" and sorted(os.listdir(fresh.parent)) == [
        "out.jsonl", "out.jsonl.embeddings.jsonl"]
