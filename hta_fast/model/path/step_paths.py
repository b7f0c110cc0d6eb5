"""Each step's critical path over one replay of a chain (hta_fast.model.graph.chain): from the
step's end node back along tight edges, in one core call for all steps (critical_paths, each
walk stopped at its step's start, so a step's path costs its own length). A chained step's
path stops at its replayed start and the edge that crosses the start counts only for the part
inside the step, so the path is as long as the replayed step; a window's runs back to the
window's start node. Each edge counts the time it moves the path forward, never less than 0
(module step_paths), so no category's share is negative."""

from __future__ import annotations

import numpy as np

from ..graph.chain import Chain


def step_paths(
    chain: Chain, weight: np.ndarray, times: np.ndarray
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per step, its critical path's edges and the time each counts for within the step."""
    g = chain.graph
    starts = chain.step_starts(times)
    paths, offsets = g.core.critical_paths(
        weight, times, 0, chain.end_nodes(times), chain.path_stops(times)
    )
    out = []
    for k in range(len(chain.steps)):
        p = paths[offsets[k] : offsets[k + 1]]
        if not len(p):
            out.append((p, np.zeros(0, np.int64)))
            continue
        # The edge that crosses the step's start counts for its part inside the step. An
        # edge that runs back in time (two calls that overlap on a thread: a negative gap)
        # counts nothing, and the edges after it only past the furthest time reached: the
        # counted times are never negative and still add up to the path's length.
        begin = max(int(times[g.src[p[0]]]), int(starts[k]))
        reach = np.maximum.accumulate(np.r_[begin, times[g.dst[p]]].astype(np.int64))
        out.append((p, np.diff(reach)))
    return out
