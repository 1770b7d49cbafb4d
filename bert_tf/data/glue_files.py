"""The files of a GLUE classifier run shared by BERT's and ALBERT's
(:mod:`bert_tf.bert.tasks.classifier`, :mod:`bert_tf.albert.tasks.classifier`): the task's
examples read up front, the ``--do_predict`` records (``predict.tf_record``) and the text of
``test_results.tsv`` (spec `bert.md` 8.4, 8.7).
"""

import os
from typing import Dict

import numpy as np
from absl import logging

from bert_tf.data import classifier as data
from bert_tf.errors import FlagError

PREDICT_FILE = "predict.tf_record"


def read_task_examples(processor, args) -> Dict[str, list]:
    """Reads every data file the run needs, before any training (bad rows fail early).

    Args:
      processor: a GLUE processor (BERT's or ALBERT's, ``bert_tf.data.classifier_processors``
        API);
      args: the flags (``do_train``, ``do_eval``, ``do_predict``, ``data_dir``, ``task_name``).

    Returns:
      ``{"train"|"eval"|"predict": [InputExample]}`` for the modes asked.

    Raises:
      InputDataError: a bad row (file and line). FlagError: ``--do_predict`` for a task with no
        test set.
    """
    out = {}
    if args.do_train:
        out["train"] = processor.get_train_examples(args.data_dir)
    if args.do_eval:
        out["eval"] = processor.get_dev_examples(args.data_dir)
    if args.do_predict:
        try:
            out["predict"] = processor.get_test_examples(args.data_dir)
        except NotImplementedError as e:
            raise FlagError(f"--do_predict: task {args.task_name} has no test set ({e})") from e
    return out


def write_predict_records(examples, label_list, args, tokenizer):
    """The ``--do_predict`` records: TPU padding, ``predict.tf_record`` in ``--output_dir``
    (rewritten each run, as the original), the original's log lines.

    Args:
      examples: the test ``InputExample`` s; label_list: the task's labels (None: regression);
      args: the flags (``predict_batch_size``, ``use_tpu``, ``max_seq_length``,
        ``output_dir``); tokenizer: the run's (BERT's or ALBERT's ``FullTokenizer``).

    Returns:
      ``(padded examples, num_actual, record file path)``.
    """
    predict_examples, num_actual = data.add_tpu_padding(
        examples, args.predict_batch_size, args.use_tpu)
    predict_file = os.path.join(args.output_dir, PREDICT_FILE)
    data.file_based_convert_examples_to_features(predict_examples, label_list,
                                                 args.max_seq_length, tokenizer,
                                                 predict_file)
    logging.info("***** Running prediction*****")
    logging.info("  Num examples = %d (%d actual, %d padding)", len(predict_examples),
                 num_actual, len(predict_examples) - num_actual)
    return predict_examples, num_actual, predict_file


def format_test_results(probabilities: np.ndarray) -> str:
    """One line per row: ``str(np.float32)`` of each value joined by tabs (original)."""
    return "".join("\t".join(str(np.float32(p)) for p in row) + "\n"
                   for row in np.asarray(probabilities, np.float32))
