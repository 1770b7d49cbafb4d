"""bert_tf.library_pages (issue 24): which mappings are dropped, and a process that dropped
them computes the same numbers."""

import os
import subprocess
import sys
import textwrap

from bert_tf.library_pages import read_only_file_mappings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# An smaps excerpt in the kernel's layout (proc(5)): text, relro data with copy-on-write pages,
# writable data, a file outside the folder, an anonymous mapping, a text mapping not resident.
SMAPS = textwrap.dedent("""\
    7f0000000000-7f0000400000 r-xp 00100000 08:01 11 /venv/site-packages/tensorflow/libtf_cc.so.2
    Size:               4096 kB
    Rss:                3000 kB
    Anonymous:             0 kB
    VmFlags: rd ex mr mw me
    7f0000400000-7f0000500000 r--p 00500000 08:01 11 /venv/site-packages/tensorflow/libtf_cc.so.2
    Size:               1024 kB
    Rss:                 900 kB
    Anonymous:           800 kB
    VmFlags: rd mr mw me
    7f0000500000-7f0000510000 rw-p 00600000 08:01 11 /venv/site-packages/tensorflow/libtf_cc.so.2
    Size:                 64 kB
    Rss:                  64 kB
    Anonymous:             0 kB
    7f0000600000-7f0000700000 r--p 00000000 08:01 12 /venv/site-packages/numpy/core/_umath.so
    Size:               1024 kB
    Rss:                  12 kB
    Anonymous:             0 kB
    7f0000800000-7f0000900000 r-xp 00000000 08:01 13 /usr/lib/libc.so.6
    Size:               1024 kB
    Rss:                 500 kB
    Anonymous:             0 kB
    7f0000a00000-7f0000b00000 rw-p 00000000 00:00 0
    Size:               1024 kB
    Rss:                1024 kB
    Anonymous:          1024 kB
    7f0000c00000-7f0000d00000 r-xp 00000000 08:01 14 /venv/site-packages/keras/x.so
    Size:               1024 kB
    Rss:                   0 kB
    Anonymous:             0 kB
    7f0000e00000-7f0000f00000 r-xp 00000000 08:01 15 /venv/site-packages-other/y.so
    Size:               1024 kB
    Rss:                  40 kB
    Anonymous:             0 kB
    """)


def test_only_clean_read_only_resident_mappings_below_the_folder():
    assert read_only_file_mappings(SMAPS, "/venv/site-packages") == [
        (0x7f0000000000, 0x7f0000400000, 3000),  # text
        (0x7f0000600000, 0x7f0000700000, 12),  # read-only data, nothing written
    ]
    assert read_only_file_mappings(SMAPS, "/elsewhere") == []


def _run(env_extra):
    code = textwrap.dedent("""\
        import numpy as np, tensorflow as tf
        from bert_tf.library_pages import release_startup_pages
        def file_kb():
            for line in open("/proc/self/status"):
                if line.startswith("RssFile:"):
                    return int(line.split()[1])
        before = file_kb()
        dropped = release_startup_pages()
        after = file_kb()
        x = np.arange(12, dtype=np.float32).reshape(3, 4)
        y = tf.nn.softmax(tf.matmul(x, x.T)).numpy()
        e = np.exp(x @ x.T - (x @ x.T).max(1, keepdims=True))
        print(dropped, before, after, float(np.abs(y - e / e.sum(1, keepdims=True)).max()))
        """)
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3", **env_extra)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return [float(v) for v in out.stdout.split()]


def test_a_process_drops_tensorflow_pages_and_still_computes():
    dropped, before, after, err = _run({})
    if not sys.platform.startswith("linux"):
        assert dropped == 0
        return
    # TensorFlow's libraries alone are over 100 MB of touched pages after the import
    assert dropped > 100_000
    assert after < before - 100_000
    assert err < 1e-6


def test_the_environment_variable_keeps_them():
    dropped, before, after, err = _run({"BERT_TF_KEEP_LIBRARY_PAGES": "1"})
    assert dropped == 0
    assert after >= before - 1000
    assert err < 1e-6


def test_which_values_keep_the_pages(monkeypatch):
    from bert_tf.library_pages import KEEP_ENV, keep_requested
    for value, keep in (("1", True), ("true", True), ("YES", True), (" on ", True),
                        ("", False), ("0", False), ("false", False), ("no", False),
                        ("off", False), ("2", False)):
        monkeypatch.setenv(KEEP_ENV, value)
        assert keep_requested() is keep, value
    monkeypatch.delenv(KEEP_ENV)
    assert keep_requested() is False
