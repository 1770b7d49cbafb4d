"""Where the seconds of one ``extract_features.py`` run go, phase by phase, in one process.

    python bench/profile_extract_features.py [--lines 400] [--layers=-1,-2,-3,-4]

Runs ``bert_tf.bert.tasks.feature_extraction.run`` (the root script's main work) on
the first ``--lines`` MRPC dev pairs with the embedded MiniLM default (``--max_seq_length=128
--batch_size=8``), with timers wrapped around its phases: importing TensorFlow (and Keras),
building the Keras model, restoring the checkpoint, tokenization, each batch's forward pass
(the first one, which traces, apart), the JSON writer. Prints CPU seconds
(``time.process_time``) and wall seconds per phase and writes them to
``bench/results/extract_features_profile.json`` (with the machine and load).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
MRPC_DEV = os.path.join(REPO, "..", "shared", "data", "MRPC", "dev.tsv")


class Phases:
    def __init__(self):
        self.cpu, self.wall, self.calls = {}, {}, {}

    def add(self, name, cpu, wall):
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.calls[name] = self.calls.get(name, 0) + 1

    def wrap(self, owner, attr, name, exclusive_of=()):
        fn = getattr(owner, attr)
        phases = self

        def timed(*a, **k):
            c, w = time.process_time(), time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases.add(name(a, k) if callable(name) else name,
                           time.process_time() - c, time.perf_counter() - w)

        setattr(owner, attr, timed)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--lines", type=int, default=400)
    p.add_argument("--layers", default="-1,-2,-3,-4")
    p.add_argument("--out", default=os.path.join(HERE, "results", "extract_features_profile.json"))
    args = p.parse_args(argv)
    info = {"machine": machine(), "lines": args.lines, "layers": args.layers}
    c0, w0 = time.process_time(), time.perf_counter()
    phases = Phases()
    sys.path.insert(0, REPO)
    import numpy  # noqa: F401
    c, w = time.process_time(), time.perf_counter()
    import tensorflow as tf
    tf.constant(0)  # TF runtime up
    phases.add("import tensorflow", time.process_time() - c, time.perf_counter() - w)
    c, w = time.process_time(), time.perf_counter()
    import keras  # noqa: F401
    phases.add("import keras", time.process_time() - c, time.perf_counter() - w)
    c, w = time.process_time(), time.perf_counter()
    from bert_tf import defaults
    from bert_tf.bert.tasks import feature_extraction as fe
    from bert_tf.bert import model as bert_model
    from bert_tf.run import feature_lines
    from bert_tf.tokenization import wordpiece
    phases.add("import bert_tf", time.process_time() - c, time.perf_counter() - w)
    model = defaults.default_model()

    first = {"done": False}

    def forward_name(a, k):
        if not first["done"]:
            first["done"] = True
            return "first forward (trace)"
        return "forward"

    phases.wrap(bert_model.BertModel, "build_with_dummy_input", "model build (dummy input)")
    phases.wrap(fe, "load_bert_checkpoint", "checkpoint restore")
    phases.wrap(fe.FeatureExtractor, "predict", forward_name)
    phases.wrap(feature_lines, "feature_json_line", "writer (feature_json_line)")
    phases.wrap(wordpiece.FullTokenizer, "tokenize", "tokenize")
    phases.wrap(fe, "load_tokenizer", "load tokenizer (vocab)")
    work = tempfile.mkdtemp(prefix="profile_ef_")
    inp = os.path.join(work, "input.txt")
    rows = [l.rstrip("\n").split("\t") for l in open(MRPC_DEV, encoding="utf-8-sig")][1:args.lines + 1]
    with open(inp, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(f"{r[3]} ||| {r[4]}\n")
    from bert_tf import flags as bert_flags
    fargs = _default_args(fe, bert_flags)
    fargs.input_file, fargs.output_file = inp, os.path.join(work, "out.jsonl")
    fargs.vocab_file, fargs.bert_config_file = model.vocab_file, model.bert_config_file
    fargs.init_checkpoint, fargs.layers = model.init_checkpoint, args.layers
    fargs.max_seq_length, fargs.batch_size = 128, 8
    c, w = time.process_time(), time.perf_counter()
    fe.run(fargs)
    phases.add("extract_features total", time.process_time() - c, time.perf_counter() - w)
    info["total_cpu_seconds"] = time.process_time() - c0
    info["total_wall_seconds"] = time.perf_counter() - w0
    info["phases"] = {n: {"cpu_seconds": round(phases.cpu[n], 3), "wall_seconds": round(phases.wall[n], 3),
                          "calls": phases.calls[n]} for n in phases.cpu}
    info["load_average_at_end"] = os.getloadavg()[0]
    print(json.dumps(info, indent=1))
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(info, f, indent=2)


def _default_args(fe, bert_flags):
    """ExtractFeaturesArgs with the script's defaults (absl flags parsed from no arguments)."""
    from absl import flags
    bert_flags.define_args(fe.ExtractFeaturesArgs)
    flags.FLAGS(["profile"])
    return bert_flags.args_from_flags(fe.ExtractFeaturesArgs, flags.FLAGS)


if __name__ == "__main__":
    main(sys.argv[1:])
