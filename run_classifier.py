"""BERT fine-tuning for sentence(-pair) classification (original `run_classifier.py`).

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
      --output_dir=/tmp/mrpc_output/

Writes train/eval/predict.tf_record, model.ckpt-N, eval_results.txt and test_results.tsv to
--output_dir as the original; tasks cola, mnli, mrpc, xnli, sst-2, qnli, qqp, rte, wnli,
sts-b. Beyond the original: --export_dir (SavedModel with a serving signature); --siamese
(a Sentence-BERT bi-encoder: bert_tf/bert/tasks/siamese.py); with none of
--bert_config_file, --vocab_file, --init_checkpoint the embedded MiniLM default model is used.
See bert_tf/bert/tasks/classifier.py.

With XLNet's flags (--model_config_path, --spiece_model_file, --model_dir, --train_steps...;
the original XLNet run_classifier.py) it fine-tunes an XLNet model instead: see
bert_tf/xlnet/tasks/classifier.py.

With --albert_config_file (the flags of the original ALBERT run_classifier.py, --spm_model_file,
--train_step, --warmup_step, --optimizer, --data_dir holding MRPC/, CoLA/...) it fine-tunes,
evaluates and predicts with an ALBERT model, ALBERT's defaults for the flags not given:
see bert_tf/albert/tasks/classifier.py (also `python -m bert_tf.albert.run_classifier`).
"""

from absl import logging

from bert_tf import flags as bert_flags

bert_flags.relax_startup_gc()  # before TensorFlow is imported

from bert_tf.albert.tasks.args import AlbertClassifierArgs, read_args as read_albert_args  # noqa: E402
from bert_tf.bert.tasks.args import ClassifierArgs  # noqa: E402
from bert_tf.defaults import resolve_model_files  # noqa: E402
from bert_tf.errors import FlagError  # noqa: E402
from bert_tf.xlnet.tasks.args import XLNetClassifierArgs, read_args as read_xlnet_args  # noqa: E402

# BERT's flags, then XLNet's run_classifier flags (spec xlnet.md 8.1), then ALBERT's, each
# from its task's argument class: a shared flag is registered with BERT's default; the XLNet
# and ALBERT paths read their own unless the flag is given.
# The task modules (TensorFlow) are imported in main, after the flags are parsed: --help
# answers without them (the argument classes are TensorFlow-free).
bert_flags.define_args(ClassifierArgs, XLNetClassifierArgs, AlbertClassifierArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    if bert_flags.flag_given(FLAGS, "siamese") and FLAGS.siamese and (
            bert_flags.is_xlnet_invocation(FLAGS)
            or bert_flags.flag_given(FLAGS, "albert_config_file")):
        raise FlagError("--siamese: only for BERT models (--bert_config_file), not XLNet or "
                        "ALBERT")
    if bert_flags.is_xlnet_invocation(FLAGS):
        args = read_xlnet_args(XLNetClassifierArgs, FLAGS)
        from bert_tf.xlnet.tasks import classifier as task
    elif bert_flags.flag_given(FLAGS, "albert_config_file"):
        args = read_albert_args(AlbertClassifierArgs, FLAGS)
        from bert_tf.albert.tasks import classifier as task
    else:
        bert_flags.check_no_xlnet_only_flags(FLAGS, "BERT (--bert_config_file)", ClassifierArgs)
        args = bert_flags.args_from_flags(ClassifierArgs, FLAGS)
        from bert_tf.bert.tasks import classifier
        classifier.require_args(args)  # before the default model is resolved
        args = resolve_model_files(args)
        if args.siamese:  # bert_tf: the Sentence-BERT bi-encoder (issue 13)
            from bert_tf.bert.tasks import siamese as task
        else:
            task = classifier
    for line in task.run(args).summary_lines():
        print(line)


if __name__ == "__main__":
    # a run that does not train has every output renamed into place (or closed) when main
    # returns: skip the interpreter's teardown of TensorFlow (issue 16, ~1 s CPU); training
    # runs keep it
    bert_flags.run_main(main, skip_teardown=lambda: not FLAGS.do_train)
