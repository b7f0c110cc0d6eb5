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
from typing import Any, Callable, Dict, List, Optional, TYPE_CHECKING

import numpy as np

from ..analysis import memory_bw as _bw
from ..analysis import queue_length as _ql
from ..analysis import select

if TYPE_CHECKING:
    import pandas as pd
    from .trace_analysis import TraceAnalysis
    from ..trace import Trace
    from ..traceset import TraceSet

STATS = ["count", "mean", "std", "min", "25%", "50%", "75%", "max"]


class TimeSeriesTypes(enum.Flag):
    """The series generate_trace_with_counters can add (as in the reference)."""
    QUEUE_LENGTH = enum.auto()
    MEMCPY_BANDWIDTH = enum.auto()


# --- the reference's clock ---------------------------------------------------------------
def _memo(trace: Trace, key: str, compute: Callable[[], Any]) -> Any:
    """A value derived from a trace, computed once (traces do not change)."""
    memo = trace.__dict__.setdefault("_compat_memo", {})
    if key not in memo:
        memo[key] = compute()
    return memo[key]


def _kept_rows(trace: Trace) -> np.ndarray:
    """Events the reference loads: those with a category other than "Trace" (read-only)."""
    def compute() -> np.ndarray:
        import pyarrow.compute as pc
        cat = trace.column("events", "cat")
        trace_ids = np.flatnonzero(pc.equal(trace.strings, "Trace").to_numpy(zero_copy_only=False))
        keep = (cat >= 0) & ~np.isin(cat, trace_ids)
        keep.flags.writeable = False
        return keep
    return _memo(trace, "kept_rows", compute)


def _first_kept_start(trace: Trace) -> Optional[int]:
    def compute() -> Optional[int]:
        starts = trace.column("events", "ts")[_kept_rows(trace)]
        return int(starts.min()) if len(starts) else None
    return _memo(trace, "first_kept_start", compute)


def origin_ns(traces: TraceSet) -> int:
    """The reference's time zero: the first start of any loaded event of any rank."""
    starts = [s for s in (_first_kept_start(t) for t in traces.values()) if s is not None]
    return min(starts) if starts else 0


def _us(ns: np.ndarray) -> np.ndarray:
    """Nanoseconds as microseconds: int64 when all are whole, else float64."""
    ns = np.asarray(ns, np.int64)
    if np.all(ns % 1000 == 0):
        return ns // 1000
    return ns / 1000.0


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
def get_queue_length_time_series(analysis: TraceAnalysis, ranks: Optional[List[int]] = None
                                 ) -> Dict:
    """{rank: DataFrame[ts, pid, tid, stream, queue_length]} indexed by event row ("index"):
    +1 at each launch, -1 at each GPU event's start, per stream (ascending), in time order.
    Ranks without queued work are left out."""
    import pandas as pd

    sel = _selection(analysis, ranks)
    zero = origin_ns(analysis.traces)
    out = {}
    for rank, trace, mask in select.each_rank(analysis.traces, sel):
        rows, launch_ts, gpu_ts, _ = _ql.queue_pairs(trace, mask)
        if len(rows) == 0:
            continue
        n = len(rows)
        col = trace.column
        index = np.concatenate([col("events", "partner")[rows], rows])
        ts = np.concatenate([launch_ts, gpu_ts])
        stream = np.tile(col("events", "stream")[rows].astype(np.int64), 2)
        pid = np.tile(col("events", "pid")[rows], 2)
        tid = np.tile(col("events", "tid")[rows], 2)
        delta = np.concatenate([np.ones(n, np.int64), -np.ones(n, np.int64)])
        order = np.lexsort((delta, ts, stream))
        stream, ts, delta = stream[order], ts[order], delta[order]
        total = np.cumsum(delta)
        first = np.r_[True, stream[1:] != stream[:-1]]
        before = np.repeat((total - delta)[first], np.diff(np.r_[np.flatnonzero(first), 2 * n]))
        df = pd.DataFrame({"ts": _us(ts - zero), "pid": pid[order], "tid": tid[order],
                           "stream": stream, "queue_length": total - before},
                          index=pd.Index(index[order], name="index"))
        out[rank] = df
    return out


def get_queue_length_summary(analysis: TraceAnalysis, ranks: Optional[List[int]] = None
                             ) -> Optional[pd.DataFrame]:
    return get_queue_length_summary_from_time_series(
        analysis, get_queue_length_time_series(analysis, ranks=ranks))


def get_queue_length_summary_from_time_series(analysis: TraceAnalysis, queue_length_dict: Dict
                                              ) -> Optional[pd.DataFrame]:
    """Time-weighted statistics per (rank, stream) of the given series: each value weighted
    by the time it holds, from the stream's first row to its last; count = rows."""
    if not queue_length_dict:
        return None
    parts = []
    for rank, df in queue_length_dict.items():
        for stream, g in df.groupby("stream", sort=True):
            parts.append(((rank, stream), _weighted_describe(
                g["ts"].to_numpy(), g["queue_length"].to_numpy(), positive_only=False)))
    return _describe_frame(parts, ["rank", "stream"], "queue_length")


def get_time_spent_blocked_on_full_queue(analysis: TraceAnalysis, queue_length_dict: Dict,
                                         max_queue_length: int = 1024) -> pd.DataFrame:
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
    return pd.DataFrame(rows, columns=["rank", "stream", "duration_at_max_queue_length",
                                       "relative_duration_at_max_queue_length"])


# --- memory bandwidth --------------------------------------------------------------------
def get_memory_bw_time_series(analysis: TraceAnalysis, ranks: Optional[List[int]] = None) -> Dict:
    """{rank: DataFrame[ts, pid, name, memory_bw_gbps]}: each copy's start (+bandwidth) and
    end (-bandwidth), summed per copy type (names ascending), in time order. ts in us."""
    import pandas as pd

    sel = _selection(analysis, ranks)
    zero = origin_ns(analysis.traces)
    out = {}
    for rank, trace, mask in select.each_rank(analysis.traces, sel):
        rows, types, bw = _bw.memory_rows(trace, mask)
        if len(rows) == 0:
            continue
        n = len(rows)
        start = trace.column("events", "ts")[rows]
        end = start + np.maximum(trace.column("events", "dur")[rows], 0)
        bw = np.nan_to_num(bw, nan=0.0)
        fixed = np.rint(bw * _bw.FIXED).astype(np.int64)
        names, code = np.unique(types.astype(str), return_inverse=True)
        code = np.tile(code.reshape(-1), 2)
        ts = np.concatenate([start, end])
        sign = np.concatenate([np.ones(n, np.int8), np.zeros(n, np.int8)])
        order = np.lexsort((sign, ts, code))
        code_o = code[order]
        first = np.r_[True, code_o[1:] != code_o[:-1]]
        starts = np.flatnonzero(first)
        value = np.empty(2 * n)
        for a, b in zip(starts, np.r_[starts[1:], 2 * n]):  # per copy type
            part = order[a:b]
            value[a:b] = np.cumsum(np.concatenate([bw, -bw])[part])
            zero_now = np.cumsum(np.concatenate([fixed, -fixed])[part]) == 0
            value[a:b][zero_now] = 0.0
        df = pd.DataFrame({"ts": ((ts[order] - zero) / 1000.0),
                           "pid": np.tile(trace.column("events", "pid")[rows], 2)[order],
                           "name": names[code_o].astype(object),
                           "memory_bw_gbps": value},
                          index=pd.Index(order.astype(np.int64)))
        out[rank] = df
    return out


def get_memory_bw_summary(analysis: TraceAnalysis, ranks: Optional[List[int]] = None
                          ) -> Optional[pd.DataFrame]:
    """Time-weighted bandwidth statistics per (rank, name) over the time a copy of that type
    runs; count = rows with a positive bandwidth. None without copies; an empty frame when no
    copy has a known bandwidth."""
    series = get_memory_bw_time_series(analysis, ranks=ranks)
    if not series:
        return None
    parts = []
    for rank, df in series.items():
        for name, g in df.groupby("name", sort=True):
            v = g["memory_bw_gbps"].to_numpy()
            if not (v > 0).any():
                continue
            parts.append(((rank, name), _weighted_describe(g["ts"].to_numpy(), v,
                                                           positive_only=True)))
    return _describe_frame(parts, ["rank", "name"], "memory_bw_gbps")


# --- counters in the trace ---------------------------------------------------------------
def generate_trace_with_counters(analysis: TraceAnalysis, time_series: Any = None,
                                 ranks: Optional[List[int]] = None,
                                 output_suffix: str = "_with_counters") -> None:
    """Writes each rank's trace beside it, named with output_suffix before ".json", with
    "Queue Length" (one per stream) and memcpy bandwidth counter events added."""
    from ..analysis.counters_trace import trace_with_counters

    series = _series_names(time_series)
    trace_with_counters(analysis.traces, suffix=output_suffix, series=series,
                        selection=_selection(analysis, ranks))


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
def _weighted_describe(ts_us: np.ndarray, value: np.ndarray, positive_only: bool) -> list:
    """[count, mean, std, min, 25%, 50%, 75%, max] of a step function given as rows (us,
    in any order; the last row of a timestamp holds). Weighted by the time each value holds
    until the next timestamp; positive_only: over the time the value is > 0 (count too)."""
    ts = np.rint(np.asarray(ts_us, np.float64) * 1000.0).astype(np.int64)
    value = np.asarray(value, np.float64)
    order = np.argsort(ts, kind="stable")
    ts, value = ts[order], value[order]
    count = int((value > 0).sum()) if positive_only else len(value)
    held = np.r_[np.diff(ts), 0]
    if positive_only:
        held = np.where(value > 0, held, 0)
    group = np.zeros(len(ts), np.int64)
    clock = np.cumsum(held) - held
    from .. import ops
    st = ops.weighted_stats(group, clock, value, quantiles=(0.25, 0.5, 0.75))
    if len(st.groups) == 0 or st.duration[0] <= 0:
        return [float(count)] + [float("nan")] * 7
    mean = float(st.mean[0])
    std = float(np.sqrt(np.sum(held * (value - mean) ** 2) / held.sum()))
    q = st.quantiles[0]
    return [float(count), mean, std, float(st.min[0]), float(q[0]), float(q[1]), float(q[2]),
            float(st.max[0])]


def _describe_frame(parts: list, index_names: List[str], value_name: str) -> pd.DataFrame:
    import pandas as pd

    columns = pd.MultiIndex.from_product([[value_name], STATS])
    if not parts:
        return pd.DataFrame(columns=columns, dtype=np.float64)
    index = pd.MultiIndex.from_tuples([k for k, _ in parts], names=index_names)
    return pd.DataFrame([v for _, v in parts], index=index, columns=columns, dtype=np.float64)
