"""The reference's counter methods: queue length, memory bandwidth, counters in the trace.

Shapes follow the reference: {rank: DataFrame} time series with one row per event (a launch
or a GPU event; a copy's start or end) on the reference's clock (microseconds since the first
event of all ranks), and summaries indexed by (rank, stream) / (rank, name) with the columns
("queue_length" | "memory_bw_gbps", count|mean|std|min|25%|50%|75%|max).

Where they differ (docs/differences.md):
  * summaries are time-weighted: mean, std (population, weighted by time), min, max and
    quartiles are over time, not over change points; `count` stays the number of rows.
    Bandwidth statistics are over the time a copy of that type runs (bandwidth > 0).
  * every stream is counted in get_time_spent_blocked_on_full_queue (the reference reports
    one per rank); a stream that reaches the threshold for no time at all is not listed.
  * every GPU work item with a known launch is in its stream's queue, whatever the launch
    call (cudaGraphLaunch, cudaMemcpy, ... included); at equal timestamps GPU starts are
    applied before launches, so the rows of one timestamp never show a spurious peak.
  * a zero-length copy adds nothing (the reference stretches it to 1 us); a copy without a
    bandwidth argument gets bytes / duration where it has a byte count.
  * input frames are never modified.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional

import numpy as np

from .. import ops
from ..analysis import memory_bw as _bw
from ..analysis import queue_length as _ql
from ..frame import derived, select
from .counters_trace import trace_with_counters

if TYPE_CHECKING:
    import pandas as pd

    from ..trace import Trace
    from ..traceset import TraceSet
    from .trace_analysis import TraceAnalysis

STATS = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]


class TimeSeriesTypes(enum.Flag):
    """The series generate_trace_with_counters can add (as in the reference)."""

    QUEUE_LENGTH = enum.auto()
    MEMCPY_BANDWIDTH = enum.auto()


# --- the reference's clock ---------------------------------------------------------------
def _kept_rows(trace: Trace) -> np.ndarray:
    """Events the reference loads: those with a category other than "Trace" (read-only)."""

    def compute() -> np.ndarray:
        import pyarrow.compute as pc

        cat = trace.column("events", "cat")
        trace_ids = np.flatnonzero(pc.equal(trace.strings, "Trace").to_numpy(zero_copy_only=False))
        return (cat >= 0) & ~np.isin(cat, trace_ids)

    return derived.remember(trace, "kept_rows", compute)


def _first_kept_start(trace: Trace) -> Optional[int]:
    def compute() -> Optional[int]:
        starts = trace.column("events", "ts")[_kept_rows(trace)]
        return int(starts.min()) if len(starts) else None

    return derived.remember(trace, "first_kept_start", compute)


def origin_ns(traces: TraceSet) -> int:
    """The reference's time zero: the first start of any loaded event of any rank."""
    starts = [s for s in (_first_kept_start(t) for t in traces.values()) if s is not None]
    return min(starts) if starts else 0


def _us(ns: np.ndarray, whole: Optional[bool] = None) -> np.ndarray:
    """Nanoseconds as microseconds: int64 when all are whole (known to the caller, or
    checked), else float64."""
    ns = np.asarray(ns, np.int64)
    if whole if whole is not None else np.all(ns % 1000 == 0):
        return ns // 1000
    return ns / 1000.0


def _whole_us(traces: TraceSet) -> bool:
    """Whether every event of every rank starts on a whole microsecond (integer-µs traces),
    so that every difference of two starts is whole too."""

    def check(trace: Trace) -> bool:
        return derived.remember(
            trace, "starts_whole_us", lambda: bool(np.all(trace.column("events", "ts") % 1000 == 0))
        )

    return all(check(t) for t in traces.values())


def _ranks(analysis: TraceAnalysis, ranks: Optional[List[int]]) -> List[int]:
    if ranks is not None:
        return list(ranks)
    have = analysis.traces.ranks
    return [0] if 0 in have or not have else [have[0]]


def _selection(analysis: TraceAnalysis, ranks: Optional[List[int]]) -> select.Selection:
    return dataclasses.replace(analysis.selection, ranks=_ranks(analysis, ranks))


def _rank_duration_us(analysis: TraceAnalysis, rank: int) -> float:
    """The reference's trace duration of a rank: last start - first start of its events."""
    trace = analysis.traces[rank]
    keep = _kept_rows(trace)
    mask = analysis.selection.event_mask(trace)
    if mask is not None:
        keep = keep & mask
    ts = trace.column("events", "ts")[keep]
    return float(ts.max() - ts.min()) / 1000.0 if len(ts) else 0.0


# --- queue length ------------------------------------------------------------------------
class _Series(Dict[str, np.ndarray]):
    """One rank's step-function rows as numpy columns, sorted by (group, ts): "index" (event
    row), "ts" (ns on the reference's clock), "group" (int64 code), "value", and
    per-series extras."""


def _queue_series(trace: Trace, mask: Optional[np.ndarray], zero: int) -> Optional[_Series]:
    """+1 at each launch, -1 at each GPU event's start, per stream, in time order (GPU starts
    before launches at one timestamp)."""

    rows, launch_ts, gpu_ts, _ = _ql.queue_pairs(trace, mask)
    if len(rows) == 0:
        return None
    col = trace.column
    stream = col("events", "stream")[rows].astype(np.int64)
    occ = ops.occupancy(stream, launch_ts, gpu_ts)
    gpu_rows = rows[occ.item]  # the GPU event of each row's launch
    index = np.where(occ.entering, col("events", "partner")[gpu_rows], gpu_rows)
    return _Series(
        index=index,
        ts=occ.ts - zero,
        group=occ.group,
        value=occ.level,
        pid=col("events", "pid")[gpu_rows],
        tid=col("events", "tid")[gpu_rows],
    )


def _by_group_time(group: np.ndarray, ts: np.ndarray, later: np.ndarray) -> np.ndarray:
    """Rows in order of (group, ts, later: 0 before 1, then row): np.lexsort((later, ts,
    group)), in linear time for rows that are nearly in time order already."""

    key = (ts - (ts.min() if len(ts) else 0)) * 2 + later.astype(np.int64)
    return ops.group_order(group, key)


_SeriesMaker = Callable[["Trace", Optional[np.ndarray], int], Optional[_Series]]


def _each_series(
    analysis: TraceAnalysis, ranks: Optional[List[int]], make: _SeriesMaker
) -> Iterator[tuple[int, _Series]]:
    sel = _selection(analysis, ranks)
    zero = origin_ns(analysis.traces)
    for rank, trace, mask in select.each_rank(analysis.traces, sel):
        series = make(trace, mask, zero)
        if series is not None:
            yield rank, series


def get_queue_length_time_series(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None
) -> Dict[int, pd.DataFrame]:
    """{rank: DataFrame[ts, pid, tid, stream, queue_length]} indexed by event row ("index"):
    +1 at each launch, -1 at each GPU event's start, per stream (ascending), in time order.
    Ranks without queued work are left out."""
    import pandas as pd

    whole = True if _whole_us(analysis.traces) else None
    return {
        rank: pd.DataFrame(
            {
                "ts": _us(s["ts"], whole),
                "pid": s["pid"],
                "tid": s["tid"],
                "stream": s["group"],
                "queue_length": s["value"],
            },
            index=pd.Index(s["index"], name="index"),
            copy=False,
        )
        for rank, s in _each_series(analysis, ranks, _queue_series)
    }


def get_queue_length_summary(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None
) -> Optional[pd.DataFrame]:
    """get_queue_length_summary_from_time_series of get_queue_length_time_series, computed
    from each stream's step function instead of the series' rows: at a timestamp with several
    rows, only the last holds for any time, and that is the value after every change there."""

    parts = []
    for rank, trace, mask in select.each_rank(analysis.traces, _selection(analysis, ranks)):
        rows, launch_ts, gpu_ts, _ = _ql.queue_pairs(trace, mask)
        if len(rows) == 0:
            continue
        stream = trace.column("events", "stream")[rows].astype(np.int64)
        steps = _ql.queue_steps(stream, launch_ts, gpu_ts)
        st = ops.weighted_stats(steps.group, steps.ts, steps.value, quantiles=(0.25, 0.5, 0.75))
        groups = st.groups  # every stream with an entry, ascending
        entries = np.bincount(np.searchsorted(groups, stream), minlength=len(groups))
        for k, g in enumerate(groups.tolist()):
            count = 2.0 * entries[k]  # a launch row and a start row per entry
            if st.duration[k] <= 0:
                parts.append(((rank, g), [count] + [float("nan")] * 7))
                continue
            q = st.quantiles[k]
            parts.append(
                (
                    (rank, g),
                    [
                        count,
                        float(st.mean[k]),
                        float(st.std[k]),
                        float(st.min[k]),
                        float(q[0]),
                        float(q[1]),
                        float(q[2]),
                        float(st.max[k]),
                    ],
                )
            )
    return _describe_frame(parts, ["rank", "stream"], "queue_length") if parts else None


def get_queue_length_summary_from_time_series(
    analysis: TraceAnalysis, queue_length_dict: Dict
) -> Optional[pd.DataFrame]:
    """Time-weighted statistics per (rank, stream) of the given series: each value weighted
    by the time it holds, from the stream's first row to its last; count = rows."""
    if not queue_length_dict:
        return None
    parts = []
    for rank, df in queue_length_dict.items():
        stream = df["stream"].to_numpy(np.int64)
        ts = _ns(df["ts"].to_numpy())
        order = np.lexsort((ts, stream))
        groups, stats = _weighted_describe(
            stream[order], ts[order], df["queue_length"].to_numpy()[order], positive_only=False
        )
        parts += [((rank, g), row) for g, row in zip(groups.tolist(), stats)]
    return _describe_frame(parts, ["rank", "stream"], "queue_length")


def get_time_spent_blocked_on_full_queue(
    analysis: TraceAnalysis, queue_length_dict: Dict, max_queue_length: int = 1024
) -> pd.DataFrame:
    """Per (rank, stream) whose queue reaches max_queue_length for some time: that time (us)
    and its share of the rank's trace duration (a fraction, as in the reference)."""
    import pandas as pd

    rows = []
    for rank, df in queue_length_dict.items():
        span = _rank_duration_us(analysis, rank) if rank in analysis.traces else 0.0
        for stream, g in df.groupby("stream", sort=True):
            ts = g["ts"].to_numpy(np.float64)
            order = np.argsort(ts, kind="stable")
            ts, ql = ts[order], g["queue_length"].to_numpy()[order]
            held = np.r_[np.diff(ts), 0.0]
            at = float(held[ql >= max_queue_length].sum())
            if at > 0:
                rows.append((rank, stream, at, at / span if span > 0 else float("nan")))
    return pd.DataFrame(
        rows,
        columns=[
            "rank",
            "stream",
            "duration_at_max_queue_length",
            "relative_duration_at_max_queue_length",
        ],
    )


# --- memory bandwidth --------------------------------------------------------------------
def _bandwidth_series(trace: Trace, mask: Optional[np.ndarray], zero: int) -> Optional[_Series]:
    """Each copy's start (+bandwidth) and end (-bandwidth), summed per copy type (names
    ascending), in time order (ends before starts at one timestamp)."""
    rows, types, bw = _bw.memory_rows(trace, mask)
    if len(rows) == 0:
        return None
    n = len(rows)
    start = trace.column("events", "ts")[rows]
    end = start + np.maximum(trace.column("events", "dur")[rows], 0)
    bw = np.nan_to_num(bw, nan=0.0)
    fixed = np.rint(bw * _bw.FIXED).astype(np.int64)
    names, code = np.unique(types.astype(str), return_inverse=True)
    code = np.tile(code.reshape(-1), 2)
    ts = np.concatenate([start, end])
    sign = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
    order = _by_group_time(code.astype(np.int64), ts, sign)
    code_o = code[order]
    first = np.r_[True, code_o[1:] != code_o[:-1]]
    starts = np.flatnonzero(first)
    value = np.empty(2 * n)
    signed, signed_fixed = np.concatenate([bw, -bw]), np.concatenate([fixed, -fixed])
    for a, b in zip(starts, np.r_[starts[1:], 2 * n]):  # per copy type
        part = order[a:b]
        value[a:b] = np.cumsum(signed[part])
        # the float sum drifts; where the exact fixed-point sum says no copy runs, it is 0
        value[a:b][np.cumsum(signed_fixed[part]) == 0] = 0.0
    return _Series(
        index=order.astype(np.int64),
        ts=ts[order] - zero,
        group=code_o.astype(np.int64),
        value=value,
        names=names,
        pid=np.tile(trace.column("events", "pid")[rows], 2)[order],
    )


def get_memory_bw_time_series(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None
) -> Dict[int, pd.DataFrame]:
    """{rank: DataFrame[ts, pid, name, memory_bw_gbps]}: each copy's start (+bandwidth) and
    end (-bandwidth), summed per copy type (names ascending), in time order. ts in us."""
    import pandas as pd

    return {
        rank: pd.DataFrame(
            {
                "ts": s["ts"] / 1000.0,
                "pid": s["pid"],
                "name": s["names"][s["group"]].astype(object),
                "memory_bw_gbps": s["value"],
            },
            index=pd.Index(s["index"]),
            copy=False,
        )
        for rank, s in _each_series(analysis, ranks, _bandwidth_series)
    }


def get_memory_bw_summary(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None
) -> Optional[pd.DataFrame]:
    """Time-weighted bandwidth statistics per (rank, name) over the time a copy of that type
    runs; count = rows with a positive bandwidth. None without copies; an empty frame when no
    copy has a known bandwidth."""
    parts = []
    seen = False
    for rank, s in _each_series(analysis, ranks, _bandwidth_series):
        seen = True
        groups, stats = _weighted_describe(s["group"], s["ts"], s["value"], positive_only=True)
        parts += [((rank, str(s["names"][g])), row) for g, row in zip(groups, stats) if row[0] > 0]
    return _describe_frame(parts, ["rank", "name"], "memory_bw_gbps") if seen else None


# --- counters in the trace ---------------------------------------------------------------
def generate_trace_with_counters(
    analysis: TraceAnalysis,
    time_series: Any = None,
    ranks: Optional[List[int]] = None,
    output_suffix: str = "_with_counters",
) -> None:
    """Writes each rank's trace beside it, named with output_suffix before ".json", with
    "Queue Length" (one per stream) and memcpy bandwidth counter events added."""

    series = _series_names(time_series)
    trace_with_counters(
        analysis.traces, suffix=output_suffix, series=series, selection=_selection(analysis, ranks)
    )


def _series_names(time_series: Any) -> tuple:
    if time_series is None:
        return ("queue_length", "memcpy_bandwidth")
    items = time_series if isinstance(time_series, (list, tuple, set, frozenset)) else [time_series]
    text = " ".join(str(getattr(t, "name", None) or t) for t in items).upper()
    if isinstance(time_series, enum.Flag):
        text = str(time_series).upper()
    out = []
    if "QUEUE" in text:
        out.append("queue_length")
    if "MEMCPY" in text or "BANDWIDTH" in text:
        out.append("memcpy_bandwidth")
    if not out:
        raise ValueError(f"unknown time series {time_series!r}")
    return tuple(out)


# --- statistics --------------------------------------------------------------------------
def _ns(ts_us: np.ndarray) -> np.ndarray:
    return np.rint(np.asarray(ts_us, np.float64) * 1000.0).astype(np.int64)


def _weighted_describe(
    group: np.ndarray, ts: np.ndarray, value: np.ndarray, positive_only: bool
) -> tuple[np.ndarray, list]:
    """(groups, [[count, mean, std, min, 25%, 50%, 75%, max] per group]) of step functions
    given as rows sorted by (group, ts) (ns; the last row of a timestamp holds). Weighted by
    the time each value holds until the group's next timestamp; positive_only: over the time
    the value is > 0 (count too)."""

    value = np.asarray(value, np.float64)
    n = len(ts)
    last = np.r_[group[1:] != group[:-1], True]
    held = np.where(last, 0, np.r_[np.diff(ts), 0])
    if positive_only:
        held = np.where(value > 0, held, 0)
    starts = np.flatnonzero(np.r_[True, last[:-1]]) if n else np.empty(0, np.int64)
    counted = (value > 0) if positive_only else np.ones(n, bool)
    count = np.add.reduceat(counted.astype(np.int64), starts) if n else np.empty(0, np.int64)
    clock = np.cumsum(held) - held
    st = ops.weighted_stats(group, clock, value, quantiles=(0.25, 0.5, 0.75))
    weight = np.add.reduceat(held, starts) if n else np.empty(0, np.int64)
    mean_of_row = np.repeat(st.mean, np.diff(np.r_[starts, n]))
    spread = np.add.reduceat(held * (value - mean_of_row) ** 2, starts) if n else np.empty(0)
    rows = []
    for k in range(len(st.groups)):
        if st.duration[k] <= 0 or weight[k] <= 0:
            rows.append([float(count[k])] + [float("nan")] * 7)
            continue
        q = st.quantiles[k]
        rows.append(
            [
                float(count[k]),
                float(st.mean[k]),
                float(np.sqrt(spread[k] / weight[k])),
                float(st.min[k]),
                float(q[0]),
                float(q[1]),
                float(q[2]),
                float(st.max[k]),
            ]
        )
    return st.groups, rows


def _describe_frame(parts: list, index_names: List[str], value_name: str) -> pd.DataFrame:
    import pandas as pd

    columns = pd.MultiIndex.from_product([[value_name], STATS])
    if not parts:
        return pd.DataFrame(columns=columns, dtype=np.float64)
    index = pd.MultiIndex.from_tuples([k for k, _ in parts], names=index_names)
    return pd.DataFrame([v for _, v in parts], index=index, columns=columns, dtype=np.float64)
