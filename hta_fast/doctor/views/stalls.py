"""One-off stalls: host events that held the GPU idle far longer than their kind usually
takes, and that do not recur.

A first launch that loads the CUDA module, a compile or autotune, a first-call allocation,
one blocking copy or a server waiting for its first request cost a trace once; a per-step
cost they are not, and the causes whose remedies change every step (launch overhead,
syncs, the loader) must not be charged with them.

For each host-wait gap (context.Gaps.host_wait) of Thresholds.one_off_min_us or more, the
innermost event on a launching thread that covers at least half of the gap is judged, then
its enclosing events while no verdict is reached (model.graph.one_off_calls judges each):

    one-off     it lasts at least one_off_min_us and one_off_ratio times the median of the
                other events of its name, and at most one_off_max_repeats events of that name
                (the outermost of nested ones) are such outliers; or it is the only event of
                its name and the name says one-time work (ONE_TIME: compiles, autotuning,
                module and cubin loading, lazy initialisation)
    recurring   its name has other events and it is not a one-off: stop, the gap belongs to
                the other causes
    no verdict  the only event of its name, not one-time work by name: judge its parent
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...frame import derived
from ...frame.launches import launch_pairs
from ...model.graph.one_off_calls import HOST_KINDS, ONE_OFF, ONE_TIME, UNKNOWN, verdicts
from .context import RankView
from .thresholds import Thresholds

# The name patterns the verdicts match (one-time work by name), matched for all ranks at once.
NAME_PATTERNS = (ONE_TIME,)


@dataclasses.dataclass
class Stalls:
    """The one-off stalls of one rank.

    rows      trace row of each stall event (the one judged one-off)
    inner     trace row of the innermost event covering the gap (the call that waited)
    starts, ends  the event's interval (ns)
    usual_ns  median duration of the other events of the stall's name (0: the only one)
    count     events of that name in the trace
    """

    rows: np.ndarray
    inner: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    usual_ns: np.ndarray
    count: np.ndarray

    @classmethod
    def empty(cls) -> "Stalls":
        z = np.zeros(0, np.int64)
        return cls(z, z, z, z, np.zeros(0, np.float64), z)


def launching_rows(view: RankView) -> np.ndarray:
    """Host event rows on the threads that launch this rank's GPU work, overlapping the
    view's window, in start order (remembered on the view)."""
    if "_launching_rows" not in view.__dict__:
        view.__dict__["_launching_rows"] = _launching_rows(view)
    return view.__dict__["_launching_rows"]


def _launching_rows(view: RankView) -> np.ndarray:
    trace = view.trace
    launches, _ = launch_pairs(trace, None)
    tid = trace.column("events", "tid")
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    rows = np.flatnonzero(
        derived.kind_mask(trace, HOST_KINDS)
        & np.isin(tid, np.unique(tid[launches]))
        & (ts <= view.hi)
        & (ts + dur >= view.lo)
    )
    return rows[np.argsort(ts[rows], kind="stable")]


def find_stalls(view: RankView, th: Thresholds) -> Stalls:
    """The one-off stalls of the view (the module doc), remembered on the view."""
    memo = view.__dict__.setdefault("_stalls", {})
    key = (th.one_off_min_us, th.one_off_ratio, th.one_off_max_repeats)
    if key not in memo:
        memo[key] = _find(view, th)
    return memo[key]


def _find(view: RankView, th: Thresholds) -> Stalls:
    g = view.gaps
    min_ns = th.one_off_min_us * 1000.0
    big = np.flatnonzero(g.host_wait & (g.lengths >= min_ns))
    if len(big) == 0 or th.one_off_ratio <= 0:
        return Stalls.empty()
    trace = view.trace
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    rows = launching_rows(view)
    rows = rows[dur[rows] >= min_ns / 2]  # only these can cover half of a long gap
    judge = _Judge(view, th)
    found: dict[int, int] = {}  # stall row -> innermost row
    for i in big:
        s, e = int(g.starts[i]), int(g.ends[i])
        over = rows[(ts[rows] < e) & (ts[rows] + dur[rows] > s)]
        cover = np.minimum(ts[over] + dur[over], e) - np.maximum(ts[over], s)
        over = over[cover * 2 >= e - s]
        if len(over) == 0:
            continue
        inner = int(over[np.lexsort((-ts[over], dur[over]))[0]])
        stall = judge.stall_at(inner)
        if stall >= 0:
            found.setdefault(stall, inner)
    if not found:
        return Stalls.empty()
    stall_rows = np.array(sorted(found, key=lambda r: ts[r]), np.int64)
    usual, count = zip(*(judge.usual(int(r)) for r in stall_rows))
    return Stalls(
        rows=stall_rows,
        inner=np.array([found[int(r)] for r in stall_rows], np.int64),
        starts=ts[stall_rows].astype(np.int64),
        ends=(ts[stall_rows] + dur[stall_rows]).astype(np.int64),
        usual_ns=np.asarray(usual, np.float64),
        count=np.asarray(count, np.int64),
    )


class _Judge:
    """Verdicts on host events by their name's other events (model.graph.one_off_calls, with
    the doctor's thresholds), walked up from the innermost event (the module doc)."""

    def __init__(self, view: RankView, th: Thresholds) -> None:
        trace = view.trace
        self.parent = trace.column("events", "parent")
        self.v = verdicts(
            trace, th.one_off_min_us * 1000.0, th.one_off_ratio, th.one_off_max_repeats
        )

    def usual(self, row: int) -> tuple[float, int]:
        """(median duration of the other events of the row's name, count of its name)."""
        return float(self.v.usual_ns[row]), int(self.v.same_name[row])

    def stall_at(self, inner: int) -> int:
        """The one-off stall event at or above this row, -1 for none."""
        row = inner
        while row >= 0:
            verdict = self.v.verdict[row]
            if verdict == ONE_OFF:
                return row
            if verdict != UNKNOWN:
                return -1
            row = int(self.parent[row])
        return -1
