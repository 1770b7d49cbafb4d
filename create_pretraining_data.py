"""Creates masked-LM / next-sentence pretraining TFRecords from raw text.

Same flags, defaults and output as the original `create_pretraining_data.py` (spec `bert.md`
section 5), plus ``--num_workers`` (parallel tokenization). The work is done by
:func:`bert_tf.data.pretraining.create_pretraining_data`.

    python create_pretraining_data.py --input_file=sample_text.txt \
        --output_file=/tmp/tf_examples.tfrecord --vocab_file=vocab.txt \
        --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
        --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5
"""

from absl import flags, logging

from bert_tf import flags as bert_flags

bert_flags.define("input_file", "output_file", "vocab_file", "do_lower_case", "do_whole_word_mask",
                  "max_seq_length", "max_predictions_per_seq", "random_seed", "dupe_factor",
                  "masked_lm_prob", "short_seq_prob", "num_workers",
                  profile=bert_flags.CREATE_PRETRAINING_DATA)
FLAGS = bert_flags.FLAGS


def main(_):
    from bert_tf.data.pretraining import create_pretraining_data

    logging.set_verbosity(logging.INFO)
    create_pretraining_data(
        input_file=FLAGS.input_file, output_file=FLAGS.output_file, vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case, do_whole_word_mask=FLAGS.do_whole_word_mask,
        max_seq_length=FLAGS.max_seq_length, max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed, dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob, short_seq_prob=FLAGS.short_seq_prob,
        num_workers=FLAGS.num_workers)


if __name__ == "__main__":
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("output_file")
    flags.mark_flag_as_required("vocab_file")
    bert_flags.run_main(main)
