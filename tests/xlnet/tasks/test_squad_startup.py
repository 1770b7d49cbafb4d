"""XLNet run_squad --do_predict without training (issue 24 item 1): the model is created from
the checkpoint, no weight draws a random initial value (the golden checkpoint holds the QA
heads too), and the predictions are still the original's."""
import os

from bert_tf.xlnet.tasks import squad as xsq
from tests.start_probe import record_random_draws
from tests.xlnet.tasks.test_squad import (args_from_command_line,  # noqa: F401
                                          assert_predictions_equal_golden, golden,
                                          golden_predict_flags, make_case)


def test_predict_draws_no_random_value_and_gives_the_golden_predictions(
        golden, shared_data_dir, tmp_path, monkeypatch):  # noqa: F811
    case = make_case(golden, shared_data_dir, str(tmp_path / "case"))
    drawn = record_random_draws(monkeypatch)
    result = xsq.run(args_from_command_line(golden_predict_flags(golden), case))
    assert drawn == []
    assert result.weights_from == os.path.join(case, "model_dir", "model.ckpt-0")
    assert_predictions_equal_golden(golden, os.path.join(case, "predict_dir"))
