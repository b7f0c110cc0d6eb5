"""The step-time breakdown of the TensorBoard profiler plugin's overview: each step's time
(its window: step_windows) split into what ran, one category per instant.

Where several things run at once, the instant goes to the first of

    kernel         a GPU kernel other than a collective's
    memcpy         a GPU copy
    memset         a GPU fill
    communication  a collective's kernel (KernelClass.COMM), or a host collective call
                   (nccl:* / gloo:*)
    runtime        a CUDA runtime or driver call on the host (cudaLaunchKernel, ...)
    dataloader     a data-loading host event (frame.derived.DATALOADER: a DataLoader's
                   __next__, a DataPipe graph's iteration)
    cpu_exec       any other CPU operator or user annotation (not the ProfilerStep itself)
    other          nothing of the above

so the categories add up to the step's time. Python function events (with_stack traces)
are no category, as in the plugin: they would cover every instant of the step.

Per (rank, step) in ns and as percentages of the step (the main table); side table
"ranks": per rank the mean step and its mean split (the plugin's overview numbers).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ... import ops
from ...frame import derived, select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind, KernelClass
from ...steps.step_windows import StepWindows, step_windows, window_notes
from ...trace import Trace
from ...traceset import TraceSet
from .columns import pcts, table_of

__all__ = ["step_breakdown", "CATEGORIES"]

CATEGORIES = (
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "dataloader",
    "cpu_exec",
    "other",
)
# Host collective calls the plugin counts as communication (its NCCL and Gloo op names).
HOST_COLLECTIVE = r"^(nccl|gloo):"
_HOST_OPS = (EventKind.cpu_op, EventKind.user_annotation)
_LAUNCH_CALLS = (EventKind.runtime, EventKind.driver)

_SPLIT = [pa.field(c, pa.int64(), metadata=NS) for c in CATEGORIES] + [
    pa.field(f"{c}_pct", pa.float64(), metadata=PCT) for c in CATEGORIES
]
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        *_SPLIT,
    ]
)
RANKS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("steps", pa.int64()),
        pa.field("dur", pa.float64(), metadata={**NS, "description": "mean step time"}),
        *[
            pa.field(f.name, pa.float64(), metadata=f.metadata) if f.name in CATEGORIES else f
            for f in _SPLIT
        ],
    ]
)


def category_intervals(
    trace: Trace, mask: Optional[np.ndarray], window: Optional[tuple[int, int]] = None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(starts, ends) of the events of each category but "other", in CATEGORIES order,
    before the priority rule; kept by mask (None: all), GPU work clipped to window."""
    col = trace.column
    w = gpu_work(trace, mask, window)
    kind = col("events", "kind")[w.rows]
    kernel = kind == EventKind.kernel
    comm = kernel & (w.kclass == KernelClass.COMM)

    def host(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if mask is not None:
            rows = rows[mask[rows]]
        ts = col("events", "ts")[rows]
        return ts, ts + np.maximum(col("events", "dur")[rows], 0)

    loader = derived.rows_named(trace, derived.DATALOADER, _HOST_OPS)
    collective = derived.rows_named(trace, HOST_COLLECTIVE, _HOST_OPS)
    markers = _step_markers(trace)
    # The host ops but those (what setdiff1d gives, by a mask: no sorts)
    exec_mask = derived.kind_mask(trace, _HOST_OPS).copy()
    for taken in (loader, collective, markers[(markers >= 0) & (markers < len(exec_mask))]):
        exec_mask[taken] = False
    cpu_exec = np.flatnonzero(exec_mask)
    comm_starts, comm_ends = host(collective)
    return [
        (w.starts[kernel & ~comm], w.ends[kernel & ~comm]),
        (w.starts[kind == EventKind.memcpy], w.ends[kind == EventKind.memcpy]),
        (w.starts[kind == EventKind.memset], w.ends[kind == EventKind.memset]),
        (np.r_[w.starts[comm], comm_starts], np.r_[w.ends[comm], comm_ends]),
        host(np.flatnonzero(derived.kind_mask(trace, _LAUNCH_CALLS))),
        host(loader),
        host(cpu_exec),
    ]


def _step_markers(trace: Trace) -> np.ndarray:
    """The rows of the events that are their step (a ProfilerStep#N, a pass's annotation):
    they span the whole step, so they are no category. A step marked by an event shorter
    than itself (the one "host" step marks its first host event) leaves that event in."""
    rows = trace.column("steps", "row")
    same = (trace.column("events", "ts")[rows] == trace.column("steps", "ts")) & (
        trace.column("events", "dur")[rows] == trace.column("steps", "dur")
    )
    return rows[same]


def split_windows(
    windows: StepWindows, intervals: list[tuple[np.ndarray, np.ndarray]]
) -> np.ndarray:
    """int64 ns, (steps, categories): each window's time given to the first category (in
    the order of `intervals`, then "other") running at each instant.

    One sweep of every category's intervals cut at the windows' bounds, grouped by window,
    with the window itself as the last class: the time of each set of active classes that
    holds the window goes to its first category, or to "other" when it holds none."""
    n_win, n_cat = len(windows.ts), len(intervals)
    out = np.zeros((n_win, n_cat + 1), np.int64)
    if n_win == 0:
        return out
    win_ts = np.asarray(windows.ts, np.int64)
    win_end = np.asarray(windows.end, np.int64)
    starts = np.concatenate([np.asarray(a, np.int64) for a, _ in intervals] + [win_ts])
    ends = np.concatenate([np.asarray(b, np.int64) for _, b in intervals] + [win_end])
    cls = np.repeat(np.arange(n_cat + 1), [len(a) for a, _ in intervals] + [n_win])
    # each interval once per window it meets, cut to that window (windows sorted, disjoint)
    first = np.searchsorted(win_end, starts, side="right")
    count = np.maximum(np.searchsorted(win_ts, ends, side="left") - first, 0)
    item = np.repeat(np.arange(len(starts)), count)
    win = first[item] + np.arange(len(item)) - np.repeat(np.cumsum(count) - count, count)
    cut_ts = np.maximum(starts[item], win_ts[win])
    cut_end = np.minimum(ends[item], win_end[win])
    swept = ops.grouped_class_sweep(win, cut_ts, cut_end, cls[item], n_cat + 1)
    # per subset of active classes: its first category, or "other" (n_cat)
    subsets = np.arange(1 << (n_cat + 1))
    owner = np.full(len(subsets), n_cat, np.int64)
    for k in reversed(range(n_cat)):
        owner[(subsets >> k) & 1 == 1] = k
    in_window = (subsets >> n_cat) & 1 == 1
    for k in range(n_cat + 1):
        out[swept.groups, k] = swept.time[:, in_window & (owner == k)].sum(axis=1)
    return out


def step_breakdown(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank and step: ts, dur (the step's window, ns), the time of each of CATEGORIES
    (ns; they add up to dur) and its share of dur (%). Side table "ranks": per rank the
    number of steps, the mean step time and the mean of each category (ns, and % of the
    mean step)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    cols: dict[str, list] = {f.name: [] for f in SCHEMA}
    means: dict[str, list] = {f.name: [] for f in RANKS}
    notes: list[str] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        sw = step_windows(trace, mask, sel.window)
        notes += window_notes(rank, sw, trace, mask)
        if len(sw.step) == 0:
            continue
        split = split_windows(sw, category_intervals(trace, mask, sel.window))
        dur = sw.dur
        cols["rank"].append(np.full(len(dur), rank, np.int64))
        cols["step"].append(sw.step)
        cols["ts"].append(sw.ts)
        cols["dur"].append(dur)
        mean_dur = float(dur.mean())
        means["rank"].append(rank)
        means["steps"].append(len(dur))
        means["dur"].append(mean_dur)
        for k, c in enumerate(CATEGORIES):
            cols[c].append(split[:, k])
            mean = float(split[:, k].mean())
            means[c].append(mean)
            means[f"{c}_pct"].append(100.0 * mean / mean_dur if mean_dur > 0 else None)
    if cols["dur"]:  # the shares of all ranks' steps at once, not an array per rank
        every_dur = np.concatenate(cols["dur"])
        for c in CATEGORIES:
            cols[f"{c}_pct"] = [pcts(np.concatenate(cols[c]), every_dur)]
    return Result(
        "step_breakdown",
        table_of(cols, SCHEMA),
        tables={"ranks": table_of(means, RANKS)},
        notes=notes,
        params={"selection": sel},
    )
