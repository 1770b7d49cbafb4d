"""Fixtures for task tests: MiniLM converted to the original layout once per session."""
import pytest


@pytest.fixture(scope="session")
def minilm_checkpoint_dir(minilm_dir, tmp_path_factory):
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm_tasks"))
    convert_hf_folder(minilm_dir, out)
    return out
