"""bert_tf.stop_requests: a forked child's signals are not taken for the parent's."""
import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


def test_a_signal_raised_inside_tensorflows_error_conversion_is_the_signal_exit():
    """A new user's SIGTERM during the first step's trace was a 40-line RuntimeError (pybind11
    replaced TensorFlow's InvalidArgumentError by the handler's SystemExit) and exit 1."""
    from bert_tf.stop_requests import signal_exit_of
    text = ("pybind11::error_already_set: MISMATCH of original and normalized active exception "
            "types: ORIGINAL InvalidArgumentError REPLACED BY {}")
    stop = signal_exit_of(RuntimeError(text.format("SystemExit: 143")))
    assert isinstance(stop, SystemExit) and stop.code == 143
    assert isinstance(signal_exit_of(RuntimeError(text.format("KeyboardInterrupt"))),
                      KeyboardInterrupt)
    assert signal_exit_of(RuntimeError("something else")) is None
    assert signal_exit_of(ValueError(text.format("SystemExit: 143"))) is None
    code = ("import sys; sys.argv = ['x.py']; from bert_tf import flags\n"
            "def main(argv):\n"
            f"    raise RuntimeError({text.format('SystemExit: 143')!r})\n"
            "flags.run_main(main)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 143 and proc.stderr == "terminated (SIGTERM)\n"


def test_signals_are_recorded_not_handled_while_deferred():
    """The checkpoint a stop writes: a new user's second Ctrl-C 0.3 s after the first lost it."""
    import signal
    from bert_tf.stop_requests import signals_deferred
    with signals_deferred() as deferred:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(100):  # the handlers run between bytecodes
            if len(deferred) == 2:
                break
    assert deferred == [signal.SIGINT, signal.SIGTERM]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
