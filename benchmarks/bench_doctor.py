#!/usr/bin/env python3
"""Time the doctor on one trace file or folder, after loading; print one JSON line.

    python benchmarks/bench_doctor.py /tmp/htafast-bench/g1000 [--runs 3]

first_s is the first diagnosis of the loaded traces (it pays for one-time imports and the
per-trace memos); median_s the median of --runs further ones.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("path")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    import hta_fast
    from hta_fast.doctor import diagnose

    t0 = time.perf_counter()
    path = Path(args.path)
    traces = hta_fast.load_dir(path) if path.is_dir() else hta_fast.load(path)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    diag = diagnose(traces)
    first_s = time.perf_counter() - t0
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        diagnose(traces)
        times.append(time.perf_counter() - t0)
    ranks = diag.ranks
    print(
        json.dumps(
            {
                "path": str(path),
                "ranks": len(ranks),
                "steps": len(diag.steps),
                "load_s": round(load_s, 3),
                "first_s": round(first_s, 3),
                "median_s": round(statistics.median(times), 3) if times else None,
                "top_cause": diag.findings[0].cause if diag.findings else None,
            }
        )
    )


if __name__ == "__main__":
    main()
