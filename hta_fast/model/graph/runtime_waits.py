"""What a cudaStreamWaitEvent or cudaEventSynchronize call waited on, in a trace without
cuda_sync rows.

CUPTI's cuda_sync rows (PyTorch ~2.1 on) name the waiting stream, the event's stream and the
correlation of the cudaEventRecord a wait is on. The runtime call itself carries only `cbid`
and `correlation`: without its row, neither stream nor the event is recorded. What is left is
the order of the calling thread's calls, and that is how PyTorch issues them: an event is
recorded on the stream whose work the host has just queued (`event.record()` after the
producer's kernels, `wait_stream` records on the stream it waits for), and a stream waits
right before the host queues the work that needs the wait. So, on the calling thread:

    the event      the last cudaEventRecord before the call (by correlation); in a trace
                   without any cudaEventRecord call (older profilers leave them out), one
                   recorded just before the call, as `wait_stream` does
    its stream     the stream of the last GPU work launched before that record
    waiting stream (cudaStreamWaitEvent) the stream of the first GPU work launched after it

An inference is kept only where the measured times allow the edge it makes (the work waited
for ended by the time the waiting kernel started, or the sync call returned); a wait whose
two streams are one needs no edge (the stream's own order holds it). The rest are counted
with the reason, for the notes that say what the trace lacks (WaitCalls.missing).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Optional

import numpy as np
import pyarrow.compute as pc

from ... import sync_calls
from ..._arrow import as_numpy
from ...frame import derived
from ...schema import EventKind
from ...trace import Trace
from . import held_waits

NO_RECORD = "no cudaEventRecord before it on its thread (the event)"
NO_LAUNCH_BEFORE = "no launch on its thread before its record (the event's stream)"
NO_LAUNCH_AFTER = "no launch on its thread after it (the waiting stream)"
CONTRADICTED = "an inferred wait that the measured times contradict"


@dataclasses.dataclass(frozen=True)
class WaitCalls:
    """What a graph's sync and stream-wait calls came to.

    calls         blocking syncs and stream waits among the graph's events
    stream_waits  cudaStreamWaitEvent (and HIP, driver) calls among them
    without_rows  calls that wait on an event (stream waits, event syncs) in a trace without
                  cuda_sync rows: what they waited on is inferred (module doc)
    inferred      of those, the ones whose stream and event the launch order gave (each an
                  edge, unless own_stream)
    own_stream    of the inferred stream waits, those on their own stream (no edge needed)
    unresolved    reason -> how many could not be inferred (an event sync among them waits
                  for every stream instead)
    records       whether the trace holds cudaEventRecord calls (else each wait's event is
                  taken as recorded just before it)
    held          GPU events held behind work on another stream, read off the measured times
                  (hta_fast.model.graph.held_waits), each a cross_stream edge
    held_with_call  of those, the ones with a stream-wait call before their launch
    read          stream waits and event syncs whose cuda_sync row named the stream and the
                  record they waited on (each an edge where that work is in the graph)
    """

    calls: int = 0
    stream_waits: int = 0
    without_rows: int = 0
    inferred: int = 0
    own_stream: int = 0
    unresolved: dict[str, int] = dataclasses.field(default_factory=dict)
    records: bool = True
    held: int = 0
    held_with_call: int = 0
    read: int = 0

    def missing(self) -> str:
        """Why the graph has no sync or stream-wait edge, for the notes: what the trace
        lacks."""
        if not self.calls:
            return "the trace has no sync or stream-wait events"
        head = f"the graph's {self.calls} sync/stream-wait calls give no edge"
        if not self.without_rows:
            return head + " (what they waited for is not among the graph's GPU work)"
        parts = self._unresolved()
        if self.own_stream:
            parts.append(f"{self.own_stream} wait on the stream that waits, which orders nothing")
        if self.inferred > self.own_stream:
            parts.append(
                f"{self.inferred - self.own_stream} wait for a stream with no work before "
                "the record"
            )
        return (
            f"{head}: without cuda_sync rows (the trace has none) a call's args hold only "
            "cbid and correlation, neither the waiting stream nor the event (a cuda_sync row's "
            "stream, wait_on_stream, wait_on_cuda_event_record_corr_id); by the calling "
            f"thread's launch order, of the {self.without_rows} that wait on an event, "
            + "; ".join(parts)
        )

    def read_note(self) -> str:
        """How many waits the trace's cuda_sync rows gave ("" where none)."""
        if not self.read:
            return ""
        return (
            f"{self.read} stream waits and event syncs read from their cuda_sync rows (the "
            "waiting stream, the event's stream and record)"
        )

    def held_note(self) -> str:
        """A remark where GPU work was found held behind another stream ("" otherwise)."""
        if not self.held:
            return ""
        return (
            f"{self.held} GPU events sat ready, their stream idle, until work on another "
            f"stream of their device ended, and started within {held_waits_gap_us()} us of it: "
            f"each waits for that work in the graph ({self.held_with_call} with a stream-wait "
            "call before their launch, the rest by the measured times alone)"
        )

    def inferred_note(self) -> str:
        """A remark where waits were inferred and some gave an edge ("" otherwise)."""
        if self.inferred <= self.own_stream:
            return ""
        record = (
            "its cudaEventRecord"
            if self.records
            else "the call (the trace holds no cudaEventRecord call)"
        )
        rest = self._unresolved()
        return (
            f"the {self.without_rows} stream waits and event syncs have no cuda_sync row (the "
            f"trace has none); {self.inferred} were tied to streams by the calling thread's "
            "launch order (the event's stream: that of the last launch before "
            f"{record}; the waiting stream: that of the next launch)"
            + (f", {self.own_stream} of them to the stream that waits" if self.own_stream else "")
            + (f"; {sum(self.unresolved.values())} could not be: {'; '.join(rest)}" if rest else "")
        )

    def _unresolved(self) -> list[str]:
        return [f"{n} with {r}" for r, n in sorted(self.unresolved.items())]


def held_waits_gap_us() -> float:
    return held_waits.GAP / 1000


def infer_waits(
    calls: np.ndarray,
    kinds: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    is_gpu: np.ndarray,
    launch: np.ndarray,
    corr: np.ndarray,
    is_record: np.ndarray,
    records_traced: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Per call (graph events `calls`, SyncKind `kinds`: STREAM_WAIT or EVENT): the lane
    waited on, the correlation of its record, the waiting lane (stream waits; -1 otherwise)
    and "" where inferred, else the reason (module doc). Arrays are the graph's, per event:
    lane (a CPU event's thread, a GPU event's stream), launch (a GPU event's launching call,
    -1: none), corr (launch order), is_record (cudaEventRecord calls). records_traced=False
    (the trace holds no record call): each call's event is recorded just before it."""
    n = len(calls)
    wait_lane = np.full(n, -1, np.int64)
    wait_corr = np.full(n, -1, np.int64)
    target = np.full(n, -1, np.int64)
    reason = [""] * n
    if n == 0:
        return wait_lane, wait_corr, target, reason
    launched = np.flatnonzero(is_gpu & (launch >= 0) & (corr >= 0))
    launched = launched[np.argsort(corr[launched], kind="stable")]
    by_thread = lane[launch[launched]]
    records = np.flatnonzero(is_record & ~is_gpu & (corr >= 0))
    records = records[np.argsort(corr[records], kind="stable")]
    for thread in np.unique(lane[calls]):
        at = np.flatnonzero(lane[calls] == thread)
        own = launched[by_thread == thread]
        rec = records[lane[records] == thread]
        c = corr[calls[at]]
        if records_traced:
            k = np.searchsorted(corr[rec], c, side="left") - 1  # the last record before it
            rc = np.where(k >= 0, corr[rec[np.maximum(k, 0)]] if len(rec) else -1, -1)
        else:
            k, rc = np.zeros(len(at), np.int64), c
        j = np.searchsorted(corr[own], rc, side="left") - 1  # the last launch before it
        m = np.searchsorted(corr[own], c, side="right")  # the first launch after the call
        for q, i in enumerate(at):
            if k[q] < 0:
                reason[i] = NO_RECORD
            elif j[q] < 0:
                reason[i] = NO_LAUNCH_BEFORE
            elif kinds[i] == sync_calls.STREAM_WAIT and m[q] >= len(own):
                reason[i] = NO_LAUNCH_AFTER
            else:
                wait_lane[i], wait_corr[i] = lane[own[j[q]]], rc[q]
                if kinds[i] == sync_calls.STREAM_WAIT:
                    target[i] = lane[own[m[q]]]
    _drop_contradicted(
        calls, kinds, ts, dur, lane, is_gpu, corr, wait_lane, wait_corr, target, reason
    )
    return wait_lane, wait_corr, target, reason


def _drop_contradicted(
    calls: np.ndarray,
    kinds: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    is_gpu: np.ndarray,
    corr: np.ndarray,
    wait_lane: np.ndarray,
    wait_corr: np.ndarray,
    target: np.ndarray,
    reason: list[str],
) -> None:
    """Unsets the inferences whose edge (as the core builds it: the last GPU event on the
    waited lane launched before the record -> the first on the waiting lane launched after
    the call, or the sync call's end) the measured times contradict: the waited work ended
    after the waiter went on."""
    gpu = np.flatnonzero(is_gpu & (corr >= 0))
    per_lane = {}
    for ln in (
        np.unique(wait_lane[wait_lane >= 0]).tolist() + np.unique(target[target >= 0]).tolist()
    ):
        if ln not in per_lane:
            ev = gpu[lane[gpu] == ln]
            per_lane[ln] = ev[np.argsort(corr[ev], kind="stable")]
    end = ts + dur
    for i in np.flatnonzero(wait_lane >= 0):
        ev = per_lane[int(wait_lane[i])]
        k = int(np.searchsorted(corr[ev], wait_corr[i], side="left")) - 1
        if k < 0:
            continue  # nothing ran on that stream before the record: no edge, nothing wrong
        done = end[ev[k]]
        if kinds[i] == sync_calls.STREAM_WAIT:
            if target[i] == wait_lane[i]:
                continue
            nxt = per_lane[int(target[i])]
            m = int(np.searchsorted(corr[nxt], corr[calls[i]], side="right"))
            ok = m >= len(nxt) or done <= ts[nxt[m]]
        else:
            ok = done <= end[calls[i]]
        if not ok:
            wait_lane[i] = wait_corr[i] = target[i] = -1
            reason[i] = CONTRADICTED


def summary(
    calls: int,
    stream_waits: int,
    kinds: np.ndarray,
    wait_lane: np.ndarray,
    target: np.ndarray,
    reason: list[str],
    records: bool = True,
) -> WaitCalls:
    """The WaitCalls of a graph whose inferred calls came out so."""
    done = np.array([not r for r in reason], bool)
    own = done & (kinds == sync_calls.STREAM_WAIT) & (target == wait_lane)
    return WaitCalls(
        calls=calls,
        stream_waits=stream_waits,
        without_rows=len(reason),
        inferred=int(done.sum()),
        own_stream=int(own.sum()),
        unresolved=dict(collections.Counter(r for r in reason if r)),
        records=records,
    )


def records_traced(trace: Trace) -> bool:
    """Whether the trace holds any event record call (older profilers leave them out)."""

    def compute() -> bool:
        flags = pc.match_substring_regex(trace.strings, sync_calls.RECORD)
        flags = np.asarray(as_numpy(flags), bool)
        if not flags.any():
            return False
        names = trace.column("events", "name")
        return bool(flags[names[names >= 0]].any())

    return bool(derived.remember(trace, ("model", "records_traced"), compute))


def waits_without_rows(
    trace: Trace,
    rows: np.ndarray,
    calls: np.ndarray,
    asked: np.ndarray,
    name_at: np.ndarray,
    uniq: np.ndarray,
    ts: np.ndarray,
    dur: np.ndarray,
    lane: np.ndarray,
    is_gpu: np.ndarray,
    launch: np.ndarray,
    corr: np.ndarray,
) -> Optional[tuple[np.ndarray, np.ndarray, np.ndarray, WaitCalls]]:
    """In a trace without cuda_sync rows, what its stream waits and event syncs waited on,
    inferred from launch order (module doc): per call of `calls`,
    the lane waited on, the record's correlation and the waiting lane (-1: no edge to add),
    and the summary. None where the trace has cuda_sync rows or no such call: a wait without
    its row there is one CUPTI did not report."""
    kind = trace.column("events", "kind")
    on_event = np.isin(asked[calls], (sync_calls.STREAM_WAIT, sync_calls.EVENT))
    open_calls = calls[on_event & (trace.column("events", "partner")[rows[calls]] < 0)]
    if not len(open_calls) or np.any(kind == EventKind.sync):
        return None
    record_of = sync_calls.is_record_of_names(trace.names_at(uniq))
    is_record = ~is_gpu & record_of[name_at]
    records = records_traced(trace)
    kinds = asked[open_calls]
    w_lane, w_corr, target, reason = infer_waits(
        open_calls,
        kinds,
        ts,
        dur,
        lane,
        is_gpu,
        launch,
        corr,
        is_record,
        records_traced=records,
    )
    tally = summary(
        len(calls),
        int(np.count_nonzero(asked[calls] == sync_calls.STREAM_WAIT)),
        kinds,
        w_lane,
        target,
        reason,
        records,
    )
    own = (kinds == sync_calls.STREAM_WAIT) & (target == w_lane)
    at = np.searchsorted(calls, open_calls)
    out = [np.full(len(calls), -1, np.int64) for _ in range(3)]
    keep = (w_lane >= 0) & ~own
    for arr, got in zip(out, (w_lane, w_corr, target)):
        arr[at[keep]] = got[keep]
    return out[0], out[1], out[2], tally
