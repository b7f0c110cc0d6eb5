"""The windows a model runs over: each profiler step of each rank, or the whole trace of a rank
without steps. A step holds the CPU events inside it and the GPU events they launched, plus the
GPU work carried over: events launched before the step that run in its window (a GPU running
behind its host), as predecessors of the step's own GPU work (docs/model.md, "Carried-over GPU
work"). step_groups gathers the ranks' windows of one step, for replaying them together."""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Union

import numpy as np

from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from .dependency_graph import GPU_WORK, DependencyGraph, build_graph, graph_rows


@dataclasses.dataclass
class Window:
    rank: int
    step: Optional[int]  # None: the whole trace (it has no profiler steps)
    trace: Trace
    graph: DependencyGraph


def each_window(traces: Union[Trace, TraceSet], sel: select.Selection,
                whole_traces_only: bool = False) -> Iterator[Window]:
    """The windows of the selection, rank by rank, steps in order; whole_traces_only: only
    those of ranks without profiler steps (the steps being replayed in chains)."""
    for rank, trace, mask in select.each_rank(traces, sel):
        steps = trace.column("steps", "step")
        if whole_traces_only and len(steps):
            continue
        if len(steps) == 0:
            rows = graph_rows(trace, mask)
            if len(rows):
                yield Window(rank, None, trace, build_graph(trace, rows))
            continue
        all_rows = graph_rows(trace, mask)
        step_of = trace.column("events", "step")[all_rows]
        # Carried work comes from the steps before, selected or not.
        any_step = dataclasses.replace(sel, steps=None).event_mask(trace) \
            if sel.steps is not None else mask
        gpu = carry_candidates(trace, graph_rows(trace, any_step))
        step_ends = trace.column("steps", "ts") + np.maximum(trace.column("steps", "dur"), 0)
        for step, start, end in zip(steps, trace.column("steps", "ts"), step_ends):
            if sel.steps is not None and int(step) not in sel.steps:
                continue
            own = all_rows[step_of == step]
            if len(own):
                carried = gpu.carried_into(trace, own, int(step), int(start), int(end))
                rows = np.union1d(own, carried)
                graph = build_graph(trace, rows, int(start), carried=np.isin(rows, carried))
                yield Window(rank, int(step), trace, graph)


@dataclasses.dataclass
class GpuRows:
    rows: np.ndarray
    step: np.ndarray
    start: np.ndarray
    end: np.ndarray
    launched: np.ndarray  # the launch call's ts; -1 where the trace holds no launch
    stream: np.ndarray  # (pid, stream) as one key

    def carried_into(self, trace: Trace, own: np.ndarray, step: int, start: int,
                     end: int) -> np.ndarray:
        """GPU events of other steps running in [start, end) that were launched before it:
        their launch is before start or, where the trace holds no launch (recording began
        with work queued), they start before the step's own first GPU event on their stream."""
        near = (self.step != step) & (self.end > start) & (self.start < end)
        known = near & (self.launched >= 0)
        out = self.rows[known & (self.launched < start)]
        blind = np.flatnonzero(near & (self.launched < 0))
        if len(blind):
            own_gpu = own[np.isin(trace.column("events", "kind")[own], GPU_WORK)]
            keys, first = _first_per_stream(trace, own_gpu)
            if not len(keys):  # no own GPU work: nothing it could have been queued ahead of
                return out
            pos = np.minimum(np.searchsorted(keys, self.stream[blind]), max(len(keys) - 1, 0))
            ahead = (len(keys) > 0) & (keys[pos] == self.stream[blind]) & \
                (self.start[blind] < first[pos])
            out = np.union1d(out, self.rows[blind[ahead]])
        return out


def _stream_key(trace: Trace, rows: np.ndarray) -> np.ndarray:
    return (trace.column("events", "pid")[rows].astype(np.int64) << 32) + \
        trace.column("events", "stream")[rows].astype(np.int64)


def _first_per_stream(trace: Trace, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted stream keys of these GPU rows and the earliest start on each."""
    keys = _stream_key(trace, rows)
    ts = trace.column("events", "ts")[rows]
    uniq, inv = np.unique(keys, return_inverse=True)
    first = np.full(len(uniq), np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inv.reshape(-1), ts)
    return uniq, first


def carry_candidates(trace: Trace, rows: np.ndarray) -> GpuRows:
    """The GPU work among these rows, with its step, measured span, launch time and stream."""
    gpu = rows[np.isin(trace.column("events", "kind")[rows], GPU_WORK)]
    ts = trace.column("events", "ts")
    partner = trace.column("events", "partner")[gpu]
    launched = np.where(partner >= 0, ts[np.maximum(partner, 0)], -1)
    return GpuRows(gpu, trace.column("events", "step")[gpu], ts[gpu],
                    ts[gpu] + np.maximum(trace.column("events", "dur")[gpu], 0), launched,
                    _stream_key(trace, gpu))


def step_groups(traces: Union[Trace, TraceSet], sel: select.Selection,
                whole_traces_only: bool = False) -> Iterator[list[Window]]:
    """The windows of each profiler step, all selected ranks together (ranks without
    profiler steps form one group of whole traces), steps in order."""
    groups: dict[Optional[int], list[Window]] = {}
    for win in each_window(traces, sel, whole_traces_only):
        groups.setdefault(win.step, []).append(win)
    for step in sorted(groups, key=lambda s: (s is not None, s or 0)):
        yield groups[step]
