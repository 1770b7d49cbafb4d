"""Issue 15's bad-input families tried again as a fresh user would: each case runs a root script
in a child process and is classified from its exit status and stderr.

    PYTHONPATH=$PWD python bench/bad_input_families.py [--only=name,...] [--timeout_s=240]

Classes: ``clear`` (an expected failure ends with one ``error:`` line naming the file/flag, or
an expected success prints the line that says what happened), ``traceback`` (a Python
traceback reached the user), ``hang`` (still running at the time limit), ``silent`` (rc 0 where
an error was due, or the line that must say what happened is missing), ``unclear`` (failed, but
without a one-line ``error:`` ending). Results: bench/results/bad_input_families.json.
Not a test: it takes minutes (each case imports TensorFlow in a child).
"""

import argparse
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
PY = sys.executable
WORK = "/tmp/bad_input_families"


def script(name, *args):
    return [PY, os.path.join(REPO, name), *args]


def model_dir():
    out = subprocess.run([PY, "-m", "bert_tf.defaults"], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=REPO), check=True)
    return out.stdout.strip().splitlines()[-1]


def setup(work, m):
    """Inputs of the cases under ``work``; ``m`` the default model folder."""
    os.makedirs(work, exist_ok=True)
    w = lambda p: os.path.join(work, p)  # noqa: E731
    with open(w("in.txt"), "w") as f:
        f.write("Who was Jim Henson ? ||| Jim Henson was a puppeteer\nhello world\n")
    with open(w("big_in.txt"), "w") as f:
        f.write("".join(f"line {i} of a longer input to embed\n" for i in range(6000)))
    open(w("empty_vocab.txt"), "w").close()
    with open(w("bad_config.json"), "w") as f:
        f.write('{"hidden_size": 384,')
    with open(w("huge_line.txt"), "w") as f:
        f.write(("the quick brown fox jumps over the lazy dog " * 70000) + "\n")  # 3 MB line
    with open(w("bad_utf8.txt"), "wb") as f:
        f.write(b"caf\xe9 ok\nplain\n")
    with open(w("bad_squad.json"), "w") as f:
        f.write('{"data": [{"title": "x", "paragraphs": [')
    # a prefixed copy of the default checkpoint (module/bert/..., as TF-Hub exports)
    import numpy as np  # noqa: F401
    import tensorflow as tf
    from bert_tf import checkpoint_io
    reader = tf.train.load_checkpoint(os.path.join(m, "bert_model.ckpt"))
    tensors = {f"module/{n}": reader.get_tensor(n)
               for n in reader.get_variable_to_shape_map()}
    os.makedirs(w("prefixed"), exist_ok=True)
    checkpoint_io.write_checkpoint(w("prefixed/bert_model.ckpt"), tensors)
    # a truncated checkpoint data file
    os.makedirs(w("truncated"), exist_ok=True)
    for name in ("bert_model.ckpt.index", "bert_model.ckpt.data-00000-of-00001"):
        shutil.copy(os.path.join(m, name), w(f"truncated/{name}"))
    data = w("truncated/bert_model.ckpt.data-00000-of-00001")
    with open(data, "r+b") as f:
        f.truncate(os.path.getsize(data) // 2)
    # MRPC / STS-B subsets (header + 24 rows)
    for task in ("MRPC", "STS-B"):
        os.makedirs(w(task), exist_ok=True)
        for split in ("train", "dev", "test"):
            with open(os.path.join(SHARED, task, f"{split}.tsv"), encoding="utf-8") as f:
                lines = f.readlines()[:25]
            with open(w(f"{task}/{split}.tsv"), "w", encoding="utf-8") as f:
                f.writelines(lines)
    # an STS-B row with a score outside 0-5
    os.makedirs(w("STS-B-bad"), exist_ok=True)
    for split in ("train", "dev", "test"):
        shutil.copy(w(f"STS-B/{split}.tsv"), w(f"STS-B-bad/{split}.tsv"))
    with open(w("STS-B-bad/train.tsv"), encoding="utf-8") as f:
        rows = f.read().splitlines()
    cols = rows[3].split("\t")
    cols[9] = "7.5"
    rows[3] = "\t".join(cols)
    with open(w("STS-B-bad/train.tsv"), "w", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")
    # pretraining records: one good file, one truncated
    subprocess.run(script("create_pretraining_data.py",
                          f"--input_file={SHARED}/pretraining/sample_text.txt",
                          f"--output_file={w('pt.tfrecord')}", f"--vocab_file={m}/vocab.txt",
                          "--max_seq_length=32", "--max_predictions_per_seq=5",
                          "--dupe_factor=1"), capture_output=True, check=True,
                   env=dict(os.environ, PYTHONPATH=REPO))
    shutil.copy(w("pt.tfrecord"), w("pt_truncated.tfrecord"))
    with open(w("pt_truncated.tfrecord"), "r+b") as f:
        f.truncate(os.path.getsize(w("pt.tfrecord")) - 37)
    os.makedirs(w("a_folder"), exist_ok=True)
    os.makedirs(w("readonly"), exist_ok=True)
    os.chmod(w("readonly"), 0o555)


def cases(work, m):
    w = lambda p: os.path.join(work, p)  # noqa: E731
    bert = [f"--vocab_file={m}/vocab.txt", f"--bert_config_file={m}/bert_config.json",
            f"--init_checkpoint={m}/bert_model.ckpt"]
    ef = lambda *a, out="ef.jsonl": script(  # noqa: E731
        "extract_features.py", f"--input_file={w('in.txt')}", f"--output_file={w(out)}",
        "--max_seq_length=16", "--layers=-1", *bert, *a)
    clf = lambda name, *a: script(  # noqa: E731
        "run_classifier.py", "--task_name=MRPC", f"--data_dir={w('MRPC')}",
        f"--output_dir={w('clf_' + name)}", "--max_seq_length=32", "--train_batch_size=8",
        "--num_train_epochs=1.0", *a)
    xl = [f"--spiece_model_file={SHARED}/xlnet/spiece.model",
          f"--model_config_path={REPO}/bert_tf/resources/xlnet_config.json"]
    dead = subprocess.run([PY, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    c = []
    add = lambda name, family, argv, expect, pattern, **kw: c.append(  # noqa: E731
        dict(name=name, family=family, argv=argv, expect=expect, pattern=pattern, **kw))
    # --- 1 silent random weights
    add("prefixed_ckpt_classifier", "prefixed checkpoint",
        clf("prefixed", "--do_train=true", f"--vocab_file={m}/vocab.txt",
            f"--bert_config_file={m}/bert_config.json",
            f"--init_checkpoint={w('prefixed/bert_model.ckpt')}"), "any",
        r"module/|prefix")
    add("prefixed_ckpt_extract", "prefixed checkpoint",
        ef(out="p.jsonl")[:-1] + [f"--init_checkpoint={w('prefixed/bert_model.ckpt')}"], "any",
        r"module/|prefix")
    add("xlnet_no_init_checkpoint", "XLNet from scratch",
        script("run_classifier.py", "--do_train=True", "--task_name=sts-b",
               f"--data_dir={w('STS-B')}", f"--output_dir={w('xl_out')}",
               f"--model_dir={w('xl_model')}", "--max_seq_length=32", "--train_batch_size=4",
               "--train_steps=2", "--num_core_per_host=1", "--is_regression=True", *xl),
        "ok", r"scratch")
    # --- 2 hang
    add("huge_line_pretraining_data", "huge line",
        script("create_pretraining_data.py", f"--input_file={w('huge_line.txt')}",
               f"--output_file={w('huge.tfrecord')}", f"--vocab_file={m}/vocab.txt",
               "--dupe_factor=1"), "ok", r"")
    # --- 3 tracebacks
    add("truncated_ckpt_extract", "truncated checkpoint",
        ef(out="t.jsonl")[:-1] + [f"--init_checkpoint={w('truncated/bert_model.ckpt')}"],
        "error", r"bert_model.ckpt")
    add("truncated_ckpt_classifier", "truncated checkpoint",
        clf("trunc", "--do_train=true", f"--vocab_file={m}/vocab.txt",
            f"--bert_config_file={m}/bert_config.json",
            f"--init_checkpoint={w('truncated/bert_model.ckpt')}"), "error", r"bert_model.ckpt")
    add("truncated_tfrecord_pretraining", "truncated TFRecord",
        script("run_pretraining.py", f"--input_file={w('pt_truncated.tfrecord')}",
               f"--output_dir={w('pt_out')}", "--do_train=True",
               f"--bert_config_file={m}/bert_config.json", "--train_batch_size=4",
               "--max_seq_length=32", "--max_predictions_per_seq=5", "--num_train_steps=50"),
        "error", r"pt_truncated.tfrecord")
    add("empty_vocab_extract", "empty vocab",
        ef(out="v.jsonl")[:-3] + [f"--vocab_file={w('empty_vocab.txt')}",
                                  f"--bert_config_file={m}/bert_config.json",
                                  f"--init_checkpoint={m}/bert_model.ckpt"],
        "error", r"empty_vocab.txt")
    add("empty_vocab_pretraining_data", "empty vocab",
        script("create_pretraining_data.py", f"--input_file={w('in.txt')}",
               f"--output_file={w('ev.tfrecord')}", f"--vocab_file={w('empty_vocab.txt')}"),
        "error", r"empty_vocab.txt")
    # --- 5 outputs
    add("two_runs_same_output", "two runs same output",
        ef(out="two.jsonl")[:1] + [ef(out="two.jsonl")[1],
                                   f"--input_file={w('big_in.txt')}"] + ef(out="two.jsonl")[3:],
        "error", r"another run \(pid \d+\)", concurrent=True)
    add("stale_lock_taken_over", "kill -9 (lock)", ef(out="lock.jsonl"), "ok",
        r"took over the lock of pid", pre=("lock", w(".lock.jsonl.bert_tf-lock"), dead))
    add("stale_tmp_swept", "kill -9 (temp file)", ef(out="sweep/o.jsonl"), "ok",
        r"removed 1 stale temporary file", pre=("tmp", w(f"sweep/.tmp-{dead}-abc"), "x" * 5000))
    add("kill9_extract_resume", "kill -9 (resume)",
        ef(out="k9.jsonl")[:1] + [ef(out="k9.jsonl")[1], f"--input_file={w('big_in.txt')}"]
        + ef(out="k9.jsonl")[3:], "ok", r"resuming .* after \d+ lines", kill9=w("k9.jsonl"))
    # --- 6 help
    for s in ("run_classifier.py", "extract_features.py", "run_squad.py", "run_pretraining.py",
              "create_pretraining_data.py", "run_race.py"):
        for flag in ("--help", "--helpfull"):
            add(f"help_{s}_{flag}", "help", script(s, flag), "ok", r"--helpfull|flags",
                max_s=3.0)
    # --- 10 likely mistakes
    add("stray_positional", "stray positional", ef("/tmp/x"), "error", r"unexpected argument")
    add("stray_space_value", "stray positional", script("run_classifier.py", "--output_dir",
                                                         "/tmp/x"), "error", r"unexpected|output_dir")
    add("stsb_score_out_of_range", "STS-B score outside 0-5",
        script("run_classifier.py", "--task_name=sts-b", f"--data_dir={w('STS-B-bad')}",
               f"--output_dir={w('stsb_out')}", "--do_train=true", "--max_seq_length=32",
               "--train_batch_size=8", "--num_train_epochs=1.0"), "ok", r"7\.5")
    add("truncated_lines_summary", "lines truncated", ef("--max_seq_length=8", out="tr.jsonl"),
        "ok", r"truncated|longest")
    # --- 11 smaller
    add("squad_predict_file_folder", "predict_file folder",
        script("run_squad.py", "--do_predict=true", f"--predict_file={w('a_folder')}",
               f"--output_dir={w('sq_out')}", *bert), "error", r"folder")
    add("squad_bad_json", "bad SQuAD JSON",
        script("run_squad.py", "--do_predict=true", f"--predict_file={w('bad_squad.json')}",
               f"--output_dir={w('sq_out2')}", *bert), "error", r"bad_squad.json")
    # --- more families
    add("output_file_is_folder", "bad output path", ef(out="a_folder"), "error", r"folder")
    add("output_folder_readonly", "bad output path", ef(out="readonly/o.jsonl"), "error",
        r"readonly")
    add("missing_input", "missing input",
        ef()[:2] + [f"--input_file={w('missing.txt')}"] + ef()[3:], "error", r"missing.txt")
    add("bad_config_json", "bad config",
        ef(out="bc.jsonl")[:-2] + [f"--bert_config_file={w('bad_config.json')}",
                                   f"--init_checkpoint={m}/bert_model.ckpt"],
        "error", r"bad_config.json")
    add("max_seq_length_513", "bad flag value", ef("--max_seq_length=513"), "error", r"513")
    add("max_seq_length_abc", "bad flag value", ef("--max_seq_length=abc"), "error",
        r"max_seq_length")
    add("unknown_flag", "unknown flag", ef("--max_seq_lenght=8"), "error", r"max_seq_lenght")
    add("bad_task_name", "bad flag value",
        script("run_classifier.py", "--task_name=foo", f"--data_dir={w('MRPC')}",
               f"--output_dir={w('tn')}", "--do_train=true"), "error", r"foo")
    add("no_mode_given", "missing flag",
        script("run_classifier.py", "--task_name=MRPC", f"--data_dir={w('MRPC')}",
               f"--output_dir={w('nm')}"), "error", r"do_train|do_eval")
    add("init_checkpoint_missing", "missing checkpoint",
        ef(out="im.jsonl")[:-1] + [f"--init_checkpoint={w('nope/bert_model.ckpt')}"], "error",
        r"nope")
    add("spiece_garbage", "bad spiece model",
        script("extract_features.py", f"--input_file={w('in.txt')}",
               f"--output_file={w('sg.jsonl')}", f"--spiece_model_file={w('in.txt')}",
               f"--model_config_path={REPO}/bert_tf/resources/xlnet_config.json"), "error",
        r"in.txt")
    add("xlnet_bert_flag_mix", "flag mix",
        script("extract_features.py", f"--input_file={w('in.txt')}",
               f"--output_file={w('mx.jsonl')}", f"--vocab_file={m}/vocab.txt", *xl), "error",
        r"vocab_file")
    add("sigint_extract", "interrupt",
        ef(out="si.jsonl")[:2] + [f"--input_file={w('big_in.txt')}"] + ef(out="si.jsonl")[3:],
        "signal", r"interrupted", signal=signal.SIGINT, rc=130)
    add("sigterm_extract", "interrupt",
        ef(out="st.jsonl")[:2] + [f"--input_file={w('big_in.txt')}"] + ef(out="st.jsonl")[3:],
        "signal", r"", signal=signal.SIGTERM, rc=143)
    return c


def run_case(case, timeout_s, env):
    pre = case.get("pre")
    if pre:
        os.makedirs(os.path.dirname(pre[1]), exist_ok=True)
        with open(pre[1], "w") as f:
            f.write(pre[2])
    start = time.time()
    if case.get("concurrent"):
        first = subprocess.Popen(case["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, env=env)
        out_file = [a.split("=", 1)[1] for a in case["argv"] if a.startswith("--output_file=")][0]
        lock = os.path.join(os.path.dirname(out_file), f".{os.path.basename(out_file)}.bert_tf-lock")
        while not os.path.exists(lock) and first.poll() is None:
            time.sleep(0.1)
    if case.get("kill9") or case.get("signal"):
        proc = subprocess.Popen(case["argv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        out_file = [a.split("=", 1)[1] for a in case["argv"] if a.startswith("--output_file=")][0]
        state = out_file + ".partial.state.json"
        deadline = time.time() + timeout_s
        while proc.poll() is None and time.time() < deadline:
            try:
                if json.load(open(state))["done"] > 0:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.2)
        proc.send_signal(signal.SIGKILL if case.get("kill9") else case["signal"])
        out, err = proc.communicate()
        if case.get("signal"):
            rc = proc.returncode
            ok = rc == case["rc"] and "Traceback" not in err and re.search(case["pattern"], err)
            return dict(rc=rc, seconds=time.time() - start, tail=err.strip().splitlines()[-2:],
                        cls="clear" if ok else ("traceback" if "Traceback" in err else "unclear"))
    try:
        proc = subprocess.run(case["argv"], capture_output=True, text=True, timeout=timeout_s,
                              env=env)
        rc, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired:
        return dict(rc=None, seconds=timeout_s, cls="hang", tail=[])
    finally:
        if case.get("concurrent"):
            first.kill()
            first.communicate()
    seconds = time.time() - start
    text = out + err
    lines = [x for x in err.strip().splitlines() if x.strip()]
    last = lines[-1] if lines else ""
    found = re.search(case["pattern"], text) if case["pattern"] else True
    if "Traceback (most recent call last)" in err:
        cls = "traceback"
    elif case["expect"] == "error":
        if rc == 0:
            cls = "silent"
        elif (last.startswith("error:") or "Flags parsing error" in last
              or last.startswith("FATAL Flags")) and found:
            cls = "clear"
        else:
            cls = "unclear"
    elif case["expect"] == "ok":
        cls = "clear" if rc == 0 and found else ("silent" if rc == 0 else "unclear")
        if case.get("max_s") and seconds > case["max_s"]:
            cls = "slow"
    else:  # any: a clear error or a success that says what happened
        if rc == 0:
            cls = "clear" if found else "silent"
        else:
            cls = "clear" if last.startswith("error:") and found else "unclear"
    return dict(rc=rc, seconds=round(seconds, 2), cls=cls, tail=lines[-2:])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--timeout_s", type=float, default=900,
                        help="a case still running then is a hang (a loaded 2-core machine "
                             "took 5 min for a 3-step MiniLM training)")
    parser.add_argument("--skip_setup", action="store_true")
    parser.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                      "bad_input_families.json"))
    a = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    m = model_dir()
    if not a.skip_setup:
        if os.path.exists(WORK):
            os.chmod(os.path.join(WORK, "readonly"), 0o755) if os.path.isdir(
                os.path.join(WORK, "readonly")) else None
            shutil.rmtree(WORK)
        setup(WORK, m)
    only = set(filter(None, a.only.split(",")))
    results = []
    # cheapest first: flag errors and help need no TensorFlow; training cases last
    todo = sorted(cases(WORK, m), key=lambda c: (
        0 if c["family"] in ("help", "stray positional", "unknown flag") or
        c["name"] == "max_seq_length_abc" else
        2 if c["name"].startswith(("prefixed_ckpt_classifier", "xlnet_", "stsb_", "truncated_ckpt_c",
                                   "truncated_tfrecord", "huge_line")) else 1))
    for case in todo:
        if only and case["name"] not in only:
            continue
        r = run_case(case, a.timeout_s, env)
        r.update(name=case["name"], family=case["family"])
        results.append(r)
        print(f"{r['cls']:9s} {r['name']:34s} rc={r['rc']} {r['seconds']:.1f}s "
              f"{(r['tail'] or [''])[-1][:150]}", flush=True)
        with open(a.out + ".partial.jsonl", "a") as f:  # survives an interrupted sweep
            f.write(json.dumps(r) + "\n")
    counts = {}
    for r in results:
        counts[r["cls"]] = counts.get(r["cls"], 0) + 1
    families = sorted({r["family"] for r in results})
    summary = dict(cases=len(results), families=len(families), counts=counts, results=results)
    print(json.dumps({k: v for k, v in summary.items() if k != "results"}))
    if not only:
        with open(a.out, "w") as f:
            json.dump(summary, f, indent=1)


if __name__ == "__main__":
    main()
