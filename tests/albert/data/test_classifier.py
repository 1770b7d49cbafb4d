"""ALBERT's GLUE processors (original ALBERT classifier_utils.py): <data_dir>/<TASK>/ files,
process_text with SentencePiece only, test guids from column 0."""
import os

import pytest

from bert_tf.albert.data.classifier import ALBERT_TASKS, AlbertProcessor
from bert_tf.errors import FlagError


@pytest.fixture(scope="module")
def glue(golden_dir):
    return os.path.join(golden_dir, "albert", "classifier", "glue_data")


def test_wordpiece_mode_keeps_the_text(glue):
    proc = AlbertProcessor("MRPC", use_spm=False, do_lower_case=True)
    dev = proc.get_dev_examples(glue)
    assert len(dev) == 16 and dev[0].guid == "dev-1" and dev[0].label == "1"
    assert dev[0].text_a == ("He said the foodservice pie business doesn't fit the company's "
                             "long-term growth strategy.")
    test = proc.get_test_examples(glue)
    assert [ex.guid for ex in test] == [str(i) for i in range(12)]  # column 0: index


def test_sentencepiece_mode_preprocesses(glue):
    """preprocess_text(lower=True): 'He said ...' -> 'he said ...' (and no other change on
    this ASCII line)."""
    proc = AlbertProcessor("mrpc", use_spm=True, do_lower_case=True)
    ex = proc.get_dev_examples(glue)[0]
    assert ex.text_a == ("he said the foodservice pie business doesn't fit the company's "
                         "long-term growth strategy.")
    assert proc.process_text("  Caf\u00e9   \u00c9T\u00c9 ") == "cafe ete"


def test_tasks_and_errors():
    assert list(ALBERT_TASKS) == ["cola", "mnli", "mismnli", "mrpc", "rte", "sst-2", "sts-b",
                                  "qqp", "qnli", "wnli"]
    assert AlbertProcessor("STS-B", False, True).is_regression
    assert AlbertProcessor("mismnli", False, True).bert.dev_file[0] == "dev_mismatched.tsv"
    with pytest.raises(FlagError, match="Task not found: 'xnli'"):
        AlbertProcessor("xnli", False, True)


def test_sentencepiece_features_from_the_golden_pieces(golden_dir, shared_data_dir):
    """The SentencePiece path of the ALBERT classifier features: process_text gives the
    golden `preprocessed`, the features are [CLS] pp_ids(a) [SEP] pp_ids(b) [SEP] with the
    specials as id 0 (<unk>: the XLNet model has no [CLS]/[SEP], golden README "Inputs"),
    pop-from-the-longer truncation, zero padding."""
    import json

    from bert_tf.data import classifier as bert_data
    from bert_tf.albert.tokenization import FullTokenizer
    path = os.path.join(golden_dir, "albert", "tokenization", "spm_do_lower_case_true.jsonl")
    with open(path) as f:
        rows = [json.loads(line) for line in f][:4]  # row1 #1, #2, row2 #1, #2
    tokenizer = FullTokenizer(None, spm_model_file=os.path.join(shared_data_dir, "xlnet",
                                                                "spiece.model"))
    proc = AlbertProcessor("MRPC", use_spm=True, do_lower_case=True)
    for a, b in ((rows[0], rows[1]), (rows[2], rows[3])):
        assert proc.process_text(a["text"]) == a["preprocessed"]
        example = bert_data.InputExample("train-1", proc.process_text(a["text"]),
                                         proc.process_text(b["text"]), "1")
        ids_a, ids_b = list(a["pp_ids"]), list(b["pp_ids"])
        while len(ids_a) + len(ids_b) > 40 - 3:  # pop from the longer (b on a tie)
            (ids_a if len(ids_a) > len(ids_b) else ids_b).pop()
        expected = [0] + ids_a + [0] + ids_b + [0]
        feature = bert_data.convert_single_example(5, example, ["0", "1"], 40, tokenizer)
        assert feature.input_ids == expected + [0] * (40 - len(expected))
        assert feature.segment_ids == ([0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
                                       + [0] * (40 - len(expected)))
        assert feature.input_mask == [1] * len(expected) + [0] * (40 - len(expected))


# One train, dev and test file per task (header + 2 rows), column 0 an id with upper case and
# spaces so that process_text (lower-cases and strips with SentencePiece) shows.
_ROWS = {  # task folder -> (train/dev row, test row): column count of each
    "MNLI": (["{id}"] + ["x"] * 7 + ["a b", "c d", "entailment"], ["{id}"] + ["x"] * 7 + ["a", "b"]),
    "STS-B": (["{id}"] + ["x"] * 6 + ["a b", "c d", "3.5"], ["{id}"] + ["x"] * 6 + ["a", "b"]),
    "QQP": (["{id}", "1", "2", "a b", "c d", "1"], ["{id}", "a", "b"]),
    "QNLI": (["{id}", "a b", "c d", "entailment"], ["{id}", "a", "b"]),
    "RTE": (["{id}", "a b", "c d", "entailment"], ["{id}", "a", "b"]),
    "WNLI": (["{id}", "a b", "c d", "1"], ["{id}", "a", "b"]),
    "MRPC": (["1", "1", "2", "a b", "c d"], ["{id}", "1", "2", "a", "b"]),
    "SST-2": (["a b", "1"], ["{id}", "a"]),
}


def _write_glue(root):
    for task, (row, test_row) in _ROWS.items():
        folder = root / task
        folder.mkdir()
        dev = "dev_matched.tsv" if task == "MNLI" else "dev.tsv"
        test = "test_matched.tsv" if task == "MNLI" else "test.tsv"
        for name, template in (("train.tsv", row), (dev, row), (test, test_row)):
            lines = ["header"] + ["\t".join(c.format(id=f" Id{k} ") for c in template)
                                  for k in (1, 2)]
            (folder / name).write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("use_spm", [False, True])
def test_guids_from_column_0_as_the_original(tmp_path, use_spm):
    """The original ALBERT classifier_utils.py: MNLI, STS-B, QNLI, RTE, WNLI take
    ``guid = self.process_text(line[0])`` in every split, QQP ``guid = line[0]``; MRPC test
    ``line[0]``, SST-2 test ``process_text(line[0])``, their train/dev ``"%s-%s" % (set, i)``.
    process_text with SentencePiece and do_lower_case: " Id1 " -> "id1"."""
    _write_glue(tmp_path)
    spm = lambda raw: (raw.strip().lower() if use_spm else raw)  # noqa: E731
    raw = [" Id1 ", " Id2 "]
    for task in ("MNLI", "STS-B", "QNLI", "RTE", "WNLI", "QQP", "MRPC", "SST-2"):
        proc = AlbertProcessor(task, use_spm=use_spm, do_lower_case=True)
        got = {split: [ex.guid for ex in getattr(proc, f"get_{split}_examples")(str(tmp_path))]
               for split in ("train", "dev", "test")}
        if task == "QQP":
            want = {split: raw for split in got}
        elif task in ("MRPC", "SST-2"):
            want = {"train": ["train-1", "train-2"], "dev": ["dev-1", "dev-2"],
                    "test": raw if task == "MRPC" else [spm(g) for g in raw]}
        else:
            want = {split: [spm(g) for g in raw] for split in got}
        assert got == want, task
