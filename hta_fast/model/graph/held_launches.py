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
    blocking call's, not a launch's latency."""
    out = np.full(len(edges), -1, np.int64)
    kinds = graph.sync_kind
    launch = np.flatnonzero(graph.edge_type[edges] == EDGE["launch"])
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
    src, dst = graph.src[edges[launch]], graph.dst[edges[launch]]
    long = launch[t[dst] - t[src] >= HELD_MIN]
    if not len(long):
        return out
    lane = graph.lane
    b_start, b_end = t[2 * blocking], t[2 * blocking + 1]
    for e in long:
        call, work = graph.src[edges[e]] // 2, graph.dst[edges[e]] // 2
        on = blocking[
            (lane[blocking] == lane[call])
            & (b_start >= t[2 * call + 1])
            & (b_start < t[2 * work])
            & (b_end >= t[2 * work])
        ]
        if len(on):
            out[e] = on[0]
    return out
