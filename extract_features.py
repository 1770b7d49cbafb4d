"""Extract per-token activations of BERT layers as JSON lines (original `extract_features.py`).

    python extract_features.py --input_file=input.txt --output_file=output.jsonl \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
      --max_seq_length=128 --batch_size=8

With no flags it runs the embedded default model (real all-MiniLM-L6-v2 weights converted to
the original layout) on an example input and says where it wrote the output. With XLNet's
--model_config_path / --spiece_model_file (and --init_checkpoint, --uncased) it runs an XLNet
model instead (bert_tf/xlnet/tasks/feature_extraction.py): same JSONL schema, SentencePiece
tokens.
"""

import dataclasses

from absl import logging

from bert_tf import flags as bert_flags

bert_flags.relax_startup_gc()  # before TensorFlow is imported

from bert_tf.bert.tasks.args import ExtractFeaturesArgs  # noqa: E402
from bert_tf.xlnet.tasks.args import (XLNetExtractFeaturesArgs,  # noqa: E402
                                      read_args as read_xlnet_args)
from bert_tf.defaults import EXAMPLE_INPUT, resolve_model_files  # noqa: E402

# BERT's flags, then XLNet's (--model_config_path, --spiece_model_file...), each from its
# task's argument class: a shared flag is registered with BERT's default and help; XLNet's
# meaning is added to the help.
# The task modules (TensorFlow) are imported in main, after the flags are parsed.
bert_flags.define_args(ExtractFeaturesArgs, XLNetExtractFeaturesArgs)
FLAGS = bert_flags.FLAGS


def main(_):
    logging.set_verbosity(logging.INFO)
    if bert_flags.is_xlnet_invocation(FLAGS):
        args = read_xlnet_args(XLNetExtractFeaturesArgs, FLAGS)
        from bert_tf.xlnet.tasks import feature_extraction as task
    else:
        bert_flags.check_no_xlnet_only_flags(FLAGS, "BERT (--bert_config_file)",
                                             ExtractFeaturesArgs)
        args = resolve_model_files(bert_flags.args_from_flags(ExtractFeaturesArgs, FLAGS),
                                   require_init_checkpoint=True)
        from bert_tf.bert.tasks import feature_extraction as task
    if not args.input_file:  # the example input
        args = dataclasses.replace(args, input_file=EXAMPLE_INPUT)
    for line in task.run(args).summary_lines():
        print(line)


if __name__ == "__main__":
    # every output is renamed into place before main returns: skip the interpreter's
    # teardown of TensorFlow (~1 s CPU, issue 16)
    bert_flags.run_main(main, skip_teardown=True)
