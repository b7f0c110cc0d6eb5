#!/usr/bin/env python3
"""The loader against its floor, in one run on the machine at hand.

    cmake -S . -B /tmp/floor -DHTA_FAST_BENCH_TOOLS=ON -Dpybind11_DIR=$(.venv/bin/python -c \
        "import pybind11; print(pybind11.get_cmake_dir())") && cmake --build /tmp/floor --target load_floor
    .venv/bin/python benchmarks/bench_load_floor.py [--floor /tmp/floor/load_floor] [--largest 10]
        [--runs 5] [--repeat 3]

For each of the --largest real traces (bench_load.largest_traces), in turn: the floor's stages
(benchmarks/native/load_floor, median of --runs: inflate, simdjson's stage 1, the first touch
of the load's pages, and `floor` = the three, a load that did nothing else), then the whole
load (`hta_fast.load`, one thread, a fresh process, the least CPU time of --repeat loads in it,
benchmarks/bench_hta_fast_load.py) as MB of JSON per CPU-second and as a fraction of the floor.
The ratio is what to read: both run back to back on the same machine, so its pace moves both.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _measure import run_measured  # noqa: E402
from bench_load import largest_traces  # noqa: E402

# load_floor's lines: "  LABEL   RATE ..." -> the columns printed here
STAGES = {
    "inflate": "read (inflate for .gz)",
    "stage 1": "stage-1 index",
    "touch": "first touch of",
    "floor": "read + stage 1 + first touch",
    "read_trace": "read_trace",
}


def floor_rates(floor: str, path: Path, runs: int) -> dict[str, float]:
    out = subprocess.run([floor, str(path), str(runs)], capture_output=True, text=True, check=True)
    rates = {}
    for key, label in STAGES.items():
        line = next(ln for ln in out.stdout.splitlines() if ln.strip().startswith(label))
        rates[key] = float(re.findall(r"\s(\d+)(?:\s|$)", line[len(label) + 2 :])[0])
    return rates


def load_rate(path: Path, size: int, repeat: int) -> float:
    cmd = [sys.executable, str(HERE / "bench_hta_fast_load.py"), str(path), "--threads", "1"]
    got = run_measured(
        [*cmd, "--repeat", str(repeat)], env=dict(os.environ, OPENBLAS_NUM_THREADS="1")
    )
    return size / 1e6 / got["result"]["cpu_s"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--floor", default="/tmp/floor/load_floor")
    ap.add_argument("--real", type=Path, nargs="+", default=[HERE.parent.parent / "shared/traces"])
    ap.add_argument("--largest", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    cols = [*STAGES, "load", "load/floor"]
    print("MB of JSON per CPU-second, one thread")
    print(f"{'trace':40s}" + "".join(f"{c:>11s}" for c in cols))
    fractions = []
    for path, size in largest_traces(args.real, args.largest):
        rates = floor_rates(args.floor, path, args.runs)
        rates["load"] = load_rate(path, size, args.repeat)
        rates["load/floor"] = rates["load"] / rates["floor"]
        fractions.append(rates["load/floor"])
        print(
            f"{path.name[:40]:40s}"
            + "".join(
                f"{rates[c]:11.2f}" if c == "load/floor" else f"{rates[c]:11.0f}" for c in cols
            )
        )
    print(
        f"{'geometric mean of load/floor':40s}{statistics.geometric_mean(fractions):{11 * len(cols)}.2f}"
    )


if __name__ == "__main__":
    main()
