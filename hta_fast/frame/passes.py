"""The inference passes a rank's annotations and Python frames mark (hta_fast.frame.
pass_patterns names them): one pass per outermost matching event of a phase, so that a
pass annotated twice (a record_function around a module call) or a module called inside
another counts once.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..trace import Trace
from . import derived
from .pass_patterns import PHASES, patterns_of

__all__ = ["Passes", "find_passes", "outermost"]


class Passes(NamedTuple):
    """One rank's passes, by start.

    row     int64, the row in trace.events of the event that marks each pass
    ts      int64 ns, its start
    end     int64 ns, its end (>= ts)
    phase   str, one of pass_patterns.PHASES, or "iteration" (hta_fast.frame.iterations)
    """

    row: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    phase: np.ndarray

    @staticmethod
    def of(trace: Trace, rows: np.ndarray, phase: np.ndarray) -> "Passes":
        """The passes marked by these events, sorted by start (then longest first)."""
        rows = np.asarray(rows, np.int64)
        ts = trace.column("events", "ts")[rows]
        end = ts + np.maximum(trace.column("events", "dur")[rows], 0)
        order = np.lexsort((-end, ts))
        return Passes(rows[order], ts[order], end[order], np.asarray(phase, str)[order])

    @staticmethod
    def empty() -> "Passes":
        none = np.zeros(0, np.int64)
        return Passes(none, none, none, np.zeros(0, str))


def find_passes(trace: Trace, phases: Sequence[str] = PHASES) -> Passes:
    """The passes of the given phases on one rank, by start."""
    rows, phase = [], []
    for name in phases:
        found = outermost(trace, _matching(trace, name))
        rows.append(found)
        phase.append(np.full(len(found), name))
    if not rows:
        return Passes.empty()
    return Passes.of(trace, np.concatenate(rows), np.concatenate(phase))


def _matching(trace: Trace, phase: str) -> np.ndarray:
    hits = []
    for p in patterns_of(phase):
        rows = derived.rows_named(trace, p.match, p.kinds)
        if p.exclude and len(rows):
            rows = np.setdiff1d(rows, derived.rows_named(trace, p.exclude, p.kinds))
        hits.append(rows)
    return np.unique(np.concatenate(hits)) if hits else np.zeros(0, np.int64)


def outermost(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Those of the rows (CPU events) that no other of them holds on the same thread (one
    of two identical spans: the first listed), sorted."""
    rows = np.asarray(rows, np.int64)
    if len(rows) < 2:
        return rows
    col = trace.column
    pid, tid = col("events", "pid")[rows], col("events", "tid")[rows]
    ts = col("events", "ts")[rows]
    end = ts + np.maximum(col("events", "dur")[rows], 0)
    # By thread, then start, the longest first: an event is held by an earlier one of its
    # thread that ends no sooner. A running maximum of the ends, as ranks that put each
    # thread above the one before it, finds that in one pass.
    order = np.lexsort((rows, -end, ts, tid, pid))
    n = len(rows)
    pos = np.arange(n)
    new_thread = np.r_[True, (pid[order][1:] != pid[order][:-1]) | (tid[order][1:] != tid[order][:-1])]
    thread = np.cumsum(new_thread) - 1
    # Rank of each end within all, ties ranked higher for the earlier (holding) event.
    end_rank = np.empty(n, np.int64)
    end_rank[np.lexsort((-pos, end[order]))] = pos
    key = thread * n + end_rank
    before = np.r_[-1, np.maximum.accumulate(key)[:-1]]
    held = before >= key
    return np.sort(rows[order][~held])
