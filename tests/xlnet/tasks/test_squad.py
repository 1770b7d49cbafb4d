"""XLNet run_squad (spec xlnet.md 9): the golden predict command line end to end from
tests/golden/xlnet_squad/tiny_random_qa (squad/flags.txt), the cached records, --do_prepro,
a short --do_train with resume, and bad input. Expected values come from the goldens only
(tests/golden/xlnet_squad/squad, copied unchanged from the original's outputs)."""

import dataclasses
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

from bert_tf import checkpoint_io
from bert_tf.data.tfrecord import read_examples
from bert_tf.errors import CheckpointError, FlagError, InputDataError
from bert_tf.xlnet.data import squad_records as records
from bert_tf.xlnet.tasks import squad as xsq
from bert_tf.xlnet.tasks.args import XLNetSquadArgs, read_args

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
EVAL_RECORD = "spiece.model.slen-192.qlen-64.eval.tf_record"
TRAIN_RECORD = "spiece.model.0.slen-192.qlen-64.train.tf_record"
ORIGINAL_KEYS = ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh",
                 "has_ans_exact", "has_ans_f1")
# README "Independent checks": logits / log-probs about 1e-5 absolute, probabilities 1e-6.
LOGIT_TOL, PROB_TOL = 1e-5, 1e-6


@pytest.fixture(scope="module")
def golden(golden_dir):
    return os.path.join(golden_dir, "xlnet_squad")


def make_case(golden, shared_data_dir, folder, checkpoint_in_model_dir=True):
    """The golden setup (squad/flags.txt step 0): spiece.model, config, checkpoint, the
    inputs, and (the original needs it) the checkpoint as model_dir/model.ckpt-0."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(os.path.join(shared_data_dir, "xlnet", "spiece.model"), folder)
    tiny = os.path.join(golden, "tiny_random_qa")
    for name in ("xlnet_config.json", "xlnet_model.ckpt.index",
                 "xlnet_model.ckpt.data-00000-of-00001"):
        shutil.copy(os.path.join(tiny, name), folder)
    for name in ("dev.json", "train.json"):
        shutil.copy(os.path.join(golden, "squad", "inputs", name), folder)
    model_dir = os.path.join(folder, "model_dir")
    os.makedirs(model_dir)
    if checkpoint_in_model_dir:
        for ext in ("index", "data-00000-of-00001"):
            shutil.copy(os.path.join(tiny, f"xlnet_model.ckpt.{ext}"),
                        os.path.join(model_dir, f"model.ckpt-0.{ext}"))
        with open(os.path.join(model_dir, "checkpoint"), "w") as f:
            f.write('model_checkpoint_path: "model.ckpt-0"\n'
                    'all_model_checkpoint_paths: "model.ckpt-0"\n')
    return folder


def golden_predict_flags(golden):
    """The golden predict command line (squad/flags.txt step 1), without ``python
    run_squad.py``."""
    with open(os.path.join(golden, "squad", "flags.txt")) as f:
        line = next(l for l in f if l.startswith("python run_squad.py --do_train=False"))
    return shlex.split(line)[2:]


def args_from_command_line(flags, folder, **overrides):
    values = {}
    for flag in flags:
        name, value = flag[2:].split("=", 1)
        field = xsq.XLNetSquadArgs.__dataclass_fields__[name]
        kind = {"bool": lambda v: v == "True", "int": int, "float": float}.get(
            getattr(field.type, "__name__", ""), str)
        values[name] = kind(value)
    for name in ("predict_file", "init_checkpoint", "model_config_path", "spiece_model_file",
                 "output_dir", "model_dir", "predict_dir", "train_file"):
        if name in values and values[name]:
            values[name] = os.path.join(folder, values[name])
    values.update(overrides)
    return xsq.XLNetSquadArgs(**values)


def load_ordered(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=OrderedDict)


def assert_predictions_equal_golden(golden, predict_dir):
    """predictions.json byte-equal; nbest_predictions.json and null_odds.json equal in keys,
    order and texts, their numbers within the README's tolerances (our float32 model is within
    1e-6 of the original's but not bit-identical, so the printed floats differ in the last
    digits)."""
    want_dir = os.path.join(golden, "squad", "predict_dir")
    with open(os.path.join(predict_dir, "predictions.json"), "rb") as ours, \
            open(os.path.join(want_dir, "predictions.json"), "rb") as theirs:
        assert ours.read() == theirs.read()
    got, want = (load_ordered(os.path.join(d, "nbest_predictions.json"))
                 for d in (predict_dir, want_dir))
    assert list(got) == list(want)
    for qid in want:
        assert [e["text"] for e in got[qid]] == [e["text"] for e in want[qid]], qid
        for ours, theirs in zip(got[qid], want[qid]):
            assert list(ours) == list(theirs)
            assert abs(ours["probability"] - theirs["probability"]) <= PROB_TOL, qid
            for key in ("start_log_prob", "end_log_prob"):
                assert abs(ours[key] - theirs[key]) <= LOGIT_TOL, (qid, key)
    got, want = (load_ordered(os.path.join(d, "null_odds.json")) for d in (predict_dir, want_dir))
    assert list(got) == list(want)
    np.testing.assert_allclose(list(got.values()), list(want.values()), atol=LOGIT_TOL, rtol=0)


def assert_eval_results_equal_golden(golden, predict_dir):
    """The original's keys equal squad/eval_result.json; the official v2.0 metrics follow by
    hand from the golden files: 120 questions, 67 unanswerable (README "Counts"); every golden
    null odds is below the official threshold 1.0, so every question keeps its (never empty)
    prediction: NoAns exact/F1 0, HasAns exact 100 * has_ans_exact, HasAns F1 100 *
    has_ans_f1, and the totals weighted by 53 / 120."""
    with open(os.path.join(golden, "squad", "eval_result.json")) as f:
        want = json.load(f)
    with open(os.path.join(predict_dir, "eval_results.json")) as f:
        got = json.load(f)
    assert {k: got[k] for k in ORIGINAL_KEYS} == {k: want[k] for k in ORIGINAL_KEYS}
    null_odds = load_ordered(os.path.join(golden, "squad", "predict_dir", "null_odds.json"))
    assert max(null_odds.values()) <= 1.0
    assert (got["total"], got["HasAns_total"], got["NoAns_total"]) == (120, 53, 67)
    assert got["NoAns_exact"] == got["NoAns_f1"] == 0.0
    assert got["HasAns_exact"] == pytest.approx(100 * want["has_ans_exact"], abs=1e-9)
    assert got["HasAns_f1"] == pytest.approx(100 * want["has_ans_f1"], abs=1e-9)
    assert got["exact"] == pytest.approx(53 / 120 * got["HasAns_exact"], abs=1e-9)
    assert got["f1"] == pytest.approx(53 / 120 * got["HasAns_f1"], abs=1e-9)


# ---------------------------------------------------------------------------------------------
# The golden predict command line
# ---------------------------------------------------------------------------------------------

def test_golden_predict_command_line(golden, shared_data_dir, tmp_path):
    """`python run_squad.py <squad/flags.txt predict flags>` from the case directory, with the
    checkpoint in model_dir as the golden setup: the original's prediction files, threshold
    search and cached eval records."""
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"))
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "run_squad.py")]
                          + golden_predict_flags(golden), cwd=case, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=REPO_ROOT), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Using the checkpoint model_dir/model.ckpt-0" in proc.stderr
    predict_dir = os.path.join(case, "predict_dir")
    assert_predictions_equal_golden(golden, predict_dir)
    assert_eval_results_equal_golden(golden, predict_dir)
    ours = list(read_examples(os.path.join(case, "output_dir", EVAL_RECORD)))
    theirs = list(read_examples(os.path.join(golden, "squad", "output_dir", EVAL_RECORD)))
    assert len(ours) == 192 and ours == theirs


def test_predict_from_init_checkpoint_with_empty_model_dir(golden, shared_data_dir, tmp_path):
    """The original predicts with random weights here (README surprise 1); we restore
    --init_checkpoint and give the golden outputs. A second run reuses the cache; a cache made
    with another --doc_stride is refused unless --overwrite_data."""
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"),
                     checkpoint_in_model_dir=False)
    args = args_from_command_line(golden_predict_flags(golden), case)
    result = xsq.run(args)
    assert result.weights_from == os.path.join(case, "xlnet_model.ckpt")
    assert_predictions_equal_golden(golden, os.path.join(case, "predict_dir"))
    assert_eval_results_equal_golden(golden, os.path.join(case, "predict_dir"))

    record_path, cache_path = records.eval_cache_paths(args)
    assert records.cached_eval_features(args, records.cache_settings(args)) is not None
    other = args_from_command_line(golden_predict_flags(golden), case, doc_stride=32)
    with pytest.raises(FlagError, match="doc_stride: cached 64, this run 32.*--overwrite_data"):
        records.cached_eval_features(other, records.cache_settings(other))
    overwrite = args_from_command_line(golden_predict_flags(golden), case, doc_stride=32,
                                       overwrite_data=True)
    assert records.cached_eval_features(overwrite, records.cache_settings(overwrite)) is None
    # Records without our features cache (e.g. the original's, next to its .pkl): rebuilt.
    os.remove(cache_path)
    assert os.path.exists(record_path)
    assert records.cached_eval_features(args, records.cache_settings(args)) is None


# ---------------------------------------------------------------------------------------------
# Training data and training
# ---------------------------------------------------------------------------------------------

def prepro_args(case, **kw):
    return xsq.XLNetSquadArgs(**dict(
        dict(do_prepro=True, train_file=os.path.join(case, "train.json"),
             spiece_model_file=os.path.join(case, "spiece.model"),
             output_dir=os.path.join(case, "output_dir"), uncased=False, max_seq_length=192,
             doc_stride=64, max_query_length=64, num_proc=1, proc_id=0), **kw))


def test_prepro_gives_the_golden_train_records(golden, shared_data_dir, tmp_path):
    """squad/flags.txt step 2 with the seed the golden launcher used (random.seed(20190701))."""
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"))
    result = xsq.run(prepro_args(case, random_seed=20190701))
    assert result.prepro_file == os.path.join(case, "output_dir", TRAIN_RECORD)
    ours = list(read_examples(result.prepro_file))
    theirs = list(read_examples(os.path.join(golden, "squad", "output_dir", TRAIN_RECORD)))
    assert len(ours) == 192 and ours == theirs


@pytest.mark.slow  # about 20 s: a real training run
def test_short_training_writes_original_names_and_resumes(golden, shared_data_dir, tmp_path):
    """No cached records: they are built from --train_file; 2 steps from the golden
    checkpoint write model.ckpt-2 with the original names (the 42 run_squad variables of
    tiny_random_qa, their TF1 Adam slots, beta powers, global_step); a rerun to 3 steps
    resumes from it."""
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"),
                     checkpoint_in_model_dir=False)
    model_dir = os.path.join(case, "trained")
    args = prepro_args(case, do_prepro=False, do_train=True,
                       init_checkpoint=os.path.join(case, "xlnet_model.ckpt"),
                       model_config_path=os.path.join(case, "xlnet_config.json"),
                       model_dir=model_dir, train_batch_size=2, train_steps=2, iterations=2,
                       num_core_per_host=1, shuffle_buffer=16)
    result = xsq.run(args)
    assert result.num_train_features == 192
    assert os.path.exists(os.path.join(case, "output_dir", TRAIN_RECORD))
    assert result.train.global_step == 2
    stored = checkpoint_io.list_checkpoint(os.path.join(model_dir, "model.ckpt-2"))
    golden_names = set(checkpoint_io.list_checkpoint(os.path.join(case, "xlnet_model.ckpt")))
    race_only = {n for n in golden_names if n.startswith(("logits/", "model/sequnece_summary/"))}
    model_names = golden_names - race_only - {"global_step"}
    assert len(model_names) == 42
    assert set(stored) == (model_names | {f"{n}/Adam" for n in model_names}
                           | {f"{n}/Adam_1" for n in model_names}
                           | {"global_step", "beta1_power", "beta2_power"})
    arrays = checkpoint_io.read_checkpoint(os.path.join(model_dir, "model.ckpt-2"))
    initial = checkpoint_io.read_checkpoint(os.path.join(case, "xlnet_model.ckpt"))
    assert not np.array_equal(arrays["start_logits/dense/kernel"],
                              initial["start_logits/dense/kernel"])

    args.train_steps = 3
    result = xsq.run(args)
    assert result.train.resumed_from == os.path.join(model_dir, "model.ckpt-2")
    assert result.train.global_step == 3
    assert os.path.exists(os.path.join(model_dir, "model.ckpt-3.index"))


# ---------------------------------------------------------------------------------------------
# Bad input: one error naming the cause, nothing written
# ---------------------------------------------------------------------------------------------

@pytest.fixture()
def predict_case(golden, shared_data_dir, tmp_path):
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"))
    return case, args_from_command_line(golden_predict_flags(golden), case)


def _written(case):
    return [n for n in ("output_dir", "predict_dir") if os.path.exists(os.path.join(case, n))]


def assert_fails_cleanly(case, args, error, message):
    """``run(args)`` raises ``error`` (a BertTfError: run_main prints it as one line and exits
    1) matching ``message``, its text is one line, and neither ``--output_dir`` nor
    ``--predict_dir`` was created; ``--model_dir`` holds what it held before."""
    model_dir = args.model_dir or os.path.join(case, "model_dir")
    before = sorted(os.listdir(model_dir)) if os.path.isdir(model_dir) else None
    with pytest.raises(error, match=message) as e:
        xsq.run(args)
    assert "\n" not in str(e.value)
    assert _written(case) == []
    assert (sorted(os.listdir(model_dir)) if os.path.isdir(model_dir) else None) == before


def test_malformed_predict_json(predict_case):
    case, args = predict_case
    with open(os.path.join(case, "bad.json"), "w") as f:
        f.write('{"data": [')
    args.predict_file = os.path.join(case, "bad.json")
    assert_fails_cleanly(case, args, InputDataError, "bad.json: not a SQuAD JSON file")


@pytest.mark.parametrize("content,message", [
    ({"data": 5}, "the top level: 'data' is a int, expected list"),
    ({"data": [5]}, r"data\[0\] is a int, expected an object"),
    ({"data": [{"paragraphs": [{"context": "c", "qas": [7]}]}]},
     r"data\[0\]\.paragraphs\[0\]\.qas\[0\] is a int, expected an object"),
])
def test_predict_json_of_another_layout(predict_case, content, message):
    """Fresh-user findings: valid JSON of another shape was a TypeError / AttributeError trace
    (the original's too); now one line naming the file and the place."""
    case, args = predict_case
    with open(os.path.join(case, "shape.json"), "w") as f:
        json.dump(content, f)
    args.predict_file = os.path.join(case, "shape.json")
    assert_fails_cleanly(case, args, InputDataError, message)


def test_malformed_train_json(predict_case):
    """--do_train with a --train_file that is not JSON: refused before the records are
    written (the original's json.load traceback)."""
    case, args = predict_case
    with open(os.path.join(case, "bad_train.json"), "w") as f:
        f.write('{"version": "v2.0", "data": [{"title": "x", ')
    args.do_train, args.do_predict = True, False
    args.train_file = os.path.join(case, "bad_train.json")
    args.train_steps, args.warmup_steps = 2, 0
    assert_fails_cleanly(case, args, InputDataError, "bad_train.json: not a SQuAD JSON file")


def test_training_file_with_several_answers(predict_case):
    """README surprise 3: the original's ValueError on the dev file, here one message."""
    case, _ = predict_case
    args = prepro_args(case, train_file=os.path.join(case, "dev.json"))
    assert_fails_cleanly(case, args, InputDataError,
                         "For training, each question should have exactly 1 answer")


@pytest.mark.slow
def test_training_file_with_several_answers_in_do_train(predict_case):
    """The same file given to --do_train (which builds its records when none is cached)."""
    case, args = predict_case
    args.do_train, args.do_predict = True, False
    args.train_file, args.train_steps, args.warmup_steps = args.predict_file, 2, 0
    assert_fails_cleanly(case, args, InputDataError,
                         "For training, each question should have exactly 1 answer")


@pytest.mark.parametrize("overrides, message", [
    # 192 - 64 - 3 = 125 paragraph pieces per window (squad/flags.txt: max_query_length=64).
    (dict(max_seq_length=60), "--max_seq_length=60 is too small for the question"),
    (dict(max_seq_length=67), "--max_seq_length=67 is too small for the question"),
    (dict(doc_stride=200), "--doc_stride=200 is larger than the paragraph window of 125"),
    (dict(doc_stride=126), "--doc_stride=126 is larger than the paragraph window of 125"),
    (dict(do_train=True, train_steps=4, warmup_steps=20),
     "--train_steps=4 must be larger than --warmup_steps=20"),
])
def test_window_and_schedule_flags(predict_case, overrides, message):
    case, args = predict_case
    args.train_file = os.path.join(case, "train.json")
    for name, value in overrides.items():
        setattr(args, name, value)
    assert_fails_cleanly(case, args, FlagError, message)


def test_largest_window_flags_are_accepted():
    """The limits by hand: max_seq_length = max_query_length + 4 leaves one paragraph piece,
    and doc_stride may equal the window (192 - 64 - 3 = 125)."""
    xsq.check_window_flags(68, 1, 64)
    xsq.check_window_flags(192, 125, 64)


def test_bert_checkpoint(predict_case):
    case, args = predict_case
    shutil.rmtree(args.model_dir)
    checkpoint_io.write_checkpoint(os.path.join(case, "bert", "bert_model.ckpt"), {
        "bert/embeddings/word_embeddings": np.zeros([8, 4], np.float32)})
    args.init_checkpoint = os.path.join(case, "bert", "bert_model.ckpt")
    assert_fails_cleanly(case, args, CheckpointError, "looks like a BERT checkpoint")


@pytest.mark.slow
def test_bert_checkpoint_to_train_from(predict_case, shared_data_dir):
    """A real BERT checkpoint as --init_checkpoint of --do_train: refused before the training
    records are written."""
    case, args = predict_case
    shutil.rmtree(args.model_dir)
    args.do_train, args.do_predict = True, False
    args.train_file, args.train_steps, args.warmup_steps = (
        os.path.join(case, "train.json"), 2, 0)
    args.init_checkpoint = os.path.join(shared_data_dir, "checkpoints", "bert_toy_pretraining",
                                        "bert_model.ckpt")
    assert_fails_cleanly(case, args, CheckpointError, r"looks like a BERT checkpoint \(it has "
                                                      r"bert/")


def test_no_checkpoint_at_all(predict_case):
    case, args = predict_case
    shutil.rmtree(args.model_dir)
    args.init_checkpoint = None
    assert_fails_cleanly(case, args, CheckpointError, "nothing to predict with")


def test_v2_predict_file_without_is_impossible(predict_case):
    """An unanswerable question (answers: []) that does not say is_impossible cannot be
    scored as SQuAD 2.0."""
    case, args = predict_case
    with open(args.predict_file, encoding="utf-8") as f:
        dataset = json.load(f)
    for paragraph in dataset["data"][0]["paragraphs"]:
        for qa in paragraph["qas"]:
            qa.pop("is_impossible", None)
    with open(os.path.join(case, "no_flag.json"), "w", encoding="utf-8") as f:
        json.dump(dataset, f)
    args.predict_file = os.path.join(case, "no_flag.json")
    assert_fails_cleanly(case, args, InputDataError, "has no answers and no is_impossible")


# ---------------------------------------------------------------------------------------------
# Flags: run_squad.py's two profiles
# ---------------------------------------------------------------------------------------------

def _squad_flag_values(argv):
    """run_squad.py's two profiles declared on a fresh FlagValues, then parsed."""
    from absl import flags as absl_flags

    from bert_tf import flags as bert_flags
    from bert_tf.bert.tasks.args import SquadArgs

    fv = absl_flags.FlagValues()
    bert_flags.define_profiles((bert_flags.RUN_SQUAD, SquadArgs.__dataclass_fields__),
                               (bert_flags.XLNET_RUN_SQUAD, bert_flags.field_names(xsq.XLNetSquadArgs)),
                               flag_values=fv)
    fv(["prog"] + argv)
    return fv


def test_xlnet_flags_select_the_xlnet_path_with_its_defaults():
    """Spec 9.1 defaults in the XLNet path (do_train True, max_seq_length 512, lr 3e-5,
    lr_layer_decay_rate 0.75, doc_stride 128, predict_batch_size 32); BERT's in the BERT path
    (max_seq_length 384, do_train False)."""
    from bert_tf import flags as bert_flags
    from bert_tf.bert.tasks.args import SquadArgs

    fv = _squad_flag_values(["--spiece_model_file=s.model"])
    assert bert_flags.is_xlnet_invocation(fv)
    args = bert_flags.args_from_flags(xsq.XLNetSquadArgs, fv)
    assert (args.do_train, args.max_seq_length, args.learning_rate, args.lr_layer_decay_rate,
            args.doc_stride, args.predict_batch_size, args.train_batch_size,
            args.train_steps) == (True, 512, 3e-5, 0.75, 128, 32, 48, 8000)
    bert = bert_flags.args_from_flags(SquadArgs, _squad_flag_values([]))
    assert (bert.do_train, bert.max_seq_length) == (False, 384)
    with pytest.raises(FlagError, match=r"--vocab_file \(use --spiece_model_file\)"):
        read_args(XLNetSquadArgs, _squad_flag_values(["--spiece_model_file=s.model",
                                                      "--vocab_file=v.txt"]))


def test_cached_train_records_of_other_flags_are_rewritten_or_refused(tmp_path, caplog):
    """issue 15 item 4: training records of another --doc_stride (or data, --uncased, ...)
    were used silently; the file name holds only the two lengths."""
    import logging
    from bert_tf.data import record_cache
    (tmp_path / "spiece.model").write_bytes(b"sp")
    (tmp_path / "train.json").write_bytes(b"{}")
    args = xsq.XLNetSquadArgs(
        train_file=str(tmp_path / "train.json"), spiece_model_file=str(tmp_path / "spiece.model"),
        output_dir=str(tmp_path), max_seq_length=16, max_query_length=8, doc_stride=4,
        uncased=False, random_seed=1)
    shard = str(tmp_path / "spiece.model.0.slen-16.qlen-8.train.tf_record")
    (tmp_path / os.path.basename(shard)).write_bytes(b"records")
    record_cache.write_fingerprint(shard, records.train_fingerprint(args))
    other = dataclasses.replace(args, doc_stride=8, train_file=None)
    with pytest.raises(FlagError, match=r"the cached .*train.tf_record was written with other "
                                        r"data or flags \(--doc_stride 4 -> 8\); rerun "
                                        r"--do_prepro"):
        records.check_cached_train_records([shard], other)
    assert os.path.exists(shard)
    (tmp_path / "train.json").write_bytes(b'{"data": []}')  # another train file
    with caplog.at_level(logging.INFO):
        assert records.check_cached_train_records([shard], args) == []
    assert not os.path.exists(shard) and not os.path.exists(shard + ".fingerprint.json")
    assert "is not the file they were made from): writing them again" in caplog.text


def test_features_cache_on_ram_is_the_local_file(tmp_path):
    """Issue 17 deliverable 2: the eval features cache written to / read from ``ram://`` (the
    ``tf.io.gfile`` API of ``gs://``) has the local file's bytes and reads back the same."""
    import uuid

    import tensorflow as tf

    from bert_tf.xlnet.data.squad import XLNetSquadFeatures

    feature = XLNetSquadFeatures(
        unique_id=1000000000, example_index=0, doc_span_index=0, tok_start_to_orig_index=[0, 4],
        tok_end_to_orig_index=[3, 8], token_is_max_context={0: True, 1: False},
        input_ids=[5, 6, 7], input_mask=[0, 0, 1], p_mask=[0, 0, 1], segment_ids=[0, 1, 2],
        paragraph_len=2, cls_index=2)
    settings = {"max_seq_length": 3}
    ram = f"ram://xsq-{uuid.uuid4().hex}"
    tf.io.gfile.makedirs(ram)
    try:
        local_path, ram_path = str(tmp_path / "c.eval.features.jsonl.gz"), f"{ram}/c.eval.features.jsonl.gz"
        records.write_features_cache(local_path, settings, [feature])
        records.write_features_cache(ram_path, settings, [feature])
        with open(local_path, "rb") as f, tf.io.gfile.GFile(ram_path, "rb") as g:
            assert g.read() == f.read()
        assert tf.io.gfile.listdir(ram) == ["c.eval.features.jsonl.gz"]
        assert records.read_features_cache(ram_path) == (settings, [feature])
    finally:
        tf.io.gfile.rmtree(ram)


@pytest.mark.slow  # a real training run and a predict run
def test_use_bfloat16_trains_with_mixed_bfloat16_and_keeps_float32_checkpoints(
        golden, shared_data_dir, tmp_path):
    """Issue 17 deliverable 4: --use_bfloat16 builds the SQuAD model with Keras'
    mixed_bfloat16 policy (bfloat16 compute as the original's TPU path); the variables, and so
    the checkpoint (the original's dtypes), stay float32; loss and outputs are float32."""
    import tensorflow as tf
    from bert_tf.xlnet.config import XLNetConfig

    case = make_case(golden, shared_data_dir, str(tmp_path / "case"),
                     checkpoint_in_model_dir=False)
    model_dir = os.path.join(case, "trained")
    args = prepro_args(case, do_prepro=False, do_train=True, use_bfloat16=True,
                       init_checkpoint=os.path.join(case, "xlnet_model.ckpt"),
                       model_config_path=os.path.join(case, "xlnet_config.json"),
                       model_dir=model_dir, train_batch_size=2, train_steps=1, iterations=1,
                       num_core_per_host=1, shuffle_buffer=16)
    config = XLNetConfig.from_json_file(args.model_config_path)
    model = xsq.build_squad_model(config, args, is_training=False)
    assert model.xlnet.dtype_policy.name == "mixed_bfloat16"
    assert model.qa_heads.dtype_policy.name == "mixed_bfloat16"
    assert {v.dtype for v in model.weights} == {"float32"}
    s = args.max_seq_length
    out = model({"input_ids": tf.ones([1, s], tf.int32), "segment_ids": tf.zeros([1, s], tf.int32),
                 "input_mask": tf.zeros([1, s], tf.float32), "p_mask": tf.zeros([1, s]),
                 "cls_index": tf.constant([s - 1])}, training=False)
    assert out["start_top_log_probs"].dtype == tf.float32 and out["cls_logits"].dtype == tf.float32
    assert out["start_top_index"].dtype == tf.int32
    result = xsq.run(args)
    assert result.train.global_step == 1 and np.isfinite(result.train.last_loss)
    dtypes = tf.train.load_checkpoint(os.path.join(model_dir, "model.ckpt-1")
                                      ).get_variable_to_dtype_map()
    initial = tf.train.load_checkpoint(os.path.join(case, "xlnet_model.ckpt")
                                       ).get_variable_to_dtype_map()
    for name, dtype in initial.items():
        if name in dtypes:
            assert dtypes[name] == dtype, name
    assert dtypes["start_logits/dense/kernel"] == tf.float32
    assert dtypes["model/transformer/word_embedding/lookup_table"] == tf.float32


@pytest.mark.parametrize("name", ["nbest_predictions.json", "null_odds.json"])
def test_an_output_file_name_that_is_a_folder_is_refused_before_any_work(predict_case, name):
    """Issue 27: a folder predict_dir/nbest_predictions.json failed only after prediction."""
    case, args = predict_case
    folder = os.path.join(args.predict_dir)
    os.makedirs(os.path.join(folder, name))
    with pytest.raises(FlagError) as e:
        xsq.run(args)
    assert str(e.value) == (f"--predict_dir={folder}: {os.path.join(folder, name)} is a folder, "
                            f"but the run writes the file {name} there; remove or rename that "
                            "folder")
    assert os.listdir(folder) == [name] and not os.path.exists(args.output_dir)


def test_input_files_and_output_names_are_checked_before_the_model_is_built(predict_case,
                                                                           monkeypatch):
    """A new user's bad predict file / output folder was found only after the model was built
    from the checkpoint (BERT's run_squad checks them first)."""
    case, args = predict_case
    monkeypatch.setattr(xsq, "_prepare", lambda *a, **k: pytest.fail("the model came first"))
    with open(os.path.join(case, "bad.json"), "w") as f:
        f.write('{"data": [')
    args.predict_file = os.path.join(case, "bad.json")
    assert_fails_cleanly(case, args, InputDataError, "bad.json: not a SQuAD JSON file")
    os.makedirs(os.path.join(args.predict_dir, "null_odds.json"))
    with pytest.raises(FlagError, match="null_odds.json is a folder"):
        xsq.run(args)
