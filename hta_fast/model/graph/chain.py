"""What the walk over a rank's steps hands out (hta_fast.model.graph.walk): one dependency graph
over one or more consecutive profiler steps, and per step what places the step in a replay of
that graph (docs/model.md, "Chains").

Per step a chain keeps its members (the graph events that span the step: its own events and
the GPU work carried into it) and a start node: the graph's source (the window's start) for
its first step, the start of the step's earliest CPU event (its ProfilerStep: its anchor) for
each later one. With a replay's node times:

    start_k = time(start node of step k) - (its measured time - measured start of step k)
    span_k  = max(start_k, latest node time of step k's members) - start_k

span_k with the measured times is the window's measured step (its latest event's end less
the ProfilerStep's start), with replayed times the replayed or predicted step.

A window (`window`: a step walked alone, or a whole trace without profiler steps) is a chain
of one step whose critical path runs back to the window's start node, release edge included;
a chained step's path stops at the step's replayed start.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from ...trace import Trace
from .dependency_graph import DependencyGraph


def step_label(step: Optional[int]) -> str:
    """How a note names a step: "step 3"; a trace without profiler steps is analysed whole
    (step None), and a note says so rather than "step None"."""
    return "the whole trace" if step is None else f"step {step}"


@dataclasses.dataclass
class Chain:
    """rank, trace and graph (over every step of the chain; window_start is its first step's
    start). Per step, in order: steps (its number; None: a whole trace without profiler
    steps), start (measured, ns on the trace's clock), start_node / start_offset (the node
    whose replayed time places the step's start, and its measured time less the step's
    start), own_gpu (graph events of the step's own GPU work; own_gpu_step says whose),
    members / member_step (graph events that span the step, grouped by step, increasing
    within it). window: the graph of one window alone (module doc)."""

    rank: int
    trace: Trace
    graph: DependencyGraph
    steps: list[Optional[int]]
    start: np.ndarray
    start_node: np.ndarray
    start_offset: np.ndarray
    own_gpu: np.ndarray
    own_gpu_step: np.ndarray
    members: np.ndarray
    member_step: np.ndarray
    window: bool

    @property
    def label(self) -> str:
        """ "step 3", or "steps 1-4" for a chain of several (for notes)."""
        if len(self.steps) == 1:
            return step_label(self.steps[0])
        return f"steps {self.steps[0]}-{self.steps[-1]}"

    def wait_notes(self) -> list[str]:
        """What the notes of an analysis of this chain say about its waits inferred from
        launch order (hta_fast.model.graph.runtime_waits) and from the measured times (held_waits),
        and how many their cuda_sync rows gave."""
        waits = self.graph.waits
        return [
            f"rank {self.rank} {self.label}: {note}"
            for note in (waits.read_note(), waits.inferred_note(), waits.held_note())
            if note
        ]

    def step_starts(self, times: np.ndarray) -> np.ndarray:
        """Each step's start (ns since the chain's start) in a replay with these node times."""
        return times[self.start_node] - self.start_offset

    def step_ends(
        self,
        times: np.ndarray,
        events: Optional[np.ndarray] = None,
        event_step: Optional[np.ndarray] = None,
    ) -> np.ndarray:
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

    def end_nodes(self, times: np.ndarray) -> np.ndarray:
        """Each step's end node, where its critical path begins: the first of its members'
        latest nodes (the start of an event that takes no time, else an end), or its start
        node where none ends after its start."""
        n = len(self.steps)
        ends_at = times[2 * self.members + 1]
        first_of = np.searchsorted(self.member_step, np.arange(n))
        has = first_of < np.append(first_of[1:], len(self.members))
        latest = np.full(n, np.iinfo(np.int64).min, np.int64)
        latest[has] = np.maximum.reduceat(ends_at, first_of[has]) if has.any() else []
        # A step's members are in node order: its first tie is the first of its latest nodes.
        tie = np.flatnonzero(ends_at == latest[self.member_step])
        first = (
            tie[np.searchsorted(self.member_step[tie], np.arange(n)).clip(0, len(tie) - 1)]
            if len(tie)
            else np.zeros(n, np.int64)
        )
        member = self.members[first] if len(self.members) else first
        node = np.where(times[2 * member] == latest, 2 * member, 2 * member + 1)
        return np.where(~has | (latest < self.step_starts(times)), self.start_node, node)

    def path_stops(self, times: np.ndarray) -> np.ndarray:
        """Per step, the time at or before which its critical path's walk back stops: the
        step's replayed start; for a window, just before it, so that its path takes in what
        happens at the start (its release edges from the window's start node)."""
        starts = self.step_starts(times)
        return starts - 1 if self.window else starts
