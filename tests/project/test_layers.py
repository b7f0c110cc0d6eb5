"""The package's layers (../DESIGN.md, "Layers"), read from its imports with `ast`.

A module imports only from its own layer or the layers below; no module imports cycle, no
two folders import each other, and an import inside a function is for an optional heavy
library, never for a module of this package (outside cli/, whose commands import what
they run only when they run, so that `hta-fast --help` stays quick)."""

from __future__ import annotations

import ast
import collections
from pathlib import Path

import pytest

from tests.support.paths import REPO

PACKAGE = REPO / "hta_fast"

# Bottom to top; a module's layer is its first folder under hta_fast/ (top-level modules are
# the data layer). The root __init__ and __main__ are the public facade, above everything.
LAYERS = [
    ("data", {"", "synth", "guards"}),
    ("costs", {"costs"}),
    ("load", {"loading"}),
    ("frame", {"frame"}),
    ("steps", {"steps"}),
    ("analysis", {"analysis", "udf", "recipes"}),
    ("model", {"model"}),
    ("doctor", {"doctor"}),
    ("present", {"cli", "report", "compat", "sql", "agent"}),
]
FACADE = {"hta_fast", "hta_fast.__main__"}
# Modules per folder besides its __init__: a folder past this holds more than one kind of code.
MAX_MODULES_PER_FOLDER = 16
# Function-level imports of this package's modules outside cli/, each with its reason.
ALLOWED_LATE_IMPORTS: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    parts = module.split(".")
    folder = parts[1] if len(parts) > 2 or (len(parts) == 2 and is_package(module)) else ""
    for i, (_, folders) in enumerate(LAYERS):
        if folder in folders:
            return i
    raise AssertionError(f"{module}: its folder {folder!r} is in no layer; add it to LAYERS")


def module_files() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    out["hta_fast._core"] = PACKAGE / "_core.pyi"  # the compiled core: the bottom of data
    return out


MODULES = module_files()


def is_package(module: str) -> bool:
    return MODULES.get(module, Path()).name == "__init__.py"


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules an import statement loads (the nearest known module of each)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package(module) else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        names = [
            f"{source}.{a.name}" if f"{source}.{a.name}" in MODULES else source for a in node.names
        ]
    out = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name.startswith("hta_fast") and name != module:
            out.append(name)
    return out


def read_imports() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """Module-level edges, and the function-level imports (module, target, line)."""
    edges: dict[str, set[str]] = collections.defaultdict(set)
    late: list[tuple[str, str, int]] = []

    def walk(module: str, node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in _targets(module, child):
                    if in_function:
                        late.append((module, target, child.lineno))
                    else:
                        edges[module].add(target)
            walk(
                module,
                child,
                in_function
                or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    for module, path in MODULES.items():
        if path.suffix == ".py":
            walk(module, ast.parse(path.read_text(), str(path)), False)
    return edges, late


EDGES, LATE = read_imports()


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    nodes = set(edges) | {t for ts in edges.values() for t in ts}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def folder_of(module: str) -> str:
    return module if is_package(module) else module.rpartition(".")[0]


def test_no_module_import_cycle():
    found = cycles(EDGES)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


def test_no_cycle_between_folders():
    # A package's __init__ only re-exports what its folder and subfolders define, so it is
    # left out: the folders' own modules are what must not go round.
    folders: dict[str, set[str]] = collections.defaultdict(set)
    for module, targets in EDGES.items():
        if is_package(module):
            continue
        for target in targets:
            if folder_of(target) != folder_of(module) and not is_package(target):
                folders[folder_of(module)].add(folder_of(target))
    found = cycles(folders)
    assert not found, "\n".join(
        " <-> ".join(c)
        + ": "
        + "; ".join(
            f"{m} -> {t}"
            for m, ts in EDGES.items()
            for t in ts
            if folder_of(m) in c
            and folder_of(t) in c
            and folder_of(m) != folder_of(t)
            and not is_package(m)
            and not is_package(t)
        )
        for c in found
    )


def test_no_import_from_a_higher_layer():
    wrong = []
    for module, line_targets in [(m, t) for m, ts in EDGES.items() for t in ts] + [
        (m, t) for m, t, _ in LATE
    ]:
        target = line_targets
        if module in FACADE or target == "hta_fast":
            if target == "hta_fast" and module not in FACADE:
                wrong.append(
                    f"{module} imports the package root; import the module that defines the name"
                )
            continue
        if layer_of(target) > layer_of(module):
            wrong.append(
                f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                f"({LAYERS[layer_of(target)][0]})"
            )
    assert not wrong, "\n".join(wrong)


def test_no_function_level_import_of_the_package_outside_cli():
    late = {(m, t) for m, t, _ in LATE if not m.startswith("hta_fast.cli")}
    unexplained = sorted(late - set(ALLOWED_LATE_IMPORTS))
    assert not unexplained, (
        "import these at module level (or say why in "
        "ALLOWED_LATE_IMPORTS):\n" + "\n".join(map(str, unexplained))
    )
    stale = sorted(set(ALLOWED_LATE_IMPORTS) - late)
    assert stale == [], "these allowed late imports are gone: drop them from the list"


def test_every_folder_is_in_a_layer_and_small():
    counts = collections.Counter(
        folder_of(m) for m, p in MODULES.items() if p.suffix == ".py" and not is_package(m)
    )
    for module in MODULES:
        if module not in FACADE:
            layer_of(module)
    assert {f: n for f, n in counts.items() if n > MAX_MODULES_PER_FOLDER} == {}


@pytest.mark.parametrize(
    "source, expected",
    [
        ("from . import a\n", ["hta_fast.x.a"]),
        ("from .a import f\n", ["hta_fast.x.a"]),
        ("from ..y import g\n", ["hta_fast.y"]),
    ],
)
def test_relative_imports_are_resolved(source, expected, monkeypatch):
    monkeypatch.setitem(MODULES, "hta_fast.x.a", Path("a.py"))
    monkeypatch.setitem(MODULES, "hta_fast.x.b", Path("b.py"))
    monkeypatch.setitem(MODULES, "hta_fast.y", Path("y/__init__.py"))
    node = ast.parse(source).body[0]
    assert isinstance(node, ast.ImportFrom)
    assert _targets("hta_fast.x.b", node) == expected


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
