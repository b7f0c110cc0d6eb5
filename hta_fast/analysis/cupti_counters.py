"""CUPTI counters per kernel, with the PyTorch operators that launched it.

In CUPTI range-profiler mode the profiler replays every kernel alone and writes one event of
category `cuda_profiler_range` per kernel, whose args are the hardware counters
(`smsp__sass_thread_inst_executed_op_ffma_pred_on.sum`, ...). These events carry no
correlation id, so they are paired with the kernel launches by order: the k-th range (by
start) belongs to the k-th kernel launch (by start) of the rank. The operators are the
CPU ops enclosing that launch on its thread, outermost first.
"""

from __future__ import annotations

import gzip
import json
from typing import Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _arrow
from .._arrow import array_of, as_numpy
from ..frame import select
from ..frame.fields import NS
from ..frame.graph_captures import KERNEL_API
from ..frame.result import Result
from ..frame.select import Ranks, Selection, Steps, Streams, Window
from ..schema import EventKind
from ..trace import Trace
from ..traceset import TraceSet

__all__ = ["cupti_counters"]

RANGE_CATEGORY = "cuda_profiler_range"


def _ids(trace: Trace, mask: pa.Array) -> np.ndarray:
    return np.flatnonzero(as_numpy(mask))


def _read_events(path: str) -> list:
    if path.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            data = f.read()
    elif path.endswith(".zst"):
        import zstandard  # optional: only for zstd traces with CUPTI counters

        with open(path, "rb") as f:
            data = zstandard.ZstdDecompressor().stream_reader(f).read()
    else:
        with open(path, "rb") as f:
            data = f.read()
    doc = json.loads(data)
    return doc.get("traceEvents", []) if isinstance(doc, dict) else []


def counter_args(trace: Trace, rows: np.ndarray) -> tuple[dict[str, np.ndarray], Optional[str]]:
    """The counter values (args) of the range events at `rows`, by counter name, read back
    from the trace file (the loader does not keep these args). (columns, problem or None)."""
    path = trace.meta.path
    if not path:
        return {}, "counter values need the trace file (this trace was loaded from bytes)"
    events = [
        e
        for e in _read_events(path)
        if isinstance(e, dict) and e.get("cat") == RANGE_CATEGORY and e.get("ph") == "X"
    ]
    if len(events) != len(rows):
        return {}, (
            f"{len(events)} {RANGE_CATEGORY} events in the file but {len(rows)} loaded: "
            "counter values left out"
        )
    # Pair file events with loaded rows by start time (both stable).
    file_ts = np.array([float(e.get("ts", 0)) for e in events]) * 1000.0
    order_f = np.argsort(file_ts, kind="stable")
    ts = trace.column("events", "ts")[rows]
    order_r = np.argsort(ts, kind="stable")
    rel = (ts[order_r] - ts[order_r][0]) - (file_ts[order_f] - file_ts[order_f][0])
    if len(rows) and np.abs(rel).max() > 1000:
        return {}, "the counter events of the file do not line up with the loaded ones"
    keys: dict[str, None] = {}
    for e in events:
        keys.update(dict.fromkeys((e.get("args") or {}).keys()))
    out = {}
    for k in keys:
        vals = [(events[i].get("args") or {}).get(k) for i in order_f]
        col = np.empty(len(rows), dtype=object)
        col[order_r] = vals
        out[k] = col
    return out, None


def _counter_array(values: np.ndarray) -> pa.Array:
    arr = pa.array(values.tolist(), from_pandas=True)
    if pa.types.is_null(arr.type):
        return arr.cast(pa.int64())
    return arr


def _stacks(trace: Trace, launches: np.ndarray) -> tuple[pa.Array, pa.Array, pa.Array]:
    """op_stack (list of cpu_op names, outermost first), top and bottom op per launch row."""
    parent = trace.column("events", "parent")
    kind = trace.column("events", "kind")
    levels = []
    cur = np.where(launches >= 0, parent[np.maximum(launches, 0)], -1)
    while (cur >= 0).any():
        levels.append(cur)
        cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
    n = len(launches)
    if not levels:
        empty = pa.ListArray.from_arrays(
            array_of(np.zeros(n + 1, np.int32)), array_of([], pa.string())
        )
        nulls = pa.nulls(n, pa.string())
        return empty, nulls, nulls
    m = np.stack(levels[::-1], axis=1)  # (n, depth), outermost first
    ok = m >= 0
    ok[ok] = kind[m[ok]] == EventKind.cpu_op
    flat = m[ok]
    counts = ok.sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    names = trace.strings.take(array_of(trace.column("events", "name")[flat]))
    names = names.cast(pa.string()) if not pa.types.is_string(names.type) else names
    stacks = pa.ListArray.from_arrays(array_of(offsets), names)
    has = counts > 0
    first = np.where(has, offsets[:-1], 0)
    last = np.where(has, offsets[1:] - 1, 0)
    top = pc.if_else(
        array_of(has),
        names.take(array_of(first)) if len(names) else pa.nulls(n, pa.string()),
        pa.scalar(None, pa.string()),
    )
    bottom = pc.if_else(
        array_of(has),
        names.take(array_of(last)) if len(names) else pa.nulls(n, pa.string()),
        pa.scalar(None, pa.string()),
    )
    return stacks, top, bottom


def cupti_counters(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """One row per profiled kernel range: rank, ts, dur (ns), name (the kernel), pid, tid,
    launch_ts
    (start of its launch), op_stack (list of CPU op names enclosing the launch, outermost
    first), top_level_op, bottom_level_op (null when no CPU op encloses it), then one
    column per counter. Ranks without range events contribute no rows; a rank whose ranges
    and launches differ in number gets null operators (and a note)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = []
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        strings = trace.strings
        range_ids = _ids(trace, pc.equal(strings, RANGE_CATEGORY))
        if len(range_ids) == 0:
            continue
        cat = trace.column("events", "cat")
        name = trace.column("events", "name")
        ts = trace.column("events", "ts")
        all_ranges = np.flatnonzero(np.isin(cat, range_ids))
        counters, problem = counter_args(trace, all_ranges)
        if problem:
            notes.append(f"rank {rank}: {problem}")
        keep = np.ones(len(ts), bool) if mask is None else mask
        # the calls that launch one kernel each (a graph launch is not one of them)
        launch_ids = _ids(trace, pc.match_substring_regex(strings, KERNEL_API))
        launches = np.flatnonzero(
            (trace.column("events", "kind") == EventKind.runtime) & np.isin(name, launch_ids)
        )
        r_order = all_ranges[np.argsort(ts[all_ranges], kind="stable")]
        l_order = launches[np.argsort(ts[launches], kind="stable")]
        if len(r_order) == len(l_order):
            paired = l_order
        else:
            notes.append(
                f"rank {rank}: {len(r_order)} counter ranges but {len(l_order)} "
                "kernel launches: operators left out"
            )
            paired = np.full(len(r_order), -1, np.int64)
        # Rows kept by the selection, in start order.
        sel_pos = np.flatnonzero(keep[r_order])
        rows = r_order[sel_pos]
        launch = paired[sel_pos]
        stacks, top, bottom = _stacks(trace, launch)
        names = strings.take(array_of(name[rows]))
        pos_in_all = np.searchsorted(all_ranges, rows)
        cols = {
            "rank": array_of(np.full(len(rows), rank, np.int64)),
            "ts": array_of(ts[rows]),
            "dur": array_of(trace.column("events", "dur")[rows]),
            "name": names.cast(pa.string()),
            "pid": array_of(trace.column("events", "pid")[rows]),
            "tid": array_of(trace.column("events", "tid")[rows]),
            "launch_ts": _arrow.masked(
                np.where(launch >= 0, ts[np.maximum(launch, 0)], 0), launch < 0, pa.int64()
            ),
            "op_stack": stacks,
            "top_level_op": top,
            "bottom_level_op": bottom,
        }
        for k, v in counters.items():
            cols[k] = _counter_array(v[pos_in_all])
        parts.append(pa.table(cols))
    if not parts:
        table = pa.table(
            {
                "rank": array_of([], pa.int64()),
                "ts": array_of([], pa.int64()),
                "dur": array_of([], pa.int64()),
                "name": array_of([], pa.string()),
                "pid": array_of([], pa.int64()),
                "tid": array_of([], pa.int64()),
                "launch_ts": array_of([], pa.int64()),
                "op_stack": array_of([], pa.list_(pa.string())),
                "top_level_op": array_of([], pa.string()),
                "bottom_level_op": array_of([], pa.string()),
            }
        )
        notes.append(
            f"no {RANGE_CATEGORY} events: the trace was not recorded in CUPTI range-profiler mode"
        )
    else:
        table = pa.concat_tables(parts, promote_options="permissive")
    fields = [
        f.with_metadata(NS) if f.name in ("ts", "dur", "launch_ts") else f for f in table.schema
    ]
    return Result("cupti_counters", table.cast(pa.schema(fields)), notes=notes)
