"""Breakdown rows of a critical path: one row per edge, with its duration (the edge's weight),
type, the event it is charged to (name, cat, pid, tid, stream) and what it is bound by
(hta_fast.model.path.bounds). Shared by the per-rank path and the path across ranks."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

from ... import _arrow
from ..._arrow import array_of
from ...frame.fields import NS
from ...trace import Trace
from ..graph.dependency_graph import EDGE_TYPES, DependencyGraph
from .bounds import BOUND_BY, bound_codes, charged_events, names_of

BREAKDOWN = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("duration", pa.int64(), metadata=NS),
        pa.field("type", pa.string()),
        pa.field("name", pa.string()),
        pa.field("cat", pa.string()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("stream", pa.int64()),
        pa.field("bound_by", pa.string()),
    ]
)
_GPU_TYPES = [EDGE_TYPES.index(t) for t in ("gpu_self", "kernel_kernel", "cross_stream")]


def event_columns(trace: Trace, events: np.ndarray, gpu: np.ndarray) -> dict[str, pa.Array]:
    """name, cat, pid, tid and stream (null where `gpu` is False) of these event rows."""
    stream = trace.column("events", "stream")[events].astype(np.int64)
    return {
        "name": names_of(trace, "name", events),
        "cat": names_of(trace, "cat", events),
        "pid": array_of(trace.column("events", "pid")[events], pa.int64()),
        "tid": array_of(trace.column("events", "tid")[events], pa.int64()),
        "stream": _arrow.masked(np.where(gpu, stream, 0), ~gpu, pa.int64()),
    }


def breakdown_rows(
    rank: int,
    step: object,
    graph: DependencyGraph,
    trace: Trace,
    edges: np.ndarray,
    weight: np.ndarray,
    durations: Optional[np.ndarray] = None,
) -> tuple[pa.Table, np.ndarray]:
    """The BREAKDOWN rows of these path edges (weights: the graph's, one per edge) and each
    edge's bound_by category. durations: the time each path edge counts for, where it is not
    its weight (a chained step's path: the edge that crosses the step's start counts for the
    part inside the step). The categories come back as bound_codes."""
    w = weight[edges] if durations is None else durations
    types = graph.edge_type[edges]
    bound = bound_codes(graph, trace, edges)
    events = charged_events(graph, trace, edges)
    n = len(edges)
    # Strings by code: a path has millions of edges and a dozen types and categories.
    table = pa.table(
        {
            "rank": array_of(np.full(n, rank), pa.int64()),
            "step": pa.nulls(n, pa.int64())
            if step is None
            else array_of(np.full(n, step, np.int64), pa.int64()),
            "duration": array_of(w, pa.int64()),
            "type": _strings(types, EDGE_TYPES),
            **event_columns(trace, events, np.isin(types, _GPU_TYPES)),
            "bound_by": _strings(bound, BOUND_BY),
        },
        schema=BREAKDOWN,
    )
    return table, bound


def _strings(codes: np.ndarray, labels: list[str]) -> pa.Array:
    """The label of each code, as a plain string array."""
    indices = array_of(np.asarray(codes, np.int32), pa.int32())
    return pa.DictionaryArray.from_arrays(indices, array_of(labels, pa.string())).cast(pa.string())


ON_PATH = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        pa.field("bound_by", pa.string()),
        pa.field("duration", pa.int64(), metadata=NS),
        pa.field("edges", pa.int64()),
    ]
)


def on_path_rows(
    rank: int, trace: Trace, events: np.ndarray, bound: np.ndarray, durations: np.ndarray
) -> pa.Table:
    """The ON_PATH rows of a rank's path edges, the most time first: the time the edges
    charged to each event name hold, per category (events: each edge's trace row; bound: its
    bound_codes). Summed on the name's code first: a long trace's paths have millions of
    edges and a few thousand names."""
    name = trace.column("events", "name")[events].astype(np.int64)
    key = name * len(BOUND_BY) + bound.astype(np.int64)
    keys, inverse = np.unique(key, return_inverse=True)
    total = np.zeros(len(keys), np.int64)
    np.add.at(total, inverse, durations.astype(np.int64))
    count = np.bincount(inverse, minlength=len(keys)).astype(np.int64)
    order = np.argsort(-total, kind="stable")  # the most time first
    keys, total, count = keys[order], total[order], count[order]
    names, codes = keys // len(BOUND_BY), keys % len(BOUND_BY)
    return pa.table(
        {
            "rank": array_of(np.full(len(keys), rank), pa.int64()),
            "name": trace.strings_at(names),
            "bound_by": _strings(codes, BOUND_BY),
            "duration": array_of(total, pa.int64()),
            "edges": array_of(count, pa.int64()),
        },
        schema=ON_PATH,
    )
