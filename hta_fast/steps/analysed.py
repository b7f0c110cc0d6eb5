"""The steps an analysis of one rank reads, decided once: which steps (those asked for, or
every step but the profiler's flush steps), their window on the timeline, and their time
as the TensorBoard plugin times steps.

The window runs from the first analysed step's CPU start to the last one's CPU end, moved
past the unrecorded head (frame.gpu_work.unrecorded_head: the GPU busy, as the trace opens,
on work it does not hold) and widened to the GPU work those steps launched. A rank without
steps is one step, -1, over its GPU work. The step time is the mean of the steps'
device-aware windows (step_windows.analysed_windows), and the utilization the GPU's busy
share of those windows: the figures the doctor, its report card and the CI gate print."""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from .. import ops
from ..frame.gpu_work import gpu_work, unrecorded_head
from ..trace import Trace
from .profiler_flush import flush_steps
from .step_windows import analysed_windows, window_totals

__all__ = ["AnalysedSteps", "analysed_steps"]


@dataclasses.dataclass(frozen=True)
class AnalysedSteps:
    """One rank's analysed steps (module doc).

    steps        step numbers, sorted ([-1] without steps: the whole trace is one step)
    starts       CPU start (ns) of each, by steps (a step recorded twice: its first start)
    has_steps    whether the trace has steps (ProfilerStep#N, or steps taken from elsewhere)
    left_out     profiler flush steps left out (hta_fast.steps.profiler_flush), when no
                 steps were asked for
    lo, hi       the window, ns
    head_cut     ns cut from the window's start by the unrecorded head
    step_time    mean device-aware window of the steps, ns (the window's length without)
    host_time    mean CPU duration of the steps, ns (the window's length without)
    utilization  the GPU's busy share of the steps' device-aware windows (None without
                 steps: the busy share of the window, which the caller measures)
    selected     per row of gpu_work(trace, None): it belongs to an analysed step
    """

    steps: np.ndarray
    starts: np.ndarray
    has_steps: bool
    left_out: tuple[int, ...]
    lo: int
    hi: int
    head_cut: int
    step_time: float
    host_time: float
    utilization: Optional[float]
    selected: np.ndarray


def analysed_steps(trace: Trace, steps: Optional[Sequence[int]]) -> Optional[AnalysedSteps]:
    """The analysed steps of one rank over the requested steps (None: every step but the
    profiler's flush steps); None when the rank has none of the requested steps. Decided
    once per trace and set of steps; the arrays come back read-only."""
    asked = None if steps is None else tuple(sorted({int(s) for s in steps}))
    found: Optional[AnalysedSteps] = trace.memo.get(
        ("steps.analysed", asked), lambda: _analysed(trace, steps), freeze=True
    )
    return found


def _analysed(trace: Trace, steps: Optional[Sequence[int]]) -> Optional[AnalysedSteps]:
    st_step = trace.column("steps", "step").astype(np.int64)
    st_ts = trace.column("steps", "ts")
    st_dur = np.maximum(trace.column("steps", "dur"), 0)
    keep = (
        np.ones(len(st_step), bool)
        if steps is None
        else np.isin(st_step, np.asarray(list(steps), np.int64))
    )
    if steps is not None and not keep.any():
        return None
    left_out: tuple[int, ...] = ()
    if steps is None:
        flushed = np.isin(st_step, flush_steps(trace))
        if flushed.any() and not flushed.all():
            left_out = tuple(int(s) for s in np.unique(st_step[flushed]))
            keep &= ~flushed
    st_step, st_ts, st_dur = st_step[keep], st_ts[keep], st_dur[keep]
    work = gpu_work(trace, None)
    if not len(st_step):
        lo = int(work.starts.min()) if len(work.rows) else 0
        hi = int(work.ends.max()) if len(work.rows) else 0
        return AnalysedSteps(
            np.array([-1], np.int64), np.array([0], np.int64), False, left_out, lo, hi, 0,
            float(hi - lo), float(hi - lo), None, np.ones(len(work.rows), bool),
        )  # fmt: skip
    # A step recorded twice (two ProfilerStep#N events) counts once, from its first start.
    uniq, first = np.unique(st_step, return_index=True)
    order = np.argsort(st_ts[first], kind="stable")
    values, starts = uniq[order], st_ts[first][order]
    by_value = np.argsort(values)
    values, starts = values[by_value], starts[by_value]
    selected = np.isin(trace.column("events", "step")[work.rows], values)
    lo, hi = int(st_ts.min()), int((st_ts + st_dur).max())
    head_cut = 0
    head = unrecorded_head(trace, work)
    if head is not None and head > lo:
        head_cut, lo = head - lo, head
    if selected.any():
        lo = min(lo, int(work.starts[selected].min()))
        hi = max(hi, int(work.ends[selected].max()))
    step_time, utilization = _device_aware(trace, uniq)
    return AnalysedSteps(
        values, starts, True, left_out, lo, hi, head_cut, step_time, float(st_dur.mean()),
        utilization, selected,
    )  # fmt: skip


def _device_aware(trace: Trace, steps: np.ndarray) -> tuple[float, float]:
    """(Mean length of these steps' device-aware windows, none before the unrecorded head
    (analysed_windows), the share of those windows' time the GPU is busy)."""
    win = analysed_windows(trace)
    keep = np.isin(win.step, steps)
    if not keep.any():
        return 0.0, 0.0
    windows = ops.union(win.ts[keep], win.end[keep])
    work = gpu_work(trace, None)
    busy = ops.union(work.starts, work.ends)
    length = float((windows.ends - windows.starts).sum())
    inside = float(window_totals(windows.starts, windows.ends, busy.starts, busy.ends).sum())
    return float(win.dur[keep].mean()), (inside / length if length > 0 else 0.0)
