"""What-if: edit the dependency graph's weights, replay, and compare with the measured step.

Edits (all optional, applied together):

    kernel_class   {"COMM": 0.5, "COMP": 0.8}: scale GPU event durations by kernel class
                   (COMP, COMM, MEM)
    name           {regex: factor}: scale GPU events whose name matches (re.search)
    category       {cat: factor}: scale GPU events by their trace category ("kernel",
                   "gpu_memcpy", "gpu_memset")
    cpu            scale CPU time: CPU event durations, gaps between a thread's calls and the
                   non-waiting part of sync calls
    zero_launch_overhead  launch edges cost nothing and launch calls take no CPU time (what
                   CUDA graphs approach)
    drop_comm_waits  nothing waits for communication: cross-stream and host-sync edges from
                   communication kernels are dropped (the perfect-overlap bound)
    collective_bandwidth / collective_busbw_gbps  a faster or slower interconnect: each
                   collective's time moving data (its data_time, hta_fast.analysis.collectives)
                   changes by the factor the collective cost model fitted to the trace predicts
                   for its size (hta_fast.model.bandwidth_edit); the rest of a kernel's
                   duration, waiting for other ranks, is kept
    device         this step on another GPU: each launched GPU event's duration becomes the
                   one hta_fast.model.predict gives on that device (hta_fast.model.device_edit);
                   the host, the waits and the launch order stay as recorded

Factors on one event multiply. The replay keeps each lane's order and each wait's measured or
typical cost (docs/model.md, "Weights"), so a shorter kernel lets the work queued behind it,
and the host waiting for it, move up.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Union

import numpy as np
import pyarrow as pa

from ..analysis import select
from ..analysis.fields import NS, PCT
from ..analysis.result import Result
from ..analysis.select import Ranks, Steps
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from .bandwidth_edit import collective_bandwidth_factors
from .collective_cost import CostModel
from .collective_links import MatchedCollectives, match_collectives
from .critical_path_ranks import step_path
from .cross_rank import link_windows, replay_together
from .cross_rank_path_rows import breakdown_table, summary_table
from .dependency_graph import EDGE, DependencyGraph
from .devices import Device
from .path_bounds import BOUND_BY, bound_by, shares
from .windows import Window, each_window, step_groups

DROPPED = -(1 << 50)
# The share of a rank's predicted step spent before its critical path begins: waiting at a
# collective for another rank (held_by) to arrive, in a cross-rank replay.
WAITING = "waiting_for_rank"  # a weight that no path through it can win with

CPU_EDGES = [EDGE[t] for t in ("cpu_self", "cpu_nest_down", "cpu_nest_up", "cpu_sibling", "sync_self",
                                "join_tail")]

SCHEMA = pa.schema(
    [pa.field("rank", pa.int64()), pa.field("step", pa.int64()),
     pa.field("measured", pa.int64(), metadata=NS), pa.field("replayed", pa.int64(), metadata=NS),
     pa.field("predicted", pa.int64(), metadata=NS),
     pa.field("change_pct", pa.float64(), metadata=PCT),
     pa.field("bound_before", pa.string()), pa.field("bound_after", pa.string())]
    + [pa.field(b, pa.float64(), metadata=PCT) for b in BOUND_BY]
    + [pa.field(WAITING, pa.float64(), metadata=PCT), pa.field("held_by", pa.int64())])


def _names(trace: Trace, ids: np.ndarray) -> list[str]:
    strings = trace.strings
    return [strings[int(i)].as_py() if i >= 0 else "" for i in ids]


def _match_factor(trace: Trace, ids: np.ndarray, table: Mapping[str, float], regex: bool) -> np.ndarray:
    """Per row, the product of the factors whose key matches its string (name or cat)."""
    out = np.ones(len(ids))
    if not table:
        return out
    uniq, inv = np.unique(ids, return_inverse=True)
    names = _names(trace, uniq)
    per = np.ones(len(uniq))
    for key, f in table.items():
        if regex:
            try:
                pattern = re.compile(key)
            except re.error as e:
                raise ValueError(f"bad name pattern {key!r}: {e}") from None
            hit = [bool(pattern.search(n)) for n in names]
        else:
            hit = [n == key for n in names]
        per[np.array(hit, bool)] *= f
    return per[inv.reshape(-1)]


def edited_weights(graph: DependencyGraph, trace: Trace, *,
                   kernel_class: Optional[Mapping[str, float]] = None,
                   name: Optional[Mapping[str, float]] = None,
                   category: Optional[Mapping[str, float]] = None, cpu: float = 1.0,
                   zero_launch_overhead: bool = False, drop_comm_waits: bool = False,
                   duration_change: Optional[tuple[np.ndarray, np.ndarray]] = None) -> np.ndarray:
    """The graph's calibrated weights with the edits applied (see the module doc).
    duration_change: (event rows, ns) added to those GPU events' durations before the
    factors (a collective's changed time moving data, a lookup's planned time)."""
    factors = [*(kernel_class or {}).values(), *(name or {}).values(), *(category or {}).values(), cpu]
    if any(not f >= 0 for f in factors):
        raise ValueError(f"what-if factors must be numbers >= 0, got {factors}")
    w = graph.weight.astype(np.float64)
    types = graph.edge_type
    src_row = graph.rows[np.minimum(graph.core.src // 2, len(graph.rows) - 1)]
    gpu_self = np.flatnonzero(types == EDGE["gpu_self"])
    rows = src_row[gpu_self]
    factor = np.ones(len(gpu_self))
    kclass = trace.column("events", "kernel_class")[rows]
    for cls, f in (kernel_class or {}).items():
        try:
            factor[kclass == KernelClass[cls]] *= f
        except KeyError:
            raise ValueError(f"unknown kernel class {cls!r}: one of "
                             f"{[k.name for k in KernelClass if k.name not in ('NONE', 'SYNC')]}") from None
    factor *= _match_factor(trace, trace.column("events", "name")[rows], name or {}, regex=True)
    factor *= _match_factor(trace, trace.column("events", "cat")[rows], category or {}, regex=False)
    if duration_change is not None and len(duration_change[0]):
        order = np.argsort(duration_change[0])
        changed_rows, delta = duration_change[0][order], duration_change[1][order]
        pos = np.minimum(np.searchsorted(changed_rows, rows), len(changed_rows) - 1)
        hit = changed_rows[pos] == rows
        w[gpu_self[hit]] = np.maximum(w[gpu_self[hit]] + delta[pos[hit]], 0)
    w[gpu_self] *= factor
    if cpu != 1.0:
        w[np.isin(types, CPU_EDGES)] *= cpu
    if zero_launch_overhead:
        w[types == EDGE["launch"]] = 0
        # The calls that launched GPU work: their own CPU time goes too.
        is_launch = np.zeros(len(graph.rows) + 1, bool)
        is_launch[graph.core.src[types == EDGE["launch"]] // 2] = True
        w[(types == EDGE["cpu_self"]) & is_launch[graph.core.src // 2]] = 0
    out = np.rint(w).astype(np.int64)
    if drop_comm_waits:
        comm_src = trace.column("events", "kernel_class")[src_row] == KernelClass.COMM
        waits = np.isin(types, [EDGE["cross_stream"], EDGE["sync_wait"]]) & comm_src
        out[waits] = DROPPED
    return out


def _top(bounds: np.ndarray, weight: np.ndarray) -> Optional[str]:
    s = {k: v for k, v in shares(bounds, weight).items() if v is not None}
    return max(s, key=lambda k: s[k]) if s else None


def comm_changes(matched: MatchedCollectives, factor: np.ndarray
                 ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per rank, (communication kernel rows, ns added to each one's duration) when each
    matched collective's time moving data is multiplied by `factor` (one per collective)."""
    return {rank: (rc.rows, matched.data_time[rc.match] * (factor[rc.match] - 1.0))
            for rank, rc in matched.per_rank.items()}


NO_EDITS: dict[str, Any] = {}


def _add_changes(changes: dict[int, tuple[np.ndarray, np.ndarray]],
                 more: Mapping[int, tuple[np.ndarray, np.ndarray]]) -> None:
    """Merge `more` into `changes`: the changes to one row add up."""
    for rank, (ev_rows, delta) in more.items():
        ev_rows, delta = np.asarray(ev_rows, np.int64), np.asarray(delta, np.float64)
        if rank in changes:
            ev_rows = np.concatenate([changes[rank][0], ev_rows])
            delta = np.concatenate([changes[rank][1], delta])
            ev_rows, inv = np.unique(ev_rows, return_inverse=True)
            delta = np.bincount(inv.reshape(-1), delta, minlength=len(ev_rows))
        changes[int(rank)] = (ev_rows, delta)


def _predict_group(group: list[Window], edits: Mapping[str, Any], edit_ranks: Optional[set[int]],
                   changes: Mapping[int, tuple[np.ndarray, np.ndarray]],
                   matched: Optional[MatchedCollectives], factor: Optional[np.ndarray]
                   ) -> tuple[list[dict[str, Any]], list[str], Optional[tuple[dict, pa.Table]]]:
    """Rows of one step's windows: replayed together when `matched` is given (cross-rank),
    else each alone; together, also the predicted path across the ranks (its summary row and
    breakdown rows)."""
    w_edit, w_base = [], []
    for win in group:
        e = edits if edit_ranks is None or win.rank in edit_ranks else NO_EDITS
        w_edit.append(edited_weights(win.graph, win.trace, duration_change=changes.get(win.rank), **e))
        w_base.append(win.graph.weight)
    notes: list[str] = []
    if matched is not None:
        linked = link_windows([(w.rank, w.graph) for w in group], matched)
        after = []
        for i, (win, lw) in enumerate(zip(group, linked)):
            se = lw.self_edges()
            e = edits if edit_ranks is None or win.rank in edit_ranks else NO_EDITS
            plain = edited_weights(win.graph, win.trace, **e)[se].astype(np.float64)
            measured = win.graph.weight[se].astype(np.float64)
            # The class / name / category factors the kernel got, applied to its data time.
            k = np.divide(plain, measured, out=np.ones(len(se)), where=measured > 0)
            f = factor[lw.match] if factor is not None else np.ones(len(se))
            data = np.rint(lw.data * f * k).astype(np.int64)
            w_edit[i] = w_edit[i].copy()
            w_edit[i][se] = data
            after.append(lw.after_last - lw.data + data)
            w_base[i] = w_base[i].copy()
            w_base[i][se] = lw.data
        base_times = replay_together(linked, w_base).times
        together = replay_together(linked, w_edit, after)
        times, holder = together.times, together.last_rank
        codes = [dict(zip((2 * lw.comm + 1).tolist(), lw.match.tolist())) for lw in linked]
        across = step_path(group[0].step, linked, [w.trace for w in group], w_edit, together)
    else:
        base_times = [win.graph.replay() for win in group]
        times = [win.graph.replay(w) for win, w in zip(group, w_edit)]
        holder, codes = np.zeros(0, np.int64), [{} for _ in group]
        across = None
    rows = []
    for win, wb, tb, w, t, code_of in zip(group, w_base, base_times, w_edit, times, codes):
        g = win.graph
        before = g.core.critical_path(wb, tb, 0)
        after_path = g.core.critical_path(w, t, 0)
        measured, predicted = g.measured_end, int(t.max())
        b_after = bound_by(g, win.trace, after_path)
        # Where this rank's path begins: the window start, or a collective's end that
        # another rank held (the time before it is spent waiting for that rank).
        first = int(g.core.src[after_path[0]]) if len(after_path) else int(np.argmax(t))
        waited = int(t[first]) if first in code_of else 0
        held_by = int(holder[code_of[first]]) if waited else None
        row = {"rank": win.rank, "step": win.step, "measured": measured,
               "replayed": int(tb.max()), "predicted": predicted,
               "change_pct": 100.0 * (predicted - measured) / measured if measured else None,
               "bound_before": _top(bound_by(g, win.trace, before), wb[before]),
               "bound_after": _top(b_after, w[after_path])}
        on_path = predicted - waited
        row.update({k: (v * on_path / predicted if v is not None and predicted else v)
                    for k, v in shares(b_after, w[after_path]).items()})
        row[WAITING] = 100.0 * waited / predicted if predicted else None
        row["held_by"] = held_by
        if waited and (row["bound_after"] is None or row[WAITING] > max(
                (row[b] or 0.0) for b in BOUND_BY)):
            row["bound_after"] = WAITING
        rows.append(row)
        if row["bound_before"] != row["bound_after"]:
            notes.append(f"rank {win.rank} step {win.step}: the step is now mostly "
                         f"{row['bound_after']} (was {row['bound_before']})")
    return rows, notes, across


def what_if(traces: Union[Trace, TraceSet], *, kernel_class: Optional[Mapping[str, float]] = None,
            name: Optional[Mapping[str, float]] = None,
            category: Optional[Mapping[str, float]] = None, cpu: float = 1.0,
            zero_launch_overhead: bool = False, drop_comm_waits: bool = False,
            collective_bandwidth: Optional[float] = None,
            collective_busbw_gbps: Optional[float] = None,
            collective_cost: Optional[CostModel] = None,
            duration_change: Optional[Mapping[int, tuple[np.ndarray, np.ndarray]]] = None,
            device: Union[str, Device, None] = None,
            source_device: Union[str, Device, None] = None, devices_file: Optional[str] = None,
            allow_tf32: Union[bool, str] = False,
            edit_ranks: Ranks = None, cross_rank: bool = True,
            ranks: Ranks = None, steps: Steps = None,
            selection: Optional[select.Selection] = None) -> Result:
    """Per (rank, step): measured, replayed (unedited) and predicted (edited) step time,
    change_pct = (predicted - measured) / measured × 100, the category that bounds most of the
    critical path before and after, and the new path's shares. collective_bandwidth scales
    the interconnect's bandwidth (2.0: twice as fast), collective_busbw_gbps sets its bus
    bandwidth; either goes through `collective_cost` (default: fitted to the traces).
    duration_change: per rank, (event rows, ns added to each one's duration), for edits
    computed elsewhere (hta_fast.model.plan_replay). device: this step on another GPU (a
    device table key or name; source_device, devices_file and allow_tf32 as in
    hta_fast.model.predict): every launched GPU event takes its predicted duration there,
    the host stays as it was. edit_ranks: the ranks the factor edits
    apply to (default: all). With several ranks and
    cross_rank, the ranks of a step are replayed together (hta_fast.model.cross_rank): a
    collective ends on no rank before the last rank has reached it, so slowing one rank
    delays the others; on a rank, the critical path then stops where another rank held it,
    and the side tables "path_across_ranks" (per step) and "path_across_ranks_breakdown"
    follow the predicted path across the ranks (as critical_path(cross_rank=True))."""
    edits: dict[str, Any] = dict(kernel_class=kernel_class, name=name, category=category, cpu=cpu,
                                 zero_launch_overhead=zero_launch_overhead,
                                 drop_comm_waits=drop_comm_waits)
    sel = select.selection_of(selection, ranks, steps)
    out: dict[str, list] = {f.name: [] for f in SCHEMA}
    notes: list[str] = []
    changes: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    factor = None
    together = cross_rank and len(select.as_traceset(traces)) > 1
    matched = match_collectives(traces) \
        if together or collective_bandwidth is not None or collective_busbw_gbps is not None \
        else None
    if collective_bandwidth is not None or collective_busbw_gbps is not None:
        assert matched is not None
        factor, bw_notes = collective_bandwidth_factors(
            matched, scale=collective_bandwidth, busbw_gbps=collective_busbw_gbps,
            cost=collective_cost)
        changes = comm_changes(matched, factor)
        notes += bw_notes
    _add_changes(changes, duration_change or {})
    only = None if edit_ranks is None else {int(r) for r in edit_ranks}
    if device is not None:
        # imported here: predict reaches analysis.roofline, which imports this package
        from .device_edit import device_changes
        on_device, device_notes = device_changes(
            traces, device, source_device=source_device, devices_file=devices_file,
            allow_tf32=allow_tf32, selection=select.Selection(ranks=sel.ranks))
        _add_changes(changes, {r: c for r, c in on_device.items() if only is None or r in only})
        notes += device_notes
    groups = step_groups(traces, sel) if together else ([w] for w in each_window(traces, sel))
    path_rows, path_parts = [], []
    for group in groups:
        rows, group_notes, across = _predict_group(group, edits, only, changes,
                                                   matched if together else None, factor)
        notes += group_notes
        if across is not None:
            path_rows.append(across[0])
            path_parts.append(across[1])
        for row in rows:
            for k, v in row.items():
                out[k].append(v)
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    edits.update(collective_bandwidth=collective_bandwidth,
                 collective_busbw_gbps=collective_busbw_gbps,
                 edit_ranks=None if only is None else sorted(only), cross_rank=together,
                 device=device if device is None or isinstance(device, str) else device.key)
    # Together, the predicted path of each step across the ranks (hta_fast.model.cross_rank_path).
    paths = {"path_across_ranks": summary_table(path_rows),
             "path_across_ranks_breakdown": breakdown_table(path_parts)} if together else {}
    return Result("what_if", table, tables=paths, notes=notes,
                  params={"selection": sel, **edits})
