"""The import rule of docs/ARCHITECTURE.md ("The house"), checked on every module of bert_tf/.

Family-first over one spine:

* the **spine** (everything outside the family folders) is layered bottom -> data -> training
  -> run pieces; a spine module imports its own level and the levels below it, and never a
  family module (it takes models, loaders and preprocessors as values);
* a **family** (``bert/``, ``xlnet/``, ``albert/``) is a small pipeline: model files (the
  modules at the top of its folder) <- ``data/`` <- ``tasks/`` <- entry points (ALBERT's
  ``python -m bert_tf.albert.<script>`` modules). A family module imports any spine module (its
  model files: only bottom and training, so a Keras layer file imports no data or task code),
  its own family's modules at its own stage or below, and only the model files and data of the
  family it is built on (:data:`BUILT_ON`: ALBERT on BERT's layers and formats and on XLNet's
  SQuAD v2 heads and records), never another family's tasks;
* ``convert`` and ``defaults`` (run as ``python -m``) stand on top and may import anything;
* no module imports another module's private (``_name``) names, and no import circle exists
  anywhere (function-level imports included).

There is no exemption list: a new module is classified by its path alone.
"""

import ast
import os

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "bert_tf"

FAMILIES = ("bert", "xlnet", "albert")
# The families each family is built on (it may import their model files and data).
BUILT_ON = {"bert": (), "xlnet": (), "albert": ("bert", "xlnet")}
# The stages inside a family, in pipeline order.
STAGES = ("model files", "data", "tasks", "entry points")
MODEL, DATA, TASKS, ENTRY = range(4)
# The spine's levels, bottom first; a module not under data/, training/ or run/ is bottom.
SPINE_LEVELS = {"data": 1, "training": 2, "run": 3}
SPINE_NAMES = ("bottom", "data", "training", "run pieces")
# Package-root modules run as `python -m` that build on the families.
TOP = ("convert", "defaults")


def classify(module: str):
    """``("spine", level)``, ``(family, stage)`` or ``("top", 0)`` of a dotted module name.

    Raises:
      ValueError: the name is not a module of the package.
    """
    parts = module.split(".")
    if parts[0] != PACKAGE:
        raise ValueError(f"{module} is not in {PACKAGE}")
    rest = parts[1:]
    if not rest:
        return "spine", 0
    if rest[0] in TOP and len(rest) == 1:
        return "top", 0
    if rest[0] in FAMILIES:
        if len(rest) == 1:
            return rest[0], MODEL
        if rest[1] == "data":
            return rest[0], DATA
        if rest[1] == "tasks":
            return rest[0], TASKS
        if len(rest) == 2 and rest[1].startswith(("run_", "create_")):
            return rest[0], ENTRY
        return rest[0], MODEL
    return "spine", SPINE_LEVELS.get(rest[0], 0)


def describe(kind) -> str:
    owner, level = kind
    if owner == "spine":
        return f"spine {SPINE_NAMES[level]}"
    if owner == "top":
        return "top"
    return f"{owner} {STAGES[level]}"


def allowed(src, dst) -> bool:
    """Whether a module of kind ``src`` may import one of kind ``dst`` (see the module doc)."""
    (s_owner, s_level), (d_owner, d_level) = src, dst
    if s_owner == "top":
        return True
    if d_owner == "top":
        return False
    if s_owner == "spine":
        return d_owner == "spine" and d_level <= s_level
    if d_owner == "spine":  # a family module importing the spine
        return s_level != MODEL or d_level in (0, SPINE_LEVELS["training"])
    if d_owner == s_owner:
        return d_level <= s_level
    return d_owner in BUILT_ON[s_owner] and d_level <= min(s_level, DATA)


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


def import_edges(root: str = REPO_ROOT):
    """``(source module, relative path, line, imported module, imported name)`` of every
    import of the package's modules into the package."""
    modules = dict(package_modules(root))
    for module, path in modules.items():
        rel = os.path.relpath(path, root)
        for line, target, name in imports_of(path):
            # `from bert_tf.data import tfrecord` imports the module bert_tf.data.tfrecord.
            full = f"{target}.{name}" if name and f"{target}.{name}" in modules else target
            yield module, rel, line, full, (name if full == target else None)


def violations(root: str = REPO_ROOT):
    """Every import against the rule, as ``"<file>:<line> ..."`` strings."""
    found = []
    for module, rel, line, full, name in import_edges(root):
        src, dst = classify(module), classify(full)
        if not allowed(src, dst):
            found.append(f"{rel}:{line} imports {full} ({describe(src)} -> {describe(dst)})")
        if name and name.startswith("_") and not name.startswith("__"):
            found.append(f"{rel}:{line} imports the private name {name} of {full}")
    return sorted(set(found), key=lambda v: (v.split(":")[0], int(v.split(":")[1].split()[0])))


def circles(root: str = REPO_ROOT):
    """Every import circle between the package's modules, each as a list of module names
    (a module importing its own package's ``__init__`` is not counted)."""
    graph = {}
    for module, _, _, full, _ in import_edges(root):
        if full != module and not module.startswith(full + "."):
            graph.setdefault(module, set()).add(full)
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_the_import_rule_holds_with_no_exemption():
    bad = violations()
    assert not bad, "import rule of docs/ARCHITECTURE.md broken:\n" + "\n".join(bad)


def test_no_import_circle():
    found = circles()
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def _package(tmp_path, files):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(tmp_path)


def test_checker_sees_each_kind_of_violation(tmp_path):
    """The checker itself, on a made-up package: spine -> family, data -> training, a model
    file importing its family's data, ALBERT importing a BERT task, a private name."""
    root = _package(tmp_path, {
        "bert_tf/__init__.py": "", "bert_tf/data/__init__.py": "",
        "bert_tf/training/__init__.py": "", "bert_tf/training/loop.py": "",
        "bert_tf/bert/__init__.py": "", "bert_tf/bert/tasks/__init__.py": "",
        "bert_tf/bert/tasks/classifier.py": "", "bert_tf/bert/data/__init__.py": "",
        "bert_tf/bert/data/squad.py": "", "bert_tf/albert/__init__.py": "",
        "bert_tf/albert/tasks/__init__.py": "",
        "bert_tf/data/x.py": ("def f():\n    from bert_tf.training import loop\n"
                              "from bert_tf.errors import _hidden\n"
                              "import bert_tf.bert.model\n"),
        "bert_tf/bert/model.py": "from bert_tf.bert.data import squad\n",
        "bert_tf/albert/tasks/run.py": "from bert_tf.bert.tasks.classifier import run\n",
    })
    x = os.path.join(PACKAGE, "data", "x.py")
    assert violations(root) == [
        f"{os.path.join(PACKAGE, 'albert', 'tasks', 'run.py')}:1 imports "
        "bert_tf.bert.tasks.classifier (albert tasks -> bert tasks)",
        f"{os.path.join(PACKAGE, 'bert', 'model.py')}:1 imports bert_tf.bert.data.squad "
        "(bert model files -> bert data)",
        f"{x}:2 imports bert_tf.training.loop (spine data -> spine training)",
        f"{x}:3 imports the private name _hidden of bert_tf.errors",
        f"{x}:4 imports bert_tf.bert.model (spine data -> bert model files)",
    ]


def test_checker_sees_a_circle(tmp_path):
    root = _package(tmp_path, {
        "bert_tf/__init__.py": "", "bert_tf/bert/__init__.py": "",
        "bert_tf/bert/tasks/__init__.py": "",
        "bert_tf/bert/tasks/a.py": "from bert_tf.bert.tasks import b\n",
        "bert_tf/bert/tasks/b.py": "def f():\n    from bert_tf.bert.tasks.a import g\n",
    })
    assert circles(root) == [["bert_tf.bert.tasks.a", "bert_tf.bert.tasks.b",
                              "bert_tf.bert.tasks.a"]]


@pytest.mark.parametrize("module,kind", [
    ("bert_tf.errors", ("spine", 0)), ("bert_tf.tokenization.wordpiece", ("spine", 0)),
    ("bert_tf.data.squad", ("spine", 1)), ("bert_tf.training.loop", ("spine", 2)),
    ("bert_tf.run.serving", ("spine", 3)), ("bert_tf.bert.model", ("bert", MODEL)),
    ("bert_tf.xlnet.data.squad", ("xlnet", DATA)),
    ("bert_tf.albert.tasks.classifier", ("albert", TASKS)),
    ("bert_tf.albert.run_squad_v2", ("albert", ENTRY)),
    ("bert_tf.albert.create_pretraining_data", ("albert", ENTRY)),
    ("bert_tf.defaults", ("top", 0)), ("bert_tf.convert", ("top", 0))])
def test_classify(module, kind):
    assert classify(module) == kind


@pytest.mark.parametrize("src,dst,ok", [
    (("albert", MODEL), ("bert", MODEL), True), (("albert", DATA), ("xlnet", DATA), True),
    (("albert", TASKS), ("bert", TASKS), False), (("xlnet", TASKS), ("bert", MODEL), False),
    (("bert", TASKS), ("top", 0), False), (("spine", 3), ("spine", 1), True),
    (("bert", MODEL), ("spine", 2), True), (("bert", MODEL), ("spine", 1), False),
    (("bert", DATA), ("spine", 3), True), (("albert", ENTRY), ("albert", TASKS), True)])
def test_allowed(src, dst, ok):
    assert allowed(src, dst) is ok
