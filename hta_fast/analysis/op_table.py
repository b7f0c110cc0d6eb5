"""CPU operators grouped by name and shape, with the GPU time of the kernels they launched.

An operator instance is a CPU event of kind cpu_op. Its key is its name and the four shape
arguments the profiler records with `record_shapes=True` (Input Dims, Input type, Input
Strides, Concrete Inputs, each the raw JSON text; null when the trace has none). Instances
with the same key form a group.

The GPU time of an instance is the summed duration of every GPU event (kernel, memcpy,
memset) queued by a launch anywhere inside it (at any nesting depth, so `aten::linear`
includes the kernels of its `aten::addmm`). An operator that calls itself with the same
shapes (directly or through other operators) is one call: the inner call is part of the
outer one, so no kernel counts twice in a row. Per group: the number of instances, the number
of GPU events, and the count, sum, mean, median, min, max and population standard deviation
of the instances' GPU time (instances that launched nothing count as 0). The example is the
instance at the (lower) median GPU time.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ..costs.cat_sizes import cat_extras
from ..costs.flops import no_model_summary, with_costs
from ..costs.op_args import op_arg_positions
from ..frame import derived, select
from ..frame.fields import NS
from ..frame.result import Result
from ..schema import EventKind
from ..trace import Trace
from ..traceset import TraceSet
from .launch_stats import launch_pairs
from .op_kernels import name_matches

__all__ = ["op_table"]

SHAPE_COLUMNS = ("input_dims", "input_type", "input_strides", "concrete_inputs")

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("name", pa.string()),
        *[pa.field(c, pa.string()) for c in SHAPE_COLUMNS],
        pa.field("count", pa.int64()),
        pa.field("gpu_events", pa.int64()),
        pa.field("gpu_time_sum", pa.int64(), metadata=NS),
        pa.field("gpu_time_mean", pa.float64(), metadata=NS),
        pa.field("gpu_time_median", pa.float64(), metadata=NS),
        pa.field("gpu_time_min", pa.int64(), metadata=NS),
        pa.field("gpu_time_max", pa.int64(), metadata=NS),
        pa.field("gpu_time_std", pa.float64(), metadata=NS),
        pa.field("cpu_time_sum", pa.int64(), metadata=NS),
        pa.field("example_row", pa.int64()),
        pa.field("example_ts", pa.int64(), metadata=NS),
    ]
)


class OpGroups:
    """One rank's operator instances and their groups, as numpy arrays.

    rows       event rows of the instances, ordered by group, then GPU time
    group      group index of each instance (non-decreasing)
    starts     first position in `rows` of each group (plus len(rows) at the end)
    keys       (n_groups, 5) int32: name id and the four shape-argument string ids (-1: none)
    gpu_time   inclusive GPU time of each instance (ns); gpu_events: their number
    """

    def __init__(
        self,
        rows: np.ndarray,
        group: np.ndarray,
        starts: np.ndarray,
        keys: np.ndarray,
        gpu_time: np.ndarray,
        gpu_events: np.ndarray,
    ) -> None:
        self.rows, self.group, self.starts, self.keys = rows, group, starts, keys
        self.gpu_time, self.gpu_events = gpu_time, gpu_events

    @property
    def num_groups(self) -> int:
        return len(self.starts) - 1


def op_instance_rows(
    trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]
) -> np.ndarray:
    """Rows of the CPU operator events kept by `mask` (and named op_prefix*, if given)."""
    ok = derived.kind_mask(trace, [EventKind.cpu_op])
    if mask is not None:
        ok = ok & mask
    if op_prefix:
        ok = ok & name_matches(trace, op_prefix)
    return np.flatnonzero(ok)


def shape_ids(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """(len(rows), 4) int32 string ids of each row's shape arguments; -1 where absent."""
    out = np.full((len(rows), 4), -1, np.int32)
    pos, found = op_arg_positions(trace, rows)
    for j, c in enumerate(SHAPE_COLUMNS):
        if found.any():
            out[found, j] = trace.column("op_args", c)[pos[found]]
    return out


def ancestor_pairs(
    trace: Trace, rows: np.ndarray, is_target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(i, ancestor) for every CPU ancestor (by `parent`) of rows[i] for which
    is_target[ancestor] holds, at any depth. One vectorised step per nesting level."""
    parent = trace.column("events", "parent")
    idx_parts, anc_parts = [], []
    idx = np.arange(len(rows))
    cur = parent[rows].astype(np.int64)
    while len(idx):
        live = cur >= 0
        idx, cur = idx[live], cur[live]
        hit = is_target[cur]
        idx_parts.append(idx[hit])
        anc_parts.append(cur[hit])
        cur = parent[cur].astype(np.int64)
    if not idx_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(idx_parts), np.concatenate(anc_parts)


def op_groups(
    trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str] = None
) -> OpGroups:
    """Group the operator instances of one trace (see OpGroups). Without a mask the groups
    are computed once per trace and shared (the op table, the roofline and the prediction
    all start from them)."""
    if mask is None:
        return derived.remember(
            trace, ("op_groups", op_prefix), lambda: _op_groups(trace, None, op_prefix)
        )
    return _op_groups(trace, mask, op_prefix)


def _op_groups(trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]) -> OpGroups:
    rows = op_instance_rows(trace, mask, op_prefix)
    rows = rows[~_inside_same_call(trace, rows)]
    n_events = len(trace.column("events", "ts"))
    position = np.full(n_events, -1, np.int64)
    position[rows] = np.arange(len(rows))
    is_op = position >= 0

    launch, gpu = launch_pairs(trace, mask, include_memory_events=True)
    i, anc = ancestor_pairs(trace, launch, is_op)
    dur = np.maximum(trace.column("events", "dur"), 0)
    inst = position[anc]
    gpu_time = np.bincount(inst, weights=dur[gpu[i]], minlength=len(rows)).astype(np.int64)
    gpu_events = np.bincount(inst, minlength=len(rows)).astype(np.int64)

    names = trace.column("events", "name")[rows]
    shapes = shape_ids(trace, rows)
    # groups are contiguous after the sort; inside a group, instances by GPU time then start
    ts = trace.column("events", "ts")[rows]
    order = np.lexsort(
        (ts, gpu_time, shapes[:, 3], shapes[:, 2], shapes[:, 1], shapes[:, 0], names)
    )
    rows, names, shapes = rows[order], names[order], shapes[order]
    gpu_time, gpu_events = gpu_time[order], gpu_events[order]
    keys = np.column_stack([names, shapes]) if len(rows) else np.zeros((0, 5), np.int32)
    new = np.r_[True, np.any(keys[1:] != keys[:-1], axis=1)] if len(rows) else np.zeros(0, bool)
    starts = np.r_[np.flatnonzero(new), len(rows)].astype(np.int64)
    group = np.cumsum(new) - 1
    return OpGroups(rows, group, starts, keys[starts[:-1]].astype(np.int32), gpu_time, gpu_events)


def _inside_same_call(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per instance row: whether an enclosing instance (at any depth) has its name and
    shapes. Such a call (an operator re-entering itself through the dispatcher, or through
    another operator) is part of the outer call: counted as an instance of its own, its
    kernels would count twice in one row, once for it and once for the outer call."""
    if len(rows) == 0:
        return np.zeros(0, bool)
    n_events = len(trace.column("events", "ts"))
    position = np.full(n_events, -1, np.int64)
    position[rows] = np.arange(len(rows))
    i, anc = ancestor_pairs(trace, rows, position >= 0)
    keys = np.column_stack([trace.column("events", "name")[rows], shape_ids(trace, rows)])
    same = np.all(keys[i] == keys[position[anc]], axis=1)
    out = np.zeros(len(rows), bool)
    out[i[same]] = True
    return out


def group_stats(g: OpGroups) -> dict[str, np.ndarray]:
    """Per group: count, gpu_events, GPU time sum/mean/median/min/max/std (population)."""
    starts, ends = g.starts[:-1], g.starts[1:]
    count = ends - starts
    if not len(count):
        z = np.zeros(0)
        return dict(
            count=z.astype(np.int64),
            gpu_events=z.astype(np.int64),
            sum=z.astype(np.int64),
            mean=z,
            median=z,
            min=z.astype(np.int64),
            max=z.astype(np.int64),
            std=z,
            example=z.astype(np.int64),
        )
    t = g.gpu_time
    total = np.add.reduceat(t, starts)
    mean = total / count
    sq = np.add.reduceat((t - mean[g.group]) ** 2, starts)
    lo, hi = starts + (count - 1) // 2, starts + count // 2
    return dict(
        count=count,
        gpu_events=np.add.reduceat(g.gpu_events, starts),
        sum=total,
        mean=mean,
        median=(t[lo] + t[hi]) / 2,
        min=t[starts],
        max=t[ends - 1],
        std=np.sqrt(sq / count),
        example=g.rows[lo],
    )


def _rank_table(
    rank: int, trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]
) -> pa.Table:
    g = op_groups(trace, mask, op_prefix)
    s = group_stats(g)
    cpu_dur = np.maximum(trace.column("events", "dur"), 0)[g.rows]
    cpu_sum = np.add.reduceat(cpu_dur, g.starts[:-1]) if g.num_groups else np.zeros(0, np.int64)
    cols = [np.full(g.num_groups, rank, np.int64), trace.strings_at(g.keys[:, 0])]
    cols += [trace.strings_at(g.keys[:, 1 + j]) for j in range(4)]
    cols += [
        s["count"].astype(np.int64),
        s["gpu_events"].astype(np.int64),
        s["sum"].astype(np.int64),
        s["mean"],
        s["median"],
        s["min"].astype(np.int64),
        s["max"].astype(np.int64),
        s["std"],
        cpu_sum.astype(np.int64),
        s["example"].astype(np.int64),
        trace.column("events", "ts")[s["example"]],
    ]
    return pa.table(cols, schema=SCHEMA)


def op_table(
    traces: Union[Trace, TraceSet],
    *,
    op_prefix: Optional[str] = None,
    costs: bool = False,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per (rank, operator name, shape arguments), sorted by rank, then GPU time
    (descending), then name. `op_prefix` keeps only operators named so ("aten::").
    costs=True appends each group's model family, FLOPs and bytes per call and in total
    (hta_fast.costs.flops.with_costs) and adds the side table "no_model" (operators without
    a model, with the reason, their calls and GPU time)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [
        _rank_table(rank, trace, mask, op_prefix)
        for rank, trace, mask in select.each_rank(traces, sel)
    ]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    table = table.sort_by(
        [
            ("rank", "ascending"),
            ("gpu_time_sum", "descending"),
            ("count", "descending"),
            ("name", "ascending"),
        ]
    )
    notes = []
    if table.num_rows and table["input_dims"].null_count == table.num_rows:
        notes.append("no operator shapes in this trace (profile with record_shapes=True)")
    if not table.num_rows:
        notes.append("no CPU operators selected")
    tables = {}
    if costs:
        extras: dict = {}
        for rank, trace, mask in select.each_rank(traces, sel):
            extras.update(cat_extras(trace, op_instance_rows(trace, mask, op_prefix), rank))
        table = with_costs(table, extras)
        notes += [
            f"{k[1]} {k[2]} (rank {k[0]}): output size from the CatBackward0 nodes of "
            f"{e['tied']} of {e['calls']} calls; the others are assumed their mean size"
            for k, e in extras.items()
            if e["tied"] < e["calls"]
        ]
        tables["no_model"] = no_model_summary(table)
    return Result(
        "op_table",
        table,
        tables=tables,
        notes=notes,
        params=dict(op_prefix=op_prefix, costs=costs, selection=sel),
    )
