"""Every ```python example in README.md and docs/*.md runs, against real traces.

The blocks of one page run in order in one namespace (a page may build on its earlier
examples), in a scratch folder laid out as the examples assume: `rank0.pt.trace.json.gz`
is one rank's trace, `traces/` the trace files of a two-rank job, and `../shared/traces`
the real traces folder. docs/api.md (from the docstrings), docs/query.md (from hta_fast.sql's
declarations), docs/doctor.md's tables of causes (from the causes' records) and
docs/model.md's table of what-if edits (from hta_fast.model.whatif.declared.registry) must be
current."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import REPO

ROOT = REPO
PAGES = ["README.md"] + sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))
JOB = "hta/trace_filter"
ONE_RANK = "hta/trace_filter/sampled_rank-0.json.gz"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block."""
    return [
        (text[: m.start()].count("\n") + 2, m.group(1))
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
    ]


def test_pages_have_examples():
    assert python_blocks((ROOT / "docs" / "cookbook.md").read_text())
    assert python_blocks((ROOT / "README.md").read_text())


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page, traces_dir, tmp_path, monkeypatch):
    work = tmp_path / "project"
    work.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "traces").symlink_to(traces_dir)
    (work / "rank0.pt.trace.json.gz").symlink_to(traces_dir / ONE_RANK)
    (work / "traces").symlink_to(traces_dir / JOB)
    monkeypatch.chdir(work)
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    namespace: dict = {"__name__": "__docs__"}
    for line, code in python_blocks((ROOT / page).read_text()):
        try:
            exec(compile(code, f"{page}:{line}", "exec"), namespace)
        except Exception as e:
            pytest.fail(
                f"{page}, the example at line {line} fails: {type(e).__name__}: {e}", pytrace=False
            )


@pytest.mark.parametrize("script", ["gen_api.py", "gen_query.py", "gen_doctor.py", "gen_whatif.py"])
def test_generated_pages_are_current(script):
    out = subprocess.run(
        [sys.executable, str(ROOT / "docs" / script), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
