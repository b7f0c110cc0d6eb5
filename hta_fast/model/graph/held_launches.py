"""Launched work that a later blocking call on the launching thread held unstarted: the
one owner of that rule, read by the critical path's categories (model.path.bounds) and by
op edits that shorten the blocking call (model.whatif.op_edit)."""

from __future__ import annotations

import numpy as np

from . import sync_calls
from .dependency_graph import EDGE, DependencyGraph

# ns: only launch edges this long are looked at (a launch latency is microseconds).
HELD_MIN = 100_000


def held_by_blocking_call(graph: DependencyGraph, edges: np.ndarray) -> np.ndarray:
    """Per edge, for a launch edge of HELD_MIN or more: the graph event of a blocking
    call on the launching thread that began after the launch returned and was still running
    when the launched work started (-1 otherwise). A runtime that queues work until a later
    call submits it (HIP before a blocking hipMemcpyWithStream: SGLang's graph runner sat
    463 ms in one, the GPU idle) starts the work when that call lets it go: the time is the
    blocking call's, not a launch's latency. Worked out once per graph (every step's path
    and every edit's weights ask)."""
    holders = graph.derived.get(__name__)
    if holders is None:
        holders = graph.derived[__name__] = _holders(graph)
    assert isinstance(holders, np.ndarray)
    return holders[edges]


def _holders(graph: DependencyGraph) -> np.ndarray:
    """held_by_blocking_call for every edge of the graph."""
    out = np.full(len(graph.edge_type), -1, np.int64)
    out.flags.writeable = False
    kinds = graph.sync_kind
    launch = np.flatnonzero(graph.edge_type == EDGE["launch"])
    if not len(launch) or not len(kinds):
        return out
    blocking = np.flatnonzero(
        np.isin(
            kinds, (sync_calls.STREAM, sync_calls.EVENT, sync_calls.DEVICE, sync_calls.OWN_COPY)
        )
    )
    if not len(blocking):
        return out
    t = graph.measured_nodes
    src, dst = graph.src[launch], graph.dst[launch]
    long = launch[t[dst] - t[src] >= HELD_MIN]
    if not len(long):
        return out
    return _first_holding(graph, long, blocking)


def _first_holding(graph: DependencyGraph, long: np.ndarray, blocking: np.ndarray) -> np.ndarray:
    """Per graph edge (-1 where none): for each launch edge in `long`, the first blocking
    call (lowest event) on the launching thread that began after the launch returned, before
    the launched work started, and was still running then. The calls are searched by
    (thread, start): a launch looks only at the calls that began in its own wait."""
    t = graph.measured_nodes
    out = np.full(len(graph.edge_type), -1, np.int64)
    lane = graph.lane
    call, work = graph.src[long] // 2, graph.dst[long] // 2
    call_end, work_start = t[2 * call + 1], t[2 * work]
    # One sorted key per (thread, start): thread rank * span + time since the earliest.
    lanes, b_lane = np.unique(lane[blocking], return_inverse=True)
    origin = int(t.min())
    span = int(t.max()) - origin + 1
    b_key = b_lane.astype(np.int64) * span + (t[2 * blocking] - origin)
    order = np.lexsort((blocking, b_key))
    b_key, b_sorted = b_key[order], blocking[order]
    pos = np.searchsorted(lanes, lane[call])
    known = (pos < len(lanes)) & (lanes[np.minimum(pos, len(lanes) - 1)] == lane[call])
    base = pos.astype(np.int64) * span
    lo = np.searchsorted(b_key, base + (call_end - origin), "left")
    hi = np.searchsorted(b_key, base + (work_start - origin), "left")
    b_end = t[2 * b_sorted + 1]
    one = known & (hi - lo == 1)
    held = one & (b_end[np.minimum(lo, len(b_sorted) - 1)] >= work_start)
    out[long[held]] = b_sorted[lo[held]]
    for k in np.flatnonzero(known & (hi - lo > 1)):  # calls nested in calls: rare
        window = b_sorted[lo[k] : hi[k]]
        on = window[b_end[lo[k] : hi[k]] >= work_start[k]]
        if len(on):
            out[long[k]] = on.min()
    out.flags.writeable = False
    return out
