"""Shared test fixtures: where the real traces are, and one test per real trace file.

The real traces live beside the project, in ../shared/traces (see its README.md). Tests
that need them fail, with a message saying where they were looked for, when the folder is
missing: they never skip silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import SHARED_TRACES

TRACES_DIR = SHARED_TRACES

# Files stored under ../shared/traces whose names end like this are traces (the folder
# also holds a README.md).
TRACE_FILE_SUFFIXES = (".json", ".gz", ".zst")

# The two files there that are not Chrome traces (traces/README.md): a PyTorch execution
# trace and the raw list that torch.profiler's export_memory_timeline writes.
NOT_CHROME_TRACES = (
    "hta/execution_trace/benchmark_simple_add_et.json.gz",
    "hta/memory_analysis/memory_timeline.raw.gz",
)

MISSING = "<../shared/traces missing>"


def traces_missing_message() -> str:
    return (
        f"the real traces folder {TRACES_DIR} does not exist: these tests read the "
        f"traces in ../shared/traces relative to the project root"
    )


def real_trace_files() -> list[str]:
    """Every trace file under TRACES_DIR, recursively, as posix paths relative to it."""
    if not TRACES_DIR.is_dir():
        return []
    return sorted(
        p.relative_to(TRACES_DIR).as_posix()
        for p in TRACES_DIR.rglob("*")
        if p.is_file() and p.name.endswith(TRACE_FILE_SUFFIXES)
    )


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """The real traces folder; fails (does not skip) the test when it is missing."""
    if not TRACES_DIR.is_dir():
        pytest.fail(traces_missing_message(), pytrace=False)
    return TRACES_DIR


BIG_TRACE_BYTES = 2 << 20  # compressed


def _big(relative: str) -> bool:
    path = TRACES_DIR / relative
    return path.is_file() and path.stat().st_size > BIG_TRACE_BYTES


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrises `chrome_trace` over every Chrome trace file under TRACES_DIR and
    `non_chrome_trace` over the files there that are not Chrome traces.

    Both are relative paths (join them with the `traces_dir` fixture). Module scope groups
    a module's tests by file, so module-scoped fixtures read each file once. When the
    folder is missing, each is parametrised with one placeholder, whose tests fail through
    `traces_dir` instead of being skipped as an empty parameter set.
    """
    files = real_trace_files()
    if "chrome_trace" in metafunc.fixturenames:
        chrome = [f for f in files if f not in NOT_CHROME_TRACES] or [MISSING]
        # The big files cost seconds each (the tests' own model parses them in Python):
        # `make test-fast` reads only the small ones.
        params = [pytest.param(f, marks=pytest.mark.slow) if _big(f) else f for f in chrome]
        metafunc.parametrize("chrome_trace", params, scope="module")
    if "non_chrome_trace" in metafunc.fixturenames:
        # Listed whether or not they exist: a test for a missing one fails.
        non_chrome = list(NOT_CHROME_TRACES) if files else [MISSING]
        metafunc.parametrize("non_chrome_trace", non_chrome, scope="module")
