"""The argument classes of ALBERT's tasks: one dataclass per original google-research/albert
script (``run_classifier.py``, ``run_squad_v1.py`` / ``run_squad_v2.py``,
``run_pretraining.py``, ``create_pretraining_data.py``), whose fields are its flags (names and
types; the defaults are the script's profile's, :mod:`bert_tf.flags`).

Each class is the one list of its task's flags: the entry points (the root scripts and
``python -m bert_tf.albert.<script>``) define their flags from the fields
(:func:`bert_tf.flags.define_args`) and the task reads them back
(:func:`read_args`). TensorFlow-free, so that an entry point imports it at
module level and ``--help`` answers without TensorFlow (issue 15 item 6).
"""

from typing import Optional

from bert_tf import flags as bert_flags
from bert_tf.errors import FlagError


@bert_flags.args_class(bert_flags.ALBERT_RUN_CLASSIFIER, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS, bert_flags.BERT_TF_RECIPE_FLAGS)
class AlbertClassifierArgs:
    """The flags of ALBERT's run_classifier.py (defaults: its own,
    :data:`bert_tf.flags.ALBERT_RUN_CLASSIFIER`) plus bert_tf's ``use_xla``,
    ``gradient_accumulation_steps``, ``dtype``."""

    data_dir: Optional[str]
    albert_config_file: Optional[str]
    task_name: Optional[str]
    vocab_file: Optional[str]
    spm_model_file: Optional[str]
    output_dir: Optional[str]
    cached_dir: Optional[str]
    init_checkpoint: Optional[str]
    albert_hub_module_handle: Optional[str]
    do_lower_case: bool
    max_seq_length: int
    do_train: bool
    do_eval: bool
    do_predict: bool
    train_batch_size: int
    eval_batch_size: int
    predict_batch_size: int
    learning_rate: float
    train_step: int
    warmup_step: int
    save_checkpoints_steps: int
    keep_checkpoint_max: int
    iterations_per_loop: int
    optimizer: str
    export_dir: Optional[str]
    threshold_to_export: float


@bert_flags.args_class(bert_flags.ALBERT_RUN_SQUAD_V1, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS)
class AlbertSquadArgs:
    """The flags of ALBERT's run_squad_v1.py / run_squad_v2.py (defaults: their own,
    :data:`bert_tf.flags.ALBERT_RUN_SQUAD_V1`; v2's extra ``start_n_top``, ``end_n_top``,
    ``dropout_prob``; v1's ``use_einsum``, ``export_dir``) plus bert_tf's ``use_xla``,
    ``gradient_accumulation_steps``, ``dtype``."""

    albert_config_file: Optional[str]
    vocab_file: Optional[str]
    spm_model_file: Optional[str]
    output_dir: Optional[str]
    train_file: Optional[str]
    predict_file: Optional[str]
    train_feature_file: Optional[str]
    predict_feature_file: Optional[str]
    predict_feature_left_file: Optional[str]
    init_checkpoint: Optional[str]
    albert_hub_module_handle: Optional[str]
    do_lower_case: bool
    max_seq_length: int
    doc_stride: int
    max_query_length: int
    do_train: bool
    do_predict: bool
    train_batch_size: int
    predict_batch_size: int
    learning_rate: float
    num_train_epochs: float
    warmup_proportion: float
    save_checkpoints_steps: int
    iterations_per_loop: int
    n_best_size: int
    max_answer_length: int
    use_einsum: bool
    export_dir: Optional[str]
    start_n_top: int
    end_n_top: int
    dropout_prob: float


@bert_flags.args_class(bert_flags.ALBERT_RUN_PRETRAINING, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS)
class AlbertPretrainingArgs:
    """ALBERT run_pretraining.py's flags (its defaults) plus bert_tf's ``use_xla``,
    ``dtype``, ``gradient_accumulation_steps``."""

    albert_config_file: Optional[str]
    input_file: Optional[str]
    output_dir: Optional[str]
    init_checkpoint: Optional[str]
    max_seq_length: int
    max_predictions_per_seq: int
    do_train: bool
    do_eval: bool
    train_batch_size: int
    eval_batch_size: int
    optimizer: str
    learning_rate: float
    poly_power: float
    num_train_steps: int
    num_warmup_steps: int
    start_warmup_step: int
    save_checkpoints_steps: int
    keep_checkpoint_max: int
    iterations_per_loop: int
    max_eval_steps: int
    init_from_group0: bool
    masked_lm_budget: float
    # (bert_tf)


@bert_flags.args_class(bert_flags.ALBERT_CREATE_PRETRAINING_DATA)
class AlbertDataArgs:
    """The flags of ALBERT's create_pretraining_data.py, with its defaults
    (:data:`bert_tf.flags.ALBERT_CREATE_PRETRAINING_DATA`: ``max_seq_length`` 512,
    ``dupe_factor`` 40, ``do_whole_word_mask`` True)."""

    input_file: Optional[str]
    output_file: Optional[str]
    vocab_file: Optional[str]
    spm_model_file: Optional[str]
    input_file_mode: str
    do_lower_case: bool
    do_whole_word_mask: bool
    do_permutation: bool
    favor_shorter_ngram: bool
    random_next_sentence: bool
    max_seq_length: int
    ngram: int
    max_predictions_per_seq: int
    random_seed: int
    dupe_factor: int
    masked_lm_prob: float
    short_seq_prob: float


# ALBERT's run_squad_v1.py and run_squad_v2.py each define a part of AlbertSquadArgs' flags.
ALBERT_SQUAD_V1_FLAGS = tuple(n for n in bert_flags.field_names(AlbertSquadArgs)
                              if n not in ("start_n_top", "end_n_top", "dropout_prob"))
ALBERT_SQUAD_V2_FLAGS = tuple(n for n in bert_flags.field_names(AlbertSquadArgs)
                              if n not in ("use_einsum", "export_dir"))


# BERT run_classifier flags that ALBERT's run_classifier has no use for -> ALBERT's flag.
CLASSIFIER_BERT_ONLY_FLAGS = {
    "bert_config_file": "--albert_config_file",
    "num_train_epochs": "--train_step (ALBERT trains a number of steps)",
    "warmup_proportion": "--warmup_step",
    # issue 13: ALBERT mode keeps ALBERT's truncation (its cached records)
    "doc_stride": "the BERT or XLNet mode for sliding windows; ALBERT mode truncates as "
                  "ALBERT's original",
    "window_pooling": "the BERT or XLNet mode, with --doc_stride"}

# Flags of BERT's run_squad.py that ALBERT's do not read -> ALBERT's.
SQUAD_BERT_ONLY_FLAGS = {
    "bert_config_file": "--albert_config_file",
    "verbose_logging": "nothing (ALBERT answers are character spans)",
    "null_score_diff_threshold": "nothing (ALBERT v2 searches the threshold)"}

# Each argument class -> the BERT flags its root script refuses in ALBERT mode, and the mode's
# name in the error (bert_tf: they would be ignored silently).
REFUSED_BERT_FLAGS = {
    AlbertClassifierArgs: (CLASSIFIER_BERT_ONLY_FLAGS,
                           "ALBERT's run_classifier (--albert_config_file)"),
    AlbertSquadArgs: (SQUAD_BERT_ONLY_FLAGS, "ALBERT's run_squad (--albert_config_file)"),
    AlbertPretrainingArgs: ({"bert_config_file": "--albert_config_file"},
                            "ALBERT's run_pretraining (--albert_config_file)"),
}


# Each argument class -> the flags its root script reads for ALBERT's mode outside the class
# (run_squad.py: --version_2_with_negative chooses run_squad_v2's flags).
READ_BY_ENTRY_POINT = {AlbertSquadArgs: ("version_2_with_negative",)}


def is_albert_data_invocation(flag_values) -> bool:
    """True when an ALBERT-only flag (:data:`bert_tf.flags.ALBERT_CREATE_SELECTED_BY`) is given
    on the command line (``--spm_model_file=`` with an empty value counts too)."""
    return any(bert_flags.flag_given(flag_values, n) for n in bert_flags.ALBERT_CREATE_SELECTED_BY)


def read_args(args_class, flag_values):
    """An ALBERT task's argument class read from absl ``flag_values`` (ALBERT's defaults for
    the flags not given): what the entry points (``run_classifier.py --albert_config_file``,
    ``run_squad.py --albert_config_file``, ``run_pretraining.py --albert_config_file``,
    ``create_pretraining_data.py`` with ALBERT's flags, and ``python -m
    bert_tf.albert.<script>``) pass to the task's ``run``.

    Args:
      args_class: :class:`AlbertClassifierArgs`, :class:`AlbertSquadArgs`,
        :class:`AlbertPretrainingArgs` or :class:`AlbertDataArgs`.
      flag_values: parsed absl flags.

    Raises:
      FlagError: a BERT flag the ALBERT script does not read (:data:`REFUSED_BERT_FLAGS`:
        ``--bert_config_file``, ``--num_train_epochs``...), XLNet's ``--use_bfloat16``
        (:data:`bert_tf.flags.XLNET_ONLY_HINTS`), or any other flag of the entry point that
        ``args_class`` does not read (XLNet's ``--clamp_len``, BERT's ``--group_by_length``...;
        :func:`bert_tf.flags.check_flags_not_given`) given to the root script in ALBERT mode;
        ``--num_workers`` with ALBERT's create_pretraining_data flags (BERT's pipeline only).
    """
    if args_class is AlbertDataArgs:
        if bert_flags.flag_given(flag_values, "num_workers"):
            raise FlagError("--num_workers is not supported with ALBERT's flags (ALBERT's "
                            "create_pretraining_data runs in one process)")
        hints, mode = {}, "ALBERT's create_pretraining_data (--spm_model_file, --ngram...)"
    else:
        hints, mode = REFUSED_BERT_FLAGS[args_class]
    bert_flags.check_flags_not_given(flag_values, {**hints, **bert_flags.XLNET_ONLY_HINTS}, mode,
                                     args_class, READ_BY_ENTRY_POINT.get(args_class, ()))
    return bert_flags.args_from_flags(args_class, flag_values)
