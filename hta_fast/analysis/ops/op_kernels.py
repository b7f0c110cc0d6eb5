"""Which kernels each operator launches, and how long launching them took.

Each kernel launch is attributed to its operator: the innermost enclosing CPU event whose
name starts with `op_prefix` ("aten::"), found by walking the launch's `parent` chain (so
on the launch's own thread). With the default prefix that is the deepest aten op around the
launch: for `aten::linear -> aten::addmm -> cudaLaunchKernel` it is `aten::addmm`.

Per operator instance, its kernel sequence is the names of the kernels its launches queued
(launch order, then GPU start within a launch, so a graph launch contributes all its
kernels), joined with " -> ". The delays of an instance are those of its first launch:

    op_launch_delay = first launch start - operator start
    runtime_delay   = first kernel start - first launch start

The main table groups instances by (operator name, kernel sequence).

A kernel replayed by a graph launch belongs to the operator that captured it where the
trace holds the capture (hta_fast.frame.graph_attribution), and each replay is one instance
of that operator: its op_launch_delay is that of the captured launch (captured launch
start - operator start), its runtime_delay runs from the graph launch. Without a capture
the kernels stay with the operator around the graph launch, and a note says so.

kernel_launch_configs groups kernels as the PyTorch profiler's TensorBoard plugin's kernel
view does: by kernel name, the operator that launched it (the innermost CPU operator around
its launch, whatever its name) and launch configuration (grid, block, registers per thread,
shared memory).
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...costs.tensor_cores import tensor_core_eligible, uses_tensor_cores
from ...frame import derived, select
from ...frame.fields import NS
from ...frame.graph_attribution import (
    graph_replay_notes,
    operator_launch_pairs,
    operator_launches,
)
from ...frame.kernel_args import kernel_arg, locate
from ...frame.launches import enclosing
from ...frame.result import Result
from ...schema import GPU_KINDS, EventKind
from ...trace import Trace
from ...traceset import TraceSet

__all__ = ["op_kernels", "kernel_launch_configs"]

SEPARATOR = " -> "

INSTANCE_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("op_name", pa.string()),
        pa.field("pid", pa.int64()),
        pa.field("tid", pa.int64()),
        pa.field("op_ts", pa.int64(), metadata=NS),
        pa.field("kernel_sequence", pa.string()),
        pa.field("num_kernels", pa.int64()),
        pa.field("op_launch_delay", pa.int64(), metadata=NS),
        pa.field("runtime_delay", pa.int64(), metadata=NS),
    ]
)
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("op_name", pa.string()),
        pa.field("kernel_sequence", pa.string()),
        pa.field("occurrence_count", pa.int64()),
        pa.field("avg_op_launch_delay", pa.float64(), metadata=NS),
        pa.field("avg_runtime_delay", pa.float64(), metadata=NS),
    ]
)


LAUNCH_CONFIG = (
    "grid_x",
    "grid_y",
    "grid_z",
    "block_x",
    "block_y",
    "block_z",
    "registers_per_thread",
    "shared_memory",
)
CONFIG_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("kernel", pa.string()),
        pa.field("op_name", pa.string()),
        *[pa.field(c, pa.int64()) for c in LAUNCH_CONFIG],
        pa.field("calls", pa.int64()),
        pa.field("total_time", pa.int64(), metadata=NS),
        pa.field("mean_time", pa.float64(), metadata=NS),
        pa.field("min_time", pa.int64(), metadata=NS),
        pa.field("max_time", pa.int64(), metadata=NS),
        pa.field("mean_blocks_per_sm", pa.float64()),
        pa.field("mean_occupancy", pa.float64(), metadata={"unit": "%"}),
        pa.field("tensor_cores", pa.bool_()),
        pa.field("op_tc_eligible", pa.bool_()),
    ]
)


def name_matches(trace: Trace, prefix: str) -> np.ndarray:
    """Per event row: its name starts with prefix and it is a CPU event."""
    by_id = as_numpy(pc.starts_with(trace.strings, prefix))
    names = trace.column("events", "name")
    kind = trace.column("events", "kind")
    ok = (names >= 0) & ~np.isin(kind, GPU_KINDS)
    ok[ok] = by_id[names[ok]]
    return ok


def joined_names(trace: Trace, offsets: np.ndarray, rows: np.ndarray, sep: str) -> pa.Array:
    """Names of rows[offsets[i]:offsets[i+1]] joined with sep, per group i."""
    names = trace.strings.take(array_of(trace.column("events", "name")[rows], pa.int32()))
    lists = pa.ListArray.from_arrays(array_of(offsets, pa.int32()), names.cast(pa.string()))
    return pc.binary_join(lists, sep)


def _instances(rank: int, trace: Trace, mask: Optional[np.ndarray], op_prefix: str) -> pa.Table:
    launch, gpu, by = operator_launch_pairs(trace, mask, include_memory_events=False)
    op = enclosing(trace, by, name_matches(trace, op_prefix))
    keep = op >= 0
    launch, gpu, by, op = launch[keep], gpu[keep], by[keep], op[keep]
    # group the (launch, kernel) pairs by operator, keeping launch order inside each; an
    # operator that captured a graph is an instance per replay (the replay's graph launch)
    replay = np.where(by != launch, launch, -1)
    if replay.max(initial=-1) >= 0:
        order = np.lexsort((np.arange(len(op)), replay, op))
    else:
        order = np.argsort(op, kind="stable")
    launch, gpu, by, op, replay = launch[order], gpu[order], by[order], op[order], replay[order]
    new = np.r_[True, (op[1:] != op[:-1]) | (replay[1:] != replay[:-1])]
    first = np.flatnonzero(new) if len(op) else np.zeros(0, np.int64)
    offsets = np.r_[first, len(op)]
    col = trace.column
    ts = col("events", "ts")
    ops, l0, g0, b0 = op[first], launch[first], gpu[first], by[first]
    seq = joined_names(trace, offsets, gpu, SEPARATOR)
    op_names = trace.strings.take(array_of(col("events", "name")[ops], pa.int32()))
    table = pa.table(
        [
            np.full(len(ops), rank, np.int64),
            op_names.cast(pa.string()),
            col("events", "pid")[ops],
            col("events", "tid")[ops],
            ts[ops],
            seq,
            np.diff(offsets).astype(np.int64),
            ts[b0] - ts[ops],
            ts[g0] - ts[l0],
        ],
        schema=INSTANCE_SCHEMA,
    )
    return table.sort_by([("op_ts", "ascending"), ("tid", "ascending")])


def op_kernels(
    traces: Union[Trace, TraceSet],
    *,
    op_prefix: str = "aten::",
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank, operator name and kernel sequence: occurrence_count, avg_op_launch_delay,
    avg_runtime_delay (ns), sorted by rank, occurrence_count descending, op_name,
    kernel_sequence. Side table "instances": one row per operator instance."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [
        _instances(rank, trace, mask, op_prefix)
        for rank, trace, mask in select.each_rank(traces, sel)
    ]
    inst = pa.concat_tables(parts) if parts else INSTANCE_SCHEMA.empty_table()
    grouped = inst.group_by(["rank", "op_name", "kernel_sequence"], use_threads=False).aggregate(
        [("op_launch_delay", "count"), ("op_launch_delay", "mean"), ("runtime_delay", "mean")]
    )
    table = pa.table(
        [
            grouped["rank"],
            grouped["op_name"],
            grouped["kernel_sequence"],
            grouped["op_launch_delay_count"].cast(pa.int64()),
            grouped["op_launch_delay_mean"],
            grouped["runtime_delay_mean"],
        ],
        schema=SCHEMA,
    )
    table = table.sort_by(
        [
            ("rank", "ascending"),
            ("occurrence_count", "descending"),
            ("op_name", "ascending"),
            ("kernel_sequence", "ascending"),
        ]
    )
    notes = [] if inst.num_rows else [f"no kernel launch inside a '{op_prefix}*' operator"]
    notes += graph_replay_notes(traces, sel)
    return Result(
        "op_kernels",
        table,
        tables={"instances": inst},
        notes=notes,
        params=dict(op_prefix=op_prefix, selection=sel),
    )


def _launch_configs(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    col = trace.column
    kern = np.flatnonzero(derived.kind_mask(trace, [EventKind.kernel]))
    if mask is not None:
        kern = kern[mask[kern]]
    launch = col("events", "partner")[kern].astype(np.int64)
    op = np.full(len(kern), -1, np.int64)
    has = launch >= 0
    by = operator_launches(trace, launch[has], kern[has])
    op[has] = enclosing(trace, by, derived.kind_mask(trace, [EventKind.cpu_op]))
    names = col("events", "name")
    dur = np.maximum(col("events", "dur")[kern], 0).astype(np.int64)
    where = locate(trace, kern)
    config = np.column_stack(
        [kernel_arg(trace, kern, c, where).astype(np.int64) for c in LAUNCH_CONFIG]
    ).reshape(len(kern), len(LAUNCH_CONFIG))
    op_name = np.where(op >= 0, names[np.maximum(op, 0)], -1)
    keys = np.column_stack([names[kern], op_name, config])
    if not len(kern):
        return CONFIG_SCHEMA.empty_table()
    uniq, first, code = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    code = code.reshape(-1)
    k = len(uniq)
    # Duration-weighted means, as the plugin weighs them; NaN where never recorded.
    weighted = {}
    for c in ("blocks_per_sm", "est_achieved_occupancy"):
        v = kernel_arg(trace, kern, c, where).astype(np.float64)
        ok = ~np.isnan(v)
        w = np.bincount(code[ok], weights=dur[ok], minlength=k)
        with np.errstate(divide="ignore", invalid="ignore"):
            weighted[c] = np.bincount(code[ok], weights=(v * dur)[ok], minlength=k) / w
    total = np.bincount(code, weights=dur, minlength=k)
    calls = np.bincount(code, minlength=k)
    lo = np.full(k, np.iinfo(np.int64).max)
    hi = np.zeros(k, np.int64)
    np.minimum.at(lo, code, dur)
    np.maximum.at(hi, code, dur)
    kernel_names = trace.strings_at(uniq[:, 0]).to_pylist()
    ops = [
        None if i < 0 else s
        for i, s in zip(uniq[:, 1], trace.strings_at(np.maximum(uniq[:, 1], 0)).to_pylist())
    ]
    configs = [
        array_of(uniq[:, 2 + j], pa.int64(), mask=uniq[:, 2 + j] < 0)
        for j in range(len(LAUNCH_CONFIG))
    ]
    return pa.table(
        [
            np.full(k, rank, np.int64),
            array_of(kernel_names, pa.string()),
            array_of(ops, pa.string()),
            *configs,
            calls.astype(np.int64),
            np.rint(total).astype(np.int64),
            total / calls,
            lo,
            hi,
            pa.array(weighted["blocks_per_sm"], pa.float64(), from_pandas=True),
            pa.array(weighted["est_achieved_occupancy"], pa.float64(), from_pandas=True),
            uses_tensor_cores(kernel_names),
            tensor_core_eligible(ops),
        ],
        schema=CONFIG_SCHEMA,
    )


def kernel_launch_configs(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per (rank, kernel, operator, launch configuration): the operator that
    launched the kernel (null when its launch is not inside one, or not in the trace),
    grid_x/y/z, block_x/y/z, registers_per_thread, shared_memory (null where the trace has
    none), calls, total/mean/min/max_time, mean_blocks_per_sm and mean_occupancy (weighted
    by duration, as the PyTorch profiler's TensorBoard plugin weighs them), tensor_cores
    (the kernel uses them) and op_tc_eligible (its operator is one that could;
    hta_fast.costs.tensor_cores). Sorted by rank, total_time descending, kernel."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [
        _launch_configs(rank, trace, mask) for rank, trace, mask in select.each_rank(traces, sel)
    ]
    table = pa.concat_tables(parts) if parts else CONFIG_SCHEMA.empty_table()
    table = table.sort_by(
        [("rank", "ascending"), ("total_time", "descending"), ("kernel", "ascending")]
    )
    notes = [] if table.num_rows else ["no kernels selected"]
    if table.num_rows and table["grid_x"].null_count == table.num_rows:
        notes.append("no launch configurations recorded (no grid/block kernel arguments)")
    notes += graph_replay_notes(traces, sel)
    return Result("kernel_launch_configs", table, notes=notes, params=dict(selection=sel))
