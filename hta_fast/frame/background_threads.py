"""Background threads: a thread whose only top-level event spans most of the trace and that
launches no GPU work (an idle progress-bar monitor's `wait`, a watchdog's sleep).

Such an event is no work of the step: taken as a step's member, its end (the end of the
trace) became the step's end, rigid, so that every what-if predicted "no change" on a decode
trace. The model leaves these threads out of its graphs (hta_fast.model.graph.walk); they
never define a step or a pass.
"""

from __future__ import annotations

import numpy as np

from ..schema import CPU_KINDS
from ..trace import Trace

SPAN_SHARE = 0.5  # of the trace's span (first event start to last event end)


def background_mask(trace: Trace) -> np.ndarray:
    """Per event, whether it is on a background thread (module doc); read-only, computed
    once per trace."""
    mask: np.ndarray = trace.memo.get(
        ("frame.background_threads",), lambda: _background(trace), freeze=True
    )
    return mask


def _background(trace: Trace) -> np.ndarray:
    col = trace.column
    kind, parent = col("events", "kind"), col("events", "parent")
    ts, dur = col("events", "ts"), np.maximum(col("events", "dur"), 0)
    out = np.zeros(len(kind), bool)
    cpu = np.flatnonzero(np.isin(kind, CPU_KINDS))
    if not len(cpu):
        return out
    span = int((ts + dur).max() - ts.min())
    top = cpu[parent[cpu] < 0]
    pid, tid = col("events", "pid"), col("events", "tid")
    keys, first, counts = np.unique(
        np.stack([pid[top], tid[top]], axis=1), axis=0, return_index=True, return_counts=True
    )
    lone = top[first[counts == 1]]
    lone = lone[dur[lone] >= SPAN_SHARE * span]
    if not len(lone):
        return out
    launches = col("events", "partner")
    for row in lone:
        on = np.flatnonzero((pid[cpu] == pid[row]) & (tid[cpu] == tid[row]))
        if not (launches[cpu[on]] >= 0).any():
            out[cpu[on]] = True
    return out
