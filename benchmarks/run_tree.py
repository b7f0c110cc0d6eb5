#!/usr/bin/env python3
"""Run a benchmark script, or the command line, against the package in another source tree
(a `git worktree` of an older commit with the compiled core copied into its hta_fast/), so
that two versions are timed side by side from one environment:

    python benchmarks/run_tree.py /tmp/base benchmarks/bench_doctor.py DIR --runs 3
    python benchmarks/run_tree.py /tmp/base --cli -q doctor DIR

The editable install's import hook is dropped first: both trees then import the same way,
from TREE/hta_fast.
"""

from __future__ import annotations

import runpy
import sys


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    tree, rest = sys.argv[1], sys.argv[2:]
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
    sys.path.insert(0, tree)
    import hta_fast

    if not hta_fast.__file__.startswith(tree):
        raise SystemExit(f"hta_fast came from {hta_fast.__file__}, not {tree}")
    if rest[0] == "--cli":
        from hta_fast.cli import main as cli

        sys.argv = ["hta-fast"] + rest[1:]
        cli()
    else:
        sys.argv = rest
        runpy.run_path(rest[0], run_name="__main__")


if __name__ == "__main__":
    main()
