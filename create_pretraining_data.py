"""Creates masked-LM / next-sentence pretraining TFRecords from raw text.

Same flags, defaults and output as the original `create_pretraining_data.py` (spec `bert.md`
section 5), plus ``--num_workers`` (parallel tokenization). The work is done by
:func:`bert_tf.bert.tasks.pretraining_data.run` (over
:func:`bert_tf.data.pretraining.create_pretraining_data`).

    python create_pretraining_data.py --input_file=sample_text.txt \
        --output_file=/tmp/tf_examples.tfrecord --vocab_file=vocab.txt \
        --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
        --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

With XLNet's flags (``--sp_path``, ``--input_glob``, ``--save_dir``, ``--seq_len``...; the
original XLNet ``data_utils.py``) it writes XLNet's pretraining records instead: see
bert_tf/xlnet/tasks/pretraining_data.py.

With an ALBERT-only flag (``--spm_model_file``, ``--ngram``, ``--favor_shorter_ngram``,
``--random_next_sentence``, ``--do_permutation``) it is ALBERT's create_pretraining_data.py
(n-gram masking, sentence-order labels, ``token_boundary``; ALBERT's defaults for the flags not
given: ``--max_seq_length`` 512, ``--dupe_factor`` 40, ``--do_whole_word_mask`` True): see
bert_tf/albert/tasks/pretraining_data.py. ``python -m bert_tf.albert.create_pretraining_data``
is the same with ALBERT's defaults registered.
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import (AlbertDataArgs, is_albert_data_invocation,
                                       read_args as read_albert_args)
from bert_tf.bert.tasks.args import PretrainingDataArgs
from bert_tf.errors import FlagError
from bert_tf.xlnet.tasks.args import XLNetDataArgs, read_args as read_xlnet_args

# BERT's flags, then XLNet's data_utils.py flags, then ALBERT's, each from its argument class
# (TensorFlow-free; the task modules are imported in main).
bert_flags.define_args(PretrainingDataArgs, XLNetDataArgs, AlbertDataArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    # Each path reads its argument class first, then imports its task (BERT's imports no
    # TensorFlow until its records are written, issue 16).
    if FLAGS.sp_path:
        args = read_xlnet_args(XLNetDataArgs, FLAGS)
        from bert_tf.xlnet.tasks import pretraining_data as task
    elif is_albert_data_invocation(FLAGS):
        args = read_albert_args(AlbertDataArgs, FLAGS)
        from bert_tf.albert.tasks import pretraining_data as task
    else:
        bert_flags.check_no_xlnet_only_flags(FLAGS, "BERT's create_pretraining_data "
                                             "(--vocab_file)", PretrainingDataArgs)
        for name in ("input_file", "output_file", "vocab_file"):
            if FLAGS[name].value is None:
                raise FlagError(f"--{name} is required (or --sp_path and XLNet's data_utils.py "
                                "flags for XLNet records)")
        args = bert_flags.args_from_flags(PretrainingDataArgs, FLAGS)
        from bert_tf.bert.tasks import pretraining_data as task
    for line in task.run(args).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
