"""GPU work held by work the trace does not hold: the one owner of that rule, read by the
critical path's categories (model.path.bounds), by the what-if edits that remove launch
overhead (model.whatif.weights) and by the doctor (its idle gaps and its
unrecorded_gpu_work finding).

frame.gpu_work.ready_idle_waits finds where launched work sat ready on an idle device, as
recorded. That is unrecorded GPU work where the trace says so:

* at the trace's head (nothing recorded on the GPU before: a serving engine profiled
  mid-flight, its previous step still running; frame.gpu_work.unrecorded_head), or
* anywhere, while the host sat in a blocking call (a stream, event or device synchronize, a
  synchronous copy) over most of the wait and returned only after the work started: the
  host was waiting for the GPU, and nothing the trace holds kept the GPU busy. On
  modern/sglang_decode a hipStreamWaitEvent holds stream 3 behind such work from 0.13 ms to
  463.38 ms; the hipMemcpyWithStream queued behind it waits for it and is not its cause.

Elsewhere (the host launching on meanwhile) the trace cannot tell unrecorded work from a
launch link or stream it misrecords, and the wait stays what the graph makes of it.
"""

from __future__ import annotations

import numpy as np

from ...frame import derived
from ...frame.gpu_work import Holds, gpu_work, ready_idle_waits, unrecorded_head_row
from ...schema import CPU_KINDS
from ...trace import Trace
from . import sync_calls
from .dependency_graph import EDGE, DependencyGraph

# A blocking call is evidence for a wait it spans this share of, or more.
COVERED = 0.5


def unrecorded_holds(trace: Trace) -> Holds:
    """The waits of frame.gpu_work.ready_idle_waits that were GPU work the trace does not
    hold (the module's rule), by start. Worked out once per trace."""
    return derived.remember(trace, "unrecorded_holds", lambda: _judged(trace))


def _judged(trace: Trace) -> Holds:
    waits = ready_idle_waits(trace)
    if not len(waits.rows):
        return waits
    head = unrecorded_head_row(trace, gpu_work(trace, None))
    keep = (waits.rows == head) | (waiting_calls(trace, waits) >= 0)
    return Holds(waits.rows[keep], waits.starts[keep], waits.ends[keep])


def waiting_calls(trace: Trace, waits: Holds) -> np.ndarray:
    """Per wait: the row of the blocking call that waited through it (of those that
    returned at or after its end and covered COVERED of it or more, the one covering most),
    -1 where none did. The evidence of the rule, and what the doctor names."""
    out = np.full(len(waits.rows), -1, np.int64)
    name = trace.column("events", "name")
    kind = trace.column("events", "kind")
    cpu = np.flatnonzero(np.isin(kind, np.asarray(CPU_KINDS, np.uint8)) & (name >= 0))
    ids = np.unique(name[cpu])
    blocking_ids = ids[
        np.isin(
            # to_pylist, not fill_null: pyarrow's fill_null imports pandas where it is installed
            sync_calls.sync_kind_of_names([n or "" for n in trace.strings_at(ids).to_pylist()]),
            sync_calls.BLOCKING,
        )
    ]
    calls = cpu[np.isin(name[cpu], blocking_ids)]
    if not len(calls):
        return out
    start = trace.column("events", "ts")[calls]
    end = start + np.maximum(trace.column("events", "dur")[calls], 0)
    for i, (lo, hi) in enumerate(zip(waits.starts.tolist(), waits.ends.tolist())):
        over = np.where(end >= hi, np.minimum(end, hi) - np.maximum(start, lo), -1)
        k = int(np.argmax(over))
        if over[k] >= COVERED * (hi - lo):
            out[i] = int(calls[k])
    return out


def waits_on_unrecorded(graph: DependencyGraph, trace: Trace, edges: np.ndarray) -> np.ndarray:
    """Per edge: whether it is an edge into a held GPU event (unrecorded_holds) from before
    its hold began, so that its time is the unrecorded work's, not a launch's latency or a
    gap between kernels."""
    out = np.zeros(len(edges), bool)
    holds = unrecorded_holds(trace)
    if not len(holds.rows) or not len(edges):
        return out
    into = np.isin(
        graph.edge_type[edges], [EDGE["launch"], EDGE["kernel_kernel"], EDGE["cross_stream"]]
    )
    if not into.any():
        return out
    dst_row = graph.rows[np.minimum(graph.dst[edges] // 2, len(graph.rows) - 1)]
    order = np.argsort(holds.rows)
    pos = np.minimum(np.searchsorted(holds.rows[order], dst_row), len(order) - 1)
    hit = into & (holds.rows[order][pos] == dst_row) & (graph.dst[edges] % 2 == 0)
    began = holds.starts[order][pos]
    return hit & (graph.measured_nodes[graph.src[edges]] <= began)
