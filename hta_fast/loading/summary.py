"""RankSummary: the few kilobytes of one rank that cross-rank analyses need.

A worker that loads a rank (on a Dask cluster, say) sends back only this, never the rank's
tables, so the coordinating process holds summaries whatever the size of each trace:

    steps        step, ts, dur                       (the ProfilerStep#N events)
    kernels      kernel_class, count, total_ns       (GPU kernels, memcpy and memset)
    collectives  one row per communication kernel, in start order: group (process group
                 name, else "stream N"), index (its order within the group on this rank),
                 collective (all_reduce, all_gather, ...), name, stream, step, ts, dur,
                 bytes (the collective's buffer as nccl-tests counts it, null if unknown),
                 dtype, group_size (null if unknown)
"""
from __future__ import annotations

import re
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..schema import EventKind, KernelClass
from ..trace import TABLES, Trace

SUMMARY_TABLES = ("steps", "kernels", "collectives")

STEPS_SCHEMA = pa.schema([("step", pa.int64()), ("ts", pa.int64()), ("dur", pa.int64())])
KERNELS_SCHEMA = pa.schema([("kernel_class", pa.string()), ("count", pa.int64()),
                            ("total_ns", pa.int64())])
COLLECTIVES_SCHEMA = pa.schema([
    ("group", pa.string()), ("index", pa.int64()), ("collective", pa.string()),
    # kernel names repeat: a dictionary keeps the summary (and the coordinator) small
    ("name", pa.dictionary(pa.int32(), pa.string())), ("stream", pa.int64()), ("step", pa.int64()), ("ts", pa.int64()),
    ("dur", pa.int64()), ("bytes", pa.int64()), ("dtype", pa.string()),
    ("group_size", pa.int64()),
])

# Collective names as PyTorch (record_param_comms) and NCCL/RCCL kernels spell them, reduced
# to letters; the first pattern found wins, so "reducescatter" is tried before "reduce".
_COLLECTIVES = (("allreduce", "all_reduce"), ("allgather", "all_gather"),
                ("reducescatter", "reduce_scatter"), ("alltoall", "all_to_all"),
                ("broadcast", "broadcast"), ("sendrecv", "send_recv"), ("barrier", "barrier"),
                ("reduce", "reduce"), ("send", "send"), ("recv", "recv"))
# Element sizes of PyTorch dtype names (comm args) and of the C types in NCCL kernel names.
_DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2,
                "double": 8, "float64": 8, "int": 4, "int32": 4, "int32_t": 4, "long": 8,
                "int64": 8, "int64_t": 8, "uint64_t": 8, "uint32_t": 4, "byte": 1,
                "char": 1, "bool": 1, "int8": 1, "int8_t": 1, "uint8": 1, "uint8_t": 1,
                "short": 2, "int16": 2, "__nv_bfloat16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1}
_KERNEL_DTYPE = re.compile(r"_([A-Za-z0-9_]+?)\(")


def collective_of(name: Optional[str]) -> str:
    """all_reduce, all_gather, ... from a collective or kernel name; "other" if none fits."""
    letters = re.sub(r"[^a-z]", "", (name or "").lower())
    for pattern, collective in _COLLECTIVES:
        if pattern in letters:
            return collective
    return "other"


def dtype_of_kernel(name: str) -> Optional[str]:
    """The element type an NCCL kernel name ends with (ncclKernel_AllReduce_RING_LL_Sum_float)."""
    m = _KERNEL_DTYPE.search(name.split("(", 1)[0] + "(")
    if not m:
        return None
    last = m.group(1).rsplit("_", 1)[-1].lower()
    if last == "t":  # int8_t, uint64_t: the type is the last two parts
        last = "_".join(m.group(1).lower().rsplit("_", 2)[-2:])
    return last if last in _DTYPE_BYTES else None


class RankSummary:
    """One rank: where it came from, row counts, and the three small tables above."""

    def __init__(self, rank: int, info: dict[str, Any], steps: pa.Table, kernels: pa.Table,
                 collectives: pa.Table):
        self.rank = rank
        self._info = info
        self.steps = steps
        self.kernels = kernels
        self.collectives = collectives

    def info(self) -> dict[str, Any]:
        """What the dataset manifest records of this rank (JSON-able)."""
        return dict(self._info)

    @property
    def source(self) -> Optional[str]:
        return self._info.get("source")

    @property
    def world_size(self) -> Optional[int]:
        return self._info.get("world_size")

    def tables(self) -> dict[str, pa.Table]:
        return {"steps": self.steps, "kernels": self.kernels, "collectives": self.collectives}

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, RankSummary) and self.rank == other.rank
                and self.tables() == other.tables())

    def __repr__(self) -> str:
        return (f"<RankSummary rank={self.rank} steps={self.steps.num_rows} "
                f"collectives={self.collectives.num_rows}>")


def split_by_rank(info: dict[int, dict[str, Any]], tables: dict[str, pa.Table]
                  ) -> dict[int, RankSummary]:
    """Every rank's summary out of the summary tables of all ranks (a `rank` column each, as
    a hive-partitioned dataset reads them): one sort per table, then slices."""
    schemas = {"steps": STEPS_SCHEMA, "kernels": KERNELS_SCHEMA,
               "collectives": COLLECTIVES_SCHEMA}
    sliced: dict[str, dict[int, pa.Table]] = {}
    for name, table in tables.items():
        ranks = np.asarray(table["rank"].to_numpy(zero_copy_only=False), np.int64)
        order = np.argsort(ranks, kind="stable")  # keeps each rank's rows in file order
        body = table.take(pa.array(order)).select(schemas[name].names).cast(schemas[name])
        ranks = ranks[order]
        bounds = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="left")
        ends = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="right")
        sliced[name] = {r: body.slice(int(lo), int(hi - lo))
                        for r, lo, hi in zip(sorted(info), bounds, ends)}
    return {r: RankSummary(r, info[r], sliced["steps"][r], sliced["kernels"][r],
                           sliced["collectives"][r]) for r in sorted(info)}


def _steps(trace: Trace) -> pa.Table:
    step = trace.column("steps", "step").astype(np.int64)
    ts, dur = trace.column("steps", "ts"), trace.column("steps", "dur")
    order = np.lexsort((ts, step))
    return pa.table([step[order], ts[order], dur[order]], schema=STEPS_SCHEMA)


def _kernels(trace: Trace) -> pa.Table:
    kind = trace.column("events", "kind")
    gpu = np.isin(kind, [EventKind.kernel, EventKind.memcpy, EventKind.memset])
    cls = trace.column("events", "kernel_class")[gpu].astype(np.int64)
    dur = np.maximum(trace.column("events", "dur")[gpu], 0)
    n = len(KernelClass)
    count = np.bincount(cls, minlength=n)
    total = np.bincount(cls, dur.astype(np.float64), minlength=n)
    present = np.flatnonzero(count)
    return pa.table([[KernelClass(int(c)).name for c in present], count[present],
                     np.rint(total[present]).astype(np.int64)], schema=KERNELS_SCHEMA)


def _comm_arg_of_kernel(trace: Trace, kernels: np.ndarray) -> np.ndarray:
    """Row in comm_args for each communication kernel, -1 where there is none: the kernel's
    own arguments, else those of the CPU op that launched it (record_param_comms encloses
    the launch) found up the launch's parents."""
    n_events = len(trace.column("events", "ts"))
    arg_rows = trace.column("comm_args", "row")
    by_event = np.full(n_events, -1, np.int64)
    by_event[arg_rows] = np.arange(len(arg_rows))
    found = by_event[kernels]
    partner = trace.column("events", "partner")
    parent = trace.column("events", "parent")
    cur = partner[kernels].astype(np.int64)
    for _ in range(8):  # the launch, then its enclosing ops: the comms op is a few levels up
        todo = (found < 0) & (cur >= 0)
        if not todo.any():
            break
        found[todo] = by_event[cur[todo]]
        cur = np.where(todo & (found < 0), parent[np.maximum(cur, 0)], -1)
    return found


def collective_rows(trace: Trace) -> np.ndarray:
    """The event rows of the communication kernels, in the order of the summary's
    collectives table (start order): row i of that table is event collective_rows()[i]."""
    kind = trace.column("events", "kind")
    cls = trace.column("events", "kernel_class")
    rows = np.flatnonzero((kind == EventKind.kernel) & (cls == KernelClass.COMM))
    return rows[np.argsort(trace.column("events", "ts")[rows], kind="stable")]


def _collectives(trace: Trace) -> pa.Table:
    rows = collective_rows(trace)
    ts = trace.column("events", "ts")[rows]
    n = len(rows)
    names = trace.events["name"].take(pa.array(rows)).cast(pa.string()).to_pylist() if n else []
    arg = _comm_arg_of_kernel(trace, rows) if n else np.zeros(0, np.int64)
    has = arg >= 0
    ca = trace.comm_args
    pick = pa.array(np.where(has, arg, 0)) if len(ca) else None

    def arg_column(col: str) -> list[Any]:
        if pick is None:
            return [None] * n
        values = ca[col].take(pick).to_pylist()
        return [v if h else None for v, h in zip(values, has)]

    coll_name, pg = arg_column("collective_name"), arg_column("process_group_name")
    in_n, out_n = arg_column("in_msg_nelems"), arg_column("out_msg_nelems")
    arg_dtype, gsize = arg_column("dtype"), arg_column("group_size")
    stream = trace.column("events", "stream")[rows].astype(np.int64)

    group, collective, dtype, nbytes = [], [], [], []
    for i in range(n):
        group.append(f"pg {pg[i]}" if pg[i] is not None else f"stream {stream[i]}")
        collective.append(collective_of(coll_name[i] if coll_name[i] else names[i]))
        dt = (arg_dtype[i].lower() if arg_dtype[i] else None) or dtype_of_kernel(names[i])
        dtype.append(dt)
        # nccl-tests' size: the larger of the input and output buffers (the gathered output of
        # an all-gather, the input of a reduce-scatter).
        elems = max(x for x in (in_n[i], out_n[i], -1) if x is not None)
        size = _DTYPE_BYTES.get(dt or "")
        nbytes.append(elems * size if elems >= 0 and size else None)
    index = np.zeros(n, np.int64)
    seen: dict[str, int] = {}
    for i, g in enumerate(group):
        index[i] = seen.get(g, 0)
        seen[g] = index[i] + 1
    return pa.table([group, index, collective,
                     pa.array(names, pa.string()).dictionary_encode(), stream,
                     trace.column("events", "step")[rows].astype(np.int64),
                     ts, trace.column("events", "dur")[rows],
                     pa.array(nbytes, pa.int64()), pa.array(dtype, pa.string()),
                     pa.array([g if g is not None and g > 0 else None for g in gsize],
                              pa.int64())],
                    schema=COLLECTIVES_SCHEMA)


def summarize(trace: Trace) -> RankSummary:
    """The summary of one loaded rank."""
    meta = trace.meta
    info = {"source": meta.path, "world_size": meta.world_size,
            "base_time_ns": meta.base_time_ns, "json_bytes": meta.json_bytes,
            "rows": {name: (trace.meta_events if name == "meta" else getattr(trace, name)).num_rows
                     for name in TABLES}}
    return RankSummary(trace.rank, info, _steps(trace), _kernels(trace), _collectives(trace))



def summaries_of(traces: Any) -> dict[int, RankSummary]:
    """Rank -> summary of a Trace, a TraceSet (summarised here) or a TraceDataset (whose
    summaries came back from the workers or are read from the dataset)."""
    if isinstance(traces, Trace):
        return {traces.rank: summarize(traces)}
    held = getattr(traces, "summaries", None)
    if held is not None:
        return dict(held)
    # Summaries are pure functions of a trace: remember them on it for the next analysis.
    out = {}
    for rank, trace in traces.items():
        out[rank] = trace.memo.get(("loading.summary", trace.rank), lambda: summarize(trace))
    return out
