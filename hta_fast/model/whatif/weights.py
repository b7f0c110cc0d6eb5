"""A graph's calibrated weights with a what-if's edits applied (hta_fast.model.whatif.edits).

The replay keeps each lane's order and each wait's measured or typical cost (docs/model.md,
"Weights"), so a shorter kernel lets the work queued behind it, and the host waiting for it,
move up."""

from __future__ import annotations

import re
from typing import Mapping, Optional

import numpy as np

from ...schema import KernelClass
from ...trace import Trace
from ..graph.dependency_graph import EDGE, DependencyGraph
from ..graph.dropped import DROPPED
from ..graph.one_off_calls import one_off_rows
from ..graph.unrecorded_wait import waits_on_unrecorded
from .declared.op_edit import RowFactors, cpu_edge_factors
from .edits import Edits

CPU_EDGES = [
    EDGE[t]
    for t in ("cpu_self", "cpu_nest_down", "cpu_nest_up", "cpu_sibling", "sync_self", "join_tail")
]


def _names(trace: Trace, ids: np.ndarray) -> list[str]:
    return trace.names_at(ids)


def _match_factor(
    trace: Trace, ids: np.ndarray, table: Mapping[str, float], regex: bool
) -> np.ndarray:
    """Per row, the product of the factors whose key matches its string (name or cat)."""
    out = np.ones(len(ids))
    if not table:
        return out
    uniq, inv = np.unique(ids, return_inverse=True)
    names = _names(trace, uniq)
    per = np.ones(len(uniq))
    for key, f in table.items():
        if regex:
            pattern = re.compile(key)  # checked when the Edits were made
            hit = [bool(pattern.search(n)) for n in names]
        else:
            hit = [n == key for n in names]
        per[np.array(hit, bool)] *= f
    return per[inv.reshape(-1)]


def _gpu_factor(trace: Trace, rows: np.ndarray, edits: Edits) -> np.ndarray:
    """Per GPU event row, the product of its class, name and category factors."""
    factor = np.ones(len(rows))
    kclass = trace.column("events", "kernel_class")[rows]
    for cls, f in (edits.kernel_class or {}).items():
        factor[kclass == KernelClass[cls]] *= f
    factor *= _match_factor(
        trace, trace.column("events", "name")[rows], edits.name or {}, regex=True
    )
    factor *= _match_factor(
        trace, trace.column("events", "cat")[rows], edits.category or {}, regex=False
    )
    return factor


def edited_weights(
    graph: DependencyGraph,
    trace: Trace,
    edits: Edits,
    duration_change: Optional[tuple[np.ndarray, np.ndarray]] = None,
    ops: Optional[RowFactors] = None,
) -> np.ndarray:
    """The graph's calibrated weights with the edits' factors applied. duration_change:
    (event rows, ns) added to those GPU events' durations before the factors (a
    collective's changed time moving data, a lookup's planned time, another GPU's time);
    ops: (CPU event rows, factor) for those ops and what they hold (op_scale,
    durations_from)."""
    w = graph.weight.astype(np.float64)
    types = graph.edge_type
    src_row = graph.rows[np.minimum(graph.src // 2, len(graph.rows) - 1)]
    gpu_self = np.flatnonzero(types == EDGE["gpu_self"])
    rows = src_row[gpu_self]
    if duration_change is not None and len(duration_change[0]):
        order = np.argsort(duration_change[0])
        changed_rows, delta = duration_change[0][order], duration_change[1][order]
        pos = np.minimum(np.searchsorted(changed_rows, rows), len(changed_rows) - 1)
        hit = changed_rows[pos] == rows
        w[gpu_self[hit]] = np.maximum(w[gpu_self[hit]] + delta[pos[hit]], 0)
    w[gpu_self] *= _gpu_factor(trace, rows, edits)
    if edits.cpu != 1.0:
        w[np.isin(types, CPU_EDGES)] *= edits.cpu
    if ops is not None and len(ops[0]):
        w *= cpu_edge_factors(graph, trace, ops)
    if edits.zero_launch_overhead:
        # A launch edge that spans a wait behind unrecorded GPU work keeps it (the critical
        # path charges that time to the unrecorded work, not to the launch)
        other = waits_on_unrecorded(graph, trace, np.arange(len(w)))
        w[(types == EDGE["launch"]) & ~other] = 0
        # The calls that launched GPU work: their own CPU time goes too, but for a one-off
        # (a first launch that loads the module: graph.one_off_calls), which the edit does
        # not name: it keeps its call, and its launch edge the call's time.
        launch = types == EDGE["launch"]
        is_launch = np.zeros(len(graph.rows) + 1, bool)
        is_launch[graph.src[launch] // 2] = True
        kept = np.zeros(len(graph.rows) + 1, bool)
        calls = np.flatnonzero(is_launch[:-1])
        kept[calls] = one_off_rows(trace, graph.rows[calls])
        w[(types == EDGE["cpu_self"]) & is_launch[graph.src // 2] & ~kept[graph.src // 2]] = 0
        held = np.flatnonzero(launch & kept[graph.src // 2])
        m = graph.measured_nodes
        call = graph.src[held] // 2
        w[held] = np.minimum(graph.weight[held], m[2 * call + 1] - m[2 * call])
    out = np.rint(w).astype(np.int64)
    if edits.drop_comm_waits or edits.drop_sync_waits:
        # A wait for GPU work the trace does not hold stays: no edit of recorded work or of
        # the host's syncs removes that work (model.graph.unrecorded_wait.sync_tails).
        kept = waits_on_unrecorded(graph, trace, np.arange(len(w)))
    if edits.drop_comm_waits:
        comm_src = trace.column("events", "kernel_class")[src_row] == KernelClass.COMM
        waits = np.isin(types, [EDGE["cross_stream"], EDGE["sync_wait"]]) & comm_src
        out[waits & ~kept] = DROPPED
    if edits.drop_sync_waits:
        # The call's own edge keeps the typical cost of a sync that did not wait (docs/model.md,
        # "Weights"): where it waited, calibration gave it no more than that.
        out[(types == EDGE["sync_wait"]) & ~kept] = DROPPED
    return out
