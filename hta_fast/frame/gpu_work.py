"""The GPU work of one rank as intervals: its kernels, memcpy and memset events
(schema.GPU_WORK_KINDS), what every GPU-time analysis (temporal, idle_time,
kernel_breakdown, overlap, the TensorBoard plugin's metrics) and the doctor start from.
Worked out once per selection mask and shared (frame.derived)."""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..schema import GPU_WORK_KINDS
from ..trace import Trace
from . import derived
from .graph_replays import GRAPH_LAUNCH

__all__ = [
    "GpuWork",
    "Holds",
    "gpu_work",
    "ready_idle_waits",
    "unrecorded_head",
    "unrecorded_head_row",
    "HEAD_WAIT",
]

# ns: a GPU event that starts this long (beyond the trace's usual launch latency) after it
# was ready, with nothing recorded running on its device meanwhile, waited behind work the
# trace does not hold.
HEAD_WAIT = 1_000_000
# The usual launch latency into an idle device is read from this many such launches or more.
USUAL_FROM = 3


class GpuWork(NamedTuple):
    """GPU-work events of one rank, in trace row order.

    rows     row in trace.events
    starts   int64 ns
    ends     int64 ns, >= starts (negative durations count as zero; clipped to the window)
    kclass   uint8 hta_fast.KernelClass (COMP, COMM or MEM)
    stream   int32 stream id
    """

    rows: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    kclass: np.ndarray
    stream: np.ndarray


def gpu_work(
    trace: Trace, mask: Optional[np.ndarray], window: Optional[tuple[int, int]] = None
) -> GpuWork:
    """The kernels, memcpy and memset events of a trace kept by mask (None: all), as
    intervals clipped to window when given (the selection keeps events that overlap it).
    The arrays are read-only: for a selection's mask they are worked out once and shared."""
    w = derived.remember_under(trace, "gpu_work", mask, lambda: _gpu_work(trace, mask))
    if window is None:
        return w
    lo, hi = window
    starts = np.clip(w.starts, lo, hi)
    return w._replace(starts=starts, ends=np.maximum(np.clip(w.ends, lo, hi), starts))


def _gpu_work(trace: Trace, mask: Optional[np.ndarray]) -> GpuWork:
    rows = derived.remember(
        trace, "gpu_work_rows", lambda: np.flatnonzero(derived.kind_mask(trace, GPU_WORK_KINDS))
    )
    if mask is not None:
        rows = rows[mask[rows]]
    starts = trace.column("events", "ts")[rows]
    ends = starts + np.maximum(trace.column("events", "dur")[rows], 0)
    return GpuWork(
        rows,
        starts,
        ends,
        trace.column("events", "kernel_class")[rows],
        trace.column("events", "stream")[rows],
    )


class Holds(NamedTuple):
    """GPU events that sat ready on an idle device, as recorded, one per wait, by start.

    rows     row in trace.events of the held event (the first to start after the hold)
    starts   ns: when the hold began, the later of the event's launch returning and the
             end of the last recorded work on its device before it
    ends     ns: the held event's start
    """

    rows: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @property
    def total(self) -> int:
        return int((self.ends - self.starts).sum())


def ready_idle_waits(trace: Trace) -> Holds:
    """Where the GPU sat idle, as recorded, with launched work ready to run: an event whose
        launch had returned and whose device had finished every recorded event before it, yet
        which started HEAD_WAIT or more (beyond the trace's median launch latency into an idle
        device) later. Nothing recorded ran on the device meanwhile: either something the trace
        does not hold did (work queued before recording began, a stream made to wait on an event
        such work records, another process), or the trace's launch links or streams mislead.
        model.graph.unrecorded_wait judges which, from what the host did meanwhile; the head of
        a trace that opens so needs no more (unrecorded_head). Events without a launch in the
        trace, and those a graph launch queued after the trace's first, are not judged (their
    readiness is unknown). Worked out once per trace."""
    return derived.remember(trace, "ready_idle_waits", lambda: _holds(trace))


def _holds(trace: Trace) -> Holds:
    work = gpu_work(trace, None)
    empty = np.zeros(0, np.int64)
    if len(work.rows) == 0:
        return Holds(empty, empty, empty)
    device = trace.column("events", "pid")[work.rows]
    order = np.lexsort((work.rows, work.starts, device))
    rows, starts, ends, dev = work.rows[order], work.starts[order], work.ends[order], device[order]
    # The end of the device's recorded work before each event (its busy end so far).
    before = _device_busy_before(dev, ends)
    partner = trace.column("events", "partner")[rows]
    call = np.maximum(partner, 0)
    returned = trace.column("events", "ts")[call] + np.maximum(
        trace.column("events", "dur")[call], 0
    )
    # A graph replay's events wait on the graph's own edges, which the trace does not
    # record: their readiness is unknown but for the first GPU event of the trace.
    name = trace.column("events", "name")[call]
    by_graph = derived.name_flags(trace, GRAPH_LAUNCH)[np.maximum(name, 0)] & (name >= 0)
    by_graph[np.argmin(starts) if len(starts) else 0] = False
    launched = (partner >= 0) & ~by_graph
    ready = np.maximum(before, np.where(launched, returned, np.iinfo(np.int64).max))
    wait = starts - ready
    # A launch into an idle device takes microseconds; a GPU clock offset from the host's
    # shows as a steady latency on every such launch, which is no hold (judged from a few
    # launches at least: the one launch into an idle device may be the hold itself).
    idle_launch = launched & (before <= returned)
    usual = (
        max(float(np.median(wait[idle_launch])), 0.0) if idle_launch.sum() >= USUAL_FROM else 0.0
    )
    held = launched & (wait - usual >= HEAD_WAIT)
    return Holds(rows[held], ready[held], starts[held])


def _device_busy_before(device: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Per event, in (device, start) order: the latest end of the events before it on its
    device (int64 min for a device's first)."""
    low = np.iinfo(np.int64).min
    first = np.ones(len(device), bool)
    first[1:] = device[1:] != device[:-1]
    # A running maximum that restarts per device: offset each device's ends above all the
    # devices before it, accumulate, and take the offset away again.
    group = np.cumsum(first) - 1
    span = int(ends.max()) - int(ends.min()) + 1
    base = int(ends.min())
    shifted = (ends - base) + group.astype(np.int64) * span
    running = np.maximum.accumulate(shifted)
    prev = np.empty_like(running)
    prev[0] = low
    prev[1:] = running[:-1]
    out = prev - group.astype(np.int64) * span + base
    out[first] = low
    return out


def unrecorded_head(trace: Trace, work: GpuWork) -> Optional[int]:
    """Where the GPU's recorded work begins (ns), when the trace opens with the GPU busy on
    work from before it: the first recorded GPU event started HEAD_WAIT or more after its
    launch returned, with nothing recorded on the GPU before it (vLLM's first pass in a
    trace: launched 0.5 ms into the step, run from 8.4 ms). None otherwise: the GPU's time
    before it is then idle time of the step, as recorded."""
    row = unrecorded_head_row(trace, work)
    return None if row is None else int(trace.column("events", "ts")[row])


def unrecorded_head_row(trace: Trace, work: GpuWork) -> Optional[int]:
    """The events row of the GPU event `unrecorded_head` begins at, or None: the first
    recorded GPU event, when it sat ready with nothing recorded before it (ready_idle_waits)."""
    if len(work.rows) == 0:
        return None
    first = int(work.rows[int(np.argmin(work.starts))])
    return first if (ready_idle_waits(trace).rows == first).any() else None
