"""Which ranks and which events an analysis looks at.

Every analysis takes the same keywords: `ranks`, `steps`, `window`, `streams` (all
optional), or one `Selection` that holds them. Steps follow the profiler: a CPU event
belongs to the step whose ProfilerStep window holds its start, and a GPU event to the step
of the launch that queued it, so a kernel that runs past the step's end stays in its step.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np

# GPU_WORK_KINDS: re-exported for the callers that still read it here
from ..schema import GPU_KINDS, GPU_WORK_KINDS, EventKind  # noqa: F401
from ..trace import Trace
from ..traceset import TraceSet

# The selection keywords every analysis takes.
Ranks = Optional[Sequence[int]]
Steps = Optional[Sequence[int]]
Window = Optional[tuple[int, int]]
Streams = Optional[Sequence[int]]


@dataclasses.dataclass(frozen=True)
class Selection:
    """ranks    rank numbers (None: all)
    steps       profiler step numbers (None: all events, inside steps or not)
    window      (start, end) in ns on the trace's clock: events that overlap [start, end);
                interval analyses count only the part inside it
    streams     GPU stream ids (None: all); CPU events are kept
    before_last_step  drop the last profiler step and everything from its start on (GPU
                events by their launch's start) - the reference tool's default view
    """

    ranks: Optional[Sequence[int]] = None
    steps: Optional[Sequence[int]] = None
    window: Optional[tuple[int, int]] = None
    streams: Optional[Sequence[int]] = None
    before_last_step: bool = False

    def event_mask(self, trace: Trace) -> Optional[np.ndarray]:
        """Rows of trace.events kept, as a read-only bool array; None when every row is kept.
        Masks are remembered per trace: analyses called one after another on one selection
        (the compat facade's pattern) compute it once."""
        if (
            self.steps is None
            and self.window is None
            and self.streams is None
            and not self.before_last_step
        ):
            return None
        key = (
            "frame.select",
            "event_mask",
            _frozen(self.steps),
            _frozen(self.window),
            _frozen(self.streams),
            self.before_last_step,
        )
        mask: np.ndarray = trace.memo.get(key, lambda: self._compute_mask(trace), freeze=True)
        return mask

    def _compute_mask(self, trace: Trace) -> np.ndarray:
        col = trace.column
        kind = col("events", "kind")
        gpu = np.isin(kind, GPU_KINDS)
        keep = np.ones(len(kind), bool)
        if self.steps is not None:
            keep &= np.isin(col("events", "step"), np.asarray(list(self.steps), np.int32))
        if self.window is not None:
            # Events that overlap the window (a zero-length one: that starts in it), so a
            # kernel running into the window counts for the part inside it.
            lo, hi = self.window
            ts = col("events", "ts")
            end = ts + np.maximum(col("events", "dur"), 0)
            keep &= (ts < hi) & ((end > lo) | (ts >= lo))
        if self.streams is not None:
            keep &= ~gpu | np.isin(
                col("events", "stream"), np.asarray(list(self.streams), np.int32)
            )
        if self.before_last_step:
            cut = last_step_start(trace)
            if cut is not None:
                keep &= launch_start(trace) < cut
        return keep


def _frozen(value: Optional[Sequence[int]]) -> Optional[tuple[int, ...]]:
    return None if value is None else tuple(value)


def last_step_start(trace: Trace) -> Optional[int]:
    """Start (ns) of the last profiler step, or None with fewer than two steps."""
    starts = trace.column("steps", "ts")
    return int(starts.max()) if len(starts) >= 2 else None


def profiler_step_rows(trace: Trace) -> np.ndarray:
    """Rows of the CPU events named ProfilerStep#N that define the steps."""
    return trace.column("steps", "row")


def launch_start(trace: Trace) -> np.ndarray:
    """Per event: its own start for CPU events, its launch's start for GPU events. A GPU
    event without a launch in the trace gets the largest int64 (nothing to place it by),
    unless it has no correlation id but an External id that a CPU operator has (AMD
    microbenchmark kernels: pid/tid and an External id): then that operator's start, as the
    reference matches such rows."""
    ts = trace.column("events", "ts")
    kind = trace.column("events", "kind")
    partner = trace.column("events", "partner")
    gpu = np.isin(kind, GPU_KINDS)
    out = ts.copy()
    linked = gpu & (partner >= 0)
    out[linked] = ts[partner[linked]]
    lost = np.flatnonzero(gpu & (partner < 0))
    out[lost] = np.iinfo(np.int64).max
    by_ext = external_id_op(trace, lost)
    out[lost[by_ext >= 0]] = ts[by_ext[by_ext >= 0]]
    return out


def external_id_op(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per GPU event row without a correlation id: the first CPU operator with its External
    id (-1 where none, or where the event has a correlation id: its launch is what counts)."""
    out = np.full(len(rows), -1, np.int64)
    ext = trace.column("events", "external_id")
    uncorrelated = (trace.column("events", "correlation")[rows] < 0) & (ext[rows] >= 0)
    if not uncorrelated.any():
        return out
    ops = np.flatnonzero(trace.column("events", "kind") == EventKind.cpu_op)
    ops = ops[ext[ops] >= 0]
    if not len(ops):
        return out
    order = np.argsort(ext[ops], kind="stable")
    keys, first = np.unique(ext[ops][order], return_index=True)
    wanted = ext[rows[uncorrelated]]
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    found = keys[at] == wanted
    hit = np.flatnonzero(uncorrelated)
    out[hit[found]] = ops[order][first][at[found]]
    return out


def as_traceset(traces: Union[Trace, TraceSet]) -> TraceSet:
    return traces if isinstance(traces, TraceSet) else TraceSet({traces.rank: traces})


def selection_of(
    selection: Optional[Selection],
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
) -> Selection:
    """The Selection an analysis runs with: an explicit one, updated by any keywords."""
    base = selection or Selection()
    changes: dict[str, Any] = {
        k: v
        for k, v in dict(ranks=ranks, steps=steps, window=window, streams=streams).items()
        if v is not None
    }
    return dataclasses.replace(base, **changes) if changes else base


def each_rank(
    traces: Union[Trace, TraceSet], selection: Selection
) -> Iterator[tuple[int, Trace, Optional[np.ndarray]]]:
    """(rank, trace, event mask or None) for every selected rank, in rank order."""
    ts = as_traceset(traces)
    wanted = None if selection.ranks is None else set(selection.ranks)
    if wanted is not None and (missing := wanted - set(ts.ranks)):
        raise ValueError(f"no such rank(s): {sorted(missing)}; the traces hold ranks {ts.ranks}")
    for rank in ts.ranks:
        if wanted is None or rank in wanted:
            trace = ts[rank]
            yield rank, trace, selection.event_mask(trace)
