"""``python -m bert_tf.albert.run_squad_v1``: ALBERT's run_squad_v1.py (SQuAD v1.1).

The original google-research/albert command line with only the module prefix changed, with
its flags and defaults (``--max_seq_length`` 384, ``--doc_stride`` 128, ``--num_train_epochs``
3; ``--spm_model_file``,
``--albert_config_file``, ``--output_dir`` required). See bert_tf/tasks/albert_squad.py for
the files written and what is done differently (``--do_predict`` predicts once with the
newest checkpoint instead of polling ``--output_dir``).

An entry point (level "entry points" of tests/test_layering.py).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.tasks.albert_squad import V1_FLAGS, run_from_flags

bert_flags.define(*V1_FLAGS, profile=bert_flags.ALBERT_RUN_SQUAD_V1)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    result = run_from_flags(FLAGS, version=1)
    if result.get("train") is not None:
        print(f"trained to global_step {result['train'].global_step}: "
              f"{result['train'].checkpoint}")
    if "files" in result:
        print(f"predicted {result['num_predict_examples']} questions: "
              + ", ".join(result["files"]))
    if result.get("metrics"):
        print(", ".join(f"{k} = {str(v)}" for k, v in sorted(result["metrics"].items())))


if __name__ == "__main__":
    bert_flags.run_main(main)
