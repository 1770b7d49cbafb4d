"""One script run on local disk and the same run with every path on ``ram://`` (issue 17,
deliverable 2): TensorFlow's in-memory file system has the ``tf.io.gfile`` API of ``gs://``,
so a path that goes through ``os`` / ``open`` / ``glob`` instead fails there or writes a
local ``ram:`` folder in the working directory.

:func:`run_local_and_ram` puts the same input files in a local folder and in a fresh
``ram://`` folder, runs the script's main function in-process on each (the ram:// run from an
empty working directory, which must stay empty), and returns both output trees;
:func:`assert_same_outputs` compares them: the same file names, the same bytes (the folder's
own name replaced where a file records a path), TensorBoard event files (whose names hold the
time, host and pid) by their scalars (the ``.../sec`` rates left out), and no ``.tmp-`` file left behind.
"""
import os
import uuid

import tensorflow as tf

gfile = tf.io.gfile


def put_files(files, folder):
    """Copies ``files`` (relative name -> local source path) under ``folder`` (any scheme)."""
    for name, src in files.items():
        dst = f"{folder}/{name}"
        gfile.makedirs(os.path.dirname(dst))
        gfile.copy(src, dst, overwrite=True)


def read_tree(folder, skip=(), also_list=()):
    """Relative name -> bytes of every file under ``folder`` (``tf.io.gfile.walk``), the
    names in ``skip`` left out.

    TF 2.21's ``ram://`` listing hides a sub-folder whose name is the prefix of a file beside it
    (``out/eval/`` is not listed next to ``out/eval.tf_record``), so the folders named in
    ``also_list`` (relative) are listed directly as well; and it lists by name prefix (the
    listing of ``out/eval`` holds ``.tf_record``), so only names that exist as files are kept.
    """
    root = folder.rstrip("/")
    paths = {f"{dirname.rstrip('/')}/{name}" for dirname, _, names in gfile.walk(root)
             for name in names}
    for rel in also_list:
        sub = f"{root}/{rel}" if rel else root
        if gfile.isdir(sub):
            paths.update(f"{sub}/{n}" for n in gfile.listdir(sub))
    # ... and lists by name prefix: ``out/eval`` also shows ``.tf_record`` (of out/eval.tf_record)
    paths = {p for p in paths if gfile.exists(p) and not gfile.isdir(p)}
    out = {}
    for path in sorted(paths):
        rel = path[len(root) + 1:]
        if rel in skip:
            continue
        with gfile.GFile(path, "rb") as f:
            out[rel] = f.read()
    return out


def _scalars(data, path):
    """tag -> {step: value} of one event file's bytes (written to a scratch ram:// file)."""
    scratch = f"ram://events-{uuid.uuid4().hex}"
    with gfile.GFile(scratch, "wb") as f:
        f.write(data)
    out = {}
    try:
        for event in tf.compat.v1.train.summary_iterator(scratch):
            for value in event.summary.value:
                if value.tag.endswith("/sec"):  # rates: wall time, differ between runs
                    continue
                out.setdefault(value.tag, {})[event.step] = tf.make_ndarray(value.tensor).tolist()
    finally:
        gfile.remove(scratch)
    assert out, f"{path}: no scalar in the event file"
    return out


def _split_events(tree):
    """(tree without event files, {folder: [scalars of each event file there]})."""
    plain, events = {}, {}
    for name, data in tree.items():
        if os.path.basename(name).startswith("events.out.tfevents."):
            events.setdefault(os.path.dirname(name), []).append(_scalars(data, name))
        else:
            plain[name] = data
    return plain, events


def run_local_and_ram(tmp_path, monkeypatch, files, run_fn):
    """Runs ``run_fn(folder)`` with ``files`` copied into ``<tmp_path>/local`` and into a
    fresh ``ram://`` folder.

    Returns:
      ``(local, ram, local_tree, ram_tree, local_result, ram_result)``: the two folders, their
      files after the run (the inputs left out) and what ``run_fn`` returned for each.
    """
    local, ram = str(tmp_path / "local"), f"ram://run-{uuid.uuid4().hex}"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    put_files(files, local)
    put_files(files, ram)
    try:
        local_result = run_fn(local)
        monkeypatch.chdir(cwd)
        ram_result = run_fn(ram)
        assert os.listdir(cwd) == [], "a ram:// path was written through os (a local 'ram:' folder)"
        local_tree = read_tree(local, skip=files)
        ram_tree = read_tree(ram, skip=files,
                             also_list={os.path.dirname(n) for n in local_tree})
    finally:
        gfile.rmtree(ram)
    return local, ram, local_tree, ram_tree, local_result, ram_result


def assert_same_outputs(local, ram, local_tree, ram_tree, differ=()):
    """The ram:// run wrote what the local run wrote: the same names, the same bytes (``local``
    replaced by ``ram`` in text that records paths), the same scalars in the event files of
    each folder, no ``.tmp-`` file left. Names in ``differ`` are only checked to exist (files
    whose bytes legitimately hold a time, e.g. a SavedModel's fingerprint)."""
    assert not [n for n in ram_tree if os.path.basename(n).startswith(".tmp-")], sorted(ram_tree)
    local_plain, local_events = _split_events(local_tree)
    ram_plain, ram_events = _split_events(ram_tree)
    assert sorted(ram_plain) == sorted(local_plain), (sorted(ram_tree), sorted(local_tree))
    for name, data in local_plain.items():
        if name in differ:
            continue
        want = data.replace(local.encode(), ram.encode())
        assert ram_plain[name] == want, (name, ram_plain[name][:2000], want[:2000])
    assert sorted(ram_events) == sorted(local_events), (sorted(ram_tree), sorted(local_tree))
    for folder, scalars in local_events.items():
        assert sorted(map(repr, ram_events[folder])) == sorted(map(repr, scalars)), folder
    return local_plain, local_events
