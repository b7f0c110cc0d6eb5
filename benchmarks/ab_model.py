#!/usr/bin/env python3
"""Two builds of hta_fast running the model's commands on the same traces, in turn, in one run.

    python benchmarks/ab_model.py BASE_PYTHON NEW_PYTHON [PATH ...] [--size-mb 300] [--runs 5]

Each python is an environment with one build installed (a worktree of the commit before a
change, say). For each PATH (default: ../shared/traces/param_dlrm_8rank and a trace of
--size-mb generated once with benchmarks/gen_trace.py) it runs `hta-fast critical-path PATH`,
`hta-fast whatif PATH --scale COMP=0.5` (their tables as a terminal shows them: the
summary and the first rows of each side table), `hta-fast doctor PATH` and `hta-fast report
PATH` (its HTML file written in a scratch folder) in fresh processes, alternating base, new, base, ... so that a noisy neighbour slows
both alike, and prints the median wall time of each and the ratio new / base. The command's
whole run counts, the load included: what a user waits for.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_analyses import ensure  # noqa: E402

COMMANDS = {
    "critical-path": ["critical-path"],
    "whatif COMP=0.5": ["whatif", "--scale", "COMP=0.5"],
    "doctor": ["doctor"],
    "report": ["report"],
}
# The doctor exits 1 when a cause is above its threshold: that is a result, not a failure.
OK_CODES = (0, 1)


def wall(python: str, args: list[str], path: Path) -> float:
    """Seconds one fresh process takes to run the command on path."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [python, "-m", "hta_fast", "--quiet", *args[:1], str(path), *args[1:]]
        t0 = time.perf_counter()
        # Run outside the source tree: `-m` puts the working folder first on sys.path, and
        # the base python would import this checkout's package instead of its own.
        done = subprocess.run(cmd, capture_output=True, cwd=out)
        if done.returncode not in OK_CODES:
            raise subprocess.CalledProcessError(done.returncode, cmd, done.stdout, done.stderr)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base", help="python of the base build")
    ap.add_argument("new", help="python of the new build")
    ap.add_argument("paths", type=Path, nargs="*")
    ap.add_argument("--size-mb", type=float, default=300)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=Path("/tmp/hta_fast_bench"))
    args = ap.parse_args()
    paths = args.paths or [
        HERE.parent.parent / "shared" / "traces" / "param_dlrm_8rank",
        ensure(args.out / f"model_{args.size_mb:g}mb", args.size_mb, 1),
    ]
    print(f"{'trace':<28}{'command':<18}{'base s':>9}{'new s':>9}{'new/base':>10}")
    for path in paths:
        for label, cmd in COMMANDS.items():
            times: dict[str, list[float]] = {"base": [], "new": []}
            for _ in range(args.runs):
                for which, python in (("base", args.base), ("new", args.new)):
                    times[which].append(wall(python, cmd, path))
            base, new = (statistics.median(times[k]) for k in ("base", "new"))
            print(f"{path.name[:27]:<28}{label:<18}{base:9.2f}{new:9.2f}{new / base:10.3f}")


if __name__ == "__main__":
    main()
