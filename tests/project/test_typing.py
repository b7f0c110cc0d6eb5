"""The package's type information holds: mypy passes on hta_fast with the settings in
pyproject.toml ([tool.mypy]: every function annotated, the compiled module checked
through its stub hta_fast/_core.pyi), and the stub matches what the module exports."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import hta_fast
from hta_fast import _core
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # runs mypy over the package

ROOT = REPO


def test_mypy_passes_on_the_package():
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "hta_fast"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_package_is_marked_typed():
    assert (Path(hta_fast.__file__).parent / "py.typed").exists()


def stub_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def test_stub_lists_every_export_of_the_compiled_module():
    tree = ast.parse((ROOT / "hta_fast" / "_core.pyi").read_text())
    exported = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    declared = stub_names(tree)
    assert exported <= declared, exported - declared
    ops_stub = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "_Ops")
    ops_declared = {n.name for n in ops_stub.body if isinstance(n, ast.FunctionDef)}
    assert {n for n in dir(_core.ops) if not n.startswith("_")} == ops_declared
