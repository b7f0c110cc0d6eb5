"""What-if rows of chained steps (hta_fast.model.graph.chains): each step of a chain replayed as one
graph, cut back into steps. A step's predicted time is its span in the edited replay (from its
replayed start to its latest member's end); its critical path runs back from that end to the
step's replayed start, the edge that crosses the start counting only for the part inside."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..graph.chains import Chain
from ..replay.step_rows import Replayed, step_row


def step_end_nodes(chain: Chain, times: np.ndarray) -> np.ndarray:
    """Each step's latest member end node (its anchor's start where none ends after it)."""
    ends = 2 * chain.members + 1
    order = np.lexsort((times[ends], chain.member_step))
    last = np.full(len(chain.step), -1, np.int64)
    last[chain.member_step[order]] = ends[order]  # the last write per step is its latest
    starts = chain.step_starts(times)
    fallback = 2 * chain.anchor
    return np.where((last < 0) | (times[np.maximum(last, 0)] < starts), fallback, last)


def step_paths(chain: Chain, weight: np.ndarray, times: np.ndarray
               ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per step, its critical path's edges and the time each counts for within the step."""
    g = chain.graph
    starts = chain.step_starts(times)
    paths, offsets = g.core.critical_paths(weight, times, 0, step_end_nodes(chain, times), starts)
    out = []
    for k in range(len(chain.step)):
        p = paths[offsets[k]:offsets[k + 1]]
        w = weight[p].astype(np.int64)
        if len(p):
            src, dst = g.src[p[0]], g.dst[p[0]]
            if times[src] < starts[k]:  # the edge that crosses the step's start
                w[0] = times[dst] - starts[k]
        out.append((p, w))
    return out


def chain_rows(chains: Sequence[Chain], replayed: Sequence[Replayed], holder: np.ndarray
               ) -> list[dict[str, Any]]:
    """One row per (rank, step) of these chains (one per rank, the same steps)."""
    rows = []
    for chain, r in zip(chains, replayed):
        g = chain.graph
        measured = chain.spans(chain.measured_times())
        base, predicted = chain.spans(r.base_times), chain.spans(r.times)
        starts = chain.step_starts(r.times)
        before = step_paths(chain, r.w_base, r.base_times)
        after = step_paths(chain, r.w_edit, r.times)
        last = step_end_nodes(chain, r.times)
        for k, step in enumerate(chain.step.tolist()):
            path, path_w = after[k]
            # Where the step's path begins: at or before its start, or at a collective's end
            # that another rank held (the time from the step's start to it is spent waiting).
            first = int(g.src[path[0]]) if len(path) else int(last[k])
            held = first in r.code_of and r.times[first] > starts[k]
            waited = int(r.times[first] - starts[k]) if held else 0
            rows.append(step_row(chain.rank, step, g, chain.trace, r, holder, int(measured[k]),
                                 int(base[k]), int(predicted[k]), before[k][0], before[k][1],
                                 path, path_w, first, waited))
    return rows
