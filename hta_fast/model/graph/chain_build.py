"""The graph of a run of consecutive profiler steps of a rank (hta_fast.model.graph.chain): every
event of its steps (each step's own events and the GPU work carried over into it, as a window
holds them, hta_fast.model.graph.carried) under the window's edge rules. A run of one step is
its window.

Across the steps' boundary the rules need nothing new: a thread's first call of step k + 1
follows its last call of step k (cpu_sibling, the measured gap), and a GPU event launched in
step k that runs in step k + 1's window hangs from its launch and its stream predecessor,
replayed, instead of from the window's start at its measured time. Only the work carried into
the run's first step is carried as in a window.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...trace import Trace
from .carried import GpuRows
from .chain import Chain
from .dependency_graph import CPU_KINDS, GPU_WORK, build_graph


def merged(big: np.ndarray, small: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of a sorted, distinct `big` and any `small`, and a mask of
    those taken from small only: a merge, linear in big (a chain's rows run to millions,
    what its steps carry to thousands), where a sort of both would cost n log n."""
    small = np.unique(np.asarray(small, np.int64))
    pos = np.searchsorted(big, small)
    new = (
        (pos >= len(big)) | (big[np.minimum(pos, max(len(big) - 1, 0))] != small)
        if len(big)
        else np.ones(len(small), bool)
    )
    out = np.insert(big.astype(np.int64), pos[new], small[new])
    added = np.zeros(len(out), bool)
    added[pos[new] + np.arange(int(new.sum()))] = True
    return out, added


def _own_rows(
    all_rows: np.ndarray, step_of: np.ndarray, steps: np.ndarray
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The run's own rows and, per step, the positions in them of the step's rows (sorted).
    all_rows is sorted and the steps partition it, so the run's rows are a mask of it, and
    one stable grouping by step (near-sorted: a step's events are mostly together) gives
    each step's rows, still sorted."""
    in_run = np.flatnonzero(np.isin(step_of, steps))
    run_step = step_of[in_run]
    order = np.argsort(run_step, kind="stable")
    lo = np.searchsorted(run_step[order], steps, side="left")
    hi = np.searchsorted(run_step[order], steps, side="right")
    return all_rows[in_run], [order[a:b] for a, b in zip(lo, hi)]


def build_chain(
    trace: Trace,
    rank: int,
    all_rows: np.ndarray,
    step_of: np.ndarray,
    gpu: GpuRows,
    steps: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    window: bool,
) -> Optional[Chain]:
    """The chain of these consecutive steps (steps without events of their own are left
    out; None when none has any). all_rows: the rank's graph rows, step_of their steps; gpu:
    the GPU work that may be carried in."""
    own_all, positions = _own_rows(all_rows, step_of, steps)
    per_step = []
    for step, start, end, at in zip(steps, starts, ends, positions):
        if len(at):
            carried = gpu.carried_into(trace, own_all[at], int(step), int(start), int(end))
            per_step.append((int(step), int(start), at, carried))
    if not per_step:
        return None
    rows, carried_in = merged(own_all, np.concatenate([c for _, _, _, c in per_step]))
    local_of_own = np.flatnonzero(~carried_in)  # own_all[j] is graph event local_of_own[j]
    own = [(own_all[at], local_of_own[at], carried) for _, _, at, carried in per_step]
    return _assemble(
        trace,
        rank,
        rows,
        carried_in,
        [s for s, _, _, _ in per_step],
        np.array([s for _, s, _, _ in per_step], np.int64),
        own,
        window,
    )


def _assemble(
    trace: Trace,
    rank: int,
    rows: np.ndarray,
    carried_in: np.ndarray,
    steps: list[int],
    step_start: np.ndarray,
    own: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    window: bool,
) -> Chain:
    """The chain's graph and per-step nodes. own, per step: its own trace rows, their graph
    events and the rows carried into it."""
    kind = trace.column("events", "kind")
    ts = trace.column("events", "ts")
    pid, tid = trace.column("events", "pid"), trace.column("events", "tid")
    anchor, gpu_ev, gpu_of, members, member_of = [], [], [], [], []
    release_from = np.full(len(rows), -1, np.int64)
    # The thread that holds the first step's start runs on from step to step; every other
    # thread's calls of a step are a lane of their own, woken and joined within the step by
    # the cross-thread rules as in a window, not tied to their last call of the step before
    # by its measured gap.
    part = np.zeros(len(rows), np.int64)
    main = -1
    for k, (own_rows, local_own, carried) in enumerate(own):
        own_kind = kind[own_rows]
        cpu = local_own[np.isin(own_kind, CPU_KINDS)]
        pick = cpu if len(cpu) else local_own
        first = int(pick[np.argmin(ts[rows[pick]])])
        anchor.append(first)
        if k:  # what nothing else leads to hangs from its step's start, and moves with it
            release_from[local_own] = 2 * first
        else:
            main = int(rows[first])
        own_gpu = local_own[np.isin(own_kind, GPU_WORK)]
        gpu_ev.append(own_gpu)
        gpu_of.append(np.full(len(own_gpu), k, np.int64))
        member = merged(local_own, np.searchsorted(rows, carried))[0]
        members.append(member)
        member_of.append(np.full(len(member), k, np.int64))
        other = (pid[own_rows] != pid[main]) | (tid[own_rows] != tid[main])
        part[local_own[other]] = k
    start = int(step_start[0])
    try:
        graph = build_graph(
            trace,
            rows,
            start,
            carried=carried_in,
            release_from=release_from if len(own) > 1 else None,
            thread_part=part,
        )
    except ValueError:  # a step's start waits on its own work: release from the chain's start
        graph = build_graph(trace, rows, start, carried=carried_in, thread_part=part)
    # The first step starts at the graph's source; each later one at its anchor's start,
    # the anchor's measured start (as the graph holds it) less the step's start after it.
    source = 2 * len(rows)
    start_node = np.array([source] + [2 * a for a in anchor[1:]], np.int64)
    offset = graph.core.measured[start_node] - step_start
    return Chain(
        rank,
        trace,
        graph,
        list(steps),
        step_start,
        start_node,
        offset.astype(np.int64),
        np.concatenate(gpu_ev).astype(np.int64),
        np.concatenate(gpu_of),
        np.concatenate(members).astype(np.int64),
        np.concatenate(member_of),
        window,
    )


def whole_trace(trace: Trace, rank: int, rows: np.ndarray) -> Chain:
    """A trace without profiler steps as one window: every graph event, from the first
    event's start."""
    graph = build_graph(trace, rows)
    events = np.arange(len(rows), dtype=np.int64)
    gpu = events[np.isin(trace.column("events", "kind")[rows], GPU_WORK)]
    source = np.array([2 * len(rows)], np.int64)
    return Chain(
        rank,
        trace,
        graph,
        [None],
        np.array([graph.window_start], np.int64),
        source,
        np.zeros(1, np.int64),
        gpu,
        np.zeros(len(gpu), np.int64),
        events,
        np.zeros(len(events), np.int64),
        True,
    )
