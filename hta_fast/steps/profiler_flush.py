"""Steps whose host time is mostly the profiler's own work.

`torch.profiler.profile.step()` at the end of the last recorded step stops the trace and
hands the collected events over: on a trace recorded with Python stacks that is tens of
milliseconds inside `torch/profiler/profiler.py` frames (stop_trace, _transit_action), which
the step's own work did not take and a faster model would not shorten. Such a step is
flagged, and the doctor leaves it out of its means (saying so).

A step is the profiler's when its ProfilerStep span spends PROFILER_SHARE or more inside
the outermost Python frames of torch/profiler/profiler.py on any thread.
"""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from .. import ops
from ..schema import EventKind
from ..trace import Trace

PROFILER_SHARE = 0.5
_FRAME = "torch/profiler/profiler.py"


def profiler_time(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per profiler step (trace.steps order): its step number and the ns of its host span
    spent inside torch/profiler/profiler.py frames (their union, clipped to the span)."""
    steps = trace.column("steps", "step").astype(np.int64)
    st_ts = trace.column("steps", "ts")
    st_end = st_ts + np.maximum(trace.column("steps", "dur"), 0)
    inside = np.zeros(len(steps), np.int64)
    if not len(steps):
        return steps, inside
    kind = trace.column("events", "kind")
    rows = np.flatnonzero(kind == EventKind.python_function)
    if not len(rows):
        return steps, inside
    names = trace.strings_at(trace.column("events", "name")[rows]).fill_null("")
    rows = rows[np.asarray(pc.match_substring(names, _FRAME), bool)]
    if not len(rows):
        return steps, inside
    ts = trace.column("events", "ts")[rows]
    busy = ops.union(ts, ts + np.maximum(trace.column("events", "dur")[rows], 0))
    for i in range(len(steps)):
        lo = np.maximum(busy.starts, st_ts[i])
        hi = np.minimum(busy.ends, st_end[i])
        inside[i] = int(np.maximum(hi - lo, 0).sum())
    return steps, inside


def flush_steps(trace: Trace) -> np.ndarray:
    """The profiler steps whose host span is PROFILER_SHARE or more the profiler's own
    work (module doc), sorted."""
    steps, inside = profiler_time(trace)
    span = np.maximum(trace.column("steps", "dur"), 0)
    flagged = (span > 0) & (inside >= PROFILER_SHARE * span)
    return np.unique(steps[flagged])
