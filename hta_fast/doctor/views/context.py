"""What every cause reads about one rank, computed once: the analysed steps and their time
window, the GPU work (frame.gpu_work), its busy union, and the GPU-wide idle gaps with
the event that ends each one."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ... import ops
from ..._arrow import as_numpy, texts_at
from ...frame import derived
from ...frame.gpu_work import GpuWork, Holds, gpu_work
from ...model.graph.unrecorded_wait import unrecorded_holds
from ...schema import KernelClass
from ...steps.analysed import analysed_steps
from ...trace import Trace


@dataclasses.dataclass
class Gaps:
    """GPU-wide idle intervals of one rank inside its window, in time order.

    starts, ends  ns
    next_row      trace row of the GPU event that ends the gap; -1 for the gap after the
                  last GPU work
    host_wait     the launch call of that event returned after the gap began (the CPU had not
                  queued it yet); True for the gap after the last GPU work
    step_index    index into RankView.steps of the step the gap is charged to
    """

    starts: np.ndarray
    ends: np.ndarray
    next_row: np.ndarray
    host_wait: np.ndarray
    step_index: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return self.ends - self.starts

    @classmethod
    def empty(cls) -> "Gaps":
        return cls(
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, bool),
            np.zeros(0, np.int64),
        )


@dataclasses.dataclass
class RankView:
    """One rank as the doctor sees it.

    steps       analysed step numbers, sorted ([-1] when the trace has no steps: the whole
                trace is then one step)
    has_steps   whether the trace has steps (ProfilerStep#N events, or steps taken from
                elsewhere: Trace.steps_source)
    step_time   mean duration of the analysed steps (ns), the denominator of every share:
                their windows as the TensorBoard plugin times steps (a step starts at the
                later of its host start and the end of the step before it, and ends at the
                later of its host end and the end of the GPU work it launched: where the
                host runs ahead of the GPU, the GPU iteration; where the GPU keeps up, the
                host span), whatever the steps came from (a graph queued in a millisecond
                runs for 150); the window's length without steps
    host_time   mean CPU duration of the analysed steps (ns); step_time without steps
    utilization the GPU's busy share of the analysed steps' device-aware windows (those of
                step_time, overlaps counted once); busy time / window length without steps.
                The doctor's one utilization: its headline, the report's and the gate's
    compute_utilization  where communication kernels ran in the window: the share of it
                compute kernels ran (utilization scaled by compute's part of the busy time
                inside the window); None without communication
    left_out    profiler steps left out of the analysed ones because their host time is
                mostly the profiler's own work (hta_fast.steps.profiler_flush), when no
                steps were asked for
    head_cut    ns left out at the window's start: the trace opens with the GPU busy on
                work it does not hold (unrecorded_head)
    lo, hi      the window: from the first analysed step's start (or the first GPU work, if
                earlier) to the last one's end (or the end of its GPU work, if later)
    selected    per GPU work row (work.rows): it belongs to an analysed step
    work        every GPU work event overlapping the window, clipped to it
    busy        union of work (ops.Intervals)
    gaps        idle gaps inside the window (Gaps), less the time GPU work the trace does not
                hold kept the device busy (held)
    held        that time: model.graph.unrecorded_wait.unrecorded_holds inside the window
                (Holds, clipped), what the unrecorded_gpu_work finding charges
    """

    rank: int
    trace: Trace
    steps: np.ndarray
    has_steps: bool
    step_time: float
    lo: int
    hi: int
    work: GpuWork
    selected: np.ndarray
    work_step_index: np.ndarray
    busy: ops.Intervals
    gaps: Gaps
    host_time: float = 0.0
    left_out: tuple[int, ...] = ()
    utilization: float = 0.0
    compute_utilization: Optional[float] = None
    head_cut: int = 0
    held: Holds = Holds(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def span(self) -> int:
        return self.hi - self.lo

    @property
    def busy_time(self) -> int:
        return int((self.busy.ends - self.busy.starts).sum())

    def step_index_of(self, step_values: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Index into self.steps for each event: its own step when analysed, else the
        analysed step whose CPU window holds (or last began before) its time."""
        if not self.has_steps:
            return np.zeros(len(step_values), np.int64)
        idx = np.searchsorted(self.steps, step_values)
        idx_c = np.minimum(idx, len(self.steps) - 1)
        own = self.steps[idx_c] == step_values
        by_time = np.clip(
            np.searchsorted(self._starts(), times, side="right") - 1, 0, len(self.steps) - 1
        )
        return np.where(own, idx_c, by_time).astype(np.int64)

    def step_start(self, index: int) -> int:
        """CPU start (ns) of the analysed step at this index (first ProfilerStep#N event)."""
        return int(self._starts()[index])

    def _starts(self) -> np.ndarray:
        if self._step_starts is None:
            raise ValueError("this RankView has no step starts (views come from rank_view)")
        return self._step_starts

    _step_starts: Optional[np.ndarray] = dataclasses.field(default=None, repr=False)


def rank_view(rank: int, trace: Trace, steps: Optional[Sequence[int]]) -> Optional[RankView]:
    """The view of one rank over the requested steps (None: every step the trace has but
    the profiler's flush steps: hta_fast.steps.analysed); None when the rank has none of
    the requested steps."""
    chosen = analysed_steps(trace, steps)
    if chosen is None:
        return None
    all_work = gpu_work(trace, None)
    ev_step = trace.column("events", "step")
    lo, hi = chosen.lo, chosen.hi
    # Everything the GPU ran inside the window counts as busy, whichever step launched it.
    inside = (all_work.starts < hi) & (all_work.ends > lo) | (
        (all_work.starts == all_work.ends) & (all_work.starts >= lo) & (all_work.starts < hi)
    )
    work = GpuWork(
        all_work.rows[inside],
        np.clip(all_work.starts[inside], lo, hi),
        np.clip(all_work.ends[inside], lo, hi),
        all_work.kclass[inside],
        all_work.stream[inside],
    )
    view = RankView(
        rank=rank,
        trace=trace,
        steps=chosen.steps,
        has_steps=chosen.has_steps,
        step_time=chosen.step_time,
        host_time=chosen.host_time,
        lo=lo,
        hi=hi,
        work=work,
        selected=chosen.selected[inside],
        work_step_index=np.zeros(0, np.int64),
        busy=ops.union(work.starts, work.ends),
        gaps=Gaps.empty(),
        utilization=chosen.utilization or 0.0,
        left_out=chosen.left_out,
        head_cut=chosen.head_cut,
        _step_starts=chosen.starts,
    )
    view.work_step_index = view.step_index_of(ev_step[work.rows].astype(np.int64), work.starts)
    view.held = _held_inside(trace, lo, hi)
    view.gaps = _idle_gaps(view)
    if chosen.utilization is None:
        view.utilization = view.busy_time / view.span if view.span > 0 else 0.0
    comm = work.kclass == KernelClass.COMM
    if comm.any() and view.busy_time > 0:
        comp = work.kclass == KernelClass.COMP
        compute = ops.union(work.starts[comp], work.ends[comp])
        compute_time = float((compute.ends - compute.starts).sum())
        view.compute_utilization = view.utilization * compute_time / view.busy_time
    return view


def _held_inside(trace: Trace, lo: int, hi: int) -> Holds:
    """The waits behind unrecorded GPU work inside the window, clipped to it."""
    h = unrecorded_holds(trace)
    starts, ends = np.clip(h.starts, lo, hi), np.clip(h.ends, lo, hi)
    keep = ends > starts
    return Holds(h.rows[keep], starts[keep], ends[keep])


def _idle_gaps(view: RankView) -> Gaps:
    """Idle gaps of the GPU as a whole (all streams merged) inside the window, each with
    the GPU event that ends it and whether the host had queued that event yet."""
    trace, w = view.trace, view.work
    ts = trace.column("events", "ts")
    partner = trace.column("events", "partner")
    ev_step = trace.column("events", "step").astype(np.int64)
    if len(w.rows) == 0:
        empty = np.zeros(0, np.int64)
        starts = np.array([view.lo], np.int64) if view.span > 0 else empty
        ends = np.array([view.hi], np.int64) if view.span > 0 else empty
        return Gaps(
            starts,
            ends,
            np.full(len(starts), -1, np.int64),
            np.ones(len(starts), bool),
            np.zeros(len(starts), np.int64),
        )
    g = ops.group_gaps(np.zeros(len(w.rows), np.int64), w.starts, w.ends)
    first = int(np.argmin(w.starts))
    starts_a = np.asarray(g.starts, np.int64)
    ends_a = np.asarray(g.ends, np.int64)
    next_a = np.asarray(w.rows[g.next_index], np.int64)
    head_end = int(w.starts[first])
    tail_start = int(w.ends.max())
    if head_end > view.lo:
        starts_a = np.concatenate([[view.lo], starts_a])
        ends_a = np.concatenate([[head_end], ends_a])
        next_a = np.concatenate([[w.rows[first]], next_a])
    if view.hi > tail_start:
        starts_a = np.concatenate([starts_a, [tail_start]])
        ends_a = np.concatenate([ends_a, [view.hi]])
        next_a = np.concatenate([next_a, [-1]])
    # Up to a held event, the device ran work the trace does not hold (view.held): idle only
    # until the wait began.
    if len(view.held.rows):
        order = np.argsort(view.held.rows)
        pos = np.minimum(np.searchsorted(view.held.rows[order], next_a), len(order) - 1)
        held = view.held.rows[order][pos] == next_a
        ends_a = np.where(held, np.maximum(starts_a, view.held.starts[order][pos]), ends_a)
        # A blocking call kept waiting after the recorded work (sync_tails): idle only
        # after it returned.
        by_start = np.argsort(view.held.starts)
        k = np.searchsorted(view.held.starts[by_start], starts_a, "right") - 1
        tail_end = np.where(k >= 0, view.held.ends[by_start][np.maximum(k, 0)], starts_a)
        starts_a = np.minimum(np.maximum(starts_a, tail_end), ends_a)
        keep = ends_a > starts_a
        starts_a, ends_a, next_a = starts_a[keep], ends_a[keep], next_a[keep]
    has_next = next_a >= 0
    nr = np.maximum(next_a, 0)
    launch = partner[nr]
    # The work is queued when its launch call returns: a call still running when the GPU
    # went idle (a first launch loading the CUDA module) had not queued it yet.
    call = np.maximum(launch, 0)
    returned = ts[call] + np.maximum(trace.column("events", "dur")[call], 0)
    launch_ts = np.where(launch >= 0, returned, np.iinfo(np.int64).min)
    host_wait = ~has_next | (launch_ts > starts_a)
    step_vals = np.where(has_next, ev_step[nr], -2)
    step_index = view.step_index_of(step_vals, starts_a)
    return Gaps(starts_a, ends_a, next_a, host_wait, step_index)


def share_name_flags(traces: Sequence[Trace], patterns: Sequence[str]) -> None:
    """name_flags of these patterns on all these traces at once, remembered as name_flags
    remembers them: the ranks of a job share most of their strings, so each distinct string
    of all their pools is matched once and each pool reads its flags through its codes (on
    1,024 generated ranks: 7 patterns in 0.2 s instead of 0.9 s, one pool at a time)."""
    todo = [
        t for t in traces if any(not derived.remembered(t, ("name_flags", p)) for p in patterns)
    ]
    if len(todo) < 2:
        return
    pools = [t.strings for t in todo]
    encoded = pa.concat_arrays([p.cast(pa.large_string()) for p in pools]).dictionary_encode()
    codes = as_numpy(encoded.indices)
    bounds = np.cumsum([0] + [len(p) for p in pools])
    for pattern in patterns:
        hit = as_numpy(pc.match_substring_regex(encoded.dictionary, pattern))
        hit = np.asarray(hit, bool)
        for t, lo, hi in zip(todo, bounds[:-1], bounds[1:]):
            derived.remember(
                t, ("name_flags", pattern), functools.partial(_take, hit, codes[lo:hi])
            )


def _take(values: np.ndarray, at: np.ndarray) -> np.ndarray:
    return values[at]


def is_amd(trace: Trace) -> bool:
    """Whether the trace's runtime is HIP (AMD GPUs): its runtime calls are named hip*, and
    advice names HIP's calls and settings."""
    return bool(derived.name_flags(trace, r"^hip[A-Z]").any())


def names_of(trace: Trace, rows: np.ndarray) -> list[str]:
    return texts_at(trace.strings, trace.column("events", "name")[rows])


def escape(literal: str) -> str:
    return re.escape(literal)
