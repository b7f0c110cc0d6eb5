"""Critical path: the chain of dependencies that decides how long each profiler step takes.

Per (rank, step) the dependency graph (hta_fast.model.dependency_graph; rules in docs/model.md)
is replayed and its longest path from the step's start to its latest event is walked back.
Each edge on it is one breakdown row: its duration (the edge's weight), type, the event it is
charged to (name, cat, pid, tid, stream) and what it is bound by (hta_fast.model.path_bounds).
The summary holds each category's share of the path length in percent.

With cross_rank=True the ranks of each step are replayed together (a collective ends on no
rank before the last rank has reached it, hta_fast.model.cross_rank) and one path per step is
followed across them (hta_fast.model.cross_rank_path): the summary is per step, the breakdown
rows carry the rank each one is on, and a jump from a held collective to the rank that
arrived last is a row of type cross_rank.
"""
from __future__ import annotations

from typing import Optional, Union

import pyarrow as pa

from ..model.path_bounds import BOUND_BY, shares
from ..model.path_rows import BREAKDOWN, breakdown_rows
from ..model.windows import each_window
from ..trace import Trace
from ..traceset import TraceSet
from . import select
from .fields import NS, PCT
from .result import Result
from .select import Ranks, Steps

SUMMARY = pa.schema(
    [pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
     pa.field("critical_path_length", pa.int64(), metadata=NS),
     pa.field("measured_step", pa.int64(), metadata=NS)]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in BOUND_BY])


def critical_path(traces: Union[Trace, TraceSet], *, ranks: Ranks = None, steps: Steps = None,
                  selection: Optional[select.Selection] = None,
                  cross_rank: bool = False) -> Result:
    """Summary per (rank, step) (the main table) and the path's edges ("breakdown").
    cross_rank: one path per step across the selected ranks replayed together (summary per
    step, with end_rank, start_rank, jumps and the cross_rank share)."""
    sel = select.selection_of(selection, ranks, steps)
    if cross_rank:
        from ..model.critical_path_ranks import critical_path_across_ranks
        return critical_path_across_ranks(traces, sel)
    summary: dict[str, list] = {f.name: [] for f in SUMMARY}
    parts = []
    notes = []
    for w in each_window(traces, sel):
        g, trace = w.graph, w.trace
        path = g.critical_path()
        rows, bound = breakdown_rows(w.rank, w.step, g, trace, path, g.weight)
        weight = g.weight[path]
        summary["rank"].append(w.rank)
        summary["step"].append(w.step)
        summary["critical_path_length"].append(int(weight.sum()))
        summary["measured_step"].append(g.measured_end)
        for b, v in shares(bound, weight).items():
            summary[b].append(v)
        parts.append(rows)
        if g.n_sync_edges == 0:
            notes.append(f"rank {w.rank} step {w.step}: the trace has no sync or stream-wait "
                         "events, so the host never waits for the GPU in this graph; the shares "
                         "say where the step's time went only as far as launches and stream "
                         "order tell, not that the step is CPU bound")
    table = pa.table({f.name: pa.array(summary[f.name], f.type) for f in SUMMARY}, schema=SUMMARY)
    breakdown = pa.concat_tables(parts) if parts else BREAKDOWN.empty_table()
    return Result("critical_path", table, tables={"breakdown": breakdown}, notes=notes,
                  params={"selection": sel})
