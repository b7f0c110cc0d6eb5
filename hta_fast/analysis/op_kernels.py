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
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..frame import select
from ..frame.fields import NS
from ..frame.result import Result
from ..schema import GPU_KINDS
from ..trace import Trace
from ..traceset import TraceSet
from .launch_stats import launch_pairs

__all__ = ["op_kernels"]

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


def enclosing(trace: Trace, rows: np.ndarray, is_target: np.ndarray) -> np.ndarray:
    """For each row, the innermost CPU ancestor (by `parent`) for which is_target[ancestor]
    holds; -1 where there is none. One vectorised step per nesting level."""
    parent = trace.column("events", "parent")
    found = np.full(len(rows), -1, np.int64)
    cur = parent[rows].astype(np.int64)
    active = cur >= 0
    while active.any():
        idx = np.flatnonzero(active)
        hit = is_target[cur[idx]]
        found[idx[hit]] = cur[idx[hit]]
        miss = idx[~hit]
        cur[miss] = parent[cur[miss]]
        active[:] = False
        active[miss] = cur[miss] >= 0
    return found


def name_matches(trace: Trace, prefix: str) -> np.ndarray:
    """Per event row: its name starts with prefix and it is a CPU event."""
    by_id = pc.starts_with(trace.strings, prefix).to_numpy(zero_copy_only=False)
    names = trace.column("events", "name")
    kind = trace.column("events", "kind")
    ok = (names >= 0) & ~np.isin(kind, GPU_KINDS)
    ok[ok] = by_id[names[ok]]
    return ok


def joined_names(trace: Trace, offsets: np.ndarray, rows: np.ndarray, sep: str) -> pa.Array:
    """Names of rows[offsets[i]:offsets[i+1]] joined with sep, per group i."""
    names = trace.strings.take(pa.array(trace.column("events", "name")[rows], pa.int32()))
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), names.cast(pa.string()))
    return pc.binary_join(lists, sep)


def _instances(rank: int, trace: Trace, mask: Optional[np.ndarray], op_prefix: str) -> pa.Table:
    launch, gpu = launch_pairs(trace, mask, include_memory_events=False)
    op = enclosing(trace, launch, name_matches(trace, op_prefix))
    keep = op >= 0
    launch, gpu, op = launch[keep], gpu[keep], op[keep]
    # group the (launch, kernel) pairs by operator, keeping launch order inside each
    order = np.argsort(op, kind="stable")
    launch, gpu, op = launch[order], gpu[order], op[order]
    first = np.flatnonzero(np.r_[True, op[1:] != op[:-1]]) if len(op) else np.zeros(0, np.int64)
    offsets = np.r_[first, len(op)]
    col = trace.column
    ts = col("events", "ts")
    ops, l0, g0 = op[first], launch[first], gpu[first]
    seq = joined_names(trace, offsets, gpu, SEPARATOR)
    op_names = trace.strings.take(pa.array(col("events", "name")[ops], pa.int32()))
    table = pa.table(
        [
            np.full(len(ops), rank, np.int64),
            op_names.cast(pa.string()),
            col("events", "pid")[ops],
            col("events", "tid")[ops],
            ts[ops],
            seq,
            np.diff(offsets).astype(np.int64),
            ts[l0] - ts[ops],
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
    return Result(
        "op_kernels",
        table,
        tables={"instances": inst},
        notes=notes,
        params=dict(op_prefix=op_prefix, selection=sel),
    )
