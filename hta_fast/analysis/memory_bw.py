"""Memory bandwidth over time: every memcpy and memset adds its bandwidth over its interval,
summed per (rank, copy type).

The bandwidth is the trace's own "memory bandwidth (GB/s)" argument; where it is missing
(AMD traces, for one) it is bytes / duration when the event says how many bytes it moved
(1 byte/ns = 1 GB/s), else the event is left out and a note says how many were.
Bandwidths are summed as doubles, and a series is exactly 0 wherever no copy runs (decided
by a fixed-point sum at 1e-9 GB/s, which cancels exactly), so no 1e-16 residues remain.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from .._arrow import texts_at
from ..frame import select
from ..frame.fields import NS
from ..frame.result import Result
from ..frame.select import Ranks, Selection, Steps, Streams, Window
from ..schema import EventKind
from ..trace import Trace
from ..traceset import TraceSet
from .tensorboard.columns import table_of

__all__ = ["memory_bandwidth"]

GBPS = {"unit": "GB/s"}
QUANTILES = (0.25, 0.5, 0.75)
FIXED = 1e9  # fixed-point steps per GB/s


def copy_type(name: str, kind: int) -> str:
    """ "Memset", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"...
    from the event's name; "Memcpy Unknown" for a copy whose name says nothing."""
    if kind == EventKind.memset or name.startswith("Memset"):
        return "Memset"
    if name.startswith("Memcpy") and len(name) >= 11:
        return name[:11]
    return "Memcpy Unknown"


def memory_rows(
    trace: Trace, mask: Optional[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of memcpy/memset events kept by mask, their copy types (strings, per row) and
    bandwidth in GB/s (NaN where neither the bandwidth nor the bytes are known)."""
    col = trace.column
    kind = col("events", "kind")
    m = np.isin(kind, np.array([EventKind.memcpy, EventKind.memset], np.uint8))
    if mask is not None:
        m &= mask
    rows = np.flatnonzero(m)
    names = col("events", "name")[rows]
    uniq, inv = np.unique(
        np.stack([names, kind[rows].astype(np.int64)]), axis=1, return_inverse=True
    )
    # only the distinct names become strings (the whole pool would, as a numpy array)
    texts = texts_at(trace.strings, uniq[0]) if len(rows) else []
    types = (
        np.array([copy_type(t, k) for t, k in zip(texts, uniq[1].tolist())], dtype=object)[
            inv.reshape(-1)
        ]
        if len(rows)
        else np.array([], object)
    )
    bw = np.full(len(rows), np.nan)
    ka_rows = col("kernel_args", "row")
    if len(ka_rows):
        order = np.argsort(ka_rows, kind="stable")
        pos = np.minimum(np.searchsorted(ka_rows[order], rows), len(order) - 1)
        src = order[pos]
        hit = ka_rows[src] == rows
        gbps = col("kernel_args", "memory_bandwidth_gbps").astype(np.float64)[src]
        nbytes = col("kernel_args", "bytes").astype(np.float64)[src]
        dur = col("events", "dur")[rows].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            derived = np.where((nbytes >= 0) & (dur > 0), nbytes / dur, np.nan)
        have_bw = hit & np.isfinite(gbps) & (gbps >= 0)
        bw = np.where(have_bw, gbps, np.where(hit, derived, np.nan))
    return rows, types, bw


def memory_bandwidth(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """Bandwidth per (rank, copy type) over time.

    Main table: one row per change point: rank, name (copy type), pid (of the type's first
    event), ts (ns), memory_bw_gbps (the sum over the type's copies running from ts until the
    next row). Zero-length copies move nothing over time and add nothing.

    Side table "summary" per (rank, name), time-weighted over the time some copy of that type
    runs (bandwidth > 0): active_time (ns), mean, min, p25, p50, p75, max (GB/s), copies (count)
    and change_points.
    """
    sel = select.selection_of(selection, ranks, steps, window, streams)
    # with a window: every copy that runs in it, clipped to it (not only those starting in it)
    mask_sel = sel if sel.window is None else dataclasses.replace(sel, window=None)
    series, summaries, notes = [], [], []
    for rank, trace, mask in select.each_rank(traces, mask_sel):
        rows, types, bw = memory_rows(trace, mask)
        if sel.window is not None and len(rows):
            ts0 = trace.column("events", "ts")[rows]
            end0 = ts0 + np.maximum(trace.column("events", "dur")[rows], 0)
            keep = (ts0 < sel.window[1]) & ((end0 > sel.window[0]) | (ts0 >= sel.window[0]))
            rows, types, bw = rows[keep], types[keep], bw[keep]
        if len(rows) == 0:
            continue
        unknown = ~np.isfinite(bw)
        if unknown.any():
            notes.append(
                f"rank {rank}: {int(unknown.sum())} of {len(rows)} memcpy/memset events "
                "carry neither a bandwidth nor a byte count; they are counted as 0 GB/s"
            )
        ts = trace.column("events", "ts")[rows]
        end = ts + np.maximum(trace.column("events", "dur")[rows], 0)
        if sel.window is not None:
            ts, end = np.clip(ts, *sel.window), np.clip(end, *sel.window)
        names, code = np.unique(types.astype(str), return_inverse=True)
        code = code.reshape(-1).astype(np.int64)
        s, value = bandwidth_steps(code, ts, end, np.where(unknown, 0.0, bw))
        groups = np.arange(len(names))
        pid = _first_per_group(code, trace.column("events", "pid")[rows], groups)
        series.append(
            {
                "rank": np.full(len(s.ts), rank, np.int64),
                "name": names[s.group].tolist(),
                "pid": pid[s.group],
                "ts": s.ts,
                "memory_bw_gbps": value,
            }
        )
        st = active_stats(s.group, s.ts, value)
        summaries.append(
            {
                "rank": np.full(len(names), rank, np.int64),
                "name": names.tolist(),
                "active_time": st.duration,
                "mean": st.mean,
                "min": st.min,
                "p25": st.quantiles[:, 0],
                "p50": st.quantiles[:, 1],
                "p75": st.quantiles[:, 2],
                "max": st.max,
                "copies": np.bincount(code, minlength=len(names)).astype(np.int64),
                "change_points": np.bincount(s.group, minlength=len(names)).astype(np.int64),
            }
        )
    if not series:
        notes.append("no memcpy or memset events")
    return Result(
        "memory_bandwidth",
        _joined(series, SERIES_SCHEMA),
        tables={"summary": _joined(summaries, SUMMARY_SCHEMA)},
        notes=notes,
        params={"selection": sel},
    )


def _joined(parts: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """One table of the ranks' columns (numpy arrays, or lists of names), each column built
    once: a table a rank costs more than its few rows on thousands of ranks."""
    return table_of(
        {
            f.name: [v for p in parts for v in p[f.name]]
            if parts and isinstance(parts[0][f.name], list)
            else [p[f.name] for p in parts]
            for f in schema
        },
        schema,
    )


def bandwidth_steps(
    group: np.ndarray, start: np.ndarray, end: np.ndarray, bw: np.ndarray
) -> tuple[ops.StepSeries, np.ndarray]:
    """Step functions of summed bandwidth per group: (StepSeries, values) with values exactly
    0 where no copy of the group runs."""
    g2 = np.concatenate([group, group])
    t2 = np.concatenate([start, end])
    s = ops.step_counter(g2, t2, np.concatenate([bw, -bw]).astype(np.float64))
    fixed = np.rint(bw * FIXED).astype(np.int64)
    z = ops.step_counter(g2, t2, np.concatenate([fixed, -fixed]))
    return s, np.where(z.value == 0, 0.0, s.value)


def active_stats(group: np.ndarray, ts: np.ndarray, value: np.ndarray) -> ops.WeightedStats:
    """Time-weighted statistics of step functions (rows sorted by group, ts) over the time
    each holds a positive value: time where the value is <= 0 is cut out of the clock, so
    those rows hold for no time."""
    group = np.asarray(group, np.int64)
    ts = np.asarray(ts, np.int64)
    held = np.zeros(len(ts), np.int64)
    if len(ts) > 1:
        same = group[1:] == group[:-1]
        held[:-1] = np.where(same, ts[1:] - ts[:-1], 0)
    held = np.where(value > 0, held, 0)
    # A clock that runs only while the value is positive, restarting at 0 in each group.
    clock = np.cumsum(held) - held
    starts = (
        np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
        if len(group)
        else np.array([], np.int64)
    )
    base = np.repeat(clock[starts], np.diff(np.r_[starts, len(group)])) if len(group) else clock
    return ops.weighted_stats(group, clock - base, value, quantiles=QUANTILES)


def _first_per_group(group: np.ndarray, values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    order = np.argsort(group, kind="stable")
    first = np.searchsorted(group[order], groups, side="left")
    return values[order][first]


SERIES_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("pid", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("memory_bw_gbps", pa.float64(), metadata=GBPS),
    ]
)
SUMMARY_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("active_time", pa.int64(), metadata=NS),
        pa.field("mean", pa.float64(), metadata=GBPS),
        pa.field("min", pa.float64(), metadata=GBPS),
        pa.field("p25", pa.float64(), metadata=GBPS),
        pa.field("p50", pa.float64(), metadata=GBPS),
        pa.field("p75", pa.float64(), metadata=GBPS),
        pa.field("max", pa.float64(), metadata=GBPS),
        pa.field("copies", pa.int64()),
        pa.field("change_points", pa.int64()),
    ]
)
