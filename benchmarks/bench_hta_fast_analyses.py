#!/usr/bin/env python3
"""Time every analysis with hta_fast on one trace folder, after loading; print one JSON line.

Run as a child of bench_analyses.py. Each analysis is timed twice over: the native function
(hta_fast.analysis, Arrow out) and the compat method (hta_fast.compat, pandas out, the
reference's shape), each the median of --runs calls. Names follow
tests/reference/run_reference.py so the two tools' timings pair up.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _measure import timed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("folder")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    import hta_fast
    from hta_fast.analysis import (
        annotations,
        idle_time,
        kernel_breakdown,
        launch_stats,
        memory_bw,
        overlap,
        queue_length,
        steps,
        stragglers,
        temporal,
    )
    from hta_fast.analysis.ops import op_kernels
    from hta_fast.compat import TraceAnalysis

    t0 = time.perf_counter()
    traces = hta_fast.load_dir(args.folder)
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ta = TraceAnalysis(trace_dir=args.folder)
    compat_load_s = time.perf_counter() - t0
    ranks = list(traces)

    native = {
        "temporal_breakdown": lambda: temporal.temporal_breakdown(traces),
        "idle_time_breakdown": lambda: idle_time.idle_time_breakdown(traces),
        "kernel_breakdown": lambda: kernel_breakdown.kernel_breakdown(traces),
        "comm_comp_overlap": lambda: overlap.comm_comp_overlap(traces),
        "queue_length_summary": lambda: queue_length.queue_length(traces),
        "memory_bw_summary": lambda: memory_bw.memory_bandwidth(traces),
        "cuda_kernel_launch_stats": lambda: launch_stats.launch_stats(traces),
        "aten_op_kernels_and_delay": lambda: op_kernels.op_kernels(traces),
        "gpu_user_annotation_breakdown": lambda: annotations.user_annotation_breakdown(traces),
        "profiler_steps": lambda: steps.profiler_steps(traces),
    }
    if len(ranks) > 1:
        native["potential_stragglers"] = lambda: stragglers.stragglers(traces)
    compat = {
        "temporal_breakdown": lambda: ta.get_temporal_breakdown(),
        # ranks as tests/reference/run_reference.py passes them (all ranks)
        "idle_time_breakdown": lambda: ta.get_idle_time_breakdown(ranks=ranks),
        "kernel_breakdown": lambda: ta.get_gpu_kernel_breakdown(),
        "comm_comp_overlap": lambda: ta.get_comm_comp_overlap(),
        "queue_length_time_series": lambda: ta.get_queue_length_time_series(ranks=ranks),
        "queue_length_summary": lambda: ta.get_queue_length_summary(ranks=ranks),
        "memory_bw_time_series": lambda: ta.get_memory_bw_time_series(ranks=ranks),
        "memory_bw_summary": lambda: ta.get_memory_bw_summary(ranks=ranks),
        "cuda_kernel_launch_stats": lambda: [
            ta.get_cuda_kernel_launch_stats(ranks=[r]) for r in ranks
        ],
        "aten_op_kernels_and_delay": lambda: [
            ta.get_aten_op_kernels_and_delay(ranks=[r]) for r in ranks
        ],
        "gpu_kernels_with_user_annotations": lambda: [
            ta.get_gpu_kernels_with_user_annotations(rank=r) for r in ranks
        ],
        "gpu_user_annotation_breakdown": lambda: ta.get_gpu_user_annotation_breakdown(),
        "profiler_steps": lambda: ta.get_profiler_steps(),
        "counters_trace": lambda: ta.generate_trace_with_counters(
            ranks=ranks, output_suffix="_bench"
        ),
    }
    if len(ranks) > 1:
        compat["potential_stragglers"] = lambda: ta.get_potential_stragglers()

    out = {
        "tool": "hta_fast",
        "load_s": load_s,
        "compat_load_s": compat_load_s,
        "native": {},
        "compat": {},
        "compat_first": {},
        "errors": {},
    }
    # The compat methods first, in the reference's notebook order: each method's first call
    # pays for the per-trace arrays it is the first to need (hta_fast.frame.derived), as
    # in a notebook; the median is over repeated calls.
    for group, table in (("compat", compat), ("native", native)):
        for name, fn in table.items():
            try:
                t0 = time.perf_counter()
                fn()
                first = time.perf_counter() - t0
                runs = 0 if name == "counters_trace" else args.runs
                out[group][name] = timed(fn, runs) if runs else first
                if group == "compat":
                    out["compat_first"][name] = first
            except Exception as e:  # a benchmark reports, it does not stop
                out["errors"][f"{group}:{name}"] = f"{type(e).__name__}: {e}"
    # The counters copies land beside the traces (the reference's behaviour): remove them so
    # the folder loads the same next time.
    for path in Path(args.folder).glob("*_bench*"):
        path.unlink()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
