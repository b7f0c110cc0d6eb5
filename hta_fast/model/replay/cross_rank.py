"""All ranks of a step replayed together: a collective cannot end on any rank before the last
rank has reached it.

Rule (docs/model.md, "Across ranks"): each rank's end of a matched collective c is

    end_r = max(start_r + data_c, last_start_c + after_last_r)

where last_start_c is the latest start of c over the ranks, data_c its time moving data (the
shortest duration over the ranks that ran it, hta_fast.analysis.collectives) and after_last_r
= measured end_r - measured last_start_c: data_c on the last rank to arrive, on the others
data_c plus what their clocks and the kernel's teardown add. With the measured starts both
terms meet the measured end (data_c is no longer than any rank's duration), so the replay
reproduces the trace; in a what-if, a rank that reaches c later holds every other rank's end
of it, and through them all the work that follows.

The fixed point: each rank's graph replays on its own with a floor under its collectives'
ends, the floors come from the other ranks' replayed starts, and that repeats until no floor
moves. Times only grow from one pass to the next, and each pass settles the collectives one
cross-rank wait further down a chain, so the passes are at most the longest chain + 1.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..comm.collective_links import MatchedCollectives
from ..graph.dependency_graph import EDGE, DependencyGraph

MAX_PASSES = 100_000


@dataclasses.dataclass
class LinkedWindow:
    """One rank's window with its collectives tied to the other ranks': comm (graph events
    of linked collectives), match (their collective), data (ns moving data, as measured) and
    after_last (ns from the last arrival to this rank's end, as measured)."""

    rank: int
    graph: DependencyGraph
    comm: np.ndarray
    match: np.ndarray
    data: np.ndarray
    after_last: np.ndarray

    def self_edges(self) -> np.ndarray:
        """The gpu_self edge of each linked collective's kernel."""
        g = self.graph
        edges = np.flatnonzero(g.edge_type == EDGE["gpu_self"])
        events = g.core.src[edges] // 2
        order = np.argsort(events)
        return edges[order[np.searchsorted(events[order], self.comm)]]


def link_windows(
    graphs: Sequence[tuple[int, DependencyGraph]], matched: MatchedCollectives
) -> list[LinkedWindow]:
    """Ties the communication kernels of these windows (one per rank, the same step) to the
    collectives they share: those that two or more of the windows hold as their own. A
    kernel carried into a window (launched in the step before, cut at the window's start) is
    not tied: its ranks reached it before the window began, and its data time is not what
    is left of it."""
    local = []
    for rank, g in graphs:
        rc = matched.per_rank[rank]
        pos = np.minimum(np.searchsorted(g.rows, rc.rows), max(len(g.rows) - 1, 0))
        inside = (
            (g.rows[pos] == rc.rows) & ~g.carried[pos]
            if len(g.rows)
            else np.zeros(len(rc.rows), bool)
        )
        local.append((pos[inside], rc.match[inside]))
    seen = np.concatenate([np.unique(m) for _, m in local]) if local else np.zeros(0, np.int64)
    codes, counts = np.unique(seen, return_counts=True)
    shared = codes[counts > 1]
    last = np.full(len(matched.data_time), np.iinfo(np.int64).min)
    for (_, g), (ev, m) in zip(graphs, local):
        keep = np.isin(m, shared)
        np.maximum.at(last, m[keep], g.core.measured[2 * ev[keep]])
    out = []
    for (rank, g), (ev, m) in zip(graphs, local):
        keep = np.isin(m, shared)
        ev, m = ev[keep], m[keep]
        out.append(
            LinkedWindow(
                rank, g, ev, m, matched.data_time[m], g.core.measured[2 * ev + 1] - last[m]
            )
        )
    return out


@dataclasses.dataclass
class Together:
    """times: each window's node times (ns since its start); passes of the fixed point;
    last_rank: per collective code, the rank that reached it last (-1: not linked)."""

    times: list[np.ndarray]
    passes: int
    last_rank: np.ndarray


def replay_together(
    windows: Sequence[LinkedWindow],
    weights: Sequence[np.ndarray],
    after_last: Optional[Sequence[np.ndarray]] = None,
) -> Together:
    """Every window's node times replayed with these weights, each collective's end held
    until its last rank's start + after_last (default: as measured). The windows' starts
    place them on one clock (the traces')."""
    after = [w.after_last for w in windows] if after_last is None else list(after_last)
    n_codes = 1 + max((int(w.match.max()) for w in windows if len(w.match)), default=-1)
    floors: list[Optional[np.ndarray]] = [None] * len(windows)
    for passes in range(1, MAX_PASSES + 1):
        times = [w.graph.replay(wt, floor=f) for w, wt, f in zip(windows, weights, floors)]
        last = np.full(n_codes, np.iinfo(np.int64).min)
        for w, t in zip(windows, times):
            np.maximum.at(last, w.match, w.graph.window_start + t[2 * w.comm])
        moved = False
        for i, (w, t) in enumerate(zip(windows, times)):
            if not len(w.comm):
                continue
            floor = floors[i] if floors[i] is not None else np.zeros(len(t), np.int64)
            assert floor is not None
            held = last[w.match] + after[i] - w.graph.window_start
            if (held > floor[2 * w.comm + 1]).any():
                floor = floor.copy()
                floor[2 * w.comm + 1] = np.maximum(floor[2 * w.comm + 1], held)
                floors[i], moved = floor, True
        if not moved:
            last_rank = np.full(n_codes, -1, np.int64)
            for w, t in zip(windows, times):  # ties go to the lowest rank
                at_last = (w.graph.window_start + t[2 * w.comm]) == last[w.match]
                fill = at_last & (last_rank[w.match] < 0)
                last_rank[w.match[fill]] = w.rank
            return Together(times, passes, last_rank)
    raise RuntimeError(
        f"the ranks' collectives did not settle after {MAX_PASSES} passes: "
        "they wait on each other in a cycle (collectives of different groups "
        "in different orders on different ranks)"
    )


def measured_weights(linked: Sequence[LinkedWindow]) -> list[np.ndarray]:
    """Each window's calibrated weights, its linked collectives' kernels taking only their
    time moving data (the rest is the wait for the last rank, the floor)."""
    out = []
    for lw in linked:
        w = lw.graph.weight.copy()
        w[lw.self_edges()] = lw.data
        out.append(w)
    return out
