"""Consecutive profiler steps of a rank as one chain: one dependency graph over all of them, so
that a step starts where the step before it ends in the replay (docs/model.md, "Chains").

A chain's graph holds every event of its steps (each step's own events and the GPU work
carried over into it, as a window holds them, hta_fast.model.graph.windows) under the same edge
rules as a window's graph. Across the steps' boundary the rules need nothing new: a thread's
first call of step k + 1 follows its last call of step k (cpu_sibling, the measured gap), and
a GPU event launched in step k that runs in step k + 1's window hangs from its launch and its
stream predecessor, replayed, instead of from the window's start at its measured time. Only
the work carried into the chain's first step is carried as in a window.

Per step the chain keeps its members (the events whose nodes span the step: its own and the
GPU work carried into it) and an anchor (its earliest CPU event, which starts the measured
gap after the step's start). With a replay's node times:

    start_k = time(anchor_k start) - (measured anchor start - measured step start)
    span_k  = max(start_k, latest node time of step k's members) - start_k

span_k with the measured times is the window's measured step (its latest event's end less
the ProfilerStep's start), and with replayed times the replayed or predicted step. Steps of a
rank that are not consecutive in the selection form separate chains.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Union

import numpy as np

from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from .dependency_graph import CPU_KINDS, GPU_WORK, DependencyGraph, build_graph, graph_rows
from .windows import GpuRows, carry_candidates


@dataclasses.dataclass
class Chain:
    """rank, trace and graph (over every step of the chain; window_start is its first step's
    start). Per step, in order: step (its number), start (measured, ns on the trace's clock),
    anchor / anchor_offset (graph event whose start places the step's start, and its
    measured start less the step's start), own_gpu (graph events of the step's own GPU work,
    concatenated; own_gpu_step says whose), members / member_step (graph events that span
    the step)."""
    rank: int
    trace: Trace
    graph: DependencyGraph
    step: np.ndarray
    start: np.ndarray
    anchor: np.ndarray
    anchor_offset: np.ndarray
    own_gpu: np.ndarray
    own_gpu_step: np.ndarray
    members: np.ndarray
    member_step: np.ndarray

    def step_starts(self, times: np.ndarray) -> np.ndarray:
        """Each step's start (ns since the chain's start) in a replay with these node times."""
        return times[2 * self.anchor] - self.anchor_offset

    def step_ends(self, times: np.ndarray, events: Optional[np.ndarray] = None,
                  event_step: Optional[np.ndarray] = None) -> np.ndarray:
        """Each step's latest node time of its members (or of `events`, per `event_step`),
        no earlier than its start."""
        ev = self.members if events is None else events
        of = self.member_step if event_step is None else event_step
        end = self.step_starts(times).copy()
        np.maximum.at(end, of, times[2 * ev + 1])
        return end

    def spans(self, times: np.ndarray) -> np.ndarray:
        """Each step's length in a replay with these node times (the module doc's span_k)."""
        return self.step_ends(times) - self.step_starts(times)

    def measured_times(self) -> np.ndarray:
        """The measured node times, ns since the chain's start."""
        return self.graph.core.measured - self.graph.window_start


def _merged(big: np.ndarray, small: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values of a sorted, distinct `big` and any `small`, and a mask of
    those taken from small only: a merge, linear in big (a chain's rows run to millions,
    what its steps carry to thousands), where a sort of both would cost n log n."""
    small = np.unique(np.asarray(small, np.int64))
    pos = np.searchsorted(big, small)
    new = (pos >= len(big)) | (big[np.minimum(pos, max(len(big) - 1, 0))] != small) \
        if len(big) else np.ones(len(small), bool)
    out = np.insert(big.astype(np.int64), pos[new], small[new])
    added = np.zeros(len(out), bool)
    added[pos[new] + np.arange(int(new.sum()))] = True
    return out, added


def _runs(steps: np.ndarray, chosen: np.ndarray) -> list[np.ndarray]:
    """Indices into steps of each run of chosen steps consecutive in the trace's step order."""
    idx = np.flatnonzero(chosen)
    if not len(idx):
        return []
    breaks = np.flatnonzero(np.diff(idx) > 1) + 1
    return np.split(idx, breaks)


def each_chain(traces: Union[Trace, TraceSet], sel: select.Selection) -> Iterator[Chain]:
    """The chains of the selected steps, rank by rank (ranks without profiler steps have
    none: their whole trace is one window, hta_fast.model.graph.windows)."""
    for rank, trace, mask in select.each_rank(traces, sel):
        steps = trace.column("steps", "step")
        if len(steps) == 0:
            continue
        order = np.argsort(trace.column("steps", "ts"), kind="stable")
        steps = steps[order]
        starts = trace.column("steps", "ts")[order]
        ends = starts + np.maximum(trace.column("steps", "dur")[order], 0)
        chosen = np.ones(len(steps), bool) if sel.steps is None else \
            np.isin(steps, np.array(sorted(sel.steps), np.int64))
        all_rows = graph_rows(trace, mask)
        step_of = trace.column("events", "step")[all_rows]
        any_step = dataclasses.replace(sel, steps=None).event_mask(trace) \
            if sel.steps is not None else mask
        gpu = carry_candidates(trace, graph_rows(trace, any_step))
        for run in _runs(steps, chosen):
            chain = _chain(trace, rank, all_rows, step_of, gpu, steps[run], starts[run], ends[run])
            if chain is not None:
                yield chain


def _chain(trace: Trace, rank: int, all_rows: np.ndarray, step_of: np.ndarray, gpu: GpuRows,
           steps: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> Optional[Chain]:
    # The steps' own rows in one pass: all_rows is sorted and the steps partition it, so
    # the chain's own rows are a mask of it, and one stable grouping by step (near-sorted:
    # a step's events are mostly together) gives each step's rows, still sorted.
    in_chain = np.flatnonzero(np.isin(step_of, steps))
    own_all = all_rows[in_chain]
    chain_step = step_of[in_chain]
    order = np.argsort(chain_step, kind="stable")
    bounds = np.searchsorted(chain_step[order], steps, side="left"), \
        np.searchsorted(chain_step[order], steps, side="right")
    per_step = []
    for step, start, end, lo, hi in zip(steps, starts, ends, *bounds):
        if hi > lo:
            at = order[lo:hi]  # positions in own_all of the step's own rows, increasing
            carried = gpu.carried_into(trace, own_all[at], int(step), int(start), int(end))
            per_step.append((int(step), int(start), at, carried))
    if not per_step:
        return None
    rows, carried_in = _merged(own_all, np.concatenate([c for _, _, _, c in per_step]))
    local_of_own = np.flatnonzero(~carried_in)  # own_all[j] is graph event local_of_own[j]
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
    for k, (step, start, at, carried) in enumerate(per_step):
        own = own_all[at]
        local_own = local_of_own[at]
        own_kind = kind[own]
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
        member = _merged(local_own, np.searchsorted(rows, carried))[0]
        members.append(member)
        member_of.append(np.full(len(member), k, np.int64))
        other = (pid[own] != pid[main]) | (tid[own] != tid[main])
        part[local_own[other]] = k
    try:
        graph = build_graph(trace, rows, per_step[0][1], carried=carried_in,
                            release_from=release_from, thread_part=part)
    except ValueError:  # a step's start waits on its own work: release from the chain's start
        graph = build_graph(trace, rows, per_step[0][1], carried=carried_in, thread_part=part)
    # The anchors' measured starts, as the graph holds them (a carried event is cut at the
    # chain's start), less their steps' starts.
    offset = graph.core.measured[2 * np.array(anchor, np.int64)] - \
        np.array([s for _, s, _, _ in per_step], np.int64)
    return Chain(rank, trace, graph, np.array([s for s, _, _, _ in per_step], np.int64),
                 np.array([s for _, s, _, _ in per_step], np.int64),
                 np.array(anchor, np.int64), offset.astype(np.int64),
                 np.concatenate(gpu_ev).astype(np.int64), np.concatenate(gpu_of),
                 np.concatenate(members).astype(np.int64), np.concatenate(member_of))


def chain_groups(traces: Union[Trace, TraceSet], sel: select.Selection) -> Iterator[list[Chain]]:
    """The chains of all selected ranks that cover the same steps, to replay together."""
    groups: dict[tuple[int, ...], list[Chain]] = {}
    for chain in each_chain(traces, sel):
        groups.setdefault(tuple(chain.step.tolist()), []).append(chain)
    for key in sorted(groups):
        yield groups[key]
