#!/usr/bin/env python3
"""Two builds of hta_fast loading the same recorded traces, in turn, in one run.

    python benchmarks/ab_load.py BASE_PYTHON NEW_PYTHON [--real DIR ...] [--largest 10] [--runs 3]
                                 [--threads 1] [--plain] [--statistic median|min] [--repeat N]

Each python is an environment with one build installed (a worktree of the commit before a
change, say). Runs alternate base, new, base, ... per trace (fresh processes, the files as
recorded, or with --plain their inflated copies as bench_load.py makes them), so a noisy
neighbour slows both alike; prints MB of JSON per CPU-second and the wall time, medians (or,
with --statistic min, the least of the runs: on a machine whose pace drifts by tens of per
cent, the least is the steadiest estimate of what the code costs), and the ratios new / base
with their geometric means.
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
from bench_load import largest_traces, plain_copy  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("base", help="python of the base build")
    ap.add_argument("new", help="python of the new build")
    ap.add_argument("--real", type=Path, nargs="+", default=[HERE.parent.parent / "shared/traces"])
    ap.add_argument("--largest", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--plain", action="store_true", help="the inflated copies of .gz traces")
    ap.add_argument("--statistic", choices=("median", "min"), default="median")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="loads per process, the least of them taken (bench_hta_fast_load.py --repeat)",
    )
    ap.add_argument("--out", type=Path, default=Path("/tmp/htafast-bench"))
    args = ap.parse_args()
    pick = statistics.median if args.statistic == "median" else min
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    cpu_ratios, wall_ratios = [], []
    print(
        f"{'trace':50s} {'MB/cpu-s base':>13s} {'new':>6s} {'ratio':>6s} {'wall ms base':>12s} {'new':>6s} {'base/new':>8s}"
    )
    for path, size in largest_traces(args.real, args.largest):
        if args.plain:
            path = plain_copy(path, args.out)
        cpu: dict[str, list[float]] = {"base": [], "new": []}
        wall: dict[str, list[float]] = {"base": [], "new": []}
        for _ in range(args.runs):
            for which in ("base", "new"):
                cmd = [getattr(args, which), str(HERE / "bench_hta_fast_load.py"), str(path)]
                cmd += ["--threads", str(args.threads), "--repeat", str(args.repeat)]
                got = run_measured(cmd, env=env)["result"]
                cpu[which].append(got["cpu_s"])
                wall[which].append(got["wall_s"])
        rate = {k: size / 1e6 / pick(v) for k, v in cpu.items()}
        ms = {k: 1e3 * pick(v) for k, v in wall.items()}
        cpu_ratios.append(rate["new"] / rate["base"])
        wall_ratios.append(ms["base"] / ms["new"])
        name = str(path.relative_to(path.parents[1]))[:50]
        print(
            f"{name:50s} {rate['base']:13.0f} {rate['new']:6.0f} {cpu_ratios[-1]:6.2f}"
            f" {ms['base']:12.1f} {ms['new']:6.1f} {wall_ratios[-1]:8.2f}"
        )
    print(
        f"{'geometric mean of the ratios':50s} {'':13s} {'':6s}"
        f" {statistics.geometric_mean(cpu_ratios):6.2f} {'':12s} {'':6s}"
        f" {statistics.geometric_mean(wall_ratios):8.2f}"
    )


if __name__ == "__main__":
    main()
