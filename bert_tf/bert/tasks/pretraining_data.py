"""``create_pretraining_data.py`` with BERT's flags: the original BERT
``create_pretraining_data.py`` (spec ``bert.md`` section 5), masked-LM / next-sentence records
from raw text.

    python create_pretraining_data.py --input_file=sample_text.txt \
        --output_file=/tmp/tf_examples.tfrecord --vocab_file=vocab.txt \
        --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
        --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

The work is :func:`bert_tf.data.pretraining.create_pretraining_data`; this task module gives it
the task contract of XLNet's and ALBERT's (:mod:`bert_tf.xlnet.tasks.pretraining_data`,
:mod:`bert_tf.albert.tasks.pretraining_data`): ``run(args) -> Result``. TensorFlow-free, as
the BERT path of the script is (issue 16).
"""

from dataclasses import dataclass
from typing import List

from bert_tf.bert.tasks.args import PretrainingDataArgs
from bert_tf.data.pretraining import create_pretraining_data


@dataclass
class BertDataResult:
    """What :func:`run` wrote: ``num_instances`` training instances to ``output_file``."""

    num_instances: int
    output_file: str

    def summary_lines(self) -> List[str]:
        """What ``create_pretraining_data.py`` prints with BERT's flags: nothing (the
        original's output; the progress is logged)."""
        return []


def run(args: PretrainingDataArgs) -> BertDataResult:
    """Writes the records (:func:`bert_tf.data.pretraining.create_pretraining_data`).

    Returns:
      a :class:`BertDataResult`.

    Raises:
      FlagError, ConfigError, InputDataError: one line naming the flag or file (see
        :func:`bert_tf.data.pretraining.create_pretraining_data`); nothing is written then.
    """
    num_instances = create_pretraining_data(
        input_file=args.input_file, output_file=args.output_file, vocab_file=args.vocab_file,
        do_lower_case=args.do_lower_case, do_whole_word_mask=args.do_whole_word_mask,
        max_seq_length=args.max_seq_length, max_predictions_per_seq=args.max_predictions_per_seq,
        random_seed=args.random_seed, dupe_factor=args.dupe_factor,
        masked_lm_prob=args.masked_lm_prob, short_seq_prob=args.short_seq_prob,
        num_workers=args.num_workers)
    return BertDataResult(num_instances, args.output_file)
