"""XLNet extract_features --export_dir: the raw-text SavedModel, loaded in a fresh process
(tensorflow + tensorflow_text only), gives the JSON lines' values of every real token
(6 decimals) and the .embeddings.jsonl sentence embeddings of the same run (golden tiny random
XLNet, golden spiece.model; pairs ``a ||| b``, single sentences, one line truncated)."""

import json
import os

import numpy as np
import pytest

from bert_tf.xlnet.tasks.feature_extraction import XLNetExtractFeaturesArgs, run as extract_features
from tests.run.test_serving import _one_version
from tests.bert.tasks.test_squad_serving import _fresh_process_calls

pytest.importorskip("tensorflow_text")
TOL = 1e-5
PAIRS = [("The food was good, he said.", "He said that the food was good."),
         ("Revenue rose 1,500 dollars in 2004.", "It fell."),
         ("A rather long first sentence that goes on and on about nothing at all, and more.",
          "Then a second one, also long enough to be cut by the pair truncation rule here.")]
SINGLES = ["Only one sentence here.", "  Spaces   and UPPER case words!  "]


def _read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.mark.slow
@pytest.mark.parametrize("pooling", ["mean", "cls"])
def test_xlnet_export_gives_the_json_lines_values(golden_dir, tmp_path, pooling):
    folder = os.path.join(golden_dir, "xlnet", "tiny_random")
    input_file = tmp_path / "input.txt"
    input_file.write_text("".join(f"{a} ||| {b}\n" for a, b in PAIRS)
                          + "".join(f"{s}\n" for s in SINGLES), encoding="utf-8")
    out_file = str(tmp_path / "out.jsonl")
    summary = extract_features(XLNetExtractFeaturesArgs(
        input_file=str(input_file), output_file=out_file,
        model_config_path=os.path.join(folder, "xlnet_config.json"),
        spiece_model_file=os.path.join(golden_dir, "xlnet", "spiece.model"),
        init_checkpoint=os.path.join(folder, "xlnet_model.ckpt"), layers="-1,0",
        max_seq_length=32, pooling=pooling, export_dir=str(tmp_path / "export")))
    export = _one_version(str(tmp_path / "export"))
    assert summary.export_path == export
    job = {"pairs": {"export": export, "signature": "serving_default",
                     "inputs": {"text_a": [a for a, _ in PAIRS], "text_b": [b for _, b in PAIRS]}},
           "singles": {"export": export, "signature": "serving_single",
                       "inputs": {"text_a": SINGLES}}}
    out = _fresh_process_calls(tmp_path, job)
    assert out["pairs"]["signatures"] == ["serving_default", "serving_ids", "serving_single"]
    records = _read_jsonl(out_file)
    embeddings = _read_jsonl(out_file + ".embeddings.jsonl")
    layers = out["pairs"]["outputs"]["layers"] + out["singles"]["outputs"]["layers"]
    masks = out["pairs"]["outputs"]["input_mask"] + out["singles"]["outputs"]["input_mask"]
    got_emb = out["pairs"]["outputs"]["embedding"] + out["singles"]["outputs"]["embedding"]
    assert len(records) == len(layers) == 5
    assert max(len(r["features"]) for r in records) == 32  # the long pair is truncated
    for rec, row, mask, emb, gold_emb in zip(records, layers, masks, got_emb, embeddings):
        n = len(rec["features"])
        assert sum(mask) == n and all(mask[32 - n:])  # left padded: the last n are real
        assert rec["features"][-1]["token"] == "<cls>"
        expected = np.array([[t["layers"][j]["values"] for t in rec["features"]]
                             for j in range(2)])                     # [2, n, D]
        np.testing.assert_allclose(np.array(row)[:, 32 - n:], expected, atol=TOL, rtol=0)
        np.testing.assert_allclose(emb, gold_emb["embedding"], atol=TOL, rtol=0)
