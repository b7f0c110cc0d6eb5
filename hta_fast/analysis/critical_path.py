"""Critical path: the chain of dependencies that decides how long each profiler step takes.

Per (rank, step) the dependency graph (hta_fast.model.dependency_graph; rules in docs/model.md)
is replayed and its longest path from the step's start to its latest event is walked back.
Each edge on it is one breakdown row: its duration (the edge's weight), type, the event it is
charged to (name, cat, pid, tid, stream) and what it is bound by:

    cpu_bound                    CPU event time, gaps between a thread's calls, host wake-up
                                 after a sync (data_loading: events whose name holds DataLoader)
    gpu_compute_bound            kernels, copies and sets that are not communication
    gpu_communication_bound      communication kernels
    gpu_kernel_launch_overhead   launch call start -> its GPU event start
    gpu_kernel_kernel_overhead   gaps between GPU events on a stream or across a stream wait

The summary holds each category's share of the path length in percent.
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ..model.dependency_graph import EDGE, EDGE_TYPES
from ..model.windows import each_window
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from . import select
from .fields import NS, PCT
from .result import Result
from .select import Ranks, Steps

BOUND_BY = ["cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
            "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead", "data_loading"]

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

# The end of an edge whose event the edge's time is charged to (0: source, 1: target).
_CHARGED_END = {"release": 1, "cpu_self": 0, "cpu_nest_down": 0, "cpu_nest_up": 1,
                "cpu_sibling": 1, "gpu_self": 0, "launch": 0, "kernel_kernel": 1,
                "cross_stream": 1, "sync_wait": 1, "sync_self": 0}
_BOUND = {"launch": "gpu_kernel_launch_overhead", "kernel_kernel": "gpu_kernel_kernel_overhead",
          "cross_stream": "gpu_kernel_kernel_overhead"}


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
        src, dst, types = g.core.src[path], g.core.dst[path], g.edge_type[path]
        weight = g.weight[path]
        charged_node = np.where(np.isin(types, [EDGE[t] for t, e in _CHARGED_END.items() if e == 0]),
                                src, dst)
        event = g.rows[np.minimum(charged_node // 2, len(g.rows) - 1)]
        strings = trace.strings
        name_id = trace.column("events", "name")[event]
        names = np.array([strings[int(i)].as_py() if i >= 0 else "" for i in name_id], object)
        cat_id = trace.column("events", "cat")[event]
        cats = [strings[int(i)].as_py() if i >= 0 else "" for i in cat_id]
        kclass = trace.column("events", "kernel_class")[event]
        type_names = [EDGE_TYPES[t] for t in types]
        bound = []
        for t, k, nm in zip(type_names, kclass, names):
            if t == "gpu_self":
                bound.append("gpu_communication_bound" if k == KernelClass.COMM else "gpu_compute_bound")
            elif t in _BOUND:
                bound.append(_BOUND[t])
            else:
                bound.append("data_loading" if "DataLoader" in nm else "cpu_bound")
        length = int(weight.sum())
        summary["rank"].append(w.rank)
        summary["step"].append(w.step)
        summary["critical_path_length"].append(length)
        summary["measured_step"].append(g.measured_end)
        bound_arr = np.array(bound, object)
        for b in BOUND_BY:
            share = weight[bound_arr == b].sum() if len(bound_arr) else 0
            summary[b].append(100.0 * share / length if length else None)
        stream = trace.column("events", "stream")[event].astype(np.int64)
        gpu = np.isin(type_names, ["gpu_self", "kernel_kernel", "cross_stream"])
        parts.append(pa.table({
            "rank": pa.array(np.full(len(path), w.rank), pa.int64()),
            "step": pa.array([w.step] * len(path), pa.int64()),
            "duration": pa.array(weight, pa.int64()), "type": pa.array(type_names, pa.string()),
            "name": pa.array(names.tolist(), pa.string()), "cat": pa.array(cats, pa.string()),
            "pid": pa.array(trace.column("events", "pid")[event], pa.int64()),
            "tid": pa.array(trace.column("events", "tid")[event], pa.int64()),
            "stream": pa.array(np.where(gpu, stream, 0), pa.int64(), mask=~gpu),
            "bound_by": pa.array(bound, pa.string()),
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
