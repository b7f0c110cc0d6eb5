"""apply(): run a metric over groups of events of one or many ranks, as a Result."""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from .._arrow import array_of
from ..frame import select
from ..frame.result import Result
from ..schema import CPU_KINDS, GPU_WORK_KINDS, EventKind, KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from . import columns as cols
from . import groups
from .driver import driver
from .errors import MetricRunError
from .metric import Metric

# Named sets of event kinds for `kinds=`.
KIND_SETS = {
    "gpu": GPU_WORK_KINDS,
    "kernels": (EventKind.kernel,),
    "cpu": CPU_KINDS,
    "all": tuple(EventKind),
}

_KEY_TYPES = {
    "stream": pa.int32(),
    "step": pa.int32(),
    "device": pa.int32(),
    "pid": pa.int64(),
    "tid": pa.int64(),
    "window": pa.int64(),
}
_NULL_AT_MINUS_ONE = {"stream", "step", "device"}


def _kinds(kinds: Union[str, Sequence[Union[str, int]]]) -> np.ndarray:
    if isinstance(kinds, str):
        if kinds not in KIND_SETS:
            raise ValueError(
                f"kinds={kinds!r} is not one of {', '.join(KIND_SETS)} "
                f"or a list of hta_fast.EventKind names"
            )
        return np.array(KIND_SETS[kinds], np.uint8)
    out = []
    for k in kinds:
        try:
            out.append(EventKind[k] if isinstance(k, str) else EventKind(k))
        except (KeyError, ValueError):
            raise ValueError(
                f"unknown event kind {k!r}; kinds are {', '.join(e.name for e in EventKind)}"
            ) from None
    return np.array(out, np.uint8)


def _key_column(
    key: str, values: list[np.ndarray], strings: list[Callable[[np.ndarray], pa.Array]]
) -> pa.Array:
    if key == "name":
        return (
            pa.concat_arrays([s(v) for s, v in zip(strings, values)])
            if values
            else array_of([], pa.string())
        )
    joined = np.concatenate(values) if values else np.empty(0, np.int64)
    if key == "kind":
        return array_of([EventKind(int(v)).name for v in joined], pa.string())
    if key == "kernel_class":
        return array_of([KernelClass(int(v)).name for v in joined], pa.string())
    t = _KEY_TYPES[key]
    mask = (joined == -1) if key in _NULL_AT_MINUS_ONE else None
    return array_of(joined.astype(t.to_pandas_dtype()), t, mask=mask)


def apply(
    metric: Union[Metric, Callable[..., Any]],
    traces: Union[Trace, TraceSet],
    *,
    by: Union[str, Sequence[str]] = (),
    kinds: Union[str, Sequence[Union[str, int]]] = "gpu",
    every: Optional[int] = None,
    flags: Optional[Mapping[str, str]] = None,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Runs `metric` once per (rank, group) over the selected events, in parallel.

    by        group keys inside each rank: "stream", "step", "name", "kind",
              "kernel_class", "device", "pid", "tid", "window" (time buckets of every=
              ns from the selection window's start, else from the earliest selected
              event of all ranks; an event that spans several buckets is in each, its
              ts, end and dur clipped to the bucket; the key is the bucket's start);
              () gives one group per rank
    kinds     which events: "gpu" (kernels, memcpy, memset; the default), "kernels",
              "cpu", "all", or a list of hta_fast.EventKind names
    flags     {"column": "regex"}: extra boolean columns, true for events whose name
              matches (re.search); evaluated once per distinct name
    ranks, steps, window, streams, selection   the shared selection (analysis.select);
              ts, end and dur are clipped to the selection window

    Returns a Result named after the metric: rank, the group keys, `events` (rows in the
    group) and the metric's value (int64, float64 or bool). Groups without events do not
    appear. Each call sees its group's rows in start-time order.
    """
    if not isinstance(traces, (Trace, TraceSet)):
        raise TypeError(
            f"udf.apply runs over a Trace or a TraceSet (hta_fast.load, "
            f"hta_fast.load_dir), got {type(traces).__name__}"
        )
    m = metric if isinstance(metric, Metric) else Metric(metric)
    by_keys = (by,) if isinstance(by, str) else tuple(by)
    flags = dict(flags or {})
    groups.check_keys(by_keys, every)
    if m.name in ("rank", "events") + by_keys:
        raise ValueError(
            f"metric name {m.name!r} is also a result column; give the metric "
            f"another name (udf.metric(name=...))"
        )
    cols.check_names(m.columns, flags)
    kind_codes = _kinds(kinds)
    sel = select.selection_of(selection, ranks, steps, window, streams)

    picked = _picked_rows(traces, sel, kind_codes)
    origin = 0
    if "window" in by_keys:
        starts = [int(t.column("events", "ts")[r].min()) for _, t, r in picked if len(r)]
        origin = sel.window[0] if sel.window is not None else (min(starts) if starts else 0)
    gathered = _gathered_groups(picked, m, by_keys, flags, sel.window, every, origin)
    out = _run_metric(m, gathered.offsets, gathered.columns)

    table = {
        "rank": array_of(
            np.concatenate(gathered.rank) if gathered.rank else np.empty(0, np.int64), pa.int64()
        )
    }
    for k in by_keys:
        table[k] = _key_column(k, gathered.keys[k], gathered.namers)
    table["events"] = array_of(
        np.concatenate(gathered.counts) if gathered.counts else np.empty(0, np.int64), pa.int64()
    )
    table[m.name] = array_of(out)
    return Result(
        m.name,
        pa.table(table),
        params={"by": by_keys, "kinds": kinds, "every": every, "flags": flags, "selection": sel},
    )


def _picked_rows(
    traces: Union[Trace, TraceSet], sel: select.Selection, kind_codes: np.ndarray
) -> list[tuple[int, Trace, np.ndarray]]:
    """Per selected rank: (rank, trace, the rows of its selected events of these kinds)."""
    picked = []
    for rank, trace, mask in select.each_rank(traces, sel):
        keep = np.isin(trace.column("events", "kind"), kind_codes)
        if mask is not None:
            keep &= mask
        picked.append((rank, trace, np.flatnonzero(keep)))
    return picked


class _Gathered(NamedTuple):
    """Every rank's groups for one parallel call: the metric's columns concatenated in
    group order, the groups' offsets into them, and per group its rank, event count and
    keys (per key, one array per rank); namers: per rank, its string ids' names."""

    columns: list[np.ndarray]
    offsets: np.ndarray
    rank: list[np.ndarray]
    counts: list[np.ndarray]
    keys: dict[str, list[np.ndarray]]
    namers: list[Callable[[np.ndarray], pa.Array]]


def _gathered_groups(
    picked: list[tuple[int, Trace, np.ndarray]],
    m: Metric,
    by_keys: tuple[str, ...],
    flags: dict[str, str],
    window: Optional[tuple[int, int]],
    every: Optional[int],
    origin: int,
) -> _Gathered:
    """The picked rows of every rank grouped by by_keys, their columns gathered."""
    parts: list[list[np.ndarray]] = [[] for _ in m.columns]
    offsets = [np.zeros(1, np.int64)]
    rank_col, counts = [], []
    key_vals: dict[str, list[np.ndarray]] = {k: [] for k in by_keys}
    namers: list[Callable[[np.ndarray], pa.Array]] = []
    total = 0
    for rank, trace, rows in picked:
        rows, ts, end, bucket = _times(trace, rows, window, every, origin)
        g = groups.group(trace, rows, ts, bucket, by_keys)
        ordered = rows[g.order]
        for i, col in enumerate(
            cols.gather(trace, m.columns, ordered, flags, ts[g.order], end[g.order])
        ):
            parts[i].append(col)
        n_groups = len(g.offsets) - 1
        offsets.append(g.offsets[1:] + total)
        total += len(rows)
        rank_col.append(np.full(n_groups, rank, np.int64))
        counts.append(np.diff(g.offsets))
        for k in by_keys:
            key_vals[k].append(g.keys[k])
        namers.append(functools.partial(_names, trace.strings))
    columns = [np.concatenate(p) if p else np.empty(0) for p in parts]
    return _Gathered(columns, np.concatenate(offsets), rank_col, counts, key_vals, namers)


def _run_metric(m: Metric, offs: np.ndarray, columns: list[np.ndarray]) -> np.ndarray:
    """The metric's value per group (groups offs[i]:offs[i + 1] of the columns), computed
    in parallel; MetricRunError when it raises."""
    dtype = m.output_dtype(columns)
    out = np.zeros(len(offs) - 1, dtype)
    if len(out):
        run = driver(m.function, m.name, m.compiled, len(columns))
        try:
            run(offs, out, *columns)
        except Exception as e:
            cause = e.__cause__ or e.__context__ or e
            raise MetricRunError(
                f"metric {m.name} raised {type(cause).__name__}: {cause} "
                f"while running over the groups"
            ) from None
    return out


def _times(
    trace: Trace,
    rows: np.ndarray,
    window: Optional[tuple[int, int]],
    every: Optional[int],
    origin: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Optional[np.ndarray]]:
    """(rows, ts, end, bucket start) with times clipped to the selection window; with
    every=, a row per (event, bucket it overlaps), its times clipped to the bucket."""
    ts = trace.column("events", "ts")[rows]
    end = ts + np.maximum(trace.column("events", "dur")[rows], 0)
    if window is not None:
        ts = np.clip(ts, window[0], window[1])
        end = np.maximum(np.clip(end, window[0], window[1]), ts)
    if every is None:
        return rows, ts, end, None
    first = (ts - origin) // every
    # The bucket holding the last ns of the event (its start for a zero-length one).
    last = (np.maximum(end - 1, ts) - origin) // every
    spans = last - first + 1
    rep = np.repeat(np.arange(len(rows)), spans)
    within = np.arange(len(rep)) - np.repeat(np.cumsum(spans) - spans, spans)
    bucket = origin + (first[rep] + within) * every
    return (rows[rep], np.maximum(ts[rep], bucket), np.minimum(end[rep], bucket + every), bucket)


def _names(strings: pa.Array, ids: np.ndarray) -> pa.Array:
    valid = ids >= 0
    taken = strings.take(array_of(np.where(valid, ids, 0))).cast(pa.string())
    return array_of(taken.to_pylist(), pa.string(), mask=~valid) if not valid.all() else taken
