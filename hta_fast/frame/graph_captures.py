"""Graph captures: the launches a program made while a stream was being captured into a
graph. Captured work does not run, so the profiler records the runtime call (with its
correlation id) and no GPU event; the work runs later, once per replay of the graph
(frame.graph_replays), under the graph launch's correlation id instead.

A captured launch is a runtime or driver call that launches a kernel, a copy or a fill (by
its API name: KERNEL_API, MEMCPY_API, MEMSET_API), carries a correlation id and is linked
to no GPU event. Where a thread recorded cudaStreamBeginCapture / ...EndCapture (or the hip
and driver forms), a capture is the captured launches between a begin and the next end on
that thread. On a thread that recorded neither, a capture is a run of captured launches
with no launch that ran in between: a call that queued real work, or a graph instantiation
(cudaGraphInstantiate and its forms: the graph captured so far is made), ends the capture.

Each capture keeps its launches in start order, the kind of work each would queue, and the
CPU operator that made each one (the innermost cpu_op around it, on its own thread).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..schema import EventKind
from ..trace import Trace
from . import derived
from .launches import LAUNCH_KINDS, enclosing

__all__ = ["GraphCaptures", "graph_captures", "api_kinds"]

# The launch APIs by name, the one place they are spelled (analysis.cupti_counters pairs
# kernels with KERNEL_API's calls): cudaLaunchKernel(ExC), cuLaunchKernel(Ex),
# cudaLaunchCooperativeKernel, hipLaunchKernel, hipExtModuleLaunchKernel,
# hipModuleLaunchKernel, ..., with the per-thread stream forms of both eras of kineto
# (cudaLaunchKernel_ptsz, cuLaunchKernelEx_ptsz). A call an earlier kineto wrote as INVALID or
# unknown has its name from its cbid (the loader: csrc/parse/cbid_names.h).
KERNEL_API = r"^(cu|cuda|hip)\w*Launch\w*Kernel"
MEMCPY_API = r"^(cu|cuda|hip)Memcpy"
MEMSET_API = r"^(cu|cuda|hip)Memset"
BEGIN_CAPTURE = r"^(cu|cuda|hip)StreamBeginCapture"
END_CAPTURE = r"^(cu|cuda|hip)StreamEndCapture"
# Instantiating a graph closes what was captured for it: on a thread that recorded no
# begin/end, the launches captured before an instantiation and those after are two graphs.
INSTANTIATE = r"^(cu|cuda|hip)Graph(Exec)?Instantiate"


class GraphCaptures(NamedTuple):
    """One rank's captures, in the order their first launches start.

    launch   the captured launch rows, capture by capture, each capture's by start
    kind     the EventKind (kernel, memcpy, memset) each launch would queue
    op       the innermost cpu_op around each launch; -1 where it is in none
    offsets  capture j's launches are launch[offsets[j]:offsets[j + 1]]
    end      per capture: the end of its last launch call (ns)
    """

    launch: np.ndarray
    kind: np.ndarray
    op: np.ndarray
    offsets: np.ndarray
    end: np.ndarray

    @property
    def total(self) -> int:
        """How many captures."""
        return len(self.offsets) - 1


def api_kinds(trace: Trace) -> np.ndarray:
    """Per string id of the pool: the EventKind of the work a launch API of that name
    queues (kernel, memcpy, memset), 0 for every other name."""

    def compute() -> np.ndarray:
        out = np.zeros(len(trace.strings), np.uint8)
        for pattern, kind in (
            (KERNEL_API, EventKind.kernel),
            (MEMCPY_API, EventKind.memcpy),
            (MEMSET_API, EventKind.memset),
        ):
            out[derived.name_flags(trace, pattern)] = kind
        return out

    return derived.remember(trace, "graph_api_kinds", compute)


def graph_captures(trace: Trace) -> GraphCaptures:
    """Every capture of the trace (see the module's doc). Remembered."""
    return derived.remember(trace, "graph_captures", lambda: _graph_captures(trace))


def _graph_captures(trace: Trace) -> GraphCaptures:
    col = trace.column
    names = col("events", "name")
    host = derived.kind_mask(trace, LAUNCH_KINDS) & (names >= 0)
    safe = np.maximum(names, 0)
    kinds = api_kinds(trace)[safe]
    begin = host & derived.name_flags(trace, BEGIN_CAPTURE)[safe]
    end = host & derived.name_flags(trace, END_CAPTURE)[safe]
    calls = host & (kinds > 0)
    captured = calls & (col("events", "correlation") >= 0) & (col("events", "partner") < 0)
    if not captured.any():
        return _none()
    instantiate = host & derived.name_flags(trace, INSTANTIATE)[safe]
    rows = np.flatnonzero(calls | begin | end | instantiate)
    pid, tid, ts = col("events", "pid")[rows], col("events", "tid")[rows], col("events", "ts")[rows]
    order = np.lexsort((ts, tid, pid))
    rows, pid, tid = rows[order], pid[order], tid[order]
    new_thread = np.r_[True, (pid[1:] != pid[:-1]) | (tid[1:] != tid[:-1])]
    thread = np.cumsum(new_thread) - 1
    marks = begin[rows] | end[rows]
    marked = np.bincount(thread, weights=marks, minlength=thread[-1] + 1)[thread] > 0
    # depth inside begin/end windows, per thread
    step = begin[rows].astype(np.int64) - end[rows].astype(np.int64)
    depth = np.cumsum(step)
    starts = np.flatnonzero(new_thread)
    depth -= np.repeat(depth[starts] - step[starts], np.diff(np.r_[starts, len(rows)]))
    is_captured = captured[rows]
    # a capture ends at a new thread, at a begin or end mark, and, on a thread without
    # marks, at a launch that queued work of its own or a graph instantiation
    brk = new_thread | marks | (~marked & ~is_captured)
    run = np.cumsum(brk)
    keep = is_captured & (~marked | (depth > 0))
    launch, run = rows[keep], run[keep]
    if not len(launch):
        return _none()
    # captures in the order they start (each keeps its launches in start order)
    lts = col("events", "ts")[launch]
    new_run = np.r_[True, run[1:] != run[:-1]]
    capture = np.cumsum(new_run) - 1
    order = np.lexsort((lts, capture, lts[new_run][capture]))
    launch, lts, capture = launch[order], lts[order], capture[order]
    first = np.flatnonzero(np.r_[True, capture[1:] != capture[:-1]])
    offsets = np.r_[first, len(launch)].astype(np.int64)
    ends = lts + np.maximum(col("events", "dur")[launch], 0)
    return GraphCaptures(
        launch,
        kinds[launch],
        enclosing(trace, launch, derived.kind_mask(trace, [EventKind.cpu_op])),
        offsets,
        np.maximum.reduceat(ends, offsets[:-1]).astype(np.int64),
    )


def _none() -> GraphCaptures:
    z = np.zeros(0, np.int64)
    return GraphCaptures(z, np.zeros(0, np.uint8), z, np.zeros(1, np.int64), z)
