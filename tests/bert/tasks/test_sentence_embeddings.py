"""extract_features --pooling=mean --normalize against sentence-transformers (issue 13).

The reference is ``SentenceTransformer(<all-MiniLM-L6-v2 folder>).encode(...)`` (torch,
exact erf GELU, mean pooling, Normalize), run on the same lines: an independent
implementation. Needs sentence-transformers (not a dependency of bert_tf: skipped without it).
"""
import importlib.util
import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.bert.config import BertConfig
from bert_tf.errors import FlagError
from bert_tf.bert.tasks.feature_extraction import ExtractFeaturesArgs, run as extract_features

SENTENCES = [
    "Amrozi accused his brother , whom he called \" the witness \" , of deliberately "
    "distorting his evidence .",
    "Yucaipa owned Dominick 's before selling the chain to Safeway in 1998 for $ 2.5 billion .",
    "A man is playing a guitar.",
    "The quick brown fox jumps over the lazy dog!",
    "Café prices in Zürich rose 3.5% last year, economists said.",
    "Hello",
]


def _args(ckpt_dir, input_file, output_file, **kw):
    base = dict(input_file=input_file, output_file=output_file,
                bert_config_file=os.path.join(ckpt_dir, "bert_config.json"),
                vocab_file=os.path.join(ckpt_dir, "vocab.txt"),
                init_checkpoint=os.path.join(ckpt_dir, "bert_model.ckpt"),
                layers="-1", max_seq_length=128, batch_size=4)
    base.update(kw)
    return ExtractFeaturesArgs(**base)


@pytest.fixture(scope="module")
def exact_gelu_dir(minilm_dir, tmp_path_factory):
    """MiniLM converted with --hidden_act=source (its exact GELU kept as "gelu_exact")."""
    from bert_tf.convert import convert_hf_folder

    out = str(tmp_path_factory.mktemp("minilm_exact"))
    convert_hf_folder(minilm_dir, out, hidden_act="source")
    return out


_REFERENCE_SCRIPT = """
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer
model_dir, sentences_file, out_file = sys.argv[1:4]
with open(sentences_file, encoding="utf-8") as f:
    sentences = json.load(f)
model = SentenceTransformer(model_dir, device="cpu")
np.save(out_file, model.encode(sentences, batch_size=4, convert_to_numpy=True))
"""


@pytest.fixture(scope="module")
def reference(minilm_dir, tmp_path_factory):
    """sentence-transformers' embeddings of SENTENCES, float32 [6, 384].

    Computed in a child process: torch / transformers imported after TensorFlow crash this
    process (segmentation fault), so the parent never imports them."""
    for name in ("torch", "sentence_transformers"):
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (sentence-transformers is an optional extra "
                        "for this comparison, never a run-time dependency)")
    folder = tmp_path_factory.mktemp("st_reference")
    sentences_file, out_file = folder / "sentences.json", folder / "reference.npy"
    sentences_file.write_text(json.dumps(SENTENCES), encoding="utf-8")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    subprocess.run([sys.executable, "-c", _REFERENCE_SCRIPT, minilm_dir, str(sentences_file),
                    str(out_file)], check=True, env=env, timeout=600)
    return np.load(out_file).astype(np.float32)


def _embeddings(ckpt_dir, tmp_path, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    input_file = tmp_path / "input.txt"
    input_file.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    output = str(tmp_path / "out.jsonl")
    summary = extract_features(_args(ckpt_dir, str(input_file), output, **kw))
    with open(summary.embeddings_file, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    assert [r["linex_index"] for r in rows] == list(range(len(SENTENCES)))
    return np.asarray([r["embedding"] for r in rows], np.float32)


def test_mean_normalize_equals_sentence_transformers(exact_gelu_dir, reference, tmp_path):
    ours = _embeddings(exact_gelu_dir, tmp_path, pooling="mean", normalize=True)
    assert ours.shape == reference.shape == (len(SENTENCES), 384)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(ours, reference, atol=1e-5, rtol=0)


def test_the_tanh_default_misses_the_bound(minilm_checkpoint_dir, reference, tmp_path):
    # The default conversion (the original's tanh GELU) is NOT the model's activation: the
    # 1e-5 bound above would fail with it, so that test tells the two apart.
    ours = _embeddings(minilm_checkpoint_dir, tmp_path, pooling="mean", normalize=True)
    assert np.abs(ours - reference).max() > 1e-5
    np.testing.assert_allclose(ours, reference, atol=1e-2)  # ... but it is the same model


def test_normalize_scales_the_mean_to_unit_length(exact_gelu_dir, tmp_path):
    plain = _embeddings(exact_gelu_dir, tmp_path / "plain", pooling="mean")
    unit = _embeddings(exact_gelu_dir, tmp_path / "unit", pooling="mean", normalize=True)
    norms = np.linalg.norm(plain.astype(np.float64), axis=1, keepdims=True)
    assert np.all(norms > 1.5)  # MiniLM's mean-pooled vectors are not unit length
    np.testing.assert_allclose(unit, plain / norms, atol=2e-6)  # 6-decimal rounding of both


def test_source_activation_is_written_as_gelu_exact(minilm_dir, exact_gelu_dir, tmp_path,
                                                    caplog):
    with open(os.path.join(minilm_dir, "config.json"), encoding="utf-8") as f:
        assert json.load(f)["hidden_act"] == "gelu"  # HF's exact (erf) GELU
    assert BertConfig.from_json_file(
        os.path.join(exact_gelu_dir, "bert_config.json")).hidden_act == "gelu_exact"
    from bert_tf.convert import convert_hf_folder

    with caplog.at_level(logging.INFO):
        convert_hf_folder(minilm_dir, str(tmp_path / "default"))
    assert not [r for r in caplog.records if "gelu_exact" in r.getMessage()]
    assert BertConfig.from_json_file(
        str(tmp_path / "default" / "bert_config.json")).hidden_act == "gelu"  # tanh, original
    caplog.clear()
    with caplog.at_level(logging.INFO):
        convert_hf_folder(minilm_dir, str(tmp_path / "source"), hidden_act="source")
    said = [r.getMessage() for r in caplog.records if "gelu_exact" in r.getMessage()]
    assert len(said) == 1 and "original BERT code rejects" in said[0]


def test_normalize_without_pooling_is_one_flag_error(exact_gelu_dir, tmp_path):
    input_file = tmp_path / "input.txt"
    input_file.write_text("a line\n", encoding="utf-8")
    output = tmp_path / "out.jsonl"
    with pytest.raises(FlagError, match=r"^--normalize: needs --pooling"):
        extract_features(_args(exact_gelu_dir, str(input_file), str(output), normalize=True))
    assert not output.exists()
