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

A blocking call can show the same from the host's side (sync_tails): it began while the
device still ran recorded work, so it waited for it, yet it returned HEAD_WAIT or more
(beyond the trace's usual return after such a wait) after every recorded GPU event before
its end was done. The device was busy with something the trace does not hold: the work
queued when the profiler stopped recording (a DDP trace's last step ends in a 37.9 ms
hipDeviceSynchronize), another process. Such a hold's row is the call, its start the end of
the recorded work, its end the call's. A call that began on an idle device and took long
(a graph capture's one-time device synchronize) waited for nothing recorded: a one-off
(model.graph.one_off_calls), not this.
"""

from __future__ import annotations

import numpy as np

from ... import sync_calls
from ...frame import derived
from ...frame.gpu_work import (
    HEAD_WAIT,
    USUAL_FROM,
    Holds,
    gpu_work,
    ready_idle_waits,
    unrecorded_head_row,
)
from ...schema import CPU_KINDS
from ...trace import Trace
from .dependency_graph import EDGE, DependencyGraph

# A blocking call is evidence for a wait it spans this share of, or more.
COVERED = 0.5


def unrecorded_holds(trace: Trace) -> Holds:
    """The waits of frame.gpu_work.ready_idle_waits that were GPU work the trace does not
    hold (the module's rule), by start. Worked out once per trace."""
    return derived.remember(trace, "unrecorded_holds", lambda: _judged(trace))


def _judged(trace: Trace) -> Holds:
    waits = ready_idle_waits(trace)
    if len(waits.rows):
        head = unrecorded_head_row(trace, gpu_work(trace, None))
        keep = (waits.rows == head) | (waiting_calls(trace, waits) >= 0)
        waits = Holds(waits.rows[keep], waits.starts[keep], waits.ends[keep])
    tails = sync_tails(trace)
    if not len(tails.rows):
        return waits
    order = np.argsort(np.r_[waits.starts, tails.starts], kind="stable")
    return Holds(*(np.r_[a, b][order] for a, b in zip(waits, tails)))


def sync_tails(trace: Trace) -> Holds:
    """Blocking calls kept waiting by GPU work the trace does not hold (the module doc): the
    call's row, the end of the recorded work it waited for, the call's end."""
    empty = Holds(*(np.zeros(0, np.int64),) * 3)
    calls = _blocking_calls(trace)
    work = gpu_work(trace, None)
    if not len(calls) or not len(work.rows):
        return empty
    start = trace.column("events", "ts")[calls]
    end = start + np.maximum(trace.column("events", "dur")[calls], 0)
    # the end of the device's recorded work started before each call returned
    order = np.argsort(work.starts, kind="stable")
    busy_end = np.maximum.accumulate(work.ends[order])
    k = np.searchsorted(work.starts[order], end, "left") - 1
    done = np.where(k >= 0, busy_end[np.maximum(k, 0)], np.iinfo(np.int64).min)
    waited = (k >= 0) & (start < done) & (done <= end)
    after = end - done
    usual = float(np.median(after[waited])) if waited.sum() >= USUAL_FROM else 0.0
    held = waited & (after - max(usual, 0.0) >= HEAD_WAIT)
    return Holds(calls[held], done[held], end[held])


def _blocking_calls(trace: Trace) -> np.ndarray:
    """Rows of the host's blocking calls (sync_calls.BLOCKING), by row."""
    name = trace.column("events", "name")
    kind = trace.column("events", "kind")
    cpu = np.flatnonzero(np.isin(kind, np.asarray(CPU_KINDS, np.uint8)) & (name >= 0))
    return cpu[np.isin(sync_calls.sync_kinds_of_rows(trace, cpu), sync_calls.BLOCKING)]


def waiting_calls(trace: Trace, waits: Holds) -> np.ndarray:
    """Per wait: the row of the blocking call that waited through it (of those that
    returned at or after its end and covered COVERED of it or more, the one covering most),
    -1 where none did. The evidence of the rule, and what the doctor names."""
    out = np.full(len(waits.rows), -1, np.int64)
    calls = _blocking_calls(trace)
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
    """Per edge: whether its time is unrecorded GPU work's (unrecorded_holds), not a
    launch's latency, a gap between kernels or a sync's return: an edge into a held GPU
    event from before its hold began, or the wait into the end of a blocking call kept
    waiting after the recorded work (sync_tails)."""
    out = np.zeros(len(edges), bool)
    holds = unrecorded_holds(trace)
    if not len(holds.rows) or not len(edges):
        return out
    types = graph.edge_type[edges]
    into = np.isin(types, [EDGE["launch"], EDGE["kernel_kernel"], EDGE["cross_stream"]])
    tail = types == EDGE["sync_wait"]
    if not (into | tail).any():
        return out
    dst_row = graph.rows[np.minimum(graph.dst[edges] // 2, len(graph.rows) - 1)]
    order = np.argsort(holds.rows)
    pos = np.minimum(np.searchsorted(holds.rows[order], dst_row), len(order) - 1)
    held = holds.rows[order][pos] == dst_row
    began = holds.starts[order][pos]
    before = graph.measured_nodes[graph.src[edges]] <= began
    return held & ((into & (graph.dst[edges] % 2 == 0) & before) | tail)
