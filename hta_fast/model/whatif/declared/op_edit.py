"""CPU ops that take F times as long, with everything nested under them on their thread: the
op_scale edit and the CPU side of durations_from (hta_fast.model.whatif.edits).

An op's time on its thread is made of the graph's CPU edges inside it: its own start -> end
when it has no children, the gaps from its start to its first child and from its last child
to its end, the gaps between its children, and all of that again inside each child. So the
edit is a factor per CPU edge: the product of the factors of the ops that hold the edge,
the op itself and every op it is nested in. Waits (a launch's latency after its call,
another thread joining, a sync's wait for the GPU) are not the op's own time and keep their
weight, except a blocking call's own stretch (sync_self, join_tail), which, as for the `cpu`
edit, scales, and the part of a launch edge inside its launch call.
"""

from __future__ import annotations

import re
from typing import Mapping

import numpy as np

from ....schema import CPU_KINDS
from ....trace import Trace
from ...graph.dependency_graph import EDGE, DependencyGraph
from .declaration import EditDeclaration, Option, factor_pairs

RowFactors = tuple[np.ndarray, np.ndarray]  # trace rows of CPU events, the factor of each


def matching_cpu_rows(trace: Trace, table: Mapping[str, float]) -> RowFactors:
    """The CPU events whose name matches a key of `table` (re.search), each with the product
    of the factors of the keys it matches."""
    kind = trace.column("events", "kind")
    rows = np.flatnonzero(np.isin(kind, CPU_KINDS))
    if not table or not len(rows):
        return np.zeros(0, np.int64), np.zeros(0)
    ids = trace.column("events", "name")[rows]
    uniq, inv = np.unique(ids, return_inverse=True)
    names = trace.names_at(uniq)
    per = np.ones(len(uniq))
    for key, f in table.items():
        pattern = re.compile(key)  # checked when the Edits were made
        per[np.array([bool(pattern.search(n)) for n in names], bool)] *= f
    factor = per[inv.reshape(-1)]
    hit = factor != 1.0
    return rows[hit].astype(np.int64), factor[hit]


def _held_factor(parent: np.ndarray, own: np.ndarray) -> np.ndarray:
    """Per event, the product of `own` over the event and all its ancestors (parent: local
    index or -1). Pointer doubling: log2(depth) passes, not one per nesting level."""
    held = own.copy()
    up = parent.copy()
    while (up >= 0).any():
        has = up >= 0
        held[has] *= held[up[has]]
        up = np.where(has, up[np.maximum(up, 0)], -1)
    return held


def local_parent(graph: DependencyGraph, trace: Trace) -> np.ndarray:
    """Each graph event's CPU parent as a graph event index, -1 where it has none (or the
    parent is not in the graph)."""
    rows = graph.rows
    parent = trace.column("events", "parent")[rows]
    if not len(rows):
        return np.zeros(0, np.int64)
    pos = np.minimum(np.searchsorted(rows, parent), len(rows) - 1)
    return np.where((parent >= 0) & (rows[pos] == parent), pos, -1).astype(np.int64)


def cpu_edge_factors(graph: DependencyGraph, trace: Trace, ops: RowFactors) -> np.ndarray:
    """Per edge of the graph, the factor the op edits give it (1 where none applies)."""
    factor = np.ones(len(graph.edge_type))
    op_rows, op_factor = ops
    rows = graph.rows
    if not len(op_rows) or not len(rows):
        return factor
    own = np.ones(len(rows))
    pos = np.minimum(np.searchsorted(rows, op_rows), len(rows) - 1)
    found = rows[pos] == op_rows
    np.multiply.at(own, pos[found], op_factor[found])
    parent = local_parent(graph, trace)
    held = np.append(_held_factor(parent, own), 1.0)  # the last entry: no event (window start)
    types = graph.edge_type
    src = np.minimum(graph.src // 2, len(rows))
    dst = np.minimum(graph.dst // 2, len(rows))
    # Which event holds each kind of CPU edge (module doc).
    for name, event in (
        ("cpu_self", src),
        ("sync_self", src),
        ("cpu_nest_down", src),
        ("cpu_nest_up", dst),
        ("join_tail", dst),
    ):
        on = types == EDGE[name]
        factor[on] = held[event[on]]
    sibling = types == EDGE["cpu_sibling"]
    sib_parent = np.append(parent, -1)[src[sibling]]
    factor[sibling] = np.where(sib_parent >= 0, held[np.maximum(sib_parent, 0)], 1.0)
    # A launch edge runs from the launch call's start to its GPU event's start: the part of
    # it inside the call is the call's own time (a first launch that loads the module
    # holds it for seconds) and scales with the call; the latency after the call stays.
    launch = np.flatnonzero((types == EDGE["launch"]) & (src < len(rows)))
    if len(launch):
        m = graph.measured_nodes
        event = src[launch]
        latency = (m[graph.dst[launch]] - m[graph.src[launch]]).astype(np.float64)
        call = np.clip(m[2 * event + 1] - m[2 * event], 0, None).astype(np.float64)
        cut = (1.0 - held[event]) * np.clip(np.minimum(latency, call), 0, None)
        factor[launch] = np.where(latency > 0, 1.0 - cut / np.maximum(latency, 1.0), 1.0)
    return factor


EDIT = EditDeclaration(
    key="op_scale",
    options=(
        Option(
            "--scale-op",
            "ops",
            "CPU ops whose name matches take F times as long, with everything nested under "
            "them on their thread; F=0: they cost nothing (repeatable).",
            metavar="REGEX=F",
            multiple=True,
        ),
    ),
    keywords=("op_scale",),
    build=lambda v: {"op_scale": factor_pairs(v["ops"], "--scale-op")},
    doc="`{REGEX: F}`: CPU events whose name matches take F times as long, with everything "
    "nested under them on their thread (F=0: they cost nothing).",
)
