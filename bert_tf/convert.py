"""Convert a Hugging Face BERT folder to an original BERT checkpoint folder.

    python -m bert_tf.convert --hf_dir <folder with config.json, model.safetensors, vocab.txt> \
        --out_dir <folder> [--extra_npz head.npz] [--hidden_act=source]

writes ``bert_model.ckpt.index``, ``bert_model.ckpt.data-00000-of-00001``, ``bert_config.json``
and ``vocab.txt`` in the layout of the original release's archives (spec `bert.md` 3.1), so the
original scripts and ours load them. ``--extra_npz`` adds arrays under their npz key as
top-level variables (e.g. a classifier head's `output_weights` / `output_bias`).

``--hidden_act``: ``original`` (default) writes the activation the original code runs (HF's
exact ``"gelu"`` becomes the original ``"gelu"``, the tanh form); ``source`` keeps the source
model's own: HF ``"gelu"`` is written as ``"gelu_exact"``, a value the original code rejects,
which bert_tf runs as the exact erf GELU (then outputs equal HF / sentence-transformers'),
and the converter says so in one log line.

Every file is written atomically; an existing output folder is updated file by file.
"""

import argparse
import json
import os
import shutil
import sys
from typing import Optional

import numpy as np
from absl import logging

from bert_tf.bert.config import GELU_EXACT
from bert_tf.bert.hf_mapping import convert_hf_config, convert_hf_weights
from bert_tf.errors import BertTfError, ConfigError, OutputPathError
from bert_tf.atomic_files import atomic_write_text
from bert_tf.checkpoint_io import write_checkpoint

CHECKPOINT_NAME = "bert_model.ckpt"
HIDDEN_ACT_CHOICES = ("original", "source")


def convert_hf_folder(hf_dir: str, out_dir: str, extra_npz: Optional[str] = None,
                      hidden_act: str = "original") -> str:
    """Converts ``hf_dir`` into an original-layout folder ``out_dir``.

    Args:
      hidden_act: ``original`` (the original's activation, tanh GELU) or ``source`` (the HF
        model's own; exact GELU as ``"gelu_exact"``, logged), see the module docstring.

    Returns:
      The checkpoint prefix ``<out_dir>/bert_model.ckpt``.

    Raises:
      ConfigError: a missing or malformed input file (names it), or a tensor without an
        original name.
      ValueError: another ``hidden_act``.
    """
    from safetensors.numpy import load_file

    if hidden_act not in HIDDEN_ACT_CHOICES:
        raise ValueError(f"hidden_act={hidden_act!r}: expected one of {HIDDEN_ACT_CHOICES}")

    config_path = os.path.join(hf_dir, "config.json")
    weights_path = os.path.join(hf_dir, "model.safetensors")
    vocab_path = os.path.join(hf_dir, "vocab.txt")
    for path in (config_path, weights_path, vocab_path):
        if not os.path.isfile(path):
            raise ConfigError(f"{path}: not found (a HF BERT folder needs config.json, "
                              f"model.safetensors and vocab.txt)")
    try:
        with open(config_path, encoding="utf-8") as f:
            hf_config = json.load(f)
    except (OSError, ValueError) as e:
        raise ConfigError(f"{config_path}: cannot read JSON ({e})") from e
    config = convert_hf_config(hf_config, source=config_path,
                               keep_source_activation=hidden_act == "source")
    if config.hidden_act == GELU_EXACT:
        logging.warning("--hidden_act=source: %s has the exact (erf) GELU; bert_config.json "
                        "says hidden_act=%r, which bert_tf runs as such and the original BERT "
                        "code rejects (its \"gelu\" is the tanh form)", config_path, GELU_EXACT)
    try:
        tensors = load_file(weights_path)
    except Exception as e:
        raise ConfigError(f"{weights_path}: cannot read safetensors ({e})") from e
    arrays, _ = convert_hf_weights(tensors, source=weights_path)
    check_weights_fit_config(arrays, config, weights_path, config_path)
    if extra_npz:
        try:
            with np.load(extra_npz) as extra:
                for key in extra.files:
                    arrays[key] = np.ascontiguousarray(extra[key].astype(np.float32))
        except (OSError, ValueError) as e:
            raise ConfigError(f"{extra_npz}: cannot read npz ({e})") from e
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"--out_dir={out_dir}: cannot create it ({e.strerror or e})") from e
    prefix = write_checkpoint(os.path.join(out_dir, CHECKPOINT_NAME), arrays)
    atomic_write_text(os.path.join(out_dir, "bert_config.json"), config.to_json_string())
    tmp_vocab = os.path.join(out_dir, ".tmp-vocab.txt")
    shutil.copyfile(vocab_path, tmp_vocab)
    os.replace(tmp_vocab, os.path.join(out_dir, "vocab.txt"))
    return prefix


def check_weights_fit_config(arrays, config, weights_path: str, config_path: str) -> None:
    """Checks the converted tensors against the model the config describes.

    The `bert/*` tensors must be exactly the variables of a :class:`BertModel` built from
    ``config``, with their shapes (the same name table the loader uses).

    Raises:
      ConfigError: a missing or extra variable, or a shape mismatch (names the variable, both
        shapes and both files).
    """
    from bert_tf.bert.checkpoint_map import bert_model_map
    from bert_tf.bert.model import BertModel

    expected = {name: tuple(v.shape) for name, v in
                bert_model_map(BertModel(config).build_with_dummy_input()).items()}
    missing = [n for n in expected if n not in arrays]
    if missing:
        raise ConfigError(
            f"{config_path} describes variables that {weights_path} lacks: "
            f"{', '.join(missing[:4])}{', ...' if len(missing) > 4 else ''} ({len(missing)} in all; "
            f"num_hidden_layers={config.num_hidden_layers})")
    extra = [n for n in arrays if n.startswith("bert/") and n not in expected]
    if extra:
        raise ConfigError(
            f"{weights_path} has variables that {config_path} does not describe: "
            f"{', '.join(extra[:4])}{', ...' if len(extra) > 4 else ''} ({len(extra)} in all; "
            f"num_hidden_layers={config.num_hidden_layers})")
    for name, shape in expected.items():
        if tuple(arrays[name].shape) != shape:
            raise ConfigError(f"{weights_path}: {name} has shape {list(arrays[name].shape)} but "
                              f"{config_path} implies {list(shape)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bert_tf.convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf_dir", required=True, help="HF BERT folder (config.json, model.safetensors, vocab.txt)")
    parser.add_argument("--out_dir", required=True, help="output folder for the original layout")
    parser.add_argument("--extra_npz", default=None, help="npz of extra top-level variables (e.g. a head)")
    parser.add_argument("--hidden_act", choices=HIDDEN_ACT_CHOICES, default="original",
                        help="original: the activation the original code runs (HF's exact "
                             "gelu becomes the tanh gelu); source: keep the model's own (exact "
                             "gelu written as gelu_exact, which the original code rejects)")
    args = parser.parse_args(argv)
    try:
        prefix = convert_hf_folder(args.hf_dir, args.out_dir, args.extra_npz, args.hidden_act)
    except BertTfError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {prefix}.index, {prefix}.data-00000-of-00001, "
          f"{os.path.join(args.out_dir, 'bert_config.json')}, {os.path.join(args.out_dir, 'vocab.txt')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
