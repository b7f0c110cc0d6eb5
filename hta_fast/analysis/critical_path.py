"""Critical path: the chain of dependencies that decides how long each profiler step takes.

Per (rank, step) the dependency graph (hta_fast.model.dependency_graph; rules in docs/model.md)
is replayed and its longest path from the step's start to its latest event is walked back.
Each edge on it is one breakdown row: its duration (the edge's weight), type, the event it is
charged to (name, cat, pid, tid, stream) and what it is bound by (hta_fast.model.path_bounds).
The summary holds each category's share of the path length in percent.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ..model.dependency_graph import EDGE_TYPES
from ..model.path_bounds import BOUND_BY, bound_by, charged_events, names_of, shares
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

BREAKDOWN = pa.schema([
    pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
    pa.field("duration", pa.int64(), metadata=NS), pa.field("type", pa.string()),
    pa.field("name", pa.string()), pa.field("cat", pa.string()), pa.field("pid", pa.int64()),
    pa.field("tid", pa.int64()), pa.field("stream", pa.int64()), pa.field("bound_by", pa.string()),
])


def critical_path(traces: Union[Trace, TraceSet], *, ranks: Ranks = None, steps: Steps = None,
                  selection: Optional[select.Selection] = None) -> Result:
    """Summary per (rank, step) (the main table) and the path's edges ("breakdown")."""
    sel = select.selection_of(selection, ranks, steps)
    summary: dict[str, list] = {f.name: [] for f in SUMMARY}
    parts = []
    notes = []
    for w in each_window(traces, sel):
        g, trace = w.graph, w.trace
        path = g.critical_path()
        types = g.edge_type[path]
        weight = g.weight[path]
        event = charged_events(g, path)
        names, cats = names_of(trace, "name", event), names_of(trace, "cat", event)
        type_names = np.array(EDGE_TYPES, object)[types]
        bound = bound_by(g, trace, path)
        length = int(weight.sum())
        summary["rank"].append(w.rank)
        summary["step"].append(w.step)
        summary["critical_path_length"].append(length)
        summary["measured_step"].append(g.measured_end)
        for b, v in shares(bound, weight).items():
            summary[b].append(v)
        stream = trace.column("events", "stream")[event].astype(np.int64)
        gpu = np.isin(type_names, ["gpu_self", "kernel_kernel", "cross_stream"])
        parts.append(pa.table({
            "rank": pa.array(np.full(len(path), w.rank), pa.int64()),
            "step": pa.array([w.step] * len(path), pa.int64()),
            "duration": pa.array(weight, pa.int64()), "type": pa.array(type_names.tolist(), pa.string()),
            "name": names, "cat": cats,
            "pid": pa.array(trace.column("events", "pid")[event], pa.int64()),
            "tid": pa.array(trace.column("events", "tid")[event], pa.int64()),
            "stream": pa.array(np.where(gpu, stream, 0), pa.int64(), mask=~gpu),
            "bound_by": pa.array(bound.tolist(), pa.string()),
        }, schema=BREAKDOWN))
        if g.n_sync_edges == 0:
            notes.append(f"rank {w.rank} step {w.step}: the trace has no sync or stream-wait "
                         "events, so the host never waits for the GPU in this graph; the shares "
                         "say where the step's time went only as far as launches and stream "
                         "order tell, not that the step is CPU bound")
    table = pa.table({f.name: pa.array(summary[f.name], f.type) for f in SUMMARY}, schema=SUMMARY)
    breakdown = pa.concat_tables(parts) if parts else BREAKDOWN.empty_table()
    return Result("critical_path", table, tables={"breakdown": breakdown}, notes=notes,
                  params={"selection": sel})
