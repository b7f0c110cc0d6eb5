#!/usr/bin/env python3
"""Time the operator analyses on a generated trace with shapes, after loading: the op table,
FLOPs and bytes of every group, and the roofline (which charges every kernel to its
operator). Prints one JSON line.

    python benchmarks/bench_ops.py [--size-mb 1000] [--runs 3] [--out DIR]

The trace is generated once (benchmarks/gen_trace.py, whose default base records `Input
Dims` and `Input type`) and cached under --out. first_s is the first pass over the freshly
loaded trace (it pays for the per-trace memos, such as the launch links); median_s the
median of --runs further passes. Before timing, the answer is checked: every CPU operator
is in exactly one group, and the operators that repeat the base trace's are costed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def one_pass(trace):
    from hta_fast.analysis.ops.op_table import op_table
    from hta_fast.analysis.ops.roofline import roofline
    from hta_fast.costs.flops import with_costs

    table = with_costs(op_table(trace).table)
    roof = roofline(trace)
    return table, roof


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size-mb", type=float, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="/tmp/htafast-bench")
    args = ap.parse_args()

    from gen_trace import generate

    import hta_fast

    folder = Path(args.out) / f"ops{int(args.size_mb)}"
    path = folder / "rank0.json"
    if not path.exists():
        generate(folder, args.size_mb, ranks=1)
    t0 = time.perf_counter()
    trace = hta_fast.load(path)
    load_s = time.perf_counter() - t0

    t0 = time.perf_counter()
    table, roof = one_pass(trace)
    first_s = time.perf_counter() - t0
    # the answer, checked before the timed passes
    n_ops = int((trace.column("events", "kind") == 1).sum())
    assert sum(table["count"].to_pylist()) == n_ops, "every CPU operator in one group"
    costed = table.filter(table["family"].is_valid())
    assert costed.num_rows > 0 and roof.table.num_rows > 0, "operators costed and charged"
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        one_pass(trace)
        times.append(time.perf_counter() - t0)
    print(
        json.dumps(
            {
                "path": str(path),
                "json_mb": round(path.stat().st_size / 1e6, 1),
                "events": len(trace.column("events", "ts")),
                "cpu_ops": n_ops,
                "groups": table.num_rows,
                "roofline_rows": roof.table.num_rows,
                "load_s": round(load_s, 3),
                "first_s": round(first_s, 3),
                "median_s": round(statistics.median(times), 3) if times else None,
            }
        )
    )


if __name__ == "__main__":
    main()
