"""MRPC fine-tuning: bert_tf `run_classifier` vs keras-hub `BertTextClassifier`, same process.

    python bench/bench_classifier_training.py [--data_dir ../shared/data/MRPC]
        [--max_seq_length 128 --batch_size 32 --learning_rate 2e-5 --epochs 3.0]
        [--window_steps 5 --windows 3 --rounds 1] [--skip_full_run]

1. Speed. Both models start from the same weights (the embedded default: real
   all-MiniLM-L6-v2 in the original layout, mapped into keras-hub's `BertBackbone`; the same
   random classifier head), train on the same real MRPC train features (our
   `train.tf_record`), batch and sequence length. Ours is `bert_tf.training.loop.train`
   (AdamWeightDecay, clipping, the original schedule) as `run_classifier.py` runs it: once with
   every batch padded to `max_seq_length` (the same shapes as keras-hub) and once with batches
   cut to their longest row (our default; padding is masked, so the numbers do not change).
   keras-hub runs `model.fit` (AdamW, sparse cross-entropy, no XLA for either side). Each side
   trains `windows` windows of `window_steps` steps; the first window (tracing) is dropped and
   the best remaining window gives training examples/s (``--rounds`` repeats the three
   alternately).
2. Real run (unless --skip_full_run): `run_classifier` with the original MRPC recipe (train on
   train.tsv, evaluate dev.tsv) from the embedded default model; reports dev accuracy, F1 and
   the training examples/s of the whole run.

Prints the numbers and ratios and writes bench/results/classifier_training.json.
"""

import argparse
import json
import logging as py_logging
import os
import re
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import keras  # noqa: E402
import tensorflow as tf  # noqa: E402
from absl import logging  # noqa: E402

from bert_tf import defaults  # noqa: E402
from bert_tf.bert.config import BertConfig  # noqa: E402
from bert_tf.data import classifier as data  # noqa: E402
from bert_tf.data import classifier_records  # noqa: E402
from bert_tf.data.classifier_processors import MrpcProcessor  # noqa: E402
from bert_tf.data.tfrecord import read_examples  # noqa: E402
from bert_tf.bert.tasks import classifier  # noqa: E402
from bert_tf.bert.classifier import BertClassifier, classifier_loss  # noqa: E402
from bert_tf.tokenization.wordpiece import FullTokenizer  # noqa: E402
from bert_tf import checkpoint_io  # noqa: E402
from bert_tf.atomic_files import atomic_write_text  # noqa: E402
from bert_tf.training import loop  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DATA = os.path.join(HERE, "..", "..", "shared", "data", "MRPC")
_RATE = re.compile(r"examples/sec = ([0-9.]+)")


class RateLog(py_logging.Handler):
    """Collects the `examples/sec = X` numbers of the training loop's progress lines."""

    def __init__(self):
        super().__init__()
        self.rates = []

    def emit(self, record):
        m = _RATE.search(record.getMessage())
        if m:
            self.rates.append(float(m.group(1)))


def keras_hub_weights(ckpt, config: BertConfig, head_weights, head_bias):
    """Original-layout arrays -> keras-hub BertBackbone/BertTextClassifier weight paths."""
    n, h = config.num_attention_heads, config.hidden_size
    d = h // n
    g = ckpt.get_tensor
    out = {
        "token_embedding/embeddings": g("bert/embeddings/word_embeddings"),
        "position_embedding/embeddings": g("bert/embeddings/position_embeddings"),
        "segment_embedding/embeddings": g("bert/embeddings/token_type_embeddings"),
        "embeddings_layer_norm/gamma": g("bert/embeddings/LayerNorm/gamma"),
        "embeddings_layer_norm/beta": g("bert/embeddings/LayerNorm/beta"),
        "pooled_dense/kernel": g("bert/pooler/dense/kernel"),
        "pooled_dense/bias": g("bert/pooler/dense/bias"),
        "logits/kernel": np.asarray(head_weights).T,
        "logits/bias": np.asarray(head_bias),
    }
    for i in range(config.num_hidden_layers):
        src, dst = f"bert/encoder/layer_{i}/", f"transformer_layer_{i}/"
        for name in ("query", "key", "value"):
            out[dst + f"self_attention_layer/{name}/kernel"] = g(
                src + f"attention/self/{name}/kernel").reshape(h, n, d)
            out[dst + f"self_attention_layer/{name}/bias"] = g(
                src + f"attention/self/{name}/bias").reshape(n, d)
        out[dst + "self_attention_layer/attention_output/kernel"] = g(
            src + "attention/output/dense/kernel").reshape(n, d, h)
        out[dst + "self_attention_layer/attention_output/bias"] = g(
            src + "attention/output/dense/bias")
        for ours, theirs in (("attention/output/LayerNorm", "self_attention_layer_norm"),
                             ("output/LayerNorm", "feedforward_layer_norm")):
            out[dst + theirs + "/gamma"] = g(src + ours + "/gamma")
            out[dst + theirs + "/beta"] = g(src + ours + "/beta")
        for ours, theirs in (("intermediate/dense", "feedforward_intermediate_dense"),
                             ("output/dense", "feedforward_output_dense")):
            out[dst + theirs + "/kernel"] = g(src + ours + "/kernel")
            out[dst + theirs + "/bias"] = g(src + ours + "/bias")
    return out


def build_keras_hub(config, weights):
    import keras_hub

    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size, dropout=config.hidden_dropout_prob)
    model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None,
                                                dropout=0.1)
    seen = set()
    for w in model.weights:
        if w.path not in weights:
            raise KeyError(f"no source for keras-hub weight {w.path}")
        w.assign(weights[w.path])
        seen.add(w.path)
    missing = set(weights) - seen
    if missing:
        raise KeyError(f"unused weights: {sorted(missing)}")
    return model


def time_ours(config, model_files, train_file, args, trim, rate_log):
    with tempfile.TemporaryDirectory(prefix="bench_clf_") as out_dir:
        model = BertClassifier(config, 2).build_with_dummy_input()
        steps = args.window_steps * args.windows

        def loss_fn(m, features, labels):
            return classifier_loss(m(features, training=True)["logits"], labels)[0]

        rate_log.rates.clear()
        loop.train(model, loss_fn,
                   classifier_records.train_dataset_fn(train_file, args.max_seq_length,
                                                       args.batch_size, trim=trim),
                   model.name_map(), loop.TrainConfig(
                       out_dir, steps, learning_rate=args.learning_rate,
                       num_warmup_steps=int(steps * 0.1),
                       init_checkpoint=model_files.init_checkpoint, save_checkpoints_steps=0,
                       log_every_n_steps=args.window_steps))
        rates = list(rate_log.rates[1:])  # the first window includes tracing
    return max(rates), rates


def time_keras_hub(model, arrays, labels, args):
    n = (args.windows * args.window_steps + 1) * args.batch_size
    idx = np.arange(n) % len(labels)
    x = {"token_ids": arrays["input_ids"][idx], "padding_mask": arrays["input_mask"][idx],
         "segment_ids": arrays["segment_ids"][idx]}
    ds = tf.data.Dataset.from_tensor_slices((x, labels[idx])).shuffle(100, seed=1).repeat() \
        .batch(args.batch_size, drop_remainder=True)
    model.compile(optimizer=keras.optimizers.AdamW(args.learning_rate, weight_decay=0.01,
                                                   epsilon=1e-6, global_clipnorm=1.0),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=False)
    times = []

    class Timer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.t = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            times.append(time.perf_counter() - self.t)

    model.fit(ds, epochs=args.windows, steps_per_epoch=args.window_steps, verbose=0,
              callbacks=[Timer()])
    rates = [args.window_steps * args.batch_size / t for t in times[1:]]
    return max(rates), rates


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--data_dir", default=DEFAULT_DATA)
    p.add_argument("--max_seq_length", type=int, default=128)
    p.add_argument("--batch_size", type=int, default=32)
    p.add_argument("--learning_rate", type=float, default=2e-5)
    p.add_argument("--epochs", type=float, default=3.0)
    p.add_argument("--window_steps", type=int, default=5)
    p.add_argument("--windows", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1,
                   help="repeat the (padded, keras-hub, trimmed) timing trio; best of each")
    p.add_argument("--skip_full_run", action="store_true",
                   help="time only (the output JSON keeps its previous full_run entry)")
    p.add_argument("--output_dir", default=None, help="for the full run (default: a temp dir)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "classifier_training.json"))
    args = p.parse_args(argv)

    logging.set_verbosity(logging.INFO)
    rate_log = RateLog()
    logging.get_absl_logger().addHandler(rate_log)
    model_files = defaults.default_model()
    config = BertConfig.from_json_file(model_files.bert_config_file)
    tokenizer = FullTokenizer(model_files.vocab_file, do_lower_case=True)
    results = {"threads": os.cpu_count(),
               "device": tf.config.list_logical_devices()[-1].device_type,
               "model": defaults.MODEL_NAME, "max_seq_length": args.max_seq_length,
               "batch_size": args.batch_size, "learning_rate": args.learning_rate}

    work = tempfile.mkdtemp(prefix="bench_clf_data_")
    train_file = os.path.join(work, "train.tf_record")
    examples = MrpcProcessor().get_train_examples(args.data_dir)
    data.file_based_convert_examples_to_features(examples, ["0", "1"], args.max_seq_length,
                                                 tokenizer, train_file)
    records = list(read_examples(train_file))
    arrays = {k: np.array([r[k] for r in records], np.int32)
              for k in ("input_ids", "input_mask", "segment_ids")}
    labels = np.array([r["label_ids"][0] for r in records], np.int32)
    lengths = arrays["input_mask"].sum(axis=1)
    results["train_examples"] = len(records)
    results["mean_tokens"] = float(lengths.mean())

    # Same random head for both: ours initialised, copied into keras-hub.
    keras.utils.set_random_seed(0)
    head = BertClassifier(config, 2).build_with_dummy_input()
    ckpt = tf.train.load_checkpoint(model_files.init_checkpoint)
    hub = build_keras_hub(config, keras_hub_weights(
        ckpt, config, head.head.output_weights.numpy(), head.head.output_bias.numpy()))
    checkpoint_io.assign_from_checkpoint(head.name_map(), model_files.init_checkpoint)
    probe = {k: v[:8] for k, v in arrays.items()}
    ours_pooled = head.bert(probe)["pooled_output"].numpy()
    hub_pooled = hub.backbone({"token_ids": probe["input_ids"], "padding_mask": probe["input_mask"],
                               "segment_ids": probe["segment_ids"]})["pooled_output"].numpy()
    # Same weights, same (tanh) GELU: the two encoders agree to float32 rounding.
    results["pooled_output_max_abs_diff_vs_keras_hub"] = float(
        np.abs(ours_pooled - hub_pooled).max())

    ours_fixed_all, hub_all, ours_trim_all = [], [], []
    for _ in range(max(1, args.rounds)):  # alternate, so machine noise hits all three alike
        ours_fixed_all += time_ours(config, model_files, train_file, args, False, rate_log)[1]
        hub_all += time_keras_hub(hub, arrays, labels, args)[1]
        ours_trim_all += time_ours(config, model_files, train_file, args, True, rate_log)[1]
    ours_fixed, hub_rate, ours_trim = max(ours_fixed_all), max(hub_all), max(ours_trim_all)
    results.update({
        "ours_padded_examples_per_s": ours_fixed, "ours_padded_windows": ours_fixed_all,
        "ours_trimmed_examples_per_s": ours_trim, "ours_trimmed_windows": ours_trim_all,
        "keras_hub_examples_per_s": hub_rate, "keras_hub_windows": hub_all,
        "ratio_ours_padded_over_keras_hub": ours_fixed / hub_rate,
        "ratio_ours_trimmed_over_keras_hub": ours_trim / hub_rate,
    })
    print(f"MRPC train ({len(records)} examples, mean {lengths.mean():.1f} tokens), batch "
          f"{args.batch_size}, length {args.max_seq_length}, {results['threads']} CPU threads")
    print(f"  pooled output vs keras-hub, same weights: max |diff| "
          f"{results['pooled_output_max_abs_diff_vs_keras_hub']:.2e}")
    print(f"  bert_tf padded to {args.max_seq_length}: {ours_fixed:8.2f} examples/s")
    print(f"  bert_tf trimmed (default): {ours_trim:8.2f} examples/s")
    print(f"  keras-hub BertTextClassifier.fit: {hub_rate:8.2f} examples/s")
    print(f"  ratio padded / keras-hub = {results['ratio_ours_padded_over_keras_hub']:.2f}, "
          f"trimmed / keras-hub = {results['ratio_ours_trimmed_over_keras_hub']:.2f}")

    if not args.skip_full_run:
        output_dir = args.output_dir or tempfile.mkdtemp(prefix="bench_mrpc_")
        rate_log.rates.clear()
        start = time.time()
        run = classifier.run(classifier.ClassifierArgs(
            task_name="MRPC", do_train=True, do_eval=True, data_dir=args.data_dir,
            output_dir=output_dir, max_seq_length=args.max_seq_length,
            train_batch_size=args.batch_size, learning_rate=args.learning_rate,
            num_train_epochs=args.epochs))
        seconds = time.time() - start
        ev = run.eval_results
        results["full_run"] = {
            "output_dir": output_dir, "num_train_steps": run.num_train_steps,
            "epochs": args.epochs, "seconds": seconds,
            "eval_accuracy": float(ev["eval_accuracy"]), "eval_loss": float(ev["eval_loss"]),
            "eval_f1": run.eval_extra.get("eval_f1"), "global_step": int(ev["global_step"]),
            "dev_examples": run.num_eval_examples,
            "train_examples_per_s_windows": list(rate_log.rates),
            "examples_per_s_overall_incl_setup_and_eval": (run.num_train_steps * args.batch_size /
                                          max(1e-9, seconds)),
        }
        print(f"full run: {run.num_train_steps} steps in {seconds / 60:.1f} min; MRPC dev "
              f"accuracy {ev['eval_accuracy']:.4f}, F1 {run.eval_extra.get('eval_f1', 0):.4f}, "
              f"eval_loss {ev['eval_loss']:.4f}")

    elif os.path.exists(args.out):
        with open(args.out) as f:
            previous = json.load(f).get("full_run")
        if previous:
            results["full_run"] = previous
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    atomic_write_text(args.out, json.dumps(results, indent=2) + "\n")
    return results


if __name__ == "__main__":
    main(sys.argv[1:])
