"""The process of every entry point: :func:`run_main` and what it does around ``main``.

Flag parsing with a bad flag as one ``error:`` line (:func:`parse_flags`), help that exits 0
(:func:`asks_for_help`), one-line endings for errors, interruptions and an unwritable standard
output (the stdout guard), the output locks and the sweep of stale temporary files of the
output folders (:func:`locked_outputs`, :func:`output_folders`), the removal of the empty
folders a failed run created (:func:`absent_output_folders`), and the exit without the
interpreter's teardown (:func:`exit_without_teardown`).
"""

import gc
import os
import posixpath
import re
import signal
import sys
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

from absl import app, flags

from bert_tf import stop_requests
from bert_tf.atomic_files import remove_stale_temp_files
from bert_tf.errors import BertTfError, FlagError, StdoutWriteError
from bert_tf.glibc_malloc import MALLOC_ENV, tune_malloc  # noqa: F401 (MALLOC_ENV: re-export)
from bert_tf.library_pages import release_startup_pages
from bert_tf.flags.arguments import flag_is_set
from bert_tf.output_locks import output_locks

FLAGS = flags.FLAGS


def run_main(main: Callable[[Any], Any],
             skip_teardown: Union[bool, Callable[[], bool]] = False) -> None:
    """Runs ``main`` under absl, with one-line endings for errors and interruptions.

    ``skip_teardown``: after a successful ``main`` (exit status 0), end the process with
    :func:`exit_without_teardown` instead of the interpreter's teardown (bert_tf, issue 16:
    with TensorFlow loaded, finalizing its modules and objects was ~1 s CPU of every run).
    Only for scripts whose outputs are all closed (renamed into place) when ``main`` returns;
    error exits keep the normal teardown (SIGTERM and Ctrl-C exits skip it, see below). A callable is asked after ``main``
    returned (the flags parsed), e.g. ``lambda: not FLAGS.do_train`` for the runs that only
    predict or evaluate.

    * a positional argument (the scripts take flags only) is a :class:`FlagError`
      (:func:`check_no_positional_arguments`);
    * a :class:`BertTfError` prints ``error: <message>`` and exits 1; output folders
      (:data:`OUTPUT_FOLDER_FLAGS`) that the failed run created and left empty are removed
      (bert_tf: the originals left them behind);
    * before ``main``, each output the command line names (:func:`locked_outputs`) is locked
      (:mod:`bert_tf.output_locks`: a second run on the same output fails with one line),
      and the temporary files that killed runs left in the output folders
      (:func:`output_folders`) are removed, said in one line (issue 15 item 5);
    * standard output that cannot be written (``> /dev/full``, a closed pipe) is one
      ``error: cannot write to standard output (...)`` line, exit 1, not a traceback
      (bert_tf); ``sys.stdout`` is flushed before ``main`` counts as done;
    * an allocation that fails outside the training loop (which says more,
      ``bert_tf.training.loop.OutOfMemoryError``), e.g. a config whose weights do not fit, is
      one ``error:`` line naming the config flag and the sizes (:func:`out_of_memory_line`);
    * Ctrl-C prints ``interrupted`` and exits 130; SIGTERM prints ``terminated (SIGTERM)`` and
      exits 143. Both unwind normally, so
      the temporary files of atomic outputs are removed and a training loop saves the step it
      stopped at (:func:`bert_tf.training.loop.train`), the checkpoint a re-run resumes
      from, then end without the interpreter's teardown
      (:data:`SIGNAL_EXITS`). Both also reach a training loop inside its ``tf.function``
      (:mod:`bert_tf.stop_requests`): it stops after the running step instead of finishing
      its ``iterations_per_loop`` chunk first (tens of seconds);

    * an unknown flag or a bad flag value is one ``error:`` line, exit 1 (:func:`parse_flags`);
    * ``--help``, ``--helpshort``, ``--helpfull`` (and ``-?``) print absl's usage and exit 0
      (absl itself exits 1 after printing it, which made ``script --help && ...`` fail);
    * glibc's allocator keeps freed memory of up to 256 MB for reuse (:func:`tune_malloc`);
    * the shared-library pages only TensorFlow's start-up touched are handed back
      (:func:`bert_tf.library_pages.release_startup_pages`; ``BERT_TF_KEEP_LIBRARY_PAGES=1``
      keeps them).

    Use at the bottom of every root script: ``if __name__ == "__main__": run_main(main)``.
    """

    tune_malloc()
    release_startup_pages()

    def _on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    def _wrapped(argv):
        signal.signal(signal.SIGTERM, _on_sigterm)
        stop_requests.watch((signal.SIGTERM, signal.SIGINT))
        absent = absent_output_folders(FLAGS)
        stdout = sys.stdout
        sys.stdout = _StdoutGuard(stdout)
        try:
            check_no_positional_arguments(argv)
            check_outputs_are_not_inputs(FLAGS)
            with output_locks(locked_outputs(FLAGS)):
                for folder in output_folders(FLAGS):
                    remove_stale_temp_files(folder)
                result = main(argv)
                sys.stdout.flush()
                return result
        except BertTfError as e:
            if isinstance(e, StdoutWriteError):
                _discard_stdout(stdout)
            remove_empty_new_folders(absent)
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)
        except (KeyboardInterrupt, RuntimeError) as e:  # RuntimeError: a signal inside TF's C++
            stop = stop_requests.signal_exit_of(e)
            if stop is None:
                raise
            if isinstance(stop, KeyboardInterrupt):
                print("interrupted", file=sys.stderr)
                sys.exit(130)
            raise stop from None
        except Exception as e:  # an allocation failed outside training (e.g. at model build)
            if not is_out_of_memory(e):
                raise
            remove_empty_new_folders(absent)
            print(f"error: {out_of_memory_line(e, FLAGS)}", file=sys.stderr)
            sys.exit(1)
        finally:
            if isinstance(sys.stdout, _StdoutGuard):
                sys.stdout = stdout

    try:
        app.run(_wrapped, flags_parser=parse_flags)
    except SystemExit as e:
        if e.code == 1 and asks_for_help(sys.argv):
            sys.exit(0)
        if e.code in (None, 0) and _wants_skip(skip_teardown):
            exit_without_teardown(0)
        if e.code in SIGNAL_EXITS:  # unwound: every output closed or removed
            if e.code == 128 + signal.SIGTERM:  # as Ctrl-C's "interrupted"
                print("terminated (SIGTERM)", file=sys.stderr)
            exit_without_teardown(e.code)
        raise


# The exit statuses of run_main's SIGTERM and Ctrl-C endings: reached once main has unwound
# (atomic outputs renamed or their temporary files removed, locks released, logs flushed),
# they end without the interpreter's teardown of TensorFlow, which after a training call cut
# short by the signal (bert_tf.stop_requests) sometimes waited 10-33 s with every thread
# asleep (bench/bench_sigterm_exit.py and its instrumented copies, MiniLM on MRPC, 2-vCPU
# EPYC: 8 of 29 cut runs; 0 of 9 uncut ones). The cause was not pinned down (five TensorFlow
# threads stayed alive, no CPU used).
SIGNAL_EXITS = (128 + signal.SIGTERM, 130)


def relax_startup_gc() -> None:
    """Collects Python's youngest generation every 100,000 allocations instead of 700
    (bert_tf, issue 16): importing TensorFlow and building the Keras model allocate millions
    of objects and few cycles; ~0.3 s CPU of an ``extract_features.py`` start-up, and 815
    collections (0.64-0.69 s) of a 400-pair ``run_classifier.py --do_predict`` become 9
    (0.13-0.16 s). Nothing else changes. Call before TensorFlow is imported (the root scripts:
    right after importing :mod:`bert_tf.flags`, which does not import it)."""
    gc.set_threshold(100_000, 50, 100)


def _wants_skip(skip_teardown: Union[bool, Callable[[], bool]]) -> bool:
    """``run_main``'s ``skip_teardown`` answered; a callable that fails (flags not parsed)
    answers False: the normal teardown."""
    if not callable(skip_teardown):
        return bool(skip_teardown)
    try:
        return bool(skip_teardown())
    except Exception:  # e.g. absl's UnparsedFlagAccessError
        return False


# The config flags of the families, and the size keys an out-of-memory line quotes from them.
_CONFIG_FLAGS = ("bert_config_file", "albert_config_file", "model_config_path")
_SIZE_KEYS = ("vocab_size", "n_token", "hidden_size", "d_model", "embedding_size",
              "intermediate_size", "d_inner", "num_hidden_layers", "n_layer",
              "max_position_embeddings")


def is_out_of_memory(error: BaseException) -> bool:
    """True for ``MemoryError`` and TensorFlow's ``ResourceExhaustedError`` (told by name:
    this module does not import TensorFlow)."""
    return isinstance(error, MemoryError) or type(error).__name__ == "ResourceExhaustedError"


def out_of_memory_line(error: BaseException, flag_values: Any) -> str:
    """The one line of an allocation failure outside training: what failed (the first line of
    TensorFlow's message), the config flag given and its size keys, the levers.

    A config file's sizes (a ``vocab_size`` of 3e9, an ``intermediate_size`` of 1e12) are the
    usual cause before any batch runs (issue 27: a ResourceExhaustedError traceback)."""
    import json
    first = (str(error).strip().splitlines() or [type(error).__name__])[0][:200]
    where = ""
    for name in _CONFIG_FLAGS:
        path = getattr(flag_values, name, None) if name in flag_values else None
        if path:
            try:
                with open(path, encoding="utf-8") as f:
                    config = json.load(f)
                sizes = ", ".join(f"{k}={config[k]}" for k in _SIZE_KEYS if k in config)
            except (OSError, ValueError, AttributeError, TypeError):
                sizes = ""
            where = f"; --{name}={path}" + (f" ({sizes})" if sizes else "")
            break
    return (f"out of memory ({type(error).__name__}: {first}){where}: the model or batch does "
            "not fit this machine; check the config's sizes, or lower --max_seq_length and "
            "the batch size")


class _StdoutGuard:
    """``sys.stdout`` during :func:`run_main`'s ``main``: a write or flush that fails with an
    ``OSError`` (``> /dev/full``, a closed pipe) raises :class:`StdoutWriteError` (one
    ``error:`` line) instead of a traceback; everything else is the wrapped stream's."""

    def __init__(self, stream):
        self._stream = stream

    def _guarded(self, name, *args):
        try:
            return getattr(self._stream, name)(*args)
        except OSError as e:
            raise StdoutWriteError(
                f"cannot write to standard output ({e.strerror or e})") from e

    def write(self, text):
        return self._guarded("write", text)

    def writelines(self, lines):
        return self._guarded("writelines", lines)

    def flush(self):
        return self._guarded("flush")

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _discard_stdout(stream) -> None:
    """Points ``stream``'s file descriptor at ``os.devnull``, so that the exit's own flush of
    its unwritten buffer does not fail again (Python's "Exception ignored ... flushing
    sys.stdout", exit 120)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def exit_without_teardown(code: int = 0) -> None:
    """Ends the process now with ``code``: flushes Python's logging handlers (absl's
    included), ``sys.stdout`` and ``sys.stderr``, then ``os._exit`` (no ``atexit`` handlers,
    no module finalization). For a finished run whose files are already closed."""
    import logging as std_logging

    std_logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def parse_flags(argv: Sequence[str]) -> List[str]:
    """absl's flag parsing for :func:`run_main`, with a bad flag as one ``error:`` line.

    absl printed ``FATAL Flags parsing error: ...`` and a second line, unlike every other
    error of the scripts (issue 15: bad-input families). The help flags are answered inside
    parsing as before. A bad value names the flag, the value and what the flag takes
    (:func:`bad_value_message`: absl's own text was a Python tuple or ``int()``'s message,
    ``flag --use_bfloat16=maybe: ('Non-boolean argument to boolean flag', 'maybe')``); a value
    given to a ``--no<flag>`` (absl raised a plain ``ValueError``: a traceback) is one line too.

    Returns:
      the arguments left after the flags (program name first).

    Raises:
      SystemExit(1): an unknown flag or a bad value (the message names the flag; absl's
        "Did you mean" suggestion kept).
    """
    try:
        return FLAGS(list(argv))
    except flags.IllegalFlagValueError as e:
        message = bad_value_message(e, FLAGS)
    except flags.Error as e:
        message = " ".join(str(e).split())
    except ValueError as e:  # absl: "--nodo_train=1 does not take an argument"
        message = negated_value_message(str(e), FLAGS)
    print(f"error: {message} (--helpfull lists the flags)", file=sys.stderr)
    sys.exit(1)


def bad_value_message(error: BaseException, flag_values) -> str:
    """The one line of absl's ``IllegalFlagValueError`` for a value its parser rejects
    (``flag --<name>=<value>: <parser's reason>``): ``--<name>=<value>: `` and what the flag
    takes, by its type: ``not a boolean: write --<name>=true or --<name>=false``,
    ``not an integer``, ``not a number``, ``must be one of a, b, c``. Any other message
    (a flag validator's) is kept, on one line."""
    text = " ".join(str(error).split())
    match = re.match(r"flag --([A-Za-z0-9_.-]+)=", text)
    name = match.group(1) if match else None
    if name is None or name not in flag_values:
        return text.removeprefix("flag ")
    value = text[match.end():]
    reason = " ".join(str(error.__context__ or "").split())
    if reason and value.endswith(": " + reason):
        value = value[:-len(reason) - 2]
    fl = flag_values[name]
    kind = fl.flag_type()
    if fl.boolean:
        what = f"not a boolean: write --{name}=true or --{name}=false"
    elif kind == "int":
        what = "not an integer"
    elif kind == "float":
        what = "not a number"
    elif getattr(fl.parser, "enum_values", None):
        what = "must be one of " + ", ".join(fl.parser.enum_values)
    else:
        what = reason or text
    return f"--{name}={value}: {what}"


def negated_value_message(text: str, flag_values) -> str:
    """The one line of absl's ``ValueError`` ``--no<flag>=<v> does not take an argument``:
    names the flag and how to write the value (``--<flag>=false``)."""
    text = " ".join(text.split())
    match = re.match(r"-{1,2}no([A-Za-z0-9_.-]+)=.* does not take an argument$", text)
    if match and match.group(1) in flag_values:
        name = match.group(1)
        return (f"{text.removesuffix(' does not take an argument')}: --no{name} takes no "
                f"value (write --{name}=false or --no{name})")
    return text


HELP_FLAGS = ("help", "helpshort", "helpfull", "?")

# Folders a run creates for what it writes.
OUTPUT_FOLDER_FLAGS = ("output_dir", "model_dir", "predict_dir", "export_dir", "cached_dir",
                       "save_dir")


# Outputs locked for the run (:func:`locked_outputs`).
LOCKED_OUTPUT_FLAGS = ("output_file", "output_dir", "model_dir", "predict_dir", "save_dir")


def _flag_value(flag_values, name: str) -> Optional[str]:
    """The value of flag ``name`` if it is set (given or assigned), a non-empty str; else None.
    A default is not an output of this run: XLNet's ``--save_dir`` default
    ``proc_data/example`` is defined in ``create_pretraining_data.py``'s BERT runs too."""
    try:
        value = (flag_values[name].value
                 if name in flag_values and flag_is_set(flag_values, name) else None)
    except Exception:  # noqa: BLE001 - unparsed flags: nothing to lock or sweep
        value = None
    return value if isinstance(value, str) and value else None


def _flag_bool(flag_values, name: str) -> Optional[bool]:
    """The value of bool flag ``name`` (given or default), or None where it is not defined."""
    try:
        value = flag_values[name].value if name in flag_values else None
    except Exception:  # noqa: BLE001 - unparsed flags
        value = None
    return value if isinstance(value, bool) else None


def locked_outputs(flag_values) -> List[Tuple[str, str]]:
    """``(path, "--flag")`` for each output of :data:`LOCKED_OUTPUT_FLAGS` set in
    ``flag_values`` (each item of a comma-separated ``--output_file``), for
    :func:`bert_tf.output_locks.output_locks`.

    ``--output_dir`` is left out when ``--model_dir`` is set: in the XLNet scripts it holds
    only the cached TFRecords, which runs of one data set share (several fine-tunings at once
    with one cache is the original's usage) and which are written atomically with their
    fingerprint; the run's own outputs are in ``--model_dir``.

    A run with ``--do_train=False`` (evaluation or prediction only) does not lock its
    ``--output_dir`` / ``--model_dir``: it only reads checkpoints there and writes its result
    files atomically, so it may run beside the training that writes them (the original's
    evaluate-while-training usage, e.g. ALBERT's separate eval job).
    """
    outputs = []
    trains = _flag_bool(flag_values, "do_train")
    for name in LOCKED_OUTPUT_FLAGS:
        value = _flag_value(flag_values, name)
        if value is None or (name == "output_dir" and _flag_value(flag_values, "model_dir")):
            continue
        if name in ("output_dir", "model_dir") and trains is False:
            continue
        items = [v.strip() for v in value.split(",")] if name == "output_file" else [value]
        outputs.extend((item, f"--{name}") for item in items if item)
        if name == "output_file" and _pooling(flag_values) not in (None, "none"):
            # extract_features' derived <output_file>.embeddings.jsonl (and its .partial):
            # another run's --output_file there would replace it or share its .partial
            outputs.extend((f"{item}.embeddings.jsonl", "--output_file (its embeddings)")
                           for item in items if item)
    return outputs


def _input_files(flag_values) -> List[Tuple[str, str]]:
    """``(file, "--flag")`` for the local files ``--input_file`` (comma-separated files or
    globs) and ``--input_glob`` name (remote ones are left out)."""
    import glob as globs

    found = []
    for name in ("input_file", "input_glob"):
        value = _flag_value(flag_values, name)
        for item in (v.strip() for v in (value or "").split(",")):
            if item and "://" not in item:
                found.extend((f, f"--{name}") for f in sorted(globs.glob(item)) or [item])
    return found


def _same_file(a: str, b: str) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):  # symlinks, "./x" vs "x"
        return True
    try:
        return os.path.samefile(a, b)  # hard links
    except OSError:
        return False


def check_outputs_are_not_inputs(flag_values) -> None:
    """Refuses a run whose output would replace one of its inputs (bert_tf; the originals
    overwrote it): ``--output_file`` (each item, and extract_features' derived
    ``.embeddings.jsonl``) the same file as an ``--input_file`` item (also through a symlink
    or a hard link), or an ``--input_glob`` file that is XLNet's ``<save_dir>/corpus_info.json``
    or inside ``<save_dir>/tfrecords``; ``--export_dir`` the same path as an ``--output_file``.

    Raises:
      FlagError: names both flags and the file.
    """
    export_dir = _flag_value(flag_values, "export_dir")
    if export_dir and "://" not in export_dir:
        for path, out_flag in locked_outputs(flag_values):
            if out_flag.startswith("--output_file") and _same_file(path, export_dir):
                raise FlagError(f"--export_dir={export_dir} is the same path as {out_flag}="
                                f"{path}: the SavedModel folder would take the output's place")
    inputs = _input_files(flag_values)
    if not inputs:
        return
    outputs = [(p, flag) for p, flag in locked_outputs(flag_values)
               if flag.startswith("--output_file") and "://" not in p]
    for path, out_flag in outputs:
        for source, in_flag in inputs:
            if _same_file(path, source):
                raise FlagError(f"{out_flag}={path} is the same file as {in_flag} {source}: "
                                "the run would replace its own input")
    save_dir = _flag_value(flag_values, "save_dir")
    if save_dir and "://" not in save_dir:
        records = os.path.realpath(os.path.join(save_dir, "tfrecords")) + os.sep
        info = os.path.join(save_dir, "corpus_info.json")
        for source, in_flag in inputs:
            if os.path.realpath(source).startswith(records) or _same_file(source, info):
                raise FlagError(f"{in_flag} file {source} is one of the outputs of "
                                f"--save_dir={save_dir}: the run would replace its own input")


def _pooling(flag_values) -> Optional[str]:
    """The value of ``--pooling`` (given or default), or None where it is not defined."""
    try:
        value = flag_values["pooling"].value if "pooling" in flag_values else None
    except Exception:  # noqa: BLE001 - unparsed flags
        value = None
    return value if isinstance(value, str) else None


def output_folders(flag_values) -> List[str]:
    """The folders a run writes into, where killed runs may have left temporary files: the
    values of :data:`OUTPUT_FOLDER_FLAGS` and the folder of each ``--output_file`` item, each
    once, in that order."""
    folders: List[str] = []
    for name in OUTPUT_FOLDER_FLAGS + ("output_file",):
        value = _flag_value(flag_values, name)
        if value is None:
            continue
        if name == "output_file":
            items = [v.strip() for v in value.split(",") if v.strip()]
            paths = [posixpath.dirname(v) if "://" in v else os.path.dirname(os.path.abspath(v))
                     for v in items]
        else:
            paths = [value]
        folders.extend(p for p in paths if p not in folders)
    return folders


def absent_output_folders(flag_values) -> List[str]:
    """The local folders named by :data:`OUTPUT_FOLDER_FLAGS` in ``flag_values`` (parsed absl
    flags; others are skipped) that do not exist yet, with each of their missing parents,
    deepest first. Remote paths (``gs://``...) are left alone."""
    absent: List[str] = []
    for name in OUTPUT_FOLDER_FLAGS:
        try:
            value = flag_values[name].value if name in flag_values else None
        except Exception:  # noqa: BLE001 - unparsed flags: nothing to record
            value = None
        if not isinstance(value, str) or not value or "://" in value:
            continue
        path = os.path.abspath(value)
        while path not in absent and not os.path.exists(path):
            absent.append(path)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return sorted(absent, key=len, reverse=True)


def remove_empty_new_folders(absent: Sequence[str]) -> None:
    """Removes each folder of ``absent`` (:func:`absent_output_folders`, deepest first) that
    now exists and is empty; a folder that holds anything is kept."""
    for path in absent:
        try:
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)
        except OSError:
            pass


def check_no_positional_arguments(argv: Sequence[str]) -> None:
    """The scripts take flags only; the original ignored anything else, so a stray word (a
    value after a space, ``--output_dir /tmp/x``, or a line break lost in a copied command)
    silently changed nothing.

    Raises:
      FlagError: names the first stray argument.
    """
    stray = list(argv[1:])
    if stray:
        raise FlagError(f"unexpected argument {stray[0]!r}"
                        f"{f' (and {len(stray) - 1} more)' if len(stray) > 1 else ''}: the "
                        f"scripts take flags only, as --name=value")


def asks_for_help(argv: Sequence[str]) -> bool:
    """Whether ``argv`` (program name first) holds ``--help``, ``--helpshort``,
    ``--helpfull`` or ``-?`` (one or two dashes, ``=true`` allowed) before a ``--``."""
    for arg in argv[1:]:
        if arg == "--":
            return False
        name, _, value = arg.lstrip("-").partition("=")
        if arg.startswith("-") and name in HELP_FLAGS and value.lower() in ("", "true", "1"):
            return True
    return False
