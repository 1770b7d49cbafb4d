"""The one flag vocabulary shared by every root script (:data:`FLAG_SPECS`), and
:class:`Profile`, one family's or one script's view of it.

Each flag is declared once in :data:`FLAG_SPECS`, with the original release's type, default and
meaning (spec `bert.md` sections 5.1, 6.1, 8.1, 9.1, 10; `xlnet.md` section 8.1). A flag means
the same thing in every script. Flags beyond the originals are marked "(bert_tf)" in their help
text; the XLNet-only ones "XLNet:". The profiles themselves are in
:mod:`bert_tf.flags.profiles`.

The tables per family (:data:`BERT_SPECS`, :data:`XLNET_SPECS`, ...) are public for the
profiles, which list a family's flags by table.
"""

import dataclasses
import types
from typing import Any, Dict, Mapping, Optional, Tuple

# name -> (kind, default, help). kind is one of "string", "bool", "integer", "float", "enum:a|b".
# Defaults and help texts are BERT's; the XLNet-only flags follow in XLNET_SPECS; XLNet's own
# defaults and meanings of the shared flags are in the XLNET profile (bert_tf.flags.profiles).
BERT_SPECS: Dict[str, Tuple[str, Any, str]] = {
    # ---- files ------------------------------------------------------------------------------
    "input_file": ("string", None, "Input file(s): create_pretraining_data.py (text) and "
                   "run_pretraining.py (TFRecord) take a comma-separated list, each item may be "
                   "a glob; extract_features.py takes one text file."),
    "output_file": ("string", None, "Output file(s); comma-separated list where the script allows several. (bert_tf) A symlink is written through to its target (the link stays, as the originals wrote through it); an output that is also an input is refused."),
    "output_dir": ("string", None, "Directory for checkpoints (model.ckpt-N) and result files."),
    "data_dir": ("string", None, "Directory with the task's .tsv files (train.tsv, dev.tsv, test.tsv)."),
    "vocab_file": ("string", None, "WordPiece vocabulary file the BERT model was trained on."),
    "bert_config_file": ("string", None, "bert_config.json of the pre-trained BERT model."),
    "init_checkpoint": ("string", None, "Checkpoint prefix to start from (e.g. "
                        ".../bert_model.ckpt, .../xlnet_model.ckpt, ALBERT's .../model.ckpt-best)."),
    "train_file": ("string", None, "SQuAD json for training, e.g. train-v1.1.json."),
    "predict_file": ("string", None, "SQuAD json for predictions, e.g. dev-v1.1.json."),
    "task_name": ("string", None, "Name of the task to train (case-insensitive)."),
    # ---- text processing --------------------------------------------------------------------
    "do_lower_case": ("bool", True, "Lower case the input text (True for uncased models)."),
    "do_whole_word_mask": ("bool", False, "Mask whole words instead of single WordPieces."),
    "max_seq_length": ("integer", 128, "Maximum total input length after tokenization "
                       "(WordPiece; SentencePiece in XLNet mode and for ALBERT with an "
                       "spm_model_file); longer sequences are truncated, shorter ones padded."),
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
    "do_eval": ("bool", False, "Whether to run eval on the dev set (XLNet's run_classifier "
                "and run_race: on the split that eval_split names)."),
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
    "save_checkpoints_steps": ("integer", 1000, "How often to save the model checkpoint. "
                               "(bert_tf) <= 0: at the end only; Ctrl-C and SIGTERM save the "
                               "step they stop at."),
    "iterations_per_loop": ("integer", 1000, "How many steps to make in each estimator call. "
                            "(bert_tf) Steps run in one TensorFlow call; < 1 reads as 1."),
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
    "group_by_length": ("bool", False, "(bert_tf, beyond the original) run_classifier "
                        "--do_train: batch examples of similar length together (the shuffled "
                        "examples are sorted by length 50 batches at a time, then the batches "
                        "shuffled), so batches cut to their longest row are shorter and "
                        "training faster. The batches then differ from a random shuffle's (the "
                        "loss curve and the result may differ). No effect with --use_tpu or "
                        "--use_xla (fixed shapes)."),
    "use_xla": ("bool", False, "(bert_tf) Compile the model step with XLA. Off by default: on 2 CPU cores (bench/bench_encoder_peers.py, bench_train_step_peers.py) it made MiniLM inference 1.10x faster, BERT-Base inference about even, and the training step 0.90x (with --dtype=bfloat16 0.61x: XLA's CPU bfloat16 matmuls are not oneDNN's); it pads batches to fixed shapes."),
    "dtype": ("enum:float32|float16|bfloat16", "float32", "(bert_tf) Compute dtype (mixed precision; "
              "variables stay float32; float16 uses loss scaling)."),
    "gradient_accumulation_steps": ("integer", 1, "(bert_tf) Accumulate gradients over this many "
                                    "batches before each optimizer step."),
    "recompute_grad": ("bool", False, "(bert_tf, beyond the original) Training keeps only "
                       "each transformer block's input for the backward pass and recomputes the "
                       "block there (same dropout masks): less activation memory, so bigger "
                       "batches fit, for about a third more compute per step. Same losses and "
                       "gradients; checkpoints unchanged."),
    "export_dir": ("string", None, "(bert_tf) Write a SavedModel with a serving signature here."),
    "allow_partial_init_checkpoint": ("bool", False, "(bert_tf, beyond the original) Let "
                                      "--init_checkpoint leave encoder variables (bert/..., "
                                      "model/transformer/...) at their initial values; without "
                                      "it such a warm start is refused."),
    "num_workers": ("integer", 1, "(bert_tf) Number of parallel worker processes for tokenization. "
                    "BERT's create_pretraining_data.py uses them only for 16 MB of local input "
                    "or more (below that the processes cost more than they save: it runs in "
                    "one process, the same records)."),
    # ---- long inputs by sliding windows (issue 13) ----
    "window_pooling": ("enum:mean|max", None, "(bert_tf, beyond the original) With --doc_stride: "
                       "how run_classifier.py pools the logits of an example's windows into its "
                       "one prediction (unset: mean)."),
    # ---- fine-tuning recipes (issue 26; BERT and ALBERT run_classifier.py, BERT run_squad.py) ----
    "seed": ("integer", None, "(bert_tf, beyond the original) Seed of every random choice of the "
             "run: Python's random, numpy, TensorFlow and Keras (the new head's initialisation, "
             "dropout) and the training shuffle. Unset: as the original (the shuffle's fixed "
             "seed, the rest unseeded)."),
    "deterministic": ("bool", False, "(bert_tf, beyond the original) TensorFlow's op determinism "
                      "(tf.config.experimental.enable_op_determinism): with --seed, two runs on "
                      "the same machine give bit-identical checkpoints and metrics, also when one was "
                      "killed and resumed; slower."),
    "num_restarts": ("integer", 1, "(bert_tf, beyond the original) Fine-tune N times from the "
                     "same checkpoint with seeds --seed, --seed+1, ... (unset --seed: 0, 1, ...) "
                     "into <output_dir>/restart-<k>/ (each resumable), then write "
                     "restarts_summary.txt (mean, std, min, max of every metric) and copy the "
                     "best restart by --select_metric as <output_dir>/model.ckpt-best, which "
                     "--do_predict uses. 1: one run, as the original."),
    "select_metric": ("string", None, "(bert_tf, beyond the original) With --num_restarts > 1: "
                      "the eval_results.txt key that picks the best restart (higher is better; a "
                      "name ending in loss: lower). Unset: the task's headline: eval_accuracy, "
                      "eval_mcc for CoLA, eval_pearson for STS-B, f1 for SQuAD."),
    "lr_schedule": ("enum:warmup_linear|slanted_triangular", "warmup_linear", "(bert_tf, beyond "
                    "the original: slanted_triangular) The learning-rate schedule: the original's "
                    "linear warmup + linear decay, or ULMFiT's slanted triangular "
                    "(--slanted_cut_frac, --slanted_ratio; --warmup_proportion is then unused)."),
    "slanted_cut_frac": ("float", 0.1, "(bert_tf, beyond the original) Slanted triangular: the "
                         "fraction of the steps over which the rate rises (ULMFiT's cut_frac)."),
    "slanted_ratio": ("float", 32.0, "(bert_tf, beyond the original) Slanted triangular: how much "
                      "smaller the lowest rate is than the peak (ULMFiT's ratio)."),
    "unfreeze_schedule": ("integer", 0, "(bert_tf, beyond the original) Gradual unfreezing: the "
                          "head (and pooler) train from the first step, then one more encoder "
                          "block from the top every k steps (embeddings last); 0: all from the "
                          "start, as the original."),
    "freeze_encoder": ("bool", False, "(bert_tf, beyond the original) Only the head trains; the "
                       "encoder keeps --init_checkpoint's weights and runs without dropout "
                       "(feature-based, BERT paper 5.3)."),
    "feature_layers": ("string", None, "(bert_tf, beyond the original) The head reads these "
                       "encoder layers' [CLS] (run_classifier) or per-token (run_squad) outputs, "
                       "e.g. -1,-2,-3,-4, combined by --feature_combine, instead of the pooled "
                       "output / last layer (changes output_weights' shape)."),
    "feature_combine": ("enum:concat|sum", "concat", "(bert_tf, beyond the original) How "
                        "--feature_layers are combined: concatenated or summed."),
}

# ---- XLNet run_classifier / extract_features (spec xlnet.md 8.1) -------------------------------
# The flags XLNet has and BERT has not. The flags both have (init_checkpoint, data_dir,
# max_seq_length, learning_rate...) are in BERT_SPECS; where XLNet gives them another default
# or meaning, the XLNET profile says so.
XLNET_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
                     "run_classifier, run_squad, run_race, run_pretraining and "
                     "extract_features: float32 variables and checkpoints)."),
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
    "eval_split": ("string", "dev", "XLNet: split evaluated / predicted: dev or test "
                   "(run_race.py also takes train, without --do_train)."),
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
XLNET_DATA_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
XLNET_PRETRAIN_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
XLNET_QA_SPECS: Dict[str, Tuple[str, Any, str]] = {
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

# ---- ALBERT (google-research/albert at b772393; golden README albert) ------------------------
# The flags ALBERT's scripts have and BERT's have not; the shared ones are in BERT_SPECS, and
# ALBERT's own defaults of them are in the ALBERT_* profiles (bert_tf.flags.profiles).
ALBERT_SPECS: Dict[str, Tuple[str, Any, str]] = {
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
FLAG_SPECS: Dict[str, Tuple[str, Any, str]] = {**BERT_SPECS, **XLNET_SPECS,
                                               **XLNET_DATA_SPECS, **XLNET_PRETRAIN_SPECS,
                                               **XLNET_QA_SPECS, **ALBERT_SPECS}


# ---- the profile: which flags, which defaults, which meaning ------------------------------------

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

