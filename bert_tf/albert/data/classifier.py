"""ALBERT's GLUE processors (the original ALBERT ``classifier_utils.py``) on BERT's.

The columns, labels, header handling and features (``[CLS] A [SEP] B [SEP]``, pop-from-the-
longer truncation, zero padding; the records of :mod:`bert_tf.data.classifier`) are BERT's;
ALBERT differs in three places, mirrored here:

* the files are ``<data_dir>/<TASK>/<split>.tsv`` (``MRPC/``, ``CoLA/``, ``MNLI/``, ...: the GLUE
  download layout), where BERT's ``--data_dir`` is the task folder itself;
* every text goes through ``process_text``: ALBERT's ``preprocess_text(text,
  lower=do_lower_case)`` with a SentencePiece model, else unchanged (``convert_to_unicode``);
* the guid is column 0 of the row (the index ``submit_results.tsv`` writes) in every split of
  MNLI, STS-B, QQP, QNLI, RTE and WNLI, and in the test split of MRPC, CoLA and SST-2 (whose
  train/dev guids stay ``<set>-<i>``, as BERT's); through ``process_text`` except for QQP, MRPC
  and CoLA (see :data:`GUID_FROM_COLUMN_0`).

Tasks: ``cola``, ``mnli``, ``mismnli`` (MNLI mismatched), ``mrpc``, ``rte``, ``sst-2``,
``sts-b`` (regression), ``qqp``, ``qnli``, ``wnli``.
"""

import os
from typing import Dict, List, Optional

from bert_tf.data import classifier_processors as bert_data
from bert_tf.errors import FlagError
from bert_tf.albert.tokenization import preprocess_text

# task name -> (its folder under --data_dir, the BERT processor of its columns)
ALBERT_TASKS: Dict[str, tuple] = {
    "cola": ("CoLA", bert_data.ColaProcessor),
    "mnli": ("MNLI", bert_data.MnliProcessor),
    "mismnli": ("MNLI", None),  # MisMnliProcessor below
    "mrpc": ("MRPC", bert_data.MrpcProcessor),
    "rte": ("RTE", bert_data.RteProcessor),
    "sst-2": ("SST-2", bert_data.Sst2Processor),
    "sts-b": ("STS-B", bert_data.StsbProcessor),
    "qqp": ("QQP", bert_data.QqpProcessor),
    "qnli": ("QNLI", bert_data.QnliProcessor),
    "wnli": ("WNLI", bert_data.WnliProcessor),
}


# task -> (the splits whose guid is column 0, whether it goes through process_text), as the
# original ALBERT's _create_examples (``guid = self.process_text(line[0])`` or ``line[0]``).
_ALL_SPLITS = ("train", "dev", "test")
GUID_FROM_COLUMN_0: Dict[str, tuple] = {
    "cola": (("test",), False),
    "mnli": (_ALL_SPLITS, True),
    "mismnli": (_ALL_SPLITS, True),
    "mrpc": (("test",), False),
    "rte": (_ALL_SPLITS, True),
    "sst-2": (("test",), True),
    "sts-b": (_ALL_SPLITS, True),
    "qqp": (_ALL_SPLITS, False),
    "qnli": (_ALL_SPLITS, True),
    "wnli": (_ALL_SPLITS, True),
}


class MisMnliProcessor(bert_data.MnliProcessor):
    """MNLI mismatched (original ALBERT ``MisMnliProcessor``): ``dev_mismatched.tsv`` and
    ``test_mismatched.tsv``, MNLI's columns."""

    dev_file = ("dev_mismatched.tsv", "dev")
    test_file = ("test_mismatched.tsv", "test")


class AlbertProcessor:
    """One ALBERT GLUE task (original ALBERT ``DataProcessor(use_spm, do_lower_case)``).

    Args:
      task_name: one of :data:`ALBERT_TASKS` (case-insensitive).
      use_spm: texts go through ``preprocess_text`` (SentencePiece models).
      do_lower_case: its ``lower`` argument.

    Attributes:
      is_regression, num_labels: as BERT's processor of the task (STS-B: True, 1).

    Raises:
      FlagError: unknown task (lists the valid names).
    """

    def __init__(self, task_name: str, use_spm: bool, do_lower_case: bool):
        name = (task_name or "").lower()
        if name not in ALBERT_TASKS:
            raise FlagError(f"Task not found: {task_name!r} (--task_name); valid ALBERT tasks: "
                            f"{', '.join(ALBERT_TASKS)}")
        self.task_name = name
        self.task_dir, bert_class = ALBERT_TASKS[name]
        self.bert = (bert_class or MisMnliProcessor)()
        self.use_spm = use_spm
        self.do_lower_case = do_lower_case
        self.is_regression = self.bert.is_regression
        self.num_labels = self.bert.num_labels

    def get_labels(self) -> Optional[List[str]]:
        """The label list (id = index), None for STS-B."""
        return self.bert.get_labels()

    def process_text(self, text):
        """``preprocess_text(text, lower=do_lower_case)`` with SentencePiece, else ``text``."""
        if text is None or not self.use_spm:
            return text
        return preprocess_text(text, lower=self.do_lower_case)

    def _finish(self, examples):
        for ex in examples:
            ex.text_a = self.process_text(ex.text_a)
            ex.text_b = self.process_text(ex.text_b)
        return examples

    def folder(self, data_dir: str) -> str:
        """``<data_dir>/<TASK>``, where the task's .tsv files are."""
        return os.path.join(data_dir, self.task_dir)

    def _with_guids(self, examples, data_dir: str, split: str, filename: str):
        """Sets each example's guid to column 0 of its row where the original ALBERT does."""
        splits, processed = GUID_FROM_COLUMN_0[self.task_name]
        if split in splits:
            ids = self.bert.get_ids(self.folder(data_dir), filename)
            if len(ids) == len(examples):
                for ex, guid in zip(examples, ids):
                    ex.guid = self.process_text(guid) if processed else guid
        return self._finish(examples)

    def get_train_examples(self, data_dir: str):
        """Examples of ``<data_dir>/<TASK>/train.tsv``. Raises InputDataError (file, line)."""
        return self._with_guids(self.bert.get_train_examples(self.folder(data_dir)), data_dir,
                                "train", self.bert.train_file[0])

    def get_dev_examples(self, data_dir: str):
        """Examples of the dev file (MNLI: ``dev_matched.tsv``). Raises InputDataError."""
        return self._with_guids(self.bert.get_dev_examples(self.folder(data_dir)), data_dir,
                                "dev", self.bert.dev_file[0])

    def get_test_examples(self, data_dir: str):
        """Examples of the test file. Raises InputDataError."""
        return self._with_guids(self.bert.get_test_examples(self.folder(data_dir)), data_dir,
                                "test", self.bert.test_file[0])
