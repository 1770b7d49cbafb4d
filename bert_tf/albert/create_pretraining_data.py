"""``python -m bert_tf.albert.create_pretraining_data``: ALBERT's create_pretraining_data.py.

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--max_seq_length`` 512, ``--dupe_factor`` 40, ``--ngram`` 3,
``--do_whole_word_mask`` True, ...). ``--random_seed`` also seeds numpy's n-gram draws (the
original leaves numpy unseeded, so its records are not reproducible). ``--vocab_file`` is
needed only without ``--spm_model_file`` (the original always requires it).

An entry point (level "entry points" of tests/test_layering.py): flags, then one call into
:mod:`bert_tf.albert.tasks.pretraining_data`.
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import AlbertDataArgs, read_args

# The task module (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define_args(AlbertDataArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    from bert_tf.albert.tasks import pretraining_data
    logging.set_verbosity(logging.INFO)
    result = pretraining_data.run(read_args(AlbertDataArgs, FLAGS))
    for line in result.summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
