#!/usr/bin/env python3
"""Two builds of hta_fast loading the same recorded traces, in turn, in one run.

    python benchmarks/ab_load.py BASE_PYTHON NEW_PYTHON [--real DIR ...] [--largest 10] [--runs 3]

Each python is an environment with one build installed (a worktree of the commit before a
change, say). Runs alternate base, new, base, ... per trace (fresh processes, one thread, the
files as recorded), so a noisy neighbour slows both alike; prints MB of JSON per CPU-second,
medians, and the ratio new / base with its geometric mean.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import run_measured  # noqa: E402
from bench_load import largest_traces  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", help="python of the base build")
    ap.add_argument("new", help="python of the new build")
    ap.add_argument("--real", type=Path, nargs="+", default=[HERE.parent.parent / "shared/traces"])
    ap.add_argument("--largest", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    ratios = []
    print(f"{'trace':50s} {'base':>7s} {'new':>7s} {'ratio':>6s}")
    for path, size in largest_traces(args.real, args.largest):
        cpu: dict[str, list[float]] = {"base": [], "new": []}
        for _ in range(args.runs):
            for which in ("base", "new"):
                cmd = [getattr(args, which), str(HERE / "bench_hta_fast_load.py"), str(path)]
                cpu[which].append(
                    run_measured(cmd + ["--threads", "1"], env=env)["result"]["cpu_s"]
                )
        rate = {k: size / 1e6 / statistics.median(v) for k, v in cpu.items()}
        ratios.append(rate["new"] / rate["base"])
        name = str(path.relative_to(path.parents[1]))[:50]
        print(f"{name:50s} {rate['base']:7.0f} {rate['new']:7.0f} {ratios[-1]:6.2f}")
    print(
        f"{'geometric mean of the ratios':50s} {'':7s} {'':7s} {statistics.geometric_mean(ratios):6.2f}"
    )


if __name__ == "__main__":
    main()
