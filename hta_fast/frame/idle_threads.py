"""Threads that do no work of any step, which the model leaves out of its graphs
(hta_fast.model.graph.walk) and which never define a step or a pass (idle_thread_mask).
Two kinds, each a rule of its own:

- Background threads: a thread whose only top-level event spans most of the trace and that
  launches no GPU work (an idle progress-bar monitor's `wait`, a watchdog's sleep). Taken as
  a step's member, its end (the end of the trace) became the step's end, rigid, so that
  every what-if predicted "no change" on a decode trace.
- Helper threads: a thread whose every event is a runtime call that neither launches GPU
  work nor waits for it (a watchdog polling `cudaEventQuery`, a thread asking
  `cudaPointerGetAttributes` between long untraced stretches). Such a thread holds no other
  thread, but its calls end at arbitrary times: taken into the graph, one of them became the
  "waker" of the autograd thread on trace_diff/control, and its untraced 17.5 ms stretch
  the step's critical path.
"""

from __future__ import annotations

import numpy as np

from .. import sync_calls
from ..schema import CPU_KINDS, EventKind
from ..trace import Trace

SPAN_SHARE = 0.5  # of the trace's span (first event start to last event end)


def idle_thread_mask(trace: Trace) -> np.ndarray:
    """Per event, whether it is on a background or a helper thread (module doc)."""
    return background_mask(trace) | helper_mask(trace)


def background_mask(trace: Trace) -> np.ndarray:
    """Per event, whether it is on a background thread (module doc); read-only, computed
    once per trace."""
    mask: np.ndarray = trace.memo.get(
        ("frame.background_threads",), lambda: _background(trace), freeze=True
    )
    return mask


def _background(trace: Trace) -> np.ndarray:
    col = trace.column
    kind, parent = col("events", "kind"), col("events", "parent")
    ts, dur = col("events", "ts"), np.maximum(col("events", "dur"), 0)
    out = np.zeros(len(kind), bool)
    cpu = np.flatnonzero(np.isin(kind, CPU_KINDS))
    if not len(cpu):
        return out
    span = int((ts + dur).max() - ts.min())
    top = cpu[parent[cpu] < 0]
    pid, tid = col("events", "pid"), col("events", "tid")
    keys, first, counts = np.unique(
        np.stack([pid[top], tid[top]], axis=1), axis=0, return_index=True, return_counts=True
    )
    lone = top[first[counts == 1]]
    lone = lone[dur[lone] >= SPAN_SHARE * span]
    if not len(lone):
        return out
    launches = col("events", "partner")
    for row in lone:
        on = np.flatnonzero((pid[cpu] == pid[row]) & (tid[cpu] == tid[row]))
        if not (launches[cpu[on]] >= 0).any():
            out[cpu[on]] = True
    return out


def helper_mask(trace: Trace) -> np.ndarray:
    """Per event, whether it is on a helper thread (module doc); computed once per trace."""
    mask: np.ndarray = trace.memo.get(
        ("frame.helper_threads",), lambda: _helpers(trace), freeze=True
    )
    return mask


def _helpers(trace: Trace) -> np.ndarray:
    col = trace.column
    kind = col("events", "kind")
    out = np.zeros(len(kind), bool)
    cpu = np.flatnonzero(np.isin(kind, CPU_KINDS))
    # Work, or what holds work: anything but a runtime/driver call, a call that launched GPU
    # work (its partner), or one that waits (a sync, a stream wait, a copy). Only the calls
    # that are neither are named.
    work = ~np.isin(kind[cpu], (EventKind.runtime, EventKind.driver))
    work |= col("events", "partner")[cpu] >= 0
    calls = np.flatnonzero(~work)
    if not len(calls):
        return out
    uniq, inv = np.unique(col("events", "name")[cpu[calls]], return_inverse=True)
    waits = sync_calls.sync_kind_of_names(trace.names_at(uniq))
    work[calls] = waits[inv.reshape(-1)] != sync_calls.NONE
    if work.all():
        return out
    # One code per (pid, tid) from two one-dimensional uniques (a unique over rows of a
    # two-column array sorts them as raw bytes, several times slower on millions).
    pids, pid_of = np.unique(col("events", "pid")[cpu], return_inverse=True)
    tids, tid_of = np.unique(col("events", "tid")[cpu], return_inverse=True)
    thread_of = pid_of.reshape(-1).astype(np.int64) * len(tids) + tid_of.reshape(-1)
    busy = np.bincount(thread_of, weights=work, minlength=len(pids) * len(tids)) > 0
    out[cpu] = ~busy[thread_of]
    return out
