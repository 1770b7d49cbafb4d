"""bert_tf.stop_requests: a forked child's signals are not taken for the parent's."""
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent('''
    import os, signal, sys, time
    from bert_tf import stop_requests
    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    assert stop_requests.watch()
    hits = []
    with stop_requests.while_watching(lambda: hits.append(1)):
        pid = os.fork()
        if pid == 0:  # a pool worker: waits until its pool terminates it (SIGTERM)
            time.sleep(30)
            os._exit(0)
        time.sleep(0.5)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        time.sleep(0.5)
        child = os.waitstatus_to_exitcode(status)
    print("child", child, "parent stop requests", len(hits))
''')


def test_a_forked_childs_sigterm_is_not_a_stop_request_of_the_parent(tmp_path):
    # Before: the child inherited the wake-up pipe, so the SIGTERM a pool's terminate() sends
    # its workers reached the parent's watching thread: a running training call stopped (1).
    script = tmp_path / "fork.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["child", "143", "parent", "stop", "requests", "0"]
