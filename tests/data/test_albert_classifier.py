"""ALBERT's GLUE processors (original ALBERT classifier_utils.py): <data_dir>/<TASK>/ files,
process_text with SentencePiece only, test guids from column 0."""
import os

import pytest

from bert_tf.data.albert_classifier import ALBERT_TASKS, AlbertProcessor
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
