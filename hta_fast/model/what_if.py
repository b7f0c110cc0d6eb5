"""What-if: edit the dependency graph's weights, replay, and compare with the measured step.

Edits (all optional, applied together):

    kernel_class   {"COMM": 0.5, "COMP": 0.8}: scale GPU event durations by kernel class
                   (COMP, COMM, MEM)
    name           {regex: factor}: scale GPU events whose name matches (re.search)
    category       {cat: factor}: scale GPU events by their trace category ("kernel",
                   "gpu_memcpy", "gpu_memset")
    cpu            scale CPU time: CPU event durations, gaps between a thread's calls and the
                   non-waiting part of sync calls
    zero_launch_overhead  launch edges cost nothing and launch calls take no CPU time (what
                   CUDA graphs approach)
    drop_comm_waits  nothing waits for communication: cross-stream and host-sync edges from
                   communication kernels are dropped (the perfect-overlap bound)

Factors on one event multiply. The replay keeps each lane's order and each wait's measured or
typical cost (docs/model.md, "Weights"), so a shorter kernel lets the work queued behind it,
and the host waiting for it, move up.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Union

import numpy as np
import pyarrow as pa

from ..analysis import select
from ..analysis.fields import NS, PCT
from ..analysis.result import Result
from ..analysis.select import Ranks, Steps
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from .dependency_graph import EDGE, DependencyGraph
from .path_bounds import BOUND_BY, bound_by, shares
from .windows import each_window

DROPPED = -(1 << 50)  # a weight that no path through it can win with

CPU_EDGES = [EDGE[t] for t in ("cpu_self", "cpu_nest_down", "cpu_nest_up", "cpu_sibling", "sync_self",
                                "join_tail")]

SCHEMA = pa.schema(
    [pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
     pa.field("measured", pa.int64(), metadata=NS), pa.field("replayed", pa.int64(), metadata=NS),
     pa.field("predicted", pa.int64(), metadata=NS),
     pa.field("change_pct", pa.float64(), metadata=PCT),
     pa.field("bound_before", pa.string()), pa.field("bound_after", pa.string())]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in BOUND_BY])


def _names(trace: Trace, ids: np.ndarray) -> list[str]:
    strings = trace.strings
    return [strings[int(i)].as_py() if i >= 0 else "" for i in ids]


def _match_factor(trace: Trace, ids: np.ndarray, table: Mapping[str, float], regex: bool) -> np.ndarray:
    """Per row, the product of the factors whose key matches its string (name or cat)."""
    out = np.ones(len(ids))
    if not table:
        return out
    uniq, inv = np.unique(ids, return_inverse=True)
    names = _names(trace, uniq)
    per = np.ones(len(uniq))
    for key, f in table.items():
        if regex:
            try:
                pattern = re.compile(key)
            except re.error as e:
                raise ValueError(f"bad name pattern {key!r}: {e}") from None
            hit = [bool(pattern.search(n)) for n in names]
        else:
            hit = [n == key for n in names]
        per[np.array(hit, bool)] *= f
    return per[inv.reshape(-1)]


def edited_weights(graph: DependencyGraph, trace: Trace, *,
                   kernel_class: Optional[Mapping[str, float]] = None,
                   name: Optional[Mapping[str, float]] = None,
                   category: Optional[Mapping[str, float]] = None, cpu: float = 1.0,
                   zero_launch_overhead: bool = False, drop_comm_waits: bool = False) -> np.ndarray:
    """The graph's calibrated weights with the edits applied (see the module doc)."""
    factors = [*(kernel_class or {}).values(), *(name or {}).values(), *(category or {}).values(), cpu]
    if any(not f >= 0 for f in factors):
        raise ValueError(f"what-if factors must be numbers >= 0, got {factors}")
    w = graph.weight.astype(np.float64)
    types = graph.edge_type
    src_row = graph.rows[np.minimum(graph.core.src // 2, len(graph.rows) - 1)]
    gpu_self = np.flatnonzero(types == EDGE["gpu_self"])
    rows = src_row[gpu_self]
    factor = np.ones(len(gpu_self))
    kclass = trace.column("events", "kernel_class")[rows]
    for cls, f in (kernel_class or {}).items():
        try:
            factor[kclass == KernelClass[cls]] *= f
        except KeyError:
            raise ValueError(f"unknown kernel class {cls!r}: one of "
                             f"{[k.name for k in KernelClass if k.name not in ('NONE', 'SYNC')]}") from None
    factor *= _match_factor(trace, trace.column("events", "name")[rows], name or {}, regex=True)
    factor *= _match_factor(trace, trace.column("events", "cat")[rows], category or {}, regex=False)
    w[gpu_self] *= factor
    if cpu != 1.0:
        w[np.isin(types, CPU_EDGES)] *= cpu
    if zero_launch_overhead:
        w[types == EDGE["launch"]] = 0
        # The calls that launched GPU work: their own CPU time goes too.
        is_launch = np.zeros(len(graph.rows) + 1, bool)
        is_launch[graph.core.src[types == EDGE["launch"]] // 2] = True
        w[(types == EDGE["cpu_self"]) & is_launch[graph.core.src // 2]] = 0
    out = np.rint(w).astype(np.int64)
    if drop_comm_waits:
        comm_src = trace.column("events", "kernel_class")[src_row] == KernelClass.COMM
        waits = np.isin(types, [EDGE["cross_stream"], EDGE["sync_wait"]]) & comm_src
        out[waits] = DROPPED
    return out


def _top(bounds: np.ndarray, weight: np.ndarray) -> Optional[str]:
    s = {k: v for k, v in shares(bounds, weight).items() if v is not None}
    return max(s, key=lambda k: s[k]) if s else None


def what_if(traces: Union[Trace, TraceSet], *, kernel_class: Optional[Mapping[str, float]] = None,
            name: Optional[Mapping[str, float]] = None,
            category: Optional[Mapping[str, float]] = None, cpu: float = 1.0,
            zero_launch_overhead: bool = False, drop_comm_waits: bool = False,
            ranks: Ranks = None, steps: Steps = None,
            selection: Optional[select.Selection] = None) -> Result:
    """Per (rank, step): measured, replayed (unedited) and predicted (edited) step time,
    change_pct = (predicted - measured) / measured × 100, the category that bounds most of the
    critical path before and after, and the new path's shares."""
    edits: dict[str, Any] = dict(kernel_class=kernel_class, name=name, category=category, cpu=cpu,
                                 zero_launch_overhead=zero_launch_overhead,
                                 drop_comm_waits=drop_comm_waits)
    sel = select.selection_of(selection, ranks, steps)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    notes = []
    for win in each_window(traces, sel):
        g = win.graph
        before = g.critical_path()
        w = edited_weights(g, win.trace, **edits)
        times = g.replay(w)
        after = g.core.critical_path(w, times, 0)
        measured, predicted = g.measured_end, int(times.max())
        b_after = bound_by(g, win.trace, after)
        row = {"rank": win.rank, "step": win.step, "measured": measured,
               "replayed": int(g.replay().max()), "predicted": predicted,
               "change_pct": 100.0 * (predicted - measured) / measured if measured else None,
               "bound_before": _top(bound_by(g, win.trace, before), g.weight[before]),
               "bound_after": _top(b_after, w[after])}
        row.update(shares(b_after, w[after]))
        for k, v in row.items():
            out[k].append(v)
        if row["bound_before"] != row["bound_after"]:
            notes.append(f"rank {win.rank} step {win.step}: the step is now mostly "
                         f"{row['bound_after']} (was {row['bound_before']})")
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    return Result("what_if", table, notes=notes, params={"selection": sel, **edits})
