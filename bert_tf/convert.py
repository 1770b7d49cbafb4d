"""Convert weights between the original BERT / XLNet layout, Hugging Face and keras-hub.

    python -m bert_tf.convert --hf_dir <folder with config.json, model.safetensors, vocab.txt> \
        --out_dir <folder> [--extra_npz head.npz] [--hidden_act=source]
    python -m bert_tf.convert --from original --to hf --in_dir <original folder> --out_dir <folder>
    python -m bert_tf.convert --from original --to keras_hub --in_dir <original folder> --out_dir <folder>
    python -m bert_tf.convert --from keras_hub --to original --in_dir <preset folder> --out_dir <folder>

HF -> original (the default, `--hf_dir`) writes ``bert_model.ckpt.index``,
``bert_model.ckpt.data-00000-of-00001``, ``bert_config.json`` and ``vocab.txt`` in the layout of
the original release's archives (spec `bert.md` 3.1), so the original scripts and ours load
them; a HF XLNet folder (``model_type`` xlnet) gives ``xlnet_model.ckpt`` + ``xlnet_config.json``.
``--extra_npz`` adds arrays under their npz key as top-level variables (e.g. a classifier head's
`output_weights` / `output_bias`). Original -> HF writes ``config.json``, ``model.safetensors``
(+ ``vocab.txt``, ``tokenizer_config.json`` for BERT, ``spiece.model`` for XLNet); original <->
keras-hub reads/writes a `BertBackbone` preset folder. Name tables: `bert/hf_mapping.py`,
`bert/hf_export.py`, `bert/keras_hub_mapping.py`, `xlnet/hf_mapping.py`.

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

from bert_tf.errors import BertTfError, ConfigError, OutputPathError

# TensorFlow-importing modules (bert.config, bert.hf_mapping, checkpoint_io) are imported in the
# functions that use them, so that `python -m bert_tf.convert --help` and flag errors answer
# at once instead of after TensorFlow's start-up (about 9 s on 2 cores).

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
    from bert_tf.bert.config import GELU_EXACT
    from bert_tf.bert.hf_mapping import convert_hf_config, convert_hf_weights
    from bert_tf.checkpoint_io import write_checkpoint

    if hidden_act not in HIDDEN_ACT_CHOICES:
        raise ValueError(f"hidden_act={hidden_act!r}: expected one of {HIDDEN_ACT_CHOICES}")

    config_path = os.path.join(hf_dir, "config.json")
    weights_path = os.path.join(hf_dir, "model.safetensors")
    vocab_path = os.path.join(hf_dir, "vocab.txt")
    for path in (config_path, weights_path, vocab_path):
        if not os.path.isfile(path):
            raise ConfigError(f"{path}: not found (a HF BERT folder needs config.json, "
                              f"model.safetensors and vocab.txt)")
    hf_config = _read_json(config_path)
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
    check_finite_weights(arrays, weights_path if not extra_npz else f"{weights_path} (or "
                                                                    f"{extra_npz})")
    return _write_outputs(
        out_dir, [(os.path.join(out_dir, "bert_config.json"), _text_file(config.to_json_string())),
                  (os.path.join(out_dir, "vocab.txt"), _copy_file(vocab_path))],
        last=lambda: write_checkpoint(os.path.join(out_dir, CHECKPOINT_NAME), arrays))


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


BERT_CONFIG = "bert_config.json"
XLNET_CONFIG = "xlnet_config.json"
XLNET_CHECKPOINT_NAME = "xlnet_model.ckpt"
SPIECE_MODEL = "spiece.model"
KERAS_HUB_VOCAB = os.path.join("assets", "tokenizer", "vocabulary.txt")


def _read_json(path: str) -> dict:
    """A JSON object (a config) from ``path``; ConfigError naming it when it is missing, not
    JSON, or not an object (a JSON list, a number)."""
    if not os.path.isfile(path):
        raise ConfigError(f"{path}: not found")
    from bert_tf.json_files import read_json_object  # imports TensorFlow: not for --help
    return read_json_object(path, "config")


def _make_out_dir(out_dir: str) -> None:
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"--out_dir={out_dir}: cannot create it ({e.strerror or e})") from e


def _copy_file(src: str):
    """A writer for :func:`_write_outputs`: copies ``src`` to the temporary path."""
    return lambda tmp: shutil.copyfile(src, tmp)


def _json_file(obj):
    """A writer for :func:`_write_outputs`: ``obj`` as sorted, indented JSON."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(obj, indent=2, sort_keys=True) + "\n")
    return write


def _text_file(text: str):
    """A writer for :func:`_write_outputs`: ``text`` as UTF-8."""
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return write


def _safetensors_file(tensors):
    """A writer for :func:`_write_outputs`: ``model.safetensors`` with the ``{"format":
    "pt"}`` metadata that `transformers` requires; the safetensors package alone, no torch."""
    def write(tmp):
        from safetensors.numpy import save_file
        save_file(dict(tensors), tmp, metadata={"format": "pt"})
    return write


def _write_outputs(out_dir: str, items, last=None):
    """Writes a conversion's files together or not at all (bert_tf: a full disk gave a
    SafetensorError traceback and left some files written, others not).

    Each ``(path, write)`` of ``items`` is written by ``write(tmp)`` to a temporary file beside
    ``path``; then ``last()`` runs (a checkpoint writer, itself atomic) and its result is
    returned; only then are the temporary files renamed into place. On an error no file of
    ``items`` is replaced, and an ``out_dir`` this call created is removed again when empty.

    Raises:
      OutputPathError: a write failed (a full disk; names the file,
        :func:`bert_tf.atomic_files.write_error`) or ``out_dir`` cannot be created.
      CheckpointError: from ``last``.
    """
    import contextlib
    from bert_tf.atomic_files import atomic_path, write_error
    created = not os.path.isdir(out_dir)
    _make_out_dir(out_dir)
    try:
        with contextlib.ExitStack() as stack:
            for path, write in items:
                tmp = stack.enter_context(atomic_path(path))
                try:
                    write(tmp)
                except Exception as e:  # OSError; safetensors' own error on a full disk
                    raise write_error(path, e) from e
            return last() if last is not None else None
    except BaseException:
        if created:
            try:
                os.rmdir(out_dir)
            except OSError:
                pass
        raise


def original_family(in_dir: str) -> str:
    """``"bert"`` or ``"xlnet"``: which config an original-layout folder holds.

    Raises:
      ConfigError: neither `bert_config.json` nor `xlnet_config.json`, or both (names the folder).
    """
    has = [n for n in (BERT_CONFIG, XLNET_CONFIG) if os.path.isfile(os.path.join(in_dir, n))]
    if len(has) != 1:
        raise ConfigError(f"--in_dir={in_dir}: expected one of {BERT_CONFIG} or {XLNET_CONFIG} "
                          f"there, found {has or 'neither'}")
    return "bert" if has[0] == BERT_CONFIG else "xlnet"


def _read_original(in_dir: str, checkpoint: Optional[str], default_name: str):
    from bert_tf.checkpoint_io import is_optimizer_entry, read_checkpoint, resolve_prefix
    prefix = resolve_prefix(checkpoint or os.path.join(in_dir, default_name))
    arrays = read_checkpoint(prefix, include_optimizer=True)
    check_finite_weights({n: a for n, a in arrays.items() if not is_optimizer_entry(n)}, prefix)
    return prefix, arrays


def check_finite_weights(arrays, source: str) -> None:
    """Refuses weights holding a NaN or an infinity before anything is written (bert_tf: a
    conversion copied them, exit 0, where run_classifier refuses such a checkpoint).

    Raises:
      CheckpointError: ``<source>: <name> holds nan (N non-finite values) ...``.
    """
    from bert_tf.errors import CheckpointError
    for name, value in arrays.items():
        value = np.asarray(value)
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            bad = ~np.isfinite(value)
            raise CheckpointError(f"{source}: {name} holds {value[bad][0]} ({int(bad.sum())} "
                                  "non-finite values): not a usable checkpoint (saved from a "
                                  "diverged run?); nothing was written")


def _read_bert_original(in_dir: str, checkpoint: Optional[str], do_lower_case: bool):
    """(config, prefix, arrays, vocab path) of an original BERT folder, checked."""
    from bert_tf.bert.config import BertConfig
    from bert_tf.tokenization.wordpiece import check_vocab_matches_case, load_vocab
    config_path = os.path.join(in_dir, BERT_CONFIG)
    vocab_path = os.path.join(in_dir, "vocab.txt")
    if not os.path.isfile(vocab_path):
        raise ConfigError(f"{vocab_path}: not found (an original BERT folder holds "
                          f"bert_config.json, vocab.txt and bert_model.ckpt)")
    config = BertConfig.from_json_file(config_path)
    prefix, arrays = _read_original(in_dir, checkpoint, CHECKPOINT_NAME)
    from bert_tf.checkpoint_io import is_optimizer_entry
    check_weights_fit_config({n: a for n, a in arrays.items() if not is_optimizer_entry(n)},
                             config, prefix, config_path)
    vocab = load_vocab(vocab_path)
    if len(vocab) != config.vocab_size:
        raise ConfigError(f"{vocab_path}: {len(vocab)} tokens but {config_path} has vocab_size "
                          f"{config.vocab_size}")
    check_vocab_matches_case(vocab, do_lower_case, vocab_path)
    return config, prefix, arrays, vocab_path


def original_to_hf(in_dir: str, out_dir: str, checkpoint: Optional[str] = None,
                   do_lower_case: bool = True):
    """Original BERT or XLNet folder -> Hugging Face folder.

    BERT (`bert_config.json`, `vocab.txt`, `bert_model.ckpt`): writes `config.json`
    (`hidden_act` ``"gelu_new"`` for the original's tanh GELU), `model.safetensors` (the
    architecture follows the heads, see `bert_tf/bert/hf_export.py`), `vocab.txt` and
    `tokenizer_config.json` (``do_lower_case``). XLNet (`xlnet_config.json`,
    `xlnet_model.ckpt`, optional `spiece.model`): `config.json` and `model.safetensors` of
    an `XLNetModel`, `spiece.model` copied when present.

    Args:
      in_dir: the original folder.
      out_dir: output folder (created; files replaced one by one, each atomically).
      checkpoint: checkpoint prefix or folder (default ``<in_dir>/bert_model.ckpt`` or
        ``<in_dir>/xlnet_model.ckpt``).
      do_lower_case: BERT tokenizer casing (the original's flag; refused for a cased vocab).

    Returns:
      (list of written paths, list of checkpoint names left out).

    Raises:
      ConfigError, CheckpointError: missing file, unreadable config/checkpoint, a variable
        without a HF name, a shape that does not fit the config (names the variable).
    """
    if original_family(in_dir) == "xlnet":
        return _xlnet_original_to_hf(in_dir, out_dir, checkpoint)
    from bert_tf.bert.hf_export import convert_original_weights, hf_config_dict, hf_tokenizer_config
    config, prefix, arrays, vocab_path = _read_bert_original(in_dir, checkpoint, do_lower_case)
    tensors, arch, skipped = convert_original_weights(arrays, source=prefix)
    num_labels = arrays["output_weights"].shape[0] if "output_weights" in arrays else 2
    hf_config = hf_config_dict(config, arch, num_labels, source=os.path.join(in_dir, BERT_CONFIG))
    written = [os.path.join(out_dir, n) for n in
               ("model.safetensors", "config.json", "vocab.txt", "tokenizer_config.json")]
    _write_outputs(out_dir, zip(written, (
        _safetensors_file(tensors), _json_file(hf_config), _copy_file(vocab_path),
        _json_file(hf_tokenizer_config(do_lower_case, config.max_position_embeddings)))))
    return written, skipped


def _xlnet_original_to_hf(in_dir: str, out_dir: str, checkpoint: Optional[str]):
    from bert_tf.xlnet.config import XLNetConfig
    from bert_tf.xlnet.hf_mapping import convert_original_weights, hf_config_dict
    config_path = os.path.join(in_dir, XLNET_CONFIG)
    config = XLNetConfig.from_json_file(config_path)
    hf_config = hf_config_dict(config, source=config_path)
    prefix, arrays = _read_original(in_dir, checkpoint, XLNET_CHECKPOINT_NAME)
    tensors, left_out = convert_original_weights(arrays, config, source=prefix)
    written = [os.path.join(out_dir, "model.safetensors"), os.path.join(out_dir, "config.json")]
    writers = [_safetensors_file(tensors), _json_file(hf_config)]
    spiece = os.path.join(in_dir, SPIECE_MODEL)
    if os.path.isfile(spiece):
        written.append(os.path.join(out_dir, SPIECE_MODEL))
        writers.append(_copy_file(spiece))
    _write_outputs(out_dir, zip(written, writers))
    return written, left_out


def hf_xlnet_to_original(hf_dir: str, out_dir: str):
    """HF `XLNetModel` folder (`config.json`, `model.safetensors`, optional `spiece.model`) ->
    original `xlnet_config.json` + `xlnet_model.ckpt` (+ `spiece.model`).

    Returns:
      list of written paths.

    Raises:
      ConfigError: missing/unreadable file, a config or tensor the original cannot hold.
    """
    from safetensors.numpy import load_file
    from bert_tf.xlnet.hf_mapping import convert_hf_weights, xlnet_config_from_hf
    from bert_tf.checkpoint_io import write_checkpoint
    config_path = os.path.join(hf_dir, "config.json")
    weights_path = os.path.join(hf_dir, "model.safetensors")
    config = xlnet_config_from_hf(_read_json(config_path), source=config_path)
    if not os.path.isfile(weights_path):
        raise ConfigError(f"{weights_path}: not found")
    try:
        tensors = load_file(weights_path)
    except Exception as e:
        raise ConfigError(f"{weights_path}: cannot read safetensors ({e})") from e
    arrays = convert_hf_weights(tensors, config, source=weights_path)
    check_finite_weights(arrays, weights_path)
    items = [(os.path.join(out_dir, XLNET_CONFIG), _text_file(config.to_json_string()))]
    spiece = os.path.join(hf_dir, SPIECE_MODEL)
    if os.path.isfile(spiece):
        items.append((os.path.join(out_dir, SPIECE_MODEL), _copy_file(spiece)))
    prefix = _write_outputs(out_dir, items, last=lambda: write_checkpoint(
        os.path.join(out_dir, XLNET_CHECKPOINT_NAME), arrays))
    return [prefix + ".index", prefix + ".data-00000-of-00001"] + [path for path, _ in items]


def _move_tree(src: str, dst: str, written) -> None:
    for root, _, files in os.walk(src):
        rel = os.path.relpath(root, src)
        target_dir = os.path.normpath(os.path.join(dst, rel))
        os.makedirs(target_dir, exist_ok=True)
        for f in files:
            os.replace(os.path.join(root, f), os.path.join(target_dir, f))
            written.append(os.path.join(target_dir, f))


def original_to_keras_hub(in_dir: str, out_dir: str, checkpoint: Optional[str] = None,
                          do_lower_case: bool = True):
    """Original BERT folder -> keras-hub preset folder of a `BertBackbone` + `BertTokenizer`.

    Writes what `save_to_preset` writes (`config.json`, `model.weights.h5`, `metadata.json`,
    `tokenizer.json`, `assets/tokenizer/vocabulary.txt`); load it with
    ``keras_hub.models.BertBackbone.from_preset(out_dir)``. The preset is saved into a
    temporary folder inside ``out_dir`` and its files then renamed into place.

    Returns:
      (list of written paths, list of checkpoint names left out: heads and optimizer state,
      which a `BertBackbone` does not hold).

    Raises:
      ConfigError, CheckpointError: as :func:`original_to_hf`, or a config keras-hub cannot
        express (see `keras_hub_config`).
    """
    import tempfile
    import keras_hub
    from bert_tf.bert.keras_hub_mapping import keras_hub_config, original_to_keras_hub as to_kh
    if original_family(in_dir) != "bert":
        raise ConfigError(f"--in_dir={in_dir}: keras-hub conversion is for BERT folders "
                          f"(bert_config.json); this is XLNet")
    config, prefix, arrays, vocab_path = _read_bert_original(in_dir, checkpoint, do_lower_case)
    kh_config = keras_hub_config(config, source=os.path.join(in_dir, BERT_CONFIG))
    weights = to_kh(arrays, config, source=prefix)
    left_out = sorted(n for n in arrays if not n.startswith("bert/"))
    backbone = keras_hub.models.BertBackbone(**kh_config)
    for w in backbone.weights:
        w.assign(weights[w.path])
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab_path, lowercase=do_lower_case)
    from bert_tf.atomic_files import write_error
    _make_out_dir(out_dir)
    written = []
    with tempfile.TemporaryDirectory(prefix=".tmp-keras-hub-", dir=out_dir) as tmp:
        try:  # into the temporary folder: a full disk leaves out_dir as it was
            backbone.save_to_preset(tmp)
            tokenizer.save_to_preset(tmp)
        except Exception as e:  # OSError, h5py's errors
            raise write_error(out_dir, e) from e
        _move_tree(tmp, out_dir, written)
    return sorted(written), left_out


def keras_hub_to_original(in_dir: str, out_dir: str):
    """keras-hub `BertBackbone` preset folder -> original BERT folder (`bert_model.ckpt`,
    `bert_config.json`, `vocab.txt` from the preset's `assets/tokenizer/vocabulary.txt`).

    `bert_config.json` has what the backbone knows: `hidden_act` "gelu", both dropouts its
    `dropout`, `initializer_range` 0.02 (see `bert_tf/bert/keras_hub_mapping.py`).

    Returns:
      list of written paths.

    Raises:
      ConfigError: no preset there, not a BertBackbone, no vocabulary, or weights that do not
        fit the table (names the file or the weight).
    """
    import keras_hub
    from bert_tf.bert.keras_hub_mapping import bert_config_from_keras_hub, keras_hub_to_original as to_orig
    from bert_tf.checkpoint_io import write_checkpoint
    config_path = os.path.join(in_dir, "config.json")
    kh = _read_json(config_path)
    if kh.get("class_name") != "BertBackbone":
        raise ConfigError(f"{config_path}: class_name {kh.get('class_name')!r}, expected "
                          f"'BertBackbone' (a keras-hub BERT preset folder)")
    vocab_path = os.path.join(in_dir, KERAS_HUB_VOCAB)
    if not os.path.isfile(vocab_path):
        raise ConfigError(f"{vocab_path}: not found (save the BertTokenizer to the preset too)")
    config = bert_config_from_keras_hub(kh.get("config", {}), source=config_path)
    try:
        backbone = keras_hub.models.BertBackbone.from_preset(in_dir)
    except Exception as e:
        raise ConfigError(f"--in_dir={in_dir}: keras-hub cannot load this preset "
                          f"({type(e).__name__}: {e})") from e
    arrays = to_orig({w.path: w.numpy() for w in backbone.weights}, config.num_hidden_layers,
                     source=in_dir)
    check_finite_weights(arrays, in_dir)
    items = [(os.path.join(out_dir, BERT_CONFIG), _text_file(config.to_json_string())),
             (os.path.join(out_dir, "vocab.txt"), _copy_file(vocab_path))]
    prefix = _write_outputs(out_dir, items, last=lambda: write_checkpoint(
        os.path.join(out_dir, CHECKPOINT_NAME), arrays))
    return [prefix + ".index", prefix + ".data-00000-of-00001"] + [path for path, _ in items]


DIRECTIONS = (("hf", "original"), ("original", "hf"), ("original", "keras_hub"),
              ("keras_hub", "original"))


def _bool(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bert_tf.convert", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hf_dir", default=None, help="HF BERT or XLNet folder (config.json, model.safetensors[, vocab.txt]); "
                        "the same as --from=hf --in_dir")
    parser.add_argument("--out_dir", required=True, help="output folder")
    parser.add_argument("--extra_npz", default=None, help="npz of extra top-level variables (e.g. a head); HF BERT -> original only")
    parser.add_argument("--from", dest="source", default="hf", choices=("hf", "original", "keras_hub"),
                        help="layout of the input folder (default hf)")
    parser.add_argument("--to", dest="target", default="original", choices=("original", "hf", "keras_hub"),
                        help="layout to write (default original)")
    parser.add_argument("--in_dir", default=None, help="input folder (original: bert_config.json + vocab.txt + "
                        "bert_model.ckpt, or xlnet_config.json + xlnet_model.ckpt; keras_hub: a BertBackbone preset)")
    parser.add_argument("--checkpoint", default=None, help="original checkpoint prefix (default <in_dir>/bert_model.ckpt "
                        "or xlnet_model.ckpt)")
    parser.add_argument("--do_lower_case", type=_bool, default=True,
                        help="tokenizer casing written for --to=hf / keras_hub (default true, as the original)")
    parser.add_argument("--hidden_act", choices=HIDDEN_ACT_CHOICES, default="original",
                        help="HF BERT -> original: original: the activation the original code "
                             "runs (HF's exact gelu becomes the tanh gelu); source: keep the "
                             "model's own (exact gelu written as gelu_exact, which the original "
                             "code rejects)")
    args = parser.parse_args(argv)
    try:
        if args.hf_dir is not None:
            if args.source != "hf" or args.in_dir is not None:
                raise ConfigError("--hf_dir is the input of --from=hf; give --in_dir for other layouts")
            args.in_dir = args.hf_dir
        if args.in_dir is None:
            raise ConfigError("give the input folder: --in_dir (or --hf_dir for a HF folder)")
        if (args.source, args.target) not in DIRECTIONS:
            raise ConfigError(f"--from={args.source} --to={args.target}: not a conversion (known: "
                              f"{', '.join(f'{a}->{b}' for a, b in DIRECTIONS)})")
        if args.hidden_act != "original" and (args.source, args.target) != ("hf", "original"):
            raise ConfigError("--hidden_act is for --from=hf --to=original only")
        if args.extra_npz and (args.source, args.target) != ("hf", "original"):
            raise ConfigError("--extra_npz is for --from=hf --to=original only")
        if not os.path.isdir(args.in_dir):
            in_flag = "--hf_dir" if args.hf_dir is not None else "--in_dir"
            raise ConfigError(f"{in_flag}={args.in_dir}: not a folder")
        left_out = []
        if args.source == "hf":
            hf_config_path = os.path.join(args.in_dir, "config.json")
            model_type = (_read_json(hf_config_path).get("model_type")
                          if os.path.isfile(hf_config_path) else None)
            if model_type not in (None, "", "bert", "xlnet"):  # bert_tf: it converted as BERT
                raise ConfigError(f"{hf_config_path}: model_type {model_type!r} is neither BERT "
                                  "nor XLNet; the original code runs only these")
            if model_type == "xlnet":
                if args.extra_npz:
                    raise ConfigError("--extra_npz is for BERT folders")
                written = hf_xlnet_to_original(args.in_dir, args.out_dir)
            else:
                prefix = convert_hf_folder(args.in_dir, args.out_dir, args.extra_npz,
                                           args.hidden_act)
                written = [f"{prefix}.index", f"{prefix}.data-00000-of-00001",
                           os.path.join(args.out_dir, "bert_config.json"),
                           os.path.join(args.out_dir, "vocab.txt")]
        elif args.target == "hf":
            written, left_out = original_to_hf(args.in_dir, args.out_dir, args.checkpoint,
                                               args.do_lower_case)
        elif args.target == "keras_hub":
            written, left_out = original_to_keras_hub(args.in_dir, args.out_dir, args.checkpoint,
                                                      args.do_lower_case)
        else:
            written = keras_hub_to_original(args.in_dir, args.out_dir)
    except BertTfError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # as the root scripts (flags.run_main): one line, exit 130; the
        print("interrupted", file=sys.stderr)  # temporary files were removed on the way out
        return 130
    print(f"wrote {', '.join(written)}")
    if left_out:
        print(f"not converted ({len(left_out)}, no counterpart in --to={args.target}): "
              f"{', '.join(left_out[:6])}{', ...' if len(left_out) > 6 else ''}")
    return 0


if __name__ == "__main__":
    import signal
    # SIGTERM unwinds like Ctrl-C (exit 143), so no temporary file is left (as flags.run_main)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    sys.exit(main())
