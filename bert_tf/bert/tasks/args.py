"""The argument classes of BERT's tasks: one dataclass per root script, whose fields are the
script's flags (names and types; the defaults are the script's profile's, :mod:`bert_tf.flags`).

Each class is the one list of its task's flags: the root script defines its flags from the
fields (:func:`bert_tf.flags.define_args`) and its task reads them back
(:func:`bert_tf.flags.args_from_flags`). TensorFlow-free, so that a root script imports it at
module level and ``--help`` answers without TensorFlow (issue 15 item 6).
"""

from typing import Optional

from bert_tf import flags as bert_flags


@bert_flags.args_class(bert_flags.RUN_CLASSIFIER, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS, bert_flags.BERT_TF_RECIPE_FLAGS)
class ClassifierArgs:
    """The original `run_classifier.py` flags (spec 8.1) plus bert_tf's; the defaults are
    :data:`bert_tf.flags.RUN_CLASSIFIER`'s (the original's).

    ``data_dir``, ``task_name`` and ``output_dir`` are required; ``bert_config_file`` and
    ``vocab_file`` too unless all three model flags are left out (embedded default model).
    """

    data_dir: Optional[str]
    bert_config_file: Optional[str]
    task_name: Optional[str]
    vocab_file: Optional[str]
    output_dir: Optional[str]
    init_checkpoint: Optional[str]
    do_lower_case: bool
    max_seq_length: int
    do_train: bool
    do_eval: bool
    do_predict: bool
    train_batch_size: int
    eval_batch_size: int
    predict_batch_size: int
    learning_rate: float
    num_train_epochs: float
    warmup_proportion: float
    save_checkpoints_steps: int
    iterations_per_loop: int
    # ---- bert_tf ----
    export_dir: Optional[str]
    doc_stride: Optional[int]
    window_pooling: Optional[str]
    siamese: bool
    group_by_length: bool


@bert_flags.args_class(bert_flags.RUN_SQUAD, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS, bert_flags.BERT_TF_SQUAD_RECIPE_FLAGS)
class SquadArgs:
    """The flags of the original ``run_squad.py`` (spec 9.1) and the bert_tf additions.

    Defaults are :data:`bert_tf.flags.RUN_SQUAD`'s (the original's: ``max_seq_length`` 384).
    None means "not given"; read from flags with :func:`bert_tf.flags.args_from_flags`.
    """

    bert_config_file: Optional[str]
    vocab_file: Optional[str]
    output_dir: Optional[str]
    train_file: Optional[str]
    predict_file: Optional[str]
    init_checkpoint: Optional[str]
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
    verbose_logging: bool
    version_2_with_negative: bool
    null_score_diff_threshold: float
    # bert_tf
    export_dir: Optional[str]


@bert_flags.args_class(bert_flags.RUN_PRETRAINING, bert_flags.BERT_TPU_FLAGS,
                        bert_flags.BERT_TF_TRAINING_FLAGS)
class PretrainingArgs:
    """The original `run_pretraining.py` flags (spec 6.1) plus three (bert_tf) flags.

    Defaults are :data:`bert_tf.flags.RUN_PRETRAINING`'s (the original's). None means "not
    given". ``input_file`` is a comma-separated list of files or globs.
    """

    bert_config_file: Optional[str]
    input_file: Optional[str]
    output_dir: Optional[str]
    init_checkpoint: Optional[str]
    max_seq_length: int
    max_predictions_per_seq: int
    do_train: bool
    do_eval: bool
    train_batch_size: int
    eval_batch_size: int
    learning_rate: float
    num_train_steps: int
    num_warmup_steps: int
    save_checkpoints_steps: int
    iterations_per_loop: int
    max_eval_steps: int
    # (bert_tf)


@bert_flags.args_class(bert_flags.EXTRACT_FEATURES)
class ExtractFeaturesArgs:
    """The original script's flags (spec 10) plus ``pooling``; the defaults are
    :data:`bert_tf.flags.EXTRACT_FEATURES`'s (the original's). None means "not given"."""

    input_file: Optional[str]
    output_file: Optional[str]
    layers: str
    bert_config_file: Optional[str]
    max_seq_length: int
    init_checkpoint: Optional[str]
    vocab_file: Optional[str]
    do_lower_case: bool
    batch_size: int
    use_tpu: bool
    master: Optional[str]
    num_tpu_cores: int
    use_one_hot_embeddings: bool
    pooling: str
    doc_stride: Optional[int]
    export_dir: Optional[str]
    normalize: bool
    dtype: str


@bert_flags.args_class(bert_flags.CREATE_PRETRAINING_DATA)
class PretrainingDataArgs:
    """The original ``create_pretraining_data.py`` flags (spec 5.1) plus bert_tf's
    ``num_workers``; the defaults are :data:`bert_tf.flags.CREATE_PRETRAINING_DATA`'s (the
    original's). ``input_file``, ``output_file`` and ``vocab_file`` are required (None: not
    given)."""

    input_file: Optional[str]
    output_file: Optional[str]
    vocab_file: Optional[str]
    do_lower_case: bool
    do_whole_word_mask: bool
    max_seq_length: int
    max_predictions_per_seq: int
    random_seed: int
    dupe_factor: int
    masked_lm_prob: float
    short_seq_prob: float
    # ---- bert_tf ----
    num_workers: int
