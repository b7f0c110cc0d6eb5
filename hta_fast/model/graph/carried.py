"""The GPU work a step's graph carries over: events launched before the step that run in its
window (a GPU running behind its host), held as predecessors of the step's own GPU work
(docs/model.md, "Carried-over GPU work")."""

from __future__ import annotations

import dataclasses

import numpy as np

from ...trace import Trace
from .dependency_graph import GPU_WORK


@dataclasses.dataclass
class GpuRows:
    rows: np.ndarray
    step: np.ndarray
    start: np.ndarray
    end: np.ndarray
    launched: np.ndarray  # the launch call's ts; -1 where the trace holds no launch
    stream: np.ndarray  # (pid, stream) as one key

    def carried_into(
        self, trace: Trace, own: np.ndarray, step: int, start: int, end: int
    ) -> np.ndarray:
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
            ahead = (
                (len(keys) > 0)
                & (keys[pos] == self.stream[blind])
                & (self.start[blind] < first[pos])
            )
            out = np.union1d(out, self.rows[blind[ahead]])
        return out


def _stream_key(trace: Trace, rows: np.ndarray) -> np.ndarray:
    return (trace.column("events", "pid")[rows].astype(np.int64) << 32) + trace.column(
        "events", "stream"
    )[rows].astype(np.int64)


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
    return GpuRows(
        gpu,
        trace.column("events", "step")[gpu],
        ts[gpu],
        ts[gpu] + np.maximum(trace.column("events", "dur")[gpu], 0),
        launched,
        _stream_key(trace, gpu),
    )
