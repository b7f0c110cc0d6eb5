"""Critical path: the chain of dependencies that decides how long each profiler step takes.

Per (rank, step) the dependency graph (hta_fast.model.graph.dependency_graph; rules in
docs/model.md) is replayed and its longest path from the step's start to its latest event is
walked back.
Each edge on it is one breakdown row: its duration (the edge's weight), type, the event it is
charged to (name, cat, pid, tid, stream) and what it is bound by (hta_fast.model.path.bounds).
The summary holds each category's share of the path length in percent.

Chained (the default), a rank's consecutive selected steps are one graph replayed once
(hta_fast.model.graph.walk), as replay_steps and what_if replay them: each step's path runs back
from its latest event's end to its replayed start (where the step before it ended), the edge
that crosses the start counting only for the part inside the step, so the path's length is
the replayed step. chained=False: each step's window alone, from the window's start, its
carried-over work at its measured time.

With cross_rank=True the ranks of each step are replayed together (a collective ends on no
rank before the last rank has reached it, hta_fast.model.replay.cross_rank) and one path per step is
followed across them (hta_fast.model.path.across_ranks): the summary is per step, the breakdown
rows carry the rank each one is on, and a jump from a held collective to the rank that
arrived last is a row of type cross_rank.
"""

from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.chain import step_label
from ..graph.dependency_graph import DependencyGraph
from ..graph.walk import walk
from .bounds import BOUND_BY, bound_codes, charged_events, shares
from .ranks import critical_path_across_ranks
from .rows import BREAKDOWN, ON_PATH, breakdown_rows, on_path_rows
from .step_paths import step_paths

SUMMARY = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("critical_path_length", pa.int64(), metadata=NS),
        pa.field("measured_step", pa.int64(), metadata=NS),
    ]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in BOUND_BY]
)


def _no_sync_note(rank: int, step: Optional[int], graph: DependencyGraph) -> list[str]:
    if graph.n_sync_edges:
        return []
    return [
        f"rank {rank} {step_label(step)}: {graph.waits.missing()}, so the host never waits for the "
        "GPU in this graph; the shares say where the step's time went only as far as "
        "launches and stream order tell, not that the step is CPU bound"
    ]


def _unrecorded_note(rank: int, step: Optional[int], summary: dict[str, Any]) -> list[str]:
    share = summary.get("gpu_unrecorded_work") or 0.0
    if share <= 0:
        return []
    return [
        f"rank {rank} {step_label(step)}: {share:.1f} % of the path is the launch into the "
        "trace's first recorded GPU event waiting behind GPU work the trace does not hold (it "
        "opens while earlier work still ran): gpu_unrecorded_work, not launch overhead; no "
        "edit of this trace removes it"
    ]


def critical_path(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    cross_rank: bool = False,
    chained: bool = True,
    breakdown: bool = True,
) -> Result:
    """Summary per (rank, step) (the main table) and the path's edges ("breakdown").
    cross_rank: one path per step across the selected ranks replayed together (summary per
    step, with end_rank, start_rank, jumps and the cross_rank share). chained (default): each
    rank's consecutive selected steps replayed as one chain, each step's path from its end
    back to its replayed start; False: each step's window alone. breakdown=False (per-rank
    paths): instead of a row per edge (millions on a long trace), "on_path": the time each
    event name holds on a rank's paths, per category (rank, name, bound_by, duration, edges)."""
    sel = select.selection_of(selection, ranks, steps)
    if cross_rank:
        return critical_path_across_ranks(traces, sel, chained)
    found: list[tuple[int, Optional[int], dict[str, Any], pa.Table]] = []
    # breakdown=False: per rank, its trace and each step path's (charged events, bounds, weights)
    charged: dict[int, tuple[Trace, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]] = {}
    notes = []
    for chain in walk(traces, sel, chained):
        g = chain.graph
        measured = chain.spans(chain.measured_times())
        for k, (path, weight) in enumerate(step_paths(chain, g.weight, g.replay())):
            step = chain.steps[k]
            if breakdown:
                rows, bound = breakdown_rows(
                    chain.rank, step, g, chain.trace, path, g.weight, weight
                )
            else:
                rows, bound = BREAKDOWN.empty_table(), bound_codes(g, chain.trace, path)
                paths = charged.setdefault(chain.rank, (chain.trace, []))[1]
                paths.append((charged_events(g, chain.trace, path), bound, weight))
            found.append(
                (
                    chain.rank,
                    step,
                    _summary(chain.rank, step, weight, bound, int(measured[k])),
                    rows,
                )
            )
            notes += _no_sync_note(chain.rank, step, g)
            notes += _unrecorded_note(chain.rank, step, found[-1][2])
        notes += chain.wait_notes()
    found.sort(key=lambda f: (f[0], f[1] is not None, f[1] or 0))
    summary = [f[2] for f in found]
    table = pa.table(
        {f.name: array_of([r[f.name] for r in summary], f.type) for f in SUMMARY}, schema=SUMMARY
    )
    if breakdown:
        side = {
            "breakdown": pa.concat_tables([f[3] for f in found])
            if found
            else BREAKDOWN.empty_table()
        }
    else:
        held = [
            on_path_rows(rank, trace, *(np.concatenate(c) for c in zip(*paths)))
            for rank, (trace, paths) in sorted(charged.items())
            if paths
        ]
        side = {"on_path": pa.concat_tables(held) if held else ON_PATH.empty_table()}
    return Result(
        "critical_path",
        table,
        tables=side,
        notes=notes,
        params={"selection": sel, "chained": chained},
    )


def _summary(
    rank: int, step: Optional[int], weight: np.ndarray, bound: np.ndarray, measured: int
) -> dict[str, Any]:
    """One SUMMARY row: the path's length (weight: the time each edge counts for) and
    shares."""
    row: dict[str, Any] = {
        "rank": rank,
        "step": step,
        "critical_path_length": int(weight.sum()),
        "measured_step": measured,
    }
    row.update(shares(bound, weight))
    return row
