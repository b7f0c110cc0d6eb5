#!/usr/bin/env python3
"""How long the command line takes on a tiny trace, where start-up is nearly all of it.

    .venv/bin/python benchmarks/bench_startup.py [--runs 10] [--trace PATH]

Median wall time of --runs fresh processes each (every one a new interpreter: imports and
all), printed beside `python -c "import numpy, pyarrow"` measured in the same run, the floor
for any command that loads a trace:

  hta-fast --help, hta-fast info TRACE, hta-fast doctor TRACE   (TRACE: 3 KB, default)

With --base DIR (a checkout of another commit, its compiled core copied into DIR/hta_fast),
the same commands run through that package too, alternating with this one run by run, and
the table adds its medians and the ratio base / this.

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


# Runs the command line of the package in the folder given first, not the installed one.
BASE_RUNNER = (
    "import sys; "
    "sys.meta_path = [f for f in sys.meta_path if 'ScikitBuild' not in type(f).__name__]; "
    "sys.path.insert(0, sys.argv.pop(1)); "
    "from hta_fast.cli import main; main(sys.argv[1:])"
)


def timed(cmds: list[list[str]], runs: int, env: dict[str, str]) -> list[float]:
    """Median wall seconds of each command, run in turn `runs` times."""
    times: list[list[float]] = [[] for _ in cmds]
    for _ in range(runs):
        for cmd, got in zip(cmds, times):
            t0 = time.perf_counter()
            # doctor exits 1 when a gate fails: the time is what matters here
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
            got.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--trace", default=str(TRACE))
    ap.add_argument("--base", help="a checkout of another commit to time beside this one")
    args = ap.parse_args()
    for package in [REPO, *([Path(args.base)] if args.base else [])]:
        compileall.compile_dir(package / "hta_fast", quiet=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cli = [sys.executable, "-m", "hta_fast"]
    rows = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import numpy, pyarrow": [sys.executable, "-c", "import numpy, pyarrow"],
        "--help": [*cli, "--help"],
        "info": [*cli, "-q", "info", args.trace],
        "doctor": [*cli, "-q", "doctor", args.trace, "--fail-under-utilization", "0"],
    }
    print(f"median of {args.runs} fresh processes; trace {args.trace}")
    head = f"{'':24}{'seconds':>9}{'target':>9}"
    print(head + (f"{'base':>9}{'base/this':>11}" if args.base else ""))
    for label, cmd in rows.items():
        cmds = [cmd]
        if args.base and cmd[1] == "-m":
            cmds.append([sys.executable, "-c", BASE_RUNNER, args.base, *cmd[3:]])
        got = timed(cmds, args.runs, env)
        target = TARGETS.get(label)
        line = f"{label:24}{got[0]:9.3f}{'' if target is None else f'{target:9.2f}':>9}"
        if len(got) == 2:
            line += f"{got[1]:9.3f}{got[1] / got[0]:11.2f}"
        print(line)


if __name__ == "__main__":
    main()
