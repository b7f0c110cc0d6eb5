"""The dependency graph of one rank's events in a window, with weights read off the trace.

Columns of the trace are turned into the core's graph input here (csrc/graph, rules in
docs/model.md); the core builds the edges, calibrates their weights so that a replay meets the
measured timeline, replays and finds the critical path.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Optional

import numpy as np

from ... import _core, sync_calls
from ...schema import CPU_KINDS, GPU_WORK_KINDS, EventKind
from ...trace import Trace
from . import held_waits, runtime_waits
from .poll_runs import poll_runs

# The core's EdgeType, by name in code order (csrc/graph/dependency_graph.h).
EDGE_TYPES = [t.name for t in sorted(_core.graph.EdgeType, key=int)]
EDGE = {name: i for i, name in enumerate(EDGE_TYPES)}

GPU_WORK = GPU_WORK_KINDS  # the graph's nodes: schema's CPU_KINDS and GPU work


def skip_mask(*edge_types: str) -> int:
    """The core's skip_types bit set for these edge type names."""
    return sum(1 << EDGE[name] for name in edge_types)


@dataclasses.dataclass
class DependencyGraph:
    """rows: the trace's event rows the graph holds (event i of the graph is rows[i]); nodes
    2i (start) and 2i + 1 (end), and 2 * len(rows) (the window start). weight/binding: the
    calibrated weight (ns) of each edge and whether it decided its target's measured time.
    carried: per event, whether it is GPU work launched before the window (a backlog it
    holds as the predecessors of its own GPU work; started no earlier than the window).
    waits: what its sync and stream-wait calls came to (inferred ones, what is missing).
    sync_kind: per event, what its call waits on (sync_calls; pageable copies included);
    lane: per event, its thread or stream code."""

    core: _core._DependencyGraph
    rows: np.ndarray
    window_start: int
    weight: np.ndarray
    binding: np.ndarray
    n_sync_edges: int
    carried: np.ndarray
    waits: runtime_waits.WaitCalls
    # per event, the SyncKind its call has (NONE for GPU events and calls that do not wait)
    sync_kind: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.uint8))
    # per event, its lane: a CPU event's thread, a GPU event's stream (codes of this graph)
    lane: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    # Values a rule module derives from the whole graph once (a graph never changes), keyed
    # by the module: read per step and per replay, they would be recomputed hundreds of times.
    derived: dict[str, object] = dataclasses.field(default_factory=dict, repr=False, compare=False)

    # The core hands out copies: a chain's steps read them once per step, so they are kept.
    @functools.cached_property
    def edge_type(self) -> np.ndarray:
        return self.core.type

    @functools.cached_property
    def src(self) -> np.ndarray:
        """Each edge's source node."""
        return self.core.src

    @functools.cached_property
    def measured_nodes(self) -> np.ndarray:
        """Each node's measured time (ns, the trace's clock; the source: the window start)."""
        return self.core.measured

    @functools.cached_property
    def dst(self) -> np.ndarray:
        """Each edge's target node."""
        return self.core.dst

    def replay(
        self, weight: Optional[np.ndarray] = None, skip: int = 0, floor: Optional[np.ndarray] = None
    ) -> np.ndarray:
        """Node times (ns since the window start) with these weights (default: calibrated);
        floor: per node, a time it cannot happen before (set by other ranks' graphs)."""
        return self.core.replay(self.weight if weight is None else weight, skip, floor)

    def critical_path(self, weight: Optional[np.ndarray] = None, skip: int = 0) -> np.ndarray:
        """Edge ids of the longest path from the window start to the latest node, in order."""
        w = self.weight if weight is None else weight
        return self.core.critical_path(w, self.core.replay(w, skip), skip)

    @property
    def measured_end(self) -> int:
        """The latest measured node time, ns since the window start."""
        return int(self.core.measured.max()) - self.window_start


def graph_rows(trace: Trace, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Rows that become graph events: CPU events with a thread and GPU kernels, copies and
    sets (not cuda_sync rows, which mark waits rather than work, nor GPU annotations, nor
    a polling run's queries before its last: model.graph.poll_runs)."""
    kind = trace.column("events", "kind")
    on = np.isin(kind, CPU_KINDS) | np.isin(kind, GPU_WORK)
    on &= ~poll_runs(trace).body
    if keep is not None:
        on &= keep
    return np.flatnonzero(on)


# A child may end this much after its parent and still be its child: the times' rounding.
OUTLAST_NS = 1_000


def _holding_parents(par: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's parent, moved up to the nearest ancestor that ends no earlier than it
    (within OUTLAST_NS). The trace's nesting gives an event that starts inside another
    the other as parent even when it outlasts it (SGLang's step[DECODE] annotation starts
    inside the 4 us Python frame that opens it and runs 465 ms); nested so, the graph
    would hang the long event's end, and all after it, from a parent already over."""
    par = par.copy()
    for _ in range(64):  # deeper chains of outlasting events are not seen in traces
        has = par >= 0
        bad = np.flatnonzero(has & (end > np.where(has, end[np.maximum(par, 0)], 0) + OUTLAST_NS))
        if not len(bad):
            break
        par[bad] = par[par[bad]]
    return par


def _dense_codes(values: np.ndarray) -> np.ndarray:
    """Each value's index among the sorted distinct values (np.unique's inverse, without its
    sort of every value: a chain's graph holds millions of events and a few hundred distinct
    threads, streams or names, so a hashed unique and a binary search cost far less)."""
    return np.searchsorted(np.unique(values), values).astype(np.int64)


def _sync_args(trace: Trace, sync_rows: np.ndarray) -> tuple[dict[int, int], dict[int, int]]:
    """wait_on_stream and wait_on_event_correlation of these cuda_sync rows (by row)."""
    srow = trace.column("sync_args", "row")
    order = np.argsort(srow, kind="stable")
    srow = srow[order]
    wait_stream = trace.column("sync_args", "wait_on_stream")[order]
    wait_corr = trace.column("sync_args", "wait_on_event_correlation")[order]
    pos = np.searchsorted(srow, sync_rows)
    streams, corrs = {}, {}
    for r, k in zip(sync_rows, pos):
        if 0 <= r and k < len(srow) and srow[k] == r:
            streams[int(r)], corrs[int(r)] = int(wait_stream[k]), int(wait_corr[k])
    return streams, corrs


def _infer_synced_streams(
    calls: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    is_gpu: np.ndarray,
    corr: np.ndarray,
    sync_kind: np.ndarray,
    wait_lane: np.ndarray,
) -> None:
    """A stream sync whose trace lacks its cuda_sync row (older traces) names no stream. Of
    the streams with work launched before the call, it waited for one whose last such work
    ended by the call's return: the one that ended latest. Where every such stream ended by
    then, or none did, it waits for every stream (a device sync), as before. Without this, a sync on a copy stream is tied to a backlogged
    compute stream that it did not wait for, and calibrates negative."""
    gpu = np.flatnonzero(is_gpu & (corr >= 0))
    per_lane = []
    for ln in np.unique(lane[gpu]):
        ev = gpu[lane[gpu] == ln]
        ev = ev[np.argsort(corr[ev], kind="stable")]
        per_lane.append((int(ln), corr[ev], ts[ev] + dur[ev]))
    for i in calls:
        best, best_end, later = -1, None, False
        for ln, c, end in per_lane:
            k = int(np.searchsorted(c, corr[i], side="left")) - 1
            if k < 0:
                continue
            later |= bool(end[k] > ts[i] + dur[i])
            if end[k] <= ts[i] + dur[i] and (best_end is None or end[k] > best_end):
                best, best_end = ln, end[k]
        if later and best >= 0:  # a device-wide wait contradicts the trace: name the stream
            sync_kind[i], wait_lane[i] = sync_calls.STREAM, best


def _mark_pageable_copies(
    trace: Trace,
    names: np.ndarray,
    is_copy: np.ndarray,
    launch: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    sync_kind: np.ndarray,
) -> None:
    """Async copy calls that held the host until their pageable copy was done wait for it
    (sync_calls.pageable_copies): their sync_kind becomes OWN_COPY."""
    copies = np.flatnonzero(is_copy & (launch >= 0))
    if not len(copies):
        return
    calls = launch[copies]
    free = sync_kind[calls] == sync_calls.NONE
    copies, calls = copies[free], calls[free]
    if not len(copies):
        return
    blocking = sync_calls.pageable_copies(
        trace.names_at(names[calls]),
        trace.names_at(names[copies]),
        ts[calls] + dur[calls],
        ts[copies] + dur[copies],
    )
    sync_kind[calls[blocking]] = sync_calls.OWN_COPY


def _read_polls(
    trace: Trace,
    to_local: Callable[[np.ndarray], np.ndarray],
    is_gpu: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    corr: np.ndarray,
    kinds: tuple[np.ndarray, ...],
    wait_lane: np.ndarray,
    wait_corr: np.ndarray,
) -> None:
    """A polling run whose last query and the GPU event it waited for are in the graph
    becomes one event sync on that event, from where the run began (model.graph.poll_runs);
    the frames holding only the last query start there too."""
    runs = poll_runs(trace)
    if not len(runs.last):
        return
    last, target = to_local(runs.last), to_local(runs.target)
    ok = (last >= 0) & (target >= 0)
    ok[ok] &= is_gpu[target[ok]]
    if not ok.any():
        return
    for k in kinds:
        k[last[ok]] = sync_calls.EVENT
    wait_lane[last[ok]], wait_corr[last[ok]] = lane[target[ok]], corr[target[ok]] + 1
    moved = to_local(runs.moved)
    moved, begin = moved[ok[runs.moved_run] & (moved >= 0)], runs.start[runs.moved_run]
    begin = begin[ok[runs.moved_run] & (to_local(runs.moved) >= 0)]
    dur[moved] += ts[moved] - begin
    ts[moved] = begin


def build_graph(
    trace: Trace,
    rows: np.ndarray,
    window_start: Optional[int] = None,
    carried: Optional[np.ndarray] = None,
    release_from: Optional[np.ndarray] = None,
    thread_part: Optional[np.ndarray] = None,
) -> DependencyGraph:
    """The calibrated dependency graph of these event rows of one trace. carried (a mask over
    rows): GPU work launched before the window; its launch is not in the graph, and an event
    that began before window_start enters the graph at window_start with what was left of it.
    release_from (per row, a node or -1): where a node of that event without a predecessor
    is released from, instead of the window's start; thread_part (per row, >= 0): CPU events
    of one thread with different parts are on different lanes, as if on different threads
    (hta_fast.model.graph.chain_build: a worker thread's calls in each step)."""
    rows = np.asarray(rows, np.int64)
    if len(rows) > 1 and not (np.diff(rows) > 0).all():
        raise ValueError("graph rows must be increasing")
    carried = np.zeros(len(rows), bool) if carried is None else np.asarray(carried, bool)
    col = trace.column
    ts, dur = _times_in_window(trace, rows, carried, window_start)
    kind = col("events", "kind")
    is_gpu = np.isin(kind[rows], GPU_WORK)
    partner, parent = col("events", "partner"), col("events", "parent")
    to_local = _to_local(rows, len(kind))
    pid_code, lane, lane_of_stream = _lanes(trace, rows, is_gpu, thread_part)

    par = _holding_parents(np.where(is_gpu, -1, to_local(parent[rows])), ts + dur)
    launch = np.where(is_gpu & ~carried, to_local(partner[rows]), -1)
    corr = col("events", "correlation")[rows].astype(np.int64)

    # Sync calls: the kind from the name, what they wait on from their cuda_sync partner row.
    sync_kind, name_at, uniq = _sync_kinds(trace, rows, is_gpu, launch, ts, dur)
    asked = sync_kind.copy()  # what each call does, before its row is looked for
    calls = np.flatnonzero(sync_kind)
    wait_lane, wait_corr, target_lane, unknown_stream = _sync_targets_from_rows(
        trace, rows, calls, sync_kind, lane_of_stream
    )
    _correlate_blind_syncs(asked, corr, is_gpu, ts)

    waits = runtime_waits.waits_without_rows(
        trace, rows, calls, asked, name_at, uniq, ts, dur, lane, is_gpu, launch, corr
    )
    summary = _take_runtime_waits(
        waits, calls, asked, sync_kind, (wait_lane, wait_corr, target_lane)
    )

    if unknown_stream:
        _infer_synced_streams(
            np.array(unknown_stream), ts, dur, lane, is_gpu, corr, sync_kind, wait_lane
        )

    _read_polls(
        trace, to_local, is_gpu, ts, dur, lane, corr, (sync_kind, asked), wait_lane, wait_corr
    )

    read = _waits_read_from_rows(asked[calls], wait_lane[calls], partner[rows[calls]])
    summary = dataclasses.replace(summary, read=read)
    held = held_waits.held_by(
        ts, dur, lane, pid_code, is_gpu, _launch_call_ends(trace, rows, is_gpu)
    )
    if (held >= 0).any():
        waits_on = np.flatnonzero(asked == sync_calls.STREAM_WAIT)
        summary = dataclasses.replace(
            summary,
            held=int(np.count_nonzero(held >= 0)),
            held_with_call=held_waits.backed_by_call(
                held, ts, lane, is_gpu, launch, corr, waits_on
            ),
        )

    start = int(ts.min()) if window_start is None and len(ts) else int(window_start or 0)
    core = _core.graph.build(
        np.ascontiguousarray(ts, np.int64),
        np.ascontiguousarray(dur, np.int64),
        lane,
        is_gpu.astype(np.uint8),
        par.astype(np.int64),
        launch.astype(np.int64),
        corr,
        sync_kind,
        wait_lane,
        wait_corr,
        target_lane,
        start,
        None if release_from is None else np.ascontiguousarray(release_from, np.int64),
        held,
    )
    weight, binding = core.calibrate()
    types = core.type
    n_sync = int(np.count_nonzero((types == EDGE["sync_wait"]) | (types == EDGE["cross_stream"])))
    return DependencyGraph(
        core, rows, start, weight, binding, n_sync, carried, summary, asked, lane
    )


def _times_in_window(
    trace: Trace, rows: np.ndarray, carried: np.ndarray, window_start: Optional[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(ts, dur) of the rows, durations at least 0; a carried event starts no earlier than
    window_start, with what was left of it."""
    col = trace.column
    ts, dur = col("events", "ts")[rows], np.maximum(col("events", "dur")[rows], 0)
    if carried.any() and window_start is not None:
        # The part of a carried event before the window ran in the previous window.
        end = ts + dur
        ts = np.where(carried, np.maximum(ts, window_start), ts)
        dur = np.where(carried, end - ts, dur)
    return ts, dur


def _to_local(rows: np.ndarray, n_trace: int) -> Callable[[np.ndarray], np.ndarray]:
    """A map from trace rows to graph events (-1: not in the graph, or no row)."""
    local_of: Optional[np.ndarray] = None
    if 4 * len(rows) >= n_trace:  # most of the trace (a chain): a table beats a search
        local_of = np.full(n_trace + 1, -1, np.int64)  # the last entry answers row -1
        local_of[rows] = np.arange(len(rows))

    def to_local(target: np.ndarray) -> np.ndarray:
        if local_of is not None:
            return local_of[np.where(target >= 0, target, n_trace)]
        # rows is sorted: a binary search maps trace rows to graph events without an array
        # as long as the whole trace (a step's graph costs its own size, not the trace's).
        pos = np.minimum(np.searchsorted(rows, target), max(len(rows) - 1, 0))
        return np.where((target >= 0) & (rows[pos] == target), pos, -1).astype(np.int64)

    return to_local


def _lanes(
    trace: Trace, rows: np.ndarray, is_gpu: np.ndarray, thread_part: Optional[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, dict[tuple[int, int], int]]:
    """Per event, its pid code and lane: one per (pid, tid) thread (and thread part) and one
    per (pid, stream); and the lane of each GPU (pid, stream)."""
    col = trace.column
    pid, tid, stream = col("events", "pid"), col("events", "tid"), col("events", "stream")
    # The flag keeps kinds apart.
    pid_code = _dense_codes(pid[rows])
    sub_code = _dense_codes(np.where(is_gpu, stream[rows].astype(np.int64), tid[rows]))
    key = (is_gpu.astype(np.int64) * (pid_code.max(initial=0) + 1) + pid_code) * (
        sub_code.max(initial=0) + 1
    ) + sub_code
    if thread_part is not None:
        part = np.where(is_gpu, 0, np.asarray(thread_part, np.int64))
        key = key * (int(part.max(initial=0)) + 1) + part
    lane = _dense_codes(key)
    # One event per GPU lane names its (pid, stream).
    gpu_at = np.full(int(lane.max(initial=-1)) + 1, -1, np.int64)
    gpu_at[lane[is_gpu]] = rows[is_gpu]
    lane_of_stream = {
        (int(pid[r]), int(stream[r])): int(ln) for ln, r in enumerate(gpu_at.tolist()) if r >= 0
    }
    return pid_code, lane, lane_of_stream


def _sync_kinds(
    trace: Trace,
    rows: np.ndarray,
    is_gpu: np.ndarray,
    launch: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per event, the SyncKind its call has by its name (pageable copies included): (sync
    kind, the index of each event's name among the distinct names, those names' ids)."""
    col = trace.column
    names = col("events", "name")[rows]
    uniq = np.unique(names)
    kind_of = sync_calls.sync_kind_of_names(trace.names_at(uniq))
    name_at = np.searchsorted(uniq, names)
    sync_kind = np.where(is_gpu, 0, kind_of[name_at]).astype(np.uint8)
    is_copy = col("events", "kind")[rows] == EventKind.memcpy
    _mark_pageable_copies(trace, names, is_copy, launch, ts, dur, sync_kind)
    return sync_kind, name_at, uniq


def _sync_targets_from_rows(
    trace: Trace,
    rows: np.ndarray,
    calls: np.ndarray,
    sync_kind: np.ndarray,
    lane_of_stream: dict[tuple[int, int], int],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """What each sync call waits on, from its cuda_sync partner row: (wait_lane, wait_corr,
    target_lane, the calls whose stream is unknown). A call whose target cannot be read
    becomes a device sync (a stream wait: no wait) in sync_kind, in place."""
    col = trace.column
    pid, stream, partner = col("events", "pid"), col("events", "stream"), col("events", "partner")
    wait_lane = np.full(len(rows), -1, np.int64)
    wait_corr = np.full(len(rows), -1, np.int64)
    target_lane = np.full(len(rows), -1, np.int64)
    unknown_stream: list[int] = []
    arg_stream, arg_corr = _sync_args(trace, partner[rows[calls]]) if len(calls) else ({}, {})
    for i in calls:
        r = rows[i]
        k = int(sync_kind[i])
        s = int(partner[r])  # the cuda_sync row that records what this call waited on
        # Streams belong to the device's pid (the cuda_sync row's), not the calling thread's.
        p = int(pid[s]) if s >= 0 else int(pid[r])
        a_stream, a_corr = arg_stream.get(s, -1), arg_corr.get(s, -1)
        if k == sync_calls.STREAM:
            lane_id = lane_of_stream.get((p, int(stream[s]))) if s >= 0 else None
            if lane_id is None:
                sync_kind[i] = sync_calls.DEVICE  # which stream is unknown: inferred below
                unknown_stream.append(int(i))
            else:
                wait_lane[i] = lane_id
        elif k == sync_calls.EVENT:
            lane_id = lane_of_stream.get((p, a_stream))
            if lane_id is None or a_corr < 0:
                sync_kind[i] = sync_calls.DEVICE
            else:
                wait_lane[i], wait_corr[i] = lane_id, a_corr
        elif k == sync_calls.STREAM_WAIT:
            src = lane_of_stream.get((p, a_stream))
            dst = lane_of_stream.get((p, int(stream[s]))) if s >= 0 else None
            if src is None or dst is None or a_corr < 0:
                sync_kind[i] = sync_calls.NONE
            else:
                wait_lane[i], wait_corr[i], target_lane[i] = src, a_corr, dst
    return wait_lane, wait_corr, target_lane, unknown_stream


def _correlate_blind_syncs(
    asked: np.ndarray, corr: np.ndarray, is_gpu: np.ndarray, ts: np.ndarray
) -> None:
    """A sync call without a correlation id waits for what was launched before it started:
    its corr becomes one past the largest launched before it (in place)."""
    blind = np.flatnonzero((asked != 0) & (corr < 0))
    if len(blind):
        launched = np.flatnonzero(~is_gpu & (corr >= 0))
        order = launched[np.argsort(ts[launched], kind="stable")]
        running_max = np.maximum.accumulate(corr[order]) if len(order) else order
        k = np.searchsorted(ts[order], ts[blind], side="right")
        corr[blind] = np.where(k > 0, running_max[np.maximum(k - 1, 0)] + 1, 0) if len(order) else 0


def _take_runtime_waits(
    waits: Optional[tuple[np.ndarray, np.ndarray, np.ndarray, runtime_waits.WaitCalls]],
    calls: np.ndarray,
    asked: np.ndarray,
    sync_kind: np.ndarray,
    targets: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> runtime_waits.WaitCalls:
    """Writes what runtime_waits found for the calls without a cuda_sync row into sync_kind
    and targets (wait_lane, wait_corr, target_lane), in place; returns the calls' summary."""
    if waits is None:
        return runtime_waits.WaitCalls(
            calls=len(calls), stream_waits=int(np.count_nonzero(asked == sync_calls.STREAM_WAIT))
        )
    wait_lane, wait_corr, target_lane = targets
    w_lane, w_corr, target, summary = waits
    got = w_lane >= 0
    on = calls[got]
    sync_kind[on] = asked[on]
    wait_lane[on], wait_corr[on], target_lane[on] = w_lane[got], w_corr[got], target[got]
    return summary


def _waits_read_from_rows(asked: np.ndarray, wait_lane: np.ndarray, sync_row: np.ndarray) -> int:
    """How many stream waits and event syncs (of these calls) had a cuda_sync row that named
    what they waited on."""
    return int(
        np.count_nonzero(
            np.isin(asked, (sync_calls.STREAM_WAIT, sync_calls.EVENT))
            & (wait_lane >= 0)
            & (sync_row >= 0)
        )
    )


def _launch_call_ends(trace: Trace, rows: np.ndarray, is_gpu: np.ndarray) -> np.ndarray:
    """The end of each GPU event's launching call, read off the trace (a carried event's
    launch is outside the graph but still says when it was ready); -1 where none."""
    col = trace.column
    launched_by = np.where(is_gpu, col("events", "partner")[rows], -1)
    call_end = np.full(len(rows), -1, np.int64)
    by = launched_by >= 0
    call_end[by] = col("events", "ts")[launched_by[by]] + np.maximum(
        col("events", "dur")[launched_by[by]], 0
    )
    return call_end
