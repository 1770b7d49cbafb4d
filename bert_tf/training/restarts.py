"""``--num_restarts``: N fine-tunings from one checkpoint, their statistics and the best one
(bert_tf, beyond the original; issue 26).

The original README: "small sets like MRPC have a high variance in dev set accuracy, even
when starting from the same pre-training checkpoint. If you re-run multiple times (making sure
to point to different output_dir), you should see results between 84% and 88%"; the BERT paper
picks the best of several restarts on the dev set for small tasks. :func:`run_restarts` does
that in one command:

* restart ``k`` (0-based) is the task's own run (``run_one``) with ``--output_dir
  <output_dir>/restart-<k>``, ``--seed <seed + k>`` (``--seed`` unset: ``k``), training and
  evaluation only (run_classifier: ``--do_eval``; run_squad: ``--do_predict`` on a
  ``--predict_file`` with answers). Its metrics (run_classifier: ``eval_results.txt`` and
  ``eval_f1``; run_squad: ``eval_results.json``'s) are written last, to
  ``restart-<k>/restart_metrics.txt``. Each restart is resumable: one with that file is done
  and read back; one killed in training resumes from its newest ``model.ckpt-N`` (the
  training loop's rule), one killed after training evaluates its last checkpoint;
* then ``<output_dir>/restarts_summary.txt`` (and ``.json``): per restart its seed and metrics,
  per metric the mean, the sample standard deviation (n - 1; 0 for one restart), min and max
  over the restarts, and the best restart by ``--select_metric``;
* the best restart's last checkpoint is copied to ``<output_dir>/model.ckpt-best``
  (``.index`` and ``.data-*``, each renamed into place when complete), and ``--do_predict``
  / ``--export_dir`` run once more with it as ``--init_checkpoint`` in ``<output_dir>``.
"""

import dataclasses
import json
import math
import os
from typing import Any, Callable, Dict, List, Optional

from absl import logging

from bert_tf import checkpoint_io
from bert_tf.atomic_files import atomic_write_text
from bert_tf.atomic_files import make_output_dir
from bert_tf.errors import FlagError

SUMMARY_FILE = "restarts_summary.txt"
SUMMARY_JSON = "restarts_summary.json"
RESTART_METRICS = "restart_metrics.txt"
BEST_CHECKPOINT = "model.ckpt-best"


def restart_dir(output_dir: str, k: int) -> str:
    """``<output_dir>/restart-<k>``."""
    return os.path.join(output_dir, f"restart-{k}")


def read_results(path: str) -> Dict[str, float]:
    """``key = value`` lines (``eval_results.txt``) -> key -> float (``nan`` kept).

    Raises:
      FlagError: a line that is not ``key = number`` (names the file and line).
    """
    out = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            key, sep, value = line.partition(" = ")
            try:
                out[key.strip()] = float(value)
            except ValueError:
                sep = ""
            if not sep:
                raise FlagError(f"{path}:{number}: not a 'key = number' line: {line.strip()!r}")
    return out


def higher_is_better(metric: str) -> bool:
    """False for a loss (a key ending in ``loss``), True for the rest."""
    return not metric.endswith("loss")


def summarize(runs: List[Dict[str, float]]) -> Dict[str, Dict[str, float]]:
    """metric -> ``{"mean", "std", "min", "max", "n"}`` over the runs that have it (``std``:
    sample standard deviation, n - 1 in the denominator; 0.0 for one run)."""
    keys = sorted({k for run in runs for k in run})
    out = {}
    for key in keys:
        values = [run[key] for run in runs if key in run]
        n = len(values)
        mean = sum(values) / n
        var = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0
        out[key] = {"mean": mean, "std": math.sqrt(var), "min": min(values),
                    "max": max(values), "n": n}
    return out


def best_run(runs: List[Dict[str, float]], metric: str) -> int:
    """Index of the best run by ``metric`` (the first of equals).

    Raises:
      FlagError: a run without ``metric`` (names the metrics it has).
    """
    for k, run in enumerate(runs):
        if metric not in run:
            raise FlagError(f"--select_metric={metric}: restart-{k} has no such metric "
                            f"(it has {', '.join(sorted(run))})")
    sign = 1.0 if higher_is_better(metric) else -1.0
    return max(range(len(runs)), key=lambda k: (sign * runs[k][metric], -k))


def copy_checkpoint(prefix: str, target: str) -> None:
    """Copies the checkpoint ``prefix`` (``.index`` and every ``.data-*``) to ``target``,
    each file written under a temporary name and renamed into place (the index last)."""
    import tensorflow as tf  # the copy reads and writes through tf.io.gfile (GCS, local)
    folder = os.path.dirname(prefix)
    base = os.path.basename(prefix)
    names = sorted(n for n in tf.io.gfile.listdir(folder) if n.startswith(base + ".data-"))
    for name in names + [base + ".index"]:
        suffix = name[len(base):]
        temp = target + suffix + ".tmp"
        tf.io.gfile.copy(os.path.join(folder, name), temp, overwrite=True)
        tf.io.gfile.rename(temp, target + suffix, overwrite=True)


def _format_summary(seeds: List[int], runs: List[Dict[str, float]],
                    stats: Dict[str, Dict[str, float]], metric: str, best: int) -> str:
    lines = [f"restarts = {len(runs)}", f"select_metric = {metric}",
             f"best = restart-{best} (seed {seeds[best]}, {metric} = {runs[best][metric]!r})"]
    for key, s in stats.items():
        lines.append(f"{key}: mean = {s['mean']!r}, std = {s['std']!r}, min = {s['min']!r}, "
                     f"max = {s['max']!r}, n = {s['n']}")
    for k, (seed, run) in enumerate(zip(seeds, runs)):
        values = ", ".join(f"{key} = {value!r}" for key, value in sorted(run.items()))
        lines.append(f"restart-{k} (seed {seed}): {values}")
    return "\n".join(lines) + "\n"


@dataclasses.dataclass
class RestartsResult:
    """What :func:`run_restarts` did.

    Attributes:
      seeds: the seed of each restart; runs: each restart's metrics (key -> float);
      stats: :func:`summarize` of ``runs``; select_metric, best: the metric and the index
      of the best restart; best_checkpoint: ``<output_dir>/model.ckpt-best``;
      final: the task's result of the predict / export run with it (or None).
    """

    seeds: List[int]
    runs: List[Dict[str, float]]
    stats: Dict[str, Dict[str, float]]
    select_metric: str
    best: int
    best_checkpoint: str
    summary_file: str
    final: Optional[Any] = None

    def summary_lines(self) -> List[str]:
        """The summary printed by the root script: per metric mean +- std (min..max), the best
        restart, then the final run's own lines."""
        lines = [f"{k}: {s['mean']:.6f} +- {s['std']:.6f} (min {s['min']:.6f}, max "
                 f"{s['max']:.6f}) over {s['n']} restarts" for k, s in self.stats.items()]
        lines.append(f"best: restart-{self.best} by {self.select_metric} -> "
                     f"{self.best_checkpoint} (summary: {self.summary_file})")
        if self.final is not None:
            lines += self.final.summary_lines()
        return lines


def run_restarts(args: Any, run_one: Callable[[Any], Any], headline: str,
                 metrics_of: Callable[[Any], Dict[str, float]], eval_flag: str = "do_eval",
                 restart_flags: Optional[Dict[str, Any]] = None,
                 final_flags: Optional[Dict[str, Any]] = None) -> RestartsResult:
    """Runs ``args.num_restarts`` fine-tunings, summarizes them, keeps the best (module doc).

    Args:
      args: the task's argument dataclass (``output_dir``, ``seed``, ``num_restarts``,
        ``select_metric``, ``do_train``, ``do_predict``, ``export_dir``, ``init_checkpoint``
        and ``eval_flag``).
      run_one: the task's ``run(args) -> result`` for one fine-tuning.
      headline: the task's default ``--select_metric`` (``eval_accuracy``...).
      metrics_of: result -> metric name -> float, of one restart's evaluation.
      eval_flag: the flag that evaluates on the dev set (``do_eval``; run_squad:
        ``do_predict``), required.
      restart_flags: fields set on each restart's arguments besides ``output_dir``, ``seed``
        (run_classifier: ``do_predict=False``); ``export_dir`` is always unset there.
      final_flags: fields of the last run with ``model.ckpt-best`` as ``init_checkpoint``
        (run_classifier: ``do_train=False, do_eval=False``); it runs when
        ``args.do_predict`` or ``args.export_dir``.

    Returns:
      a :class:`RestartsResult`.

    Raises:
      FlagError: ``--num_restarts`` < 2 or without ``--do_train`` and ``--do_eval``; a
        ``--select_metric`` the runs do not have. The task's own errors, as ``run_one``.
    """
    n = int(args.num_restarts)
    if n < 2 or not (args.do_train and getattr(args, eval_flag)):
        raise FlagError(f"--num_restarts={n}: needs at least 2 restarts and --do_train "
                        f"--{eval_flag} (the restarts are compared on the dev set)")
    base = int(args.seed) if args.seed is not None else 0
    metric = args.select_metric or headline
    make_output_dir(args.output_dir, files=(SUMMARY_FILE, SUMMARY_JSON, BEST_CHECKPOINT + ".index"),
                    folders=tuple(os.path.basename(restart_dir(args.output_dir, k))
                                  for k in range(n)))
    seeds, runs = [], []
    for k in range(n):
        folder, seed = restart_dir(args.output_dir, k), base + k
        seeds.append(seed)
        done = os.path.join(folder, RESTART_METRICS)
        if os.path.exists(done):
            logging.info("restart-%d (seed %d) is done: reading %s", k, seed, done)
        else:
            logging.info("***** restart-%d of %d, seed %d, in %s *****", k, n, seed, folder)
            _clear_session(k)
            sub = dataclasses.replace(args, **{**(restart_flags or {}), "output_dir": folder,
                                               "seed": seed, "num_restarts": 1,
                                               "export_dir": None})
            metrics = metrics_of(run_one(sub))
            atomic_write_text(done, "".join(f"{key} = {float(value)!r}\n" for key, value in
                                            sorted(metrics.items())))
        runs.append(read_results(done))
    best = best_run(runs, metric)
    stats = summarize(runs)
    summary_file = os.path.join(args.output_dir, SUMMARY_FILE)
    best_checkpoint = os.path.join(args.output_dir, BEST_CHECKPOINT)
    copy_checkpoint(checkpoint_io.existing_checkpoints(restart_dir(args.output_dir, best))[-1],
                    best_checkpoint)
    atomic_write_text(os.path.join(args.output_dir, SUMMARY_JSON), json.dumps(
        {"seeds": seeds, "runs": runs, "stats": stats, "select_metric": metric, "best": best},
        indent=1, sort_keys=True) + "\n")
    atomic_write_text(summary_file, _format_summary(seeds, runs, stats, metric, best))
    logging.info("restarts summary: %s; best restart-%d by %s copied to %s", summary_file,
                 best, metric, best_checkpoint)
    result = RestartsResult(seeds, runs, stats, metric, best, best_checkpoint, summary_file)
    if args.do_predict or args.export_dir:
        _clear_session(1)
        final = dataclasses.replace(args, **{**(final_flags or {}),
                                             "init_checkpoint": best_checkpoint,
                                             "do_train": False, "num_restarts": 1,
                                             "seed": seeds[best]})
        result.final = run_one(final)
    return result


def _clear_session(k: int) -> None:
    if k:  # the previous restart's models and traced functions are not needed any more
        import keras
        keras.backend.clear_session()
