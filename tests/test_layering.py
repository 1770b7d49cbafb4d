"""The import rule of docs/ARCHITECTURE.md ("Layers"), checked on every module of bert_tf/.

bottom (errors, atomic files, JSON, flags, checkpoint bundle I/O, tokenization) -> data ->
model families (bert/, xlnet/, albert/, with convert and defaults) -> training -> tasks ->
root scripts. A module may import its own level and the levels below it, never one above;
no module imports another module's private (``_name``) names.
"""

import ast
import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "bert_tf"

# First matching prefix wins; the dotted module names are relative to the repository root.
LEVELS = (
    # `python -m bert_tf.albert.<script>`: the original ALBERT module names, thin like the root
    # scripts (flags, then one call into bert_tf.tasks).
    *((f"bert_tf.albert.{script}", 5, "entry points")
      for script in ("create_pretraining_data", "run_classifier", "run_pretraining",
                     "run_squad_v1", "run_squad_v2")),
    ("bert_tf.tasks", 4, "tasks"),
    ("bert_tf.training", 3, "training"),
    ("bert_tf.bert", 2, "model families"),
    ("bert_tf.xlnet", 2, "model families"),
    ("bert_tf.albert", 2, "model families"),
    ("bert_tf.convert", 2, "model families"),
    ("bert_tf.defaults", 2, "model families"),
    ("bert_tf.data", 1, "data"),
    ("bert_tf", 0, "bottom"),
)


def level_of(module: str):
    """``(level, name)`` of a dotted module name of the package (see :data:`LEVELS`)."""
    for prefix, level, name in LEVELS:
        if module == prefix or module.startswith(prefix + "."):
            return level, name
    raise ValueError(f"{module} is not in {PACKAGE}")


def package_modules(root: str = REPO_ROOT):
    """Yields ``(dotted module name, path)`` of every .py file under ``<root>/bert_tf``."""
    for folder, _, files in os.walk(os.path.join(root, PACKAGE)):
        for filename in sorted(files):
            if filename.endswith(".py"):
                path = os.path.join(folder, filename)
                rel = os.path.relpath(path, root)[:-len(".py")]
                parts = rel.split(os.sep)
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                yield ".".join(parts), path


def imports_of(path: str):
    """Yields ``(line, imported module, imported name or None)`` for every bert_tf import in
    the file, function-level imports included."""
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == PACKAGE:
                for alias in node.names:
                    yield node.lineno, node.module, alias.name


def violations(root: str = REPO_ROOT):
    """Every import against the rule, as ``"<file>:<line> ..."`` strings."""
    found = []
    modules = dict(package_modules(root))
    for module, path in modules.items():
        src_level, src_name = level_of(module)
        rel = os.path.relpath(path, root)
        for line, target, name in imports_of(path):
            # `from bert_tf.data import tfrecord` imports the module bert_tf.data.tfrecord.
            full = f"{target}.{name}" if name and f"{target}.{name}" in modules else target
            dst_level, dst_name = level_of(full)
            if dst_level > src_level:
                found.append(f"{rel}:{line} imports {full} ({src_name} -> {dst_name}: upward)")
            if name and name.startswith("_") and not name.startswith("__") and full == target:
                found.append(f"{rel}:{line} imports the private name {name} of {target}")
    return sorted(set(found), key=lambda v: (v.split(":")[0], int(v.split(":")[1].split()[0])))


def test_no_upward_or_private_imports():
    bad = violations()
    assert not bad, "import rule of docs/ARCHITECTURE.md broken:\n" + "\n".join(bad)


def test_checker_sees_an_upward_and_a_private_import(tmp_path):
    """The checker itself: a data module importing training/, and a private name."""
    pkg = tmp_path / PACKAGE
    (pkg / "data").mkdir(parents=True)
    (pkg / "training").mkdir()
    for f in (pkg / "__init__.py", pkg / "data" / "__init__.py",
              pkg / "training" / "__init__.py", pkg / "training" / "loop.py"):
        f.write_text("")
    (pkg / "data" / "x.py").write_text(
        "def f():\n    from bert_tf.training import loop\n"
        "from bert_tf.errors import _hidden\n")
    assert violations(str(tmp_path)) == [
        f"{os.path.join(PACKAGE, 'data', 'x.py')}:2 imports bert_tf.training.loop "
        "(data -> training: upward)",
        f"{os.path.join(PACKAGE, 'data', 'x.py')}:3 imports the private name _hidden of "
        "bert_tf.errors",
    ]


@pytest.mark.parametrize("module,level", [
    ("bert_tf.errors", 0), ("bert_tf.tokenization.wordpiece", 0), ("bert_tf.data.squad", 1),
    ("bert_tf.bert.model", 2), ("bert_tf.defaults", 2), ("bert_tf.training.loop", 3),
    ("bert_tf.tasks.squad", 4)])
def test_levels(module, level):
    assert level_of(module)[0] == level
