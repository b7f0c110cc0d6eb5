"""Calls whose time is a one-off, not their kind's usual cost: the one owner of that rule for
the model, and of its numbers for the doctor (doctor.views.thresholds' one_off defaults).

A first cudaLaunchKernel that loads the CUDA module (modern/particle_transformer: 1.34 s
against 8.6 µs usually), a first call that compiles or initialises lazily: such a call lasts
ONE_OFF_RATIO times the median of the other calls of its name and ONE_OFF_MIN_NS or more, and
at most ONE_OFF_MAX_REPEATS calls of its name are such outliers (more are how the call
behaves, not a one-off). An edit that removes a kind's usual cost (launches costing nothing)
leaves a one-off inside a call of that kind: it does not name it.
"""

from __future__ import annotations

import numpy as np

from ...frame import derived
from ...trace import Trace

ONE_OFF_MIN_NS = 1_000_000
ONE_OFF_RATIO = 10.0
ONE_OFF_MAX_REPEATS = 2


def one_off_rows(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Which of these event rows (calls of any names) are one-offs of their name, judged
    among all the trace's events of that name. Worked out once per trace."""
    flags = derived.remember(trace, "one_off_events", lambda: _one_off(trace))
    return flags[rows] if len(rows) else np.zeros(0, bool)


def _one_off(trace: Trace) -> np.ndarray:
    """Per event row of the trace: whether it is a one-off of its name (names grouped by
    one sort, each group's median read off the sorted durations)."""
    name = trace.column("events", "name").astype(np.int64)
    dur = np.maximum(trace.column("events", "dur"), 0)
    out = np.zeros(len(name), bool)
    candidates = np.unique(name[(dur >= ONE_OFF_MIN_NS) & (name >= 0)])
    if not len(candidates):
        return out
    rows = np.flatnonzero(np.isin(name, candidates))
    rows = rows[np.lexsort((dur[rows], name[rows]))]
    n, d = name[rows], dur[rows].astype(np.float64)
    first = np.flatnonzero(np.r_[True, n[1:] != n[:-1]])
    size = np.diff(np.r_[first, len(rows)])
    group = np.repeat(np.arange(len(first)), size)
    median = (d[first + (size - 1) // 2] + d[first + size // 2]) / 2
    outlier = (d >= ONE_OFF_MIN_NS) & (d >= ONE_OFF_RATIO * np.maximum(median[group], 1.0))
    count = np.bincount(group, outlier, minlength=len(first))
    ok = (size >= 2) & (count <= ONE_OFF_MAX_REPEATS)
    out[rows[outlier & ok[group]]] = True
    return out
