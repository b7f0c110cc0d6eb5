#!/usr/bin/env python3
"""How long the command line takes on a tiny trace, where start-up is nearly all of it.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10] [--trace PATH]

Median wall time of --runs fresh processes each (every one a new interpreter: imports and
all), printed beside `python -c "import numpy, pyarrow"` measured in the same run, the floor
for any command that loads a trace:

  hta-fast --help, hta-fast info TRACE, hta-fast doctor TRACE   (TRACE: 3 KB, default)

The package's modules are byte-compiled first and the children may write bytecode
(PYTHONDONTWRITEBYTECODE unset), as an installed package runs: otherwise every module edited
since the last run is compiled again in each process.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO.parent / "shared/traces/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
# The targets of the start-up work: seconds, median of fresh processes on a quiet machine.
TARGETS = {"--help": 0.15, "info": 0.45, "doctor": 0.7}


def timed(cmd: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--trace", default=str(TRACE))
    args = ap.parse_args()
    compileall.compile_dir(REPO / "hta_fast", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cli = [sys.executable, "-m", "hta_fast"]
    rows = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import numpy, pyarrow": [sys.executable, "-c", "import numpy, pyarrow"],
        "--help": [*cli, "--help"],
        "info": [*cli, "-q", "info", args.trace],
        "doctor": [*cli, "-q", "doctor", args.trace],
    }
    print(f"median of {args.runs} fresh processes; trace {args.trace}")
    print(f"{'':24}{'seconds':>9}{'target':>9}")
    for label, cmd in rows.items():
        # doctor exits 1 when a gate fails: the time is what matters here
        cmd = cmd if label != "doctor" else [*cmd, "--fail-under-utilization", "0"]
        s = timed(cmd, args.runs, env)
        target = TARGETS.get(label)
        print(f"{label:24}{s:9.3f}{'' if target is None else f'{target:9.2f}'}")


if __name__ == "__main__":
    main()
