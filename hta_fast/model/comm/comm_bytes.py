"""Bytes moved by each collective, from its recorded arguments, and the bandwidth achieved.

The collective's size and bus factor are nccl-tests' (hta_fast.costs.collectives, which the
rank summaries and the doctor call too): the larger of its input and output buffers, in
bytes, its dtype the arguments' else its kernel name's. Algorithm bandwidth = size / time;
bus bandwidth scales it by the fraction of the data each rank must send on the wire.

The time is the GPU event's duration when the arguments sit on an NCCL kernel; when they
sit on a CPU `record_param_comms` event, the GPU time of the kernels it launched. A CPU
event whose kernels carry the arguments themselves is left out, so nothing counts twice.
A collective whose dtype or sizes are missing is kept, with null bytes and the reason.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ... import _arrow
from ...costs import dtypes
from ...costs.collectives import bus_factor, collective_dtype, message_bytes
from ...frame import select
from ...frame.fields import NS
from ...frame.launches import ancestor_pairs, launch_pairs
from ...frame.result import Result
from ...schema import GPU_KINDS
from ...trace import Trace
from ...traceset import TraceSet

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("row", pa.int64()),
        pa.field("collective", pa.string()),
        pa.field("dtype", pa.string()),
        pa.field("group_size", pa.int64()),
        pa.field("bytes", pa.float64(), metadata={"unit": "B"}),
        pa.field("time", pa.int64(), metadata=NS),
        pa.field("algbw", pa.float64(), metadata={"unit": "B/s"}),
        pa.field("busbw", pa.float64(), metadata={"unit": "B/s"}),
        pa.field("no_model", pa.string()),
    ]
)


def _timing(
    trace: Trace, rows: np.ndarray, mask: Optional[np.ndarray]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per comm_args row: its GPU time (-1: none), whether it is kept (not a CPU event whose
    kernels carry the arguments too), and its kernel (itself, or the first it launched; -1)."""
    kind = trace.column("events", "kind")
    dur = np.maximum(trace.column("events", "dur"), 0)
    is_gpu = np.isin(kind[rows], GPU_KINDS)
    # GPU time under each CPU row, and whether its kernels carry the arguments themselves
    n = len(kind)
    is_cpu_row = np.zeros(n, bool)
    is_cpu_row[rows[~is_gpu]] = True
    has_args = np.zeros(n, bool)
    has_args[rows] = True
    launch, gpu = launch_pairs(trace, mask, include_memory_events=False)
    i, anc = ancestor_pairs(trace, launch, is_cpu_row)
    under = np.zeros(n, np.int64)
    np.add.at(under, anc, dur[gpu[i]])
    dup = np.zeros(n, bool)
    dup[anc[has_args[gpu[i]]]] = True
    first = np.full(n, -1, np.int64)
    order = np.argsort(i, kind="stable")  # launches come in start order
    cpu, at = np.unique(anc[order], return_index=True)
    first[cpu] = gpu[i[order][at]]
    time = np.where(is_gpu, dur[rows], np.where(under[rows] > 0, under[rows], -1))
    keep = np.ones(len(rows), bool) if mask is None else mask[rows]
    return time, keep & ~dup[rows], np.where(is_gpu, rows, first[rows])


def _rank_rows(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    rows = trace.column("comm_args", "row")
    time, keep, kernel = _timing(trace, rows, mask)
    # Column by column from the pool: the tables would stay on every rank.
    names = [str(x or "") for x in trace.column_array("comm_args", "collective_name").to_pylist()]
    arg_dtypes = trace.column_array("comm_args", "dtype").to_pylist()
    kernel_names = (
        trace.strings_at(trace.column("events", "name")[np.maximum(kernel, 0)]).to_pylist()
        if len(rows)
        else []
    )
    dtype = [
        collective_dtype(d, k if r >= 0 else None)
        for d, k, r in zip(arg_dtypes, kernel_names, kernel)
    ]
    n_in = trace.column("comm_args", "in_msg_nelems")
    n_out = trace.column("comm_args", "out_msg_nelems")
    group = trace.column("comm_args", "group_size").astype(np.int64)
    nbytes = message_bytes(n_in, n_out, dtype)
    reasons = [
        None
        if known
        else f"dtype {d!r} unknown"
        if dtypes.itemsize(d) is None
        else "message size not recorded"
        for known, d in zip(~np.isnan(nbytes), dtype)
    ]
    secs = np.where(time > 0, time, np.nan) / 1e9
    algbw = nbytes / secs
    factor = np.array([bus_factor(nm, int(g)) for nm, g in zip(names, group)], np.float64)
    t = pa.table(
        [
            np.full(len(rows), rank, np.int64),
            rows,
            pa.array(names, pa.string()),
            pa.array([None if d is None else str(d) for d in dtype], pa.string()),
            _arrow.masked(group, group < 0),
            pa.array(nbytes, from_pandas=True),
            _arrow.masked(time, time < 0),
            pa.array(algbw, from_pandas=True),
            pa.array(algbw * factor, from_pandas=True),
            pa.array(reasons, pa.string()),
        ],
        schema=SCHEMA,
    )
    return t.filter(pa.array(keep))


def comm_bytes(
    traces: Union[Trace, TraceSet],
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """One row per collective call with recorded arguments: bytes, time, algbw, busbw.
    Side table "summary": per (rank, collective, dtype, group size) counts and sums."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [_rank_rows(rank, trace, mask) for rank, trace, mask in select.each_rank(traces, sel)]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    summary = table.group_by(
        ["rank", "collective", "dtype", "group_size"], use_threads=False
    ).aggregate([("row", "count"), ("bytes", "sum"), ("time", "sum")])
    summary = summary.rename_columns(
        ["rank", "collective", "dtype", "group_size", "count", "bytes", "time"]
    )
    notes = [] if table.num_rows else ["no collective arguments recorded in these traces"]
    missing = table["no_model"].drop_null()
    if len(missing):
        notes.append(f"{len(missing)} collectives without a byte count (see no_model)")
    return Result(
        "comm_bytes", table, tables={"summary": summary}, notes=notes, params=dict(selection=sel)
    )
