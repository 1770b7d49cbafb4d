"""The one flag vocabulary shared by every root script.

Each flag is declared once here, with the original release's type, default and meaning
(spec `bert.md` sections 5.1, 6.1, 8.1, 9.1, 10; `xlnet.md` section 8.1). A script asks for
the flags it uses by name, and may change a default where the original script of that name
had another one (for example ``max_seq_length`` is 128 in ``run_classifier.py`` and 384 in
``run_squad.py``)::

    from bert_tf import flags as bert_flags
    bert_flags.define("input_file", "output_file", "max_seq_length", max_seq_length=384)
    FLAGS = bert_flags.FLAGS

A flag means the same thing in every script. Flags beyond the originals are marked
"(bert_tf)" in their help text.
"""

import dataclasses
import signal
import sys
from typing import Any, Callable, Dict, Tuple

from absl import app, flags

from bert_tf.errors import BertTfError

FLAGS = flags.FLAGS

# name -> (kind, default, help). kind is one of "string", "bool", "integer", "float", "enum:a|b".
FLAG_SPECS: Dict[str, Tuple[str, Any, str]] = {
    # ---- files ------------------------------------------------------------------------------
    "input_file": ("string", None, "Input file(s): text, TFRecord or JSON depending on the script. "
                   "Comma-separated list; each item may be a glob."),
    "output_file": ("string", None, "Output file(s); comma-separated list where the script allows several."),
    "output_dir": ("string", None, "Directory for checkpoints (model.ckpt-N) and result files."),
    "data_dir": ("string", None, "Directory with the task's .tsv files (train.tsv, dev.tsv, test.tsv)."),
    "vocab_file": ("string", None, "WordPiece vocabulary file the BERT model was trained on."),
    "bert_config_file": ("string", None, "bert_config.json of the pre-trained BERT model."),
    "init_checkpoint": ("string", None, "Checkpoint prefix to start from (e.g. .../bert_model.ckpt)."),
    "train_file": ("string", None, "SQuAD json for training, e.g. train-v1.1.json."),
    "predict_file": ("string", None, "SQuAD json for predictions, e.g. dev-v1.1.json."),
    "task_name": ("string", None, "Name of the task to train (case-insensitive)."),
    # ---- text processing --------------------------------------------------------------------
    "do_lower_case": ("bool", True, "Lower case the input text (True for uncased models)."),
    "do_whole_word_mask": ("bool", False, "Mask whole words instead of single WordPieces."),
    "max_seq_length": ("integer", 128, "Maximum total input length after WordPiece tokenization; "
                       "longer sequences are truncated, shorter ones padded."),
    "max_predictions_per_seq": ("integer", 20, "Maximum number of masked LM predictions per sequence."),
    "random_seed": ("integer", 12345, "Random seed for data generation."),
    "dupe_factor": ("integer", 10, "Number of times to duplicate the input data (with different masks)."),
    "masked_lm_prob": ("float", 0.15, "Masked LM probability."),
    "short_seq_prob": ("float", 0.1, "Probability of creating sequences shorter than the maximum length."),
    "doc_stride": ("integer", 128, "Stride between chunks when splitting a long document."),
    "max_query_length": ("integer", 64, "Maximum number of question tokens; longer questions are truncated."),
    "n_best_size": ("integer", 20, "Number of n-best predictions to keep in nbest_predictions.json."),
    "max_answer_length": ("integer", 30, "Maximum length of a generated answer, in tokens."),
    "verbose_logging": ("bool", False, "Log warnings of the SQuAD post-processing."),
    "version_2_with_negative": ("bool", False, "SQuAD 2.0: some examples have no answer."),
    "null_score_diff_threshold": ("float", 0.0, "Predict null if null_score - best_non_null > threshold."),
    "layers": ("string", "-1,-2,-3,-4", "Comma-separated encoder layer indexes to output (-1 = last)."),
    # ---- modes and sizes --------------------------------------------------------------------
    "do_train": ("bool", False, "Whether to run training."),
    "do_eval": ("bool", False, "Whether to run eval on the dev set."),
    "do_predict": ("bool", False, "Whether to run the model in inference mode on the test set."),
    "batch_size": ("integer", 32, "Batch size for predictions."),
    "train_batch_size": ("integer", 32, "Total batch size for training."),
    "eval_batch_size": ("integer", 8, "Total batch size for eval."),
    "predict_batch_size": ("integer", 8, "Total batch size for predict."),
    "learning_rate": ("float", 5e-5, "The initial learning rate for Adam."),
    "num_train_epochs": ("float", 3.0, "Total number of training epochs to perform."),
    "num_train_steps": ("integer", 100000, "Number of training steps."),
    "num_warmup_steps": ("integer", 10000, "Number of warmup steps."),
    "warmup_proportion": ("float", 0.1, "Proportion of training for linear learning rate warmup."),
    "save_checkpoints_steps": ("integer", 1000, "How often to save the model checkpoint."),
    "iterations_per_loop": ("integer", 1000, "How many steps to make in each estimator call."),
    "max_eval_steps": ("integer", 100, "Maximum number of eval steps."),
    # ---- hardware and distribution ----------------------------------------------------------
    "use_tpu": ("bool", False, "Whether to use TPU or GPU/CPU."),
    "tpu_name": ("string", None, "The Cloud TPU to use: a name or a grpc://ip.address.of.tpu:8470 url."),
    "tpu_zone": ("string", None, "[Optional] GCE zone of the Cloud TPU."),
    "gcp_project": ("string", None, "[Optional] Project name of the Cloud TPU-enabled project."),
    "master": ("string", None, "[Optional] TensorFlow master URL."),
    "num_tpu_cores": ("integer", 8, "Only used if use_tpu is True: total number of TPU cores."),
    "use_one_hot_embeddings": ("bool", False, "Use one-hot word embeddings (the original's TPU path); "
                               "same numbers as a gather."),
    # ---- beyond the original ----------------------------------------------------------------
    "pooling": ("enum:none|cls|mean|max", "none", "(bert_tf) Also write one sentence embedding per line "
                "(SBERT-style pooling of the last layer) to <output_file>.embeddings.jsonl."),
    "use_xla": ("bool", False, "(bert_tf) Compile the model step with XLA."),
    "dtype": ("enum:float32|float16|bfloat16", "float32", "(bert_tf) Compute dtype (mixed precision; "
              "variables stay float32; float16 uses loss scaling)."),
    "gradient_accumulation_steps": ("integer", 1, "(bert_tf) Accumulate gradients over this many "
                                    "batches before each optimizer step."),
    "export_dir": ("string", None, "(bert_tf) Write a SavedModel with a serving signature here."),
    "num_workers": ("integer", 1, "(bert_tf) Number of parallel worker processes for tokenization."),
    # ---- XLNet run_classifier / extract_features (spec xlnet.md 8.1) ----------------------
    # Shared with BERT under the same name and meaning: init_checkpoint, data_dir, task_name,
    # do_train/do_eval/do_predict, max_seq_length, use_tpu, tpu_zone, gcp_project, master. Four
    # shared flags have another default in XLNet's run_classifier.py (learning_rate 1e-5,
    # train_batch_size 8, eval_batch_size 128, predict_batch_size 128): the XLNet path uses
    # those when the flag is not given on the command line (bert_tf/tasks/xlnet_classifier.py).
    # --output_dir holds only the TFRecords there; checkpoints go to --model_dir.
    "model_config_path": ("string", None, "XLNet: xlnet_config.json of the pre-trained model "
                          "(giving it, or --spiece_model_file, selects the XLNet path)."),
    "spiece_model_file": ("string", "", "XLNet: SentencePiece model (spiece.model)."),
    "model_dir": ("string", "", "XLNet: directory of the fine-tuned checkpoints (model.ckpt-N) "
                  "and eval_results.txt; separate from the init_checkpoint folder."),
    "predict_dir": ("string", None, "XLNet: directory for <task>.tsv and <task>.logits.json."),
    "uncased": ("bool", False, "XLNet: lower-case the text before SentencePiece."),
    "overwrite_data": ("bool", False, "XLNet: rewrite the TFRecords in --output_dir even if they "
                       "exist (else they are reused)."),
    "dropout": ("float", 0.1, "XLNet: dropout rate."),
    "dropatt": ("float", 0.1, "XLNet: attention dropout rate."),
    "clamp_len": ("integer", -1, "XLNet: clamp relative distances to this length (-1: no clamp)."),
    "summary_type": ("string", "last", "XLNet: how a sequence is summarised into one vector "
                     "(last, first, mean, attn)."),
    "use_summ_proj": ("bool", True, "XLNet: tanh projection of the sequence summary."),
    "use_bfloat16": ("bool", False, "XLNet: bfloat16 compute (recorded; bert_tf computes in "
                     "float32)."),
    "init": ("enum:normal|uniform", "normal", "XLNet: initialization method."),
    "init_std": ("float", 0.02, "XLNet: initialization std when init is normal."),
    "init_range": ("float", 0.1, "XLNet: initialization range when init is uniform."),
    "num_hosts": ("integer", 1, "XLNet: number of TPU hosts."),
    "num_core_per_host": ("integer", 8, "XLNet: TPU cores per host; on GPU the number of GPUs "
                          "(train_batch_size is then per GPU)."),
    "tpu_job_name": ("string", None, "XLNet: TPU worker job name."),
    "tpu": ("string", None, "XLNet: TPU name (BERT scripts: --tpu_name)."),
    "iterations": ("integer", 1000, "XLNet: training steps per loop (min(iterations, save_steps))."),
    "train_steps": ("integer", 1000, "XLNet: number of training steps."),
    "warmup_steps": ("integer", 0, "XLNet: number of linear warmup steps."),
    "lr_layer_decay_rate": ("float", 1.0, "XLNet: top layer lr[L] = learning_rate, lower layer "
                            "lr[l-1] = lr[l] * lr_layer_decay_rate (scales gradients)."),
    "min_lr_ratio": ("float", 0.0, "XLNet: final learning rate / learning_rate of the decay."),
    "clip": ("float", 1.0, "XLNet: gradient clipping (global norm)."),
    "max_save": ("integer", 0, "XLNet: number of checkpoints kept (0: keep all)."),
    "save_steps": ("integer", None, "XLNet: save a checkpoint every save_steps (None: at the end "
                   "only)."),
    "weight_decay": ("float", 0.0, "XLNet: weight decay rate (0: plain Adam with bias correction)."),
    "adam_epsilon": ("float", 1e-8, "XLNet: Adam epsilon."),
    "decay_method": ("string", "poly", "XLNet: learning-rate decay, poly or cos."),
    "predict_threshold": ("float", 0.0, "XLNet: threshold of logit1 - logit0 for binary "
                          "predictions."),
    "eval_split": ("string", "dev", "XLNet: split evaluated / predicted: dev or test."),
    "eval_all_ckpt": ("bool", False, "XLNet: evaluate every checkpoint in --model_dir (else the "
                      "last one)."),
    "predict_ckpt": ("string", None, "XLNet: checkpoint for do_predict (None: the last one in "
                     "--model_dir)."),
    "shuffle_buffer": ("integer", 2048, "XLNet: buffer size of the training shuffle."),
    "num_passes": ("integer", 1, "XLNet: copies of the training data written to the TFRecord."),
    "cls_scope": ("string", None, "XLNet: classifier head scope (classification_<cls_scope>; "
                  "default: the task name)."),
    "is_regression": ("bool", False, "XLNet: regression task (e.g. sts-b): one output, squared "
                      "error, Pearson r."),
}


def define(*names: str, **default_overrides: Any) -> None:
    """Declares the named flags from :data:`FLAG_SPECS` on absl's global ``FLAGS``.

    Args:
      *names: flag names, each a key of :data:`FLAG_SPECS`.
      **default_overrides: ``name=value`` for flags whose default differs in this script (the
        original script of the same name had another default). Each name must also be in
        ``names``.

    Raises:
      KeyError: a name is not in the vocabulary (add it to FLAG_SPECS first).
      ValueError: an override names a flag that is not requested.

    A flag already defined (a module imported twice, tests) is left as it is.
    """
    unknown = [n for n in default_overrides if n not in names]
    if unknown:
        raise ValueError(f"default overrides for flags not requested: {unknown}")
    # Registered as the running script's own flags, so `--help` / `--helpshort` list them.
    module = sys.argv[0] if sys.argv and sys.argv[0] else None
    for name in names:
        kind, default, help_text = FLAG_SPECS[name]
        default = default_overrides.get(name, default)
        if name in FLAGS:
            continue
        if kind == "string":
            flags.DEFINE_string(name, default, help_text, module_name=module)
        elif kind == "bool":
            flags.DEFINE_bool(name, default, help_text, module_name=module)
        elif kind == "integer":
            flags.DEFINE_integer(name, default, help_text, module_name=module)
        elif kind == "float":
            flags.DEFINE_float(name, default, help_text, module_name=module)
        elif kind.startswith("enum:"):
            flags.DEFINE_enum(name, default, kind[len("enum:"):].split("|"), help_text,
                              module_name=module)
        else:  # pragma: no cover - a bad FLAG_SPECS entry
            raise ValueError(f"unknown flag kind {kind!r} for {name}")


def args_from_flags(args_class, flag_values=FLAGS):
    """An instance of a task's argument dataclass read from parsed flags.

    Args:
      args_class: a dataclass whose fields are flag names (e.g. ``ClassifierArgs``).
      flag_values: absl ``FLAGS`` (or any object with those attributes).

    Raises:
      AttributeError: a field that is not a defined flag.
    """
    return args_class(**{f.name: getattr(flag_values, f.name)
                         for f in dataclasses.fields(args_class)})


def run_main(main: Callable[[Any], Any]) -> None:
    """Runs ``main`` under absl, with one-line endings for errors and interruptions.

    * a :class:`BertTfError` prints ``error: <message>`` and exits 1;
    * Ctrl-C prints ``interrupted`` and exits 130; SIGTERM exits 143. Both unwind normally, so
      the temporary files of atomic outputs are removed and the last checkpoint written stays
      the one a re-run resumes from.

    Use at the bottom of every root script: ``if __name__ == "__main__": run_main(main)``.
    """

    def _on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    def _wrapped(argv):
        signal.signal(signal.SIGTERM, _on_sigterm)
        try:
            return main(argv)
        except BertTfError as e:
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)

    app.run(_wrapped)
