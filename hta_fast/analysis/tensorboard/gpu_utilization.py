"""GPU utilization two ways: the TensorBoard profiler plugin's, and this package's.

    kernel_busy_of_steps_pct   the plugin's "GPU Utilization": the time at least one kernel
                               runs, inside the steps' windows (step_windows: each step
                               extended to the end of its GPU work), over the steps' time
                               (first window's start to last window's end). Kernels only:
                               memcpy and memset are not busy time to it.
    gpu_work_busy_of_span_pct  the temporal breakdown's: the time any GPU work (kernels,
                               memcpy, memset) runs over the span from the first GPU work to
                               the last (100 - temporal's idle_time_pctg)

Per rank (the main table) and per step (side table "steps": the plugin's number over the
step's window, ours over the GPU work the step launched).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ... import ops
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind
from ...steps.step_windows import step_windows, window_notes, window_totals
from ...trace import Trace
from ...traceset import TraceSet
from .columns import pct, pcts, table_of

__all__ = ["gpu_utilization"]


_PLUGIN = "the TensorBoard profiler plugin's GPU Utilization: kernel busy time / steps' time"
_OURS = "any GPU work's busy time / its span (the temporal breakdown's)"
RANKS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("steps", pa.int64()),
        pa.field("steps_time", pa.int64(), metadata=NS),
        pa.field("kernel_busy_in_steps", pa.int64(), metadata=NS),
        pa.field(
            "kernel_busy_of_steps_pct", pa.float64(), metadata={**PCT, "description": _PLUGIN}
        ),
        pa.field("gpu_work_span", pa.int64(), metadata=NS),
        pa.field("gpu_work_busy", pa.int64(), metadata=NS),
        pa.field("gpu_work_busy_of_span_pct", pa.float64(), metadata={**PCT, "description": _OURS}),
    ]
)
STEPS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("kernel_busy_in_step", pa.int64(), metadata=NS),
        pa.field("kernel_busy_of_step_pct", pa.float64(), metadata={**PCT, "description": _PLUGIN}),
        pa.field("gpu_work_span", pa.int64(), metadata=NS),
        pa.field("gpu_work_busy", pa.int64(), metadata=NS),
        pa.field("gpu_work_busy_of_span_pct", pa.float64(), metadata={**PCT, "description": _OURS}),
    ]
)


def gpu_utilization(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: steps, steps_time, kernel_busy_in_steps (ns) and the plugin's
    kernel_busy_of_steps_pct; gpu_work_span, gpu_work_busy (ns) and our
    gpu_work_busy_of_span_pct. Side table "steps": the same per step (rank, step, ts, dur
    of its window). Percentages are null where the time they divide by is zero."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    per_rank: dict[str, list] = {f.name: [] for f in RANKS}
    per_step: dict[str, list] = {f.name: [] for f in STEPS}
    notes: list[str] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        sw = step_windows(trace, mask, sel.window)
        w = gpu_work(trace, mask, sel.window)
        kernel = trace.column("events", "kind")[w.rows] == EventKind.kernel
        busy = ops.union(w.starts[kernel], w.ends[kernel])
        lo, hi = sw.span
        in_steps = int(window_totals(np.array([lo]), np.array([hi]), *busy)[0]) if hi > lo else 0
        # The temporal breakdown's numbers: its kernel_time and kernel_time - idle_time.
        span = int(w.ends.max() - w.starts.min()) if len(w.rows) else 0
        work_busy = ops.total_length(w.starts, w.ends)
        for name, v in (
            ("rank", rank),
            ("steps", int(np.count_nonzero(sw.step >= 0))),
            ("steps_time", hi - lo),
            ("kernel_busy_in_steps", in_steps),
            ("kernel_busy_of_steps_pct", pct(in_steps, hi - lo)),
            ("gpu_work_span", span),
            ("gpu_work_busy", work_busy),
            ("gpu_work_busy_of_span_pct", pct(work_busy, span)),
        ):
            per_rank[name].append(v)
        notes += window_notes(rank, sw, trace, mask)
        if len(sw.step) == 0:
            continue
        k_busy = window_totals(sw.ts, sw.end, *busy)
        work_step = trace.column("events", "step")[w.rows].astype(np.int64)
        step_span, step_busy = _per_step_work(sw.step, work_step, w.starts, w.ends)
        per_step["rank"].append(np.full(len(sw.step), rank, np.int64))
        per_step["step"].append(sw.step)
        per_step["ts"].append(sw.ts)
        per_step["dur"].append(sw.dur)
        per_step["kernel_busy_in_step"].append(k_busy)
        per_step["kernel_busy_of_step_pct"].append(pcts(k_busy, sw.dur))
        per_step["gpu_work_span"].append(step_span)
        per_step["gpu_work_busy"].append(step_busy)
        per_step["gpu_work_busy_of_span_pct"].append(pcts(step_busy, step_span))
    table = table_of(per_rank, RANKS)
    return Result(
        "gpu_utilization",
        table,
        tables={"steps": table_of(per_step, STEPS)},
        notes=notes,
        params={"selection": sel},
    )


def _per_step_work(
    steps: np.ndarray, work_step: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per step: span and busy time (ns) of the GPU work it launched (step -1, the window of
    a rank without steps: all of its GPU work)."""
    if len(steps) == 1 and steps[0] < 0:
        work_step = np.full(len(work_step), -1, np.int64)
    span = np.zeros(len(steps), np.int64)
    busy = np.zeros(len(steps), np.int64)
    keep = np.isin(work_step, steps)
    if not keep.any():
        return span, busy
    g, s, e = work_step[keep], starts[keep], ends[keep]
    totals = ops.grouped_total(g, s, e)
    order = np.argsort(g, kind="stable")
    bounds = np.flatnonzero(np.r_[True, g[order][1:] != g[order][:-1]])
    lo, hi = np.minimum.reduceat(s[order], bounds), np.maximum.reduceat(e[order], bounds)
    at = np.searchsorted(totals.groups, steps)
    at_ok = np.minimum(at, len(totals.groups) - 1)
    hit = totals.groups[at_ok] == steps
    span[hit] = (hi - lo)[at_ok[hit]]
    busy[hit] = totals.totals[at_ok[hit]]
    return span, busy
