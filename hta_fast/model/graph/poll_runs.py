"""A host that polls is waiting, not working: runs of non-blocking queries read as one wait.

A thread that spins on cudaEventQuery (or cudaStreamQuery, HIP's and the driver's) until
GPU work is done (DeepEP's dispatch, a hand-written wait loop) records a run of short calls
with untraced gaps between them. Taken as they are, the gaps are host time the step cannot
do without (rigid), so the critical path reads the wait as `untraced_host`, and making the
GPU work faster "saves" nothing. The producer records no cuda_sync row for a query (kineto
writes them for event, stream and context synchronizes and stream waits), so what a run
waited for is read off the times:

    a run      three or more queries on one thread, each (or the single-child frames
               holding only it: a Python `Event.query()`) a sibling of the next, with no
               launch, sync or event record on the thread between the first and the last,
               spanning 100 µs or more: the caching allocator asks a few events once each
               in a burst of microseconds (hta's trace_diff and ns_resolution traces hold
               hundreds of such bursts), a wait loop spins for as long as the GPU works
    its wait   the latest-ending GPU event launched before the run began that ended after
               the next-to-last query started and by the last one's end: the last query saw
               it done, the one before did not (no such event: not a wait, left as it is)

The model then reads the run as one event sync from its first query's start to its last
query's end, waiting for that GPU event: the queries before the last and what the thread
did between them (`body`) leave the graph (as helper threads' calls do), and the last query
and the frames holding it start where the run began (`start`).
"""

from __future__ import annotations

import re
from typing import NamedTuple, Optional

import numpy as np

from ... import sync_calls
from ...schema import CPU_KINDS, GPU_WORK_KINDS, EventKind
from ...trace import Trace

QUERY = re.compile(r"^(cuda|hip|cu)(Event|Stream)Query")
MIN_QUERIES = 3
MIN_SPAN_NS = 100_000


class PollRuns(NamedTuple):
    """The polling runs of a trace (module doc): per run, its last query (row), where it
    began (ns) and the GPU event it waited for (row); `moved`, every row that starts where
    its run began (the last query and the frames holding only it), and `moved_run`, its run;
    `body`, per event, whether it is inside a run before its last query."""

    last: np.ndarray
    start: np.ndarray
    target: np.ndarray
    moved: np.ndarray
    moved_run: np.ndarray
    body: np.ndarray


def poll_runs(trace: Trace) -> PollRuns:
    """The trace's polling runs (module doc); computed once per trace."""
    runs: PollRuns = trace.memo.get(("model.graph.poll_runs",), lambda: _find(trace), freeze=True)
    return runs


def _empty(n: int) -> PollRuns:
    z = np.zeros(0, np.int64)
    return PollRuns(z, z, z, z, z, np.zeros(n, bool))


def _find(trace: Trace) -> PollRuns:
    col = trace.column
    kind = col("events", "kind")
    n = len(kind)
    calls = np.flatnonzero(np.isin(kind, (EventKind.runtime, EventKind.driver)))
    if not len(calls):
        return _empty(n)
    names = col("events", "name")[calls]
    uniq, inv = np.unique(names, return_inverse=True)
    # to_pylist, not fill_null: pyarrow's fill_null imports pandas where it is installed
    texts = [t or "" for t in trace.strings_at(uniq).to_pylist()]
    is_query = np.array([bool(QUERY.match(t)) for t in texts], bool)[inv.reshape(-1)]
    queries = calls[is_query]
    if len(queries) < MIN_QUERIES:
        return _empty(n)
    ts, dur = col("events", "ts"), np.maximum(col("events", "dur"), 0)
    parent, partner = col("events", "parent"), col("events", "partner")
    pid, tid = col("events", "pid"), col("events", "tid")
    # What breaks a run: a launch (its partner is GPU work), a sync or an event record.
    waits = sync_calls.sync_kind_of_names(texts)[inv.reshape(-1)] != sync_calls.NONE
    record = sync_calls.is_record_of_names(texts)[inv.reshape(-1)]
    breaks = calls[((partner[calls] >= 0) & ~is_query) | waits | record]
    units = _units(queries, parent, kind)
    order = np.lexsort((ts[queries], tid[queries], pid[queries]))
    q, u = queries[order], units[order]
    same = (pid[q][1:] == pid[q][:-1]) & (tid[q][1:] == tid[q][:-1])
    same &= parent[u][1:] == parent[u][:-1]
    same &= ts[u][1:] >= ts[u][:-1] + dur[u][:-1]  # siblings, one after the other
    same &= ~_broken(breaks, pid, tid, ts, q[:-1], q[1:])
    cut = np.flatnonzero(~np.r_[True, same])
    bounds = np.r_[0, cut, len(q)]
    lo_q, hi_q = bounds[:-1], bounds[1:]
    span = ts[q[np.maximum(hi_q - 1, 0)]] + dur[q[np.maximum(hi_q - 1, 0)]] - ts[u[lo_q]]
    long_runs = (hi_q - lo_q >= MIN_QUERIES) & (span >= MIN_SPAN_NS)
    if not long_runs.any():
        return _empty(n)
    gpu = np.flatnonzero(np.isin(kind, GPU_WORK_KINDS))
    gpu_end = ts[gpu] + dur[gpu]
    by_end = np.argsort(gpu_end, kind="stable")
    launched = np.where(partner[gpu] >= 0, ts[np.maximum(partner[gpu], 0)], ts[gpu])
    last, start, target, moved, moved_run = [], [], [], [], []
    body = np.zeros(n, bool)
    threads: Optional[_ThreadRows] = None  # built for the first run kept
    for lo, hi in zip(lo_q[long_runs].tolist(), hi_q[long_runs].tolist()):
        first_u, last_q, last_u, prev_q = u[lo], q[hi - 1], u[hi - 1], q[hi - 2]
        begin = int(ts[first_u])
        # the GPU event the last query saw done (module doc)
        a = np.searchsorted(gpu_end[by_end], ts[prev_q], "right")
        b = np.searchsorted(gpu_end[by_end], ts[last_q] + dur[last_q], "right")
        cand = by_end[a:b]
        cand = cand[launched[cand] < begin]
        if not len(cand):
            continue
        last.append(last_q)
        start.append(begin)
        target.append(gpu[cand[np.argmax(gpu_end[cand])]])
        chain = [last_q]
        while chain[-1] != last_u:
            chain.append(int(parent[chain[-1]]))
        moved += chain
        moved_run += [len(last) - 1] * len(chain)
        if threads is None:
            threads = _ThreadRows(np.flatnonzero(np.isin(kind, CPU_KINDS)), pid, tid, ts)
        inside = threads.between(int(pid[last_q]), int(tid[last_q]), begin, int(ts[last_u]))
        body[inside[ts[inside] + dur[inside] <= ts[last_u]]] = True
    if not last:
        return _empty(n)

    def as_array(values: list[int]) -> np.ndarray:
        return np.asarray(values, np.int64)

    return PollRuns(
        as_array(last),
        as_array(start),
        as_array(target),
        as_array(moved),
        as_array(moved_run),
        body,
    )


class _ThreadRows:
    """CPU rows by thread and start, to find a thread's rows starting in [a, b)."""

    def __init__(self, rows: np.ndarray, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray):
        order = np.lexsort((ts[rows], tid[rows], pid[rows]))
        self.rows, self.ts = rows[order], ts[rows[order]]
        p, t = pid[self.rows], tid[self.rows]
        edge = np.flatnonzero(np.r_[True, (p[1:] != p[:-1]) | (t[1:] != t[:-1]), True])
        self.span = {
            (int(p[lo]), int(t[lo])): (int(lo), int(hi)) for lo, hi in zip(edge[:-1], edge[1:])
        }

    def between(self, pid: int, tid: int, a: int, b: int) -> np.ndarray:
        lo, hi = self.span.get((pid, tid), (0, 0))
        i = lo + np.searchsorted(self.ts[lo:hi], a, "left")
        j = lo + np.searchsorted(self.ts[lo:hi], b, "left")
        return self.rows[i:j]


def _units(queries: np.ndarray, parent: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Each query lifted through the CPU frames that hold only it (a Python frame around a
    query): what is a sibling of the next query's unit."""
    children = np.bincount(parent[parent >= 0], minlength=len(parent))
    unit = queries.copy()
    for _ in range(16):
        p = parent[unit]
        up = (p >= 0) & np.isin(kind[np.maximum(p, 0)], CPU_KINDS)
        up &= children[np.maximum(p, 0)] == 1
        if not up.any():
            break
        unit = np.where(up, p, unit)
    return unit


def _broken(
    breaks: np.ndarray,
    pid: np.ndarray,
    tid: np.ndarray,
    ts: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
) -> np.ndarray:
    """Per pair of queries (a[i], b[i]) on one thread: whether a break lies between them."""
    out = np.zeros(len(a), bool)
    if not len(breaks) or not len(a):
        return out
    # the threads that query are few: one pass over the breaks for each
    threads = {(int(p), int(t)) for p, t in zip(pid[a].tolist(), tid[a].tolist())}
    for p, t in threads:
        mine = breaks[(pid[breaks] == p) & (tid[breaks] == t)]
        at = np.sort(ts[mine])
        pairs = np.flatnonzero((pid[a] == p) & (tid[a] == t))
        lo = np.searchsorted(at, ts[a[pairs]], "right")
        hi = np.searchsorted(at, ts[b[pairs]], "left")
        out[pairs] = hi > lo
    return out
