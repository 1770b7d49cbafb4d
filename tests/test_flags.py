"""The one flag vocabulary: each task's argument dataclass has the same defaults as the flags
its root script defines (bert_tf/flags/vocabulary.py FLAG_SPECS plus the script's original
overrides) and is the one list of them (the entry points define their flags from its fields);
the BERT and XLNet profiles and the one reader from flags to arguments."""
import ast
import dataclasses
import math
import os
import subprocess
import sys
import types

import pytest
from absl import flags as absl_flags

from bert_tf import flags as bert_flags
from bert_tf.errors import FlagError
from bert_tf.flags import FLAG_SPECS
from bert_tf.flags import process as flags_process
from bert_tf.albert.tasks.args import (ALBERT_SQUAD_V1_FLAGS, ALBERT_SQUAD_V2_FLAGS,
                                       AlbertClassifierArgs, AlbertDataArgs,
                                       AlbertPretrainingArgs, AlbertSquadArgs)
from bert_tf.bert.tasks.args import (ClassifierArgs, ExtractFeaturesArgs, PretrainingArgs,
                                     PretrainingDataArgs, SquadArgs)
from bert_tf.xlnet.tasks.args import (XLNetClassifierArgs, XLNetDataArgs,
                                      XLNetExtractFeaturesArgs, XLNetPretrainingArgs,
                                      XLNetRaceArgs, XLNetSquadArgs)

# the original scripts' own defaults where they differ from the vocabulary's (spec 9.1);
# --doc_stride of run_classifier.py / extract_features.py: unset = the original's truncation
# (run_squad's 128 is FLAG_SPECS'; bert_tf sliding windows, issue 13)
WINDOW_DEFAULTS = {"doc_stride": None}
SCRIPT_OVERRIDES = {SquadArgs: {"max_seq_length": 384}, ClassifierArgs: WINDOW_DEFAULTS,
                    ExtractFeaturesArgs: WINDOW_DEFAULTS}


@pytest.mark.parametrize("args_class", [ClassifierArgs, ExtractFeaturesArgs, PretrainingArgs, SquadArgs])
def test_task_defaults_are_the_flag_defaults(args_class):
    overrides = SCRIPT_OVERRIDES.get(args_class, {})
    for field in dataclasses.fields(args_class):
        assert field.name in FLAG_SPECS, f"{args_class.__name__}.{field.name} is not in FLAG_SPECS"
        expected = overrides.get(field.name, FLAG_SPECS[field.name][1])
        assert field.default == expected, (args_class.__name__, field.name)


def test_original_defaults_of_the_vocabulary():
    # spec bert.md 5.1, 6.1, 8.1, 10
    assert FLAG_SPECS["max_seq_length"][1] == 128
    assert FLAG_SPECS["learning_rate"][1] == 5e-5
    assert FLAG_SPECS["dupe_factor"][1] == 10
    assert FLAG_SPECS["layers"][1] == "-1,-2,-3,-4"
    assert FLAG_SPECS["do_lower_case"][1] is True
    assert FLAG_SPECS["num_tpu_cores"][1] == 8


# ---- every argument class, its profile and the one reader (issue 9) --------------------------

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_ARGS_CLASSES = [ClassifierArgs, ExtractFeaturesArgs, PretrainingArgs, SquadArgs,
                    XLNetClassifierArgs, XLNetExtractFeaturesArgs]

# Each class's defaults are FLAG_SPECS' except these, written from the spec: run_squad's
# max_seq_length (bert.md 9.1); XLNet's run_classifier (xlnet.md 8.1: learning_rate 1e-5,
# batch sizes 8 / 128 / 128, output_dir and data_dir "").
ORIGINAL_DIFFERENCES = {
    SquadArgs: {"max_seq_length": 384},
    XLNetClassifierArgs: {"learning_rate": 1e-5, "train_batch_size": 8, "eval_batch_size": 128,
                          "predict_batch_size": 128, "output_dir": "", "data_dir": "",
                          **WINDOW_DEFAULTS},
    ClassifierArgs: WINDOW_DEFAULTS, ExtractFeaturesArgs: WINDOW_DEFAULTS,
    XLNetExtractFeaturesArgs: WINDOW_DEFAULTS,
}
PROFILES = {ClassifierArgs: "BERT run_classifier.py",
            ExtractFeaturesArgs: "BERT extract_features.py",
            PretrainingArgs: "BERT run_pretraining.py", SquadArgs: "BERT run_squad.py",
            XLNetClassifierArgs: "XLNet run_classifier.py",
            XLNetExtractFeaturesArgs: "XLNet extract_features.py"}

# XLNet's run_classifier.py flags and defaults, spec xlnet.md 8.1, as written there.
XLNET_RUN_CLASSIFIER_SPEC = dict(
    model_config_path=None, dropout=0.1, dropatt=0.1, clamp_len=-1, summary_type="last",
    use_summ_proj=True, use_bfloat16=False, init="normal", init_std=0.02, init_range=0.1,
    overwrite_data=False, init_checkpoint=None, output_dir="", spiece_model_file="",
    model_dir="", data_dir="",
    use_tpu=False, num_hosts=1, num_core_per_host=8, tpu_job_name=None, tpu=None, tpu_zone=None,
    gcp_project=None, master=None, iterations=1000,
    do_train=False, train_steps=1000, warmup_steps=0, learning_rate=1e-5, lr_layer_decay_rate=1.0,
    min_lr_ratio=0.0, clip=1.0, max_save=0, save_steps=None, train_batch_size=8,
    weight_decay=0.0, adam_epsilon=1e-8, decay_method="poly",
    do_eval=False, do_predict=False, predict_threshold=0.0, eval_split="dev",
    eval_batch_size=128, predict_batch_size=128, predict_dir=None, eval_all_ckpt=False,
    predict_ckpt=None,
    task_name=None, max_seq_length=128, shuffle_buffer=2048, num_passes=1, uncased=False,
    cls_scope=None, is_regression=False)


@pytest.mark.parametrize("args_class", ALL_ARGS_CLASSES, ids=lambda c: c.__name__)
def test_every_args_class_has_its_profile_defaults(args_class):
    profile = args_class.flag_profile
    assert profile.name == PROFILES[args_class]
    differences = ORIGINAL_DIFFERENCES.get(args_class, {})
    instance = args_class()
    for field in dataclasses.fields(args_class):
        expected = differences.get(field.name, FLAG_SPECS[field.name][1])
        assert field.default == expected and type(field.default) is type(expected), field.name
        assert getattr(instance, field.name) == expected, field.name
        assert profile.default(field.name) == expected, field.name


def test_xlnet_classifier_defaults_are_the_original_scripts():
    # The same flags (field order is not meaningful: the shared groups come first).
    # (plus bert_tf's sliding-window flags, issue 13, unset by default, --export_dir,
    # the raw-text SavedModel of issue 12, --allow_partial_init_checkpoint, issue 27, and
    # --recompute_grad, issue 24, off by default)
    assert sorted(f.name for f in dataclasses.fields(XLNetClassifierArgs)) == sorted(
        [*XLNET_RUN_CLASSIFIER_SPEC, "doc_stride", "window_pooling", "export_dir",
         "allow_partial_init_checkpoint", "recompute_grad"])
    assert XLNetClassifierArgs().recompute_grad is False
    assert XLNetClassifierArgs().doc_stride is None and XLNetClassifierArgs().window_pooling is None
    args = XLNetClassifierArgs()
    assert args.export_dir is None
    for name, expected in XLNET_RUN_CLASSIFIER_SPEC.items():
        assert getattr(args, name) == expected, name


def test_profiles_cover_the_vocabulary_with_the_original_defaults():
    assert set(FLAG_SPECS) == (set(bert_flags.BERT.flags) | set(bert_flags.XLNET.flags)
                               | set(bert_flags.ALBERT.flags))
    assert bert_flags.RUN_SQUAD.default("max_seq_length") == 384           # bert.md 9.1
    assert bert_flags.RUN_CLASSIFIER.default("max_seq_length") == 128      # bert.md 8.1
    assert bert_flags.BERT.default("learning_rate") == 5e-5
    assert bert_flags.XLNET.default("learning_rate") == 1e-5               # xlnet.md 8.1
    assert bert_flags.XLNET.default("eval_batch_size") == 128
    assert bert_flags.XLNET_EXTRACT_FEATURES.default("max_seq_length") == 128
    # XLNet's meaning of --output_dir: the TFRecords; checkpoints go to --model_dir
    assert "--model_dir" in bert_flags.XLNET.help("output_dir")
    assert "checkpoints" in bert_flags.BERT.help("output_dir")
    with pytest.raises(KeyError, match="--model_dir is not a flag of the BERT profile"):
        bert_flags.BERT.default("model_dir")
    with pytest.raises(KeyError, match="not flags of the profile"):
        bert_flags.BERT.for_script("x.py", defaults={"model_dir": "m"})


def test_args_class_takes_no_default_in_the_body():
    with pytest.raises(TypeError, match="give no default in the class body"):
        @bert_flags.args_class(bert_flags.BERT)
        class Bad:  # noqa: F841
            max_seq_length: int = 64
    with pytest.raises(KeyError, match="--model_dir is not a flag of the BERT run_squad.py"):
        @bert_flags.args_class(bert_flags.RUN_SQUAD)
        class Other:  # noqa: F841
            model_dir: str


def _classifier_flag_values(argv):
    """run_classifier.py's two profiles declared on a fresh FlagValues, then parsed."""
    fv = absl_flags.FlagValues()
    bert_flags.define_profiles(
        (bert_flags.RUN_CLASSIFIER, ClassifierArgs.__dataclass_fields__),
        (bert_flags.XLNET_RUN_CLASSIFIER, XLNetClassifierArgs.__dataclass_fields__),
        flag_values=fv)
    fv(["prog"] + argv)
    return fv


def test_shared_flags_are_registered_once_with_bert_defaults_and_both_meanings():
    fv = _classifier_flag_values([])
    assert fv["learning_rate"].default == 5e-5 and fv["train_batch_size"].default == 32
    assert fv["model_dir"].default == "" and fv["num_core_per_host"].default == 8
    assert "XLNet: default 1e-05 unless the flag is given" in fv["learning_rate"].help
    assert "XLNet: default 128 unless the flag is given" in fv["eval_batch_size"].help
    assert "checkpoints go to --model_dir" in fv["output_dir"].help
    assert fv["output_dir"].help.startswith(FLAG_SPECS["output_dir"][2])
    assert "unless" not in fv["task_name"].help


def test_reader_gives_the_command_line_values_and_each_profiles_defaults():
    fv = _classifier_flag_values(["--task_name=MRPC", "--learning_rate=2e-5",
                                  "--max_seq_length=64", "--train_batch_size=4",
                                  "--model_config_path=c.json", "--do_train=true"])
    bert = bert_flags.args_from_flags(ClassifierArgs, fv)
    xlnet = bert_flags.args_from_flags(XLNetClassifierArgs, fv)
    for args in (bert, xlnet):
        assert (args.task_name, args.learning_rate, args.max_seq_length,
                args.train_batch_size, args.do_train) == ("MRPC", 2e-5, 64, 4, True)
    assert (bert.eval_batch_size, bert.predict_batch_size) == (8, 8)          # bert.md 8.1
    assert (xlnet.eval_batch_size, xlnet.predict_batch_size) == (128, 128)    # xlnet.md 8.1
    assert xlnet.model_config_path == "c.json" and xlnet.output_dir == ""
    assert bert.output_dir is None
    # not given: the XLNet default applies; given, even with BERT's default value, it is used
    fv = _classifier_flag_values(["--model_config_path=c.json", "--learning_rate=5e-5"])
    xlnet = bert_flags.args_from_flags(XLNetClassifierArgs, fv)
    assert (xlnet.learning_rate, xlnet.train_batch_size) == (5e-5, 8)
    fv.eval_batch_size = 16  # assigned: set, as on the command line
    assert bert_flags.args_from_flags(XLNetClassifierArgs, fv).eval_batch_size == 16


def _other_value(name, default):
    kind = FLAG_SPECS[name][0]
    if kind == "bool":
        return not default, f"--{name}={'false' if default else 'true'}"
    if kind == "integer":
        return 7, f"--{name}=7"
    if kind == "float":
        return 0.25, f"--{name}=0.25"
    if kind.startswith("enum:"):
        choice = [c for c in kind[5:].split("|") if c != default][0]
        return choice, f"--{name}={choice}"
    return f"v_{name}", f"--{name}=v_{name}"


@pytest.mark.parametrize("args_class", ALL_ARGS_CLASSES, ids=lambda c: c.__name__)
def test_reader_gives_every_field_from_the_command_line(args_class):
    profile = args_class.flag_profile
    fv = absl_flags.FlagValues()
    names = args_class.__dataclass_fields__
    bert_flags.define(*names, profile=profile, flag_values=fv)
    expected, argv = {}, []
    for field in dataclasses.fields(args_class):
        value, arg = _other_value(field.name, field.default)
        expected[field.name] = value
        argv.append(arg)
    fv(["prog"] + argv)
    assert dataclasses.asdict(bert_flags.args_from_flags(args_class, fv)) == expected
    # nothing given: the class's defaults, which are the registered ones
    fv = absl_flags.FlagValues()
    bert_flags.define(*names, profile=profile, flag_values=fv)
    fv(["prog"])
    assert bert_flags.args_from_flags(args_class, fv) == args_class()
    assert all(fv[n].default == getattr(args_class(), n) for n in names)


def test_reader_takes_the_attributes_of_other_objects():
    args = bert_flags.args_from_flags(SquadArgs, types.SimpleNamespace(do_train=True,
                                                                       train_file="t.json"))
    assert (args.do_train, args.train_file, args.max_seq_length) == (True, "t.json", 384)


def test_xlnet_invocation_and_the_bert_flags_it_refuses():
    fv = _classifier_flag_values(["--spiece_model_file=s.model"])
    assert bert_flags.is_xlnet_invocation(fv)
    assert not bert_flags.is_xlnet_invocation(_classifier_flag_values([]))
    assert not bert_flags.is_xlnet_invocation(absl_flags.FlagValues())
    fv = _classifier_flag_values(["--model_config_path=c.json", "--num_train_epochs=2",
                                  "--tpu_name=t"])
    with pytest.raises(FlagError, match=r"--num_train_epochs \(use --train_steps\), "
                                        r"--tpu_name \(use --tpu\)$"):
        bert_flags.check_no_bert_only_flags(fv, bert_flags.XLNET_RUN_CLASSIFIER)
    # extract_features refuses the three model flags and --dtype (BERT's bfloat16 flag)
    bert_flags.check_no_bert_only_flags(fv, bert_flags.XLNET_EXTRACT_FEATURES)
    with pytest.raises(FlagError, match=r"--vocab_file \(use --spiece_model_file\)"):
        bert_flags.check_no_bert_only_flags(types.SimpleNamespace(vocab_file="v.txt"),
                                            bert_flags.XLNET_EXTRACT_FEATURES)
    # the precision flags of the other family are refused, not ignored (fresh-user test,
    # 2026-12-02: --dtype=bfloat16 with XLNet's flags and --use_bfloat16 with BERT's ran float32)
    for profile in (bert_flags.XLNET_RUN_CLASSIFIER, bert_flags.XLNET_RUN_SQUAD,
                    bert_flags.XLNET_EXTRACT_FEATURES):
        with pytest.raises(FlagError, match=r"--dtype \(use --use_bfloat16\)$"):
            bert_flags.check_no_bert_only_flags(types.SimpleNamespace(dtype="bfloat16"), profile)
    with pytest.raises(FlagError, match=r"^BERT \(--bert_config_file\) does not read "
                                        r"--use_bfloat16 \(use --dtype=bfloat16\)$"):
        bert_flags.check_no_xlnet_only_flags(types.SimpleNamespace(use_bfloat16=True),
                                             "BERT (--bert_config_file)")
    bert_flags.check_no_xlnet_only_flags(types.SimpleNamespace(dtype="bfloat16"), "BERT")


# The root scripts serving several families: (script, BERT's class, XLNet's, ALBERT's or None,
# the flags that choose XLNet's mode there).
MODE_SCRIPTS = [
    ("run_classifier.py", ClassifierArgs, XLNetClassifierArgs, AlbertClassifierArgs,
     ("model_config_path", "spiece_model_file")),
    ("run_squad.py", SquadArgs, XLNetSquadArgs, AlbertSquadArgs,
     ("model_config_path", "spiece_model_file")),
    ("run_pretraining.py", PretrainingArgs, XLNetPretrainingArgs, AlbertPretrainingArgs,
     ("record_info_dir",)),
    ("create_pretraining_data.py", PretrainingDataArgs, XLNetDataArgs, AlbertDataArgs,
     ("sp_path",)),
    ("extract_features.py", ExtractFeaturesArgs, XLNetExtractFeaturesArgs, None,
     ("model_config_path", "spiece_model_file")),
]


def _a_value(name):
    """A valid command-line value of flag ``name`` (its kind in FLAG_SPECS)."""
    kind = FLAG_SPECS[name][0]
    if kind.startswith("enum:"):
        return kind[len("enum:"):].split("|")[-1]
    return {"bool": "true", "integer": "1", "float": "0.5"}.get(kind, "x")


def _mode_flag_values(classes, argv):
    fv = absl_flags.FlagValues()
    bert_flags.define_args(*[c for c in classes if c is not None], flag_values=fv)
    fv(["prog"] + argv)
    return fv


@pytest.mark.parametrize("script,bert,xlnet,albert,selectors", MODE_SCRIPTS,
                         ids=[m[0] for m in MODE_SCRIPTS])
def test_bert_mode_refuses_each_flag_only_xlnet_reads(script, bert, xlnet, albert, selectors):
    """Fresh-user round of 2026-12-02: BERT mode ignored XLNet's flags given to a script that
    serves both (``--clamp_len``, ``--summary_type``...; only ``--use_bfloat16`` was refused).
    Each flag XLNet's argument class reads and BERT's does not (worked out here from the two
    classes, the flags choosing XLNet's mode left out) is refused, named; each flag both read
    passes."""
    bert_fields = set(bert_flags.field_names(bert))
    xlnet_only = [n for n in bert_flags.field_names(xlnet)
                  if n not in bert_fields and n not in selectors]
    assert xlnet_only  # every one of these scripts has some
    for name in xlnet_only:
        fv = _mode_flag_values((bert, xlnet, albert), [f"--{name}={_a_value(name)}"])
        with pytest.raises(FlagError, match=rf"^BERT does not read --{name} \("):
            bert_flags.check_no_xlnet_only_flags(fv, "BERT", bert)
    for name in bert_flags.field_names(xlnet):
        if name in bert_fields:
            fv = _mode_flag_values((bert, xlnet, albert), [f"--{name}={_a_value(name)}"])
            bert_flags.check_no_xlnet_only_flags(fv, "BERT", bert)


@pytest.mark.parametrize("script,bert,xlnet,albert,selectors", MODE_SCRIPTS,
                         ids=[m[0] for m in MODE_SCRIPTS])
def test_xlnet_mode_refuses_each_flag_it_does_not_read(script, bert, xlnet, albert, selectors):
    """The reverse: XLNet mode ignored BERT's (and ALBERT's) flags that its profile did not list
    as refused (``--use_xla``, ``--gradient_accumulation_steps``, the fine-tuning recipes...).
    Each flag another family's class reads and XLNet's does not is refused; each XLNet reads
    passes."""
    xlnet_fields = set(bert_flags.field_names(xlnet))
    others = dict.fromkeys(n for cls in (bert, albert) if cls is not None
                           for n in bert_flags.field_names(cls) if n not in xlnet_fields)
    select = f"--{selectors[0]}=sel"
    from bert_tf.xlnet.tasks.args import read_args
    for name in others:
        fv = _mode_flag_values((bert, xlnet, albert), [select, f"--{name}={_a_value(name)}"])
        with pytest.raises(FlagError, match=rf"^BERT(/ALBERT)? flag\(s\) given with XLNet's "
                                            rf"--\S+: --{name} \("):
            read_args(xlnet, fv)
    for name in xlnet_fields:
        fv = _mode_flag_values((bert, xlnet, albert), [select, f"--{name}={_a_value(name)}"])
        read_args(xlnet, fv)


def test_albert_mode_refuses_xlnet_flags_through_the_same_check():
    from bert_tf.albert.tasks.args import read_args
    fv = _mode_flag_values((ClassifierArgs, XLNetClassifierArgs, AlbertClassifierArgs),
                           ["--albert_config_file=c.json", "--clamp_len=3", "--uncased=false",
                            "--group_by_length"])
    with pytest.raises(FlagError) as e:
        read_args(AlbertClassifierArgs, fv)
    assert str(e.value) == (
        "ALBERT's run_classifier (--albert_config_file) does not read --group_by_length (BERT "
        "mode only), --clamp_len (XLNet mode only: --model_config_path/--spiece_model_file), "
        "--uncased (use --do_lower_case)")
    # run_squad.py's ALBERT mode reads --version_2_with_negative and ALBERT's v2 beam sizes
    fv = _mode_flag_values((SquadArgs, XLNetSquadArgs, AlbertSquadArgs),
                           ["--albert_config_file=c.json", "--version_2_with_negative",
                            "--start_n_top=3"])
    assert read_args(AlbertSquadArgs, fv).start_n_top == 3


@pytest.mark.parametrize("argv,line", [
    (["run_classifier.py", "--task_name=MRPC", "--clamp_len=5", "--summary_type=first",
      "--use_bfloat16=true", "--train_steps=3"],
     "BERT (--bert_config_file) does not read --use_bfloat16 (use --dtype=bfloat16), "
     "--clamp_len, --summary_type (XLNet mode only: --model_config_path/--spiece_model_file), "
     "--train_steps (use --num_train_epochs)"),
    (["run_squad.py", "--do_train", "--start_n_top=3", "--random_seed=1"],
     "BERT (--bert_config_file) does not read --random_seed (XLNet mode only: "
     "--model_config_path/--spiece_model_file), --start_n_top (XLNet and ALBERT modes only)"),
    (["extract_features.py", "--clamp_len=3"],
     "BERT (--bert_config_file) does not read --clamp_len (XLNet mode only: "
     "--model_config_path/--spiece_model_file)"),
    # XLNet's precision flag given to extract_features' BERT mode (fresh-user rounds of
    # 2026-12-02 and -03: absl's unknown-flag line, then a hint XLNet mode refused)
    (["extract_features.py", "--use_bfloat16=true"],
     "BERT (--bert_config_file) does not read --use_bfloat16 (use --dtype=bfloat16)"),
    (["extract_features.py", "--spiece_model_file=s.model", "--dtype=bfloat16"],
     "BERT flag(s) given with XLNet's --model_config_path/--spiece_model_file: --dtype (use "
     "--use_bfloat16)"),
    (["run_pretraining.py", "--mem_len=8", "--seq_len=16"],
     "BERT (--bert_config_file) does not read --seq_len (use --max_seq_length), --mem_len "
     "(XLNet mode only: --record_info_dir)"),
    (["create_pretraining_data.py", "--input_glob=a.txt", "--use_eod=false"],
     "BERT's create_pretraining_data (--vocab_file) does not read --use_eod (XLNet mode only: "
     "--sp_path), --input_glob (use --input_file)"),
    (["run_classifier.py", "--model_config_path=c.json", "--task_name=MRPC", "--use_xla",
      "--gradient_accumulation_steps=2"],
     "BERT flag(s) given with XLNet's --model_config_path/--spiece_model_file: --use_xla, "
     "--gradient_accumulation_steps (BERT and ALBERT modes only)"),
    (["run_squad.py", "--spiece_model_file=s.model", "--lr_schedule=slanted_triangular",
      "--dtype=bfloat16"],
     "BERT flag(s) given with XLNet's --model_config_path/--spiece_model_file: --dtype (use "
     "--use_bfloat16), --lr_schedule (BERT mode only)"),
    (["run_pretraining.py", "--record_info_dir=info", "--gradient_accumulation_steps=4"],
     "BERT flag(s) given with XLNet's --record_info_dir: --gradient_accumulation_steps (BERT "
     "and ALBERT modes only)"),
    (["run_classifier.py", "--albert_config_file=c.json", "--clamp_len=3"],
     "ALBERT's run_classifier (--albert_config_file) does not read --clamp_len (XLNet mode "
     "only: --model_config_path/--spiece_model_file)"),
    # a new user's round: both modes' model flags (the hint named the flag itself), and
    # ALBERT's --train_step in XLNet mode (no word of XLNet's --train_steps)
    (["run_classifier.py", "--model_config_path=c.json", "--task_name=MRPC",
      "--albert_config_file=a.json"],
     "BERT/ALBERT flag(s) given with XLNet's --model_config_path/--spiece_model_file: "
     "--albert_config_file (it selects ALBERT mode: give one family's model flags)"),
    (["run_classifier.py", "--model_config_path=c.json", "--task_name=MRPC", "--train_step=3"],
     "BERT/ALBERT flag(s) given with XLNet's --model_config_path/--spiece_model_file: "
     "--train_step (ALBERT mode only: --albert_config_file; did you mean --train_steps?)"),
])
def test_a_flag_the_mode_does_not_read_is_one_line_from_the_root_script(argv, line, tmp_path):
    """The entry points themselves: exit 1, the one line, no traceback, nothing written (the
    output folder is not created)."""
    out = tmp_path / "out"
    output = ("--output_file=" + str(tmp_path / "out.tfrecord")
              if argv[0] in ("create_pretraining_data.py", "extract_features.py")
              else f"--model_dir={out}" if "--record_info_dir=info" in argv
              else f"--output_dir={out}")
    proc = subprocess.run([sys.executable, os.path.join(REPO, argv[0]), *argv[1:], output],
                          capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines()[-1] == f"error: {line}"
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert os.listdir(tmp_path) == []


# Each entry point and the argument classes it defines its flags from (the first class gives a
# shared flag its registered default); ALBERT's SQuAD modules each define a part of
# AlbertSquadArgs' fields.
ENTRY_POINT_ARGS = [
    ("run_classifier.py", (ClassifierArgs, XLNetClassifierArgs, AlbertClassifierArgs)),
    ("run_squad.py", (SquadArgs, XLNetSquadArgs, AlbertSquadArgs)),
    ("run_pretraining.py", (PretrainingArgs, XLNetPretrainingArgs, AlbertPretrainingArgs)),
    ("create_pretraining_data.py", (PretrainingDataArgs, XLNetDataArgs, AlbertDataArgs)),
    ("extract_features.py", (ExtractFeaturesArgs, XLNetExtractFeaturesArgs)),
    ("run_race.py", (XLNetRaceArgs,)),
    ("-m bert_tf.albert.run_classifier", (AlbertClassifierArgs,)),
    ("-m bert_tf.albert.create_pretraining_data", (AlbertDataArgs,)),
    ("-m bert_tf.albert.run_pretraining", (AlbertPretrainingArgs,)),
    ("-m bert_tf.albert.run_squad_v1", ALBERT_SQUAD_V1_FLAGS),
    ("-m bert_tf.albert.run_squad_v2", ALBERT_SQUAD_V2_FLAGS),
]


def _entry_point_file(script):
    if script.startswith("-m "):
        return os.path.join(REPO, *script.split()[1].split(".")) + ".py"
    return os.path.join(REPO, script)


@pytest.mark.parametrize("script,defined", ENTRY_POINT_ARGS, ids=[s for s, _ in ENTRY_POINT_ARGS])
def test_entry_points_define_exactly_their_argument_classes_fields(script, defined):
    """issue 23 item 4: a task's argument class is the one list of its flags; the entry point
    defines them from its fields (no tuple of names beside it), and nothing else."""
    names = ([n for cls in defined for n in bert_flags.field_names(cls)]
             if isinstance(defined[0], type) else list(defined))
    with open(_entry_point_file(script), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Name)
                and n.id in ("BERT_FLAGS", "ARGS_FLAGS")]
    if isinstance(defined[0], type):
        call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call)
                    and getattr(n.func, "attr", "") == "define_args")
        assert [a.id for a in call.args] == [cls.__name__ for cls in defined]
    target = script.split() if script.startswith("-m") else [os.path.join(REPO, script)]
    proc = subprocess.run([sys.executable, *target, "--helpfull"], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    section = proc.stdout.split(f"{_entry_point_file(script)}:", 1)[1].split("\n\n", 1)[0]
    listed = [line.split(":", 1)[0].strip().removeprefix("--").removeprefix("[no]")
              for line in section.splitlines() if line.startswith("  --")]
    assert sorted(listed) == sorted(set(names))


def test_define_args_defines_each_class_with_its_profile():
    fv = absl_flags.FlagValues()
    bert_flags.define_args(ClassifierArgs, XLNetClassifierArgs, flag_values=fv)
    assert set(fv) == set(ClassifierArgs.__dataclass_fields__) | set(
        XLNetClassifierArgs.__dataclass_fields__)
    assert fv["learning_rate"].default == 5e-5  # the first class's (BERT's) default
    assert "XLNet: default 1e-05 unless the flag is given" in fv["learning_rate"].help
    fv(["prog"])
    assert bert_flags.args_from_flags(XLNetClassifierArgs, fv) == XLNetClassifierArgs()
    assert bert_flags.args_from_flags(ClassifierArgs, fv) == ClassifierArgs()


def test_argument_modules_need_no_tensorflow():
    code = ("import sys\n"
            "import bert_tf.bert.tasks.args, bert_tf.xlnet.tasks.args, bert_tf.albert.tasks.args\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0 and proc.stdout == "[]\n", proc.stderr[-2000:]


@pytest.mark.parametrize("script,defaults", [
    ("run_classifier.py", {"learning_rate": "5e-05", "train_batch_size": "32",
                           "eval_batch_size": "8", "max_seq_length": "128", "model_dir": "",
                           "train_steps": "1000", "num_core_per_host": "8"}),
    ("extract_features.py", {"layers": "-1,-2,-3,-4", "batch_size": "32", "clamp_len": "-1",
                             "spiece_model_file": ""}),
    ("run_squad.py", {"max_seq_length": "384", "do_train": "false", "doc_stride": "128",
                      "predict_dir": "", "start_n_top": "5", "lr_layer_decay_rate": "0.75"}),
])
def test_helpfull_of_a_two_profile_script_lists_each_flag_once(script, defaults):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "BERT_TF_QUIET_TF_CPP")}
    proc = subprocess.run([sys.executable, os.path.join(REPO, script), "--helpfull"],
                          capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    text = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]  # issue 15: absl exits 1 after help
    assert "InitializeLog" not in proc.stderr  # TF's import banner is muted
    section = text.split(f"{script}:", 1)[1].split("\n\n", 1)[0]
    listed = [line.split(":", 1)[0].strip().removeprefix("--").removeprefix("[no]")
              for line in section.splitlines() if line.startswith("  --")]
    assert len(listed) == len(set(listed)) and "model_config_path" in listed, listed
    for flag, default in defaults.items():
        block = section.split(f"{flag}:", 1)[1].split("\n  --", 1)[0]
        assert f"(default: '{default}')" in block, (flag, block)
    if script == "run_classifier.py":
        block = section.split("learning_rate:", 1)[1].split("\n  --", 1)[0]
        assert "XLNet: default 1e-05 unless the flag is given" in " ".join(block.split())


@pytest.mark.parametrize("argv,asks", [
    (["p", "--help"], True), (["p", "-helpshort"], True), (["p", "--helpfull"], True),
    (["p", "-?"], True), (["p", "--help=true"], True), (["p", "--help=false"], False),
    (["p", "--do_train", "--", "--help"], False), (["p", "--helper=1"], False)])
def test_asks_for_help(argv, asks):
    assert bert_flags.asks_for_help(argv) is asks


@pytest.mark.parametrize("flag", ["--help", "--helpshort"])
def test_help_exits_0(flag, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["run_something.py", flag])
    with pytest.raises(SystemExit) as e:
        bert_flags.run_main(lambda argv: pytest.fail("main ran"))
    assert e.value.code == 0
    assert "--helpfull" in capsys.readouterr().out  # absl's usage was printed


@pytest.mark.slow  # two TensorFlow imports (~10 s each on a shared machine)
def test_tf_cpp_log_is_quiet_unless_the_user_sets_its_level(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "BERT_TF_QUIET_TF_CPP")}
    env["PYTHONPATH"] = REPO
    code = ("import bert_tf, os, tensorflow as tf; tf.constant(1.0) + 1; "
            "print(os.environ['TF_CPP_MIN_LOG_LEVEL'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path), env=env)
    assert proc.returncode == 0 and proc.stdout == "3\n"
    assert proc.stderr == ""  # no banner, no cuInit line
    env["TF_CPP_MIN_LOG_LEVEL"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path), env=env)
    assert proc.stdout == "1\n"  # the user's level wins


@pytest.mark.slow  # two TensorFlow imports (~10 s each on a shared machine)
def test_onednn_kernels_are_on_unless_the_user_turns_them_off(tmp_path):
    # issue 25: TensorFlow turns oneDNN on by itself only on AVX-512 VNNI / AMX CPUs; on an
    # AVX2 CPU IsMklEnabled() was False here before bert_tf set the variable.
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["PYTHONPATH"] = REPO
    code = ("import bert_tf, os; from tensorflow.python.util import _pywrap_util_port as p; "
            "print(os.environ['TF_ENABLE_ONEDNN_OPTS'], p.IsMklEnabled())")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path), env=env)
    assert proc.returncode == 0 and proc.stdout == "1 True\n", proc.stderr[-2000:]
    env["TF_ENABLE_ONEDNN_OPTS"] = "0"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=str(tmp_path), env=env)
    assert proc.stdout == "0 False\n"  # the user's choice wins


def test_stray_positional_argument_is_one_error_line(monkeypatch, capsys):
    # issue 15 item 10: "--output_dir /tmp/x" left /tmp/x as an ignored argument.
    monkeypatch.setattr(sys, "argv", ["run_something.py", "/tmp/x", "more"])
    with pytest.raises(SystemExit) as e:
        bert_flags.run_main(lambda argv: pytest.fail("main ran"))
    assert e.value.code == 1
    assert capsys.readouterr().err == ("error: unexpected argument '/tmp/x' (and 1 more): the "
                                       "scripts take flags only, as --name=value\n")


def test_check_flags_not_given_names_each_given_flag_with_its_replacement():
    from types import SimpleNamespace

    from bert_tf.errors import FlagError
    from bert_tf.flags import check_flags_not_given
    hints = {"a": "--x", "b": "--y", "c": "--z"}
    check_flags_not_given(SimpleNamespace(a=None, b=None), hints, "M")  # none given: no error
    with pytest.raises(FlagError) as e:
        check_flags_not_given(SimpleNamespace(a=None, b=0, c="v"), hints, "M")
    assert str(e.value) == "M does not read --b (use --y), --c (use --z)"


def test_empty_output_folders_a_failed_run_created_are_removed(tmp_path):
    """Fresh-user finding: an early error left empty --output_dir folders behind. Only the
    folders the run created (and their new parents) go, and only when empty."""
    from absl import flags as absl_flags

    from bert_tf.flags import absent_output_folders, remove_empty_new_folders
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_string("output_dir", None, "", flag_values=fv)
    absl_flags.DEFINE_string("model_dir", None, "", flag_values=fv)
    absl_flags.DEFINE_string("predict_dir", None, "", flag_values=fv)
    (tmp_path / "old").mkdir()
    fv(["prog", f"--output_dir={tmp_path / 'new' / 'deep' / 'out'}",
        f"--model_dir={tmp_path / 'old'}", f"--predict_dir={tmp_path / 'kept'}"])
    absent = absent_output_folders(fv)
    assert absent == [str(tmp_path / "new" / "deep" / "out"), str(tmp_path / "new" / "deep"),
                      str(tmp_path / "kept"), str(tmp_path / "new")]
    (tmp_path / "new" / "deep" / "out").mkdir(parents=True)
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "result.txt").write_text("x")
    remove_empty_new_folders(absent)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "old"]


# `import tensorflow` (and its submodules) fails in the child: --help must not need it.
_NO_TF = ("import sys, runpy\n"
          "class NoTF:\n"
          "    def find_spec(self, name, path=None, target=None):\n"
          "        if name.split('.')[0] in ('tensorflow', 'keras', 'tf_keras'):\n"
          "            raise ImportError('tensorflow blocked by the test')\n"
          "sys.meta_path.insert(0, NoTF())\n"
          "sys.argv = sys.argv[1:]\n"
          "if sys.argv[0] == '-m':\n"
          "    sys.argv = sys.argv[1:]\n"
          "    runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)\n"
          "else:\n"
          "    runpy.run_path(sys.argv[0], run_name='__main__')\n")


@pytest.mark.parametrize("script,flag,names", [
    ("run_classifier.py", "--help", ["--task_name", "--model_config_path", "--albert_config_file"]),
    ("extract_features.py", "--helpshort", ["--layers", "--spiece_model_file", "--pooling"]),
    ("run_squad.py", "--helpfull", ["--doc_stride", "--start_n_top", "--tpu_name"]),
    ("run_pretraining.py", "--help", ["--max_predictions_per_seq", "--record_info_dir"]),
    ("create_pretraining_data.py", "--help", ["--dupe_factor", "--sp_path", "--ngram"]),
    ("run_race.py", "--help", ["--max_qa_length", "--high_only"]),
    ("-m bert_tf.albert.run_classifier", "--help", ["--spm_model_file", "--train_step"]),
    ("-m bert_tf.albert.create_pretraining_data", "--help", ["--favor_shorter_ngram"]),
    ("-m bert_tf.albert.run_pretraining", "--help", ["--poly_power", "--init_from_group0"]),
])
def test_help_answers_without_tensorflow(script, flag, names):
    """issue 15 item 6: help took 7-12 s because the scripts imported TensorFlow before
    parsing flags; with TensorFlow's import blocked it still prints the flags and exits 0."""
    target = script.split() if script.startswith("-m") else [os.path.join(REPO, script)]
    proc = subprocess.run([sys.executable, "-c", _NO_TF, *target, flag], capture_output=True,
                          text=True, timeout=120, cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in names:  # absl lists "  --name: help" ("--[no]name" for a bool)
        flag_name = name.removeprefix("--")
        assert f"--{flag_name}:" in proc.stdout or f"--[no]{flag_name}:" in proc.stdout, name


@pytest.mark.parametrize("argv,names", [
    (["--max_seq_length=abc"], ["max_seq_length", "abc"]),
    (["--max_seq_lenght=8"], ["max_seq_lenght"]),
])
def test_bad_flag_is_one_error_line(argv, names, capsys):
    """absl printed 'FATAL Flags parsing error: ...' and a second line; now one error: line."""
    fv = absl_flags.FlagValues()
    absl_flags.DEFINE_integer("max_seq_length", 128, "", flag_values=fv)
    old = flags_process.FLAGS
    flags_process.FLAGS = fv
    try:
        with pytest.raises(SystemExit) as e:
            bert_flags.parse_flags(["prog"] + argv)
    finally:
        flags_process.FLAGS = old
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.startswith("error: ") and err.count("\n") == 1
    assert err.endswith("(--helpfull lists the flags)\n")
    for name in names:
        assert name in err


@pytest.mark.parametrize("script,arg,line", [
    ("run_classifier.py", "--use_bfloat16=maybe",
     "--use_bfloat16=maybe: not a boolean: write --use_bfloat16=true or --use_bfloat16=false"),
    ("run_squad.py", "--do_train=maybe",
     "--do_train=maybe: not a boolean: write --do_train=true or --do_train=false"),
    ("run_classifier.py", "--dtype=bf16",
     "--dtype=bf16: must be one of float32, float16, bfloat16"),
    ("extract_features.py", "--max_seq_length=abc", "--max_seq_length=abc: not an integer"),
    ("run_pretraining.py", "--learning_rate=x", "--learning_rate=x: not a number"),
    ("run_race.py", "--max_seq_length=12.5", "--max_seq_length=12.5: not an integer"),
    ("create_pretraining_data.py", "--nodo_lower_case=1",
     "--nodo_lower_case=1: --nodo_lower_case takes no value (write --do_lower_case=false or "
     "--nodo_lower_case)"),
])
def test_bad_flag_value_of_a_root_script_is_one_line_naming_the_flag(script, arg, line,
                                                                      tmp_path):
    """Fresh-user round of 2026-12-02: a bad boolean printed absl's tuple (``flag
    --use_bfloat16=maybe: ('Non-boolean argument to boolean flag', 'maybe')``), a bad int
    ``int()``'s message, and ``--noflag=1`` a ValueError traceback. Now one line: the flag, the
    value and what it takes; exit 1, nothing written."""
    proc = subprocess.run([sys.executable, os.path.join(REPO, script), arg,
                           f"--output_dir={tmp_path / 'out'}"],
                          capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1
    assert proc.stderr == f"error: {line} (--helpfull lists the flags)\n"
    assert proc.stdout == "" and os.listdir(tmp_path) == []


@pytest.mark.parametrize("skip_teardown", [False, True])
def test_unwritable_stdout_is_one_error_line(skip_teardown):
    # Found with `extract_features.py ... > /dev/full`: the final print was a traceback (and
    # with the teardown skipped a failed flush would have been exit 0).
    code = ("import sys; sys.argv = ['x.py']; from bert_tf import flags; "
            "flags.run_main(lambda argv: print('wrote 3 lines to out.jsonl'), "
            f"skip_teardown={skip_teardown})")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 1
    assert proc.stderr == ("error: cannot write to standard output "
                           "(No space left on device)\n")


@pytest.mark.parametrize("skip, teardown", [("lambda: True", False), ("lambda: False", True),
                                            ("lambda: 1 / 0", True), ("True", False)])
def test_skip_teardown_may_be_decided_after_main(skip, teardown):
    # issue 25: run_classifier.py / run_squad.py skip the teardown only for runs that do not
    # train (skip_teardown=lambda: not FLAGS.do_train, asked once the flags are parsed); a
    # callable that fails keeps the normal teardown. The atexit handler runs only with it.
    code = ("import atexit, sys; sys.argv = ['x.py']; from bert_tf import flags; "
            "atexit.register(lambda: print('teardown', file=sys.stderr)); "
            f"flags.run_main(lambda argv: print('done'), skip_teardown={skip})")
    proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": REPO})
    assert proc.returncode == 0 and proc.stdout == "done\n"
    assert ("teardown" in proc.stderr) == teardown


@pytest.mark.parametrize("arg", ["--learning_rate=nan", "--learning_rate=inf",
                                 "--warmup_proportion=nan", "--num_train_epochs=-inf",
                                 "--weight_decay=nan", "--adam_epsilon=inf"])
def test_a_non_finite_float_flag_is_refused_naming_it(arg):
    fv = _classifier_flag_values([arg])
    for args_class in (ClassifierArgs, XLNetClassifierArgs):
        if arg[2:].split("=")[0] not in args_class.__dataclass_fields__:
            continue
        with pytest.raises(FlagError, match="^" + arg.replace("+", r"\+") + ": not a finite"):
            bert_flags.args_from_flags(args_class, fv)


def test_a_negative_learning_rate_is_refused_in_every_family():
    # fresh round of issue 27: --learning_rate=-1 trained up the loss with exit 0
    fv = _classifier_flag_values(["--learning_rate=-1"])
    for args_class in (ClassifierArgs, XLNetClassifierArgs):
        with pytest.raises(FlagError, match=r"^--learning_rate=-1\.0: must not be negative$"):
            bert_flags.args_from_flags(args_class, fv)
    from bert_tf.albert.tasks.args import AlbertClassifierArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_args(AlbertClassifierArgs, flag_values=fv)
    fv(["prog", "--learning_rate=-1"])
    with pytest.raises(FlagError, match="must not be negative"):
        bert_flags.args_from_flags(AlbertClassifierArgs, fv)


def test_a_learning_rate_far_above_any_usable_one_is_warned(caplog):
    """Fresh round 3 (r3_pt_learning_rate_1e30): --learning_rate=1e30 trained weights of 3e30,
    exit 0, no word (the original accepts it too: a warning, not an error)."""
    import logging
    for value, warned in (("1e30", True), ("2", True), ("1", False), ("5e-5", False)):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            bert_flags.args_from_flags(ClassifierArgs,
                                       _classifier_flag_values([f"--learning_rate={value}"]))
        assert ("is far above any usable rate" in caplog.text) == warned, value
        if value == "1e30":
            assert ("--learning_rate=1e+30 is far above any usable rate (the released models "
                    "train at 1e-5 .. 2e-3): the weights will blow up") in caplog.text


def test_the_poly_power_flag_and_a_nan_threshold_default():
    from bert_tf.albert.tasks.args import AlbertPretrainingArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_args(AlbertPretrainingArgs, flag_values=fv)
    fv(["prog", "--poly_power=nan"])
    with pytest.raises(FlagError, match="^--poly_power=nan: not a finite"):
        bert_flags.args_from_flags(AlbertPretrainingArgs, fv)
    # --threshold_to_export's default is NaN ("no threshold", the original's): given, it is kept.
    from bert_tf.albert.tasks.args import AlbertClassifierArgs
    fv = absl_flags.FlagValues()
    bert_flags.define_args(AlbertClassifierArgs, flag_values=fv)
    fv(["prog", "--threshold_to_export=nan"])
    assert math.isnan(bert_flags.args_from_flags(AlbertClassifierArgs, fv).threshold_to_export)


def test_out_of_memory_outside_training_is_one_line(tmp_path):
    """Issue 27 (cfg_vocab_huge): a config whose weights cannot be allocated ended in a
    ResourceExhaustedError traceback at model build. One line names the config flag and its
    sizes; exit 1; the output folder the run would have created is not left behind."""
    import json
    config = {"vocab_size": 10 ** 12, "hidden_size": 8, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16,
              "type_vocab_size": 2}
    (tmp_path / "bert_config.json").write_text(json.dumps(config))
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                                   "the", "cat"]) + "\n")
    (tmp_path / "data").mkdir()
    header = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
    (tmp_path / "data" / "train.tsv").write_text(header + "1\t1\t2\tthe cat\tthe cat\n" * 4)
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "run_classifier.py"), "--task_name=MRPC",
         "--do_train=true", f"--data_dir={tmp_path / 'data'}", f"--output_dir={out}",
         f"--vocab_file={tmp_path / 'vocab.txt'}",
         f"--bert_config_file={tmp_path / 'bert_config.json'}", "--max_seq_length=8",
         "--train_batch_size=2", "--num_train_epochs=1"],
        capture_output=True, text=True, timeout=300, cwd=str(tmp_path),
        env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("error: out of memory (ResourceExhaustedError: ")
    assert f"--bert_config_file={tmp_path / 'bert_config.json'} (vocab_size=1000000000000, " \
           "hidden_size=8, intermediate_size=16, num_hidden_layers=1, " \
           "max_position_embeddings=16)" in last
    assert "Traceback" not in proc.stderr
    assert not out.exists()


def test_only_allocation_failures_count_as_out_of_memory():
    class ResourceExhaustedError(Exception):  # TF's, told by name
        pass
    assert flags_process.is_out_of_memory(MemoryError())
    assert flags_process.is_out_of_memory(ResourceExhaustedError("OOM when allocating"))
    assert not flags_process.is_out_of_memory(ValueError("x"))


def test_tune_malloc_sets_glibc_thresholds_unless_the_user_set_one(monkeypatch):
    # issue 25: freed batch buffers stay for the next batch (fewer page faults); a user's
    # MALLOC_*_ variable wins and nothing is changed.
    import platform
    for name in flags_process.MALLOC_ENV:
        monkeypatch.delenv(name, raising=False)
    expected = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"
    assert flags_process.tune_malloc() is expected
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert flags_process.tune_malloc() is False


def test_run_main_tunes_malloc_first(monkeypatch):
    calls = []
    monkeypatch.setattr(flags_process, "tune_malloc", lambda: calls.append("tune"))
    monkeypatch.setattr(sys, "argv", ["run_something.py"])
    with pytest.raises(SystemExit) as e:
        bert_flags.run_main(lambda argv: calls.append("main"))
    assert e.value.code in (None, 0) and calls == ["tune", "main"]
