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
                   for its size (hta_fast.model.whatif.bandwidth_edit); the rest of a kernel's
                   duration, waiting for other ranks, is kept
    device         this step on another GPU: each launched GPU event's duration becomes the
                   one hta_fast.model.predict gives on that device (hta_fast.model.whatif.device_edit);
                   the host, the waits and the launch order stay as recorded

Factors on one event multiply. The replay keeps each lane's order and each wait's measured or
typical cost (docs/model.md, "Weights"), so a shorter kernel lets the work queued behind it,
and the host waiting for it, move up.
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...frame.fields import NS, PCT
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...schema import KernelClass
from ...trace import Trace
from ...traceset import TraceSet
from .bandwidth_edit import collective_bandwidth_factors
from ..comm.collective_cost import CostModel
from ..comm.collective_links import MatchedCollectives, match_collectives
from ..path.ranks import chain_step_paths, step_path
from ..replay.cross_rank import LinkedWindow, Together, link_windows, replay_together
from ..path.across_ranks_rows import breakdown_table, summary_table
from ..graph.dependency_graph import EDGE, DependencyGraph
from ...costs.devices import Device
from ..path.bounds import BOUND_BY
from .chain import chain_rows
from ..graph.chains import chain_groups, each_chain
from ..replay.step_rows import WAITING, Replayed, step_row
from ..graph.windows import Window, each_window, step_groups

DROPPED = -(1 << 50)  # a weight that no path through it can win with

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
    src_row = graph.rows[np.minimum(graph.src // 2, len(graph.rows) - 1)]
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
        is_launch[graph.src[types == EDGE["launch"]] // 2] = True
        w[(types == EDGE["cpu_self"]) & is_launch[graph.src // 2]] = 0
    out = np.rint(w).astype(np.int64)
    if drop_comm_waits:
        comm_src = trace.column("events", "kernel_class")[src_row] == KernelClass.COMM
        waits = np.isin(types, [EDGE["cross_stream"], EDGE["sync_wait"]]) & comm_src
        out[waits] = DROPPED
    return out


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


def _replay_group(graphs: Sequence[tuple[int, Trace, DependencyGraph]], edits: Mapping[str, Any],
                  edit_ranks: Optional[set[int]],
                  changes: Mapping[int, tuple[np.ndarray, np.ndarray]],
                  matched: Optional[MatchedCollectives], factor: Optional[np.ndarray]
                  ) -> tuple[list[Replayed], np.ndarray,
                             Optional[tuple[list[LinkedWindow], Together]]]:
    """These graphs (one per rank, the same steps) replayed as measured and edited: together
    when `matched` is given (cross-rank), else each alone; per collective code the rank that
    reached it last; and, together, the linked graphs and their edited joint replay."""
    w_edit, w_base = [], []
    for rank, trace, graph in graphs:
        e = edits if edit_ranks is None or rank in edit_ranks else NO_EDITS
        w_edit.append(edited_weights(graph, trace, duration_change=changes.get(rank), **e))
        w_base.append(graph.weight)
    if matched is not None:
        linked = link_windows([(rank, g) for rank, _, g in graphs], matched)
        after = []
        for i, ((rank, trace, graph), lw) in enumerate(zip(graphs, linked)):
            se = lw.self_edges()
            e = edits if edit_ranks is None or rank in edit_ranks else NO_EDITS
            plain = edited_weights(graph, trace, **e)[se].astype(np.float64)
            measured = graph.weight[se].astype(np.float64)
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
        joint: Optional[tuple[list[LinkedWindow], Together]] = (linked, together)
    else:
        base_times = [g.replay() for _, _, g in graphs]
        times = [g.replay(w) for (_, _, g), w in zip(graphs, w_edit)]
        holder, codes = np.zeros(0, np.int64), [{} for _ in graphs]
        joint = None
    return [Replayed(*r) for r in zip(w_base, base_times, w_edit, times, codes)], holder, joint


def _window_rows(group: list[Window], replayed: list[Replayed], holder: np.ndarray
                 ) -> list[dict[str, Any]]:
    rows = []
    for win, r in zip(group, replayed):
        g, t = win.graph, r.times
        before = g.core.critical_path(r.w_base, r.base_times, 0)
        after_path = g.core.critical_path(r.w_edit, t, 0)
        # Where this rank's path begins: the window start, or a collective's end that
        # another rank held (the time before it is spent waiting for that rank).
        first = int(g.core.src[after_path[0]]) if len(after_path) else int(np.argmax(t))
        waited = int(t[first]) if first in r.code_of else 0
        rows.append(step_row(win.rank, win.step, g, win.trace, r, holder, g.measured_end,
                             int(r.base_times.max()), int(t.max()), before,
                             r.w_base[before], after_path, r.w_edit[after_path], first, waited))
    return rows


def _notes(rows: list[dict[str, Any]]) -> list[str]:
    return [f"rank {row['rank']} step {row['step']}: the step is now mostly "
            f"{row['bound_after']} (was {row['bound_before']})"
            for row in rows if row["bound_before"] != row["bound_after"]]


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
            edit_ranks: Ranks = None, cross_rank: bool = True, chained: bool = True,
            ranks: Ranks = None, steps: Steps = None,
            selection: Optional[select.Selection] = None) -> Result:
    """Per (rank, step): measured, replayed (unedited) and predicted (edited) step time,
    change_pct = (predicted - measured) / measured × 100, the category that bounds most of the
    critical path before and after, and the new path's shares. collective_bandwidth scales
    the interconnect's bandwidth (2.0: twice as fast), collective_busbw_gbps sets its bus
    bandwidth; either goes through `collective_cost` (default: fitted to the traces).
    duration_change: per rank, (event rows, ns added to each one's duration), for edits
    computed elsewhere (hta_fast.model.plans.plan_replay). device: this step on another GPU (a
    device table key or name; source_device, devices_file and allow_tf32 as in
    hta_fast.model.predict): every launched GPU event takes its predicted duration there,
    the host stays as it was. edit_ranks: the ranks the factor edits
    apply to (default: all). With several ranks and
    cross_rank, the ranks of a step are replayed together (hta_fast.model.replay.cross_rank): a
    collective ends on no rank before the last rank has reached it, so slowing one rank
    delays the others; on a rank, the critical path then stops where another rank held it.
    chained (default): each rank's consecutive selected steps are replayed as one graph
    (hta_fast.model.graph.chains), so a step starts where the one before it ends and the GPU work
    it carries over follows the replayed previous step; False: each step's window alone,
    its carried-over work at its measured time. With several ranks replayed together, the
    side tables "path_across_ranks" (per step) and "path_across_ranks_breakdown" follow each
    step's predicted path across the ranks (as critical_path(cross_rank=True), chained or
    not)."""
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
    link = matched if together else None
    rows: list[dict[str, Any]] = []
    path_rows: list[dict[str, Any]] = []
    path_parts: list[pa.Table] = []
    if chained:
        for chains in (chain_groups(traces, sel) if together else
                       ([c] for c in each_chain(traces, sel))):
            replayed, holder, joint = _replay_group([(c.rank, c.trace, c.graph) for c in chains],
                                                    edits, only, changes, link, factor)
            rows += chain_rows(chains, replayed, holder)
            if joint is not None:
                # The predicted path of each step across its ranks (hta_fast.model.path.across_ranks).
                for row, part in chain_step_paths(chains, joint[0], [r.w_edit for r in replayed],
                                                  joint[1]):
                    path_rows.append(row)
                    path_parts.append(part)
    # With chains, only ranks without profiler steps are left: each is one window.
    windows = (step_groups(traces, sel, chained) if together else
               ([w] for w in each_window(traces, sel, chained)))
    for group in windows:
        replayed, holder, joint = _replay_group([(w.rank, w.trace, w.graph) for w in group],
                                                edits, only, changes, link, factor)
        rows += _window_rows(group, replayed, holder)
        if joint is not None and group[0].step is not None:
            # The predicted path of this step across its ranks (hta_fast.model.path.across_ranks).
            row, part = step_path(group[0].step, joint[0], [w.trace for w in group],
                                  [r.w_edit for r in replayed], joint[1])
            path_rows.append(row)
            path_parts.append(part)
    if together:
        rows.sort(key=lambda row: (row["step"] is not None, row["step"] or 0, row["rank"]))
    else:
        rows.sort(key=lambda row: (row["rank"], row["step"] is not None, row["step"] or 0))
    notes += _notes(rows)
    for row in rows:
        for k, v in row.items():
            out[k].append(v)
    table = pa.table({f.name: pa.array(out[f.name], f.type) for f in SCHEMA}, schema=SCHEMA)
    edits.update(collective_bandwidth=collective_bandwidth,
                 collective_busbw_gbps=collective_busbw_gbps,
                 edit_ranks=None if only is None else sorted(only), cross_rank=together,
                 chained=chained,
                 device=device if device is None or isinstance(device, str) else device.key)
    paths = {"path_across_ranks": summary_table(path_rows),
             "path_across_ranks_breakdown": breakdown_table(path_parts)} if together else {}
    return Result("what_if", table, tables=paths, notes=notes,
                  params={"selection": sel, **edits})
