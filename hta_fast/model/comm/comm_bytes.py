"""Bytes moved by each collective, from its recorded arguments, and the bandwidth achieved.

The collective's size is its message in bytes (elements times the dtype's size): the input
for all-reduce, reduce-scatter, all-to-all, broadcast, reduce, send and recv; the output
for all-gather (nccl-tests' convention). Algorithm bandwidth = size / time; bus bandwidth
scales it by the fraction of the data each rank must send on the wire: 2(n-1)/n for
all-reduce, (n-1)/n for all-gather, reduce-scatter and all-to-all, 1 otherwise.

The time is the GPU event's duration when the arguments sit on an NCCL kernel; when they
sit on a CPU `record_param_comms` event, the GPU time of the kernels it launched. A CPU
event whose kernels carry the arguments themselves is left out, so nothing counts twice.
A collective whose dtype or sizes are missing is kept, with null bytes and the reason.
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np
import pyarrow as pa

from ...frame import select
from ...analysis.collectives import bus_factor
from ...frame.fields import NS
from ...analysis.launch_stats import launch_pairs
from ...analysis.op_table import ancestor_pairs
from ...frame.result import Result
from ...schema import GPU_KINDS
from ...trace import Trace
from ...traceset import TraceSet

COMM_DTYPE_BYTES = {"float": 4, "float32": 4, "bfloat16": 2, "half": 2, "float16": 2,
                    "double": 8, "float64": 8, "long": 8, "int64": 8, "int": 4, "int32": 4,
                    "short": 2, "byte": 1, "uint8": 1, "char": 1, "int8": 1, "bool": 1,
                    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1,
                    "float8_e5m2fnuz": 1, "complexfloat": 8, "complexdouble": 16}


def _uses_output(collective: str) -> bool:
    return "allgather" in collective.lower().replace("_", "")


SCHEMA = pa.schema([
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
])


def _rank_rows(rank: int, trace: Trace, mask: Optional[np.ndarray]) -> pa.Table:
    c = trace.comm_args
    rows = trace.column("comm_args", "row")
    kind = trace.column("events", "kind")
    dur = np.maximum(trace.column("events", "dur"), 0)
    keep = np.ones(len(rows), bool) if mask is None else mask[rows]
    is_gpu = np.isin(kind[rows], np.array(sorted(GPU_KINDS), np.uint8))
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
    time = np.where(is_gpu, dur[rows], np.where(under[rows] > 0, under[rows], -1))
    keep &= ~dup[rows]

    names = [str(x or "") for x in c["collective_name"].to_pylist()]
    dtypes = [x for x in c["dtype"].to_pylist()]
    n_in = trace.column("comm_args", "in_msg_nelems")
    n_out = trace.column("comm_args", "out_msg_nelems")
    group = trace.column("comm_args", "group_size").astype(np.int64)
    out_bytes: list[Optional[float]] = []
    reasons: list[Optional[str]] = []
    for j in range(len(rows)):
        size = COMM_DTYPE_BYTES.get(str(dtypes[j] or "").lower())
        elems = n_out[j] if _uses_output(names[j]) else n_in[j]
        if size is None:
            out_bytes.append(None)
            reasons.append(f"dtype {dtypes[j]!r} unknown")
        elif elems < 0:
            out_bytes.append(None)
            reasons.append("message size not recorded")
        else:
            out_bytes.append(float(elems * size))
            reasons.append(None)
    nbytes = np.array([np.nan if b is None else b for b in out_bytes], np.float64)
    secs = np.where(time > 0, time, np.nan) / 1e9
    algbw = nbytes / secs
    factor = np.array([bus_factor(names[j], int(group[j])) for j in range(len(rows))])
    t = pa.table([
        np.full(len(rows), rank, np.int64), rows, pa.array(names, pa.string()),
        pa.array([None if d is None else str(d) for d in dtypes], pa.string()),
        pa.array(group, mask=group < 0), pa.array(nbytes, from_pandas=True),
        pa.array(time, mask=time < 0), pa.array(algbw, from_pandas=True),
        pa.array(algbw * factor, from_pandas=True), pa.array(reasons, pa.string()),
    ], schema=SCHEMA)
    return t.filter(pa.array(keep))


def comm_bytes(traces: Union[Trace, TraceSet], *, ranks: Optional[Sequence[int]] = None,
               steps: Optional[Sequence[int]] = None, window: Optional[tuple[int, int]] = None,
               streams: Optional[Sequence[int]] = None,
               selection: Optional[select.Selection] = None) -> Result:
    """One row per collective call with recorded arguments: bytes, time, algbw, busbw.
    Side table "summary": per (rank, collective, dtype, group size) counts and sums."""
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts = [_rank_rows(rank, trace, mask) for rank, trace, mask in select.each_rank(traces, sel)]
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    summary = table.group_by(["rank", "collective", "dtype", "group_size"], use_threads=False
                             ).aggregate([("row", "count"), ("bytes", "sum"), ("time", "sum")])
    summary = summary.rename_columns(["rank", "collective", "dtype", "group_size", "count",
                                      "bytes", "time"])
    notes = [] if table.num_rows else ["no collective arguments recorded in these traces"]
    missing = table["no_model"].drop_null()
    if len(missing):
        notes.append(f"{len(missing)} collectives without a byte count (see no_model)")
    return Result("comm_bytes", table, tables={"summary": summary}, notes=notes,
                  params=dict(selection=sel))
