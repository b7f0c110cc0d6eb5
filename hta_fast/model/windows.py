"""The windows a model runs over: each profiler step of each rank, or the whole trace of a rank
without steps. A step holds the CPU events inside it and the GPU events they launched, plus the
GPU work carried over: events launched before the step that run in its window (a GPU running
behind its host), as predecessors of the step's own GPU work (docs/model.md, "Carried-over GPU
work"). step_groups gathers the ranks' windows of one step, for replaying them together."""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Union

import numpy as np

from ..analysis import select
from ..trace import Trace
from ..traceset import TraceSet
from .dependency_graph import GPU_WORK, DependencyGraph, build_graph, graph_rows


@dataclasses.dataclass
class Window:
    rank: int
    step: Optional[int]  # None: the whole trace (it has no profiler steps)
    trace: Trace
    graph: DependencyGraph


def each_window(traces: Union[Trace, TraceSet], sel: select.Selection) -> Iterator[Window]:
    for rank, trace, mask in select.each_rank(traces, sel):
        steps = trace.column("steps", "step")
        if len(steps) == 0:
            rows = graph_rows(trace, mask)
            if len(rows):
                yield Window(rank, None, trace, build_graph(trace, rows))
            continue
        all_rows = graph_rows(trace, mask)
        step_of = trace.column("events", "step")[all_rows]
        gpu = carry_candidates(trace, all_rows)
        step_ends = trace.column("steps", "ts") + np.maximum(trace.column("steps", "dur"), 0)
        for step, start, end in zip(steps, trace.column("steps", "ts"), step_ends):
            if sel.steps is not None and int(step) not in sel.steps:
                continue
            own = all_rows[step_of == step]
            if len(own):
                carried = gpu.carried_into(int(step), int(start), int(end))
                rows = np.union1d(own, carried)
                graph = build_graph(trace, rows, int(start), carried=np.isin(rows, carried))
                yield Window(rank, int(step), trace, graph)


@dataclasses.dataclass
class _GpuRows:
    rows: np.ndarray
    step: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def carried_into(self, step: int, start: int, end: int) -> np.ndarray:
        """GPU events of other steps (launched before this one) running in [start, end)."""
        return self.rows[(self.step != step) & (self.end > start) & (self.start < end)]


def carry_candidates(trace: Trace, rows: np.ndarray) -> _GpuRows:
    """The GPU work among these rows, with its step and measured span."""
    gpu = rows[np.isin(trace.column("events", "kind")[rows], GPU_WORK)]
    ts = trace.column("events", "ts")[gpu]
    return _GpuRows(gpu, trace.column("events", "step")[gpu], ts,
                    ts + np.maximum(trace.column("events", "dur")[gpu], 0))


def step_groups(traces: Union[Trace, TraceSet], sel: select.Selection
                ) -> Iterator[list[Window]]:
    """The windows of each profiler step, all selected ranks together (ranks without
    profiler steps form one group of whole traces), steps in order."""
    groups: dict[Optional[int], list[Window]] = {}
    for win in each_window(traces, sel):
        groups.setdefault(win.step, []).append(win)
    for step in sorted(groups, key=lambda s: (s is not None, s or 0)):
        yield groups[step]
