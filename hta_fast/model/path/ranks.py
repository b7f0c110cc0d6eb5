"""The critical path of each step across its ranks, with the measured durations: the ranks of a
step replayed together (hta_fast.model.replay.cross_rank, as hta_fast.model.replay.ranks does)
and one path followed over them (hta_fast.model.path.across_ranks).
hta_fast.model.path.critical_path (cross_rank=True) returns it. Chained (the default), each
rank's consecutive steps are one graph (hta_fast.model.graph.walk), the ranks' chains of the
same steps replayed together, and each step's path runs from its latest end over the ranks
back to its replayed start; window by window, back to the window's start."""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...frame.result import Result
from ...trace import Trace
from ...traceset import TraceSet
from ..comm.collective_links import match_collectives
from ..graph.chain import Chain, step_label
from ..graph.walk import walk_groups
from ..replay.cross_rank import (
    LinkedWindow,
    Together,
    link_windows,
    measured_weights,
    replay_together,
)
from .across_ranks import path_across_ranks
from .across_ranks_rows import breakdown_table, path_tables, summary_table


def step_paths_across(
    chains: Sequence[Chain],
    linked: Sequence[LinkedWindow],
    weights: Sequence[np.ndarray],
    together: Together,
) -> list[tuple[dict, pa.Table]]:
    """The summary row and breakdown rows of each step's path over this joint replay of
    chains (one per rank, the same steps): from the step's latest end over the ranks back to
    its start on the rank the path reaches."""
    times = together.times
    end_nodes = [c.end_nodes(t) for c, t in zip(chains, times)]
    starts = [c.step_starts(t) for c, t in zip(chains, times)]
    stops = [c.path_stops(t) for c, t in zip(chains, times)]
    replayed = [c.spans(t) for c, t in zip(chains, times)]
    measured = [c.spans(c.measured_times()) for c in chains]
    traces = [c.trace for c in chains]
    out = []
    for k, step in enumerate(chains[0].steps):
        path = path_across_ranks(
            linked,
            weights,
            together,
            [int(e[k]) for e in end_nodes],
            [int(s[k]) for s in starts],
            [int(s[k]) for s in stops],
        )
        out.append(
            path_tables(
                step,
                linked,
                traces,
                weights,
                [int(r[k]) for r in replayed],
                path,
                [int(m[k]) for m in measured],
            )
        )
    return out


def _no_link_note(step: Optional[int], linked: Sequence[LinkedWindow]) -> list[str]:
    if any(len(lw.comm) for lw in linked):
        return []
    return [
        f"{step_label(step)}: no collective is shared by two of the selected ranks: the path "
        "stays on the rank that ends last"
    ]


def critical_path_across_ranks(
    traces: Union[Trace, TraceSet], sel: select.Selection, chained: bool = True
) -> Result:
    """One row per step: the path's length, the rank it ends and begins on, its jumps and the
    shares; "breakdown": its edges in order, each on its rank. chained: over each rank's
    consecutive steps replayed as one chain (False: each step's windows alone)."""
    matched = match_collectives(traces)
    found: list[tuple[Optional[int], dict, pa.Table]] = []
    notes: list[str] = []
    for chains in walk_groups(traces, sel, chained):
        linked = link_windows([(c.rank, c.graph) for c in chains], matched)
        weights = measured_weights(linked)
        together = replay_together(linked, weights)
        for row, part in step_paths_across(chains, linked, weights, together):
            found.append((row["step"], row, part))
            notes += _no_link_note(row["step"], linked)
    found.sort(key=lambda f: (f[0] is not None, f[0] or 0))
    return Result(
        "critical_path",
        summary_table([r for _, r, _ in found]),
        tables={"breakdown": breakdown_table([p for _, _, p in found])},
        notes=notes,
        params={"selection": sel, "cross_rank": True, "chained": chained},
    )
