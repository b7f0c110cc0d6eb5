"""Start-up: `import hta_fast` loads only the compiled core, `hta-fast --help` imports no
command, and each command's module imports only the heavy libraries it uses (each checked in
a fresh interpreter). The command table and the registered commands are one list."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

import hta_fast
from hta_fast.cli import app
from tests.support.paths import REPO

ROOT = REPO
# Optional or heavy libraries a module imports only where it uses them.
HEAVY = ("pandas", "numba", "plotly", "jinja2", "dask", "duckdb", "mcp", "polars")
# What a command's module may pull in when imported (before it runs).
ALLOWED = {"mcp": {"duckdb"}, "query": {"duckdb"}}


def _imported(code: str, whole: bool = False) -> set[str]:
    """The top-level modules a fresh interpreter holds after running `code` (whole: every
    module, by its full name)."""
    name = "m" if whole else "m.split('.')[0]"
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{{name} for m in sys.modules}})))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_the_package_loads_only_the_core():
    mods = _imported("import hta_fast")
    assert not {"numpy", "pyarrow", *HEAVY} & mods


def test_help_imports_no_command():
    code = "from hta_fast.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass"
    mods = _imported(code)
    assert not {"numpy", "pyarrow", "html", *HEAVY} & mods


def test_the_doctor_imports_what_it_runs():
    """The doctor's what-if replay (model.whatif.replay_run) takes no device edit: the
    doctor imports none of the kernel models behind predict, nor the trace diff, nor the
    TensorBoard metrics it does not read."""
    mods = _imported("import hta_fast.cli.commands.doctor, hta_fast.doctor", whole=True)
    unused = {
        "hta_fast.model.predict",
        "hta_fast.model.whatif.device_changes",
        "hta_fast.costs.flops",
        "hta_fast.analysis.ops.roofline",
        "hta_fast.analysis.trace_diff",
        "hta_fast.analysis.tensorboard.sm_efficiency",
    }
    assert "hta_fast.model.whatif.replay_run" in mods
    assert not unused & mods


@pytest.mark.parametrize("module", sorted({m for m, _ in app.COMMANDS.values()}))
def test_each_commands_module_imports_only_what_it_uses(module):
    mods = _imported(f"import hta_fast.cli.commands.{module}")
    assert set(HEAVY) & mods <= ALLOWED.get(module, set())


def test_info_and_doctor_escape_without_the_html_module():
    """A Result escapes its HTML itself (untrusted_text.html_escaped): html and its entity
    table stay out of the commands that print one."""
    assert "html" not in _imported(
        "import hta_fast.cli.commands.info, hta_fast.cli.commands.doctor"
    )


def test_the_command_table_is_the_commands():
    import importlib

    for module in {m for m, _ in app.COMMANDS.values()}:
        importlib.import_module(f"hta_fast.cli.commands.{module}")
    registered = {
        name: c.callback.__module__.rsplit(".", 1)[1] for name, c in app.cli.commands.items()
    }
    assert registered == {name: m for name, (m, _) in app.COMMANDS.items()}


@pytest.mark.parametrize(
    "package",
    [
        "hta_fast",
        "hta_fast.frame",
        "hta_fast.steps",
        "hta_fast.loading",
        "hta_fast.costs",
        "hta_fast.analysis",
        "hta_fast.model",
        "hta_fast.model.whatif",
    ],
)
def test_public_names_resolve_and_type_checkers_see_them(package):
    import importlib

    module = importlib.import_module(package)
    for name in module.PUBLIC:
        assert getattr(module, name) is not None
    init = ROOT.joinpath(*package.split("."), "__init__.py")
    tree = ast.parse(init.read_text())
    checked = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.dump(node.test)
        for stmt in node.body
        if isinstance(stmt, ast.ImportFrom)
        for alias in stmt.names
    }
    named = set(module.__all__) - {"__version__"}
    folder = init.parent
    submodules = {
        n
        for n in named - set(module.PUBLIC)
        if (folder / n).is_dir() or (folder / f"{n}.py").exists()
    }
    assert checked == set(module.PUBLIC) >= named - submodules
    for name in submodules:  # the package's modules, imported when named
        assert importlib.import_module(f"{package}.{name}") is getattr(module, name)
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018


def test_subpackages_resolve_and_names_outlive_their_modules():
    assert hta_fast.frame.Selection is not None  # a subpackage, imported when named
    import importlib

    importlib.import_module("hta_fast.steps.steps_from")  # binds the submodule, or would

    assert callable(hta_fast.steps.steps_from)  # the function, not the module of its name
