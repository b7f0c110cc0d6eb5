"""Who owns each nanosecond of a step on the GPU: one attribution, in the critical path's
vocabulary, that the doctor, the critical path and the what-if can read.

Per (rank, step) of the walk (hta_fast.model.graph.walk, chained), the step's span on the
GPU as a whole, from its replayed start to its end, is cut into owned intervals that
partition it (their lengths add up to the step, none is negative):

* busy, by what ran (several at once: the first that applies): any compute, copy or set
  (`gpu_compute_bound`); else a collective moving data (`gpu_communication_bound`); else a
  collective waiting for the last rank to arrive (`cross_rank`, naming that rank: its first
  `wait` ns, analysis.collectives.kernel_waits: the kernel's duration less the collective's
  data time, whatever the clocks say; a rank alone has none);
* idle, by what the GPU waited for: each idle gap [a, b) is owned by the chain of tight
  edges the replay walks back from what ended it (the start of the GPU event that starts at
  b; for the step's tail, its end node) to a, each edge's part inside the gap taking that
  edge's critical-path category and charged event (model.path.bounds: the host's op that
  launched late, a blocking call, untraced host time, GPU work the trace did not record,
  a launch's latency, ...). What the walk cannot reach (a node nothing tight leads into)
  is `untraced_host`.

With the measured weights the replay meets every measured time, so the intervals are the
measured ones. The table's categories are BOUND_BY's and `cross_rank` (OWNERS).
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa

from ...analysis.collectives import KernelWaits, kernel_waits
from ...frame import select
from ...frame.fields import NS
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...schema import GPU_WORK_KINDS, KernelClass
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.chain import Chain
from ..graph.unrecorded_wait import unrecorded_holds
from ..graph.walk import walk
from .bounds import BOUND_BY, bound_codes, charged_events, names_of

OWNERS = [*BOUND_BY, "cross_rank"]
_CODE = {o: i for i, o in enumerate(OWNERS)}
_IDLE = -1

SUMMARY = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("step_ns", pa.int64(), metadata=NS),
    ]
    + [pa.field(o, pa.int64(), metadata=NS) for o in OWNERS]
)
INTERVALS = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("start", pa.int64(), metadata=NS),
        pa.field("end", pa.int64(), metadata=NS),
        pa.field("owner", pa.string()),
        pa.field("name", pa.string()),
        pa.field("waited_for", pa.int64()),
    ]
)


def wait_owners(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per (rank, step): the step's length and each owner's time (ns), the owners
    partitioning the step (module doc); side table "intervals": one row per owned interval
    (start and end on the trace's clock, the owner, the event it is charged to where there
    is one, and for cross_rank the rank waited for)."""
    sel = select.selection_of(selection, ranks, steps)
    ts = select.as_traceset(traces)
    waits = kernel_waits(ts, ranks=sel.ranks, steps=sel.steps) if len(ts) > 1 else {}
    rows: list[dict] = []
    parts: list[pa.Table] = []
    for chain in walk(ts, sel, True):
        summary, intervals = _chain_owners(chain, waits.get(chain.rank))
        rows += summary
        parts.append(intervals)
    rows.sort(key=lambda r: (r["rank"], r["step"] is not None, r["step"] or 0))
    table = pa.table({f.name: [r[f.name] for r in rows] for f in SUMMARY}, schema=SUMMARY)
    side = pa.concat_tables(parts) if parts else INTERVALS.empty_table()
    return Result("wait_owners", table, tables={"intervals": side}, params={"selection": sel})


def _chain_owners(chain: Chain, waits: Optional[KernelWaits]) -> tuple[list[dict], pa.Table]:
    g, trace = chain.graph, chain.trace
    times = g.replay()
    origin = g.window_start
    gpu = np.isin(trace.column("events", "kind")[g.rows], np.asarray(GPU_WORK_KINDS, np.uint8))
    kclass = trace.column("events", "kernel_class")[g.rows]
    starts, ends = chain.step_starts(times), chain.step_ends(times)
    end_nodes = chain.end_nodes(times)
    painted = []
    gaps: list[tuple[int, int, int, int]] = []  # (step index, a, b, from node)
    for k in range(len(chain.steps)):
        lo, hi = int(starts[k]), int(ends[k])
        ev = chain.members[(chain.member_step == k) & gpu[chain.members]]
        ev_start = np.clip(times[2 * ev], lo, hi)
        ev_end = np.clip(times[2 * ev + 1], lo, hi)
        seg = _paint(lo, hi, _layers(g.rows[ev], kclass[ev], ev_start, ev_end, waits))
        painted.append(seg)
        first_at = _first_start(ev, ev_start)
        for a, b, owner in zip(*seg):
            if owner == _IDLE:
                node = first_at.get(int(b), int(end_nodes[k]))
                gaps.append((k, int(a), int(b), node))
    pieces = _gap_pieces(chain, times, gaps)
    summary, out = [], []
    for k in range(len(chain.steps)):
        seg_a, seg_b, seg_owner = painted[k]
        busy = seg_owner != _IDLE
        owner_code = np.concatenate([_busy_codes(seg_owner[busy]), pieces[k][2]])
        a = np.concatenate([seg_a[busy], pieces[k][0]])
        b = np.concatenate([seg_b[busy], pieces[k][1]])
        names = [None] * int(busy.sum()) + pieces[k][3]
        waited = np.concatenate([_waited_for(seg_owner[busy]), pieces[k][4]])
        order = np.argsort(a, kind="stable")
        step = chain.steps[k]
        per = np.bincount(owner_code, weights=b - a, minlength=len(OWNERS))
        row = {"rank": chain.rank, "step": step, "step_ns": int(ends[k] - starts[k])}
        row.update({o: int(round(per[i])) for i, o in enumerate(OWNERS)})
        summary.append(row)
        out.append(
            pa.table(
                {
                    "rank": pa.array(np.full(len(a), chain.rank), pa.int64()),
                    "step": pa.array([step] * len(a), pa.int64()),
                    "start": pa.array(a[order] + origin, pa.int64()),
                    "end": pa.array(b[order] + origin, pa.int64()),
                    "owner": pa.array([OWNERS[c] for c in owner_code[order]], pa.string()),
                    "name": pa.array([names[i] for i in order], pa.string()),
                    "waited_for": pa.array(
                        [None if w < 0 else int(w) for w in waited[order]], pa.int64()
                    ),
                },
                schema=INTERVALS,
            )
        )
    return summary, pa.concat_tables(out) if out else INTERVALS.empty_table()


# Busy layers, in the order they own a moment: compute, data, then one per rank waited for
# (their layer index - 2 + ... is the rank: kept beside them in _LAYER_RANKS).
_COMPUTE, _DATA, _WAIT = 0, 1, 2


def _layers(
    rows: np.ndarray,
    kclass: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    waits: Optional[KernelWaits],
) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """(starts, ends, label) per layer: label _COMPUTE, _DATA, or _WAIT + the rank waited
    for; a collective's wait is its first part."""
    comm = kclass == KernelClass.COMM
    wait = np.zeros(len(rows), np.int64)
    waited_for = np.full(len(rows), -1, np.int64)
    if waits is not None and len(waits.rows) and comm.any():
        order = np.argsort(waits.rows)
        pos = np.minimum(np.searchsorted(waits.rows[order], rows), len(order) - 1)
        hit = comm & (waits.rows[order][pos] == rows)
        wait[hit] = waits.wait[order][pos[hit]]
        waited_for[hit] = waits.waited_for[order][pos[hit]]
    waiting = comm & (wait > 0) & (waited_for >= 0)
    split = np.where(waiting, np.minimum(start + wait, end), start)
    layers = [(start[~comm], end[~comm], _COMPUTE), (split[comm], end[comm], _DATA)]
    for r in np.unique(waited_for[waiting]).tolist():
        on = waiting & (waited_for == r)
        layers.append((start[on], split[on], _WAIT + int(r)))
    return layers


def _paint(
    lo: int, hi: int, layers: list[tuple[np.ndarray, np.ndarray, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[lo, hi) cut where any layer's interval begins or ends; each piece labelled with the
    first layer covering it (_IDLE where none does); neighbours with one label merged."""
    cuts = [np.array([lo, hi], np.int64)]
    cuts += [np.clip(s, lo, hi) for s, _, _ in layers] + [np.clip(e, lo, hi) for _, e, _ in layers]
    bounds = np.unique(np.concatenate(cuts))
    if len(bounds) < 2:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    label = np.full(len(bounds) - 1, _IDLE, np.int64)
    for s, e, lab in reversed(layers):  # the first layer paints last, over the others
        ok = e > s
        delta = np.zeros(len(bounds), np.int64)
        np.add.at(delta, np.searchsorted(bounds, np.clip(s[ok], lo, hi)), 1)
        np.add.at(delta, np.searchsorted(bounds, np.clip(e[ok], lo, hi)), -1)
        label[np.cumsum(delta)[:-1] > 0] = lab
    a, b = bounds[:-1], bounds[1:]
    keep = np.r_[True, label[1:] != label[:-1]]
    first = np.flatnonzero(keep)
    return a[first], np.r_[a[first[1:]], b[-1]], label[first]


def _first_start(ev: np.ndarray, ev_start: np.ndarray) -> dict[int, int]:
    """Start time -> the start node of the first GPU event (lowest) starting then."""
    out: dict[int, int] = {}
    for e, t in sorted(zip(ev.tolist(), ev_start.tolist())):
        out.setdefault(int(t), 2 * int(e))
    return out


def _busy_codes(labels: np.ndarray) -> np.ndarray:
    return np.select(
        [labels == _COMPUTE, labels == _DATA],
        [_CODE["gpu_compute_bound"], _CODE["gpu_communication_bound"]],
        _CODE["cross_rank"],
    ).astype(np.int64)


def _waited_for(labels: np.ndarray) -> np.ndarray:
    return np.where(labels >= _WAIT, labels - _WAIT, -1).astype(np.int64)


def _held_from(
    s: np.ndarray,
    e: np.ndarray,
    c: np.ndarray,
    events: np.ndarray,
    held: dict[int, int],
    names: list,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Pieces charged to unrecorded GPU work begin where the hold began (the held event's
    launch returned, model.graph.unrecorded_wait): the edge's part before it is the launch's
    (gpu_kernel_launch_overhead), as the doctor's unrecorded_gpu_work counts it."""
    unrec = np.flatnonzero(c == _CODE["gpu_unrecorded_work"])
    if not len(unrec):
        return s, e, c, names
    s, e, c, names = list(s), list(e), list(c), list(names)
    for i in reversed(unrec.tolist()):
        begin = held.get(int(events[i]))
        if begin is None or not s[i] < begin < e[i]:
            continue
        s.insert(i, s[i]), e.insert(i, begin)
        c.insert(i, _CODE["gpu_kernel_launch_overhead"]), names.insert(i, names[i])
        s[i + 1] = begin
    return np.asarray(s, np.int64), np.asarray(e, np.int64), np.asarray(c, np.int64), names


def _gap_pieces(
    chain: Chain, times: np.ndarray, gaps: list[tuple[int, int, int, int]]
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, list, np.ndarray]]:
    """Per step: (starts, ends, owner codes, charged names, waited_for) of its idle gaps'
    pieces, each gap walked back from what ended it (module doc), in one core call."""
    g, trace = chain.graph, chain.trace
    out: list[tuple[list, list, list, list]] = [([], [], [], []) for _ in chain.steps]
    holds = unrecorded_holds(trace)
    held = dict(zip(holds.rows.tolist(), (holds.starts - g.window_start).tolist()))
    if gaps:
        from_nodes = np.array([gp[3] for gp in gaps], np.int64)
        stop_at = np.array([gp[1] for gp in gaps], np.int64)
        paths, offsets = g.core.critical_paths(g.weight, times, 0, from_nodes, stop_at)
        codes = bound_codes(g, trace, paths) if len(paths) else np.zeros(0, np.int8)
        events = charged_events(g, trace, paths) if len(paths) else np.zeros(0, np.int64)
        names = names_of(trace, "name", events).to_pylist() if len(paths) else []
        for i, (k, a, b, _) in enumerate(gaps):
            p = np.arange(offsets[i], offsets[i + 1])
            s = np.clip(times[g.src[paths[p]]], a, b)
            e = np.clip(times[g.dst[paths[p]]], a, b)
            if len(p):
                # An edge may run back in time (two calls that overlap on a thread): each edge
                # owns only what the path had not yet covered, so the pieces tile the gap.
                e = np.maximum.accumulate(e)
                s = np.r_[s[0], e[:-1]]
            reached = int(s[0]) if len(p) else b
            if reached > a:  # nothing tight leads further back
                out[k][0].append(a), out[k][1].append(reached)
                out[k][2].append(_CODE["untraced_host"]), out[k][3].append(None)
            c = codes[p].astype(np.int64)
            s, e, c, n = _held_from(s, e, c, events[p], held, [names[j] for j in p.tolist()])
            on = e > s
            out[k][0].extend(s[on].tolist()), out[k][1].extend(e[on].tolist())
            out[k][2].extend(c[on].tolist())
            out[k][3].extend(x for x, o in zip(n, on.tolist()) if o)
    return [
        (
            np.asarray(s, np.int64),
            np.asarray(e, np.int64),
            np.asarray(c, np.int64),
            n,
            np.full(len(s), -1, np.int64),
        )
        for s, e, c, n in out
    ]
