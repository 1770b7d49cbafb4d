"""``python -m bert_tf.albert.run_classifier``: ALBERT's run_classifier.py.

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--max_seq_length`` 512, ``--train_step`` 1000, ``--optimizer`` adamw,
``--data_dir`` the GLUE folder holding ``MRPC/``...). ``--spm_model_file`` may be left out
(the original requires it, empty for WordPiece). See bert_tf/albert/tasks/classifier.py for
what is done better (``--do_eval`` / ``--do_predict`` without polling or ``model.ckpt-best``).

An entry point (level "entry points" of tests/test_layering.py).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import AlbertClassifierArgs, read_args

# The task module (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define_args(AlbertClassifierArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    from bert_tf.albert.tasks import classifier
    logging.set_verbosity(logging.INFO)
    for line in classifier.run(read_args(AlbertClassifierArgs, FLAGS)).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
