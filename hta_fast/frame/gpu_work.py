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

__all__ = ["GpuWork", "gpu_work", "unrecorded_head", "unrecorded_head_row", "HEAD_WAIT"]

# ns: a first recorded GPU event that starts this long after its launch returned, with
# nothing recorded on the GPU before it, waited behind work the trace does not hold.
HEAD_WAIT = 1_000_000


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


def unrecorded_head(trace: Trace, work: GpuWork) -> Optional[int]:
    """Where the GPU's recorded work begins (ns), when the trace opens with the GPU busy on
    work from before it: the first recorded GPU event started HEAD_WAIT or more after its
    launch returned, with nothing recorded on the GPU before it (vLLM's first pass in a
    trace: launched 0.5 ms into the step, run from 8.4 ms). None otherwise: the GPU's time
    before it is then idle time of the step, as recorded."""
    row = unrecorded_head_row(trace, work)
    return None if row is None else int(trace.column("events", "ts")[row])


def unrecorded_head_row(trace: Trace, work: GpuWork) -> Optional[int]:
    """The events row of the GPU event `unrecorded_head` begins at, or None."""
    if len(work.rows) == 0:
        return None
    first = int(np.argmin(work.starts))
    launch = int(trace.column("events", "partner")[work.rows[first]])
    if launch < 0:
        return None
    returned = int(trace.column("events", "ts")[launch]) + max(
        int(trace.column("events", "dur")[launch]), 0
    )
    start = int(work.starts[first])
    return int(work.rows[first]) if start - returned >= HEAD_WAIT else None
