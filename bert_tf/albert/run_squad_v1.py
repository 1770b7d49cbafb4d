"""``python -m bert_tf.albert.run_squad_v1``: ALBERT's run_squad_v1.py (SQuAD v1.1).

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--max_seq_length`` 384, ``--doc_stride`` 128, ``--num_train_epochs``
3; ``--spm_model_file``,
``--albert_config_file``, ``--output_dir`` required). See bert_tf/albert/tasks/squad.py for
the files written and what is done differently (``--do_predict`` predicts once with the
newest checkpoint instead of polling ``--output_dir``).

An entry point (level "entry points" of tests/test_layering.py).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import ALBERT_SQUAD_V1_FLAGS, AlbertSquadArgs, read_args

# v1's part of AlbertSquadArgs' fields (bert_tf/albert/tasks/args.py), with run_squad_v1.py's
# profile; the task module (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define(*ALBERT_SQUAD_V1_FLAGS, profile=bert_flags.ALBERT_RUN_SQUAD_V1)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    from bert_tf.albert.tasks import squad  # after the flags: --help needs no TensorFlow
    for line in squad.run(read_args(AlbertSquadArgs, FLAGS), version=1).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
