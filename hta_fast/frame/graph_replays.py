"""Graph replays: a graph launch (cudaGraphLaunch, hipGraphLaunch, cuGraphLaunch and their
versioned or per-thread forms such as cudaGraphLaunch_v10000) queues every kernel, copy and
fill of a captured graph at once, and the profiler records them all under the launch's one
correlation id. The loader links each of them to the launch, so a replay is the launch row
and the GPU events linked to it, in GPU start order.

GRAPH_LAUNCH is the one place the launch API's names are spelled.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..trace import Trace
from . import derived
from .launches import launch_pairs

__all__ = ["GRAPH_LAUNCH", "GraphReplays", "graph_replays", "has_graph_launches"]

GRAPH_LAUNCH = r"^(cu|cuda|hip)Graph(Exec)?Launch(_\w+)?$"


class GraphReplays(NamedTuple):
    """One rank's graph replays, by launch start.

    launch    events row of each replay's graph launch
    offsets   replay i's GPU events are gpu[offsets[i]:offsets[i + 1]]
    gpu       the GPU event rows (kernels, memcpy, memset), per replay by GPU start
    gpu_time  per replay: the summed duration of its GPU events (ns)
    """

    launch: np.ndarray
    offsets: np.ndarray
    gpu: np.ndarray
    gpu_time: np.ndarray

    @property
    def total(self) -> int:
        """How many replays."""
        return len(self.launch)

    def replay_of_each(self) -> np.ndarray:
        """The replay index of each entry of `gpu`."""
        return np.repeat(np.arange(self.total), np.diff(self.offsets))


def has_graph_launches(trace: Trace) -> bool:
    """Whether any string of the trace names a graph launch: the cheap test that lets a
    trace without graphs skip everything here (one regular expression over the pool)."""
    return bool(derived.name_flags(trace, GRAPH_LAUNCH).any())


def graph_replays(trace: Trace) -> GraphReplays:
    """Every graph launch of the trace linked to GPU work, with that work. Remembered."""
    return derived.remember(trace, "graph_replays", lambda: _graph_replays(trace))


def _graph_replays(trace: Trace) -> GraphReplays:
    launch, gpu = launch_pairs(trace, None, include_memory_events=True)
    if has_graph_launches(trace):
        names = trace.column("events", "name")[launch]
        keep = derived.name_flags(trace, GRAPH_LAUNCH)[np.maximum(names, 0)] & (names >= 0)
        launch, gpu = launch[keep], gpu[keep]
    else:
        launch, gpu = launch[:0], gpu[:0]
    # launch_pairs orders by launch start, then launch, then GPU start: replays are runs
    first = np.flatnonzero(np.r_[True, launch[1:] != launch[:-1]]) if len(launch) else launch[:0]
    offsets = np.r_[first, len(launch)].astype(np.int64)
    dur = np.maximum(trace.column("events", "dur")[gpu], 0)
    gpu_time = np.add.reduceat(dur, first).astype(np.int64) if len(first) else np.zeros(0, np.int64)
    return GraphReplays(launch[first], offsets, gpu, gpu_time)
