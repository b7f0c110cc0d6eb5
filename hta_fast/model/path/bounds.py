"""What each critical-path edge is bound by, and the event its time is charged to.

cpu_bound                    CPU event time, gaps between a thread's calls, host wake-up
                             after a sync (data_loading: data-loading events,
                             frame.derived.DATALOADER, and the events inside them)
gpu_compute_bound            kernels, copies and sets that are not communication
gpu_communication_bound      communication kernels
gpu_kernel_launch_overhead   launch call start -> its GPU event start
gpu_kernel_kernel_overhead   gaps between GPU events on a stream or across a stream wait
                             (communication: the release after a collective that another
                             stream waited on)
gpu_unrecorded_work          the wait into a GPU event held by GPU work the trace does not
                             hold (at the trace's head, or while the host sat in a blocking
                             call: model.graph.unrecorded_wait): that work's time, not a
                             launch's or a gap's; charged to the held event
one_off_stall                host time (an event's own time, or a launch edge out of it)
                             charged to a one-off call (model.graph.one_off_calls: a first
                             launch that loads the module, a compile): not a launch's usual
                             cost nor the host's per-step work
untraced_host                gaps of UNTRACED_MIN or more between a thread's calls where no
                             event of the trace says what the thread did (between top-level
                             calls, or the direct children of a ProfilerStep): the profiler
                             recorded nothing there, so the model cannot say whether the
                             host worked or waited
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...frame import derived
from ...frame.derived import DATALOADER, name_flags
from ...frame.launches import enclosing
from ...schema import KernelClass
from ...trace import Trace
from ..graph.dependency_graph import EDGE, DependencyGraph
from ..graph.one_off_calls import one_off_rows
from ..graph.unrecorded_wait import waits_on_unrecorded

BOUND_BY = [
    "cpu_bound",
    "gpu_compute_bound",
    "gpu_communication_bound",
    "gpu_kernel_kernel_overhead",
    "gpu_kernel_launch_overhead",
    "data_loading",
    "untraced_host",
    "gpu_unrecorded_work",
    "one_off_stall",
]
# ns: a gap shorter than this between a thread's calls is the interpreter's own time between
# operators (5-30 us in eager PyTorch); a longer one is host time the trace does not explain.
UNTRACED_MIN = 100_000
# Categories as fixed-width strings, not Python objects: a path's shares compare each edge's
# category with each name, which numpy does in C on these (per element in Python on objects).
BOUND_DTYPE = f"<U{max(len(b) for b in BOUND_BY)}"

# The end of an edge whose event the edge's time is charged to (0: source, 1: target).
_CHARGED_TO_SOURCE = [
    EDGE[t] for t in ("cpu_self", "cpu_nest_down", "gpu_self", "launch", "sync_self")
]
_BOUND = {
    "launch": "gpu_kernel_launch_overhead",
    "kernel_kernel": "gpu_kernel_kernel_overhead",
}


def charged_events(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> np.ndarray:
    """The trace row each edge's time is charged to (a wait behind unrecorded GPU work: the
    held event, not the call that launched it)."""
    to_source = np.isin(graph.edge_type[edges], _CHARGED_TO_SOURCE) & ~waits_on_unrecorded(
        graph, trace, edges
    )
    node: np.ndarray = np.where(to_source, graph.src[edges], graph.dst[edges])
    return graph.rows[np.minimum(node // 2, len(graph.rows) - 1)]


def names_of(trace: Trace, column: str, rows: np.ndarray) -> pa.Array:
    """The string column ("name", "cat") of these event rows, as an Arrow array."""
    return trace.strings_at(trace.column("events", column)[rows])


def bound_codes(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> np.ndarray:
    """The index in BOUND_BY of each edge's category (int8): a path has millions of edges,
    and codes are compared and counted in C where strings are not."""
    code = {b: np.int8(i) for i, b in enumerate(BOUND_BY)}
    events = charged_events(graph, trace, edges)
    out = np.where(in_data_loading(trace, events), code["data_loading"], code["cpu_bound"]).astype(
        np.int8
    )
    types = graph.edge_type[edges]
    gpu = types == EDGE["gpu_self"]
    comm = trace.column("events", "kernel_class")[events] == KernelClass.COMM
    out[gpu & comm] = code["gpu_communication_bound"]
    out[gpu & ~comm] = code["gpu_compute_bound"]
    for kind, bound in _BOUND.items():
        out[types == EDGE[kind]] = code[bound]
    cross = types == EDGE["cross_stream"]
    if cross.any():
        waited = graph.rows[np.minimum(graph.src[edges[cross]] // 2, len(graph.rows) - 1)]
        after_comm = trace.column("events", "kernel_class")[waited] == KernelClass.COMM
        out[cross] = np.where(
            after_comm, code["gpu_communication_bound"], code["gpu_kernel_kernel_overhead"]
        )
    host = (out == code["cpu_bound"]) | (out == code["gpu_kernel_launch_overhead"])
    out[host & one_off_rows(trace, events)] = code["one_off_stall"]
    out[_untraced(graph, trace, edges, events)] = code["untraced_host"]
    out[waits_on_unrecorded(graph, trace, edges)] = code["gpu_unrecorded_work"]
    return out


def in_data_loading(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per event row: whether it is a data-loading event (frame.derived.DATALOADER) or runs
    inside one, as the doctor's input_pipeline counts the loader's whole span."""

    def loaders() -> np.ndarray:
        name = trace.column("events", "name")
        flags = name_flags(trace, DATALOADER)
        own = (name >= 0) & (flags[np.clip(name, 0, len(flags) - 1)] if len(flags) else False)
        return np.asarray(own, bool)

    own = derived.remember(trace, "data_loader_events", loaders)
    out = own[rows]
    if own.any() and not out.all():
        inside = np.flatnonzero(~out)
        out[inside] = enclosing(trace, rows[inside], own) >= 0
    return out


def bound_by(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> np.ndarray:
    """The BOUND_BY category of each edge (an array of BOUND_DTYPE)."""
    return np.asarray(BOUND_BY, BOUND_DTYPE)[bound_codes(graph, trace, edges)]


def _untraced(
    graph: DependencyGraph, trace: Trace, edges: np.ndarray, events: np.ndarray
) -> np.ndarray:
    """Which edges are untraced host time: a thread's gap of UNTRACED_MIN or more between
    two calls with no recorded parent, or whose parent is a ProfilerStep annotation."""
    on = graph.edge_type[edges] == EDGE["cpu_sibling"]
    if not on.any():
        return on
    measured = graph.measured_nodes
    gap = measured[graph.dst[edges]] - measured[graph.src[edges]]
    on &= gap >= UNTRACED_MIN
    if not on.any():
        return on
    parent = trace.column("events", "parent")[events[on]]
    names = trace.strings_at(trace.column("events", "name")[np.maximum(parent, 0)])
    step = np.asarray(pc.starts_with(names.fill_null(""), "ProfilerStep#"), bool)
    on[np.flatnonzero(on)] = (parent < 0) | step
    return on


def shares(bounds: np.ndarray, weight: np.ndarray) -> dict[str, float | None]:
    """Each category's share of the path length, in percent (None for an empty path).
    bounds: each edge's category, as BOUND_BY names or as bound_codes."""
    total = int(weight.sum())
    if np.issubdtype(np.asarray(bounds).dtype, np.integer):
        per = np.bincount(bounds, weights=weight, minlength=len(BOUND_BY))
    else:
        per = np.array([weight[bounds == b].sum() for b in BOUND_BY], np.float64)
    return {b: (100.0 * float(per[i]) / total if total else None) for i, b in enumerate(BOUND_BY)}
