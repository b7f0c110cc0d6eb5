"""Replay: does the dependency graph, with each event's measured duration, reproduce the
measured timeline? Per window (profiler step) and rank:

    error_pct = |replayed - measured| / measured × 100

where measured is the latest end of the step's events minus the step's start and replayed is
its span in the replay; gpu_start_error_* are |replayed - measured| start times of the step's
GPU events (its own: carried-over GPU work launched before the step is in its graph as
predecessors, not counted here). Beside it, the ablations (hta_fast.model.replay.ablations),
each a predicted step time and its error.

The replay error is 0 by construction: the calibration gives each edge the weight that meets
the measured timeline (docs/model.md, "Weights"), so it shows the graph holds the trace, not
that it predicts. Predictions are checked against runs the model did not read: the
what-if against real pairs of runs (benchmarks/eval_pairs.py, docs/model.md).
"""

from __future__ import annotations

from typing import Optional, Union

import pyarrow as pa

from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.walk import walk
from .ablations import ABLATIONS
from .step_rows import GPU_EVENTS, chain_step_rows

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("measured", pa.int64(), metadata=NS),
        pa.field("replayed", pa.int64(), metadata=NS),
        pa.field("error_pct", pa.float64(), metadata=PCT),
        pa.field("gpu_events", pa.int64()),
        pa.field("gpu_start_error_max", pa.int64(), metadata=NS),
        pa.field("gpu_start_error_median", pa.float64(), metadata=NS),
    ]
    + [
        f
        for a in ABLATIONS
        for f in (
            pa.field(a, pa.int64(), metadata=NS),
            pa.field(a + "_error_pct", pa.float64(), metadata=PCT),
        )
    ]
)

BY_CONSTRUCTION = (
    "replay error is 0 by construction (measured durations on the measured order): it "
    "shows the graph holds the trace, it predicts nothing (predictions: the what-if, "
    "checked against real pairs of runs, docs/model.md)"
)


def replay_steps(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    chained: bool = True,
) -> Result:
    """One row per (rank, profiler step): measured and replayed step time, the error, the GPU
    start-time errors and the ablations. A rank without profiler steps is one row, step null.
    Side table "gpu_events": each GPU event's measured and replayed start (ns on the trace's
    clock) and start_error = replayed - measured. chained (default): each rank's consecutive
    selected steps are replayed as one graph (hta_fast.model.graph.walk), a step's replayed
    time being its span in that replay; False: each step's window alone."""
    sel = select.selection_of(selection, ranks, steps)
    notes = []
    per_event = []
    rows: list[dict] = []
    for chain in walk(traces, sel, chained):
        chain_rows, events = chain_step_rows(chain)
        rows += chain_rows
        per_event.append(events)
        if chain.graph.n_sync_edges == 0:
            notes.append(
                f"rank {chain.rank} {chain.label}: {chain.graph.waits.missing()}, so the "
                "graph has no GPU -> CPU or cross-stream edges"
            )
        notes += chain.wait_notes()
    rows.sort(key=lambda r: (r["rank"], r["step"] is not None, r["step"] or 0))
    notes.insert(0, BY_CONSTRUCTION)
    table = pa.table(
        {f.name: array_of([r[f.name] for r in rows], f.type) for f in SCHEMA}, schema=SCHEMA
    )
    events = pa.concat_tables(per_event) if per_event else GPU_EVENTS.empty_table()
    return Result(
        "replay", table, tables={"gpu_events": events}, notes=notes, params={"selection": sel}
    )
