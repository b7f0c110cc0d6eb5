"""Launched work that waited for GPU work the trace does not hold: the one owner of that
rule, read by the critical path's categories (model.path.bounds) and by the what-if edits
that remove launch overhead (model.whatif.weights).

A trace that opens while the GPU still runs work queued before the profiler started
(frame.gpu_work.unrecorded_head: a serving engine's previous step) has its first recorded
GPU event start long after its launch. The launch edge into that event then spans the
unrecorded work, not a launch's latency: no launch edit removes it, and the critical path
says what it is."""

from __future__ import annotations

import numpy as np

from ...frame.gpu_work import gpu_work, unrecorded_head_row
from ...trace import Trace
from .dependency_graph import EDGE, DependencyGraph


def waits_on_unrecorded(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> np.ndarray:
    """Per edge: whether it is the launch edge into the trace's unrecorded head (the first
    recorded GPU event, when it waited behind work the trace does not hold)."""
    out = np.zeros(len(edges), bool)
    head = unrecorded_head_row(trace, gpu_work(trace, None))
    if head is None:
        return out
    launch = graph.edge_type[edges] == EDGE["launch"]
    if not launch.any():
        return out
    dst_row = graph.rows[np.minimum(graph.dst[edges] // 2, len(graph.rows) - 1)]
    return launch & (dst_row == head)
