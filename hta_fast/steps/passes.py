"""The inference passes a rank's annotations and Python frames mark (hta_fast.frame.
pass_patterns names them): one pass per outermost matching event of a phase, so that a
pass annotated twice (a record_function around a module call) or a module called inside
another counts once.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ..frame import derived
from ..frame.capture_trace import added_rows
from ..trace import Trace
from .pass_patterns import PATTERNS, PHASES, patterns_of

__all__ = [
    "Passes",
    "find_passes",
    "may_mark",
    "outermost",
    "described",
    "module_calls_inside_serving",
]


class Passes(NamedTuple):
    """One rank's passes, by start.

    row     int64, the row in trace.events of the event that marks each pass
    ts      int64 ns, its start
    end     int64 ns, its end (>= ts)
    phase   str, one of pass_patterns.PHASES, or "iteration" (hta_fast.steps.iterations)
    pattern int64, index in pass_patterns.PATTERNS of the pattern that found it (-1: none)
    """

    row: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    phase: np.ndarray
    pattern: np.ndarray

    @staticmethod
    def of(trace: Trace, rows: np.ndarray, phase: np.ndarray, pattern: np.ndarray) -> "Passes":
        """The passes marked by these events, sorted by start (then longest first)."""
        rows = np.asarray(rows, np.int64)
        ts = trace.column("events", "ts")[rows]
        end = ts + np.maximum(trace.column("events", "dur")[rows], 0)
        order = np.lexsort((-end, ts))
        return Passes(
            rows[order],
            ts[order],
            end[order],
            np.asarray(phase, str)[order],
            np.asarray(pattern, np.int64)[order],
        )

    @staticmethod
    def empty() -> "Passes":
        none = np.zeros(0, np.int64)
        return Passes(none, none, none, np.zeros(0, str), none)


def find_passes(trace: Trace, phases: Sequence[str] = PHASES) -> Passes:
    """The passes of the given phases on one rank, by start. Events a capture trace added
    (frame.capture_trace) mark none: capturing a graph is not a pass."""
    rows, phase, pattern = [], [], []
    added = added_rows(trace)
    for name in phases:
        hits, which = _matching(trace, name)
        if added.any() and len(hits):
            keep = ~added[hits]
            hits, which = hits[keep], which[keep]
        found = outermost(trace, hits)
        if name == "forward" and len(found):
            found = found[~_inside_serving(trace, found)]
        rows.append(found)
        phase.append(np.full(len(found), name))
        pattern.append(which[np.searchsorted(hits, found)])
    if not rows:
        return Passes.empty()
    return Passes.of(trace, np.concatenate(rows), np.concatenate(phase), np.concatenate(pattern))


def may_mark(trace: Trace, phases: Sequence[str]) -> bool:
    """Whether some pattern of these phases matches a string of the trace's pool: a rank
    where none does marks no pass of them (find_passes finds none), told from the name
    flags alone (shared by ranks of one pool: derived.name_flags)."""
    return any(derived.name_flags(trace, p.match).any() for ph in phases for p in patterns_of(ph))


def module_calls_inside_serving(trace: Trace) -> int:
    """How many outermost module calls (forward-pattern matches) lie inside serving passes."""
    found = outermost(trace, _matching(trace, "forward")[0])
    return int(_inside_serving(trace, found).sum()) if len(found) else 0


def _inside_serving(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per row: whether it lies within a prefill, decode or denoising pass on its thread. A
    module called inside a serving step (vLLM's LogitsProcessor_0 beside a replayed graph,
    a pipeline's denoiser) is part of that step, never a forward pass of its own."""
    serving = np.concatenate(
        [outermost(trace, _matching(trace, p)[0]) for p in PHASES if p != "forward"]
    )
    if not len(serving):
        return np.zeros(len(rows), bool)
    col = trace.column
    tid, ts = col("events", "tid"), col("events", "ts")
    end = ts + np.maximum(col("events", "dur"), 0)
    inside = np.zeros(len(rows), bool)
    for thread in np.unique(tid[rows]):
        mine = tid[rows] == thread
        hold = serving[tid[serving] == thread]
        if not len(hold):
            continue
        hold = hold[np.argsort(ts[hold], kind="stable")]
        r = rows[mine]
        k = np.searchsorted(ts[hold], ts[r], side="right") - 1
        # Serving passes of a thread do not nest (outermost): the last to start before the
        # row holds it when it ends no earlier than the row.
        reach = np.maximum.accumulate(end[hold])
        inside[np.flatnonzero(mine)] = (k >= 0) & (reach[np.maximum(k, 0)] >= end[r])
    return inside


# Each pattern's index in PATTERNS (the first, as PATTERNS.index gives it), looked up once.
_INDEX = {p: i for i, p in reversed(list(enumerate(PATTERNS)))}


def _matching(trace: Trace, phase: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows a phase's patterns match, sorted, and the index in PATTERNS of the first
    pattern that matches each."""
    rows_of, index_of = [], []
    for p in patterns_of(phase):
        rows = derived.rows_named(trace, p.match, p.kinds)
        if p.exclude and len(rows):
            rows = np.setdiff1d(rows, derived.rows_named(trace, p.exclude, p.kinds))
        rows_of.append(rows)
        index_of.append(np.full(len(rows), _INDEX[p], np.int64))
    rows, index = np.concatenate(rows_of), np.concatenate(index_of)
    if not len(rows):
        return rows, index
    order = np.lexsort((index, rows))
    rows, index = rows[order], index[order]
    first = np.r_[True, rows[1:] != rows[:-1]]
    return rows[first], index[first]


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
    new_thread = np.r_[
        True, (pid[order][1:] != pid[order][:-1]) | (tid[order][1:] != tid[order][:-1])
    ]
    thread = np.cumsum(new_thread) - 1
    # Rank of each end within all, ties ranked higher for the earlier (holding) event.
    end_rank = np.empty(n, np.int64)
    end_rank[np.lexsort((-pos, end[order]))] = pos
    key = thread * n + end_rank
    before = np.r_[-1, np.maximum.accumulate(key)[:-1]]
    held = before >= key
    return np.sort(rows[order][~held])


def described(passes: Passes) -> str:
    """What the passes are, for a note: "4 denoise passes (<who records them>)", per phase."""
    parts = []
    for phase in dict.fromkeys(passes.phase.tolist()):
        mine = passes.phase == phase
        emitters = sorted({PATTERNS[int(i)].emitter for i in np.unique(passes.pattern[mine])})
        parts.append(f"{int(mine.sum())} {phase} passes ({'; '.join(emitters)})")
    return ", ".join(parts)
