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

from typing import Optional, Union

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

__all__ = ["idle_time_breakdown"]

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
    stats: dict[str, list] = {f.name: [] for f in STATS_SCHEMA}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w = gpu_work(trace, mask, sel.window)
        if len(w.rows) == 0:
            notes.append(f"rank {rank}: no GPU work (kernels, memcpy, memset)")
            continue
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
        if sel.streams is not None:  # the order asked for
            order = np.array(
                [s for s in dict.fromkeys(sel.streams) if s in set(uniq.tolist())], uniq.dtype
            )
        # Per (stream, category): total length and count of intervals, in one pass.
        slot = np.searchsorted(uniq, gstream) * 3 + cat
        size = 3 * len(uniq)
        totals = np.bincount(slot, weights=glen, minlength=size).astype(np.int64)
        counts = np.bincount(slot, minlength=size)
        for s in order.tolist():
            k = int(np.searchsorted(uniq, s)) * 3
            whole = int(totals[k : k + 3].sum())
            for c, name in enumerate(CATEGORIES):
                out["rank"].append(rank)
                out["stream"].append(s)
                out["idle_category"].append(name)
                out["idle_time"].append(int(totals[k + c]))
                out["idle_time_ratio"].append(int(totals[k + c]) / whole if whole else None)
                out["intervals"].append(int(counts[k + c]))
                if interval_stats:
                    _add_stats(stats, rank, s, name, glen[(gstream == s) & (cat == c)])
    table = pa.table({f.name: array_of(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
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
