"""The one flag vocabulary: each task's argument dataclass has the same defaults as the flags
its root script defines (bert_tf/flags.py FLAG_SPECS plus the script's original overrides)."""
import dataclasses

import pytest

from bert_tf.flags import FLAG_SPECS
from bert_tf.tasks.classifier import ClassifierArgs
from bert_tf.tasks.feature_extraction import ExtractFeaturesArgs
from bert_tf.tasks.pretraining import PretrainingArgs
from bert_tf.tasks.squad import SquadArgs

# the original scripts' own defaults where they differ from the vocabulary's (spec 9.1)
SCRIPT_OVERRIDES = {SquadArgs: {"max_seq_length": 384}}


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
