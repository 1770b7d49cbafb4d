"""The profiles of the flag vocabulary (:mod:`bert_tf.flags.vocabulary`), one per family and
one per root script, and the functions that declare a script's flags from them.

A :class:`~bert_tf.flags.vocabulary.Profile` says which flags a family uses and where its
original gives a flag another default or meaning: :data:`BERT`, :data:`XLNET`
(``learning_rate`` 1e-5, ``train_batch_size`` 8, ``--output_dir`` holding only the
TFRecords...), :data:`ALBERT`. A root script's profile adds the defaults where the original
script of that name had another one (``max_seq_length`` is 128 in ``run_classifier.py`` and
384 in :data:`RUN_SQUAD`). The same profile gives the defaults of the flags a script defines
and of its task's argument class (:func:`bert_tf.flags.arguments.args_class`), so an entry
point defines its flags from the class's fields (:func:`define_args`).
"""

import dataclasses
import sys
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import flags

from bert_tf.flags.vocabulary import (ALBERT_SPECS, BERT_SPECS, FLAG_SPECS, XLNET_DATA_SPECS,
                                      XLNET_PRETRAIN_SPECS, XLNET_QA_SPECS, XLNET_SPECS, Profile)

FLAGS = flags.FLAGS

# BERT: every flag of BERT_SPECS, with its defaults and meanings (spec bert.md 5.1, 6.1, 8.1,
# 9.1, 10).
# (bert_tf) XLNet's --lr_layer_decay_rate, for BERT's and ALBERT's fine-tuning (issue 26).
_LAYER_DECAY_HELP = {
    "lr_layer_decay_rate": "(bert_tf, beyond the original) Layer-wise learning rates: the head, "
                           "the pooler and the top encoder layer at --learning_rate, each lower "
                           "layer times this rate, the embeddings lowest (XLNet's flag; bert_tf "
                           "scales the update, not the gradient, which Adam would undo). ALBERT "
                           "shares one layer: it is the top layer, only the embeddings get "
                           "learning_rate * rate. 1.0: off."}
BERT = Profile("BERT", tuple(BERT_SPECS) + ("lr_layer_decay_rate",), helps=_LAYER_DECAY_HELP)

# XLNet: the flags of XLNet's run_classifier.py (spec xlnet.md 8.1), those of bert_tf's XLNet
# feature extraction, and where XLNet's original gives a shared flag another default or meaning.
# In the shared namespace a shared flag is registered with BERT's default: the XLNet default
# applies unless the flag is given (args_from_flags).
XLNET = Profile(
    "XLNet",
    flags=("init_checkpoint", "output_dir", "data_dir", "task_name", "do_train", "do_eval",
           "do_predict", "learning_rate", "train_batch_size", "eval_batch_size",
           "predict_batch_size", "max_seq_length", "use_tpu", "tpu_zone", "gcp_project",
           "master", "export_dir", "allow_partial_init_checkpoint",
           "recompute_grad")                                          # shared with BERT
          + ("input_file", "output_file", "layers", "batch_size", "pooling",
             "normalize")  # extract_features
          + ("window_pooling",)  # long inputs by sliding windows (issue 13)
          + tuple(XLNET_SPECS)
          + tuple(XLNET_DATA_SPECS) + ("random_seed", "num_workers")  # data_utils.py
          + tuple(XLNET_PRETRAIN_SPECS)                               # train.py
          + tuple(XLNET_QA_SPECS) + ("train_file", "predict_file", "doc_stride",
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
             "num_tpu_cores": "--num_core_per_host", "dtype": "--use_bfloat16"},
)

# Giving one of these selects the XLNet path of a script that serves both families.
XLNET_SELECTED_BY = ("model_config_path", "spiece_model_file")

# The flags of XLNet's data_utils.py path: its own, then those shared with other scripts.
_XLNET_DATA_FLAGS = tuple(XLNET_DATA_SPECS) + ("num_core_per_host", "uncased", "use_tpu",
                                                "num_passes", "random_seed", "num_workers")

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
_XLNET_PRETRAIN_FLAGS = tuple(XLNET_PRETRAIN_SPECS) + (
    "master", "tpu", "gcp_project", "tpu_zone", "tpu_job_name", "use_tpu", "num_hosts",
    "num_core_per_host", "num_passes", "model_dir", "init_checkpoint", "model_config_path", "learning_rate", "clip",
    "min_lr_ratio", "warmup_steps", "adam_epsilon", "decay_method", "weight_decay",
    "train_batch_size", "train_steps", "iterations", "save_steps", "max_save", "seq_len",
    "reuse_len", "uncased", "bi_data", "mask_alpha", "mask_beta", "num_predict", "dropout",
    "dropatt", "clamp_len", "summary_type", "use_bfloat16", "init", "init_std", "init_range",
    "allow_partial_init_checkpoint", "recompute_grad")
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
             "num_tpu_cores": "--num_core_per_host", "dtype": "--use_bfloat16"})

# XLNet's run_squad.py (spec 9.1), run as run_squad.py with XLNet's flags. The machine flags
# are also a flag group of the XLNet argument classes (bert_tf.flags.arguments).
XLNET_MACHINE_FLAGS = ("use_tpu", "tpu", "tpu_zone", "gcp_project", "master", "tpu_job_name",
                       "num_hosts", "num_core_per_host", "iterations")
_XLNET_FINETUNE_FLAGS = ("model_config_path", "spiece_model_file", "init_checkpoint",
                         "allow_partial_init_checkpoint",
                         "output_dir", "model_dir", "uncased", "overwrite_data", "dropout",
                         "dropatt", "clamp_len", "summary_type", "use_bfloat16", "init",
                         "init_std", "init_range", "max_seq_length", "do_train",
                         "train_batch_size", "train_steps", "warmup_steps", "save_steps",
                         "max_save", "shuffle_buffer", "learning_rate", "min_lr_ratio", "clip",
                         "weight_decay", "adam_epsilon", "decay_method",
                         "lr_layer_decay_rate", "recompute_grad") + XLNET_MACHINE_FLAGS
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
             "num_tpu_cores": "--num_core_per_host", "dtype": "--use_bfloat16"})

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
ALBERT = Profile("ALBERT", tuple(BERT_SPECS) + ("lr_layer_decay_rate",) + tuple(ALBERT_SPECS),
                 helps=_LAYER_DECAY_HELP)

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
             "do_lower_case": "--uncased",
             "dtype": "--use_bfloat16"})


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
        if name not in flag_values:
            help_text = first.help(name) + "".join(_other_profile_note(name, first, p)
                                                   for p in later)
            _define_one(name, first.default(name), help_text, module, flag_values)
        readers = _READERS.setdefault(flag_values[name], [])
        readers.extend(p for p in (first, *later) if p not in readers)


# absl Flag -> the profiles whose parts of define_profiles listed it (the entry point's
# families that read the flag), for flag_readers.
_READERS: "weakref.WeakKeyDictionary[Any, List[Profile]]" = weakref.WeakKeyDictionary()


def flag_readers(flag_values, name: str) -> Tuple[Profile, ...]:
    """The profiles (one per family: ``RUN_CLASSIFIER``, ``XLNET_RUN_CLASSIFIER``...) whose
    argument classes define flag ``name`` of ``flag_values`` (:func:`define_profiles`, in the
    order the entry point gave them): the modes of the running script that read it. Empty for
    a flag not defined there or not by :func:`define_profiles` (absl's own ``--verbosity``),
    and for an object that is not absl ``FlagValues``."""
    if not isinstance(flag_values, flags.FlagValues) or name not in flag_values:
        return ()
    return tuple(_READERS.get(flag_values[name], ()))


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
