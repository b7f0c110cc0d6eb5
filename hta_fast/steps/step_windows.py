"""The steps as the TensorBoard profiler plugin times them: each profiler step's host span,
extended to the end of the GPU work its launches queued.

Per rank, in time order, step i's window is

    start_i = max(host start_i, end_{i-1})
    end_i   = max(host end_i, last end of the GPU work launched in step i)  (>= start_i)

so windows never overlap and a step owns the GPU time its own work takes, even where that
runs on after the host moved on. The first step starts after any GPU work launched before
it (in no step) that ends before the step's own first GPU work. A rank without
ProfilerStep#N events gets one window, step -1, over its host events (or its GPU work).

analysed_windows() are those windows as every figure of a step reads them: none starts
before the unrecorded head (frame.gpu_work.unrecorded_head), the GPU's time on work the
trace does not hold, which is no step's.

window_totals() sums, per window, how much of a set of intervals (each weighted, or not)
lies inside it: the per-step numbers of every metric of this package come from it;
window_counts() counts the points (kernel starts) in each.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..frame import derived
from ..frame.gpu_work import gpu_work, unrecorded_head
from ..schema import EventKind
from ..trace import Trace

__all__ = [
    "StepWindows",
    "step_windows",
    "analysed_windows",
    "window_totals",
    "window_counts",
    "window_notes",
    "plugin_kept_steps",
]

# The host events that time a rank without steps (the plugin: operators and Python events).
_HOST_SPAN_KINDS = (EventKind.cpu_op, EventKind.user_annotation, EventKind.python_function)
# The plugin leaves a last step out whose launches queued under this share of the GPU
# events of the step before it (the profiler may have missed some of its kernels).
SHORT_LAST_STEP = 0.8


class StepWindows(NamedTuple):
    """One row per step of a rank, in time order.

    step        int64 step number (-1: the one window of a rank without steps)
    host_ts     int64 ns, the ProfilerStep event's start
    host_end    int64 ns, its end
    ts, end     int64 ns, the window (see the module's docstring)
    gpu_events  int64, GPU work (kernels, memcpy, memset) launched in the step
    """

    step: np.ndarray
    host_ts: np.ndarray
    host_end: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    gpu_events: np.ndarray

    @property
    def dur(self) -> np.ndarray:
        return self.end - self.ts

    @property
    def span(self) -> tuple[int, int]:
        """(first window's start, last window's end): the plugin's "all steps time"."""
        return (int(self.ts[0]), int(self.end[-1])) if len(self.ts) else (0, 0)


def step_windows(
    trace: Trace, mask: Optional[np.ndarray], window: Optional[tuple[int, int]] = None
) -> StepWindows:
    """The step windows of one rank, from its steps and GPU work kept by mask (None: all),
    clipped to window when given. Worked out once per selection mask."""
    w = derived.remember_under(
        trace, ("steps.step_windows",), mask, lambda: _step_windows(trace, mask)
    )
    if window is None:
        return w
    lo, hi = window
    ts = np.clip(w.ts, lo, hi)
    return w._replace(ts=ts, end=np.maximum(np.clip(w.end, lo, hi), ts))


def analysed_windows(trace: Trace) -> StepWindows:
    """The step windows of one rank (all its GPU work) with each start moved no earlier
    than the unrecorded head, when the trace opens on one (a window that ends before it is
    left empty): the windows the doctor's step time and the inference phases read."""
    win = step_windows(trace, None)
    head = unrecorded_head(trace, gpu_work(trace, None))
    if head is None:
        return win
    return win._replace(ts=np.minimum(np.maximum(win.ts, head), win.end))


def _step_windows(trace: Trace, mask: Optional[np.ndarray]) -> StepWindows:
    rows = trace.column("steps", "row")
    step = trace.column("steps", "step").astype(np.int64)
    host_ts = trace.column("steps", "ts")
    host_end = host_ts + np.maximum(trace.column("steps", "dur"), 0)
    if mask is not None:
        keep = mask[rows]
        step, host_ts, host_end = step[keep], host_ts[keep], host_end[keep]
    order = np.lexsort((step, host_ts))
    step, host_ts, host_end = step[order], host_ts[order], host_end[order]

    work = gpu_work(trace, mask)
    work_step = trace.column("events", "step")[work.rows].astype(np.int64)
    if len(step) == 0:
        return _one_window(trace, mask, work.starts, work.ends)

    # Last end and count of the GPU work each step launched.
    numbers, first = np.unique(step, return_index=True)
    at = np.searchsorted(numbers, work_step)
    at_ok = np.minimum(at, len(numbers) - 1)
    mine = (at < len(numbers)) & (numbers[at_ok] == work_step)
    idx = first[at_ok[mine]]  # the step row (time order) of each event launched in a step
    gpu_end = np.full(len(step), np.iinfo(np.int64).min, np.int64)
    gpu_start = np.full(len(step), np.iinfo(np.int64).max, np.int64)
    np.maximum.at(gpu_end, idx, work.ends[mine])
    np.minimum.at(gpu_start, idx, work.starts[mine])
    count = np.bincount(idx, minlength=len(step)).astype(np.int64)

    # GPU work launched before the steps (in none) and done before the first step's own.
    prev = int(host_ts[0])
    if count[0]:
        before = (work_step < 0) & (work.ends < gpu_start[0])
        if before.any():
            prev = max(prev, int(work.ends[before].max()))
    ts = np.empty(len(step), np.int64)
    end = np.empty(len(step), np.int64)
    for i in range(len(step)):  # one pass over the steps, not the events
        ts[i] = max(prev, int(host_ts[i]))
        end[i] = max(int(host_end[i]), int(gpu_end[i]) if count[i] else int(ts[i]), int(ts[i]))
        prev = int(end[i])
    return StepWindows(step, host_ts, host_end, ts, end, count)


def _one_window(
    trace: Trace, mask: Optional[np.ndarray], gpu_starts: np.ndarray, gpu_ends: np.ndarray
) -> StepWindows:
    """A rank without steps: one window over its host events, extended to its last GPU work
    (over its GPU work alone when it has no host events; none when it has neither)."""
    host = derived.kind_mask(trace, _HOST_SPAN_KINDS)
    if mask is not None:
        host = host & mask
    ts = trace.column("events", "ts")[host]
    ends = ts + np.maximum(trace.column("events", "dur")[host], 0)
    if len(ts):
        lo, hi = int(ts.min()), int(ends.max())
    elif len(gpu_starts):
        lo, hi = int(gpu_starts.min()), int(gpu_ends.max())
    else:
        empty = np.zeros(0, np.int64)
        return StepWindows(empty, empty, empty, empty, empty, empty)
    end = max(hi, int(gpu_ends.max())) if len(gpu_ends) else hi
    one = np.array([-1], np.int64)
    return StepWindows(
        one,
        np.array([lo], np.int64),
        np.array([hi], np.int64),
        np.array([lo], np.int64),
        np.array([end], np.int64),
        np.array([len(gpu_starts)], np.int64),
    )


def window_totals(
    win_ts: np.ndarray,
    win_end: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    weights: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Per window [win_ts[k], win_end[k]) (sorted, disjoint): the summed length of the parts
    of the intervals [starts[i], ends[i]) inside it (int64 ns), each times weights[i] when
    given (float64). Intervals may overlap each other; each counts on its own. One sorted
    search per interval, then a pass over the (interval, window) pairs that meet."""
    n = len(win_ts)
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    first = np.searchsorted(win_end, starts, side="right")  # the first window ending after
    stop = np.searchsorted(win_ts, ends, side="left")  # the windows starting before the end
    count = np.maximum(stop - first, 0)
    if n == 0 or not count.any():
        return np.zeros(n, np.float64 if weights is not None else np.int64)
    item = np.repeat(np.arange(len(starts)), count)
    offset = np.arange(len(item)) - np.repeat(np.cumsum(count) - count, count)
    win = first[item] + offset
    inside = np.minimum(ends[item], win_end[win]) - np.maximum(starts[item], win_ts[win])
    inside = np.maximum(inside, 0)
    if weights is None:
        out = np.zeros(n, np.int64)
        np.add.at(out, win, inside)
        return out
    return np.bincount(win, weights=inside * np.asarray(weights, np.float64)[item], minlength=n)


def window_counts(win_ts: np.ndarray, win_end: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Per window [win_ts[k], win_end[k]) (sorted, disjoint): how many of the points lie in
    it (int64)."""
    at = np.searchsorted(win_end, points, side="right")
    at_ok = np.minimum(at, max(len(win_ts) - 1, 0))
    inside = (at < len(win_ts)) & (points >= win_ts[at_ok]) if len(win_ts) else at < 0
    return np.bincount(at[inside], minlength=len(win_ts)).astype(np.int64)


def window_notes(
    rank: int,
    windows: StepWindows,
    trace: Optional[Trace] = None,
    mask: Optional[np.ndarray] = None,
) -> list[str]:
    """What a rank's windows leave to say: no steps at all, how the one window of a rank
    without ProfilerStep#N was chosen (with the trace: how much GPU work without a recorded
    launch it takes in, which the TensorBoard plugin leaves out), and the last steps the
    plugin would leave out of its overview (plugin_kept_steps)."""
    if len(windows.step) == 0:
        return [f"rank {rank}: no steps, host events or GPU work"]
    if windows.step[0] < 0:
        return [f"rank {rank}: {_one_window_note(windows, trace, mask)}"]
    kept = plugin_kept_steps(windows.gpu_events)
    if kept == len(windows.step):
        return []
    left = [int(s) for s in windows.step[kept:]]
    g = windows.gpu_events
    return [
        f"rank {rank}: the TensorBoard plugin leaves the last step{'s' if len(left) > 1 else ''} "
        f"{', '.join(map(str, left))} out of its overview (GPU events queued: "
        f"{', '.join(str(int(n)) for n in g[kept:])}; by the step before them: "
        f"{int(g[kept - 1]) if kept else 0}; their kernels may be missing); "
        f"{'they are' if len(left) > 1 else 'it is'} counted here"
    ]


def plugin_kept_steps(gpu_events: np.ndarray) -> int:
    """How many of a rank's steps, from the first, the TensorBoard plugin keeps in its
    overview: where any step queued GPU work (and there are two steps or more), it drops
    the steps after the last one that queued some, and that one too when it queued under
    SHORT_LAST_STEP of the GPU events of the step before it."""
    n = len(gpu_events)
    busy = np.flatnonzero(gpu_events > 0)
    if n < 2 or not len(busy):
        return n
    last = int(busy[-1])
    if last > 0 and gpu_events[last - 1] * SHORT_LAST_STEP > gpu_events[last]:
        return last
    return last + 1


def _one_window_note(
    windows: StepWindows, trace: Optional[Trace], mask: Optional[np.ndarray]
) -> str:
    said = (
        "no ProfilerStep#N: one window from the first host event to the later of the last "
        "host event's end and the last GPU work's end"
    )
    if trace is None:
        return said
    work = gpu_work(trace, mask)
    unlaunched = trace.column("events", "partner")[work.rows] < 0
    if not unlaunched.any():
        return said
    busy = int((work.ends - work.starts)[unlaunched].sum())
    past = int(windows.end[0] - windows.host_end[0])
    return (
        f"{said}: {int(unlaunched.sum()):,} GPU events ({busy / 1e3:,.1f} us) have no launch "
        f"in the trace, and the window runs {past / 1e3:,.1f} us past the host events; the "
        "TensorBoard plugin times such a trace by its host events and the work launched in "
        "them (--steps-from host, hta_fast.frame.with_steps_from(trace, 'host'))"
    )
