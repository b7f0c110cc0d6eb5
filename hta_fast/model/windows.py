"""The windows a model runs over: each profiler step of each rank, or the whole trace of a rank
without steps. A step holds the CPU events inside it and the GPU events they launched.
step_groups gathers the ranks' windows of one step, for replaying them together."""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional, Union

import numpy as np

from ..analysis import select
from ..trace import Trace
from ..traceset import TraceSet
from .dependency_graph import DependencyGraph, build_graph, graph_rows


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
        for step, start in zip(steps, trace.column("steps", "ts")):
            if sel.steps is not None and int(step) not in sel.steps:
                continue
            rows = all_rows[step_of == step]
            if len(rows):
                yield Window(rank, int(step), trace, build_graph(trace, rows, int(start)))


def step_groups(traces: Union[Trace, TraceSet], sel: select.Selection
                ) -> Iterator[list[Window]]:
    """The windows of each profiler step, all selected ranks together (ranks without
    profiler steps form one group of whole traces), steps in order."""
    groups: dict[Optional[int], list[Window]] = {}
    for win in each_window(traces, sel):
        groups.setdefault(win.step, []).append(win)
    for step in sorted(groups, key=lambda s: (s is not None, s or 0)):
        yield groups[step]
