"""``python -m bert_tf.albert.run_squad_v2``: ALBERT's run_squad_v2.py (SQuAD v2.0).

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--max_seq_length`` 384, ``--doc_stride`` 128, ``--num_train_epochs``
3, ``--start_n_top`` / ``--end_n_top`` 5, ``--dropout_prob`` 0.1; ``--spm_model_file``,
``--albert_config_file``, ``--output_dir`` required). See bert_tf/albert/tasks/squad.py for
the files written and what is done differently (``--do_predict`` predicts once with the
newest checkpoint instead of polling ``--output_dir``).

An entry point (level "entry points" of tests/test_layering.py).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import ALBERT_SQUAD_V2_FLAGS, AlbertSquadArgs, read_args

# v2's part of AlbertSquadArgs' fields (bert_tf/albert/tasks/args.py), with run_squad_v2.py's
# profile; the task module (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define(*ALBERT_SQUAD_V2_FLAGS, profile=bert_flags.ALBERT_RUN_SQUAD_V2)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    from bert_tf.albert.tasks import squad  # after the flags: --help needs no TensorFlow
    for line in squad.run(read_args(AlbertSquadArgs, FLAGS), version=2).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
