"""The critical path of a step across ranks: the chain that decides when the last rank of a
joint replay (hta_fast.model.cross_rank) ends, followed from rank to rank.

Each rank's longest path is walked back in the core (Graph::critical_path) from the latest
end of the step over the ranks (on the traces' clock). A collective end is held by its floor,
last_start + after_last_r, when no edge into it is tight: there the walk jumps to the start
of that collective on the rank that reached it last (one Jump, its wait after_last_r: from the
last arrival to this rank's end) and goes on back on that rank's graph from there, until it
reaches a step's start. Python loops over the jumps only (at most one per collective of the
step); the walk over events is the core's.

The pieces' weights add up to the path's length: the step's end on the last rank to end minus
the start of the window where the path begins.
"""
from __future__ import annotations

import dataclasses
from typing import Sequence, Union

import numpy as np

from .cross_rank import LinkedWindow, Together


@dataclasses.dataclass
class Stretch:
    """Edges of one rank's graph on the path, in order (window: index into the step's
    windows)."""
    window: int
    edges: np.ndarray


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


def path_across_ranks(windows: Sequence[LinkedWindow], weights: Sequence[np.ndarray],
                      together: Together) -> PathAcrossRanks:
    """The path over the joint replay `together` of these windows with these weights."""
    times = together.times
    starts = [w.graph.window_start for w in windows]
    ends = [s + int(t.max()) for s, t in zip(starts, times)]
    window_of_rank = {w.rank: i for i, w in enumerate(windows)}
    end_index = [dict(zip((2 * w.comm + 1).tolist(), range(len(w.comm)))) for w in windows]
    i = int(np.argmax(ends))  # ties: the first window
    end_window, node = i, -1
    pieces: list[Union[Stretch, Jump]] = []
    length = 0
    seen: set[tuple[int, int]] = set()
    while True:
        w, t = windows[i], times[i]
        edges = w.graph.core.critical_path(weights[i], t, 0, node)
        pieces.append(Stretch(i, edges))
        length += int(weights[i][edges].sum())
        first = int(w.graph.core.src[edges[0]]) if len(edges) else \
            (node if node >= 0 else int(np.argmax(t)))
        k = end_index[i].get(first)
        if k is None or t[first] <= 0:  # the step's start: nothing held this node
            break
        code = int(w.match[k])
        last = window_of_rank[int(together.last_rank[code])]
        if (i, k) in seen:  # a jump back onto a collective already left: a cycle of waits
            raise RuntimeError(f"the critical path across ranks returned to rank {w.rank}'s "
                               f"collective {code}: the ranks' collectives wait in a cycle")
        seen.add((i, k))
        lw = windows[last]
        node = int(2 * lw.comm[int(np.flatnonzero(lw.match == code)[0])])
        wait = starts[i] + int(t[first]) - (starts[last] + int(times[last][node]))
        pieces.append(Jump(i, k, last, wait))
        length += wait
        i = last
    pieces.reverse()
    return PathAcrossRanks(pieces, end_window, i, length)
