"""``python -m bert_tf.albert.run_pretraining``: ALBERT's run_pretraining.py (masked LM +
sentence order, LAMB or AdamW).

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--optimizer`` lamb, ``--learning_rate`` 0.00176,
``--train_batch_size`` 4096, ``--num_train_steps`` 125000, ``--num_warmup_steps`` 3125,
``--do_train`` True). See bert_tf/albert/tasks/pretraining.py.

An entry point (level "entry points" of tests/test_layering.py).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import AlbertPretrainingArgs, read_args

# The task module (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define_args(AlbertPretrainingArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    from bert_tf.albert.tasks import pretraining
    logging.set_verbosity(logging.INFO)
    for line in pretraining.run(read_args(AlbertPretrainingArgs, FLAGS)).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
