"""The package's layering: imports run only down, and nothing imports in a circle.

Each module belongs to a layer (its subpackage, or a top-level module); a module may
import its own subpackage's modules and those of lower layers, never a higher layer or
a sibling layer of the same height. Imports inside functions count (they are arrows
too); those under ``if TYPE_CHECKING:`` do not (they never run). The reference
implementations (``bpetrain._reference``) exist for the tests and no production module
imports them.
"""
from __future__ import annotations

import ast
import pathlib

import bpetrain

PACKAGE = pathlib.Path(bpetrain.__file__).parent

#: Layer of each subpackage or top-level module, lowest first. Equal numbers are
#: siblings: neither may import the other.
LAYERS = {
    "bpetrain._types": 0,
    "bpetrain._util": 0,
    "bpetrain.splitting": 1,
    "bpetrain.counting": 2,
    "bpetrain.encoding": 2,
    "bpetrain.formats": 3,
    "bpetrain.registry": 4,
    "bpetrain.truncation": 4,
    "bpetrain.tokenizer": 5,
    "bpetrain.training": 6,
    "bpetrain.report": 7,
    "bpetrain.cli": 8,
    "bpetrain.__main__": 9,
    "bpetrain": 10,  # the package's own __init__: re-exports the public names
    "bpetrain._reference": 10,
}

#: Upward or sideways imports that are still to be removed; each is named so that no
#: new one can slip in. Empty when the house is in order.
KNOWN: set[tuple[str, str]] = set()


def modules() -> dict[str, pathlib.Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*")):
        if path.suffix not in (".py", ".pyx", ".pxd") or "__pycache__" in path.parts:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.setdefault(".".join(parts), path)
    return found


def layer_of(module: str) -> str:
    return max((home for home in LAYERS if module == home or module.startswith(home + ".")), key=len)


def imports(module: str, path: pathlib.Path, known: set[str]) -> set[tuple[str, int]]:
    """The bpetrain modules ``module`` imports, with line numbers."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        tree = ast.parse(source)
    else:
        # Cython: the import statements (multi-line ones are joined by the Python parser below)
        text = []
        for line in source.splitlines():
            s = line.strip()
            if s.startswith(("from bpetrain", "from .", "import bpetrain", "cimport bpetrain")):
                text.append(s.replace(" cimport ", " import ").replace("cimport ", "import ", 1))
            elif text and text[-1].count("(") > text[-1].count(")"):
                text[-1] += " " + s
            else:
                text.append("")
        tree = ast.parse("\n".join(text))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for child in node.body for n in ast.walk(child))
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base_module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                base_module = node.module or ""
            targets = [f"{base_module}.{a.name}" if f"{base_module}.{a.name}" in known else base_module for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != module:
                found.add((target, node.lineno))
    return found


def graph():
    known = modules()
    return known, {name: imports(name, path, set(known)) for name, path in known.items()}


def test_every_module_has_a_layer():
    known, _ = graph()
    assert "bpetrain.encoding.core" in known and "bpetrain.splitting._matcher" in known
    for name in known:
        assert any(name == home or name.startswith(home + ".") for home in LAYERS), f"{name} has no layer"


def test_imports_run_down():
    known, edges = graph()
    wrong = set()
    for name, targets in edges.items():
        here = layer_of(name)
        for target, line in targets:
            there = layer_of(target)
            if there == here and here != "bpetrain":
                continue
            if LAYERS[there] < LAYERS[here] or (here == "bpetrain" and target != "bpetrain"):
                continue
            wrong.add((name, target, line))
    unexpected = sorted(w for w in wrong if (w[0], w[1]) not in KNOWN)
    assert not unexpected, "imports that run up or sideways:\n" + "\n".join(
        f"  {known[a].relative_to(PACKAGE.parent)}:{line} imports {b}" for a, b, line in unexpected
    )
    stale = KNOWN - {(a, b) for a, b, _ in wrong}
    assert not stale, f"KNOWN lists imports that are gone: {sorted(stale)}"


def test_no_circle():
    _, edges = graph()
    adjacency = {name: {t for t, _ in targets if (name, t) not in KNOWN} for name, targets in edges.items()}
    # the package __init__ is imported by every submodule's import; it only re-exports
    adjacency.pop("bpetrain")
    for targets in adjacency.values():
        targets.discard("bpetrain")
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in adjacency.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in sorted(adjacency):
        if v not in index:
            visit(v)
    assert not circles, f"modules that import each other in a circle: {circles}"


def test_production_code_does_not_import_the_reference():
    _, edges = graph()
    users = sorted(name for name, targets in edges.items() if any(
        t == "bpetrain._reference" and (name, t) not in KNOWN for t, _ in targets))
    assert not users, f"{users} import the reference implementations (tests only)"
