"""The window of a slice (hta_fast.loading.slice_writer) and the rows it keeps.

A window is [lo, hi) in ns on the events' clock. Its events are the complete events that
start in it, plus the GPU work launched in it, which runs past its end. A flow is kept only
when every end of its arrow (its cat and id) is inside: an end bound to an event kept, or
an unbound end whose ts is in the window.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ..schema import GPU_KINDS
from ..trace import Trace

__all__ = ["Window", "trace_start", "steps_window", "window_rows", "flow_rows", "rows_in"]

Window = tuple[int, int]  # [lo, hi) in ns, the clock of the events' ts column


def trace_start(trace: Trace) -> Optional[int]:
    """The start of the trace's first complete event (ns), what relative windows count
    from; None for a trace without events."""
    ts = trace.column("events", "ts")
    return int(ts.min()) if len(ts) else None


def steps_window(trace: Trace, steps: Sequence[int]) -> Window:
    """The span of these steps: from the first one's start to the last one's end. A step the
    trace does not have raises ValueError naming it and the steps the trace has."""
    if not len(steps):
        raise ValueError("no step named")
    numbers = trace.column("steps", "step")
    missing = sorted(set(steps) - set(numbers.tolist()))
    if missing:
        raise ValueError(
            f"rank {trace.rank} has no step {_ranges(missing)} (its steps: "
            f"{_ranges(sorted(set(numbers.tolist()))) or 'none'})"
        )
    chosen = np.isin(numbers, np.asarray(steps))
    ts = trace.column("steps", "ts")[chosen]
    end = ts + trace.column("steps", "dur")[chosen]
    return int(ts.min()), int(end.max())


def _ranges(values: Sequence[int], shown: int = 6) -> str:
    """'3, 5-9, 12': sorted ints as runs, the first few of them."""
    runs: list[list[int]] = []
    for v in values:
        if runs and v == runs[-1][1] + 1:
            runs[-1][1] = v
        else:
            runs.append([v, v])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:shown])
    return text + (f" and {len(runs) - shown} more runs" if len(runs) > shown else "")


def window_rows(trace: Trace, window: Window) -> np.ndarray:
    """Rows of events in the window, in row order: those that start in it, and the GPU work
    whose launch does (it runs after the launch, often past the window's end)."""
    lo, hi = window
    ts = trace.column("events", "ts")
    inside = (ts >= lo) & (ts < hi)
    partner = trace.column("events", "partner")
    launched = np.flatnonzero(np.isin(trace.column("events", "kind"), GPU_KINDS) & (partner >= 0))
    inside[launched] |= inside[partner[launched]]
    return np.flatnonzero(inside)


def flow_rows(trace: Trace, window: Window, kept_events: np.ndarray) -> np.ndarray:
    """Rows of flows whose every end, of all the flows of its (cat, id), is inside."""
    lo, hi = window
    ts, event = trace.column("flows", "ts"), trace.column("flows", "event")
    inside = np.where(event >= 0, kept_events[np.maximum(event, 0)], (ts >= lo) & (ts < hi))
    ends_inside = np.flatnonzero(inside)
    if not len(ends_inside):
        return ends_inside
    ids, cats = trace.column("flows", "id"), trace.column("flows", "cat")
    # Only flows that share an id with an end inside can be kept: the grouping sorts those.
    known = np.unique(ids[ends_inside])
    at = np.minimum(np.searchsorted(known, ids), len(known) - 1)
    candidates = np.flatnonzero(known[at] == ids)
    order = candidates[np.lexsort((ids[candidates], cats[candidates]))]
    first = np.ones(len(order), bool)
    first[1:] = (np.diff(ids[order]) != 0) | (np.diff(cats[order]) != 0)
    starts = np.flatnonzero(first)
    whole = np.logical_and.reduceat(inside[order], starts)
    keep = np.repeat(whole, np.diff(np.append(starts, len(order))))
    return np.sort(order[keep])


def rows_in(trace: Trace, table: str, window: Window) -> np.ndarray:
    ts = trace.column(table, "ts")
    return np.flatnonzero((ts >= window[0]) & (ts < window[1]))
