"""A doctor cause is declared once: its module and one line of the registry. In a copy of the
package with a dummy cause added so, and nothing else changed, the command line names it
among the causes, the docs generator writes its rows, and `doctor --json` lists its finding."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import hta_fast._core
from tests.support import synthetic_traces as synth
from tests.support.paths import REPO

ROOT = REPO
# A trace of one rank with GPU work: the doctor judges it (the files in tests/data are CPU-only).
TRACE = "trace.json"
KEY = "dummy_cause"
MEANS = "a stand-in cause that tests/test_doctor_registry.py declares"

DUMMY = f'''"""A stand-in cause: it costs nothing anywhere."""

from __future__ import annotations

import numpy as np

from ..views.estimate import Estimate
from .record import Cause, CauseDoc, Examination


def examine(ex: Examination) -> Estimate:
    cost = {{v.rank: np.zeros(v.n_steps) for v in ex.views}}
    return Estimate(cost, {{"calls": 0}}, [], "Dummy: nothing found", "Nothing to do.")


CAUSE = Cause(
    key="{KEY}",
    name="a dummy cause",
    thresholds=("min_share",),
    evidence=("calls",),
    heuristic=examine,
    edit=None,
    edit_text="not modelled: a stand-in",
    doc=CauseDoc(
        means="{MEANS}",
        cost="nothing",
        helps="nothing",
        edit="none: a stand-in",
    ),
)
'''
# A line of the registry: each imports one cause's record.
REGISTRY_LINE = re.compile(r"^from \.\w+ import CAUSE as _\w+$", re.M)


def _editable_skip() -> str:
    """What makes the editable install's finder step aside (SKBUILD_EDITABLE_SKIP): the
    build folders of the scikit-build finders on sys.meta_path, which return no module when
    theirs is listed; "" under a regular install, where PYTHONPATH comes first anyway."""
    paths = [
        f.path
        for f in sys.meta_path
        if type(f).__name__.startswith("ScikitBuild") and getattr(f, "path", None)
    ]
    return os.pathsep.join(paths)


@pytest.fixture(scope="module")
def copy_with_dummy(tmp_path_factory) -> Path:
    """tmp/hta_fast: the package with its compiled core, the dummy cause's module and its
    registry line added after the last one."""
    tmp = tmp_path_factory.mktemp("registry")
    pkg = tmp / "hta_fast"
    shutil.copytree(ROOT / "hta_fast", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    core = Path(hta_fast._core.__file__)
    if not (pkg / core.name).exists():
        shutil.copy2(core, pkg / core.name)
    causes = pkg / "doctor" / "causes"
    (causes / f"{KEY}.py").write_text(DUMMY)
    init = causes / "__init__.py"
    text = init.read_text()
    last = list(REGISTRY_LINE.finditer(text))[-1]
    line = f"from .{KEY} import CAUSE as _{KEY}"
    init.write_text(text[: last.end()] + "\n" + line + text[last.end() :])
    (tmp / TRACE).write_bytes(synth.healthy_builder().to_bytes())
    return tmp


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), str(ROOT / "docs")])
    env["SKBUILD_EDITABLE_SKIP"] = _editable_skip()
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the copy stays as written
    env["NUMBA_CACHE_DIR"] = str(copy / "numba")
    env["HTA_FAST_CACHE_DIR"] = str(copy / "cache")
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=copy, timeout=300
    )


def test_the_copy_is_imported(copy_with_dummy):
    out = _run(
        copy_with_dummy,
        "-c",
        "import hta_fast, hta_fast._core as c; print(hta_fast.__file__); print(c.__file__)",
    )
    assert out.returncode == 0, out.stderr
    for path in out.stdout.split():
        assert Path(path).is_relative_to(copy_with_dummy), out.stdout


def test_the_command_line_names_the_cause(copy_with_dummy):
    """The causes a wrong --fail-on lists (what `doctor --help` points to) include it."""
    out = _run(copy_with_dummy, "-m", "hta_fast", "doctor", "--fail-on", "no_such_cause", TRACE)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "no_such_cause: not a cause" in out.stderr
    assert KEY in out.stderr and "launch_bound" in out.stderr


def test_the_docs_generator_writes_its_rows(copy_with_dummy):
    code = "import gen_doctor; print(gen_doctor.causes_table()); print(gen_doctor.edits_table())"
    out = _run(copy_with_dummy, "-c", code)
    assert out.returncode == 0, out.stderr
    assert f"| `{KEY}` | {MEANS} | nothing | nothing |" in out.stdout.splitlines()
    assert f"| {KEY} | none: a stand-in |" in out.stdout.splitlines()


def test_doctor_json_lists_its_finding(copy_with_dummy):
    out = _run(copy_with_dummy, "-m", "hta_fast", "-q", "doctor", "--json", TRACE)
    assert out.returncode in (0, 1), out.stdout + out.stderr
    doc = json.loads(out.stdout)
    found = {f["cause"]: f for f in doc["findings"]}
    assert set(found) >= {"launch_bound", "input_pipeline"}
    dummy = found[KEY]
    assert dummy["title"] == "Dummy: nothing found" and dummy["evidence"] == {"calls": 0}
    assert dummy["cost_ns_per_step"] == 0 and not dummy["above_threshold"]
    assert (
        dummy["saving_ns_per_step"] is None and dummy["saving_edit"] == "not modelled: a stand-in"
    )


def test_nothing_else_in_the_copy_changed(copy_with_dummy):
    """The module and one line: every other file of the copy is the package's."""
    pkg = copy_with_dummy / "hta_fast"
    changed, added = [], []

    def walk(cmp: filecmp.dircmp, at: Path) -> None:
        changed.extend(at / n for n in cmp.diff_files)
        added.extend(at / n for n in cmp.left_only if n != "__pycache__")
        for name, sub in cmp.subdirs.items():
            walk(sub, at / name)

    core = Path(hta_fast._core.__file__).name
    walk(filecmp.dircmp(pkg, ROOT / "hta_fast", ignore=["__pycache__", core]), Path())
    causes = Path("doctor") / "causes"
    assert changed == [causes / "__init__.py"]
    assert added == [causes / f"{KEY}.py"]
    before = (ROOT / "hta_fast" / causes / "__init__.py").read_text().splitlines()
    after = (pkg / causes / "__init__.py").read_text().splitlines()
    assert [line for line in after if line not in before] == [f"from .{KEY} import CAUSE as _{KEY}"]
    assert len(after) == len(before) + 1
