"""Why a rank has no GPU work to diagnose: the GPU ran outside the analysed steps, the file
was cut short before its GPU events (read with recover=True), GPU activity was not traced
(the host called the CUDA runtime, the trace holds no GPU event), or the trace is CPU-only.
Such a rank is not healthy: there is nothing to judge on it."""

from __future__ import annotations

import numpy as np

from ..frame.gpu_work import gpu_work
from ..schema import EventKind
from ..trace import Trace


def no_gpu_reason(trace: Trace) -> str:
    """One line saying why a rank with no GPU work in its analysed steps has none."""
    outside = len(gpu_work(trace, None).rows)
    if outside:
        return (
            f"no GPU activity recorded in the analysed steps (the trace's {outside:,} GPU "
            "events run outside them)"
        )
    if trace.stat("truncated_file"):
        return (
            "no GPU activity recorded in what was read: the file was cut short and the events "
            "kept before the cut hold no GPU event (the GPU events may have been in the lost "
            "tail: the profiler writes the first of them well into the file)"
        )
    kind = trace.column("events", "kind")
    calls = int(np.count_nonzero(np.isin(kind, [EventKind.runtime, EventKind.driver])))
    if calls:
        return (
            f"no GPU activity recorded: {calls:,} CUDA runtime/driver calls but no kernel, "
            "memcpy or memset event (GPU activity was not traced: ProfilerActivity.CUDA off, "
            "or the GPU tracer failed)"
        )
    return "no GPU activity recorded: a CPU-only trace (no GPU event, no CUDA runtime call)"
