"""Masked-LM + next-sentence pre-training and evaluation (original `run_pretraining.py`).

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
      --num_warmup_steps=10 --learning_rate=2e-5

Same flags and defaults as the original, plus ``--use_xla``, ``--dtype`` and
``--gradient_accumulation_steps``. The work is done by
:func:`bert_tf.bert.tasks.pretraining.run`.

With XLNet's flags (``--record_info_dir``, ``--model_dir``, ``--seq_len``, ``--mem_len``...;
the original XLNet ``train.py`` / ``train_gpu.py``) it pretrains XLNet instead: see
bert_tf/xlnet/tasks/pretraining.py.

With ``--albert_config_file`` (the original ALBERT ``run_pretraining.py``: ``--optimizer`` lamb
or adamw, ``--poly_power``, ``--start_warmup_step``, ``--init_from_group0``; ALBERT's defaults
for the flags not given) it pretrains ALBERT (masked LM + sentence order) on the records of
ALBERT's create_pretraining_data: see bert_tf/albert/tasks/pretraining.py (also
``python -m bert_tf.albert.run_pretraining``).
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.albert.tasks.args import AlbertPretrainingArgs, read_args as read_albert_args
from bert_tf.bert.tasks.args import PretrainingArgs
from bert_tf.errors import FlagError
from bert_tf.xlnet.tasks.args import XLNetPretrainingArgs, read_args as read_xlnet_args

# BERT's flags, then XLNet's train.py flags, then ALBERT's, each from its task's argument
# class (TensorFlow-free; the task modules are imported in main).
bert_flags.define_args(PretrainingArgs, XLNetPretrainingArgs, AlbertPretrainingArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    if FLAGS.record_info_dir:
        args = read_xlnet_args(XLNetPretrainingArgs, FLAGS)
        from bert_tf.xlnet.tasks import pretraining as xlnet_pretraining
        xlnet_pretraining.make_model_dir(args)
        result = xlnet_pretraining.run(args)
    elif bert_flags.flag_given(FLAGS, "albert_config_file"):
        args = read_albert_args(AlbertPretrainingArgs, FLAGS)
        from bert_tf.albert.tasks import pretraining as albert_pretraining
        result = albert_pretraining.run(args)
    else:
        bert_flags.check_no_xlnet_only_flags(FLAGS, "BERT (--bert_config_file)", PretrainingArgs)
        for name in ("input_file", "bert_config_file", "output_dir"):
            if FLAGS[name].value is None:
                raise FlagError(f"--{name} is required (or --record_info_dir and XLNet's "
                                "train.py flags to pretrain XLNet)")
        args = bert_flags.args_from_flags(PretrainingArgs, FLAGS)
        from bert_tf.bert.tasks import pretraining
        result = pretraining.run(args)
    for line in result.summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
