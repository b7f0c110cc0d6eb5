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

Self times, as the PyTorch profiler's TensorBoard plugin counts them in its operator view:
an instance's self CPU time is its duration less that of the CPU operators nested in it and
of the runtime calls (kernel launches, cudaMemcpy, ...) made in its own code (nested in it
with no operator between); its self GPU time is the GPU time of the work those own runtime
calls queued, not its children's. Annotations and Python functions nested in an operator
are part of its own code. An instance that is one call with an outer one (above: the same
name and shapes at any depth, or the same name directly, with no operator between) adds its
self times to that outer call's, so each nanosecond is some row's self time exactly once.
Tensor cores (hta_fast.costs.tensor_cores): a group is eligible when an instance is an
eligible operator, encloses one, or launched a kernel that uses them; tc_self_ratio and
tc_total_ratio are the share of the self and the inclusive GPU time in such kernels.

A kernel replayed by a graph launch counts for the operators that captured it where the
trace holds the capture (hta_fast.frame.graph_attribution; those operators count as
selected wherever their replays are), else for the operators around the graph launch, and
a note says how much GPU time that is.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...costs.cat_sizes import cat_extras
from ...costs.flops import no_model_summary, with_costs
from ...costs.op_args import op_arg_positions
from ...costs.tensor_cores import tensor_core_eligible, uses_tensor_cores
from ...frame import derived, select
from ...frame.fields import NS
from ...frame.graph_attribution import (
    graph_replay_notes,
    operator_launch_pairs,
    with_capturing_ops,
)
from ...frame.launches import LAUNCH_KINDS, ancestor_pairs, enclosing
from ...frame.result import Result
from ...schema import EventKind
from ...trace import Trace
from ...traceset import TraceSet
from .op_kernels import name_matches

__all__ = ["op_table"]

SHAPE_COLUMNS = ("input_dims", "input_type", "input_strides", "concrete_inputs")
# What the TensorBoard plugin's operator view leaves out (op_table(plugin_view=True)): the
# profiler's steps, the DataLoader's and DataPipe's iterations, the optimizer's step and
# zero_grad annotations, DataParallel's forward. op_table keeps them by default: they are
# host time a user asks about.
PLUGIN_HIDDEN = (
    r"^(ProfilerStep#[0-9]+|enumerate\((DataLoader|DataPipe)\)#.*|Optimizer\..*"
    r"|DataParallel\.forward)$"
)

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
        pa.field("self_cpu_time_sum", pa.int64(), metadata=NS),
        pa.field("self_gpu_time_sum", pa.int64(), metadata=NS),
        pa.field("tc_eligible", pa.bool_()),
        pa.field("tc_self_time_sum", pa.int64(), metadata=NS),
        pa.field("tc_time_sum", pa.int64(), metadata=NS),
        pa.field("tc_self_ratio", pa.float64()),
        pa.field("tc_total_ratio", pa.float64()),
        pa.field("example_row", pa.int64()),
        pa.field("example_ts", pa.int64(), metadata=NS),
    ]
)
# Summed per (rank, name) in the side table "by_name" (the plugin's default grouping).
SUMMED = (
    "count",
    "gpu_events",
    "gpu_time_sum",
    "cpu_time_sum",
    "self_cpu_time_sum",
    "self_gpu_time_sum",
    "tc_self_time_sum",
    "tc_time_sum",
)


class OpGroups:
    """One rank's operator instances and their groups, as numpy arrays.

    rows       event rows of the instances, ordered by group, then GPU time
    group      group index of each instance (non-decreasing)
    starts     first position in `rows` of each group (plus len(rows) at the end)
    keys       (n_groups, 5) int32: name id and the four shape-argument string ids (-1: none)
    gpu_time   inclusive GPU time of each instance (ns); gpu_events: their number
    merged, merged_into  the rows of the calls that are part of an outer call (not
               instances), and the instance row each is part of
    """

    def __init__(
        self,
        rows: np.ndarray,
        group: np.ndarray,
        starts: np.ndarray,
        keys: np.ndarray,
        gpu_time: np.ndarray,
        gpu_events: np.ndarray,
        merged: np.ndarray,
        merged_into: np.ndarray,
    ) -> None:
        self.rows, self.group, self.starts, self.keys = rows, group, starts, keys
        self.gpu_time, self.gpu_events = gpu_time, gpu_events
        self.merged, self.merged_into = merged, merged_into

    @property
    def num_groups(self) -> int:
        return len(self.starts) - 1


def op_instance_rows(
    trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]
) -> np.ndarray:
    """Rows of the CPU operator events kept by `mask` (and named op_prefix*, if given)."""
    ok = derived.kind_mask(trace, [EventKind.cpu_op])
    if mask is not None:
        # an operator that captured a graph is selected where its replays are
        ok = ok & with_capturing_ops(trace, mask)
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
    into = _same_call(trace, rows)
    merged, merged_into = rows[into >= 0], into[into >= 0]
    rows = rows[into < 0]
    n_events = len(trace.column("events", "ts"))
    position = np.full(n_events, -1, np.int64)
    position[rows] = np.arange(len(rows))
    is_op = position >= 0

    _, gpu, by = operator_launch_pairs(trace, mask, include_memory_events=True)
    i, anc = ancestor_pairs(trace, by, is_op)
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
    return OpGroups(
        rows,
        group,
        starts,
        keys[starts[:-1]].astype(np.int32),
        gpu_time,
        gpu_events,
        merged,
        merged_into,
    )


def _same_call(trace: Trace, rows: np.ndarray) -> np.ndarray:
    """Per candidate row: the row of the outer call it is part of, -1 where none. A call is
    part of an enclosing candidate (at any depth) with its name and shapes, and of the
    operator directly around it (no operator between) when that has its name: an operator
    re-entering itself through the dispatcher, or through another operator. Counted as an
    instance of its own, its kernels would count twice in one row, once for it and once
    for the outer call. The outer call is the outermost such one."""
    out = np.full(len(rows), -1, np.int64)
    if len(rows) == 0:
        return out
    n_events = len(trace.column("events", "ts"))
    position = np.full(n_events, -1, np.int64)
    position[rows] = np.arange(len(rows))
    i, anc = ancestor_pairs(trace, rows, position >= 0)
    keys = np.column_stack([trace.column("events", "name")[rows], shape_ids(trace, rows)])
    same = np.all(keys[i] == keys[position[anc]], axis=1)
    i, anc = i[same], anc[same]
    # the operator directly around each row, when it is a candidate of the same name
    names = trace.column("events", "name")
    around = enclosing(trace, rows, derived.kind_mask(trace, [EventKind.cpu_op]))
    direct = np.flatnonzero((around >= 0) & (position[np.maximum(around, 0)] >= 0))
    direct = direct[names[around[direct]] == names[rows[direct]]]
    i, anc = np.r_[i, direct], np.r_[anc, around[direct]]
    # the outermost: the earliest start (the longer first on a tie)
    ts, dur = trace.column("events", "ts"), trace.column("events", "dur")
    order = np.lexsort((-dur[anc], ts[anc], i))
    i, anc = i[order], anc[order]
    first = np.r_[True, i[1:] != i[:-1]] if len(i) else np.zeros(0, bool)
    out[i[first]] = position[anc[first]]
    while True:  # an outer call that is itself part of one: follow to the outermost
        up = np.flatnonzero((out >= 0) & (out[np.maximum(out, 0)] >= 0))
        if not len(up):
            break
        out[up] = out[out[up]]
    return np.where(out >= 0, rows[np.maximum(out, 0)], -1)


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


class SelfTimes:
    """Per instance of an OpGroups (its `rows` order), in ns: self_cpu, self_gpu, tc_self
    (self GPU time in tensor-core kernels), tc_time (inclusive), and tc_eligible."""

    def __init__(self, trace: Trace, g: OpGroups, mask: Optional[np.ndarray]) -> None:
        col = trace.column
        kind = col("events", "kind")
        dur = np.maximum(col("events", "dur"), 0).astype(np.int64)
        n = len(kind)
        is_op = kind == EventKind.cpu_op
        # An operator's own code ends where a nested operator or runtime call begins (a
        # driver call inside a runtime call is the runtime call's).
        cover = is_op | np.isin(kind, LAUNCH_KINDS)
        inner = np.flatnonzero(cover)
        around = enclosing(trace, inner, cover)
        keep = (around >= 0) & is_op[np.maximum(around, 0)]
        nested = np.bincount(around[keep], weights=dur[inner[keep]], minlength=n)
        self_cpu = dur - np.rint(nested).astype(np.int64)
        # GPU work queued by an operator's own runtime calls
        _, gpu, by = operator_launch_pairs(trace, mask, include_memory_events=True)
        owner = enclosing(trace, by, is_op)
        has = owner >= 0
        names = col("events", "name")
        ids, inv = np.unique(names[gpu], return_inverse=True)
        tc = uses_tensor_cores(trace.strings_at(ids).to_pylist())[inv.reshape(-1)]
        tc &= kind[gpu] == EventKind.kernel
        self_gpu = np.bincount(owner[has], weights=dur[gpu[has]], minlength=n)
        tc_self = np.bincount(owner[has & tc], weights=dur[gpu[has & tc]], minlength=n)
        # a merged call's self times are its outer call's
        for arr in (self_cpu, self_gpu, tc_self):
            np.add.at(arr, g.merged_into, arr[g.merged])
        rows = g.rows
        self.self_cpu = self_cpu[rows]
        self.self_gpu = np.rint(self_gpu[rows]).astype(np.int64)
        self.tc_self = np.rint(tc_self[rows]).astype(np.int64)
        position = np.full(n, -1, np.int64)
        position[rows] = np.arange(len(rows))
        i, anc = ancestor_pairs(trace, by[tc], position >= 0)
        tc_time = np.bincount(position[anc], weights=dur[gpu[tc][i]], minlength=len(rows))
        self.tc_time = np.rint(tc_time).astype(np.int64)
        # eligible: an eligible operator, one enclosing one, or one that used tensor cores
        ops = np.flatnonzero(is_op)
        eligible_ops = ops[tensor_core_eligible(trace.strings_at(names[ops]).to_pylist())]
        eligible = np.zeros(len(rows), bool)
        eligible[position[eligible_ops[position[eligible_ops] >= 0]]] = True
        _, anc = ancestor_pairs(trace, eligible_ops, position >= 0)
        eligible[position[anc]] = True
        self.tc_eligible = eligible | (self.tc_time > 0)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), 0.0)


def _rank_table(
    rank: int, trace: Trace, mask: Optional[np.ndarray], op_prefix: Optional[str]
) -> pa.Table:
    g = op_groups(trace, mask, op_prefix)
    s = group_stats(g)
    cpu_dur = np.maximum(trace.column("events", "dur"), 0)[g.rows]
    starts = g.starts[:-1]

    def per_group(x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, starts) if g.num_groups else np.zeros(0, x.dtype)

    cpu_sum = per_group(cpu_dur)
    st = SelfTimes(trace, g, mask)
    tc_self, tc_time = per_group(st.tc_self), per_group(st.tc_time)
    self_gpu = per_group(st.self_gpu)
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
        per_group(st.self_cpu).astype(np.int64),
        self_gpu.astype(np.int64),
        np.logical_or.reduceat(st.tc_eligible, starts) if g.num_groups else np.zeros(0, bool),
        tc_self.astype(np.int64),
        tc_time.astype(np.int64),
        _ratio(tc_self, self_gpu),
        _ratio(tc_time, s["sum"]),
        s["example"].astype(np.int64),
        trace.column("events", "ts")[s["example"]],
    ]
    return pa.table(cols, schema=SCHEMA)


def _by_name(table: pa.Table) -> pa.Table:
    """The main table's sums per (rank, name), shapes merged; tc_eligible when any group
    is; ratios from the sums. Sorted like the main table."""
    grouped = table.group_by(["rank", "name"], use_threads=False).aggregate(
        [(c, "sum") for c in SUMMED] + [("tc_eligible", "any")]
    )
    out = pa.table(
        {"rank": grouped["rank"], "name": grouped["name"]}
        | {c: grouped[f"{c}_sum"].cast(pa.int64()) for c in SUMMED}
        | {"tc_eligible": grouped["tc_eligible_any"]}
    )
    ratio = {
        "tc_self_ratio": _ratio(
            as_numpy(out["tc_self_time_sum"]), as_numpy(out["self_gpu_time_sum"])
        ),
        "tc_total_ratio": _ratio(as_numpy(out["tc_time_sum"]), as_numpy(out["gpu_time_sum"])),
    }
    for name, values in ratio.items():
        out = out.append_column(name, array_of(values, pa.float64()))
    fields = [table.schema.field(f.name) for f in out.schema]
    return out.cast(pa.schema(fields)).sort_by(
        [
            ("rank", "ascending"),
            ("gpu_time_sum", "descending"),
            ("count", "descending"),
            ("name", "ascending"),
        ]
    )


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
    plugin_view: bool = False,
) -> Result:
    """One row per (rank, operator name, shape arguments), sorted by rank, then GPU time
    (descending), then name: count (calls), gpu_events, the GPU time statistics,
    cpu_time_sum (inclusive host time), self_cpu_time_sum, self_gpu_time_sum, tc_eligible,
    tc_self_time_sum and tc_time_sum (GPU time in tensor-core kernels, self and inclusive),
    tc_self_ratio and tc_total_ratio (their shares of the self and inclusive GPU time; 0
    without GPU time), example_row/_ts. Side table "by_name": the same sums per (rank,
    name), shapes merged. `op_prefix` keeps only operators named so ("aten::").
    costs=True appends each group's model family, FLOPs and bytes per call and in total
    (hta_fast.costs.flops.with_costs) and adds the side table "no_model" (operators without
    a model, with the reason, their calls and GPU time). plugin_view=True leaves out the
    rows the TensorBoard plugin's operator view leaves out (PLUGIN_HIDDEN: profiler steps,
    the DataLoader's and the optimizer's annotations, DataParallel.forward)."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [
        _rank_table(rank, trace, mask, op_prefix)
        for rank, trace, mask in select.each_rank(traces, sel)
    ]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    if plugin_view and table.num_rows:
        table = table.filter(pc.invert(pc.match_substring_regex(table["name"], PLUGIN_HIDDEN)))
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
    notes += graph_replay_notes(traces, sel)
    tables = {"by_name": _by_name(table)}
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
        params=dict(op_prefix=op_prefix, costs=costs, selection=sel, plugin_view=plugin_view),
    )
