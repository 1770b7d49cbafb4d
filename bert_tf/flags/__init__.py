"""The one flag vocabulary shared by every root script, its profiles (BERT, XLNet, ALBERT and
one per script), the argument classes read from it, and the process every entry point runs in.

Three concerns, one module each; this package exports their public names, so entry points,
tasks and tests write ``from bert_tf import flags as bert_flags`` and
``bert_flags.run_main(main)``:

* :mod:`bert_tf.flags.vocabulary` and :mod:`bert_tf.flags.profiles`: the flag vocabulary and
  its profiles. Each flag is declared once in :data:`FLAG_SPECS`, with the original release's
  type, default and meaning (spec `bert.md` sections 5.1, 6.1, 8.1, 9.1, 10; `xlnet.md`
  section 8.1). A flag means the same thing in every script. A :class:`Profile` says which
  flags a family uses and where its original gives a flag another default or meaning:
  :data:`BERT`, :data:`XLNET` (``learning_rate`` 1e-5, ``train_batch_size`` 8,
  ``--output_dir`` holding only the TFRecords...), :data:`ALBERT`. A root script's profile adds
  the defaults where the original script of that name had another one (``max_seq_length`` is
  128 in ``run_classifier.py`` and 384 in :data:`RUN_SQUAD`). :func:`define` and
  :func:`define_profiles` declare flags by name.
* :mod:`bert_tf.flags.arguments`: the argument classes and the readers. A task's argument class
  (:func:`args_class`, in the TensorFlow-free ``bert_tf/<family>/tasks/args.py``) is the one
  list of its flags: the same profile gives the defaults of the flags its entry point defines
  from the class's fields (:func:`define_args`) and of the class itself::

      from bert_tf import flags as bert_flags
      from bert_tf.bert.tasks.args import SquadArgs   # @bert_flags.args_class(RUN_SQUAD)

      bert_flags.define_args(SquadArgs)
      FLAGS = bert_flags.FLAGS
      args = bert_flags.args_from_flags(SquadArgs, FLAGS)   # max_seq_length 384 unless given

  Scripts serving several families (``run_classifier.py``, ``extract_features.py``) define
  each family's class; :func:`is_xlnet_invocation` tells which path a command line takes.
* :mod:`bert_tf.flags.process`: :func:`run_main`, what every entry point runs in (flag
  parsing, one-line errors, output locks, help that exits 0).

A bottom module of the spine: it imports no family and no TensorFlow (``--help`` answers
without it).
"""

from bert_tf.flags.arguments import (BERT_TF_RECIPE_FLAGS, BERT_TF_SQUAD_RECIPE_FLAGS,
                                     BERT_TF_TRAINING_FLAGS, BERT_TPU_FLAGS, XLNET_MODEL_FLAGS,
                                     XLNET_OPTIMIZER_FLAGS, args_class, args_from_flags,
                                     check_flags_not_given, check_no_bert_only_flags,
                                     check_no_xlnet_only_flags, XLNET_ONLY_HINTS,
                                     define_args, field_names, flag_given, flag_is_set,
                                     flag_type, given_flags_not_read, is_xlnet_invocation,
                                     refusal_hint, refused_list, xlnet_selected_by)
from bert_tf.flags.process import (HELP_FLAGS, LOCKED_OUTPUT_FLAGS, OUTPUT_FOLDER_FLAGS,
                                   absent_output_folders, asks_for_help,
                                   check_no_positional_arguments, exit_without_teardown,
                                   locked_outputs, output_folders, parse_flags,
                                   relax_startup_gc, remove_empty_new_folders, run_main)
from bert_tf.flags.profiles import (ALBERT, ALBERT_CREATE_PRETRAINING_DATA,
                                    ALBERT_CREATE_SELECTED_BY, ALBERT_RUN_CLASSIFIER,
                                    ALBERT_RUN_PRETRAINING, ALBERT_RUN_SQUAD_V1,
                                    ALBERT_RUN_SQUAD_V2, BERT, CREATE_PRETRAINING_DATA,
                                    EXTRACT_FEATURES, FLAGS, RUN_CLASSIFIER, RUN_PRETRAINING,
                                    RUN_SQUAD, XLNET, XLNET_CREATE_PRETRAINING_DATA,
                                    XLNET_EXTRACT_FEATURES, XLNET_MACHINE_FLAGS,
                                    XLNET_RUN_CLASSIFIER, XLNET_RUN_PRETRAINING, XLNET_RUN_RACE,
                                    XLNET_RUN_SQUAD, XLNET_SELECTED_BY, define, define_profiles,
                                    flag_readers)
from bert_tf.flags.vocabulary import FLAG_SPECS, Profile

__all__ = [
    # vocabulary and profiles
    "FLAG_SPECS", "Profile", "FLAGS", "BERT", "XLNET", "ALBERT", "XLNET_SELECTED_BY",
    "ALBERT_CREATE_SELECTED_BY", "CREATE_PRETRAINING_DATA", "RUN_PRETRAINING", "RUN_CLASSIFIER",
    "RUN_SQUAD", "EXTRACT_FEATURES", "XLNET_CREATE_PRETRAINING_DATA", "XLNET_RUN_PRETRAINING",
    "XLNET_RUN_SQUAD", "XLNET_RUN_RACE", "XLNET_RUN_CLASSIFIER", "XLNET_EXTRACT_FEATURES",
    "ALBERT_CREATE_PRETRAINING_DATA", "ALBERT_RUN_CLASSIFIER", "ALBERT_RUN_PRETRAINING",
    "ALBERT_RUN_SQUAD_V1", "ALBERT_RUN_SQUAD_V2", "define", "define_profiles", "flag_readers",
    # argument classes and readers
    "XLNET_MODEL_FLAGS", "XLNET_MACHINE_FLAGS", "XLNET_OPTIMIZER_FLAGS", "BERT_TPU_FLAGS",
    "BERT_TF_TRAINING_FLAGS", "BERT_TF_RECIPE_FLAGS", "BERT_TF_SQUAD_RECIPE_FLAGS", "flag_type", "args_class", "field_names", "define_args",
    "flag_is_set", "args_from_flags", "flag_given", "is_xlnet_invocation",
    "check_flags_not_given", "check_no_bert_only_flags", "check_no_xlnet_only_flags",
    "XLNET_ONLY_HINTS", "given_flags_not_read", "refusal_hint", "refused_list",
    "xlnet_selected_by",
    # the process
    "run_main", "relax_startup_gc", "exit_without_teardown", "parse_flags", "HELP_FLAGS", "OUTPUT_FOLDER_FLAGS",
    "LOCKED_OUTPUT_FLAGS", "locked_outputs", "output_folders", "absent_output_folders",
    "remove_empty_new_folders", "check_no_positional_arguments", "asks_for_help",
]
