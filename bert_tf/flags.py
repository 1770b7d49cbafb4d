"""The one flag vocabulary shared by every root script, and its two profiles, BERT and XLNet.

Each flag is declared once in :data:`FLAG_SPECS`, with the original release's type, default and
meaning (spec `bert.md` sections 5.1, 6.1, 8.1, 9.1, 10; `xlnet.md` section 8.1). A flag means
the same thing in every script. Flags beyond the originals are marked "(bert_tf)" in their help
text; the XLNet-only ones "XLNet:".

A :class:`Profile` says which flags a family uses and where its original gives a flag another
default or meaning: :data:`BERT`, :data:`XLNET` (``learning_rate`` 1e-5, ``train_batch_size``
8, ``--output_dir`` holding only the TFRecords...). A root script's profile adds the defaults
where the original script of that name had another one (``max_seq_length`` is 128 in
``run_classifier.py`` and 384 in :data:`RUN_SQUAD`). The same profile gives the defaults of
the flags a script defines and of its task's argument class::

    from bert_tf import flags as bert_flags
    bert_flags.define("train_file", "max_seq_length", profile=bert_flags.RUN_SQUAD)
    FLAGS = bert_flags.FLAGS

    @bert_flags.args_class(bert_flags.RUN_SQUAD)
    class SquadArgs:
        train_file: Optional[str]
        max_seq_length: int              # 384

    args = bert_flags.args_from_flags(SquadArgs, FLAGS)

Scripts serving both families (``run_classifier.py``, ``extract_features.py``) declare both
with :func:`define_profiles`; :func:`is_xlnet_invocation` tells which path a command line takes.
"""

import dataclasses
import os
import posixpath
import signal
import sys
import types
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import app, flags

from bert_tf.atomic_files import remove_stale_temp_files
from bert_tf.errors import BertTfError, FlagError, StdoutWriteError
from bert_tf.output_locks import output_locks

FLAGS = flags.FLAGS

# name -> (kind, default, help). kind is one of "string", "bool", "integer", "float", "enum:a|b".
# Defaults and help texts are BERT's; the XLNet-only flags follow in _XLNET_SPECS; XLNet's own
# defaults and meanings of the shared flags are in the XLNET profile below.
_BERT_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
    # sentence embeddings and Siamese fine-tuning (Sentence-BERT; issue 13)
    "normalize": ("bool", False, "(bert_tf) extract_features with --pooling: scale each sentence "
                  "embedding to unit L2 norm (as sentence-transformers' Normalize module)."),
    "siamese": ("bool", False, "(bert_tf) run_classifier: train/evaluate/predict a Siamese "
                "bi-encoder (Sentence-BERT: each sentence alone, mean pooling): sts-b with the "
                "cosine-similarity regression objective, the pair tasks (mrpc, mnli, xnli, qnli, "
                "qqp, rte, wnli) with the softmax objective on (u, v, |u-v|)."),
    "use_xla": ("bool", False, "(bert_tf) Compile the model step with XLA. Off by default: on 2 CPU cores (bench/bench_encoder_peers.py, bench_train_step_peers.py) it made MiniLM inference 1.10x faster, BERT-Base inference about even, and the training step 0.90x; it pads batches to fixed shapes."),
    "dtype": ("enum:float32|float16|bfloat16", "float32", "(bert_tf) Compute dtype (mixed precision; "
              "variables stay float32; float16 uses loss scaling)."),
    "gradient_accumulation_steps": ("integer", 1, "(bert_tf) Accumulate gradients over this many "
                                    "batches before each optimizer step."),
    "export_dir": ("string", None, "(bert_tf) Write a SavedModel with a serving signature here."),
    "num_workers": ("integer", 1, "(bert_tf) Number of parallel worker processes for tokenization. "
                    "BERT's create_pretraining_data.py uses them only for 16 MB of local input "
                    "or more (below that the processes cost more than they save: it runs in "
                    "one process, the same records)."),
    # ---- long inputs by sliding windows (issue 13) ----
    "window_pooling": ("enum:mean|max", None, "(bert_tf, beyond the original) With --doc_stride: "
                       "how run_classifier.py pools the logits of an example's windows into its "
                       "one prediction (unset: mean)."),
}

# ---- XLNet run_classifier / extract_features (spec xlnet.md 8.1) -------------------------------
# The flags XLNet has and BERT has not. The flags both have (init_checkpoint, data_dir,
# max_seq_length, learning_rate...) are in _BERT_SPECS; where XLNet gives them another default
# or meaning, the XLNET profile says so.
_XLNET_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
    "use_bfloat16": ("bool", False, "XLNet: bfloat16 compute (Keras' mixed_bfloat16 in "
                     "run_classifier, run_squad and run_race: float32 variables and "
                     "checkpoints)."),
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

# ---- XLNet data_utils.py (spec xlnet.md 6.1): create_pretraining_data.py with --sp_path ---------
_XLNET_DATA_SPECS: Dict[str, Tuple[str, Any, str]] = {
    "sp_path": ("string", "", "XLNet data: SentencePiece model (giving it selects XLNet's "
                "data_utils.py path of create_pretraining_data.py)."),
    "bsz_per_host": ("integer", 32, "XLNet data: batch size per host (streams written side by "
                     "side)."),
    "seq_len": ("integer", 512, "XLNet: sequence length."),
    "reuse_len": ("integer", 256, "XLNet: tokens of a sequence reused as memory by the next "
                  "(the first half of each record)."),
    "bi_data": ("bool", True, "XLNet: forward and backward streams (the second half of each "
                "core's rows reversed)."),
    "mask_alpha": ("integer", 6, "XLNet: how many tokens form a group (span context)."),
    "mask_beta": ("integer", 1, "XLNet: how many tokens to mask within each group."),
    "use_eod": ("bool", True, "XLNet data: an <eod> token at each document end."),
    "from_raw_text": ("bool", True, "XLNet data: the input is raw text (else lines of "
                      "space-separated ids)."),
    "num_predict": ("integer", 85, "XLNet: number of tokens to predict per sequence."),
    "input_glob": ("string", "data/example/*.txt", "XLNet data: input text files (glob)."),
    "save_dir": ("string", "proc_data/example", "XLNet data: output folder (tfrecords/ and "
                 "corpus_info.json)."),
    "split": ("enum:train|dev|test", "train", "XLNet data: the split written."),
    "pass_id": ("integer", 0, "XLNet data: id of this pass over the corpus (numpy seed 100 * task "
                "+ pass_id)."),
    "num_task": ("integer", 1, "XLNet data: number of tasks the input files are split into."),
    "task": ("integer", 0, "XLNet data: this task's index (files task::num_task)."),
}

# ---- XLNet train.py / train_gpu.py (spec xlnet.md 7.1, 7.2): run_pretraining.py in XLNet mode ---
_XLNET_PRETRAIN_SPECS: Dict[str, Tuple[str, Any, str]] = {
    "record_info_dir": ("string", None, "XLNet pretraining: folder(s) of the record_info-*.json "
                        "files of create_pretraining_data.py (comma-separated; giving it "
                        "selects XLNet's train.py path of run_pretraining.py)."),
    "perm_size": ("integer", 0, "XLNet pretraining: window of the local permutation "
                  "(factorisation order; must be > 0)."),
    "mem_len": ("integer", 0, "XLNet pretraining: tokens cached as memory per layer."),
    "same_length": ("bool", False, "XLNet pretraining: every query attends to the same number "
                    "of keys."),
    "n_token": ("integer", 32000, "XLNet pretraining: vocabulary size (the original always "
                "uses 32000)."),
    "n_layer": ("integer", 6, "XLNet pretraining: number of layers (without "
                "--model_config_path)."),
    "d_model": ("integer", 32, "XLNet pretraining: model width."),
    "d_embed": ("integer", 32, "XLNet pretraining: embedding width (unused, as the original)."),
    "n_head": ("integer", 4, "XLNet pretraining: attention heads."),
    "d_head": ("integer", 8, "XLNet pretraining: width of one head."),
    "d_inner": ("integer", 32, "XLNet pretraining: feed-forward width."),
    "untie_r": ("bool", False, "XLNet pretraining: one set of attention biases per layer."),
    "ff_activation": ("enum:relu|gelu", "relu", "XLNet pretraining: feed-forward activation."),
    "track_mean": ("bool", False, "XLNet pretraining: (unused, as the original)."),
}

# ---- XLNet run_squad.py (spec 9.1) and run_race.py (spec 10) -----------------------------------
_XLNET_QA_SPECS: Dict[str, Tuple[str, Any, str]] = {
    "do_prepro": ("bool", False, "XLNet SQuAD: only write the training TFRecord (examples "
                  "[proc_id::num_proc], shuffled) to --output_dir, then stop."),
    "num_proc": ("integer", 1, "XLNet SQuAD: number of --do_prepro processes."),
    "proc_id": ("integer", 0, "XLNet SQuAD: this --do_prepro process's index."),
    "init_global_vars": ("bool", False, "XLNet SQuAD: (unused, as the original)."),
    "start_n_top": ("integer", 5, "XLNet SQuAD: beam size for the answer start."),
    "end_n_top": ("integer", 5, "XLNet SQuAD: beam size for the answer end."),
    "target_eval_key": ("string", "best_f1", "XLNet SQuAD: (unused, as the original)."),
    "max_qa_length": ("integer", 128, "XLNet RACE: maximum tokens of question + option (the "
                      "last ones are kept)."),
    "high_only": ("bool", False, "XLNet RACE: only the high-school articles."),
    "middle_only": ("bool", False, "XLNet RACE: only the middle-school articles."),
    "original_context_mutation": ("bool", True, "(bert_tf) XLNet RACE: True (the original): a "
                                  "choice's context also holds the earlier choices' <sep> qa "
                                  "<sep> <cls> when they fit (the original appends to the "
                                  "context list in place; published numbers were made so); "
                                  "False: every choice from the clean context."),
}

# The flags of XLNet's data_utils.py path: its own, then those shared with other scripts.
_XLNET_DATA_FLAGS = tuple(_XLNET_DATA_SPECS) + ("num_core_per_host", "uncased", "use_tpu",
                                                "num_passes", "random_seed", "num_workers")

# ---- ALBERT (google-research/albert at b772393; golden README albert) ------------------------
# The flags ALBERT's scripts have and BERT's have not; the shared ones are in _BERT_SPECS, and
# ALBERT's own defaults of them are in the ALBERT_* profiles below.
_ALBERT_SPECS: Dict[str, Tuple[str, Any, str]] = {
    "spm_model_file": ("string", None, "ALBERT: SentencePiece model (e.g. 30k-clean.model); "
                       "unset or empty: WordPiece with --vocab_file. Giving it selects ALBERT's "
                       "create_pretraining_data.py."),
    "input_file_mode": ("string", "r", "ALBERT: the data format of the input file (the "
                        "original's open() mode: r or rb; bert_tf reads the files as UTF-8 in "
                        "either, the same lines; any other mode is refused)."),
    "ngram": ("integer", 3, "ALBERT: maximum number of ngrams to mask."),
    "favor_shorter_ngram": ("bool", True, "ALBERT: sample n-gram length n with probability "
                            "proportional to 1/n (False: reversed)."),
    "random_next_sentence": ("bool", False, "ALBERT: a negative pair takes its second segment "
                             "from a random document (BERT's NSP) instead of swapping the two "
                             "segments (sentence-order prediction, the default)."),
    "do_permutation": ("bool", False, "ALBERT: also permute a second set of n-grams (the "
                       "original's permutation training; doubles the masked-LM slots)."),
    "albert_config_file": ("string", None, "ALBERT: albert_config.json of the pre-trained "
                           "ALBERT model; giving it selects the ALBERT path of "
                           "run_classifier.py and run_pretraining.py."),
    "albert_hub_module_handle": ("string", None, "ALBERT: TF-Hub module of the model (not "
                                 "supported: bert_tf has no TF-Hub; pass --albert_config_file "
                                 "and --init_checkpoint instead)."),
    "cached_dir": ("string", None, "ALBERT: folder of the cached <task>_train.tf_record / "
                   "<task>_eval.tf_record (default --output_dir); reused when present."),
    "train_step": ("integer", 1000, "ALBERT: total number of training steps to perform."),
    "warmup_step": ("integer", 0, "ALBERT: number of steps of linear learning-rate warmup."),
    "keep_checkpoint_max": ("integer", 5, "ALBERT: how many checkpoints to keep."),
    "optimizer": ("enum:adamw|lamb", "adamw", "ALBERT: the optimizer (AdamW with weight decay "
                  "0.01, or LAMB; beta1 0.9, beta2 0.999, epsilon 1e-6, LayerNorm and biases "
                  "not decayed)."),
    "poly_power": ("float", 1.0, "ALBERT: the power of the polynomial learning-rate decay."),
    "start_warmup_step": ("integer", 0, "ALBERT: the starting step of warmup."),
    "init_from_group0": ("bool", False, "ALBERT: initialize the parameters of the other groups "
                         "from group 0 of --init_checkpoint."),
    "masked_lm_budget": ("float", 0.0, "ALBERT: if > 0, the ratio of masked to unmasked "
                         "n-grams for on-the-fly masking; 0: the records' own (offline) masks. "
                         "bert_tf refuses a value > 0: the original then reads only "
                         "token_boundary and its model_fn fails on the missing "
                         "masked_lm_positions (the online masking was never released)."),
    "threshold_to_export": ("float", float("nan"), "ALBERT: a classifier threshold attached "
                            "to the SavedModel of --export_dir and served with the "
                            "predictions (output 'threshold'); NaN: none."),
    # run_squad_v1.py / run_squad_v2.py
    "train_feature_file": ("string", None, "ALBERT SQuAD: the training features TFRecord; "
                           "written from --train_file when absent, else reused."),
    "predict_feature_file": ("string", None, "ALBERT SQuAD: the predict features TFRecord; "
                             "written when it or --predict_feature_left_file is absent, else "
                             "reused (required with --do_predict)."),
    "predict_feature_left_file": ("string", None, "ALBERT SQuAD: the predict features kept "
                                  "for post-processing (the original: a pickle; bert_tf: gzip "
                                  "JSON lines, refused when not bert_tf's; required with "
                                  "--do_predict)."),
    "use_einsum": ("bool", True, "ALBERT: tf.einsum or tf.reshape+tf.matmul for dense layers "
                   "(same numbers; bert_tf computes both the same way)."),
    "dropout_prob": ("float", 0.1, "ALBERT SQuAD v2: dropout of the answer-class head."),
}

# Every flag of every script: name -> (kind, default, help).
FLAG_SPECS: Dict[str, Tuple[str, Any, str]] = {**_BERT_SPECS, **_XLNET_SPECS,
                                               **_XLNET_DATA_SPECS, **_XLNET_PRETRAIN_SPECS,
                                               **_XLNET_QA_SPECS, **_ALBERT_SPECS}


# ---- profiles: which flags, which defaults, which meaning ----------------------------------------

@dataclasses.dataclass(frozen=True, eq=False)
class Profile:
    """One model family's view of :data:`FLAG_SPECS`, or one root script's within a family.

    BERT and XLNet share one flag namespace (``run_classifier.py`` and ``extract_features.py``
    serve both), so a flag has one name and one entry in FLAG_SPECS; a profile says which of
    them the family uses and where the family's original gives one another default or meaning.

    Attributes:
      family: ``"BERT"`` or ``"XLNet"``.
      flags: the flags the family's scripts may define (keys of FLAG_SPECS).
      defaults: flag -> the family's (or script's) original default, where it differs from
        FLAG_SPECS' (spec ``bert.md`` 9.1 for run_squad's ``max_seq_length``, ``xlnet.md`` 8.1).
      helps: flag -> the family's (or script's) meaning, where it differs from FLAG_SPECS'.
      script: the root script (``"run_squad.py"``) of a script's profile, else None.
      refused: flags of the other family that this one refuses when given, -> the flag to use
        instead (XLNet: ``--vocab_file`` -> ``--spiece_model_file``...).

    Raises:
      KeyError: a flag, default, help or refused flag that is not in FLAG_SPECS / the profile.
    """

    family: str
    flags: Tuple[str, ...]
    defaults: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    helps: Mapping[str, str] = dataclasses.field(default_factory=dict)
    script: Optional[str] = None
    refused: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for table in ("defaults", "helps", "refused"):  # read-only: profiles are shared
            object.__setattr__(self, table, types.MappingProxyType(dict(getattr(self, table))))
        unknown = [n for n in self.flags if n not in FLAG_SPECS]
        unknown += [n for n in (*self.defaults, *self.helps) if n not in self.flags]
        unknown += [n for n in self.refused if n not in FLAG_SPECS or n in self.flags]
        if unknown:
            raise KeyError(f"profile {self.name}: not flags of the profile: {unknown}")

    @property
    def name(self) -> str:
        """``"BERT"``, ``"XLNet"``, or the family and the script: ``"BERT run_squad.py"``."""
        return f"{self.family} {self.script}" if self.script else self.family

    def _check(self, name: str) -> None:
        if name not in self.flags:
            raise KeyError(f"--{name} is not a flag of the {self.name} profile (add it to "
                           f"FLAG_SPECS and the profile first)")

    def default(self, name: str) -> Any:
        """The default of flag ``name`` here. Raises KeyError: not a flag of the profile."""
        self._check(name)
        return self.defaults[name] if name in self.defaults else FLAG_SPECS[name][1]

    def help(self, name: str) -> str:
        """The help text of flag ``name`` here. Raises KeyError: not a flag of the profile."""
        self._check(name)
        return self.helps.get(name, FLAG_SPECS[name][2])

    def for_script(self, script: str, defaults: Optional[Mapping[str, Any]] = None,
                   helps: Optional[Mapping[str, str]] = None,
                   refused: Optional[Mapping[str, str]] = None) -> "Profile":
        """This family's profile for one root script: the original script's own defaults and
        meanings over the family's (``refused`` replaces the family's when given)."""
        return dataclasses.replace(
            self, script=script, defaults={**self.defaults, **(defaults or {})},
            helps={**self.helps, **(helps or {})},
            refused=self.refused if refused is None else refused)


# BERT: every flag of _BERT_SPECS, with its defaults and meanings (spec bert.md 5.1, 6.1, 8.1,
# 9.1, 10).
BERT = Profile("BERT", tuple(_BERT_SPECS))

# XLNet: the flags of XLNet's run_classifier.py (spec xlnet.md 8.1), those of bert_tf's XLNet
# feature extraction, and where XLNet's original gives a shared flag another default or meaning.
# In the shared namespace a shared flag is registered with BERT's default: the XLNet default
# applies unless the flag is given (args_from_flags).
XLNET = Profile(
    "XLNet",
    flags=("init_checkpoint", "output_dir", "data_dir", "task_name", "do_train", "do_eval",
           "do_predict", "learning_rate", "train_batch_size", "eval_batch_size",
           "predict_batch_size", "max_seq_length", "use_tpu", "tpu_zone", "gcp_project",
           "master", "export_dir")                                    # shared with BERT
          + ("input_file", "output_file", "layers", "batch_size", "pooling",
             "normalize")  # extract_features
          + ("window_pooling",)  # long inputs by sliding windows (issue 13)
          + tuple(_XLNET_SPECS)
          + tuple(_XLNET_DATA_SPECS) + ("random_seed", "num_workers")  # data_utils.py
          + tuple(_XLNET_PRETRAIN_SPECS)                               # train.py
          + tuple(_XLNET_QA_SPECS) + ("train_file", "predict_file", "doc_stride",
                                      "max_query_length", "max_answer_length", "n_best_size"),
    defaults={
        "learning_rate": 1e-5, "train_batch_size": 8, "eval_batch_size": 128,
        "predict_batch_size": 128,
        # XLNet's "" (BERT's None): both mean "not given" (the XLNet checks refuse either).
        "output_dir": "", "data_dir": "",
    },
    helps={
        "output_dir": "XLNet: directory of the TFRecords only ({spiece}.len-{S}.*.tf_record, "
                      "reused unless --overwrite_data); checkpoints go to --model_dir.",
        "max_seq_length": "XLNet: maximum total input length after SentencePiece tokenization "
                          "(<sep> and <cls> included); longer sequences are truncated, shorter "
                          "ones padded on the left.",
        "train_batch_size": "XLNet: total batch size for training with --use_tpu; per GPU "
                            "otherwise (--num_core_per_host GPUs).",
    },
    refused={"vocab_file": "--spiece_model_file", "bert_config_file": "--model_config_path",
             "do_lower_case": "--uncased", "num_train_epochs": "--train_steps",
             "warmup_proportion": "--warmup_steps", "save_checkpoints_steps": "--save_steps",
             "iterations_per_loop": "--iterations", "tpu_name": "--tpu",
             "num_tpu_cores": "--num_core_per_host"},
)

# Giving one of these selects the XLNet path of a script that serves both families.
XLNET_SELECTED_BY = ("model_config_path", "spiece_model_file")

# XLNet's data_utils.py, run as create_pretraining_data.py when --sp_path is given (spec 6.1):
# its own flags only, with data_utils.py's defaults.
XLNET_CREATE_PRETRAINING_DATA = dataclasses.replace(
    XLNET, script="create_pretraining_data.py", flags=_XLNET_DATA_FLAGS,
    defaults={"uncased": True, "use_tpu": True, "random_seed": None},
    helps={
        "random_seed": "XLNet: seed of Python's random, set once before any work (the "
                       "original never seeds it, so its records differ run to run; default: "
                       "unseeded, as the original). numpy is seeded 100 * task + pass_id.",
        "num_passes": "XLNet: (bert_tf) write passes pass_id .. pass_id + num_passes - 1 "
                      "(the XLNet README passes --num_passes, which the original data_utils.py "
                      "rejects).",
        "num_core_per_host": "XLNet: cores per host; forced to 1 without --use_tpu.",
        "use_tpu": "XLNet: the data is for a TPU (else num_core_per_host is 1).",
        "uncased": "XLNet: lower-case the text before SentencePiece (default True in "
                   "data_utils.py).",
    },
    refused={"vocab_file": "--sp_path", "input_file": "--input_glob",
             "output_file": "--save_dir", "max_seq_length": "--seq_len",
             "max_predictions_per_seq": "--num_predict", "do_lower_case": "--uncased"})

# XLNet's train.py / train_gpu.py, run as run_pretraining.py when --record_info_dir is given
# (spec 7.1; train_gpu.py's use_tpu=False, since a TPU run names its TPU anyway).
_XLNET_PRETRAIN_FLAGS = tuple(_XLNET_PRETRAIN_SPECS) + (
    "master", "tpu", "gcp_project", "tpu_zone", "tpu_job_name", "use_tpu", "num_hosts",
    "num_core_per_host", "num_passes", "model_dir", "init_checkpoint", "model_config_path", "learning_rate", "clip",
    "min_lr_ratio", "warmup_steps", "adam_epsilon", "decay_method", "weight_decay",
    "train_batch_size", "train_steps", "iterations", "save_steps", "max_save", "seq_len",
    "reuse_len", "uncased", "bi_data", "mask_alpha", "mask_beta", "num_predict", "dropout",
    "dropatt", "clamp_len", "summary_type", "use_bfloat16", "init", "init_std", "init_range")
XLNET_RUN_PRETRAINING = dataclasses.replace(
    XLNET, script="run_pretraining.py", flags=_XLNET_PRETRAIN_FLAGS,
    defaults={"learning_rate": 1e-4, "min_lr_ratio": 0.001, "train_batch_size": 16,
              "train_steps": 100000, "max_save": 100000, "seq_len": 0, "reuse_len": 0,
              "num_predict": None, "dropout": 0.0, "dropatt": 0.0, "model_dir": None},
    helps={
        "train_batch_size": "XLNet: total batch size (all replicas); each replica gets "
                            "train_batch_size / replicas, which must be even with --bi_data.",
        "seq_len": "XLNet: sequence length of the records (must be > 0).",
        "reuse_len": "XLNet: reuse length of the records (must be > 0).",
        "num_predict": "XLNet: tokens predicted per sequence, as the records were made.",
        "iterations": "XLNet: training steps per loop (and between progress lines).",
        "save_steps": "XLNet: save a checkpoint every save_steps (None: at the end only).",
        "model_dir": "XLNet: where model.ckpt-N and TensorBoard events go (resumed from).",
        "model_config_path": "XLNet: xlnet_config.json (else the model flags n_layer, "
                             "d_model, n_head, d_head, d_inner, ff_activation, untie_r).",
        "num_core_per_host": "XLNet: TPU cores per host; on GPU the number of GPUs.",
        "use_tpu": "XLNet: run on a TPU (train.py); default False as train_gpu.py.",
    },
    refused={"input_file": "--record_info_dir", "output_dir": "--model_dir",
             "bert_config_file": "--model_config_path", "num_train_steps": "--train_steps",
             "num_warmup_steps": "--warmup_steps", "save_checkpoints_steps": "--save_steps",
             "iterations_per_loop": "--iterations", "max_seq_length": "--seq_len",
             "max_predictions_per_seq": "--num_predict", "tpu_name": "--tpu",
             "num_tpu_cores": "--num_core_per_host"})

# XLNet's run_squad.py (spec 9.1), run as run_squad.py with XLNet's flags.
_XLNET_MACHINE_FLAGS = ("use_tpu", "tpu", "tpu_zone", "gcp_project", "master", "tpu_job_name",
                        "num_hosts", "num_core_per_host", "iterations")
_XLNET_FINETUNE_FLAGS = ("model_config_path", "spiece_model_file", "init_checkpoint",
                         "output_dir", "model_dir", "uncased", "overwrite_data", "dropout",
                         "dropatt", "clamp_len", "summary_type", "use_bfloat16", "init",
                         "init_std", "init_range", "max_seq_length", "do_train",
                         "train_batch_size", "train_steps", "warmup_steps", "save_steps",
                         "max_save", "shuffle_buffer", "learning_rate", "min_lr_ratio", "clip",
                         "weight_decay", "adam_epsilon", "decay_method",
                         "lr_layer_decay_rate") + _XLNET_MACHINE_FLAGS
XLNET_RUN_SQUAD = dataclasses.replace(
    XLNET, script="run_squad.py",
    flags=_XLNET_FINETUNE_FLAGS + (
        "do_prepro", "num_proc", "proc_id", "init_global_vars", "predict_dir", "train_file",
        "predict_file", "max_query_length", "doc_stride", "max_answer_length", "do_predict",
        "predict_batch_size", "n_best_size", "start_n_top", "end_n_top", "target_eval_key",
        "random_seed"),
    defaults={"output_dir": "", "predict_dir": "", "train_file": "", "predict_file": "",
              "max_seq_length": 512, "max_answer_length": 64, "do_train": True,
              "train_batch_size": 48, "train_steps": 8000, "max_save": 5,
              "learning_rate": 3e-5, "adam_epsilon": 1e-6, "lr_layer_decay_rate": 0.75,
              "predict_batch_size": 32, "n_best_size": 5, "init_checkpoint": None},
    helps={"output_dir": "XLNet: directory of the cached TFRecords and features "
                         "({spiece}.slen-{S}.qlen-{Q}.eval.tf_record...).",
           "predict_dir": "XLNet: directory for predictions.json, nbest_predictions.json, "
                          "null_odds.json and eval_results.json.",
           "do_train": "XLNet: whether to run training (default True in XLNet's run_squad.py).",
           "random_seed": "XLNet SQuAD: (bert_tf) seed of the training-data shuffle (the "
                          "original shuffles with Python's unseeded random)."},
    refused={"vocab_file": "--spiece_model_file", "bert_config_file": "--model_config_path",
             "do_lower_case": "--uncased", "num_train_epochs": "--train_steps",
             "warmup_proportion": "--warmup_steps", "save_checkpoints_steps": "--save_steps",
             "iterations_per_loop": "--iterations", "tpu_name": "--tpu",
             "num_tpu_cores": "--num_core_per_host"})

# XLNet's run_race.py (spec 10), the root script run_race.py.
XLNET_RUN_RACE = dataclasses.replace(
    XLNET, script="run_race.py",
    flags=_XLNET_FINETUNE_FLAGS + (
        "data_dir", "use_summ_proj", "do_eval", "eval_split", "eval_batch_size",
        "max_qa_length", "high_only", "middle_only", "original_context_mutation",
        "random_seed"),
    defaults={"output_dir": "", "data_dir": "", "max_seq_length": 512, "do_train": False,
              "train_steps": 12000, "learning_rate": 2e-5, "max_save": 0,
              "train_batch_size": 8, "adam_epsilon": 1e-6, "eval_batch_size": 32,
              "init_checkpoint": None},
    helps={"output_dir": "XLNet: directory of the cached TFRecords "
                         "({spiece}.len-{S}.{split}.tf_record).",
           "train_batch_size": "XLNet RACE: questions per batch (each is 4 sequences).",
           "data_dir": "XLNet RACE: the RACE folder ({train,dev,test}/{middle,high}/*.txt; "
                       "read in sorted order: the original lists folders unsorted, so its "
                       "order depends on the file system).",
           "random_seed": "XLNet RACE: (bert_tf) seed of the training-data shuffles (the "
                          "examples before writing, the records in the pipeline; the original "
                          "shuffled with Python's unseeded random and an unseeded tf shuffle)."},
    refused={})

# ALBERT: BERT's flags and ALBERT's own (google-research/albert); the scripts' own defaults are
# in the ALBERT_* script profiles.
ALBERT = Profile("ALBERT", tuple(_BERT_SPECS) + tuple(_ALBERT_SPECS))

# Giving one of these (a non-empty value, or any value of a bool/int flag) selects ALBERT's
# create_pretraining_data.py in the root script (issue 14).
ALBERT_CREATE_SELECTED_BY = ("spm_model_file", "ngram", "favor_shorter_ngram",
                             "random_next_sentence", "do_permutation")

# ALBERT's create_pretraining_data.py, run as `python -m bert_tf.albert.create_pretraining_data`
# or as create_pretraining_data.py with an ALBERT-only flag.
ALBERT_CREATE_PRETRAINING_DATA = ALBERT.for_script(
    "create_pretraining_data.py",
    defaults={"do_whole_word_mask": True, "max_seq_length": 512, "dupe_factor": 40},
    helps={"random_seed": "ALBERT: seed of Python's random AND (bert_tf) of the numpy "
                          "RandomState that draws the n-gram lengths. The original seeds only "
                          "Python's random and draws from numpy's unseeded global RNG, so its "
                          "records differ run to run; with numpy seeded to the same value they "
                          "equal these, record for record.",
           "vocab_file": "ALBERT: WordPiece vocabulary (used when --spm_model_file is unset).",
           "do_lower_case": "ALBERT: lower case the input text (WordPiece: BasicTokenizer; "
                            "SentencePiece: preprocess_text before tokenizing)."})

# ALBERT's run_classifier.py (google-research/albert@b772393), run as
# `python -m bert_tf.albert.run_classifier` or run_classifier.py with --albert_config_file.
ALBERT_RUN_CLASSIFIER = ALBERT.for_script(
    "run_classifier.py",
    defaults={"max_seq_length": 512},
    helps={"data_dir": "ALBERT: the GLUE folder holding <TASK>/train.tsv, dev.tsv, test.tsv "
                       "(MRPC/, CoLA/, MNLI/, ...).",
           "output_dir": "ALBERT: checkpoints, the cached records, eval_results.txt, "
                         "best_trial.txt, test_results.tsv, submit_results.tsv.",
           "init_checkpoint": "ALBERT: checkpoint to start from (e.g. .../model.ckpt-best); "
                              "eval/predict use it when --output_dir has no model.ckpt-N.",
           "do_eval": "ALBERT: evaluate every model.ckpt-N of --output_dir newer than "
                      "best_trial.txt, once (bert_tf: the original polls the folder forever "
                      "until a checkpoint reaches --train_step); with none, --init_checkpoint.",
           "do_predict": "ALBERT: predict the test set with the best evaluated checkpoint, else "
                         "the newest of --output_dir, else --init_checkpoint (bert_tf: the "
                         "original reads only model.ckpt-best, written by --do_eval).",
           "spm_model_file": "ALBERT: SentencePiece model; unset or empty (--spm_model_file=, "
                             "as the original's required flag allows): WordPiece with "
                             "--vocab_file.",
           "vocab_file": "ALBERT: WordPiece vocabulary (used when --spm_model_file is unset)."})

# ALBERT's run_pretraining.py (google-research/albert@b772393), run as
# `python -m bert_tf.albert.run_pretraining` or run_pretraining.py with --albert_config_file.
ALBERT_RUN_PRETRAINING = ALBERT.for_script(
    "run_pretraining.py",
    defaults={"max_seq_length": 512, "max_predictions_per_seq": 20, "do_train": True,
              "train_batch_size": 4096, "eval_batch_size": 64, "optimizer": "lamb",
              "learning_rate": 0.00176, "num_train_steps": 125000, "num_warmup_steps": 3125,
              "save_checkpoints_steps": 5000},
    helps={"input_file": "ALBERT: the TFRecords of ALBERT's create_pretraining_data (a glob "
                         "or comma-separated list); next_sentence_labels holds the "
                         "sentence-order label.",
           "init_checkpoint": "ALBERT: checkpoint to warm-start from (a BERT checkpoint is "
                              "refused, naming the first variable that does not fit).",
           "optimizer": "ALBERT: lamb (default) or adamw; weight decay 0.01, beta1 0.9, "
                        "beta2 0.999, epsilon 1e-6, LayerNorm and biases not decayed (nor "
                        "layer-adapted), gradients clipped to global norm 1.0."})

# ALBERT's run_squad_v1.py / run_squad_v2.py (google-research/albert@b772393), run as
# `python -m bert_tf.albert.run_squad_v1` / `... .run_squad_v2`, or run_squad.py with
# --albert_config_file (v2 with --version_2_with_negative).
_ALBERT_SQUAD_HELPS = {
    "output_dir": "ALBERT: checkpoints (model.ckpt-N), predictions.json, "
                  "nbest_predictions.json, null_odds.json (v2), eval_results.txt.",
    "init_checkpoint": "ALBERT: checkpoint to start from (a BERT checkpoint is refused, "
                       "naming the first variable that does not fit); predict uses it when "
                       "--output_dir has no model.ckpt-N.",
    "do_predict": "ALBERT: predict --predict_file with the newest model.ckpt-N of --output_dir "
                  "(else --init_checkpoint) and, when it has answers, score it (bert_tf: the "
                  "original polls --output_dir until a checkpoint reaches the training steps "
                  "and keeps model.ckpt-best).",
    "spm_model_file": "ALBERT: SentencePiece model (required: SQuAD features are "
                      "SentencePiece pieces aligned to the characters).",
    "vocab_file": "ALBERT: read by the original's tokenizer set-up only (the SQuAD features "
                  "use --spm_model_file).",
    "start_n_top": "ALBERT SQuAD v2: beam size for the start positions.",
    "end_n_top": "ALBERT SQuAD v2: beam size for the end positions.",
}
ALBERT_RUN_SQUAD_V1 = dataclasses.replace(
    ALBERT, flags=ALBERT.flags + ("start_n_top", "end_n_top")).for_script(
    "run_squad_v1.py", defaults={"max_seq_length": 384}, helps=_ALBERT_SQUAD_HELPS)
ALBERT_RUN_SQUAD_V2 = dataclasses.replace(ALBERT_RUN_SQUAD_V1, script="run_squad_v2.py")

# One profile per root script and family: the original scripts' own defaults live here only.
CREATE_PRETRAINING_DATA = BERT.for_script("create_pretraining_data.py")
RUN_PRETRAINING = BERT.for_script("run_pretraining.py")
# ---- long inputs by sliding windows (issue 13): --doc_stride of run_classifier.py and
# extract_features.py, unset by default (the original's truncation) ----
_WINDOW_DEFAULTS = {"doc_stride": None}
_CLASSIFIER_WINDOW_HELPS = {
    "doc_stride": "(bert_tf, beyond the original) Split an input longer than --max_seq_length "
                  "into windows, the next starting every doc_stride tokens (run_squad.py's "
                  "rule; a pair keeps its shorter side whole), instead of truncating it; each "
                  "window is a training instance with its example's label, and an example's "
                  "prediction pools its windows' logits (--window_pooling). Unset: truncate as "
                  "the original."}
_EXTRACT_WINDOW_HELPS = {
    "doc_stride": "(bert_tf, beyond the original) Split a line longer than --max_seq_length "
                  "into windows, the next starting every doc_stride tokens (run_squad.py's "
                  "rule; one text per line, not pairs); each token is written once, with the "
                  "values of the window where it has the most context (run_squad's "
                  "token_is_max_context). Unset: truncate as the original."}

RUN_CLASSIFIER = BERT.for_script("run_classifier.py", defaults=_WINDOW_DEFAULTS,
                                 helps=_CLASSIFIER_WINDOW_HELPS)
RUN_SQUAD = BERT.for_script("run_squad.py", defaults={"max_seq_length": 384})  # spec 9.1
EXTRACT_FEATURES = BERT.for_script("extract_features.py", defaults=_WINDOW_DEFAULTS,
                                   helps=_EXTRACT_WINDOW_HELPS)
XLNET_RUN_CLASSIFIER = XLNET.for_script(
    "run_classifier.py", defaults=_WINDOW_DEFAULTS,
    helps={"init_checkpoint": "XLNet: checkpoint prefix to start from (e.g. "
                              ".../xlnet_model.ckpt); a path ending in 'latest' means the "
                              "newest checkpoint of its folder.", **_CLASSIFIER_WINDOW_HELPS})
XLNET_EXTRACT_FEATURES = XLNET.for_script(
    "extract_features.py", defaults=_WINDOW_DEFAULTS, helps=_EXTRACT_WINDOW_HELPS,
    refused={"vocab_file": "--spiece_model_file", "bert_config_file": "--model_config_path",
             "do_lower_case": "--uncased"})


# ---- declaring flags -----------------------------------------------------------------------------

def define(*names: str, profile: Profile = BERT, flag_values=FLAGS) -> None:
    """Declares the named flags on absl's ``FLAGS`` with ``profile``'s defaults and help texts.

    Args:
      *names: flag names, each a flag of ``profile``.
      profile: the script's profile (e.g. :data:`RUN_SQUAD`: ``max_seq_length`` 384).
      flag_values: where to declare them (absl's global ``FLAGS``; tests pass their own).

    Raises:
      KeyError: a name is not a flag of the profile (add it to FLAG_SPECS and the profile).

    A flag already defined (a module imported twice, tests) is left as it is.
    """
    define_profiles((profile, names), flag_values=flag_values)


def define_profiles(*parts: Tuple[Profile, Sequence[str]], flag_values=FLAGS) -> None:
    """Declares the flags of a root script that serves more than one family.

    absl allows one definition of a name per process, so each flag is defined once, by the
    first ``(profile, names)`` part that lists it, with that profile's default and help (the
    one ``--helpfull`` shows). A later part that gives the flag another default or meaning adds
    it to the help (``"... XLNet: default 1e-05 unless the flag is given."``); its reader,
    :func:`args_from_flags`, uses its own default when the flag is not given.

    Raises:
      KeyError: a name is not a flag of its part's profile.
    """
    profiles: Dict[str, List[Profile]] = {}
    for profile, names in parts:
        for name in names:
            profile.help(name)  # KeyError for a flag not in the profile
            profiles.setdefault(name, []).append(profile)
    # Registered as the running script's own flags, so `--help` / `--helpshort` list them.
    module = sys.argv[0] if sys.argv and sys.argv[0] else None
    for name, (first, *later) in profiles.items():
        if name in flag_values:
            continue
        help_text = first.help(name) + "".join(_other_profile_note(name, first, p)
                                               for p in later)
        _define_one(name, first.default(name), help_text, module, flag_values)


def _other_profile_note(name: str, first: Profile, other: Profile) -> str:
    notes = []
    if other.help(name) != first.help(name):
        notes.append(other.help(name).removeprefix(f"{other.family}: ").rstrip("."))
    default, first_default = other.default(name), first.default(name)
    if default != first_default and not (default in (None, "") and first_default in (None, "")):
        notes.append(f"default {default!r} unless the flag is given")
    return f" {other.family}: {'; '.join(notes)}." if notes else ""


def _define_one(name: str, default: Any, help_text: str, module: Optional[str],
                flag_values) -> None:
    kind = FLAG_SPECS[name][0]
    common = dict(module_name=module, flag_values=flag_values)
    if kind == "string":
        flags.DEFINE_string(name, default, help_text, **common)
    elif kind == "bool":
        flags.DEFINE_bool(name, default, help_text, **common)
    elif kind == "integer":
        flags.DEFINE_integer(name, default, help_text, **common)
    elif kind == "float":
        flags.DEFINE_float(name, default, help_text, **common)
    elif kind.startswith("enum:"):
        flags.DEFINE_enum(name, default, kind[len("enum:"):].split("|"), help_text, **common)
    else:  # pragma: no cover - a bad FLAG_SPECS entry
        raise ValueError(f"unknown flag kind {kind!r} for {name}")


# ---- argument classes and the one reader ---------------------------------------------------------

_KIND_TYPES = {"string": str, "bool": bool, "integer": int, "float": float}

# Flag groups that several XLNet tasks' argument classes share (``args_class(profile, *groups)``).
XLNET_MODEL_FLAGS = ("model_config_path", "dropout", "dropatt", "clamp_len", "use_bfloat16",
                     "init", "init_std", "init_range")
XLNET_MACHINE_FLAGS = _XLNET_MACHINE_FLAGS
# The TPU flags of the original BERT scripts, and bert_tf's own training flags, shared by the
# BERT and ALBERT argument classes (groups of :func:`args_class`).
BERT_TPU_FLAGS = ("use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores")
BERT_TF_TRAINING_FLAGS = ("use_xla", "gradient_accumulation_steps", "dtype")
XLNET_OPTIMIZER_FLAGS = ("train_batch_size", "train_steps", "warmup_steps", "save_steps",
                         "max_save", "learning_rate", "min_lr_ratio", "clip", "weight_decay",
                         "adam_epsilon", "decay_method")

# The fields of each task's argument class (``bert_tf/tasks/*.py``), in order: the flags its
# root script defines. Here so that a root script defines its flags, and answers ``--help``,
# without importing its task module (which imports TensorFlow: 3-10 s; issue 15 item 6);
# tests/test_flags.py checks each tuple against its class.
ARGS_FLAGS: Dict[str, Tuple[str, ...]] = {
    "ClassifierArgs": BERT_TPU_FLAGS + BERT_TF_TRAINING_FLAGS + ("data_dir", "bert_config_file",
        "task_name", "vocab_file", "output_dir", "init_checkpoint", "do_lower_case",
        "max_seq_length", "do_train", "do_eval", "do_predict", "train_batch_size",
        "eval_batch_size", "predict_batch_size", "learning_rate", "num_train_epochs",
        "warmup_proportion", "save_checkpoints_steps", "iterations_per_loop", "export_dir", "doc_stride", "window_pooling", "siamese"),
    "XLNetClassifierArgs": XLNET_MODEL_FLAGS + XLNET_MACHINE_FLAGS + XLNET_OPTIMIZER_FLAGS +
        ("summary_type", "use_summ_proj", "overwrite_data", "init_checkpoint", "output_dir",
        "spiece_model_file", "model_dir", "data_dir", "do_train", "lr_layer_decay_rate", "do_eval",
        "do_predict", "predict_threshold", "eval_split", "eval_batch_size", "predict_batch_size",
        "predict_dir", "eval_all_ckpt", "predict_ckpt", "task_name", "max_seq_length",
        "shuffle_buffer", "num_passes", "uncased", "cls_scope", "is_regression", "doc_stride", "window_pooling", "export_dir"),
    "AlbertClassifierArgs": BERT_TPU_FLAGS + BERT_TF_TRAINING_FLAGS + ("data_dir",
        "albert_config_file", "task_name", "vocab_file", "spm_model_file", "output_dir",
        "cached_dir", "init_checkpoint", "albert_hub_module_handle", "do_lower_case",
        "max_seq_length", "do_train", "do_eval", "do_predict", "train_batch_size",
        "eval_batch_size", "predict_batch_size", "learning_rate", "train_step", "warmup_step",
        "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop", "optimizer",
        "export_dir", "threshold_to_export"),
    "ExtractFeaturesArgs": ("input_file", "output_file", "layers", "bert_config_file",
        "max_seq_length", "init_checkpoint", "vocab_file", "do_lower_case", "batch_size",
        "use_tpu", "master", "num_tpu_cores", "use_one_hot_embeddings", "pooling", "doc_stride", "export_dir", "normalize"),
    "XLNetExtractFeaturesArgs": ("input_file", "output_file", "layers", "model_config_path",
        "spiece_model_file", "init_checkpoint", "max_seq_length", "uncased", "batch_size",
        "pooling", "normalize", "clamp_len", "use_tpu", "doc_stride", "export_dir"),
    "AlbertSquadArgs": BERT_TPU_FLAGS + BERT_TF_TRAINING_FLAGS + ("albert_config_file",
        "vocab_file", "spm_model_file", "output_dir", "train_file", "predict_file",
        "train_feature_file", "predict_feature_file", "predict_feature_left_file",
        "init_checkpoint", "albert_hub_module_handle", "do_lower_case", "max_seq_length",
        "doc_stride", "max_query_length", "do_train", "do_predict", "train_batch_size",
        "predict_batch_size", "learning_rate", "num_train_epochs", "warmup_proportion",
        "save_checkpoints_steps", "iterations_per_loop", "n_best_size", "max_answer_length",
        "use_einsum", "export_dir", "start_n_top", "end_n_top", "dropout_prob"),
    "XLNetSquadArgs": XLNET_MODEL_FLAGS + XLNET_MACHINE_FLAGS + XLNET_OPTIMIZER_FLAGS +
        ("do_prepro", "num_proc", "proc_id", "summary_type", "overwrite_data", "init_checkpoint",
        "init_global_vars", "output_dir", "predict_dir", "spiece_model_file", "model_dir",
        "train_file", "predict_file", "max_seq_length", "max_query_length", "doc_stride",
        "max_answer_length", "uncased", "do_train", "shuffle_buffer", "lr_layer_decay_rate",
        "random_seed", "do_predict", "predict_batch_size", "n_best_size", "start_n_top",
        "end_n_top", "target_eval_key"),
    "XLNetPretrainingArgs": XLNET_MODEL_FLAGS + XLNET_MACHINE_FLAGS + XLNET_OPTIMIZER_FLAGS +
        ("record_info_dir", "model_dir", "init_checkpoint", "num_passes", "seq_len", "reuse_len",
        "perm_size", "uncased", "bi_data", "mask_alpha", "mask_beta", "num_predict", "mem_len",
        "same_length", "n_token", "n_layer", "d_model", "d_embed", "n_head", "d_head", "d_inner",
        "untie_r", "ff_activation", "summary_type", "track_mean"),
    "AlbertPretrainingArgs": BERT_TPU_FLAGS + BERT_TF_TRAINING_FLAGS + ("albert_config_file",
        "input_file", "output_dir", "init_checkpoint", "max_seq_length", "max_predictions_per_seq",
        "do_train", "do_eval", "train_batch_size", "eval_batch_size", "optimizer", "learning_rate",
        "poly_power", "num_train_steps", "num_warmup_steps", "start_warmup_step",
        "save_checkpoints_steps", "keep_checkpoint_max", "iterations_per_loop", "max_eval_steps",
        "init_from_group0", "masked_lm_budget"),
    "XLNetDataArgs": ("sp_path", "bsz_per_host", "num_core_per_host", "seq_len", "reuse_len",
        "uncased", "bi_data", "mask_alpha", "mask_beta", "use_eod", "from_raw_text", "num_predict",
        "input_glob", "save_dir", "split", "pass_id", "num_task", "task", "use_tpu", "num_passes",
        "random_seed", "num_workers"),
    "AlbertDataArgs": ("input_file", "output_file", "vocab_file", "spm_model_file",
        "input_file_mode", "do_lower_case", "do_whole_word_mask", "do_permutation",
        "favor_shorter_ngram", "random_next_sentence", "max_seq_length", "ngram",
        "max_predictions_per_seq", "random_seed", "dupe_factor", "masked_lm_prob",
        "short_seq_prob"),
    "XLNetRaceArgs": XLNET_MODEL_FLAGS + XLNET_MACHINE_FLAGS + XLNET_OPTIMIZER_FLAGS +
        ("summary_type", "use_summ_proj", "overwrite_data", "init_checkpoint", "output_dir",
        "spiece_model_file", "model_dir", "data_dir", "do_train", "lr_layer_decay_rate", "do_eval",
        "eval_split", "eval_batch_size", "max_seq_length", "max_qa_length", "shuffle_buffer",
        "uncased", "high_only", "middle_only", "original_context_mutation", "random_seed"),
}
# ALBERT's run_squad_v1.py and run_squad_v2.py each define a part of AlbertSquadArgs' flags.
ALBERT_SQUAD_V1_FLAGS = tuple(n for n in ARGS_FLAGS["AlbertSquadArgs"]
                              if n not in ("start_n_top", "end_n_top", "dropout_prob"))
ALBERT_SQUAD_V2_FLAGS = tuple(n for n in ARGS_FLAGS["AlbertSquadArgs"]
                              if n not in ("use_einsum", "export_dir"))


def flag_type(name: str, profile: Profile):
    """The Python type of flag ``name`` in ``profile``: ``str``, ``bool``, ``int``, ``float``
    (enums: ``str``), ``Optional[...]`` where the profile's default is None."""
    kind = FLAG_SPECS[name][0]
    base = _KIND_TYPES.get(kind, str)
    return Optional[base] if profile.default(name) is None else base


def args_class(profile: Profile, *flag_groups: Sequence[str]):
    """Class decorator: a task's argument dataclass whose fields are flags of ``profile``.

    The class body declares each field by name and type only; its default is the profile's
    (:data:`FLAG_SPECS` with the family's and the script's overrides), so a default is written
    once, in this module::

        @args_class(RUN_SQUAD)
        class SquadArgs:
            max_seq_length: int          # default 384, RUN_SQUAD's
            ...

    The result is a plain dataclass (``dataclasses.fields(...)[i].default`` is the default)
    with ``flag_profile`` set to ``profile`` for :func:`args_from_flags`. Each of
    ``flag_groups`` (flag names, e.g. :data:`XLNET_MACHINE_FLAGS`) adds those fields first,
    typed by :func:`flag_type`, so tasks sharing flags do not restate them.

    Raises:
      KeyError: a field is not a flag of the profile.
      TypeError: a field has a default in the class body.
    """

    def wrap(cls):
        annotations = {name: flag_type(name, profile) for group in flag_groups
                       for name in group}
        annotations.update(cls.__dict__.get("__annotations__", {}))
        cls.__annotations__ = annotations
        for name in annotations:
            if name in cls.__dict__:
                raise TypeError(f"{cls.__name__}.{name}: give no default in the class body; "
                                f"it comes from the {profile.name} profile (bert_tf/flags.py)")
            setattr(cls, name, profile.default(name))
        cls = dataclasses.dataclass(cls)
        cls.flag_profile = profile
        return cls

    return wrap


def _flag_is_set(flag_values, name: str) -> bool:
    fl = flag_values[name]
    return bool(fl.present) or not fl.using_default_value


def args_from_flags(args_class, flag_values=FLAGS):
    """An argument dataclass (BERT's or XLNet's) read from parsed flags.

    For each field, from absl ``FlagValues``:

    * a flag set there (given on the command line, or assigned) gives its value;
    * a flag defined but not set gives the class's default, i.e. its profile's: the XLNet
      default applies unless the flag is given (``run_classifier.py`` registers
      ``--learning_rate`` with BERT's default 5e-5; the XLNet path reads 1e-5, spec
      ``xlnet.md`` 8.1). For a BERT script this is the default the script registered;
    * a flag not defined there keeps the class's default.

    From any other object (a namespace, a test double) each attribute it has is taken as is.

    Args:
      args_class: a dataclass whose fields are flag names (e.g. ``ClassifierArgs``).
      flag_values: absl ``FLAGS`` (or any object with those attributes).
    """
    values = {}
    for field in dataclasses.fields(args_class):
        name = field.name
        if isinstance(flag_values, flags.FlagValues):
            if name in flag_values and _flag_is_set(flag_values, name):
                values[name] = flag_values[name].value
        elif hasattr(flag_values, name):
            values[name] = getattr(flag_values, name)
    return args_class(**values)


def flag_given(flag_values, name: str) -> bool:
    """Whether flag ``name`` was given on the command line (absl ``FlagValues``: defined there
    and present); for another object, whether it has the attribute and it is not None."""
    if isinstance(flag_values, flags.FlagValues):
        return name in flag_values and bool(flag_values[name].present)
    return getattr(flag_values, name, None) is not None


def is_xlnet_invocation(flag_values) -> bool:
    """True when ``--model_config_path`` or ``--spiece_model_file`` is given (a non-empty
    value): the XLNet path of a script serving both families (:data:`XLNET_SELECTED_BY`).
    Flags not defined or not parsed count as not given."""
    for name in XLNET_SELECTED_BY:
        try:
            value = getattr(flag_values, name)
        except (AttributeError, flags.UnparsedFlagAccessError):
            continue
        if value:
            return True
    return False


def check_flags_not_given(flag_values, hints: Mapping[str, str], mode: str) -> None:
    """Refuses flags that another family's script would read but this mode ignores (bert_tf:
    ignoring them silently would run something other than what the command line says).

    Args:
      flag_values: absl ``FlagValues`` (or any object, :func:`flag_given`).
      hints: flag -> what to use instead (e.g. ``{"num_train_epochs": "--train_step"}``).
      mode: how the mode was chosen, for the message (``"ALBERT (--albert_config_file)"``).

    Raises:
      FlagError: one of ``hints`` is given; names them all, each with its replacement.
    """
    given = [n for n in hints if flag_given(flag_values, n)]
    if given:
        raise FlagError(f"{mode} does not read " + ", ".join(
            f"--{n} (use {hints[n]})" for n in given))


def check_no_bert_only_flags(flag_values, profile: Profile = XLNET) -> None:
    """Refuses BERT flags given in an XLNet invocation (``profile.refused``: each with the
    XLNet flag to use instead, e.g. ``--vocab_file (use --spiece_model_file)``).

    Raises:
      FlagError: one of them is given on the command line (:func:`flag_given`); names them
        all, in the profile's order.
    """
    given = [n for n in profile.refused if flag_given(flag_values, n)]
    if given:
        hints = ", ".join(f"--{n} (use {profile.refused[n]})" for n in given)
        selected_by = {"create_pretraining_data.py": "--sp_path",
                       "run_pretraining.py": "--record_info_dir"}.get(
                           profile.script, "--model_config_path/--spiece_model_file")
        raise FlagError(f"BERT flag(s) given with XLNet's {selected_by}: {hints}")


def run_main(main: Callable[[Any], Any], skip_teardown: bool = False) -> None:
    """Runs ``main`` under absl, with one-line endings for errors and interruptions.

    ``skip_teardown``: after a successful ``main`` (exit status 0), end the process with
    :func:`exit_without_teardown` instead of the interpreter's teardown (bert_tf, issue 16:
    with TensorFlow loaded, finalizing its modules and objects was ~1 s CPU of every run).
    Only for scripts whose outputs are all closed (renamed into place) when ``main`` returns;
    error and interrupt exits keep the normal teardown.

    * a positional argument (the scripts take flags only) is a :class:`FlagError`
      (:func:`check_no_positional_arguments`);
    * a :class:`BertTfError` prints ``error: <message>`` and exits 1; output folders
      (:data:`OUTPUT_FOLDER_FLAGS`) that the failed run created and left empty are removed
      (bert_tf: the originals left them behind);
    * before ``main``, each output the command line names (:func:`locked_outputs`) is locked
      (:mod:`bert_tf.output_locks`: a second run on the same output fails with one line),
      and the temporary files that killed runs left in the output folders
      (:func:`output_folders`) are removed, said in one line (issue 15 item 5);
    * standard output that cannot be written (``> /dev/full``, a closed pipe) is one
      ``error: cannot write to standard output (...)`` line, exit 1, not a traceback
      (bert_tf); ``sys.stdout`` is flushed before ``main`` counts as done;
    * Ctrl-C prints ``interrupted`` and exits 130; SIGTERM exits 143. Both unwind normally, so
      the temporary files of atomic outputs are removed and the last checkpoint written stays
      the one a re-run resumes from.

    * an unknown flag or a bad flag value is one ``error:`` line, exit 1 (:func:`parse_flags`);
    * ``--help``, ``--helpshort``, ``--helpfull`` (and ``-?``) print absl's usage and exit 0
      (absl itself exits 1 after printing it, which made ``script --help && ...`` fail).

    Use at the bottom of every root script: ``if __name__ == "__main__": run_main(main)``.
    """

    def _on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    def _wrapped(argv):
        signal.signal(signal.SIGTERM, _on_sigterm)
        absent = absent_output_folders(FLAGS)
        stdout = sys.stdout
        sys.stdout = _StdoutGuard(stdout)
        try:
            check_no_positional_arguments(argv)
            with output_locks(locked_outputs(FLAGS)):
                for folder in output_folders(FLAGS):
                    remove_stale_temp_files(folder)
                result = main(argv)
                sys.stdout.flush()
                return result
        except BertTfError as e:
            if isinstance(e, StdoutWriteError):
                _discard_stdout(stdout)
            remove_empty_new_folders(absent)
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            sys.exit(130)
        finally:
            if isinstance(sys.stdout, _StdoutGuard):
                sys.stdout = stdout

    try:
        app.run(_wrapped, flags_parser=parse_flags)
    except SystemExit as e:
        if e.code == 1 and asks_for_help(sys.argv):
            sys.exit(0)
        if skip_teardown and e.code in (None, 0):
            exit_without_teardown(0)
        raise


class _StdoutGuard:
    """``sys.stdout`` during :func:`run_main`'s ``main``: a write or flush that fails with an
    ``OSError`` (``> /dev/full``, a closed pipe) raises :class:`StdoutWriteError` (one
    ``error:`` line) instead of a traceback; everything else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def _guarded(self, name, *args):
        try:
            return getattr(self._stream, name)(*args)
        except OSError as e:
            raise StdoutWriteError(
                f"cannot write to standard output ({e.strerror or e})") from e

    def write(self, text):
        return self._guarded("write", text)

    def writelines(self, lines):
        return self._guarded("writelines", lines)

    def flush(self):
        return self._guarded("flush")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _discard_stdout(stream) -> None:
    """Points ``stream``'s file descriptor at ``os.devnull``, so that the exit's own flush of
    its unwritten buffer does not fail again (Python's "Exception ignored ... flushing
    sys.stdout", exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def exit_without_teardown(code: int = 0) -> None:
    """Ends the process now with ``code``: flushes Python's logging handlers (absl's
    included), ``sys.stdout`` and ``sys.stderr``, then ``os._exit`` (no ``atexit`` handlers,
    no module finalization). For a finished run whose files are already closed."""
    import logging as std_logging

    std_logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def parse_flags(argv: Sequence[str]) -> List[str]:
    """absl's flag parsing for :func:`run_main`, with a bad flag as one ``error:`` line.

    absl printed ``FATAL Flags parsing error: ...`` and a second line, unlike every other
    error of the scripts (issue 15: bad-input families). The help flags are answered inside
    parsing as before.

    Returns:
      the arguments left after the flags (program name first).

    Raises:
      SystemExit(1): an unknown flag or a bad value (the message names the flag; absl's
        "Did you mean" suggestion kept).
    """
    try:
        return FLAGS(list(argv))
    except flags.Error as e:
        message = " ".join(str(e).split())
        print(f"error: {message} (--helpfull lists the flags)", file=sys.stderr)
        sys.exit(1)


HELP_FLAGS = ("help", "helpshort", "helpfull", "?")

# Folders a run creates for what it writes.
OUTPUT_FOLDER_FLAGS = ("output_dir", "model_dir", "predict_dir", "export_dir", "cached_dir",
                       "save_dir")


# Outputs locked for the run (:func:`locked_outputs`).
LOCKED_OUTPUT_FLAGS = ("output_file", "output_dir", "model_dir", "predict_dir", "save_dir")


def _flag_value(flag_values, name: str) -> Optional[str]:
    """The value of flag ``name`` if it is set (given or assigned), a non-empty str; else None.
    A default is not an output of this run: XLNet's ``--save_dir`` default
    ``proc_data/example`` is defined in ``create_pretraining_data.py``'s BERT runs too."""
    try:
        value = (flag_values[name].value
                 if name in flag_values and _flag_is_set(flag_values, name) else None)
    except Exception:  # noqa: BLE001 - unparsed flags: nothing to lock or sweep
        value = None
    return value if isinstance(value, str) and value else None


def _flag_bool(flag_values, name: str) -> Optional[bool]:
    """The value of bool flag ``name`` (given or default), or None where it is not defined."""
    try:
        value = flag_values[name].value if name in flag_values else None
    except Exception:  # noqa: BLE001 - unparsed flags
        value = None
    return value if isinstance(value, bool) else None


def locked_outputs(flag_values) -> List[Tuple[str, str]]:
    """``(path, "--flag")`` for each output of :data:`LOCKED_OUTPUT_FLAGS` set in
    ``flag_values`` (each item of a comma-separated ``--output_file``), for
    :func:`bert_tf.output_locks.output_locks`.

    ``--output_dir`` is left out when ``--model_dir`` is set: in the XLNet scripts it holds
    only the cached TFRecords, which runs of one data set share (several fine-tunings at once
    with one cache is the original's usage) and which are written atomically with their
    fingerprint; the run's own outputs are in ``--model_dir``.

    A run with ``--do_train=False`` (evaluation or prediction only) does not lock its
    ``--output_dir`` / ``--model_dir``: it only reads checkpoints there and writes its result
    files atomically, so it may run beside the training that writes them (the original's
    evaluate-while-training usage, e.g. ALBERT's separate eval job).
    """
    outputs = []
    trains = _flag_bool(flag_values, "do_train")
    for name in LOCKED_OUTPUT_FLAGS:
        value = _flag_value(flag_values, name)
        if value is None or (name == "output_dir" and _flag_value(flag_values, "model_dir")):
            continue
        if name in ("output_dir", "model_dir") and trains is False:
            continue
        items = [v.strip() for v in value.split(",")] if name == "output_file" else [value]
        outputs.extend((item, f"--{name}") for item in items if item)
    return outputs


def output_folders(flag_values) -> List[str]:
    """The folders a run writes into, where killed runs may have left temporary files: the
    values of :data:`OUTPUT_FOLDER_FLAGS` and the folder of each ``--output_file`` item, each
    once, in that order."""
    folders: List[str] = []
    for name in OUTPUT_FOLDER_FLAGS + ("output_file",):
        value = _flag_value(flag_values, name)
        if value is None:
            continue
        if name == "output_file":
            items = [v.strip() for v in value.split(",") if v.strip()]
            paths = [posixpath.dirname(v) if "://" in v else os.path.dirname(os.path.abspath(v))
                     for v in items]
        else:
            paths = [value]
        folders.extend(p for p in paths if p not in folders)
    return folders


def absent_output_folders(flag_values) -> List[str]:
    """The local folders named by :data:`OUTPUT_FOLDER_FLAGS` in ``flag_values`` (parsed absl
    flags; others are skipped) that do not exist yet, with each of their missing parents,
    deepest first. Remote paths (``gs://``...) are left alone."""
    absent: List[str] = []
    for name in OUTPUT_FOLDER_FLAGS:
        try:
            value = flag_values[name].value if name in flag_values else None
        except Exception:  # noqa: BLE001 - unparsed flags: nothing to record
            value = None
        if not isinstance(value, str) or not value or "://" in value:
            continue
        path = os.path.abspath(value)
        while path not in absent and not os.path.exists(path):
            absent.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return sorted(absent, key=len, reverse=True)


def remove_empty_new_folders(absent: Sequence[str]) -> None:
    """Removes each folder of ``absent`` (:func:`absent_output_folders`, deepest first) that
    now exists and is empty; a folder that holds anything is kept."""
    for path in absent:
        try:
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)
        except OSError:
            pass


def check_no_positional_arguments(argv: Sequence[str]) -> None:
    """The scripts take flags only; the original ignored anything else, so a stray word (a
    value after a space, ``--output_dir /tmp/x``, or a line break lost in a copied command)
    silently changed nothing.

    Raises:
      FlagError: names the first stray argument.
    """
    stray = list(argv[1:])
    if stray:
        raise FlagError(f"unexpected argument {stray[0]!r}"
                        f"{f' (and {len(stray) - 1} more)' if len(stray) > 1 else ''}: the "
                        f"scripts take flags only, as --name=value")


def asks_for_help(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (program name first) holds ``--help``, ``--helpshort``,
    ``--helpfull`` or ``-?`` (one or two dashes, ``=true`` allowed) before a ``--``."""
    for arg in argv[1:]:
        if arg == "--":
            return False
        name, _, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and name in HELP_FLAGS and value.lower() in ("", "true", "1"):
            return True
    return False
