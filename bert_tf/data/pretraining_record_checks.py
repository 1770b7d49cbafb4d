"""The checks of a pre-training run's input records shared by BERT's and ALBERT's runs
(:mod:`bert_tf.bert.tasks.pretraining`, :mod:`bert_tf.albert.tasks.pretraining`): the files of
``--input_file`` checked before the run, and the record errors TensorFlow raises mid-run turned
into one-line bert_tf errors (:mod:`bert_tf.data.pretraining_records`).
"""

from typing import Any, Callable, List

import tensorflow as tf
from absl import logging

from bert_tf.data.text_lines import unreadable_input
from bert_tf.data.tfrecord_bytes import count_framed_records
from bert_tf.data.pretraining_records import (check_input_records, check_token_ids,
                                              explain_index_error, explain_parse_error,
                                              find_input_files, is_parse_error)


def checked_input_files(input_file: str, max_seq_length: int, max_predictions_per_seq: int,
                        vocab_size: int, config_file: str,
                        config_flag: str = "bert_config_file") -> List[str]:
    """The files of ``--input_file`` (logged as the original does), checked before a run.

    Args:
      input_file: the flag (comma-separated glob patterns).
      max_seq_length, max_predictions_per_seq: the flags the records must fit.
      vocab_size: the model config's; config_file: its path, for the message.

    Returns:
      the matching file names, in order.

    Raises:
      FlagError: no file matches. InputDataError: a file cut short or damaged anywhere
        (:func:`bert_tf.data.tfrecord_bytes.count_framed_records`), or records that do not
        fit the two lengths (names the file, feature and both lengths). ConfigError: a token id >= ``vocab_size``.
    """
    input_files = find_input_files(input_file)
    logging.info("*** Input Files ***")
    for f in input_files:
        logging.info("  %s", f)
    for f in input_files:  # a file cut inside a record header reads as a shorter file in TF
        try:
            count_framed_records(f)
        except OSError as e:
            raise unreadable_input(f, e) from e
    check_input_records(input_files, max_seq_length, max_predictions_per_seq)
    check_token_ids(input_files, vocab_size, config_file, config_flag=config_flag)
    return input_files


def record_errors_explained(input_files: List[str], max_seq_length: int,
                            max_predictions_per_seq: int, config, config_file: str,
                            config_flag: str = "bert_config_file"
                            ) -> Callable[[Callable[[], Any]], Any]:
    """A runner ``run(fn)`` that calls ``fn()`` and turns the record errors TensorFlow raises
    while reading ``input_files`` into one-line bert_tf errors.

    Args:
      input_files: the records read; max_seq_length, max_predictions_per_seq: the flags;
      config: the model config (its ``vocab_size``); config_file: its path, for the message.

    Returns:
      the runner; it returns what ``fn`` returns.

    Raises (from the runner):
      InputDataError: a record that does not parse with the two lengths. ConfigError: an
        embedding index out of range (a token id >= ``vocab_size``). Any other
        ``InvalidArgumentError`` / ``DataLossError`` as it is.
    """
    def run(fn):
        try:
            return fn()
        except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
            if is_parse_error(e):
                raise explain_parse_error(e, input_files, max_seq_length,
                                          max_predictions_per_seq) from e
            index_error = explain_index_error(e, input_files, config, config_file,
                                              config_flag)
            if index_error is not None:
                raise index_error from e
            raise

    return run
