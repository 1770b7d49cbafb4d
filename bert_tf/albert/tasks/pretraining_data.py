"""``create_pretraining_data.py`` with ALBERT's flags: the original google-research/albert
``create_pretraining_data.py`` command line (golden README ``albert`` section C).

    python -m bert_tf.albert.create_pretraining_data --input_file=sample_text.txt \
        --output_file=sample_text.tfrecord --vocab_file=vocab.txt --max_seq_length=128 \
        --max_predictions_per_seq=20 --dupe_factor=5 --ngram=3

or the root ``create_pretraining_data.py`` with an ALBERT-only flag (``--spm_model_file``,
``--ngram``, ``--favor_shorter_ngram``, ``--random_next_sentence``, ``--do_permutation``).
The work is :func:`bert_tf.albert.data.pretraining.create_albert_pretraining_data`.
"""

from dataclasses import dataclass
from typing import List

from bert_tf.albert.tasks.args import AlbertDataArgs
from bert_tf.errors import FlagError


# The original's --input_file_mode values that read the file: text ("r") or bytes ("rb",
# decoded as UTF-8 by convert_to_unicode / preprocess_text); both give the same lines.
READ_MODES = ("r", "rb")


@dataclass
class AlbertDataResult:
    """What :func:`run` wrote: ``num_instances`` records to ``output_file``."""

    num_instances: int
    output_file: str

    def summary_lines(self) -> List[str]:
        """What ``create_pretraining_data.py`` (ALBERT flags) and ``python -m
        bert_tf.albert.create_pretraining_data`` print."""
        return [f"wrote {self.num_instances} ALBERT instances to {self.output_file}"]


def run(args: AlbertDataArgs) -> AlbertDataResult:
    """Writes the records (:func:`bert_tf.albert.data.pretraining.create_albert_pretraining_data`).

    Raises:
      FlagError: ``--input_file`` / ``--output_file`` missing, or a bad value (names the
        flag). ConfigError, InputDataError: one line naming the file; nothing is written.
    """
    for name in ("input_file", "output_file"):
        if not getattr(args, name):
            raise FlagError(f"--{name} is required")
    if not args.vocab_file and not args.spm_model_file:
        raise FlagError("--vocab_file (WordPiece) or --spm_model_file (SentencePiece) is "
                        "required")
    if args.input_file_mode not in READ_MODES:
        raise FlagError(f"--input_file_mode={args.input_file_mode!r}: not a read mode of the "
                        "original's tf.gfile.GFile(input_file, mode) (it would not read, or, "
                        "with 'w', empty the input file): r or rb")
    # Imported here: TensorFlow-free until run (issue 16).
    from bert_tf.albert.data.pretraining import create_albert_pretraining_data

    num_instances = create_albert_pretraining_data(
        args.input_file, args.output_file, vocab_file=args.vocab_file,
        spm_model_file=args.spm_model_file, do_lower_case=args.do_lower_case,
        do_whole_word_mask=args.do_whole_word_mask, do_permutation=args.do_permutation,
        favor_shorter_ngram=args.favor_shorter_ngram,
        random_next_sentence=args.random_next_sentence, max_seq_length=args.max_seq_length,
        ngram=args.ngram, max_predictions_per_seq=args.max_predictions_per_seq,
        random_seed=args.random_seed, dupe_factor=args.dupe_factor,
        masked_lm_prob=args.masked_lm_prob, short_seq_prob=args.short_seq_prob)
    return AlbertDataResult(num_instances, args.output_file)


