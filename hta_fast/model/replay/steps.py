"""Replay: does the dependency graph, with each event's measured duration, reproduce the
measured timeline? Per window (profiler step) and rank:

    error_pct = |replayed - measured| / measured × 100

where measured is the latest end of the step's events minus the step's start and replayed is
the latest node time of the replay; gpu_start_error_* are |replayed - measured| start times of
the step's GPU events (its own: carried-over GPU work launched before the step is in its graph
as predecessors, not counted here). Beside it, the ablations (each a predicted step time and its error):
sum_kernels (GPU work durations added up), busiest_stream (the stream with the most GPU work,
alone, back to back), no_cross_stream (the graph without cross-stream edges) and gpu_only (the
GPU events with their stream order and cross-stream edges only: no CPU, no launches, no host
syncs).
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.dependency_graph import EDGE, GPU_WORK, DependencyGraph, skip_mask
from .chain import chain_step_rows
from ..graph.chains import each_chain
from ..graph.windows import each_window

ABLATIONS = ["sum_kernels", "busiest_stream", "no_cross_stream", "gpu_only"]

SCHEMA = pa.schema(
    [pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
     pa.field("measured", pa.int64(), metadata=NS), pa.field("replayed", pa.int64(), metadata=NS),
     pa.field("error_pct", pa.float64(), metadata=PCT),
     pa.field("gpu_events", pa.int64()),
     pa.field("gpu_start_error_max", pa.int64(), metadata=NS),
     pa.field("gpu_start_error_median", pa.float64(), metadata=NS)]
    + [f for a in ABLATIONS for f in (pa.field(a, pa.int64(), metadata=NS),
                                      pa.field(a + "_error_pct", pa.float64(), metadata=PCT))])

GPU_EVENTS = pa.schema([
    pa.field("rank", pa.int64()), pa.field("step", pa.int64()), pa.field("row", pa.int64()),
    pa.field("measured_start", pa.int64(), metadata=NS),
    pa.field("replayed_start", pa.int64(), metadata=NS),
    pa.field("start_error", pa.int64(), metadata=NS),
])

GPU_ONLY_SKIP = skip_mask("release", "cpu_self", "cpu_nest_down", "cpu_nest_up", "cpu_sibling",
                          "launch", "sync_wait", "sync_self", "cross_thread", "thread_join",
                          "join_tail")


def ablations(graph: DependencyGraph, trace: Trace) -> dict[str, int]:
    """Predicted step time (ns) of each ablation."""
    kind = trace.column("events", "kind")[graph.rows]
    gpu = np.isin(kind, GPU_WORK) & ~graph.carried  # the step's own GPU work
    dur = np.maximum(trace.column("events", "dur")[graph.rows], 0)
    out = {"sum_kernels": int(dur[gpu].sum())}
    if gpu.any():
        stream = trace.column("events", "stream")[graph.rows][gpu].astype(np.int64)
        _, inv = np.unique(stream, return_inverse=True)
        out["busiest_stream"] = int(np.bincount(inv.reshape(-1), weights=dur[gpu]).max())
    else:
        out["busiest_stream"] = 0
    out["no_cross_stream"] = int(graph.replay(skip=skip_mask("cross_stream")).max())
    # The step's own GPU work alone: nothing carried over holds it (a very negative weight
    # leaves an edge without effect, as what_if's dropped waits).
    w = graph.weight.copy()
    carried_node = np.append(graph.carried, False)  # the last entry: the window start
    w[carried_node[graph.core.src // 2]] = -(1 << 50)
    t = graph.replay(w, skip=GPU_ONLY_SKIP)
    gpu_ends = 2 * np.flatnonzero(gpu) + 1
    out["gpu_only"] = int(t[gpu_ends].max()) if len(gpu_ends) else 0
    return out


def _error(predicted: int, measured: int) -> Optional[float]:
    return 100.0 * abs(predicted - measured) / measured if measured > 0 else None


def replay_steps(traces: Union[Trace, TraceSet], *, ranks: Ranks = None, steps: Steps = None,
                 selection: Optional[select.Selection] = None, chained: bool = True) -> Result:
    """One row per (rank, profiler step): measured and replayed step time, the error, the GPU
    start-time errors and the ablations. A rank without profiler steps is one row, step null.
    Side table "gpu_events": each GPU event's measured and replayed start (ns on the trace's
    clock) and start_error = replayed - measured. chained (default): each rank's consecutive
    selected steps are replayed as one graph (hta_fast.model.graph.chains), a step's replayed time
    being its span in that replay; False: each step's window alone."""
    sel = select.selection_of(selection, ranks, steps)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    notes = []
    per_event = []
    rows: list[dict] = []
    if chained:
        for chain in each_chain(traces, sel):
            chain_rows, events = chain_step_rows(chain, GPU_ONLY_SKIP, GPU_EVENTS)
            for row in chain_rows:
                row["error_pct"] = _error(row["replayed"], row["measured"])
                for name in ABLATIONS:
                    row[name + "_error_pct"] = _error(row[name], row["measured"])
            rows += chain_rows
            per_event.append(events)
            if chain.graph.n_sync_edges == 0:
                notes.append(f"rank {chain.rank} steps {chain.step[0]}-{chain.step[-1]}: no "
                             "sync or stream-wait events, so the graph has no GPU -> CPU or "
                             "cross-stream edges")
    for w in each_window(traces, sel, whole_traces_only=chained):
        g = w.graph
        times = g.replay()
        measured, replayed = g.measured_end, int(times.max())
        kind = w.trace.column("events", "kind")[g.rows]
        gpu = np.flatnonzero(np.isin(kind, GPU_WORK) & ~g.carried)
        replayed_start = times[2 * gpu] + g.window_start
        measured_start = g.core.measured[2 * gpu]
        start_err = np.abs(replayed_start - measured_start)
        per_event.append(pa.table({
            "rank": pa.array(np.full(len(gpu), w.rank), pa.int64()),
            "step": pa.array([w.step] * len(gpu), pa.int64()),
            "row": pa.array(g.rows[gpu], pa.int64()),
            "measured_start": pa.array(measured_start, pa.int64()),
            "replayed_start": pa.array(replayed_start, pa.int64()),
            "start_error": pa.array(replayed_start - measured_start, pa.int64()),
        }, schema=GPU_EVENTS))
        row = {"rank": w.rank, "step": w.step, "measured": measured, "replayed": replayed,
               "error_pct": _error(replayed, measured), "gpu_events": len(gpu),
               "gpu_start_error_max": int(start_err.max()) if len(gpu) else None,
               "gpu_start_error_median": float(np.median(start_err)) if len(gpu) else None}
        for name, value in ablations(g, w.trace).items():
            row[name], row[name + "_error_pct"] = value, _error(value, measured)
        rows.append(row)
        if g.n_sync_edges == 0:
            notes.append(f"rank {w.rank} step {w.step}: no sync or stream-wait events, so the "
                         "graph has no GPU -> CPU or cross-stream edges")
    for row in sorted(rows, key=lambda r: (r["rank"], r["step"] is not None, r["step"] or 0)):
        for k, v in row.items():
            out[k].append(v)
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    events = pa.concat_tables(per_event) if per_event else GPU_EVENTS.empty_table()
    return Result("replay", table, tables={"gpu_events": events}, notes=notes,
                  params={"selection": sel})
