"""XLNet fine-tuning on RACE (the original XLNet `run_race.py`, spec xlnet.md 10).

    python run_race.py --do_train=True --do_eval=True --eval_split=dev --data_dir=RACE \
      --output_dir=proc_data/race --model_dir=exp/race \
      --init_checkpoint=$LARGE/xlnet_model.ckpt --model_config_path=$LARGE/xlnet_config.json \
      --spiece_model_file=$LARGE/spiece.model --max_seq_length=512 --max_qa_length=128 \
      --uncased=False --train_batch_size=8 --train_steps=12000 --warmup_steps=1000 \
      --learning_rate=2e-5 --eval_batch_size=32

Reads --data_dir/<split>/{middle,high}/* in sorted file order (the original lists folders
unsorted, so its order depends on the file system); caches the TFRecords in --output_dir;
writes model.ckpt-N (original variable names) and eval_results.txt to --model_dir.
--original_context_mutation=False gives the intended feature layout instead of the
original's. See bert_tf/xlnet/tasks/race.py.
"""

from absl import logging

from bert_tf import flags as bert_flags
from bert_tf.xlnet.tasks.args import XLNetRaceArgs

# bert_tf.xlnet.tasks.race (TensorFlow) is imported in main, after the flags are parsed.
bert_flags.define_args(XLNetRaceArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    args = bert_flags.args_from_flags(XLNetRaceArgs, FLAGS)
    from bert_tf.xlnet.tasks import race
    for line in race.run(args).summary_lines():
        print(line)


if __name__ == "__main__":
    bert_flags.run_main(main)
