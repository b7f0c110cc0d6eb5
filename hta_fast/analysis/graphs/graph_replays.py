"""Graph replays: what each graph launch ran, how much of the GPU time that was, and which
operators captured it.

One row per replay (frame.graph_replays: a graph launch and the GPU events linked to it)
whose launch and work the selection keeps: the launch's name and start, the stream of its
first GPU event, its GPU events and kernels, their summed time and share of the rank's GPU
time (every kernel, memcpy and memset kept), whether a capture was matched to it
(frame.graph_attribution: the same count and kinds of work, the latest such capture before
the replay), how many captures matched, that capture's start, and the operators that made
its launches (distinct names, in capture order).

Side table "events": one row per replayed GPU event, with the operator it counts for (the
innermost CPU operator around the launch that captured it; null where none was matched).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ... import _arrow
from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.gpu_work import gpu_work
from ...frame.graph_attribution import replay_match, replay_notes
from ...frame.graph_captures import graph_captures
from ...frame.graph_replays import graph_replays as replays_of
from ...frame.graph_replays import has_graph_launches
from ...frame.result import Result
from ...frame.select import Ranks, Steps, Streams, Window
from ...schema import EventKind
from ...trace import Trace
from ...traceset import TraceSet

__all__ = ["graph_replays"]

_NAME = pa.dictionary(pa.int32(), pa.large_string())
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("replay", pa.int64()),
        pa.field("launch_name", _NAME),
        pa.field("launch_ts", pa.int64(), metadata=NS),
        pa.field("stream", pa.int32()),
        pa.field("gpu_events", pa.int64()),
        pa.field("kernels", pa.int64()),
        pa.field("gpu_time", pa.int64(), metadata=NS),
        pa.field("gpu_time_pct", pa.float64(), metadata=PCT),
        pa.field("capture_matched", pa.bool_()),
        pa.field("captures_matching", pa.int64()),
        pa.field(
            "capture_distance",
            pa.int64(),
            metadata={
                "description": "items left out to align the replay with its capture (0: "
                "exact); for a replay matched to none, the nearest capture's (null: none "
                "recorded)"
            },
        ),
        pa.field("capture_ts", pa.int64(), metadata=NS),
        pa.field("capturing_ops", pa.string()),
    ]
)
EVENTS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("replay", pa.int64()),
        pa.field("item", pa.int64()),
        pa.field("name", _NAME),
        pa.field("kind", pa.dictionary(pa.uint8(), pa.string())),
        pa.field("gpu_ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("op_name", _NAME),
    ]
)
# Past this many distinct capturing operators a replay's list stops (with a count).
MAX_OPS_LISTED = 12


def graph_replays(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per graph replay: rank, replay (its index on the rank), launch_name, launch_ts,
    stream, gpu_events, kernels, gpu_time (ns), gpu_time_pct (of the rank's GPU time),
    capture_matched, captures_matching, capture_ts, capturing_ops. Side table "events":
    per replayed GPU event, its replay, item (position in the replay), name, kind, gpu_ts,
    dur and op_name (the operator it counts for; null unmatched)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts, events, notes = [], [], []
    for rank, trace, mask in select.each_rank(traces, sel):
        if not has_graph_launches(trace):
            continue
        main, side = _rank_tables(rank, trace, mask)
        parts.append(main)
        events.append(side)
        notes += replay_notes(trace, mask, rank)
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    if not table.num_rows:
        notes.append("no graph launches on the selected ranks")
    return Result(
        "graph_replays",
        table,
        tables={"events": pa.concat_tables(events) if events else EVENTS.empty_table()},
        notes=notes,
        params=dict(selection=sel),
    )


def _rank_tables(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> tuple[pa.Table, pa.Table]:
    replays, match = replays_of(trace), replay_match(trace)
    col = trace.column
    replay_of = replays.replay_of_each()
    kept = np.ones(len(replays.gpu), bool)
    if mask is not None:
        kept = mask[replays.gpu] & mask[replays.launch[replay_of]]
    gpu, which, by = replays.gpu[kept], replay_of[kept], match.captured_by[kept]
    item = (np.arange(len(replays.gpu)) - replays.offsets[replay_of])[kept]
    dur = np.maximum(col("events", "dur")[gpu], 0).astype(np.int64)
    n = replays.total
    events = np.bincount(which, minlength=n)
    shown = np.flatnonzero(events > 0)
    work = gpu_work(trace, mask)
    total = int((work.ends - work.starts).sum())
    gpu_time = np.bincount(which, weights=dur, minlength=n).astype(np.int64)
    kernels = np.bincount(which[col("events", "kind")[gpu] == EventKind.kernel], minlength=n)
    first = np.full(n, -1, np.int64)
    first[which[::-1]] = gpu[::-1]  # each replay's first kept event
    # the operator each event counts for: that of the capture's launch in its place
    captures = graph_captures(trace)
    chosen = match.capture[which]
    op = np.full(len(gpu), -1, np.int64)
    matched = (by >= 0) & (chosen >= 0)
    if matched.any():  # the captured launch each event aligned with, and its operator
        order = np.argsort(captures.launch, kind="stable")
        at = order[np.searchsorted(captures.launch[order], by[matched])]
        op[matched] = captures.op[at]
    capture = match.capture[shown]
    capture_ts = np.full(len(shown), -1, np.int64)
    has = capture >= 0
    capture_ts[has] = col("events", "ts")[captures.launch[captures.offsets[capture[has]]]]
    launch = replays.launch[shown]
    names = col("events", "name")
    main = pa.table(
        [
            np.full(len(shown), rank, np.int64),
            shown.astype(np.int64),
            _arrow.column("events", "name", names[launch], trace.strings),
            col("events", "ts")[launch],
            col("events", "stream")[first[shown]],
            events[shown].astype(np.int64),
            kernels[shown].astype(np.int64),
            gpu_time[shown],
            100.0 * gpu_time[shown] / total if total else np.zeros(len(shown)),
            capture >= 0,
            match.agreeing[shown],
            _arrow.masked(match.distance[shown], match.distance[shown] < 0),
            _arrow.masked(capture_ts, capture < 0),
            array_of(_op_lists(trace, which, op, shown), pa.string()),
        ],
        schema=SCHEMA,
    )
    op_names = np.where(op >= 0, names[np.maximum(op, 0)], -1).astype(np.int32)
    side = pa.table(
        [
            np.full(len(gpu), rank, np.int64),
            which.astype(np.int64),
            item.astype(np.int64),
            _arrow.column("events", "name", names[gpu], trace.strings),
            _arrow.column("events", "kind", col("events", "kind")[gpu], trace.strings),
            col("events", "ts")[gpu],
            dur,
            _arrow.column("events", "name", op_names, trace.strings),
        ],
        schema=EVENTS,
    )
    return main, side


def _op_lists(trace: Trace, which: np.ndarray, op: np.ndarray, shown: np.ndarray) -> list:
    """Per shown replay: the distinct names of the operators its events count for, in the
    order of its events; None where its capture was not matched. `which` (each event's
    replay) is sorted, so each replay's events are one slice."""
    names = trace.column("events", "name")
    lo, hi = np.searchsorted(which, shown), np.searchsorted(which, shown, side="right")
    out: list = []
    for a, b in zip(lo.tolist(), hi.tolist()):
        ops = op[a:b]
        ops = ops[ops >= 0]
        if not len(ops):
            out.append(None)
            continue
        ids, first = np.unique(names[ops], return_index=True)
        ordered = ids[np.argsort(first)]
        listed = trace.strings_at(ordered[:MAX_OPS_LISTED]).to_pylist()
        more = len(ordered) - MAX_OPS_LISTED
        out.append(", ".join(listed) + (f", {more} more" if more > 0 else ""))
    return out
