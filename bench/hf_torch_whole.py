"""The HF PyTorch peer of ``bench_whole_commands.py``: a user's whole command in transformers.

Not run by hand: ``bench_whole_commands.py --peers ...,hf`` starts it (a fresh process per
round, timed like the other peers) as::

    <torch python> bench/hf_torch_whole.py extract|predict|squad|train --hf_dir D --input F
        --output O [--max_seq_length 128] [--batch_size 8] [--layers=-1,-2,-3,-4] [--bf16]
        [--doc_stride 128] [--train_batch_size 32] [--learning_rate 2e-5] [--epochs 1]

``--hf_dir`` is the HF folder that ``bert_tf.convert.original_to_hf`` wrote from the same
original checkpoint the other peers restore (``config.json``, ``model.safetensors``,
``vocab.txt``, ``tokenizer_config.json``), written once by the parent outside the timings.
The same work as ``extract_features.py`` / ``run_classifier.py --do_predict`` /
``run_squad.py --do_predict`` / ``run_classifier.py --do_train --do_eval`` at the
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

* ``squad``: ``--input`` a SQuAD v1.1 JSON, ``BertForQuestionAnswering`` (its head new and
  random, as the other peers'), the windows and answers as transformers' ``run_qa.py``
  example writes them (the fast tokenizer's ``return_overflowing_tokens`` with
  ``--max_seq_length`` 384, ``stride`` = ``--doc_stride`` tokens of overlap, question first,
  ``only_second`` truncation; the 20 best starts and ends of each window, spans inside the
  context of at most 30 tokens, the best start + end logit of each question's windows);
  ``--output`` gets ``predictions.json`` (id -> answer text, cut from the context by the
  offsets). transformers 5 has no question-answering pipeline any more.
* ``train``: ``--input`` an MRPC folder (``train.tsv``, ``dev.tsv``), ``--output`` a folder:
  ``BertForSequenceClassification`` fine-tuned as a transformers user's plain loop does it
  (shuffled batches of ``--train_batch_size`` padded to their longest row, ``torch.optim.AdamW``
  at ``--learning_rate`` with weight decay 0.01 off biases and LayerNorms, a linear warmup over
  10% of the steps then linear decay, gradient clipping at 1.0, dropout on, ``--epochs``
  epochs), then evaluated on ``dev.tsv`` in batches of ``--batch_size``; writes
  ``eval_results.txt`` (``eval_accuracy = ...``, ``loss = ...``) as ``run_classifier.py``.

``--bf16``: the forward pass under ``torch.autocast("cpu", dtype=torch.bfloat16)``, outputs
cast back to float32 (only meaningful where the CPU has native bf16: the parent runs it only
then); in ``train`` the forward and the loss under it, the backward and the update in float32
as torch's AMP recipe (no gradient scaler: bfloat16 keeps float32's exponent).
Imports numpy, torch, transformers and ``bert_tf.run.feature_json`` (numpy only); exits
with an error if TensorFlow got imported.
"""

import argparse
import collections
import json
import os
import random
import re
import sys

import numpy as np
import torch
from transformers import (BertForQuestionAnswering, BertForSequenceClassification, BertModel,
                          BertTokenizerFast, get_linear_schedule_with_warmup)

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


def read_mrpc(path):
    """(text_a, text_b, label) of each row of an MRPC ``train.tsv`` / ``dev.tsv``."""
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    return [(r[3], r[4], int(r[0])) for r in rows]


def train(args, tokenizer, autocast):
    """MRPC fine-tuning then dev accuracy (the ``train`` row; see the module docstring)."""
    torch.manual_seed(1)
    rng = random.Random(1)
    train_rows = read_mrpc(os.path.join(args.input, "train.tsv"))
    dev_rows = read_mrpc(os.path.join(args.input, "dev.tsv"))
    model = BertForSequenceClassification.from_pretrained(args.hf_dir, num_labels=2)
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    decay = [p for n, p in model.named_parameters()
             if not (n.endswith("bias") or "LayerNorm" in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.learning_rate, eps=1e-6)
    steps_per_epoch = len(train_rows) // args.train_batch_size
    num_steps = int(steps_per_epoch * args.epochs)
    schedule = get_linear_schedule_with_warmup(optimizer, int(0.1 * num_steps), num_steps)
    model.train()
    order, step, loss = [], 0, None
    while step < num_steps:
        if not order:
            order = list(range(len(train_rows)))
            rng.shuffle(order)
        rows = [train_rows[i] for i in order[:args.train_batch_size]]
        order = order[args.train_batch_size:]
        if len(rows) < args.train_batch_size:  # drop_remainder, as the original's input_fn
            order = []
            continue
        batch = encode(tokenizer, [(a, b) for a, b, _ in rows], args.max_seq_length)
        labels = torch.tensor([y for _, _, y in rows])
        with autocast:
            loss = model(**batch, labels=labels).loss
        loss.float().backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        step += 1
    model.eval()
    correct, losses = 0, []
    with torch.inference_mode(), autocast:
        for start in range(0, len(dev_rows), args.batch_size):
            rows = dev_rows[start:start + args.batch_size]
            batch = encode(tokenizer, [(a, b) for a, b, _ in rows], args.max_seq_length)
            labels = torch.tensor([y for _, _, y in rows])
            out = model(**batch, labels=labels)
            correct += int((out.logits.float().argmax(-1) == labels).sum())
            losses.append(float(out.loss) * len(rows))
    os.makedirs(args.output, exist_ok=True)
    with open(os.path.join(args.output, "eval_results.txt"), "w", encoding="utf-8") as f:
        f.write(f"eval_accuracy = {correct / len(dev_rows)}\n"
                f"eval_loss = {sum(losses) / len(dev_rows)}\nglobal_step = {step}\n"
                f"loss = {float(loss.detach()) if loss is not None else float('nan')}\n")
    return len(train_rows)


def squad(args, tokenizer, autocast, n_best=20, max_answer_length=30):
    """SQuAD v1.1 predictions (the ``squad`` row; see the module docstring)."""
    with open(args.input, encoding="utf-8") as f:
        data = json.load(f)["data"]
    questions = [(q["id"], q["question"], p["context"]) for a in data for p in a["paragraphs"]
                 for q in p["qas"]]
    model = BertForQuestionAnswering.from_pretrained(args.hf_dir)
    model.eval()
    enc = tokenizer([q for _, q, _ in questions], [c for _, _, c in questions],
                    truncation="only_second", max_length=args.max_seq_length,
                    stride=args.doc_stride, return_overflowing_tokens=True,
                    return_offsets_mapping=True, padding="max_length")
    owner = enc["overflow_to_sample_mapping"]
    best = collections.defaultdict(lambda: (-float("inf"), ""))
    with torch.inference_mode(), autocast:
        for start in range(0, len(owner), args.batch_size):
            rows = range(start, min(start + args.batch_size, len(owner)))
            batch = {k: torch.tensor([enc[k][i] for i in rows])
                     for k in ("input_ids", "token_type_ids", "attention_mask")}
            out = model(**batch)
            starts, ends = out.start_logits.float().numpy(), out.end_logits.float().numpy()
            for k, i in enumerate(rows):
                qid, _, context = questions[owner[i]]
                offsets, seq = enc["offset_mapping"][i], enc.sequence_ids(i)
                for s in np.argsort(starts[k])[::-1][:n_best]:
                    for e in np.argsort(ends[k])[::-1][:n_best]:
                        if (seq[s] != 1 or seq[e] != 1 or e < s
                                or e - s + 1 > max_answer_length):
                            continue
                        score = float(starts[k][s] + ends[k][e])
                        if score > best[qid][0]:
                            best[qid] = (score, context[offsets[s][0]:offsets[e][1]])
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump({qid: best[qid][1] for qid, _, _ in questions}, f, indent=4)
    return len(questions)


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("row", choices=("extract", "predict", "squad", "train"))
    p.add_argument("--hf_dir", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--layers", default="-1,-2,-3,-4")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--doc_stride", type=int, default=128)
    p.add_argument("--train_batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--epochs", type=float, default=1.0)
    args = p.parse_args(argv)
    tokenizer = BertTokenizerFast.from_pretrained(args.hf_dir)
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16
                else torch.autocast("cpu", enabled=False))
    if args.row in ("squad", "train"):
        n = (squad if args.row == "squad" else train)(args, tokenizer, autocast)
        if "tensorflow" in sys.modules:
            raise SystemExit("hf_torch_whole.py: TensorFlow was imported")
        print(f"{args.row}: {n} examples, torch {torch.__version__}, "
              f"{torch.get_num_threads()} threads, bf16={args.bf16}")
        return
    if args.row == "extract":
        model = BertModel.from_pretrained(args.hf_dir, add_pooling_layer=False)
        pairs = read_extract_lines(args.input)
    else:
        model = BertForSequenceClassification.from_pretrained(args.hf_dir, num_labels=2)
        pairs = read_mrpc_test(args.input)
    model.eval()
    layer_indexes = [int(x) for x in args.layers.split(",")]
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
