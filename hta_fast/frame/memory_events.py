"""The allocator's `[memory]` instant events, and the operator each happened in.

With `profile_memory=True` the profiler writes one instant event (ph i, name `[memory]`) per
allocation and per free of the caching allocator (or of the CPU allocator): `Bytes` is
positive for an allocation and negative for a free, `Addr` the block's address, `Total
Allocated` / `Total Reserved` the device's totals just after it, `Device Type` / `Device Id`
the device (c10's DeviceType: 0 CPU, 1 CUDA; ROCm builds report their GPUs as CUDA too).

An event happens in the innermost CPU operator (kind cpu_op) on its own thread whose span
[ts, ts + dur) holds its time: half-open, so an event at the instant one operator ends and
the next begins is the next one's, never both. Events outside every operator (the
optimizer's own code, a data loader's, the Python between operators) have none.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import numpy as np

from ..schema import EventKind
from ..trace import Trace
from . import derived

__all__ = ["MemoryEvents", "memory_events", "device_label", "innermost_containing"]

NAME = "[memory]"
# c10::DeviceType values a [memory] event carries for the devices people name.
_CPU, _CUDA, _HIP = 0, 1, 6


class MemoryEvents(NamedTuple):
    """The [memory] events of a trace in time order (ties keep file order), as arrays."""

    ts: np.ndarray  # ns
    pid: np.ndarray
    tid: np.ndarray
    bytes: np.ndarray  # signed: allocations > 0, frees < 0
    allocated: np.ndarray  # the device's Total Allocated after the event; -1 not recorded
    reserved: np.ndarray  # Total Reserved after it; -1 not recorded
    addr: np.ndarray
    device_type: np.ndarray
    device_id: np.ndarray
    op: np.ndarray  # the events row of the innermost operator around it; -1 none


def device_label(device_type: int, device_id: int) -> str:
    """How the TensorBoard plugin names a device: CPU, GPU0, GPU1, ..."""
    if device_type == _CPU:
        return "CPU"
    if device_type in (_CUDA, _HIP):
        return f"GPU{device_id}"
    return f"device type {device_type}:{device_id}"


def memory_events(trace: Trace) -> MemoryEvents:
    """The trace's [memory] events with a recorded size, in time order, each with the
    operator it happened in. Remembered per trace."""

    def compute() -> MemoryEvents:
        name_col = trace.column("instants", "name")
        wanted = _string_ids(trace, NAME)
        rows = np.flatnonzero(np.isin(name_col, wanted)) if len(wanted) else np.zeros(0, int)
        size = trace.column("instants", "bytes")[rows]
        # A [memory] event without Bytes says nothing about memory.
        has_size = _recorded(trace, "bytes", rows)
        rows, size = rows[has_size], size[has_size]
        ts = trace.column("instants", "ts")[rows]
        order = np.argsort(ts, kind="stable")
        rows, ts, size = rows[order], ts[order], size[order]
        pid = trace.column("instants", "pid")[rows]
        tid = trace.column("instants", "tid")[rows]
        ops = derived.kind_mask(trace, [EventKind.cpu_op])
        return MemoryEvents(
            ts=ts,
            pid=pid,
            tid=tid,
            bytes=size,
            allocated=trace.column("instants", "total_allocated")[rows],
            reserved=trace.column("instants", "total_reserved")[rows],
            addr=trace.column("instants", "addr")[rows],
            device_type=trace.column("instants", "device_type")[rows],
            device_id=trace.column("instants", "device_id")[rows],
            op=innermost_containing(trace, np.flatnonzero(ops), pid, tid, ts),
        )

    return derived.remember(trace, ("memory_events",), compute)


def _string_ids(trace: Trace, text: str) -> np.ndarray:
    return np.flatnonzero(derived.name_flags(trace, "^" + re.escape(text) + "$"))


def _recorded(trace: Trace, column: str, rows: np.ndarray) -> np.ndarray:
    """Whether the instants' column holds a value at rows (the loader writes -1 for none;
    a free of one byte is -1 too, but the allocator never frees fewer than 512 bytes)."""
    return trace.column("instants", column)[rows] != -1


def _thread_codes(pid: np.ndarray, tid: np.ndarray) -> np.ndarray:
    """A dense code per (pid, tid) pair, from two 1-D passes."""
    _, p = np.unique(pid, return_inverse=True)
    _, t = np.unique(tid, return_inverse=True)
    pair = p.reshape(-1).astype(np.int64) * (int(t.max()) + 1) + t.reshape(-1)
    _, code = np.unique(pair, return_inverse=True)
    return code.reshape(-1).astype(np.int64)


def innermost_containing(
    trace: Trace, candidates: np.ndarray, pid: np.ndarray, tid: np.ndarray, ts: np.ndarray
) -> np.ndarray:
    """For each time ts[i] on thread (pid[i], tid[i]): the innermost of the candidate event
    rows on that thread whose [ts, ts + dur) holds it; -1 where none does.

    The last candidate to start at or before the time is the innermost one holding it or
    nested inside it (the thread's events nest), so walking up from it through `parent`
    reaches the innermost holder first."""
    found = np.full(len(ts), -1, np.int64)
    if not len(ts) or not len(candidates):
        return found
    ev_ts = trace.column("events", "ts")
    ev_end = ev_ts + trace.column("events", "dur")
    ev_pid = trace.column("events", "pid")
    ev_tid = trace.column("events", "tid")
    is_candidate = np.zeros(len(ev_ts), bool)
    is_candidate[candidates] = True
    # One sortable key per (thread, time): the thread's code times the span of the times in
    # play, plus the time (1-D codes: a unique over (pid, tid) rows sorts millions of pairs).
    code = _thread_codes(
        np.concatenate([ev_pid[candidates], pid]), np.concatenate([ev_tid[candidates], tid])
    )
    cand_ts = ev_ts[candidates]
    low = min(int(cand_ts.min()), int(ts.min()))
    span = max(int(cand_ts.max()), int(ts.max())) - low + 1
    if (int(code.max()) + 1) * span >= 2**62:  # times too far apart for one key: ranks
        times = np.unique(np.concatenate([cand_ts, ts]))
        cand_rel, query_rel = np.searchsorted(times, cand_ts), np.searchsorted(times, ts)
        span = len(times)
    else:
        cand_rel, query_rel = cand_ts - low, ts - low
    cand_key = code[: len(candidates)] * span + cand_rel
    query_key = code[len(candidates) :] * span + query_rel
    # Longer first among candidates that start together: the last to start is then the
    # innermost (the loader nests the shorter inside the longer).
    order = np.lexsort((-(ev_end[candidates] - ev_ts[candidates]), cand_key))
    at = np.searchsorted(cand_key[order], query_key, side="right") - 1
    ok = at >= 0
    same_thread = np.zeros(len(ts), bool)
    same_thread[ok] = code[: len(candidates)][order[at[ok]]] == code[len(candidates) :][ok]
    cur = np.full(len(ts), -1, np.int64)
    cur[same_thread] = candidates[order[at[same_thread]]]
    parent = trace.column("events", "parent")
    active = cur >= 0
    while active.any():
        idx = np.flatnonzero(active)
        hit = is_candidate[cur[idx]] & (ev_end[cur[idx]] > ts[idx])
        found[idx[hit]] = cur[idx[hit]]
        miss = idx[~hit]
        cur[miss] = parent[cur[miss]]
        active[:] = False
        active[miss] = cur[miss] >= 0
    return found
