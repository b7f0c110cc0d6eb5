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

from typing import Any, Optional

import numpy as np
import pyarrow as pa

from ..costs.collectives import collective_dtype, collective_of, message_bytes
from ..schema import GPU_WORK_KINDS, EventKind, KernelClass
from ..trace import TABLES, Trace

SUMMARY_TABLES = ("steps", "kernels", "collectives")

STEPS_SCHEMA = pa.schema([("step", pa.int64()), ("ts", pa.int64()), ("dur", pa.int64())])
KERNELS_SCHEMA = pa.schema(
    [("kernel_class", pa.string()), ("count", pa.int64()), ("total_ns", pa.int64())]
)
COLLECTIVES_SCHEMA = pa.schema(
    [
        ("group", pa.string()),
        ("index", pa.int64()),
        ("collective", pa.string()),
        # kernel names repeat: a dictionary keeps the summary (and the coordinator) small
        ("name", pa.dictionary(pa.int32(), pa.string())),
        ("stream", pa.int64()),
        ("step", pa.int64()),
        ("ts", pa.int64()),
        ("dur", pa.int64()),
        ("bytes", pa.int64()),
        ("dtype", pa.string()),
        ("group_size", pa.int64()),
    ]
)


class RankSummary:
    """One rank: where it came from, row counts, and the three small tables above."""

    def __init__(
        self,
        rank: int,
        info: dict[str, Any],
        steps: pa.Table,
        kernels: pa.Table,
        collectives: pa.Table,
    ):
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
        return (
            isinstance(other, RankSummary)
            and self.rank == other.rank
            and self.tables() == other.tables()
        )

    def __repr__(self) -> str:
        return (
            f"<RankSummary rank={self.rank} steps={self.steps.num_rows} "
            f"collectives={self.collectives.num_rows}>"
        )


def split_by_rank(
    info: dict[int, dict[str, Any]], tables: dict[str, pa.Table]
) -> dict[int, RankSummary]:
    """Every rank's summary out of the summary tables of all ranks (a `rank` column each, as
    a hive-partitioned dataset reads them): one sort per table, then slices."""
    schemas = {"steps": STEPS_SCHEMA, "kernels": KERNELS_SCHEMA, "collectives": COLLECTIVES_SCHEMA}
    sliced: dict[str, dict[int, pa.Table]] = {}
    for name, table in tables.items():
        ranks = np.asarray(table["rank"].to_numpy(zero_copy_only=False), np.int64)
        order = np.argsort(ranks, kind="stable")  # keeps each rank's rows in file order
        body = table.take(pa.array(order)).select(schemas[name].names).cast(schemas[name])
        ranks = ranks[order]
        bounds = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="left")
        ends = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="right")
        sliced[name] = {
            r: body.slice(int(lo), int(hi - lo)) for r, lo, hi in zip(sorted(info), bounds, ends)
        }
    return {
        r: RankSummary(
            r, info[r], sliced["steps"][r], sliced["kernels"][r], sliced["collectives"][r]
        )
        for r in sorted(info)
    }


def _steps(trace: Trace) -> pa.Table:
    step = trace.column("steps", "step").astype(np.int64)
    ts, dur = trace.column("steps", "ts"), trace.column("steps", "dur")
    order = np.lexsort((ts, step))
    return pa.table([step[order], ts[order], dur[order]], schema=STEPS_SCHEMA)


def _kernels(trace: Trace) -> pa.Table:
    kind = trace.column("events", "kind")
    gpu = np.isin(kind, GPU_WORK_KINDS)
    cls = trace.column("events", "kernel_class")[gpu].astype(np.int64)
    dur = np.maximum(trace.column("events", "dur")[gpu], 0)
    n = len(KernelClass)
    count = np.bincount(cls, minlength=n)
    total = np.bincount(cls, dur.astype(np.float64), minlength=n)
    present = np.flatnonzero(count)
    return pa.table(
        [
            [KernelClass(int(c)).name for c in present],
            count[present],
            np.rint(total[present]).astype(np.int64),
        ],
        schema=KERNELS_SCHEMA,
    )


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
    # From the pool: building the events table to read a few names costs ~1 ms a rank.
    names = trace.strings_at(trace.column("events", "name")[rows]).to_pylist() if n else []
    arg = _comm_arg_of_kernel(trace, rows) if n else np.zeros(0, np.int64)
    has = arg >= 0
    # Column by column, not trace.comm_args: that table would stay on every rank.
    pick = pa.array(np.where(has, arg, 0)) if trace.num_rows("comm_args") else None

    def arg_column(col: str) -> list[Any]:
        if pick is None:
            return [None] * n
        values = trace.column_array("comm_args", col).take(pick).to_pylist()
        return [v if h else None for v, h in zip(values, has)]

    coll_name, pg = arg_column("collective_name"), arg_column("process_group_name")
    in_n, out_n = arg_column("in_msg_nelems"), arg_column("out_msg_nelems")
    arg_dtype, gsize = arg_column("dtype"), arg_column("group_size")
    stream = trace.column("events", "stream")[rows].astype(np.int64)

    group = [f"pg {p}" if p is not None else f"stream {s}" for p, s in zip(pg, stream)]
    collective = [collective_of(c or k) for c, k in zip(coll_name, names)]
    dtype = [(d or "").lower() or None for d in map(collective_dtype, arg_dtype, names)]
    nbytes = message_bytes(
        np.array([-1 if x is None else x for x in in_n], np.int64),
        np.array([-1 if x is None else x for x in out_n], np.int64),
        dtype,
    )
    index = np.zeros(n, np.int64)
    seen: dict[str, int] = {}
    for i, g in enumerate(group):
        index[i] = seen.get(g, 0)
        seen[g] = index[i] + 1
    return pa.table(
        [
            group,
            index,
            collective,
            pa.array(names, pa.string()).dictionary_encode(),
            stream,
            trace.column("events", "step")[rows].astype(np.int64),
            ts,
            trace.column("events", "dur")[rows],
            pa.array(nbytes, pa.int64(), from_pandas=True),
            pa.array(dtype, pa.string()),
            pa.array([g if g is not None and g > 0 else None for g in gsize], pa.int64()),
        ],
        schema=COLLECTIVES_SCHEMA,
    )


def summarize(trace: Trace) -> RankSummary:
    """The summary of one loaded rank."""
    meta = trace.meta
    info = {
        "source": meta.path,
        "world_size": meta.world_size,
        "base_time_ns": meta.base_time_ns,
        "json_bytes": meta.json_bytes,
        "rows": {name: trace.num_rows(name) for name in TABLES},
    }
    return RankSummary(trace.rank, info, _steps(trace), _kernels(trace), _collectives(trace))


def summaries_of(traces: Any) -> dict[int, RankSummary]:
    """Rank -> summary of a Trace, a TraceSet (summarised here) or a TraceDataset (whose
    summaries came back from the workers or are read from the dataset)."""
    if isinstance(traces, Trace):
        return {traces.rank: rank_summary(traces)}
    held = getattr(traces, "summaries", None)
    if held is not None:
        return dict(held)
    return {rank: rank_summary(trace) for rank, trace in traces.items()}


def rank_summary(trace: Trace) -> RankSummary:
    """summarize(trace), remembered on the trace: a summary is a pure function of its trace,
    and several analyses (and the doctor) read it."""
    return trace.memo.get(("loading.summary", trace.rank), lambda: summarize(trace))
