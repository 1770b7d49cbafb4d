"""bert_tf.freed_memory: glibc's mmap threshold fixed, so freed buffers leave the process."""

import os
import subprocess
import sys
import textwrap

import pytest

from bert_tf.errors import FlagError
from bert_tf.freed_memory import (SUGGESTED_THRESHOLD_BYTES, ENV, return_freed_memory,
                                  threshold_from_environment)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A 24 MiB block is malloc'ed, touched and freed twice. With glibc's rising threshold the first
# free lifts the threshold to 24 MiB, so the second block comes from the heap and its pages stay
# resident after free (the heap's top is trimmed only above twice the threshold); with the
# threshold fixed at 1 MiB both blocks are mmapped and unmapped.
_PROBE = textwrap.dedent("""
    import ctypes, sys
    sys.path.insert(0, {repo!r})
    from bert_tf.freed_memory import return_freed_memory
    def anon_kb():
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    fixed = sys.argv[1] == "fixed"
    print("set", return_freed_memory() if fixed else False)
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = (ctypes.c_void_p,)
    size = 24 << 20
    for _ in range(2):
        block = libc.malloc(size)
        ctypes.memset(block, 1, size)
        before_free = anon_kb()
        libc.free(block)
    print("kept_kb", anon_kb() - (before_free - size // 1024))
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt, Linux only")
def test_fixed_threshold_returns_a_freed_24_mib_block_that_the_rising_one_keeps():
    env_free = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    probe = _PROBE.format(repo=REPO_ROOT)
    results = {}
    for mode in ("dynamic", "fixed"):
        out = subprocess.run([sys.executable, "-c", probe, mode], capture_output=True,
                             text=True, check=True, env=env_free).stdout
        fields = dict(line.split(" ", 1) for line in out.splitlines())
        results[mode] = (fields["set"], int(fields["kept_kb"]))
    assert results["fixed"][0] == "True"
    # 24 MiB = 24576 kB: kept whole by the heap, none of it by the fixed threshold.
    assert results["dynamic"][1] > 20000
    assert results["fixed"][1] < 2048


def test_threshold_from_environment():
    assert threshold_from_environment({}) is None  # glibc's own unless asked
    assert SUGGESTED_THRESHOLD_BYTES == 1 << 20
    assert threshold_from_environment({ENV: "65536"}) == 65536
    assert threshold_from_environment({ENV: " Dynamic "}) is None
    # glibc's own variable, when the user set it, stays in charge
    assert threshold_from_environment({"MALLOC_MMAP_THRESHOLD_": "4096", ENV: "65536"}) is None
    for bad in ("1MB", "-1", str((32 << 20) + 1)):
        with pytest.raises(FlagError, match=f"{ENV}='{bad}'"):
            threshold_from_environment({ENV: bad})


def test_none_changes_nothing():
    assert return_freed_memory(None) is False


def test_every_entry_point_sets_it_and_a_bad_value_is_one_line(monkeypatch, capsys):
    from bert_tf import flags as bert_flags
    from bert_tf.flags import process
    calls = []
    monkeypatch.setattr(process, "return_freed_memory", calls.append)
    monkeypatch.setattr(sys, "argv", ["run_something.py"])
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv(ENV, "2097152")
    with pytest.raises(SystemExit) as e:
        bert_flags.run_main(lambda argv: calls.append("main"))
    assert e.value.code in (None, 0) and calls == [2097152, "main"]
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(SystemExit) as e:
        bert_flags.run_main(lambda argv: pytest.fail("main ran"))
    assert e.value.code == 1
    assert capsys.readouterr().err == (f"error: environment variable {ENV}='lots': expected "
                                       "'dynamic' or a number of bytes from 0 to 33554432\n")
