"""Communication/computation overlap: how much of a rank's communication time is hidden
behind computation.

    comp_comm_overlap_pctg = |union(COMP) ∩ union(COMM)| / |union(COMM)| × 100

over the rank's GPU kernels (kernel_class COMP and COMM). A rank without communication has
no such share: its percentage is null and a note says so.

Side table "steps", the TensorBoard plugin's distributed view: per rank and step (each step
timed as the plugin times it, steps.step_windows), the time only computation
ran, computation and communication together, only communication, and neither ("other").
There, as in the plugin, communication is the collective kernels and the host calls of a
CPU-side collective library (gloo:*, which moves its data on host threads), and computation
is the other kernels, or, on a rank that ran no other kernel, its CPU operators (the step
breakdown's cpu_exec). NCCL's host calls (nccl:*) are not communication there: they only
queue the kernels, which are (the plugin counts their host span too).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from .. import ops
from .._arrow import array_of
from ..frame import derived, select
from ..frame.fields import NS, PCT
from ..frame.gpu_work import GpuWork, gpu_work
from ..frame.result import Result
from ..frame.select import Ranks, Steps, Streams, Window
from ..schema import EventKind, KernelClass
from ..steps.step_windows import StepWindows, step_windows
from ..trace import Trace
from ..traceset import TraceSet
from .tensorboard.step_breakdown import CATEGORIES, category_intervals

__all__ = ["comm_comp_overlap", "overlap_times"]

# Host calls of a collective library that runs on host threads: their span is the transfer.
CPU_SIDE_COLLECTIVE = r"^gloo:"
_HOST_OPS = (EventKind.cpu_op, EventKind.user_annotation)
_CPU_EXEC = CATEGORIES.index("cpu_exec")

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("comp_comm_overlap_pctg", pa.float64(), metadata=PCT),
        pa.field("comm_time", pa.int64(), metadata=NS),
        pa.field("overlap_time", pa.int64(), metadata=NS),
    ]
)
STEPS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("computation", pa.int64(), metadata={**NS, "description": "computation only"}),
        pa.field("overlap", pa.int64(), metadata={**NS, "description": "both at once"}),
        pa.field("communication", pa.int64(), metadata={**NS, "description": "communication only"}),
        pa.field("other", pa.int64(), metadata={**NS, "description": "neither (idle, copies)"}),
    ]
)


def comm_comp_overlap(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank: comp_comm_overlap_pctg (float64, null without communication), comm_time
    (length of the union of communication kernels) and overlap_time (the part of it during
    which computation runs), in int64 ns."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    per_step: dict[str, list] = {f.name: [] for f in STEPS}
    notes = []
    for rank, trace, mask in select.each_rank(traces, sel):
        w, cls, on, times = _sweep(trace, mask, sel.window)
        _steps(per_step, rank, step_windows(trace, mask, sel.window), *_step_intervals(
            trace, mask, sel.window, w.starts[on], w.ends[on], cls[on]
        ))  # fmt: skip
        comm, both = int(times[2] + times[3]), int(times[3])
        out["rank"].append(rank)
        out["comm_time"].append(comm)
        out["overlap_time"].append(both)
        out["comp_comm_overlap_pctg"].append(100.0 * both / comm if comm else None)
        if not comm:
            notes.append(f"rank {rank}: no communication kernels, so no overlap percentage")
    table = pa.table({f.name: array_of(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    steps_table = pa.table(
        {f.name: array_of(per_step[f.name], f.type) for f in STEPS}, schema=STEPS
    )
    return Result(
        "comm_comp_overlap",
        table,
        tables={"steps": steps_table},
        notes=notes,
        params={"selection": sel},
    )


def _step_intervals(
    trace: Trace,
    mask: Optional[np.ndarray],
    window: Optional[tuple[int, int]],
    starts: np.ndarray,
    ends: np.ndarray,
    cls: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distributed view's intervals (starts, ends, class 0 computation / 1
    communication): the kernels, with the CPU-side collectives' host calls as communication
    and, where no kernel computes, the CPU operators as computation."""
    col = trace.column
    host = derived.rows_named(trace, CPU_SIDE_COLLECTIVE, _HOST_OPS)
    if mask is not None:
        host = host[mask[host]]
    h_ts = col("events", "ts")[host]
    h_end = h_ts + np.maximum(col("events", "dur")[host], 0)
    if window is not None:
        h_ts, h_end = np.clip(h_ts, *window), np.clip(h_end, *window)
    parts = [(starts, ends, cls), (h_ts, h_end, np.ones(len(host), np.uint8))]
    # As the plugin, a rank that ran no computation kernel at all (not only in the selection).
    if not (gpu_work(trace, None).kclass == KernelClass.COMP).any():
        c_ts, c_end = category_intervals(trace, mask, window)[_CPU_EXEC]
        if window is not None:
            c_ts, c_end = np.clip(c_ts, *window), np.clip(c_end, *window)
        parts.append((c_ts, c_end, np.zeros(len(c_ts), np.uint8)))
    return (
        np.concatenate([p[0] for p in parts]).astype(np.int64),
        np.concatenate([p[1] for p in parts]).astype(np.int64),
        np.concatenate([p[2] for p in parts]).astype(np.uint8),
    )


def overlap_times(trace: Trace, window: Window = None) -> tuple[int, int]:
    """(comm_time, overlap_time) of one rank, as comm_comp_overlap gives them, without its
    per-step table (the doctor asks this of every rank)."""
    sel = select.Selection(window=window)
    comm = both = 0
    for _, t, mask in select.each_rank(trace, sel):
        times = _sweep(t, mask, sel.window)[3]
        comm, both = comm + int(times[2] + times[3]), both + int(times[3])
    return comm, both


def _sweep(
    trace: Trace, mask: Optional[np.ndarray], window: Window
) -> tuple[GpuWork, np.ndarray, np.ndarray, np.ndarray]:
    """The GPU work, its class (0 computation, 1 communication, 255 neither), which rows are
    either, and their class sweep (ops.class_sweep)."""
    w = gpu_work(trace, mask, window)
    cls = np.full(len(w.rows), 255, np.uint8)
    cls[w.kclass == KernelClass.COMP] = 0
    cls[w.kclass == KernelClass.COMM] = 1
    on = cls != 255
    return w, cls, on, ops.class_sweep(w.starts[on], w.ends[on], cls[on], 2)


def _steps(
    out: dict[str, list],
    rank: int,
    win: StepWindows,
    starts: np.ndarray,
    ends: np.ndarray,
    cls: np.ndarray,
) -> None:
    """Per window, the class sweep of the kernels clipped to it."""
    for step, lo, hi in zip(win.step.tolist(), win.ts.tolist(), win.end.tolist()):
        inside = (ends > lo) & (starts < hi)
        s, e = np.clip(starts[inside], lo, hi), np.clip(ends[inside], lo, hi)
        t = ops.class_sweep(s, e, cls[inside], 2)
        comp, comm, both = int(t[1]), int(t[2]), int(t[3])
        out["rank"].append(rank)
        out["step"].append(step)
        out["dur"].append(hi - lo)
        out["computation"].append(comp)
        out["overlap"].append(both)
        out["communication"].append(comm)
        out["other"].append(hi - lo - comp - comm - both)
