#!/usr/bin/env python3
"""User metrics (hta_fast.udf) against the built-in analyses that answer the same question,
over --events GPU events, after the first compile; and the compile itself, in a fresh
process with an empty Numba cache and in a second process that finds it cached.

The events are a real trace's GPU work (kernels, memcpy, memset) repeated in memory, each
repetition shifted in time by the base's span and its steps renumbered, so the columns are
real ones at any size (a JSON trace of 10 M GPU events would take minutes to generate and
load; loading is benchmarked by bench_load.py).

Pairs, each checked for equal answers before it is timed:

    busy time per rank   udf: recipes.utilisation.busy_time (union of [ts, end), a loop
                         over sorted rows)            built-in: temporal.temporal_breakdown
    time per kernel name udf: dur.sum() by name       built-in: kernel_breakdown (its
                                                      "kernels" side table)

    python benchmarks/bench_udf.py --events 10000000 --runs 5
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BASE = (
    ROOT.parent / "shared" / "traces" / "hta" / "df_index_resolver" / "df_index_resolver.json.gz"
)


def timed(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def replicated(base: Any, n_events: int) -> Any:
    """A Trace whose events are the base's GPU work repeated until there are n_events."""
    import hta_fast
    from hta_fast.frame.select import GPU_WORK_KINDS

    raw = base._raw
    ev = raw.tables["events"]
    rows = np.flatnonzero(np.isin(ev["kind"], GPU_WORK_KINDS))
    reps = -(-n_events // len(rows))
    ts = ev["ts"][rows]
    span = int((ts + np.maximum(ev["dur"][rows], 0)).max() - ts.min()) + 1
    steps = ev["step"][rows]
    step_shift = int(steps.max()) + 1 if len(steps) else 1
    rep = np.repeat(np.arange(reps, dtype=np.int64), len(rows))[:n_events]
    cols = {}
    for name, col in ev.items():
        tiled = np.tile(col[rows], reps)[:n_events]
        if name == "ts":
            tiled = tiled + rep * span
        elif name == "step":
            tiled = np.where(tiled >= 0, tiled + (rep * step_shift).astype(np.int32), -1).astype(
                np.int32
            )
        elif name in ("partner", "parent", "correlation", "external_id"):
            tiled = np.full(n_events, -1, col.dtype)
        cols[name] = np.ascontiguousarray(tiled)
    tables = {
        name: ({k: v[:0] for k, v in t.items()} if name != "events" else cols)
        for name, t in raw.tables.items()
    }
    new_raw = dataclasses.replace(raw, tables=tables)
    return hta_fast.Trace(new_raw, base.meta, rank=0)


def compile_seconds(cache_dir: str, base: Path) -> float:
    """What the first udf.apply call of a new process costs over the second one: importing
    Numba and compiling the metric and its driver, or loading them from the cache."""
    script = (
        "import sys, time, hta_fast\n"
        "from hta_fast import udf\n"
        "from hta_fast.recipes import utilisation\n"
        "t = hta_fast.load(sys.argv[1])\n"
        "t0 = time.perf_counter()\n"
        "udf.apply(utilisation.busy_time, t, by='stream')\n"
        "t1 = time.perf_counter()\n"
        "udf.apply(utilisation.busy_time, t, by='stream')\n"
        "print((t1 - t0) - (time.perf_counter() - t1))\n"
    )
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    out = subprocess.run(
        [sys.executable, "-c", script, str(base)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--base", type=Path, default=DEFAULT_BASE)
    args = ap.parse_args()

    import hta_fast
    from hta_fast import udf
    from hta_fast.analysis.kernel_breakdown import kernel_breakdown
    from hta_fast.analysis.temporal import temporal_breakdown
    from hta_fast.recipes import utilisation

    @udf.metric(name="time")
    def total_time(dur: np.ndarray) -> int:
        return dur.sum()

    with tempfile.TemporaryDirectory() as cache:
        cold = compile_seconds(cache, args.base)
        warm = compile_seconds(cache, args.base)

    trace = replicated(hta_fast.load(str(args.base)), args.events)
    n = len(trace.column("events", "ts"))

    # Answers first: the metric and the analysis must agree.
    udf.apply(utilisation.busy_time, trace)  # the first call compiles
    udf.apply(total_time, trace, by="name")
    tb = temporal_breakdown(trace).table.to_pylist()[0]
    busy = udf.apply(utilisation.busy_time, trace).table.to_pylist()[0]["busy"]
    assert busy == tb["kernel_time"] - tb["idle_time"], (busy, tb)
    kb = kernel_breakdown(trace, num_kernels=1 << 30)["kernels"].to_pandas()
    per_name = udf.apply(total_time, trace, by="name").to_pandas()
    want = kb.groupby("name")["sum"].sum().sort_index()
    got = per_name.set_index("name")["time"].sort_index()
    assert (want == got.loc[want.index]).all() and got.sum() == want.sum()

    rows = []
    pairs = [
        (
            "busy time per rank",
            lambda: udf.apply(utilisation.busy_time, trace),
            lambda: temporal_breakdown(trace),
        ),
        (
            "time per kernel name",
            lambda: udf.apply(total_time, trace, by="name"),
            lambda: kernel_breakdown(trace, num_kernels=1 << 30),
        ),
    ]
    for label, mine, builtin in pairs:
        t_udf, _ = timed(mine, args.runs)
        t_builtin, _ = timed(builtin, args.runs)
        rows.append((label, t_udf, t_builtin))

    print(f"{n} GPU events ({args.base.name} repeated), medians of {args.runs} runs")
    print()
    print("| question | udf metric s | built-in analysis s | udf / built-in |")
    print("|---|---|---|---|")
    for label, a, b in rows:
        print(f"| {label} | {a:.3f} | {b:.3f} | {a / b:.2f}x |")
    print()
    print(
        f"first call in a new process, over the second: {cold:.2f} s with an empty Numba "
        f"cache (import Numba, compile), {warm:.2f} s with it cached (import Numba, load)"
    )
    print(
        json.dumps(
            {
                "events": n,
                "pairs": [{"question": q, "udf_s": a, "builtin_s": b} for q, a, b in rows],
                "compile_cold_s": cold,
                "compile_cached_s": warm,
            }
        )
    )


if __name__ == "__main__":
    main()
