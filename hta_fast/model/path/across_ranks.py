"""The critical path of a step across ranks: the chain that decides when the last rank of a
joint replay (hta_fast.model.replay.cross_rank) ends, followed from rank to rank.

Each rank's longest path is walked back in the core (Graph::critical_path) from the latest
end of the step over the ranks (on the traces' clock). A collective end is held by its floor,
last_start + after_last_r, when no edge into it is tight: there the walk jumps to the start
of that collective on the rank that reached it last (one Jump, its wait after_last_r: from the
last arrival to this rank's end) and goes on back on that rank's graph from there, until it
reaches a step's start. Python loops over the jumps only (at most one per collective of the
step); the walk over events is the core's.

The pieces' weights add up to the path's length: the step's end on the last rank to end minus
the start of the window where the path begins.

Over chained steps (hta_fast.model.graph.walk: each rank's consecutive steps one graph, the
ranks' chains replayed together) the path of step k starts at the latest end of step k over
the ranks (each chain's end node of the step) and stops at the replayed start of step k on
the rank it has reached (Graph::critical_paths with stop_at), the edge that crosses that
start counting only for the part inside the step; its length is the latest end minus that
start. Window by window (chains of one step) the walk runs back to the window's start node.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence, Union

import numpy as np

from ..replay.cross_rank import LinkedWindow, Together


@dataclasses.dataclass
class Stretch:
    """Edges of one rank's graph on the path, in order (window: index into the step's
    windows), and the time each counts for on the path: its weight, but for an edge that
    crosses a chained step's start, the part after the start."""

    window: int
    edges: np.ndarray
    durations: np.ndarray


@dataclasses.dataclass
class Jump:
    """A collective end on window `held` (its collective index `collective` into the
    LinkedWindow's comm) set by the start of the same collective on window `last`, the rank
    that arrived last; wait: ns from that arrival to the held end."""

    held: int
    collective: int
    last: int
    wait: int


@dataclasses.dataclass
class PathAcrossRanks:
    pieces: list[Union[Stretch, Jump]]  # in time order
    end_window: int  # the window whose end is the step's end
    start_window: int  # the window whose start the path begins at
    length: int  # ns


def path_across_ranks(
    windows: Sequence[LinkedWindow],
    weights: Sequence[np.ndarray],
    together: Together,
    end_nodes: Sequence[int],
    starts: Sequence[int],
    stops: Sequence[int],
) -> PathAcrossRanks:
    """The path of one step over the joint replay `together` of these windows (one chain per
    rank, hta_fast.model.graph.chain) with these weights. Per window: the node where the step
    ends, the step's replayed start and where a walk back stops (ns since the window's
    start; Chain.end_nodes, step_starts and path_stops)."""
    times = together.times
    origin = [w.graph.window_start for w in windows]
    ends_at = [int(v) for v in end_nodes]
    floor = [int(v) for v in starts]
    ends = [s + int(t[v]) for s, t, v in zip(origin, times, ends_at)]
    window_of_rank = {w.rank: i for i, w in enumerate(windows)}
    end_index = [dict(zip((2 * w.comm + 1).tolist(), range(len(w.comm)))) for w in windows]
    i = int(np.argmax(ends))  # ties: the first window
    end_window, node = i, ends_at[i]
    pieces: list[Union[Stretch, Jump]] = []
    length = 0
    seen: set[tuple[int, int]] = set()
    while True:
        w, t = windows[i], times[i]
        edges, _ = w.graph.core.critical_paths(
            weights[i], t, 0, np.array([node], np.int64), np.array([int(stops[i])], np.int64)
        )
        durations = weights[i][edges].astype(np.int64)
        first = int(w.graph.core.src[edges[0]]) if len(edges) else node
        if len(edges) and t[first] < floor[i]:  # the edge that crosses the step's start
            durations[0] = t[w.graph.core.dst[edges[0]]] - floor[i]
        pieces.append(Stretch(i, edges, durations))
        length += int(durations.sum())
        k = end_index[i].get(first)
        if k is None or t[first] <= floor[i]:  # the step's start: nothing held this node
            break
        code = int(w.match[k])
        last = window_of_rank[int(together.last_rank[code])]
        if (i, k) in seen:  # a jump back onto a collective already left: a cycle of waits
            raise RuntimeError(
                f"the critical path across ranks returned to rank {w.rank}'s "
                f"collective {code}: the ranks' collectives wait in a cycle"
            )
        seen.add((i, k))
        lw = windows[last]
        node = int(2 * lw.comm[int(np.flatnonzero(lw.match == code)[0])])
        # An arrival before the landing rank's step start (a collective carried over from the
        # step before) counts from that start: the path begins there.
        arrival = max(int(times[last][node]), floor[last])
        wait = origin[i] + int(t[first]) - (origin[last] + arrival)
        pieces.append(Jump(i, k, last, wait))
        length += wait
        i = last
    pieces.reverse()
    return PathAcrossRanks(pieces, end_window, i, length)
