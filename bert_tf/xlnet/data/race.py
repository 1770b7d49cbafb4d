"""RACE examples and features (the original XLNet ``run_race.py``, spec ``xlnet.md`` 5.5, 10).

An article file (JSON: ``article``, ``questions``, ``options`` (4 per question), ``answers``
(letters)) gives one example per question; each of its four choices is one sequence
``context <sep> qa <sep> <cls>`` left-padded to ``max_seq_length`` (segments 0, 1, 2; padding id
0, mask 1, segment 4), and the four are concatenated into one ``4 * max_seq_length`` feature.
The QA string is ``question.replace("_", option)`` when the question has a blank, else
``question + " " + option``; it keeps its **last** ``max_qa_length`` tokens, the context its
first ``max_seq_length - 3 - len(qa)``.

Original quirk kept by default (golden README "Surprises" 7): when context + QA fits, the
original appends ``<sep> qa <sep> <cls>`` to the context token list **in place**, so the next
choices of the same question see the earlier choices' tokens in their "context".
``mutate_context=False`` gives the intended layout (each choice from the clean context).

Files are read in sorted order (the original lists directories unsorted, so its order depends
on the file system).
"""

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List

from bert_tf.data.text_lines import unreadable_input
from bert_tf.errors import InputDataError
from bert_tf.tokenization.sentencepiece_prepro import CLS_ID, SEP_ID, tokenize_fn

SEG_ID_A, SEG_ID_B, SEG_ID_CLS, SEG_ID_PAD = 0, 1, 2, 4
NUM_CHOICES = 4
LEVELS = ("middle", "high")


@dataclass
class RaceExample:
    """One question (original ``InputExample`` of run_race).

    Attributes:
      context: the article. qa_list: the 4 QA strings. label: 0-3 (answer letter - "A").
      level: ``middle`` or ``high``. path: the article file (for messages).
      question_index: the question's index in its file.
    """

    context: str
    qa_list: List[str]
    label: int
    level: str
    path: str = ""
    question_index: int = 0


def read_race_examples(data_dir: str, split: str, high_only: bool = False,
                       middle_only: bool = False) -> List[RaceExample]:
    """Examples of ``<data_dir>/<split>/{middle,high}/*`` (original ``get_examples``).

    Raises:
      InputDataError: a missing level folder, a file that is not JSON, lacks a key, has a
        question without exactly 4 options, or an answer letter outside A-D (each names the
        file and question).
    """
    import tensorflow as tf

    examples = []
    for level in LEVELS:
        if (level == "middle" and high_only) or (level == "high" and middle_only):
            continue
        folder = os.path.join(data_dir, split, level)
        if not tf.io.gfile.isdir(folder):
            raise InputDataError(f"{folder}: RACE folder not found (--data_dir={data_dir}, "
                                 f"split {split})")
        for filename in sorted(tf.io.gfile.listdir(folder)):
            path = os.path.join(folder, filename)
            if tf.io.gfile.isdir(path):
                raise InputDataError(f"{path}: a folder, not a RACE file (each file of "
                                     f"{folder} is one article)")
            try:
                with tf.io.gfile.GFile(path, "r") as f:
                    data = json.load(f)
                if not isinstance(data, dict):
                    raise InputDataError(
                        f"{path}: the top level is a {type(data).__name__}, expected an object "
                        "with answers, options, questions and article")
                answers, options = data["answers"], data["options"]
                questions, context = data["questions"], data["article"]
            except tf.errors.OpError as e:  # permission denied, an I/O error: not its content
                raise unreadable_input(path, e) from e
            except ValueError as e:
                message = (getattr(e, "message", None) or str(e)).strip().splitlines()[0]
                raise InputDataError(f"{path}: not a RACE JSON file ({message})") from e
            except (KeyError, TypeError) as e:
                raise InputDataError(f"{path}: a RACE file needs answers, options, questions and "
                                     f"article (missing {e})") from e
            check_race_types(data, path)
            if not len(answers) == len(options) == len(questions):
                raise InputDataError(f"{path}: {len(questions)} questions, {len(options)} option "
                                     f"lists and {len(answers)} answers: they must be as many")
            for i, answer in enumerate(answers):
                if answer not in ("A", "B", "C", "D"):
                    raise InputDataError(f"{path}: question {i}: answer {answer!r} is not one of "
                                         "A, B, C, D")
                if i >= len(options) or len(options[i]) != NUM_CHOICES or i >= len(questions):
                    raise InputDataError(f"{path}: question {i}: needs a question and exactly "
                                         f"{NUM_CHOICES} options")
                question = questions[i]
                qa_list = [question.replace("_", option) if "_" in question
                           else " ".join([question, option]) for option in options[i]]
                examples.append(RaceExample(context, qa_list, ord(answer) - ord("A"), level,
                                            path, i))
    return examples


def check_race_types(data: Dict[str, Any], path: str) -> None:
    """Refuses a RACE file whose fields have the wrong JSON types (bert_tf: the original fails
    in Python on them): ``article`` a string, ``questions`` and ``answers`` lists of strings,
    ``options`` a list of lists of strings.

    Raises:
      InputDataError: ``<path>: 'article' must be a string, got a list`` (names the key).
    """
    def kind(value):
        return type(value).__name__

    if not isinstance(data.get("article"), str):
        raise InputDataError(f"{path}: 'article' must be a string, got a {kind(data['article'])}")
    for key in ("questions", "answers"):
        value = data[key]
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise InputDataError(f"{path}: '{key}' must be a list of strings")
    options = data["options"]
    if not isinstance(options, list) or not all(
            isinstance(o, list) and all(isinstance(x, str) for x in o) for o in options):
        raise InputDataError(f"{path}: 'options' must be a list of lists of strings")


def convert_example(example: RaceExample, sp_model, max_seq_length: int, max_qa_length: int,
                    uncased: bool = False, mutate_context: bool = True) -> Dict[str, list]:
    """The original ``convert_single_example`` of run_race (spec 5.5).

    Returns:
      ``input_ids``, ``segment_ids`` int and ``input_mask`` (1 = padding) lists of
      ``4 * max_seq_length``, ``label_id``, ``is_real_example`` (1).

    Raises:
      InputDataError: ``max_seq_length`` leaves no room for the context (names the example).
    """
    input_ids, input_mask, segment_ids = [], [], []
    tokens_context = tokenize_fn(sp_model, example.context, uncased)
    for qa in example.qa_list:
        tokens_qa = tokenize_fn(sp_model, qa, uncased)[-max_qa_length:]
        room = max_seq_length - 3 - len(tokens_qa)
        if room < 0:
            raise InputDataError(f"{example.path}: question {example.question_index}: "
                                 f"--max_seq_length={max_seq_length} is too small for its "
                                 f"{len(tokens_qa)} question tokens plus 3 symbols")
        if len(tokens_context) + len(tokens_qa) > max_seq_length - 3:
            tokens = tokens_context[:room]
        else:
            # The original's alias: appending below grows tokens_context itself.
            tokens = tokens_context if mutate_context else list(tokens_context)
        segs = [SEG_ID_A] * len(tokens)
        tokens.append(SEP_ID)
        segs.append(SEG_ID_A)
        tokens.extend(tokens_qa)
        segs.extend([SEG_ID_B] * len(tokens_qa))
        tokens.extend([SEP_ID, CLS_ID])
        segs.extend([SEG_ID_B, SEG_ID_CLS])
        pad = max_seq_length - len(tokens)
        input_ids.extend([0] * pad + tokens)
        input_mask.extend([1] * pad + [0] * len(tokens))
        segment_ids.extend([SEG_ID_PAD] * pad + segs)
    return {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids,
            "label_id": example.label, "is_real_example": 1}


def padding_feature(max_seq_length: int) -> Dict[str, list]:
    """The original's ``PaddingInputExample`` feature: ids 0, mask 1, segments **0**, label 0,
    ``is_real_example`` 0."""
    n = NUM_CHOICES * max_seq_length
    return {"input_ids": [0] * n, "input_mask": [1] * n, "segment_ids": [0] * n, "label_id": 0,
            "is_real_example": 0}


def record_file_name(spm_basename: str, max_seq_length: int, split: str,
                     high_only: bool = False, middle_only: bool = False) -> str:
    """``[high.|middle.]{spm_basename}.len-{S}.{split}.tf_record`` (spec 10)."""
    prefix = "high." if high_only else "middle." if middle_only else ""
    return f"{prefix}{spm_basename}.len-{max_seq_length}.{split}.tf_record"


def write_feature_records(features, path: str) -> int:
    """Writes features as the original's RACE TFRecord (``input_ids``, ``segment_ids``,
    ``label_ids``, ``is_real_example`` int64; ``input_mask`` float), atomically; returns the
    count."""
    from bert_tf.data.tfrecord import AtomicTFRecordWriter, make_example

    with AtomicTFRecordWriter(path) as writer:
        for f in features:
            writer.write(make_example(
                {"input_ids": f["input_ids"], "segment_ids": f["segment_ids"],
                 "label_ids": [f["label_id"]], "is_real_example": [f["is_real_example"]]},
                {"input_mask": f["input_mask"]}))
        return writer.count


def record_schema(max_seq_length: int):
    """Parse schema of those records (the original ``file_based_input_fn_builder``)."""
    import tensorflow as tf

    n = NUM_CHOICES * max_seq_length
    return {"input_ids": tf.io.FixedLenFeature([n], tf.int64),
            "input_mask": tf.io.FixedLenFeature([n], tf.float32),
            "segment_ids": tf.io.FixedLenFeature([n], tf.int64),
            "label_ids": tf.io.FixedLenFeature([], tf.int64),
            "is_real_example": tf.io.FixedLenFeature([], tf.int64)}
