"""The HF PyTorch peer of ``bench_whole_commands.py``: a user's whole command in transformers.

Not run by hand: ``bench_whole_commands.py --peers ...,hf`` starts it (a fresh process per
round, timed like the other peers) as::

    <torch python> bench/hf_torch_whole.py extract|predict --hf_dir D --input F --output O
        [--max_seq_length 128] [--batch_size 8] [--layers=-1,-2,-3,-4] [--bf16]

``--hf_dir`` is the HF folder that ``bert_tf.convert.original_to_hf`` wrote from the same
original checkpoint the other peers restore (``config.json``, ``model.safetensors``,
``vocab.txt``, ``tokenizer_config.json``), written once by the parent outside the timings.
The same work as ``extract_features.py`` / ``run_classifier.py --do_predict`` at the
original's flags, the way a transformers user writes it: ``BertTokenizerFast`` on the folder
(lower case, pairs truncated ``longest_first`` to ``--max_seq_length``), batches of
``--batch_size`` in input order padded to their longest row, eager ``torch.inference_mode``,
threads left at torch's default.

* ``extract``: ``--input`` lines ``a ||| b`` (or one text), ``BertModel`` with
  ``output_hidden_states``; ``--output`` gets the original's JSON lines of the ``--layers``
  (hidden state ``-1`` is the last block's, as the original's layer ``-1``), written by the
  same TensorFlow-free formatter as bert_tf (:func:`bert_tf.run.feature_json.feature_json_line`:
  the original's ``round(x, 6)`` text), so the rows compare the model and framework, not
  the JSON writer.
* ``predict``: ``--input`` an MRPC ``test.tsv`` (header; text_a column 3, text_b column 4,
  as the original's ``MrpcProcessor``), ``BertForSequenceClassification`` (2 labels; its head
  is new and random, as in the other peers); ``--output`` gets ``test_results.tsv``, one line
  of tab-separated softmax probabilities per example.

``--bf16``: the forward pass under ``torch.autocast("cpu", dtype=torch.bfloat16)``, outputs
cast back to float32 (only meaningful where the CPU has AMX: the parent runs it only then).
Imports numpy, torch, transformers and ``bert_tf.run.feature_json`` (numpy only); exits
with an error if TensorFlow got imported.
"""

import argparse
import os
import re
import sys

import numpy as np
import torch
from transformers import BertForSequenceClassification, BertModel, BertTokenizerFast

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bert_tf.run.feature_json import feature_json_line  # noqa: E402


def read_extract_lines(path):
    """(text_a, text_b or None) per line, split as the original's ``read_examples``."""
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^(.*) \|\|\| (.*)$", line)
            pairs.append((m.group(1), m.group(2)) if m else (line, None))
    return pairs


def read_mrpc_test(path):
    """(text_a, text_b) of each row of an MRPC ``test.tsv`` after its header."""
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [(r[3], r[4]) for r in rows]


def encode(tokenizer, pairs, max_seq_length):
    """Tokenized batch (int64 tensors padded to the longest row) of ``pairs``."""
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    if all(x is None for x in b):
        return tokenizer(a, truncation=True, max_length=max_seq_length, padding=True,
                         return_tensors="pt")
    if any(x is None for x in b):
        raise SystemExit("hf_torch_whole.py: a batch mixes single texts and pairs")
    return tokenizer(a, b, truncation="longest_first", max_length=max_seq_length,
                     padding=True, return_tensors="pt")


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("row", choices=("extract", "predict"))
    p.add_argument("--hf_dir", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--layers", default="-1,-2,-3,-4")
    p.add_argument("--bf16", action="store_true")
    args = p.parse_args(argv)
    tokenizer = BertTokenizerFast.from_pretrained(args.hf_dir)
    if args.row == "extract":
        model = BertModel.from_pretrained(args.hf_dir, add_pooling_layer=False)
        pairs = read_extract_lines(args.input)
    else:
        model = BertForSequenceClassification.from_pretrained(args.hf_dir, num_labels=2)
        pairs = read_mrpc_test(args.input)
    model.eval()
    layer_indexes = [int(x) for x in args.layers.split(",")]
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16
                else torch.autocast("cpu", enabled=False))
    with open(args.output, "w", encoding="utf-8") as out, torch.inference_mode(), autocast:
        for start in range(0, len(pairs), args.batch_size):
            batch = encode(tokenizer, pairs[start:start + args.batch_size], args.max_seq_length)
            if args.row == "predict":
                logits = model(**batch).logits.float()
                for row in torch.softmax(logits, dim=-1).numpy():
                    out.write("\t".join(str(x) for x in row) + "\n")
                continue
            hidden = model(**batch, output_hidden_states=True).hidden_states
            layers = torch.stack([hidden[i] for i in layer_indexes], 1).float().numpy()
            mask = batch["attention_mask"].numpy()
            ids = batch["input_ids"].numpy()
            for k in range(len(ids)):
                n = int(mask[k].sum())  # right padding: the first n positions are real
                tokens = tokenizer.convert_ids_to_tokens(ids[k, :n].tolist())
                out.write(feature_json_line(start + k, tokens, layer_indexes,
                                            layers[k, :, :n]))
    if "tensorflow" in sys.modules:
        raise SystemExit("hf_torch_whole.py: TensorFlow was imported")
    print(f"{args.row}: {len(pairs)} examples, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads, bf16={args.bf16}")


if __name__ == "__main__":
    main()
