"""Fine-tune BERT on SQuAD 1.1 / 2.0 and predict answers (original `run_squad.py`).

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
      --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
      --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 --learning_rate=3e-5 \
      --num_train_epochs=2.0 --max_seq_length=384 --doc_stride=128 --output_dir=/tmp/squad_base/

Writes model.ckpt-N (original layout), train.tf_record, eval.tf_record, predictions.json,
nbest_predictions.json, null_odds.json (with --version_2_with_negative) and, when the predict
file has answers, eval_results.json (official metrics) to --output_dir. See
`bert_tf.bert.tasks.squad`.

With XLNet's flags (--model_config_path, --spiece_model_file, --model_dir, --predict_dir...;
the original XLNet run_squad.py, with --do_prepro, SQuAD 2.0 beam heads and the automatic
null-threshold search) it runs XLNet instead: see bert_tf/xlnet/tasks/squad.py.

With --albert_config_file (the flags of the original ALBERT run_squad_v1.py, or with
--version_2_with_negative those of run_squad_v2.py: --spm_model_file, --train_feature_file,
--predict_feature_file, --predict_feature_left_file, --start_n_top...) it runs ALBERT, ALBERT's
defaults for the flags not given: see bert_tf/albert/tasks/squad.py (also
`python -m bert_tf.albert.run_squad_v1` / `run_squad_v2`).
"""

from absl import logging

from bert_tf import flags as bert_flags

bert_flags.relax_startup_gc()  # before TensorFlow is imported

from bert_tf.albert.tasks.args import AlbertSquadArgs, read_args as read_albert_args  # noqa: E402
from bert_tf.bert.tasks.args import SquadArgs  # noqa: E402
from bert_tf.xlnet.tasks.args import XLNetSquadArgs, read_args as read_xlnet_args  # noqa: E402
from bert_tf.defaults import resolve_model_files  # noqa: E402

# BERT's flags (the original's defaults: max_seq_length 384), then XLNet's run_squad flags
# (spec xlnet.md 9.1), then ALBERT's, each from its task's argument class: a shared flag is
# registered with BERT's default; the XLNet and ALBERT paths read their own unless the flag is
# given.
bert_flags.define_args(SquadArgs, XLNetSquadArgs, AlbertSquadArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    if bert_flags.is_xlnet_invocation(FLAGS):
        args = read_xlnet_args(XLNetSquadArgs, FLAGS)
        from bert_tf.xlnet.tasks import squad as xlnet_squad
        result = xlnet_squad.run(args)
    elif bert_flags.flag_given(FLAGS, "albert_config_file"):
        result = albert_main(FLAGS)
    else:
        bert_flags.check_no_xlnet_only_flags(FLAGS, "BERT (--bert_config_file)", SquadArgs)
        args = bert_flags.args_from_flags(SquadArgs, FLAGS)
        from bert_tf.bert.tasks import squad
        squad.require_args(args)  # before the default model is resolved
        result = squad.run(resolve_model_files(args))
    for line in result.summary_lines():
        print(line)


def albert_main(flag_values):
    """The ALBERT path: run_squad_v2's with --version_2_with_negative, else run_squad_v1's
    (:func:`bert_tf.albert.tasks.squad.run`); returns its result."""
    args = read_albert_args(AlbertSquadArgs, flag_values)
    version = 2 if flag_values.version_2_with_negative else 1
    from bert_tf.albert.tasks import squad as albert_squad
    return albert_squad.run(args, version)


if __name__ == "__main__":
    # a run that does not train has every output renamed into place (or closed) when main
    # returns: skip the interpreter's teardown of TensorFlow (issue 16, ~1 s CPU); training
    # runs keep it
    bert_flags.run_main(main, skip_teardown=lambda: not FLAGS.do_train)
