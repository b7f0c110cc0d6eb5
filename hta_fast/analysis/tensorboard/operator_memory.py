"""Memory per operator, as the TensorBoard profiler plugin's memory view counts it, from
the allocator's `[memory]` events (hta_fast.frame.memory_events; `profile_memory=True`).

Each event belongs to the innermost CPU operator on its thread that holds its time. Per
(rank, device, operator name):

    calls               instances of the operator in the selection (with memory events
                        or not)
    self_alloc_count    allocations made in the operator's own code (not in an operator
    self_alloc_bytes    nested in it), and their bytes
    self_free_count     frees made there, and their bytes (positive)
    self_free_bytes
    self_increase       self allocations less self frees: what the operator's own code left
                        allocated
    alloc_count         the same counted over the operator and every operator nested in it
    alloc_bytes
    increase
    peak_increase       the most any one call raised the device's allocated memory above
                        what it held when the call's first memory event came: the largest
                        Total Allocated after one of the call's events (nested ones
                        included) less Total Allocated before its first; null where the
                        trace records no totals
    peak_allocated      the device's largest Total Allocated seen during a call

A call of an operator nested in a call of the same name (an op that calls itself) adds its
self numbers to its name's row but not its inclusive ones: its events are already in the
outer call's, so nothing counts twice. Events outside every operator are no operator's; the
side table "devices" counts them (unattributed_*), with per (rank, device): events,
allocations and frees, the first and the largest Total Allocated and Total Reserved.
Side table "curve": Total Allocated and Total Reserved after every event, per (rank,
device), in time order (the plugin's memory curve). Side table "allocations": each block's
allocation paired with its free (the next event at the same device and address, when it is
a free), with the operators that made them; a block freed before the trace began has no
allocation time, one still held at its end no free time.

Selection: an event follows the operator it belongs to (its step, its window); one outside
every operator is kept when its time is inside the selected steps' spans and the window.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ..._arrow import array_of
from ...frame import select
from ...frame.fields import NS
from ...frame.memory_events import MemoryEvents, device_label, memory_events
from ...frame.result import Result
from ...frame.select import Ranks, Selection, Steps, Streams, Window
from ...schema import EventKind
from ...trace import Trace
from ...traceset import TraceSet
from .columns import table_of

__all__ = ["operator_memory"]

B = {"unit": "B"}
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("device", pa.string()),
        pa.field("name", pa.string()),
        pa.field("calls", pa.int64()),
        pa.field("self_alloc_count", pa.int64()),
        pa.field("self_alloc_bytes", pa.int64(), metadata=B),
        pa.field("self_free_count", pa.int64()),
        pa.field("self_free_bytes", pa.int64(), metadata=B),
        pa.field("self_increase", pa.int64(), metadata=B),
        pa.field("alloc_count", pa.int64()),
        pa.field("alloc_bytes", pa.int64(), metadata=B),
        pa.field("increase", pa.int64(), metadata=B),
        pa.field("peak_increase", pa.int64(), metadata=B),
        pa.field("peak_allocated", pa.int64(), metadata=B),
    ]
)
DEVICES = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("device", pa.string()),
        pa.field("events", pa.int64()),
        pa.field("alloc_count", pa.int64()),
        pa.field("alloc_bytes", pa.int64(), metadata=B),
        pa.field("free_count", pa.int64()),
        pa.field("free_bytes", pa.int64(), metadata=B),
        pa.field("unattributed_events", pa.int64()),
        pa.field("unattributed_alloc_bytes", pa.int64(), metadata=B),
        pa.field("first_allocated", pa.int64(), metadata=B),
        pa.field("peak_allocated", pa.int64(), metadata=B),
        pa.field("peak_reserved", pa.int64(), metadata=B),
    ]
)
CURVE = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("device", pa.string()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("allocated", pa.int64(), metadata=B),
        pa.field("reserved", pa.int64(), metadata=B),
    ]
)
ALLOCATIONS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("device", pa.string()),
        pa.field("addr", pa.int64()),
        pa.field("bytes", pa.int64(), metadata=B),
        pa.field("alloc_ts", pa.int64(), metadata=NS),
        pa.field("free_ts", pa.int64(), metadata=NS),
        pa.field("duration", pa.int64(), metadata=NS),
        pa.field("alloc_op", pa.string()),
        pa.field("free_op", pa.string()),
    ]
)


def operator_memory(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    window: Window = None,
    streams: Streams = None,
    selection: Optional[Selection] = None,
) -> Result:
    """Per (rank, device, operator name): calls, self and inclusive allocations, frees,
    increase, the largest increase of one call and the peak seen in one. Side tables
    "devices", "curve" and "allocations" (see the module's doc)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts: dict[str, dict[str, list]] = {
        name: {f.name: [] for f in schema}
        for name, schema in (
            ("main", SCHEMA),
            ("devices", DEVICES),
            ("curve", CURVE),
            ("allocations", ALLOCATIONS),
        )
    }
    notes: list[str] = []
    for rank, trace, mask in select.each_rank(traces, sel):
        ev = memory_events(trace)
        keep = _kept(trace, sel, mask, ev)
        if not keep.any():
            continue
        ev = MemoryEvents(*(a[keep] for a in ev))
        dev_of, labels = _devices(ev)
        _operators(parts["main"], rank, trace, mask, ev, dev_of, labels)
        _per_device(parts["devices"], parts["curve"], rank, ev, dev_of, labels)
        _allocations(parts["allocations"], rank, trace, ev, dev_of, labels)
        loose = ev.op < 0
        if loose.any():
            notes.append(
                f"rank {rank}: {int(loose.sum())} of {len(ev.ts)} memory events happened "
                "outside every operator (side table devices: unattributed_*)"
            )
        if (ev.allocated < 0).any():
            notes.append(
                f"rank {rank}: {int((ev.allocated < 0).sum())} memory events record no "
                "Total Allocated: peaks leave them out"
            )
    if not parts["main"]["rank"] and not parts["devices"]["rank"]:
        notes.append(
            "no [memory] events in the selection: record them with "
            "torch.profiler.profile(profile_memory=True)"
        )
    return Result(
        "operator_memory",
        table_of(parts["main"], SCHEMA),
        tables={
            "devices": table_of(parts["devices"], DEVICES),
            "curve": table_of(parts["curve"], CURVE),
            "allocations": table_of(parts["allocations"], ALLOCATIONS),
        },
        notes=notes,
        params={"selection": sel},
    )


def _kept(trace: Trace, sel: Selection, mask: Optional[np.ndarray], ev: MemoryEvents) -> np.ndarray:
    """Events in the selection: by their operator's row, or (outside every operator) by
    their time against the selected steps and window."""
    keep = np.ones(len(ev.ts), bool)
    if mask is None:
        return keep
    inside = ev.op >= 0
    keep[inside] = mask[ev.op[inside]]
    loose = ~inside
    t = ev.ts[loose]
    ok = np.ones(len(t), bool)
    if sel.window is not None:
        ok &= (t >= sel.window[0]) & (t < sel.window[1])
    if sel.steps is not None:
        step_ts = trace.column("steps", "ts")
        step_end = step_ts + trace.column("steps", "dur")
        chosen = np.isin(trace.column("steps", "step"), np.asarray(sel.steps))
        in_step = np.zeros(len(t), bool)
        for lo, hi in zip(step_ts[chosen], step_end[chosen]):
            in_step |= (t >= lo) & (t < hi)
        ok &= in_step
    if sel.before_last_step and (last := select.last_step_start(trace)) is not None:
        ok &= t < last
    keep[loose] = ok
    return keep


def _devices(ev: MemoryEvents) -> tuple[np.ndarray, list[str]]:
    pairs, dev_of = np.unique(
        np.stack([ev.device_type, ev.device_id], 1), axis=0, return_inverse=True
    )
    return dev_of.reshape(-1), [device_label(int(t), int(i)) for t, i in pairs]


def _operators(
    out: dict[str, list],
    rank: int,
    trace: Trace,
    mask: Optional[np.ndarray],
    ev: MemoryEvents,
    dev_of: np.ndarray,
    labels: list[str],
) -> None:
    kind = trace.column("events", "kind")
    parent = trace.column("events", "parent")
    names = trace.column("events", "name")
    n_dev = len(labels)
    # (operator row, event index) for the operator each event is in and every operator
    # around that one: level 0 is the event's own operator (its self numbers).
    ops, idx, level = [], [], []
    cur, at = ev.op.astype(np.int64), np.arange(len(ev.ts))
    depth = 0
    while len(cur):
        live = cur >= 0
        cur, at = cur[live], at[live]
        is_op = kind[cur] == EventKind.cpu_op
        ops.append(cur[is_op])
        idx.append(at[is_op])
        level.append(np.full(int(is_op.sum()), depth, np.int64))
        cur = parent[cur].astype(np.int64)
        depth += 1
    op_rows, ev_idx = np.concatenate(ops), np.concatenate(idx)
    own = np.concatenate(level) == 0
    key = op_rows * n_dev + dev_of[ev_idx]
    uniq, inv = np.unique(key, return_inverse=True)
    inst_row, inst_dev = uniq // n_dev, uniq % n_dev
    size = ev.bytes[ev_idx]
    alloc, free = size > 0, size < 0
    n = len(uniq)

    def summed(values: np.ndarray, where: np.ndarray) -> np.ndarray:
        total = np.zeros(n, np.int64)
        np.add.at(total, inv[where], values[where])
        return total

    ones = np.ones(len(size), np.int64)
    inst = {
        "self_alloc_count": summed(ones, own & alloc),
        "self_alloc_bytes": summed(size, own & alloc),
        "self_free_count": summed(ones, own & free),
        "self_free_bytes": summed(-size, own & free),
        "self_increase": summed(size, own),
        "alloc_count": summed(ones, alloc),
        "alloc_bytes": summed(size, alloc),
        "increase": summed(size, np.ones(len(size), bool)),
    }
    # The largest increase of one call: Total Allocated after its events against Total
    # Allocated before the first of them (events are in time order, so the smallest index).
    has_total = ev.allocated[ev_idx] >= 0
    top = np.full(n, -1, np.int64)
    np.maximum.at(top, inv[has_total], ev.allocated[ev_idx][has_total])
    first = np.full(n, len(ev.ts), np.int64)
    np.minimum.at(first, inv[has_total], ev_idx[has_total])
    recorded = first < len(ev.ts)
    base = np.zeros(n, np.int64)
    f = first[recorded]
    base[recorded] = ev.allocated[f] - ev.bytes[f]
    inst_peak_increase = np.where(recorded, top - base, -1)
    inst_top = np.where(recorded, top, -1)
    nested = _inside_same_name(trace, inst_row)
    # Group the instances by (device, name).
    gkey = inst_dev * (int(names.max(initial=-1)) + 2) + (names[inst_row] + 1)
    groups, ginv = np.unique(gkey, return_inverse=True)
    g_dev = groups // (int(names.max(initial=-1)) + 2)
    g_name = groups % (int(names.max(initial=-1)) + 2) - 1
    m = len(groups)

    def by_group(values: np.ndarray, where: Optional[np.ndarray] = None) -> np.ndarray:
        total = np.zeros(m, np.int64)
        w = np.ones(n, bool) if where is None else where
        np.add.at(total, ginv[w], values[w])
        return total

    row = {k: by_group(v, None if k.startswith("self_") else ~nested) for k, v in inst.items()}
    peak_inc = np.full(m, -1, np.int64)
    np.maximum.at(peak_inc, ginv, inst_peak_increase)
    peak_top = np.full(m, -1, np.int64)
    np.maximum.at(peak_top, ginv, inst_top)
    # Calls: every instance of the name in the selection, whatever its memory.
    is_op = kind == EventKind.cpu_op
    if mask is not None:
        is_op = is_op & mask
    calls_by_name = np.bincount(names[is_op] + 1, minlength=int(names.max(initial=-1)) + 2)
    order = np.lexsort((-row["alloc_bytes"], g_dev))
    out["rank"].append(np.full(m, rank, np.int64))
    out["device"].append(array_of([labels[d] for d in g_dev[order]], pa.string()))
    out["name"].append(trace.strings_at(g_name[order]))
    out["calls"].append(calls_by_name[g_name[order] + 1])
    for k in inst:
        out[k].append(row[k][order])
    out["peak_increase"].append(array_of(peak_inc[order], pa.int64(), mask=peak_inc[order] < 0))
    out["peak_allocated"].append(array_of(peak_top[order], pa.int64(), mask=peak_top[order] < 0))


def _inside_same_name(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per row: whether an operator of the same name is around it."""
    kind = trace.column("events", "kind")
    parent = trace.column("events", "parent")
    names = trace.column("events", "name")
    found = np.zeros(len(rows), bool)
    cur = parent[rows].astype(np.int64)
    active = cur >= 0
    while active.any():
        i = np.flatnonzero(active)
        same = (kind[cur[i]] == EventKind.cpu_op) & (names[cur[i]] == names[rows[i]])
        found[i[same]] = True
        cur[i] = parent[cur[i]]
        active[i] = ~same & (cur[i] >= 0)
    return found


def _per_device(
    devices: dict[str, list],
    curve: dict[str, list],
    rank: int,
    ev: MemoryEvents,
    dev_of: np.ndarray,
    labels: list[str],
) -> None:
    for d, label in enumerate(labels):
        on = dev_of == d
        size, total, reserved = ev.bytes[on], ev.allocated[on], ev.reserved[on]
        loose = ev.op[on] < 0
        alloc, free = size > 0, size < 0
        has_total = total >= 0
        devices["rank"].append(rank)
        devices["device"].append(label)
        devices["events"].append(int(on.sum()))
        devices["alloc_count"].append(int(alloc.sum()))
        devices["alloc_bytes"].append(int(size[alloc].sum()))
        devices["free_count"].append(int(free.sum()))
        devices["free_bytes"].append(int(-size[free].sum()))
        devices["unattributed_events"].append(int(loose.sum()))
        devices["unattributed_alloc_bytes"].append(int(size[loose & alloc].sum()))
        first = np.flatnonzero(has_total)
        devices["first_allocated"].append(
            int(total[first[0]] - size[first[0]]) if len(first) else None
        )
        devices["peak_allocated"].append(int(total[has_total].max()) if len(first) else None)
        has_reserved = reserved >= 0
        devices["peak_reserved"].append(
            int(reserved[has_reserved].max()) if has_reserved.any() else None
        )
        n = int(on.sum())
        curve["rank"].append(np.full(n, rank, np.int64))
        curve["device"].append(array_of([label] * n, pa.string()))
        curve["ts"].append(ev.ts[on])
        curve["allocated"].append(array_of(total, pa.int64(), mask=~has_total))
        curve["reserved"].append(array_of(reserved, pa.int64(), mask=~has_reserved))


def _allocations(
    out: dict[str, list],
    rank: int,
    trace: Trace,
    ev: MemoryEvents,
    dev_of: np.ndarray,
    labels: list[str],
) -> None:
    """Each allocation with the free that ends it: the next event at its device and address."""
    n = len(ev.ts)
    order = np.lexsort((np.arange(n), ev.addr, dev_of))
    same_block = np.zeros(n, bool)
    same_block[:-1] = (dev_of[order][1:] == dev_of[order][:-1]) & (
        ev.addr[order][1:] == ev.addr[order][:-1]
    )
    size = ev.bytes[order]
    is_alloc, is_free = size > 0, size < 0
    nxt = np.zeros(n, bool)  # order[i] is an allocation ended by order[i + 1]
    nxt[:-1] = same_block[:-1] & is_alloc[:-1] & is_free[1:]
    freed_by = np.full(n, -1, np.int64)
    freed_by[np.flatnonzero(nxt)] = order[np.flatnonzero(nxt) + 1]
    paired_free = np.zeros(n, bool)
    paired_free[np.flatnonzero(nxt) + 1] = True
    alloc_rows = order[is_alloc]
    alloc_free = freed_by[is_alloc]
    lone_frees = order[is_free & ~paired_free]
    alloc_ev = np.concatenate([alloc_rows, np.full(len(lone_frees), -1, np.int64)])
    free_ev = np.concatenate([alloc_free, lone_frees])
    # Time order of the block's first event.
    first = np.where(alloc_ev >= 0, alloc_ev, free_ev)
    by_time = np.argsort(first, kind="stable")
    alloc_ev, free_ev, first = alloc_ev[by_time], free_ev[by_time], first[by_time]
    m = len(first)
    has_a, has_f = alloc_ev >= 0, free_ev >= 0
    a_ts = np.where(has_a, ev.ts[np.maximum(alloc_ev, 0)], 0)
    f_ts = np.where(has_f, ev.ts[np.maximum(free_ev, 0)], 0)
    out["rank"].append(np.full(m, rank, np.int64))
    out["device"].append(array_of([labels[d] for d in dev_of[first]], pa.string()))
    out["addr"].append(ev.addr[first])
    out["bytes"].append(np.abs(ev.bytes[first]))
    out["alloc_ts"].append(array_of(a_ts, pa.int64(), mask=~has_a))
    out["free_ts"].append(array_of(f_ts, pa.int64(), mask=~has_f))
    out["duration"].append(array_of(f_ts - a_ts, pa.int64(), mask=~(has_a & has_f)))
    out["alloc_op"].append(_op_names(trace, ev, alloc_ev))
    out["free_op"].append(_op_names(trace, ev, free_ev))


def _op_names(trace: Trace, ev: MemoryEvents, at: np.ndarray) -> pa.Array:
    op = np.where(at >= 0, ev.op[np.maximum(at, 0)], -1) if len(ev.op) else np.full(len(at), -1)
    names = trace.column("events", "name")
    if not len(names):  # only [memory] rows: no operator to name
        return trace.strings_at(np.full(len(at), -1, np.int64))
    name = np.where(op >= 0, names[np.maximum(op, 0)], -1)
    return trace.strings_at(name)
