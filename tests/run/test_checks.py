"""bert_tf.run.checks: the names every training run writes in its folder."""
import os

from bert_tf import checkpoint_io
from bert_tf.run import checks
from bert_tf.training import summaries


def test_the_training_output_names_are_the_ones_the_writers_use(tmp_path):
    assert checks.EVAL_FOLDERS == (summaries.EVAL_SUBDIR,)
    prefix = str(tmp_path / "model.ckpt-3")
    checkpoint_io.write_state_file(str(tmp_path), prefix, [prefix])
    assert checks.TRAINING_FILES == tuple(os.listdir(tmp_path)) == ("checkpoint",)
