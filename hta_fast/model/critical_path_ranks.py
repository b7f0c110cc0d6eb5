"""The critical path of each step across its ranks, with the measured durations: the ranks of a
step replayed together (hta_fast.model.cross_rank, as hta_fast.model.replay_ranks does) and one
path followed over them (hta_fast.model.cross_rank_path). hta_fast.analysis.critical_path
(cross_rank=True) returns it."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..analysis import select
from ..analysis.result import Result
from ..trace import Trace
from ..traceset import TraceSet
from .collective_links import match_collectives
from .cross_rank import LinkedWindow, Together, link_windows, replay_together
from .cross_rank_path import path_across_ranks
from .cross_rank_path_rows import breakdown_table, path_tables, summary_table
from .windows import step_groups


def measured_weights(linked: Sequence[LinkedWindow]) -> list[np.ndarray]:
    """Each window's calibrated weights, its linked collectives' kernels taking only their
    time moving data (the rest is the wait for the last rank, the floor)."""
    out = []
    for lw in linked:
        w = lw.graph.weight.copy()
        w[lw.self_edges()] = lw.data
        out.append(w)
    return out


def step_path(step: Optional[int], linked: Sequence[LinkedWindow], traces: Sequence[Trace],
              weights: Sequence[np.ndarray], together: Together
              ) -> tuple[dict, pa.Table]:
    """The summary row and breakdown rows of one step's path over this joint replay."""
    path = path_across_ranks(linked, weights, together)
    return path_tables(step, linked, traces, weights, [int(t.max()) for t in together.times],
                       path)


def critical_path_across_ranks(traces: Union[Trace, TraceSet], sel: select.Selection) -> Result:
    """One row per step: the path's length, the rank it ends and begins on, its jumps and the
    shares; "breakdown": its edges in order, each on its rank."""
    matched = match_collectives(traces)
    rows, parts = [], []
    notes: list[str] = []
    for group in step_groups(traces, sel):
        linked = link_windows([(w.rank, w.graph) for w in group], matched)
        weights = measured_weights(linked)
        together = replay_together(linked, weights)
        row, part = step_path(group[0].step, linked, [w.trace for w in group], weights, together)
        rows.append(row)
        parts.append(part)
        if not any(len(lw.comm) for lw in linked):
            notes.append(f"step {group[0].step}: no collective is shared by two of the selected "
                         "ranks: the path stays on the rank that ends last")
    return Result("critical_path", summary_table(rows),
                  tables={"breakdown": breakdown_table(parts)}, notes=notes,
                  params={"selection": sel, "cross_rank": True})
