"""The argument classes of XLNet's tasks: one dataclass per original script (``run_classifier.py``,
``run_squad.py``, ``run_race.py``, ``train.py``, ``data_utils.py``) and bert_tf's feature
extraction, whose fields are its flags (names and types; the defaults are the script's
profile's, :mod:`bert_tf.flags`).

Each class is the one list of its task's flags: the entry point defines its flags from the
fields (:func:`bert_tf.flags.define_args`) and the task reads them back
(:func:`read_args`). TensorFlow-free, so that a root script imports it at
module level and ``--help`` answers without TensorFlow (issue 15 item 6).
"""

from typing import Optional

from bert_tf import flags as bert_flags


@bert_flags.args_class(bert_flags.XLNET_RUN_CLASSIFIER, bert_flags.XLNET_MODEL_FLAGS,
                        bert_flags.XLNET_MACHINE_FLAGS, bert_flags.XLNET_OPTIMIZER_FLAGS)
class XLNetClassifierArgs:
    """The flags of XLNet's original ``run_classifier.py`` (spec 8.1) with their defaults
    (:data:`bert_tf.flags.XLNET_RUN_CLASSIFIER`'s: the original's).
    The model, machine and optimizer flags come from the shared groups of
    :mod:`bert_tf.flags` (``XLNET_MODEL_FLAGS``...)."""

    # model
    summary_type: str
    use_summ_proj: bool
    # I/O
    overwrite_data: bool
    init_checkpoint: Optional[str]
    output_dir: str
    spiece_model_file: str
    model_dir: str
    data_dir: str
    # training
    do_train: bool
    lr_layer_decay_rate: float
    # evaluation
    do_eval: bool
    do_predict: bool
    predict_threshold: float
    eval_split: str
    eval_batch_size: int
    predict_batch_size: int
    predict_dir: Optional[str]
    eval_all_ckpt: bool
    predict_ckpt: Optional[str]
    # task
    task_name: Optional[str]
    max_seq_length: int
    shuffle_buffer: int
    num_passes: int
    uncased: bool
    cls_scope: Optional[str]
    is_regression: bool
    # bert_tf: long inputs by sliding windows (issue 13)
    doc_stride: Optional[int]
    window_pooling: Optional[str]
    # ---- bert_tf ----
    export_dir: Optional[str]


@bert_flags.args_class(bert_flags.XLNET_EXTRACT_FEATURES)
class XLNetExtractFeaturesArgs:
    """Flags of the XLNet feature extraction; the defaults are
    :data:`bert_tf.flags.XLNET_EXTRACT_FEATURES`'s. None or "" means "not given"."""

    input_file: Optional[str]
    output_file: Optional[str]
    layers: str
    model_config_path: Optional[str]
    spiece_model_file: Optional[str]
    init_checkpoint: Optional[str]
    max_seq_length: int
    uncased: bool
    batch_size: int
    pooling: str
    normalize: bool
    clamp_len: int
    use_bfloat16: bool
    use_tpu: bool
    doc_stride: Optional[int]
    export_dir: Optional[str]


@bert_flags.args_class(bert_flags.XLNET_RUN_SQUAD, bert_flags.XLNET_MODEL_FLAGS,
                        bert_flags.XLNET_MACHINE_FLAGS, bert_flags.XLNET_OPTIMIZER_FLAGS)
class XLNetSquadArgs:
    """The flags of XLNet's original ``run_squad.py`` (spec 9.1) with their defaults
    (:data:`bert_tf.flags.XLNET_RUN_SQUAD`'s: the original's), plus ``random_seed``.
    The model, machine and optimizer flags come from the shared groups of
    :mod:`bert_tf.flags` (``XLNET_MODEL_FLAGS``...)."""

    # preprocessing
    do_prepro: bool
    num_proc: int
    proc_id: int
    # model
    summary_type: str
    # I/O
    overwrite_data: bool
    init_checkpoint: Optional[str]
    init_global_vars: bool
    output_dir: str
    predict_dir: str
    spiece_model_file: str
    model_dir: str
    train_file: str
    predict_file: str
    # data
    max_seq_length: int
    max_query_length: int
    doc_stride: int
    max_answer_length: int
    uncased: bool
    # training
    do_train: bool
    shuffle_buffer: int
    lr_layer_decay_rate: float
    random_seed: int
    # prediction
    do_predict: bool
    predict_batch_size: int
    n_best_size: int
    start_n_top: int
    end_n_top: int
    target_eval_key: str


@bert_flags.args_class(bert_flags.XLNET_RUN_RACE, bert_flags.XLNET_MODEL_FLAGS,
                        bert_flags.XLNET_MACHINE_FLAGS, bert_flags.XLNET_OPTIMIZER_FLAGS)
class XLNetRaceArgs:
    """The flags of XLNet's original ``run_race.py`` (spec 10) with their defaults
    (:data:`bert_tf.flags.XLNET_RUN_RACE`'s: the original's), plus bert_tf's
    ``original_context_mutation`` and ``random_seed`` (the training shuffles).
    The model, machine and optimizer flags come from the shared groups of
    :mod:`bert_tf.flags` (``XLNET_MODEL_FLAGS``...)."""

    # model
    summary_type: str
    use_summ_proj: bool
    # I/O
    overwrite_data: bool
    init_checkpoint: Optional[str]
    output_dir: str
    spiece_model_file: str
    model_dir: str
    data_dir: str
    # training
    do_train: bool
    lr_layer_decay_rate: float
    # evaluation
    do_eval: bool
    eval_split: str
    eval_batch_size: int
    # data
    max_seq_length: int
    max_qa_length: int
    shuffle_buffer: int
    uncased: bool
    high_only: bool
    middle_only: bool
    original_context_mutation: bool
    random_seed: int


@bert_flags.args_class(bert_flags.XLNET_RUN_PRETRAINING, bert_flags.XLNET_MODEL_FLAGS,
                        bert_flags.XLNET_MACHINE_FLAGS, bert_flags.XLNET_OPTIMIZER_FLAGS)
class XLNetPretrainingArgs:
    """The train.py / train_gpu.py flags (spec 7.1); defaults from
    :data:`bert_tf.flags.XLNET_RUN_PRETRAINING`.
    The model, machine and optimizer flags come from the shared groups of
    :mod:`bert_tf.flags` (``XLNET_MODEL_FLAGS``...)."""

    record_info_dir: Optional[str]
    model_dir: Optional[str]
    init_checkpoint: Optional[str]
    num_passes: int
    # data
    seq_len: int
    reuse_len: int
    perm_size: int
    uncased: bool
    bi_data: bool
    mask_alpha: int
    mask_beta: int
    num_predict: Optional[int]
    # model
    mem_len: int
    same_length: bool
    n_token: int
    n_layer: int
    d_model: int
    d_embed: int
    n_head: int
    d_head: int
    d_inner: int
    untie_r: bool
    ff_activation: str
    summary_type: str
    track_mean: bool


@bert_flags.args_class(bert_flags.XLNET_CREATE_PRETRAINING_DATA)
class XLNetDataArgs:
    """The data_utils.py flags (spec 6.1) plus bert_tf's ``num_passes`` and ``num_workers``;
    defaults from :data:`bert_tf.flags.XLNET_CREATE_PRETRAINING_DATA`."""

    sp_path: str
    bsz_per_host: int
    num_core_per_host: int
    seq_len: int
    reuse_len: int
    uncased: bool
    bi_data: bool
    mask_alpha: int
    mask_beta: int
    use_eod: bool
    from_raw_text: bool
    num_predict: int
    input_glob: str
    save_dir: str
    split: str
    pass_id: int
    num_task: int
    task: int
    use_tpu: bool
    num_passes: int
    random_seed: int
    num_workers: int


def read_args(args_class, flag_values):
    """An XLNet task's argument class read from absl ``flag_values`` (XLNet's defaults for the
    flags not given): what the entry points pass to the task's ``run`` when they are given
    XLNet's flags.

    Args:
      args_class: one of the classes above (its ``flag_profile`` is the script's XLNet
        profile, e.g. :data:`bert_tf.flags.XLNET_RUN_CLASSIFIER`).
      flag_values: parsed absl flags.

    Raises:
      FlagError: a BERT-only flag given on the command line, or any other flag of the entry
        point that ``args_class`` does not read (BERT's and ALBERT's ``--use_xla``...;
        :func:`bert_tf.flags.check_no_bert_only_flags`: bert_tf refuses what the XLNet
        script would ignore silently).
    """
    bert_flags.check_no_bert_only_flags(flag_values, args_class.flag_profile, args_class)
    return bert_flags.args_from_flags(args_class, flag_values)
