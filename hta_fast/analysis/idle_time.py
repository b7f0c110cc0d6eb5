"""Idle time breakdown: why each GPU stream sits idle between its kernels.

On each stream, GPU work (kernels, memcpy, memset) is taken in start order; an idle
interval lies before every event that starts at or after the latest end of the events
before it, from that end to its start (an event that starts earlier overlaps the stream's
busy time and ends no interval). Touching events give an interval of length zero. Each
interval is classed by the event that ends it:

    host_wait    its launch began after the interval began: the CPU had not queued it yet
    kernel_wait  otherwise, shorter than consecutive_kernel_delay: the gap between queued
                 kernels that the launch machinery needs
    other        otherwise (longer gaps behind already queued work, events without a launch)

The first event of a stream ends no interval.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from .._arrow import array_of
from ..frame import derived, select
from ..frame.fields import NS
from ..frame.gpu_work import GpuWork, gpu_work
from ..frame.result import Result
from ..frame.select import Ranks, Steps, Streams, Window
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["idle_time_breakdown", "idle_time_totals"]

CATEGORIES = ("host_wait", "kernel_wait", "other")
HOST_WAIT, KERNEL_WAIT, OTHER = range(3)

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("stream", pa.int32()),
        pa.field("idle_category", pa.string()),
        pa.field("idle_time", pa.int64(), metadata=NS),
        pa.field("idle_time_ratio", pa.float64()),
        pa.field("intervals", pa.int64()),
    ]
)
STATS_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("stream", pa.int32()),
        pa.field("idle_category", pa.string()),
        pa.field("count", pa.int64()),
        *[
            pa.field(n, pa.float64(), metadata=NS)
            for n in ("mean", "std", "min", "p25", "p50", "p75", "max")
        ],
    ]
)


def stream_idle_intervals(
    starts: np.ndarray, ends: np.ndarray, stream: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Idle intervals of every stream: (stream, gap start, gap length, row ending it).

    Rows are indexes into the inputs. An event starting exactly at the latest end yields a
    gap of length zero, while any real overlap still yields none (ops.group_gaps with
    touching=True).
    """
    g = ops.group_gaps(stream.astype(np.int64), starts, ends, touching=True)
    return g.group, g.starts, g.ends - g.starts, g.next_index


def idle_time_breakdown(
    traces: Union[Trace, TraceSet],
    *,
    consecutive_kernel_delay: int = 30_000,
    interval_stats: bool = False,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per (rank, stream, idle_category): idle_time (int64 ns), idle_time_ratio (its share
    of the stream's idle time; null when the stream is never idle) and the number of
    intervals. consecutive_kernel_delay is in ns. Streams come in order of their first
    event in the trace; every stream has the three categories, in the order host_wait,
    kernel_wait, other.

    interval_stats=True adds the side table "interval_stats": per (rank, stream, category)
    count, mean, std (ddof=1), min, p25, p50, p75 (linear interpolation) and max of the
    interval lengths, in ns (null where undefined).
    """
    delay = int(consecutive_kernel_delay)
    if delay < 0:
        raise ValueError(f"consecutive_kernel_delay must be >= 0 ns, got {delay}")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    out["whole"] = []  # per row: its stream's idle time (no ratio where 0)
    stats: dict[str, list] = {f.name: [] for f in STATS_SCHEMA}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w = gpu_work(trace, mask, sel.window)
        if len(w.rows) == 0:
            notes.append(f"rank {rank}: no GPU work (kernels, memcpy, memset)")
            continue
        uniq, order, totals, counts, gstream, glen, cat = _rank_idle(trace, w, mask, delay)
        if sel.streams is not None:  # the order asked for
            order = np.array(
                [s for s in dict.fromkeys(sel.streams) if s in set(uniq.tolist())], uniq.dtype
            )
        # A row per (stream, category), the streams in `order`: all of them at once.
        slot = (np.searchsorted(uniq, order).astype(np.int64)[:, None] * 3 + np.arange(3)).ravel()
        whole = np.repeat(totals[slot].reshape(-1, 3).sum(axis=1), 3)
        out["rank"].append(np.full(len(slot), rank, np.int64))
        out["stream"].append(np.repeat(order.astype(np.int64), 3))
        out["idle_category"].extend(CATEGORIES * len(order))
        out["idle_time"].append(totals[slot])
        out["idle_time_ratio"].append(totals[slot] / np.where(whole > 0, whole, 1))
        out["whole"].append(whole)
        out["intervals"].append(counts[slot].astype(np.int64))
        if interval_stats:
            for s in order.tolist():
                for c, name in enumerate(CATEGORIES):
                    _add_stats(stats, rank, s, name, glen[(gstream == s) & (cat == c)])
    joined: dict[str, Any] = {
        k: np.concatenate(v) if v else np.zeros(0, np.int64)
        for k, v in out.items()
        if k != "idle_category"
    }
    joined["idle_category"] = out["idle_category"]
    table = pa.table(
        {
            f.name: array_of(
                joined[f.name],
                f.type,
                mask=joined["whole"] == 0 if f.name.endswith("ratio") else None,
            )
            for f in SCHEMA
        },
        schema=SCHEMA,
    )
    tables = {}
    if interval_stats:
        tables["interval_stats"] = pa.table(
            {f.name: array_of(stats[f.name], f.type) for f in STATS_SCHEMA}, schema=STATS_SCHEMA
        )
    return Result(
        "idle_time_breakdown",
        table,
        tables=tables,
        notes=notes,
        params={
            "consecutive_kernel_delay": delay,
            "interval_stats": interval_stats,
            "selection": sel,
        },
    )


def idle_time_totals(
    trace: Trace, *, consecutive_kernel_delay: int = 30_000, window: Window = None
) -> tuple[int, int]:
    """(host_wait, all) idle time of one rank's streams in ns: the sums of
    idle_time_breakdown's idle_time over its host_wait rows and over all its rows, without
    the table (the doctor asks this of every rank)."""
    delay = int(consecutive_kernel_delay)
    if delay < 0:
        raise ValueError(f"consecutive_kernel_delay must be >= 0 ns, got {delay}")
    host_wait = idle = 0
    for _, t, mask in select.each_rank(trace, select.Selection(window=window)):
        w = gpu_work(t, mask, window)
        if len(w.rows):
            totals = _rank_idle(t, w, mask, delay)[2]
            host_wait += int(totals[HOST_WAIT::3].sum())
            idle += int(totals.sum())
    return host_wait, idle


def _rank_idle(
    trace: Trace, w: GpuWork, mask: Optional[np.ndarray], delay: int
) -> tuple[np.ndarray, ...]:
    """One rank's idle intervals, classed: (streams ascending, in order of first event,
    total length and count per (stream, category) (index stream * 3 + category), and per
    interval its stream, length and category)."""
    gstream, gstart, glen, nxt = stream_idle_intervals(w.starts, w.ends, w.stream)
    # The launch of the event that ends each interval.
    partner = trace.column("events", "partner")[w.rows[nxt]]
    launch_ts = np.where(
        partner >= 0,
        trace.column("events", "ts")[np.maximum(partner, 0)],
        np.iinfo(np.int64).min,
    )
    cat = np.where(launch_ts > gstart, HOST_WAIT, np.where(glen < delay, KERNEL_WAIT, OTHER))
    uniq, order = _streams(trace, w, mask)
    # Per (stream, category): total length and count of intervals, in one pass.
    slot = np.searchsorted(uniq, gstream) * 3 + cat
    size = 3 * len(uniq)
    totals = np.bincount(slot, weights=glen, minlength=size).astype(np.int64)
    counts = np.bincount(slot, minlength=size)
    return uniq, order, totals, counts, gstream, glen, cat


def _streams(trace: Trace, w: GpuWork, mask: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The streams of this GPU work: ascending, and in order of their first event."""

    def compute() -> tuple[np.ndarray, np.ndarray]:
        uniq, first = np.unique(w.stream, return_index=True)
        return uniq, uniq[np.argsort(first, kind="stable")]

    return derived.remember_under(trace, "gpu_work_streams", mask, compute)


def _add_stats(stats: dict, rank: int, stream: int, category: str, lens: np.ndarray) -> None:
    n = len(lens)
    stats["rank"].append(rank)
    stats["stream"].append(stream)
    stats["idle_category"].append(category)
    stats["count"].append(n)
    if n == 0:
        for k in ("mean", "std", "min", "p25", "p50", "p75", "max"):
            stats[k].append(None)
        return
    x = lens.astype(np.float64)
    q = np.quantile(x, [0.25, 0.5, 0.75])
    stats["mean"].append(float(x.mean()))
    stats["std"].append(float(x.std(ddof=1)) if n > 1 else None)
    stats["min"].append(float(x.min()))
    stats["p25"].append(float(q[0]))
    stats["p50"].append(float(q[1]))
    stats["p75"].append(float(q[2]))
    stats["max"].append(float(x.max()))
