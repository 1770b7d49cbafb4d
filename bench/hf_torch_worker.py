"""Worker process of ``bench_encoder_peers.py --torch_python``: HF PyTorch ``BertModel`` eager.

Not run by hand: ``bench_encoder_peers.py`` starts it as
``<torch python> bench/hf_torch_worker.py <folder>`` where the folder holds ``config.json``
(a HF BERT config), ``weights.npz`` (HF names -> float32 arrays) and ``inputs.npz``
(``input_ids``, ``attention_mask``, ``token_type_ids`` int32 ``[B, S]``). It writes
``output.npy`` (``last_hidden_state`` as float32 ``[B, S, H]``; with ``HF_TORCH_AUTOCAST=bfloat16``
in its environment every call runs under ``torch.autocast("cpu", dtype=torch.bfloat16)``), prints ``ready``, then answers
each stdin line ``time <iters>`` with one JSON line ``{"wall": [...], "cpu": [...]}``: the wall
and CPU (this process, all threads) seconds of each of ``iters`` forward calls. Imports only
numpy, torch and transformers (no TensorFlow), so the parent's TF and this process never run
at once.
"""

import json
import os
import sys
import time

import numpy as np
import torch
from transformers import BertConfig, BertModel


def main(folder):
    with open(os.path.join(folder, "config.json")) as f:
        config = BertConfig(**json.load(f))
    model = BertModel(config, add_pooling_layer=True).eval()
    weights = dict(np.load(os.path.join(folder, "weights.npz")))
    state = {k: torch.from_numpy(v) for k, v in weights.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not m.endswith("position_ids")]
    if missing or unexpected:
        raise SystemExit(f"HF weights: missing {missing[:4]}, unexpected {unexpected[:4]}")
    inputs = {k: torch.from_numpy(v.astype(np.int64))
              for k, v in np.load(os.path.join(folder, "inputs.npz")).items()}

    autocast = os.environ.get("HF_TORCH_AUTOCAST")  # "bfloat16": torch.autocast on the CPU

    def call():
        with torch.inference_mode():
            if autocast:
                with torch.autocast("cpu", dtype=getattr(torch, autocast)):
                    return model(**inputs).last_hidden_state
            return model(**inputs).last_hidden_state

    np.save(os.path.join(folder, "output.npy"), call().float().numpy())
    call()  # warm-up
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] != "time":
            break
        wall, cpu = [], []
        for _ in range(int(words[1])):
            t, c = time.perf_counter(), time.process_time()
            call()
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        print(json.dumps({"wall": wall, "cpu": cpu, "threads": torch.get_num_threads()}),
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
