"""RACE examples and features (original XLNet run_race.py, spec xlnet.md 5.5, 10) against the
features the original cached (tests/golden/xlnet_squad/race, README "race/")."""

import gzip
import json
import os

import pytest

from bert_tf.xlnet.data import race as xr
from bert_tf.errors import InputDataError
from bert_tf.tokenization.sentencepiece_prepro import load_sp_model


@pytest.fixture(scope="module")
def race(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad", "race")


@pytest.fixture(scope="module")
def sp_model(shared_data_dir):
    return load_sp_model(os.path.join(shared_data_dir, "xlnet", "spiece.model"))


def golden_records(race):
    with gzip.open(os.path.join(race, "features.jsonl.gz"), "rt") as f:
        return [json.loads(line) for line in f]


def flat(choices):
    return [v for choice in choices for v in choice]


def test_features_equal_the_original(race, sp_model):
    examples = xr.read_race_examples(os.path.join(race, "RACE"), "dev")
    assert len(examples) == 34
    by_key = {(os.path.relpath(e.path, os.path.join(race, "RACE")), e.question_index): e
              for e in examples}
    records = golden_records(race)
    real = [r for r in records if not r.get("padding_example")]
    assert len(real) == 34 and len(records) == 36
    mutated = 0
    for record in real:
        example = by_key[(record["file"], record["question_index"])]
        assert example.qa_list == record["qa_list"] and example.label == record["label"]
        feature = xr.convert_example(example, sp_model, max_seq_length=128, max_qa_length=32)
        for key in ("input_ids", "input_mask", "segment_ids"):
            assert feature[key] == flat(record[key]), (record["file"], key)
        assert feature["label_id"] == record["label_id"]
        clean = xr.convert_example(example, sp_model, 128, 32, mutate_context=False)
        mutated += sum(clean["input_ids"][k * 128:(k + 1) * 128]
                       != feature["input_ids"][k * 128:(k + 1) * 128] for k in range(4))
    assert mutated == 15  # README: 15 choices (articles 13-14) carry earlier choices' tokens
    pad = next(r for r in records if r.get("padding_example"))
    padding = xr.padding_feature(128)
    for key in ("input_ids", "input_mask", "segment_ids"):
        assert padding[key] == flat(pad[key])


def test_intended_layout_by_hand(sp_model):
    """mutate_context=False: every choice is context <sep> qa <sep> <cls> from the clean
    context, left-padded (id 0, mask 1, segment 4)."""
    example = xr.RaceExample("Hello world.", ["Q a", "Q b", "Q c", "Q d"], 2, "middle")
    f = xr.convert_example(example, sp_model, 16, 8, mutate_context=False)
    ctx = sp_model.EncodeAsIds("Hello world.")
    for k, option in enumerate("abcd"):
        qa = sp_model.EncodeAsIds(f"Q {option}")
        seq = ctx + [4] + qa + [4, 3]
        pad = 16 - len(seq)
        assert f["input_ids"][k * 16:(k + 1) * 16] == [0] * pad + seq
        assert f["segment_ids"][k * 16:(k + 1) * 16] == (
            [4] * pad + [0] * (len(ctx) + 1) + [1] * (len(qa) + 1) + [2])
        assert f["input_mask"][k * 16:(k + 1) * 16] == [1] * pad + [0] * len(seq)


@pytest.mark.parametrize("content,message", [
    ("{", "not a RACE JSON file"),
    (json.dumps({"options": [], "questions": [], "article": ""}), "missing 'answers'"),
    (json.dumps({"answers": ["E"], "options": [["a"] * 4], "questions": ["q"], "article": "x"}),
     "answer 'E' is not one of A, B, C, D"),
    (json.dumps({"answers": ["A"], "options": [["a"] * 3], "questions": ["q"], "article": "x"}),
     "exactly 4 options"),
    # issue 27 item 4: wrong JSON types named, not a Python traceback
    (json.dumps({"answers": ["A"], "options": [["a"] * 4], "questions": ["q"],
                 "article": ["x"]}), "'article' must be a string, got a list"),
    (json.dumps({"answers": ["A"], "options": [["a"] * 4], "questions": [7], "article": "x"}),
     "'questions' must be a list of strings"),
    (json.dumps({"answers": ["A"], "options": [["a", 1, "c", "d"]], "questions": ["q"],
                 "article": "x"}), "'options' must be a list of lists of strings"),
    # fresh round 3 (r3_race_top_list): "(missing list indices must be integers or slices,
    # not str)", a Python TypeError's text
    (json.dumps([{"answers": ["A"], "options": [["a"] * 4], "questions": ["q"],
                  "article": "x"}]), r"1\.txt: the top level is a list, expected an object with "
                                     "answers, options, questions and article$"),
])
def test_bad_files(tmp_path, content, message):
    for level in xr.LEVELS:
        (tmp_path / "dev" / level).mkdir(parents=True)
    (tmp_path / "dev" / "high" / "1.txt").write_text(content)
    with pytest.raises(InputDataError, match=message):
        xr.read_race_examples(str(tmp_path), "dev")


def test_a_folder_named_like_an_article(tmp_path):
    """Fresh-user finding: a folder among the article files was a 34-line
    FailedPreconditionError trace; now one error naming it."""
    for level in xr.LEVELS:
        (tmp_path / "dev" / level).mkdir(parents=True)
    (tmp_path / "dev" / "high" / "5.txt").mkdir()
    with pytest.raises(InputDataError, match=r"5\.txt: a folder, not a RACE file"):
        xr.read_race_examples(str(tmp_path), "dev")


def test_sequence_too_short_for_the_question(sp_model):
    example = xr.RaceExample("ctx", ["a long question here"] * 4, 0, "high", "f.txt", 3)
    with pytest.raises(InputDataError, match="f.txt: question 3: --max_seq_length=5 is too small"):
        xr.convert_example(example, sp_model, 5, 32)


def test_record_file_name():
    assert xr.record_file_name("spiece.model", 128, "dev") == "spiece.model.len-128.dev.tf_record"
    assert xr.record_file_name("spiece.model", 512, "train", high_only=True) == (
        "high.spiece.model.len-512.train.tf_record")


def test_race_logits_and_metrics_equal_the_original(race, golden_dir, sp_model):
    """tiny_random_qa through XLNetRace on the golden features: logits within 1e-5 of the
    original EVAL graph's, and eval_accuracy / eval_loss / loss as logged."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.xlnet import checkpoint_map
    from bert_tf.xlnet.config import XLNetConfig
    from bert_tf.xlnet.race import XLNetRace

    qa_dir = os.path.join(golden_dir, "xlnet_squad", "tiny_random_qa")
    model = XLNetRace(XLNetConfig.from_json_file(os.path.join(qa_dir, "xlnet_config.json")))
    records = golden_records(race)

    def batch(rs):
        return {"input_ids": tf.constant([flat(r["input_ids"]) for r in rs]),
                "segment_ids": tf.constant([flat(r["segment_ids"]) for r in rs]),
                "input_mask": tf.constant([flat(r["input_mask"]) for r in rs], tf.float32)}

    model(batch(records[:1]))
    report = checkpoint_map.load_xlnet_checkpoint(
        checkpoint_map.xlnet_variable_map(model), os.path.join(qa_dir, "xlnet_model.ckpt"),
        require_all=True)
    assert len(report.loaded) == 35  # transformer 5 + 2 x 13, summary 2, logits 2 (README)
    logits, losses, batch_losses = [], [], []
    for i in range(0, len(records), 4):  # --eval_batch_size=4
        chunk = records[i:i + 4]
        lg = model(batch(chunk))["logits"]
        per_example, total = model.task_loss(lg, tf.constant([r["label_id"] for r in chunk]))
        logits.append(lg.numpy())
        losses.append(per_example.numpy())
        batch_losses.append(float(total))
    logits, losses = np.concatenate(logits), np.concatenate(losses)
    np.testing.assert_allclose(logits, [r["logits"] for r in records], atol=1e-5)
    np.testing.assert_allclose(losses, [r["per_example_loss"] for r in records], atol=1e-5)
    real = np.array([r["is_real_example"] for r in records], np.float64)
    labels = np.array([r["label_id"] for r in records])
    with open(os.path.join(race, "eval_result.json")) as f:
        want = json.load(f)
    accuracy = float((real * (logits.argmax(-1) == labels)).sum() / real.sum())
    assert accuracy == pytest.approx(want["eval_accuracy"], abs=1e-7)
    assert float((real * losses).sum() / real.sum()) == pytest.approx(want["eval_loss"], abs=1e-5)
    assert float(np.mean(batch_losses)) == pytest.approx(want["loss"], abs=1e-5)


def test_tfrecord_equals_the_original(race, sp_model, tmp_path):
    """The same 36 records (34 real + 2 padding to a multiple of --eval_batch_size=4); the
    original's order is its file system's readdir order, ours sorted: compared as sets."""
    from bert_tf.data.tfrecord import read_examples

    examples = xr.read_race_examples(os.path.join(race, "RACE"), "dev")
    features = [xr.convert_example(e, sp_model, 128, 32) for e in examples]
    features += [xr.padding_feature(128)] * (-len(features) % 4)
    name = xr.record_file_name("spiece.model", 128, "dev")
    assert xr.write_feature_records(features, str(tmp_path / name)) == 36

    def key(record):
        return json.dumps(record, sort_keys=True)

    ours = sorted(map(key, read_examples(str(tmp_path / name))))
    theirs = sorted(map(key, read_examples(os.path.join(race, "output_dir", name))))
    assert ours == theirs


def test_lists_of_different_lengths_are_refused(tmp_path):
    """Fresh-user finding: 2 questions, 1 option list, 1 answer was read silently."""
    for level in xr.LEVELS:
        (tmp_path / "dev" / level).mkdir(parents=True)
    (tmp_path / "dev" / "high" / "1.txt").write_text(json.dumps(
        {"answers": ["A"], "options": [["a", "b", "c", "d"]], "questions": ["q?", "r?"],
         "article": "x"}))
    with pytest.raises(InputDataError, match="2 questions, 1 option lists and 1 answers"):
        xr.read_race_examples(str(tmp_path), "dev")


def test_an_unreadable_file_is_named_as_unreadable_not_as_bad_json(tmp_path, monkeypatch):
    """Fresh round (race_nobody_unreadable_file): a file without read permission was called
    "not a RACE JSON file"."""
    import tensorflow as tf

    for level in xr.LEVELS:
        (tmp_path / "dev" / level).mkdir(parents=True)
    path = tmp_path / "dev" / "high" / "1.txt"
    path.write_text("{}")
    real = tf.io.gfile.GFile

    def denied(name, mode="r"):
        if str(name) == str(path):
            raise tf.errors.PermissionDeniedError(None, None, f"{name}; Permission denied")
        return real(name, mode)
    monkeypatch.setattr(tf.io.gfile, "GFile", denied)
    with pytest.raises(InputDataError) as e:
        xr.read_race_examples(str(tmp_path), "dev")
    assert str(e.value) == f"{path}: cannot read it (permission denied)"
