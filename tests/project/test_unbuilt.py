"""`import hta_fast` from a source tree whose core was never built says how to build it."""

from __future__ import annotations

import shutil
import subprocess
import sys

from tests.support.paths import REPO

PACKAGE = REPO / "hta_fast"


def test_import_from_an_unbuilt_tree_says_how_to_build(tmp_path):
    shutil.copytree(
        PACKAGE,
        tmp_path / "hta_fast",
        ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"),
    )
    # -S: no site-packages, so neither the editable install nor a built wheel is found
    res = subprocess.run(
        [sys.executable, "-S", "-c", "import hta_fast"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert res.returncode != 0
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: hta_fast's compiled core")
    assert "make build" in last
