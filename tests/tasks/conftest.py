"""Fixtures for task tests: MiniLM converted to the original layout once per session."""
import pytest


@pytest.fixture(scope="session")
def minilm_checkpoint_dir(minilm_dir, tmp_path_factory):
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm_tasks"))
    convert_hf_folder(minilm_dir, out)
    return out


@pytest.fixture(scope="session")
def xlnet_tiny_files(golden_dir):
    """Paths of the golden tiny random XLNet: ``config``, ``ckpt`` (checkpoint prefix) and
    ``spiece`` (the real XLNet SentencePiece model)."""
    import os

    folder = os.path.join(golden_dir, "xlnet", "tiny_random")
    return {"config": os.path.join(folder, "xlnet_config.json"),
            "ckpt": os.path.join(folder, "xlnet_model.ckpt"),
            "spiece": os.path.join(golden_dir, "xlnet", "spiece.model")}
