"""A what-if edit is declared once (hta_fast.model.whatif.declared.registry): a new edit is one module
and one registry line, and `hta-fast whatif`, what_if and the docs' table take it from there.

The new edit is added to a copy of the package (with the compiled core), run in a fresh
interpreter that imports the copy, not the editable install."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hta_fast
from hta_fast.frame import select
from hta_fast.model.whatif import what_if
from hta_fast.model.whatif.declared.registry import BY_KEYWORD, DECLARED, EDITS, MODULE
from hta_fast.model.whatif.edits import FIELDS, KEYWORDS, Edits
from hta_fast.schema import GPU_WORK_KINDS
from tests.support.paths import REPO

ROOT = REPO
# Small, with GPU work and two steps (tests/data's traces are CPU-only).
TRACE = "hta/trace_filter/sampled_rank-0.json.gz"
REGISTRY = Path("hta_fast", "model", "whatif", "declared", "registry.py")
DUMMY = Path("hta_fast", "model", "whatif", "declared", "scale_all_edit.py")
FACTOR = 2.0

# The new edit: every GPU event takes F times as long.
DUMMY_MODULE = '''"""Every GPU event takes F times as long."""

from __future__ import annotations

import numpy as np
import pytest

from ....schema import GPU_WORK_KINDS
from .declaration import EditDeclaration, Option


def _changes(trace, values):
    rows = np.flatnonzero(np.isin(trace.column("events", "kind"), GPU_WORK_KINDS))
    dur = trace.column("events", "dur")[rows].astype(np.float64)
    return rows.astype(np.int64), dur * (values["scale_all"] - 1.0)


EDIT = EditDeclaration(
    key="scale_all",
    options=(Option("--dummy-flag", "dummy", "Every GPU event takes F times as long.", "float"),),
    keywords=("scale_all",),
    build=lambda v: {"scale_all": v["dummy"]},
    doc="Every GPU event takes F times as long.",
    gpu_changes=_changes,
)
'''


def test_every_field_of_edits_is_declared_once():
    assert set(FIELDS) <= set(BY_KEYWORD)
    assert KEYWORDS[: len(FIELDS)] == FIELDS
    assert len(EDITS) == len(DECLARED) == len(MODULE)
    assert [e.key for e in EDITS][-1] == "edit_ranks"


def test_an_unknown_added_keyword_is_refused():
    with pytest.raises(ValueError, match=r"Edits.added: unknown keyword\(s\) \['no_such_edit'\]"):
        Edits(added={"no_such_edit": 1.0})
    with pytest.raises(TypeError, match="unexpected keyword"):
        what_if(
            hta_fast.load(str(ROOT / "tests" / "data" / "torch_2_14" / "mlp_train.json.gz")), nope=1
        )


def _editable_skip() -> str:
    """What SKBUILD_EDITABLE_SKIP must hold for the editable install's finder to step aside:
    the build folder it redirects to (its `path`)."""
    paths = [getattr(f, "path", None) for f in sys.meta_path]
    return os.pathsep.join(p for p in paths if isinstance(p, str))


def _package_copy(tmp_path: Path) -> Path:
    """The package copied to tmp_path, with the compiled core, then the new edit: its
    module and one line in the registry."""
    copy = tmp_path / "pkg"
    shutil.copytree(
        ROOT / "hta_fast", copy / "hta_fast", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(hta_fast._core.__file__, copy / "hta_fast")
    (copy / DUMMY).write_text(DUMMY_MODULE)
    registry = (copy / REGISTRY).read_text()
    last = '    ("replay_edits", "EDIT_RANKS"),\n)\n'
    assert registry.count(last) == 1
    (copy / REGISTRY).write_text(
        registry.replace(
            last, '    ("replay_edits", "EDIT_RANKS"),\n    ("scale_all_edit", "EDIT"),\n)\n'
        )
    )
    return copy


def _run(copy: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(copy),
        "SKBUILD_EDITABLE_SKIP": _editable_skip(),
        "NUMBA_CACHE_DIR": str(copy.parent / "numba"),
    }
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=copy.parent
    )


def _changed_files(copy: Path) -> list[str]:
    """The copy's files that differ from the package's (or that it alone has)."""
    out = []
    for path in sorted((copy / "hta_fast").rglob("*")):
        rel = path.relative_to(copy)
        if path.is_dir() or "__pycache__" in rel.parts or path.suffix == ".so":
            continue
        mine = ROOT / rel
        if not mine.exists() or mine.read_bytes() != path.read_bytes():
            out.append(rel.as_posix())
    return out


def _expected_predicted(path: Path) -> list[int]:
    """Each step's predicted time with every GPU event F times as long, from what_if's own
    duration changes."""
    trace = hta_fast.load(str(path))
    rank = select.as_traceset(trace).ranks[0]
    rows = np.flatnonzero(np.isin(trace.column("events", "kind"), GPU_WORK_KINDS))
    delta = trace.column("events", "dur")[rows].astype(np.float64) * (FACTOR - 1.0)
    result = what_if(trace, duration_change={rank: (rows.astype(np.int64), delta)})
    return result.table["predicted"].to_pylist()


def test_a_new_edit_is_one_module_and_one_registry_line(tmp_path, traces_dir):
    trace = traces_dir / TRACE
    copy = _package_copy(tmp_path)
    assert _changed_files(copy) == [REGISTRY.as_posix(), DUMMY.as_posix()]
    where = _run(
        copy, "-c", "import hta_fast.model.whatif.declared.registry as r; print(r.__file__)"
    )
    assert where.stdout.strip() == str(copy / REGISTRY), where.stderr

    helped = _run(copy, "-m", "hta_fast", "whatif", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--dummy-flag FLOAT" in helped.stdout

    ran = _run(
        copy,
        "-m",
        "hta_fast",
        "whatif",
        str(trace),
        "--dummy-flag",
        str(FACTOR),
        "--format",
        "json",
    )
    assert ran.returncode == 0, ran.stderr
    rows = json.loads(ran.stdout)["tables"]["what_if"]
    assert [r["predicted"] for r in rows] == _expected_predicted(trace)
    assert all(r["predicted"] > r["replayed"] for r in rows)
    library = _run(
        copy,
        "-c",
        "import hta_fast; from hta_fast.model.whatif import what_if; "
        f"r = what_if(hta_fast.load({str(trace)!r}), scale_all={FACTOR}); "
        "print(r.table['predicted'].to_pylist())",
    )
    assert library.returncode == 0, library.stderr
    assert json.loads(library.stdout.strip().splitlines()[-1]) == [r["predicted"] for r in rows]

    docs = _run(
        copy,
        "-c",
        f"import sys; sys.path.insert(0, {str(ROOT / 'docs')!r}); import gen_whatif; "
        "print(gen_whatif.table())",
    )
    assert docs.returncode == 0, docs.stderr
    row = docs.stdout.strip().splitlines()[-1]
    assert row.startswith("| scale_all | `--dummy-flag F` | `scale_all` | Every GPU event"), row
    assert row.endswith("| `hta_fast.model.whatif.declared.scale_all_edit` |"), row
    assert _changed_files(copy) == [REGISTRY.as_posix(), DUMMY.as_posix()]
