"""Where the tests find the project and its data, wherever a test file sits under tests/."""

from __future__ import annotations

from pathlib import Path

# tests/support/paths.py: two folders up is the repository.
REPO = Path(__file__).resolve().parents[2]
# Small traces kept with the tests (each folder's README.md says where they came from).
DATA = REPO / "tests" / "data"
# The real traces beside the project (../shared/traces; see its README.md).
SHARED_TRACES = REPO.parent / "shared" / "traces"
