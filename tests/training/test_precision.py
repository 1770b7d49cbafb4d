"""--dtype (bert_tf.training.precision): the policies and the float16-on-CPU warning."""
import logging

import keras
import pytest
import tensorflow as tf

from bert_tf.errors import FlagError
from bert_tf.training import precision


def test_float16_without_a_gpu_warns_once(monkeypatch, caplog):
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    monkeypatch.setattr(precision, "_WARNED", [])
    with caplog.at_level(logging.WARNING):
        with precision.dtype_policy("float16"):
            assert keras.config.dtype_policy().name == "mixed_float16"
        with precision.dtype_policy("float16"):
            pass
    lines = [r.getMessage() for r in caplog.records if "--dtype=float16" in r.getMessage()]
    assert len(lines) == 1 and "--dtype=bfloat16 or float32" in lines[0]
    assert keras.config.dtype_policy().name == "float32"


def test_float16_with_a_gpu_and_other_dtypes_do_not_warn(monkeypatch, caplog):
    monkeypatch.setattr(precision, "_WARNED", [])
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: ["gpu:0"])
    with caplog.at_level(logging.WARNING):
        with precision.dtype_policy("float16"):
            pass
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda kind=None: [])
    with caplog.at_level(logging.WARNING):
        for dtype in ("float32", "bfloat16"):
            with precision.dtype_policy(dtype):
                pass
    assert "--dtype=float16" not in caplog.text
    with pytest.raises(FlagError, match="--dtype=half"):
        with precision.dtype_policy("half"):
            pass


def test_a_lower_precision_is_said_once_in_the_log(monkeypatch, caplog):
    # (a user of XLNet's run_pretraining --use_bfloat16 could not tell from the log)
    monkeypatch.setattr(precision, "_SAID", set())
    with caplog.at_level(logging.INFO):
        with precision.dtype_policy("float32"):
            pass
        for _ in range(2):
            with precision.dtype_policy("bfloat16"):
                pass
            with precision.dtype_policy("bfloat16", inference_only=True):
                pass
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("computing in")]
    assert lines == ["computing in bfloat16 (Keras' mixed_bfloat16: float32 variables and "
                     "checkpoints)",
                     "computing in bfloat16 (Keras' mixed_bfloat16: float32 checkpoints, the "
                     "matmul kernels held in bfloat16 to predict)"]
