"""Argument classes and the readers of parsed flags.

A task's argument class is an :func:`args_class` dataclass whose fields are flags of a profile
(:mod:`bert_tf.flags.profiles`): names and types only, the defaults come from the profile. It
is the one list of the task's flags: its entry point defines them from its fields
(:func:`define_args`) and :func:`args_from_flags` reads them back::

    from bert_tf import flags as bert_flags

    @bert_flags.args_class(bert_flags.RUN_SQUAD)
    class SquadArgs:
        train_file: Optional[str]
        max_seq_length: int              # 384

    bert_flags.define_args(SquadArgs)
    args = bert_flags.args_from_flags(SquadArgs, bert_flags.FLAGS)

Scripts serving several families (``run_classifier.py``, ``extract_features.py``) define each
family's class (:func:`define_args` with several classes); :func:`is_xlnet_invocation` tells
which path a command line takes, :func:`flag_given` whether a flag was given, and the
``check_*`` functions refuse the flags a mode does not read.
"""

import dataclasses
import difflib
import math
from typing import Dict, Mapping, Optional, Sequence, Tuple

from absl import flags, logging

from bert_tf.errors import FlagError
from bert_tf.flags.profiles import XLNET, XLNET_SELECTED_BY, define_profiles, flag_readers
from bert_tf.flags.vocabulary import FLAG_SPECS, Profile

FLAGS = flags.FLAGS

_KIND_TYPES = {"string": str, "bool": bool, "integer": int, "float": float}

# Flag groups that several XLNet tasks' argument classes share (``args_class(profile, *groups)``).
XLNET_MODEL_FLAGS = ("model_config_path", "dropout", "dropatt", "clamp_len", "use_bfloat16",
                     "init", "init_std", "init_range", "recompute_grad")
# (XLNET_MACHINE_FLAGS, the third group, is defined with the profiles that list it.)
# The TPU flags of the original BERT scripts, and bert_tf's own training flags, shared by the
# BERT and ALBERT argument classes (groups of :func:`args_class`).
BERT_TPU_FLAGS = ("use_tpu", "tpu_name", "tpu_zone", "gcp_project", "master", "num_tpu_cores")
BERT_TF_TRAINING_FLAGS = ("use_xla", "gradient_accumulation_steps", "dtype",
                          "allow_partial_init_checkpoint", "recompute_grad")
# (bert_tf, issue 26) the fine-tuning recipes of run_classifier.py / run_squad.py
BERT_TF_RECIPE_FLAGS = ("seed", "deterministic", "num_restarts", "select_metric",
                        "lr_schedule", "slanted_cut_frac", "slanted_ratio",
                        "lr_layer_decay_rate", "unfreeze_schedule", "freeze_encoder",
                        "feature_layers", "feature_combine")
# run_squad.py: without --lr_layer_decay_rate, which XLNet's run_squad.py defines there with its
# own default (0.75) and help
BERT_TF_SQUAD_RECIPE_FLAGS = tuple(n for n in BERT_TF_RECIPE_FLAGS if n != "lr_layer_decay_rate")
XLNET_OPTIMIZER_FLAGS = ("train_batch_size", "train_steps", "warmup_steps", "save_steps",
                         "max_save", "learning_rate", "min_lr_ratio", "clip", "weight_decay",
                         "adam_epsilon", "decay_method", "allow_partial_init_checkpoint")


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
    once, in :mod:`bert_tf.flags.vocabulary` / :mod:`bert_tf.flags.profiles`::

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
                                f"it comes from the {profile.name} profile "
                                f"(bert_tf/flags/profiles.py)")
            setattr(cls, name, profile.default(name))
        cls = dataclasses.dataclass(cls)
        cls.flag_profile = profile
        return cls

    return wrap


def field_names(args_class) -> Tuple[str, ...]:
    """The field names of an argument class (:func:`args_class`), in order: the flags it reads
    and its entry point defines (:func:`define_args`)."""
    return tuple(field.name for field in dataclasses.fields(args_class))


def define_args(*args_classes, flag_values=FLAGS) -> None:
    """Declares an entry point's flags from its argument classes' fields: the one list of a
    task's flags is its class (no tuple of names beside it).

    Each class's fields are defined with its own profile (``flag_profile``, set by
    :func:`args_class`), the classes in the order given, as the parts of
    :func:`bert_tf.flags.profiles.define_profiles`: a flag several classes read is defined
    once, with the first class's default and help, the others' defaults and meanings added to
    its help. An entry point imports its TensorFlow-free argument modules
    (``bert_tf/<family>/tasks/args.py``) at module level, so ``--help`` answers without
    TensorFlow::

        from bert_tf.bert.tasks.args import SquadArgs
        from bert_tf.xlnet.tasks.args import XLNetSquadArgs

        bert_flags.define_args(SquadArgs, XLNetSquadArgs)   # BERT's defaults registered

    Args:
      *args_classes: argument dataclasses made by :func:`args_class`.
      flag_values: where to declare them (absl's global ``FLAGS``; tests pass their own).

    Raises:
      KeyError: a field is not a flag of its class's profile.
    """
    define_profiles(*((cls.flag_profile, field_names(cls)) for cls in args_classes),
                    flag_values=flag_values)


def flag_is_set(flag_values, name: str) -> bool:
    """Whether flag ``name`` of absl ``flag_values`` (defined there) has a value of this run:
    given on the command line, or assigned after parsing."""
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
            if name in flag_values and flag_is_set(flag_values, name):
                values[name] = flag_values[name].value
                check_finite_flag(name, values[name], field.default)
        elif hasattr(flag_values, name):
            values[name] = getattr(flag_values, name)
    return args_class(**values)


def check_finite_flag(name: str, value, default=None) -> None:
    """Refuses a NaN or infinite value of float flag ``name`` (bert_tf, beyond the original:
    ``--learning_rate=nan`` trained NaN weights). A value equal to a NaN default passes
    (``--threshold_to_export``'s NaN means "no threshold", the original's).

    A ``--learning_rate`` above :data:`MAX_USUAL_LEARNING_RATE` is logged as a warning
    (``1e30`` trained a step to weights of 3e30, exit 0, no word).

    Raises:
      FlagError: ``--<name>=<value>: not a finite number``; ``--learning_rate`` below 0
        (trained silently up the loss, every family).
    """
    if FLAG_SPECS.get(name, ("",))[0] != "float" or not isinstance(value, float):
        return
    if name == "learning_rate" and value < 0:  # every family's optimizer would climb the loss
        raise FlagError(f"--learning_rate={value}: must not be negative")
    if name == "learning_rate" and math.isfinite(value) and value > MAX_USUAL_LEARNING_RATE:
        logging.warning("--learning_rate=%g is far above any usable rate (the released models "
                        "train at 1e-5 .. 2e-3): the weights will blow up", value)
    if math.isfinite(value) or (math.isnan(value) and isinstance(default, float)
                                and math.isnan(default)):
        return
    raise FlagError(f"--{name}={value}: not a finite number")


# Above this --learning_rate a warning is logged (bert_tf; the original accepts any rate).
MAX_USUAL_LEARNING_RATE = 1.0


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


def check_flags_not_given(flag_values, hints: Mapping[str, str], mode: str,
                          args_class=None, read_elsewhere: Sequence[str] = ()) -> None:
    """Refuses flags that another family's script would read but this mode ignores (bert_tf:
    ignoring them silently would run something other than what the command line says).

    Args:
      flag_values: absl ``FlagValues`` (or any object, :func:`flag_given`).
      hints: flag -> what to use instead (e.g. ``{"num_train_epochs": "--train_step"}``).
      mode: how the mode was chosen, for the message (``"ALBERT (--albert_config_file)"``).
      args_class: the mode's argument class; with it, every other flag of the entry point
        given on the command line that the class does not read is refused too
        (:func:`given_flags_not_read`), each with its counterpart in this mode or the modes
        that read it (:func:`refusal_hint`).
      read_elsewhere: flags the mode reads outside ``args_class`` (the entry point's own).

    Raises:
      FlagError: a flag of ``hints`` or (with ``args_class``) another unread flag is given;
        ``<mode> does not read --a (use --x), --b, --c (XLNet mode only: ...)``: names them
        all (``hints``' first, in their order), flags with the same hint together.
    """
    refused = _refused_flags(flag_values, hints, args_class, read_elsewhere)
    if refused:
        raise FlagError(f"{mode} does not read {refused_list(refused)}")


def _refused_flags(flag_values, hints, args_class, read_elsewhere) -> Dict[str, str]:
    """Given flag -> its hint (:func:`refusal_hint`): ``hints``' flags that are given, then
    with ``args_class`` the other given flags it does not read."""
    refused = {n: f"use {hints[n]}" for n in hints if flag_given(flag_values, n)}
    if args_class is not None:
        for name in given_flags_not_read(flag_values, args_class, read_elsewhere):
            if name not in refused:
                refused[name] = refusal_hint(flag_values, name, args_class)
    return refused


def refused_list(refused: Mapping[str, str]) -> str:
    """``--a (hint), --b, --c (other hint)``: the flags of ``refused`` (flag -> hint) in its
    order, those with the same hint together, the hint once."""
    groups: Dict[str, list] = {}
    for name, hint in refused.items():
        groups.setdefault(hint, []).append(f"--{name}")
    return ", ".join(f"{', '.join(names)} ({hint})" for hint, names in groups.items())


def given_flags_not_read(flag_values, args_class, read_elsewhere: Sequence[str] = ()
                         ) -> Tuple[str, ...]:
    """The flags of the entry point (defined by :func:`define_args`) given on the command line
    that the mode reading ``args_class`` ignores: not a field of it nor in
    ``read_elsewhere``, i.e. defined for another family's mode only (``--clamp_len`` in
    ``run_classifier.py``'s BERT mode: XLNet's; ``--use_xla`` in its XLNet mode: BERT's and
    ALBERT's). A string flag given empty (``--spiece_model_file=``) counts as not given, as
    everywhere in bert_tf. Empty for an object that is not absl ``FlagValues``.

    Returns:
      the flag names, in the order the entry point defined them.
    """
    if not isinstance(flag_values, flags.FlagValues):
        return ()
    read = set(field_names(args_class)) | set(read_elsewhere)
    names = []
    for name in dict.fromkeys(flag_values):  # long and short names, each once
        if (name in FLAG_SPECS and name not in read and name not in names
                and flag_readers(flag_values, name) and flag_given(flag_values, name)
                and flag_values[name].value != ""):
            names.append(name)
    return tuple(names)


# How each family's mode is chosen, for the hints (XLNet's per script: XLNet's train.py and
# data_utils.py are chosen by their own flags).
_XLNET_SELECTED_BY_SCRIPT = {"create_pretraining_data.py": "--sp_path",
                             "run_pretraining.py": "--record_info_dir"}


def xlnet_selected_by(script: Optional[str]) -> str:
    """The flags that choose XLNet's mode in root script ``script``:
    ``--model_config_path/--spiece_model_file`` (:data:`XLNET_SELECTED_BY`), ``--sp_path``
    (``create_pretraining_data.py``), ``--record_info_dir`` (``run_pretraining.py``)."""
    return _XLNET_SELECTED_BY_SCRIPT.get(script or "",
                                         "/".join(f"--{n}" for n in XLNET_SELECTED_BY))


def refusal_hint(flag_values, name: str, args_class) -> str:
    """What to write instead of flag ``name``, which the mode reading ``args_class`` ignores:
    ``use --<flag>`` where this mode has the counterpart (another family's profile lists it
    as refused for ``--<name>``: XLNet's ``--uncased`` -> ``use --do_lower_case``), else which
    mode reads it: ``XLNet mode only: --model_config_path/--spiece_model_file``, ``ALBERT mode
    only: --albert_config_file``, ``BERT mode only``, ``XLNet and ALBERT modes only``."""
    readers = [p for p in flag_readers(flag_values, name)
               if p.family != args_class.flag_profile.family]
    read = field_names(args_class)
    for profile in readers:
        for counterpart, replacement in profile.refused.items():
            if replacement == f"--{name}" and counterpart in read:
                return f"use --{counterpart}"
    families = list(dict.fromkeys(p.family for p in readers))
    if len(families) != 1:
        hint = f"{' and '.join(families)} modes only"
    elif families[0] == "XLNet":
        hint = f"XLNet mode only: {xlnet_selected_by(readers[0].script)}"
    elif families[0] == "ALBERT" and readers[0].script != "create_pretraining_data.py":
        if name == "albert_config_file":  # both modes' model flags given
            return "it selects ALBERT mode: give one family's model flags"
        hint = "ALBERT mode only: --albert_config_file"
    else:
        hint = f"{families[0]} mode only"
    # a flag of this mode one letter away (XLNet's --train_steps for ALBERT's --train_step)
    close = difflib.get_close_matches(name, sorted(read), n=1, cutoff=0.9)
    return f"{hint}; did you mean --{close[0]}?" if close else hint


# XLNet flags with a BERT / ALBERT counterpart: given without XLNet's model flags they would be
# ignored silently (the fresh-user test of 2026-12-02: --use_bfloat16 ran float32 in BERT mode)
XLNET_ONLY_HINTS = {"use_bfloat16": "--dtype=bfloat16"}


def check_no_xlnet_only_flags(flag_values, mode: str, args_class=None) -> None:
    """Refuses :data:`XLNET_ONLY_HINTS` flags in a BERT invocation of a script that serves
    XLNet too (``mode`` names it for the message, e.g. ``"BERT (--bert_config_file)"``; ALBERT's
    ``read_args`` refuses them with its own BERT-only flags) and, with ``args_class`` (the BERT
    mode's argument class), every other flag of the entry point given that it does not read:
    XLNet's ``--clamp_len``, ``--summary_type``... (:func:`check_flags_not_given`).

    Raises:
      FlagError: one is given (:func:`check_flags_not_given`).
    """
    check_flags_not_given(flag_values, XLNET_ONLY_HINTS, mode, args_class)


def check_no_bert_only_flags(flag_values, profile: Profile = XLNET, args_class=None) -> None:
    """Refuses BERT flags given in an XLNet invocation (``profile.refused``: each with the
    XLNet flag to use instead, e.g. ``--vocab_file (use --spiece_model_file)``) and, with
    ``args_class`` (the XLNet task's argument class), every other flag of the entry point given
    that it does not read (BERT's and ALBERT's ``--use_xla``, ``--gradient_accumulation_steps``,
    the fine-tuning recipes...: :func:`given_flags_not_read`).

    Raises:
      FlagError: one of them is given on the command line (:func:`flag_given`); names them
        all, the profile's first, in its order: ``BERT flag(s) given with XLNet's
        --model_config_path/--spiece_model_file: --vocab_file (use --spiece_model_file),
        --use_xla, --gradient_accumulation_steps (BERT and ALBERT modes only)``.
    """
    refused = _refused_flags(flag_values, profile.refused, args_class, ())
    if refused:
        families = [{p.family for p in flag_readers(flag_values, n)} - {"XLNet"} or {"BERT"}
                    for n in refused]
        whose = "BERT" if all("BERT" in f for f in families) else "BERT/ALBERT"
        raise FlagError(f"{whose} flag(s) given with XLNet's {xlnet_selected_by(profile.script)}: "
                        f"{refused_list(refused)}")
