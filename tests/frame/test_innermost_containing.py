"""frame.memory_events.innermost_containing against a brute-force search, on random nested
events over several threads (times near and far apart: one key per (thread, time), or the
ranks of the times where the span is too wide for one)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hta_fast.frame.memory_events import innermost_containing

FAR = 2**62


class _Events:
    """The columns innermost_containing reads, as a trace's events table holds them."""

    def __init__(self, ts, dur, pid, tid, parent):
        self.cols = {"ts": ts, "dur": dur, "pid": pid, "tid": tid, "parent": parent}

    def column(self, table: str, name: str) -> np.ndarray:
        assert table == "events"
        return self.cols[name]


def _nested(draw, start: int, end: int, parent: int, depth: int, out: list) -> None:
    """Children of [start, end): disjoint intervals inside it, each with its own children."""
    t = start
    while depth < 4 and t < end - 2 and draw(st.booleans()):
        a = draw(st.integers(t, end - 2))
        b = draw(st.integers(a + 1, end))
        out.append((a, b, parent))
        _nested(draw, a, b, len(out) - 1, depth + 1, out)
        t = b


@st.composite
def threads(draw):
    rows: list[tuple[int, int, int, int, int]] = []  # ts, end, pid, tid, parent
    far = draw(st.booleans())
    # far: two threads 2**62 ns apart, too far for one int64 key per (thread, time)
    for thread in range(draw(st.integers(1, 2 if far else 3))):
        offset = thread * (FAR if far else 1_000)
        local: list = []
        _nested(draw, 0, 200, -1, 0, local)
        base = len(rows)
        for a, b, parent in local:
            rows.append(
                (a + offset, b + offset, 7, 100 + thread, parent + base if parent >= 0 else -1)
            )
    if not rows:
        rows.append((0, 10, 7, 100, -1))
    return rows, far


def _depth(parent: np.ndarray, row: int) -> int:
    depth = 0
    while parent[row] >= 0:
        row, depth = int(parent[row]), depth + 1
    return depth


@settings(max_examples=150, deadline=None)
@given(threads(), st.data())
def test_the_innermost_holder_is_found(case, data):
    rows, far = case
    ts = np.array([r[0] for r in rows], np.int64)
    end = np.array([r[1] for r in rows], np.int64)
    pid = np.array([r[2] for r in rows], np.int64)
    tid = np.array([r[3] for r in rows], np.int64)
    parent = np.array([r[4] for r in rows], np.int64)
    events = _Events(ts, end - ts, pid, tid, parent)
    candidates = np.flatnonzero(
        np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
    )
    # Queries on the threads that have events, from before their first to after their last.
    n = data.draw(st.integers(1, 20))
    q_tid = np.array(
        data.draw(st.lists(st.sampled_from(sorted(set(tid.tolist()))), min_size=n, max_size=n))
    )
    shift = np.array(data.draw(st.lists(st.integers(-5, 205), min_size=n, max_size=n)), np.int64)
    q_ts = (q_tid - 100) * (FAR if far else 1_000) + shift
    got = innermost_containing(events, candidates, np.full(n, 7), q_tid, q_ts)
    for i, (t, q) in enumerate(zip(q_tid, q_ts)):
        holders = [c for c in candidates if tid[c] == t and ts[c] <= q < end[c]]
        # the innermost: the deepest (an event as long as its parent is nested in it)
        want = max(holders, key=lambda c: _depth(parent, c)) if holders else -1
        assert got[i] == want
