"""Masked-LM + next-sentence pre-training and evaluation (original `run_pretraining.py`).

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output \
      --do_train=True --do_eval=True --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --train_batch_size=32 \
      --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 \
      --num_warmup_steps=10 --learning_rate=2e-5

Same flags and defaults as the original, plus ``--use_xla``, ``--dtype`` and
``--gradient_accumulation_steps``. The work is done by
:func:`bert_tf.tasks.pretraining.run_pretraining`.
"""

from absl import flags, logging

from bert_tf import flags as bert_flags

bert_flags.define("bert_config_file", "input_file", "output_dir", "init_checkpoint",
                  "max_seq_length", "max_predictions_per_seq", "do_train", "do_eval",
                  "train_batch_size", "eval_batch_size", "learning_rate", "num_train_steps",
                  "num_warmup_steps", "save_checkpoints_steps", "iterations_per_loop",
                  "max_eval_steps", "use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master",
                  "num_tpu_cores", "use_xla", "dtype", "gradient_accumulation_steps")
FLAGS = bert_flags.FLAGS


def main(_):
    from bert_tf.tasks.pretraining import PretrainingArgs, run_pretraining
    from bert_tf.training.eval_results import format_eval_results

    logging.set_verbosity(logging.INFO)
    result = run_pretraining(PretrainingArgs.from_flags(FLAGS))
    if result.train is not None:
        steps = result.train_steps_run
        rate = steps / result.train_seconds if result.train_seconds > 0 else 0.0
        print(f"trained to global_step {result.train.global_step} ({steps} steps, "
              f"{rate:.2f} steps/s); last loss {result.train.last_loss}; "
              f"checkpoint {result.train.checkpoint}")
    if result.eval_metrics is not None:
        print(f"wrote {result.eval_results_file}:")
        for line in format_eval_results(result.eval_metrics).splitlines():
            print(f"  {line}")


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("output_dir")
    bert_flags.run_main(main)
