"""CUDA queue length: how much work sits in each stream's queue, launched but not started.

Every runtime or driver call that queued GPU work (a kernel, memcpy or memset launch, a graph
launch) adds one to the queue of the stream its first GPU event runs on when the call starts,
and leaves that queue when the event starts on the GPU. A graph launch is one entry. The result is a step function per
(rank, stream), with time-weighted statistics and the time spent at or above a full queue.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from ..frame import derived, select
from ..frame.fields import NS
from ..frame.result import Result
from ..frame.select import Ranks, Selection, Steps, Streams, Window
from ..loading.rank_info import stream_source
from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace
from ..traceset import TraceSet
from .tensorboard.columns import table_of

__all__ = ["queue_length"]

QUANTILES = (0.25, 0.5, 0.75)


def queue_pairs(
    trace: Trace, mask: Optional[np.ndarray], window: Window = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The launches counted in the queues: one entry per runtime/driver call that queued GPU
    work, on the stream of its first GPU event, from the call's start until that event starts
    (a graph launch is one entry, however many kernels it runs).

    Returns (gpu_rows, launch_ts, gpu_ts, unlinked): the first GPU event of each launch kept by
    `mask`, the start of the launch and of that event (clipped to `window` when given, where
    entries whose time in the queue misses the window are dropped), and how many kept GPU
    work rows had no launch.
    """
    host, rows, unlinked_rows = derived.remember(
        trace, "queue_pairs", lambda: _all_queue_pairs(trace)
    )
    if mask is not None:
        keep = mask[rows]
        host, rows = host[keep], rows[keep]
        unlinked_rows = unlinked_rows[mask[unlinked_rows]]
    unlinked = len(unlinked_rows)
    ts = trace.column("events", "ts")
    launch_ts = ts[host]
    gpu_ts = ts[rows]
    if window is not None:
        w0, w1 = int(window[0]), int(window[1])
        keep = (np.minimum(launch_ts, gpu_ts) < w1) & (np.maximum(launch_ts, gpu_ts) >= w0)
        rows, launch_ts, gpu_ts = rows[keep], launch_ts[keep], gpu_ts[keep]
        launch_ts = np.clip(launch_ts, w0, w1)
        gpu_ts = np.clip(gpu_ts, w0, w1)
    return rows, launch_ts, gpu_ts, unlinked


HOST_KINDS = np.array([EventKind.runtime, EventKind.driver], np.uint8)


def _all_queue_pairs(trace: Trace) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(launch rows, their first GPU event rows) in GPU row order, and the GPU work rows
    with no launch."""
    partner = trace.column("events", "partner")
    work = derived.kind_mask(trace, GPU_WORK_KINDS)
    host = np.flatnonzero(derived.kind_mask(trace, HOST_KINDS) & (partner >= 0))
    host = host[work[partner[host]]]
    rows = partner[host]
    order = np.argsort(rows, kind="stable")
    return host[order], rows[order], np.flatnonzero(work & (partner < 0))


def queue_steps(stream: np.ndarray, launch_ts: np.ndarray, gpu_ts: np.ndarray) -> ops.StepSeries:
    """Queue length per stream as a step function (one row per distinct time of a stream)
    from its queue_pairs entries: +1 at each launch, -1 when its GPU event starts."""
    n = len(stream)
    return ops.step_counter(
        np.concatenate([stream, stream]),
        np.concatenate([launch_ts, gpu_ts]),
        np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)]),
    )


def _first_per_group(group: np.ndarray, values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """values[i] of the first row i of each group in `groups` (sorted distinct)."""
    order = np.argsort(group, kind="stable")
    g = group[order]
    first = np.searchsorted(g, groups, side="left")
    return values[order][first]


def queue_length(
    traces: Union[Trace, TraceSet],
    *,
    max_queue_length: int = 1024,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """Queue length per (rank, stream) over time.

    Main table: one row per change point (distinct time at which a stream's queue changes):
    rank, stream, pid, tid (of the stream's GPU events), ts (ns), queue_length (after every
    change at ts). The value holds until the stream's next row.

    Side tables:
      summary   per (rank, stream), time-weighted over [first change, last change]: duration,
                mean, min, p25, p50, p75, max; change_points and change_point_mean (each change
                point counted once, whatever time it holds)
      blocked   per (rank, stream): blocked_time, the time the queue was at or above
                max_queue_length, and blocked_pct, that time as a percentage of the rank's
                trace duration (first start to last end of its selected events)
    """
    sel = select.selection_of(selection, ranks, steps, window, streams)
    mask_sel = sel if sel.window is None else _without_window(sel)
    notes = []
    series: list[dict[str, np.ndarray]] = []
    summaries: list[dict[str, np.ndarray]] = []
    blocked: list[dict[str, np.ndarray]] = []
    for rank, trace, mask in select.each_rank(traces, mask_sel):
        rows, launch_ts, gpu_ts, unlinked = queue_pairs(trace, mask, sel.window)
        if unlinked:
            notes.append(
                f"rank {rank}: {unlinked} GPU events have no launch in the trace and "
                "are not counted in any queue"
            )
        if len(rows) == 0:
            continue
        notes += _stream_notes(rank, trace, launch_ts, gpu_ts)
        stream = trace.column("events", "stream")[rows].astype(np.int64)
        s = queue_steps(stream, launch_ts, gpu_ts)
        groups = np.unique(stream)
        series.append(_series_columns(rank, trace, rows, stream, groups, s))
        st = ops.weighted_stats(
            s.group, s.ts, s.value, quantiles=QUANTILES, thresholds=[max_queue_length]
        )
        summaries.append(_summary_columns(rank, groups, s, st))
        blocked.append(_blocked_columns(rank, groups, st, _trace_span(trace, mask, sel.window)))
    table = _joined(series, SERIES_SCHEMA)
    if not series:
        notes.append("no GPU work linked to a launch: no queue to measure")
    return Result(
        "queue_length",
        table,
        tables={
            "summary": _joined(summaries, SUMMARY_SCHEMA),
            "blocked": _joined(blocked, BLOCKED_SCHEMA),
        },
        notes=notes,
        params={"max_queue_length": max_queue_length, "selection": sel},
    )


def _stream_notes(rank: int, trace: Trace, launch_ts: np.ndarray, gpu_ts: np.ndarray) -> list[str]:
    """The notes on a rank's queues: where its streams come from, GPU events that start
    before their launch."""
    notes = []
    source = stream_source(trace)
    if source is not None:
        notes.append(f"rank {rank}: {source}")
    early = int(np.count_nonzero(gpu_ts < launch_ts))
    if early:
        notes.append(
            f"rank {rank}: {early} GPU events start before their launch (CPU and "
            "GPU clocks disagree); their queue goes below zero"
        )
    return notes


def _series_columns(
    rank: int,
    trace: Trace,
    rows: np.ndarray,
    stream: np.ndarray,
    groups: np.ndarray,
    s: ops.StepSeries,
) -> dict[str, np.ndarray]:
    """The rank's rows of the main table: its streams' change points, with each stream's
    pid and tid."""
    pid = _first_per_group(stream, trace.column("events", "pid")[rows], groups)
    tid = _first_per_group(stream, trace.column("events", "tid")[rows], groups)
    where = np.searchsorted(groups, s.group)
    return dict(
        rank=np.full(len(s.ts), rank, np.int64),
        stream=s.group,
        pid=pid[where],
        tid=tid[where],
        ts=s.ts,
        queue_length=s.value,
    )


def _summary_columns(
    rank: int, groups: np.ndarray, s: ops.StepSeries, st: ops.WeightedStats
) -> dict[str, np.ndarray]:
    """The rank's rows of the "summary" table: each stream's time-weighted statistics."""
    counts = np.diff(np.searchsorted(s.group, groups, side="left"), append=len(s.group))
    return dict(
        rank=np.full(len(groups), rank, np.int64),
        stream=st.groups,
        duration=st.duration,
        mean=st.mean,
        min=st.min,
        p25=st.quantiles[:, 0],
        p50=st.quantiles[:, 1],
        p75=st.quantiles[:, 2],
        max=st.max,
        change_points=counts.astype(np.int64),
        change_point_mean=st.change_point_mean,
    )


def _blocked_columns(
    rank: int, groups: np.ndarray, st: ops.WeightedStats, span: int
) -> dict[str, np.ndarray]:
    """The rank's rows of the "blocked" table: each stream's time at or above the maximum
    queue length, and its share of the rank's span (ns)."""
    at_max = st.time_at_or_above[:, 0].astype(np.int64)
    pct = at_max / span * 100.0 if span > 0 else np.zeros(len(at_max))
    return dict(
        rank=np.full(len(groups), rank, np.int64),
        stream=st.groups,
        blocked_time=at_max,
        blocked_pct=pct.astype(np.float64),
    )


def _joined(parts: list[dict[str, np.ndarray]], schema: pa.Schema) -> pa.Table:
    """One table of the ranks' columns, each built once (a table a rank costs more than
    its few rows on thousands of ranks)."""
    return table_of({f.name: [p[f.name] for p in parts] for f in schema}, schema)


def _without_window(sel: Selection) -> Selection:
    import dataclasses

    return dataclasses.replace(sel, window=None)


def _trace_span(trace: Trace, mask: Optional[np.ndarray], window: Window) -> int:
    """First start to last end of the selected events (clipped to the window)."""
    if mask is None and window is None:  # the whole trace's: the same for every call
        return derived.remember(trace, "span", lambda: _selected_span(trace, None, None))
    return _selected_span(trace, mask, window)


def _selected_span(trace: Trace, mask: Optional[np.ndarray], window: Window) -> int:
    ts = trace.column("events", "ts")
    end = ts + np.maximum(trace.column("events", "dur"), 0)
    if mask is not None:
        ts, end = ts[mask], end[mask]
    if window is not None:
        keep = (ts < window[1]) & (end >= window[0])
        ts, end = np.clip(ts[keep], *window), np.clip(end[keep], *window)
    if len(ts) == 0:
        return 0
    return int(end.max() - ts.min())


SERIES_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("queue_length", pa.int64()),
    ]
)
SUMMARY_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("duration", pa.int64(), metadata=NS),
        pa.field("mean", pa.float64()),
        pa.field("min", pa.float64()),
        pa.field("p25", pa.float64()),
        pa.field("p50", pa.float64()),
        pa.field("p75", pa.float64()),
        pa.field("max", pa.float64()),
        pa.field("change_points", pa.int64()),
        pa.field("change_point_mean", pa.float64()),
    ]
)
BLOCKED_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("blocked_time", pa.int64(), metadata=NS),
        pa.field("blocked_pct", pa.float64()),
    ]
)
