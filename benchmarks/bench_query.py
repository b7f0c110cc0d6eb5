#!/usr/bin/env python3
"""Time `hta_fast.query` beside the load it runs on, and show it copies no table.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_query.py \\
        [--traces ../shared/traces/param_dlrm_8rank] [--runs 5]

Each a fresh process measured by _measure.run_measured (wall time and peak RSS of that
process alone), median of --runs:

  load         hta_fast.load_dir of the traces, nothing else
  load+query   the same load, the imports a first query makes (duckdb and every analysis
               a query can name), then each query below in turn: its seconds, and the growth
               of Arrow's memory pool across it (0 when DuckDB scans the loaded buffers in
               place; the result's own rows are DuckDB's and small)

Peak RSS of load+query against load's says what the queries cost in memory.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import run_measured  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
QUERIES = {
    "count events": "SELECT count(*) AS n FROM events",
    "kernel time per rank": (
        "SELECT rank, count(*) AS n, sum(dur) AS ns FROM kernels GROUP BY rank ORDER BY rank"
    ),
    "top host ops": (
        "SELECT name, count(*) AS calls, sum(dur) AS ns FROM events WHERE kind = 'cpu_op' "
        "GROUP BY name ORDER BY ns DESC LIMIT 10"
    ),
}


def child(traces: str, queries: bool) -> None:
    import pyarrow as pa

    import hta_fast

    t0 = time.perf_counter()
    ts = hta_fast.load_dir(traces)
    out = {
        "load_s": time.perf_counter() - t0,
        "events": sum(t.num_rows("events") for t in ts.values()),
    }
    if queries:
        t0 = time.perf_counter()
        import duckdb  # noqa: F401 - what the first query would import, timed apart

        import hta_fast.sql  # noqa: F401

        out["import s"] = time.perf_counter() - t0
        for name, sql in QUERIES.items():
            pool = pa.total_allocated_bytes()
            t0 = time.perf_counter()
            hta_fast.query(ts, sql)
            out[f"{name} s"] = time.perf_counter() - t0
            out[f"{name} pool MB"] = (pa.total_allocated_bytes() - pool) / 1e6
    print(json.dumps(out))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3] == "1")
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", default=str(REPO.parent / "shared/traces/param_dlrm_8rank"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    rows = {}
    for label, flag in (("load", "0"), ("load+query", "1")):
        runs = [
            run_measured([sys.executable, __file__, "--child", args.traces, flag])
            for _ in range(args.runs)
        ]
        rows[label] = runs
    print(
        f"traces: {args.traces}, {rows['load'][0]['result']['events']:,} events; "
        f"median of {args.runs} processes"
    )
    print(f"{'':28}{'seconds':>10}{'Arrow pool MB':>15}")
    load_s = statistics.median(r["result"]["load_s"] for r in rows["load"])
    print(f"{'load':28}{load_s:10.3f}")
    imports = statistics.median(r["result"]["import s"] for r in rows["load+query"])
    print(f"{'import duckdb, hta_fast.sql':28}{imports:10.3f}")
    for name in QUERIES:
        s = statistics.median(r["result"][f"{name} s"] for r in rows["load+query"])
        mb = max(r["result"][f"{name} pool MB"] for r in rows["load+query"])
        print(f"{'query: ' + name:28}{s:10.3f}{mb:15.2f}")
    for label in rows:
        rss = statistics.median(r["peak_rss_mb"] for r in rows[label])
        print(f"peak RSS, {label}: {rss:.0f} MB")


if __name__ == "__main__":
    main()
