"""extract_features continues an interrupted run (issue 15 item 5): complete chunks survive,
a rerun with the same flags resumes after them and writes the bytes of an uninterrupted run;
a rerun with other flags starts over and says so."""
import json
import os

import pytest

from bert_tf import resumable_files
from bert_tf.errors import InputDataError
from bert_tf.tasks import feature_extraction
from bert_tf.tasks.feature_extraction import ExtractFeaturesArgs, extract_features

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
    for module in (resumable_files, feature_extraction):
        monkeypatch.setattr(module.logging, "warning", lambda fmt, *a: seen.append(fmt % a))
    return seen


def _interrupt_at(monkeypatch, line_number, exc):
    real, calls = feature_extraction.feature_json_line, []

    def line(*args):
        calls.append(1)
        if len(calls) == line_number:
            raise exc
        return real(*args)
    monkeypatch.setattr(feature_extraction, "feature_json_line", line)


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
    assert summary["num_lines"] == LINES
    assert out.read_bytes() == ref.read_bytes()
    assert (tmp_path / "run" / "out.jsonl.embeddings.jsonl").read_bytes() == \
        (tmp_path / "ref" / "out.jsonl.embeddings.jsonl").read_bytes()
    assert sorted(os.listdir(out.parent)) == ["out.jsonl", "out.jsonl.embeddings.jsonl"]


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


def test_bad_input_mid_run_leaves_nothing(minilm_checkpoint_dir, tmp_path, monkeypatch,
                                          warnings):
    (tmp_path / "in.txt").write_text("".join(f"short line {i}\n" for i in range(70)))
    with monkeypatch.context() as mp:
        _interrupt_at(mp, 66, InputDataError("in.txt line 66: bad"))
        with pytest.raises(InputDataError):
            extract_features(_args(minilm_checkpoint_dir, tmp_path, tmp_path / "o.jsonl"))
    assert sorted(os.listdir(tmp_path)) == ["in.txt"]
