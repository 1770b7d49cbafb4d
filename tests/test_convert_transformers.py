"""Hugging Face's own models on folders written by `python -m bert_tf.convert --to hf` give our
outputs within 1e-5 and the original code's (goldens): `BertModel` on MiniLM (real MRPC dev
pairs) and the tiny random BERT, `XLNetModel` on both golden tiny XLNets.

Needs torch and transformers (the optional extra ``hf``; /work/hfvenv here); skips without them.
HF's models run in a child process that imports torch and transformers only: importing
`transformers`' models after TensorFlow segfaults in one process (torch 2.14, TF 2.21).
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("torch", reason="torch is not installed (pip install bert_tf[hf])")
pytest.importorskip("transformers", reason="transformers is not installed (pip install bert_tf[hf])")

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint  # noqa: E402
from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.model import BertModel  # noqa: E402
from bert_tf.convert import main  # noqa: E402

# Each HF run starts a child that imports torch + transformers (20-120 s a test on the shared
# 2-core machine): run with `-m slow` in a venv that has them.
pytestmark = pytest.mark.slow

OURS_ATOL = 1e-5     # HF vs our model, real tokens and pooled output
PAD_ATOL = 1e-4      # padding positions of sequence_output (golden README: float32 noise)
GOLDEN_ATOL = 2e-5   # vs the original code (tests/bert/test_model.py's REAL_ATOL)

# The child: argv = kind, HF folder, inputs npz, outputs npz; inputs are batches b{n}_*.
_CHILD = r"""
import json, sys
import numpy as np
import torch
import transformers
kind, folder, inputs, outputs = sys.argv[1:5]
overrides = json.loads(sys.argv[5]) if len(sys.argv) > 5 else {}
long = lambda a: torch.tensor(a, dtype=torch.long)
out = {}
with np.load(inputs) as d:
    g = dict(d)
batches = sorted({k.split("_", 1)[0] for k in g})
if kind == "tokenizer":
    tok = transformers.BertTokenizer.from_pretrained(folder)
    out["ids"] = np.array(tok("Hello World")["input_ids"])
    batches = []
elif kind == "xlnet":
    model = transformers.XLNetModel.from_pretrained(folder, **overrides).eval()
    out["ff_activation"] = np.array(model.config.ff_activation)
else:
    cls = transformers.BertForPreTraining if kind == "bert_pretraining" else transformers.BertModel
    model = cls.from_pretrained(folder, attn_implementation="eager", **overrides).eval()
    out["hidden_act"] = np.array(model.config.hidden_act)
with torch.no_grad():
    for b in batches:
        if kind == "xlnet":
            r = model(input_ids=long(g[b + "_input_ids"]), token_type_ids=long(g[b + "_segment_ids"]),
                      input_mask=torch.tensor(g[b + "_input_mask"], dtype=torch.float32), use_mems=False)
            out[b + "_sequence_output"] = r.last_hidden_state.numpy()
            continue
        r = model(input_ids=long(g[b + "_input_ids"]), attention_mask=long(g[b + "_input_mask"]),
                  token_type_ids=long(g[b + "_segment_ids"]))
        if kind == "bert_pretraining":
            out[b + "_prediction_logits"] = r.prediction_logits.numpy()
            out[b + "_seq_relationship_logits"] = r.seq_relationship_logits.numpy()
        else:
            out[b + "_sequence_output"] = r.last_hidden_state.numpy()
            out[b + "_pooled_output"] = r.pooler_output.numpy()
np.savez(outputs, **out)
"""


def _run_hf(kind, folder, batches, tmp_path, **overrides):
    """Runs HF's model on ``batches`` ({name: {input_ids, input_mask, segment_ids}}) in a child."""
    inputs, outputs = tmp_path / f"{kind}_in.npz", tmp_path / f"{kind}_out.npz"
    np.savez(inputs, **{f"{b}_{k}": v for b, d in batches.items() for k, v in d.items()})
    env = dict(os.environ, TRANSFORMERS_OFFLINE="1", HF_HUB_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-c", _CHILD, kind, str(folder), str(inputs), str(outputs),
                           json.dumps(overrides)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(outputs) as d:
        return dict(d)


def _ours(folder):
    config = BertConfig.from_json_file(os.path.join(folder, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    load_bert_checkpoint(bert_model_map(model), os.path.join(folder, "bert_model.ckpt"), require_all=True)
    return model


BERT_INPUTS = ("input_ids", "input_mask", "segment_ids")


def _compare(hf, ours, g, batch="b0"):
    real = g["input_mask"].astype(bool)
    hf_seq, hf_pooled = hf[batch + "_sequence_output"], hf[batch + "_pooled_output"]
    seq = ours["sequence_output"].numpy()
    np.testing.assert_allclose(hf_seq[real], seq[real], rtol=0, atol=OURS_ATOL)
    np.testing.assert_allclose(hf_seq[~real], seq[~real], rtol=0, atol=PAD_ATOL)
    np.testing.assert_allclose(hf_pooled, ours["pooled_output"].numpy(), rtol=0, atol=OURS_ATOL)
    np.testing.assert_allclose(hf_seq[real], g["sequence_output"][real], rtol=0, atol=GOLDEN_ATOL)
    np.testing.assert_allclose(hf_pooled, g["pooled_output"], rtol=0, atol=GOLDEN_ATOL)


@pytest.fixture(scope="module")
def minilm_folders(minilm_dir, tmp_path_factory):
    """(original folder, HF folder): the package's MiniLM -> original -> HF."""
    orig, hf = tmp_path_factory.mktemp("orig"), tmp_path_factory.mktemp("hf")
    assert main(["--hf_dir", minilm_dir, "--out_dir", str(orig)]) == 0
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(orig), "--out_dir", str(hf)]) == 0
    return orig, hf


def test_minilm_bert_model_on_mrpc_pairs(minilm_folders, golden_dir, tmp_path):
    """All 16 golden MiniLM inputs (14 MRPC dev pairs, 2 SQuAD pairs truncated to 128)."""
    orig, hf_dir = minilm_folders
    with np.load(os.path.join(golden_dir, "bert", "minilm", "outputs.npz")) as d:
        g = dict(d)
    hf = _run_hf("bert", hf_dir, {"b0": {k: g[k] for k in BERT_INPUTS}}, tmp_path)
    assert str(hf["hidden_act"]) == "gelu_new"
    _compare(hf, _ours(str(orig))(g), g)
    # The same HF model with the exact-erf "gelu" misses the original's outputs: the
    # activation in config.json is what makes them equal.
    erf = _run_hf("bert", hf_dir, {"b0": {k: g[k][:2] for k in BERT_INPUTS}}, tmp_path, hidden_act="gelu")
    real = g["input_mask"][:2].astype(bool)
    assert np.abs(erf["b0_sequence_output"][real] - g["sequence_output"][:2][real]).max() > 10 * GOLDEN_ATOL


def test_minilm_tokenizer_config(minilm_folders, tmp_path):
    hf = _run_hf("tokenizer", minilm_folders[1], {}, tmp_path)
    # bert-base-uncased ids (0-based lines of vocab.txt): [CLS] 101, hello 7592, world 2088, [SEP] 102
    assert hf["ids"].tolist() == [101, 7592, 2088, 102]


def test_tiny_random_bert(golden_dir, uncased_vocab_file, tmp_path):
    orig, hf_dir = tmp_path / "orig", tmp_path / "hf"
    orig.mkdir()
    src = os.path.join(golden_dir, "bert", "tiny_random")
    for name in ("bert_config.json", "bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copyfile(os.path.join(src, name), orig / name)
    shutil.copyfile(uncased_vocab_file, orig / "vocab.txt")
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(orig), "--out_dir", str(hf_dir)]) == 0
    batches = ("b0", "b1", "b2", "b3")
    with np.load(os.path.join(src, "outputs.npz")) as d:
        gold = {b: {k[len(b) + 1:]: d[k] for k in d.files if k.startswith(b + "_")} for b in batches}
    inputs = {b: {k: gold[b][k] for k in BERT_INPUTS} for b in batches}
    hf = _run_hf("bert", hf_dir, inputs, tmp_path)
    pre = _run_hf("bert_pretraining", hf_dir, inputs, tmp_path)
    ours = _ours(str(orig))
    for b in batches:
        g = gold[b]
        _compare(hf, ours(g), g, b)
        # BertForPreTraining: the MLM decoder tied to the word embeddings, the NSP head.
        nsp = pre[b + "_seq_relationship_logits"]
        nsp = nsp - np.log(np.exp(nsp).sum(-1, keepdims=True))
        np.testing.assert_allclose(nsp, g["nsp_log_probs"], rtol=0, atol=GOLDEN_ATOL)
        pos = g["masked_lm_positions"]
        logits = pre[b + "_prediction_logits"][np.repeat(np.arange(pos.shape[0]), pos.shape[1]), pos.reshape(-1)]
        logits = logits.astype(np.float64)
        mlm = logits - logits.max(-1, keepdims=True)
        mlm = mlm - np.log(np.exp(mlm).sum(-1, keepdims=True))
        np.testing.assert_allclose(mlm, g["mlm_log_probs"], rtol=0, atol=GOLDEN_ATOL)


@pytest.mark.parametrize("variant", ["tiny_random", "tiny_random_tied"])
def test_xlnet_model_on_the_golden_tiny_models(golden_dir, tmp_path, variant):
    """HF XLNetModel (no memory, attn "bi") on the converted golden checkpoint equals ours
    and the original code's `sequence_output` on the 4 golden batches (time-major in the file)."""
    from tests.xlnet.conftest import GoldenXLNet, time_to_batch_major

    src, hf_dir = tmp_path / "orig", tmp_path / "hf"
    src.mkdir()
    gold = os.path.join(golden_dir, "xlnet", variant)
    for name in ("xlnet_config.json", "xlnet_model.ckpt.index", "xlnet_model.ckpt.data-00000-of-00001"):
        shutil.copyfile(os.path.join(gold, name), src / name)
    assert main(["--from", "original", "--to", "hf", "--in_dir", str(src), "--out_dir", str(hf_dir)]) == 0
    golden = GoldenXLNet(gold)
    g = golden.outputs
    batches = ("batch0", "batch1", "batch2", "batch3")
    # input_mask: XLNet's convention, 1.0 = padding.
    inputs = {b: {"input_ids": time_to_batch_major(g[f"{b}/input_ids"]),
                  "segment_ids": time_to_batch_major(g[f"{b}/seg_ids"]),
                  "input_mask": time_to_batch_major(g[f"{b}/input_mask"])} for b in batches}
    # Run settings are flags in the original, config keys in HF: those the goldens used.
    rc = golden.run_info["run_config"]
    hf = _run_hf("xlnet", hf_dir, inputs, tmp_path, bi_data=rc["bi_data"], clamp_len=rc["clamp_len"])
    assert str(hf["ff_activation"]) == ("gelu_new" if variant == "tiny_random" else "relu")
    xlnet, _, _, _ = golden.build()
    for b in batches:
        ours = xlnet(inputs[b])["sequence_output"].numpy()
        np.testing.assert_allclose(hf[b + "_sequence_output"], ours, rtol=0, atol=OURS_ATOL, err_msg=b)
        np.testing.assert_allclose(hf[b + "_sequence_output"], time_to_batch_major(g[f"{b}/sequence_output"]),
                                   rtol=0, atol=GOLDEN_ATOL, err_msg=b)
