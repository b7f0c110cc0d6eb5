"""What each critical-path edge is bound by, and the event its time is charged to.

    cpu_bound                    CPU event time, gaps between a thread's calls, host wake-up
                                 after a sync (data_loading: events whose name holds DataLoader)
    gpu_compute_bound            kernels, copies and sets that are not communication
    gpu_communication_bound      communication kernels
    gpu_kernel_launch_overhead   launch call start -> its GPU event start
    gpu_kernel_kernel_overhead   gaps between GPU events on a stream or across a stream wait
"""
from __future__ import annotations

import numpy as np

from ..schema import KernelClass
from ..trace import Trace
from .dependency_graph import EDGE, EDGE_TYPES, DependencyGraph

BOUND_BY = ["cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
            "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead", "data_loading"]

# The end of an edge whose event the edge's time is charged to (0: source, 1: target).
_CHARGED_TO_SOURCE = [EDGE[t] for t in ("cpu_self", "cpu_nest_down", "gpu_self", "launch", "sync_self")]
_BOUND = {"launch": "gpu_kernel_launch_overhead", "kernel_kernel": "gpu_kernel_kernel_overhead",
          "cross_stream": "gpu_kernel_kernel_overhead"}


def charged_events(graph: DependencyGraph, edges: np.ndarray) -> np.ndarray:
    """The trace row each edge's time is charged to."""
    node = np.where(np.isin(graph.edge_type[edges], _CHARGED_TO_SOURCE),
                    graph.core.src[edges], graph.core.dst[edges])
    return graph.rows[np.minimum(node // 2, len(graph.rows) - 1)]


def bound_by(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> list[str]:
    """The BOUND_BY category of each edge."""
    events = charged_events(graph, edges)
    strings = trace.strings
    names = [strings[int(i)].as_py() if i >= 0 else "" for i in trace.column("events", "name")[events]]
    kclass = trace.column("events", "kernel_class")[events]
    out = []
    for t, k, nm in zip(graph.edge_type[edges], kclass, names):
        kind = EDGE_TYPES[t]
        if kind == "gpu_self":
            out.append("gpu_communication_bound" if k == KernelClass.COMM else "gpu_compute_bound")
        elif kind in _BOUND:
            out.append(_BOUND[kind])
        else:
            out.append("data_loading" if "DataLoader" in nm else "cpu_bound")
    return out


def shares(bounds: list[str], weight: np.ndarray) -> dict[str, float | None]:
    """Each category's share of the path length, in percent (None for an empty path)."""
    total = int(weight.sum())
    arr = np.array(bounds, object)
    return {b: (100.0 * float(weight[arr == b].sum()) / total if total else None) for b in BOUND_BY}
