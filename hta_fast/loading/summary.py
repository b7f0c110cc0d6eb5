"""RankSummary: the few kilobytes of one rank that cross-rank analyses need.

A worker that loads a rank (on a Dask cluster, say) sends back only this, never the rank's
tables, so the coordinating process holds summaries whatever the size of each trace:

    steps        step, ts, dur                       (the ProfilerStep#N events)
    kernels      kernel_class, count, total_ns       (GPU kernels, memcpy and memset)
    collectives  one row per communication kernel, in start order: group (process group
                 name, else "stream N"), index (its order within the group on this rank),
                 collective (all_reduce, all_gather, ...), name, stream, step, ts, dur,
                 bytes (the collective's buffer as nccl-tests counts it, null if unknown),
                 dtype, group_size (null if unknown), size_from (where the bytes came from:
                 "arguments", the collective arguments of the kernel or of the CPU op that
                 launched it; "input_dims", the Input Dims / Input type of that CPU op, the
                 input buffer: an all-gather's is 1/n of its output; null without a size),
                 comms_id (the arguments' Comms Id: one collective's id on every rank; null
                 where the trace has none), seq (the arguments' sequence number in its
                 process group; null where none)
    cpu_collectives  the same columns, one row per collective that runs on the CPU (gloo's
                 `gloo:all_reduce`, ...: no GPU kernel), in start order; its time is the CPU
                 event's. Group: the process group its arguments name ("cpu pg NAME"), else
                 "gloo thread K" (K: the thread's order among this rank's threads that run
                 gloo collectives, by first start), stream -1
"""

from __future__ import annotations

import functools
from typing import Any, Optional

import numpy as np
import pyarrow as pa

from .._arrow import array_of, as_numpy, nan_as_null, starts_with, texts_at
from ..costs.collectives import collective_dtype, collective_of, input_dims_size, message_bytes
from ..costs.op_args import op_arg_positions
from ..schema import GPU_KINDS, GPU_WORK_KINDS, EventKind, KernelClass
from ..trace import TABLES, Trace

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
        ("size_from", pa.string()),
        ("comms_id", pa.string()),
        ("seq", pa.int64()),
    ]
)


@functools.cache
def _no_collectives() -> pa.Table:
    """No collective (tables are immutable: one serves every rank), built with array_of:
    Schema.empty_table imports pandas."""
    return pa.Table.from_arrays(
        [
            pa.DictionaryArray.from_arrays(array_of([], pa.int32()), array_of([], pa.string()))
            if pa.types.is_dictionary(f.type)
            else array_of([], f.type)
            for f in COLLECTIVES_SCHEMA
        ],
        schema=COLLECTIVES_SCHEMA,
    )


# Each summary table's schema (a dataset's summary/NAME files hold these columns and `rank`).
SUMMARY_SCHEMAS = {
    "steps": STEPS_SCHEMA,
    "kernels": KERNELS_SCHEMA,
    "collectives": COLLECTIVES_SCHEMA,
    "cpu_collectives": COLLECTIVES_SCHEMA,
}
SUMMARY_TABLES = tuple(SUMMARY_SCHEMAS)


class RankSummary:
    """One rank: where it came from, row counts, and the small tables above."""

    def __init__(
        self,
        rank: int,
        info: dict[str, Any],
        steps: pa.Table,
        kernels: pa.Table,
        collectives: pa.Table,
        cpu_collectives: Optional[pa.Table] = None,
    ):
        self.rank = rank
        self._info = info
        self.steps = steps
        self.kernels = kernels
        self.collectives = collectives
        self.cpu_collectives = (
            COLLECTIVES_SCHEMA.empty_table() if cpu_collectives is None else cpu_collectives
        )

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
        return {
            "steps": self.steps,
            "kernels": self.kernels,
            "collectives": self.collectives,
            "cpu_collectives": self.cpu_collectives,
        }

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
    a hive-partitioned dataset reads them): one sort per table, then slices. A table or a
    column that an older dataset did not write is empty, or null."""
    empty = pa.schema([*COLLECTIVES_SCHEMA, pa.field("rank", pa.int64())]).empty_table()
    tables = {**{"cpu_collectives": empty}, **tables}
    sliced: dict[str, dict[int, pa.Table]] = {}
    for name, table in tables.items():
        for field in SUMMARY_SCHEMAS[name]:
            if field.name not in table.column_names:
                table = table.append_column(field, pa.nulls(table.num_rows, field.type))
        ranks = np.asarray(as_numpy(table["rank"]), np.int64)
        order = np.argsort(ranks, kind="stable")  # keeps each rank's rows in file order
        schema = SUMMARY_SCHEMAS[name]
        body = table.take(array_of(order)).select(schema.names).cast(schema)
        ranks = ranks[order]
        bounds = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="left")
        ends = np.searchsorted(ranks, np.asarray(sorted(info), np.int64), side="right")
        sliced[name] = {
            r: body.slice(int(lo), int(hi - lo)) for r, lo, hi in zip(sorted(info), bounds, ends)
        }
    return {
        r: RankSummary(
            r,
            info[r],
            sliced["steps"][r],
            sliced["kernels"][r],
            sliced["collectives"][r],
            sliced["cpu_collectives"][r],
        )
        for r in sorted(info)
    }


def _steps(trace: Trace) -> pa.Table:
    step = trace.column("steps", "step").astype(np.int64)
    ts, dur = trace.column("steps", "ts"), trace.column("steps", "dur")
    order = np.lexsort((ts, step))
    # From buffers (array_of): pa.table on numpy arrays imports pandas, a second or so.
    return pa.table(
        [array_of(step[order]), array_of(ts[order]), array_of(dur[order])], schema=STEPS_SCHEMA
    )


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
            array_of([KernelClass(int(c)).name for c in present], pa.string()),
            array_of(count[present].astype(np.int64)),
            array_of(np.rint(total[present]).astype(np.int64)),
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


def _input_dims_sizes(
    trace: Trace, start: np.ndarray
) -> tuple[np.ndarray, list[Optional[str]], np.ndarray]:
    """(elements, dtype, op row) per start row: the first of the row itself and its CPU
    ancestors (a few levels up) whose recorded Input Dims / Input type give a size
    (hta_fast.costs.collectives.input_dims_size); -1 / None / -1 where none does."""
    n = len(start)
    elems = np.full(n, -1, np.int64)
    dtype: list[Optional[str]] = [None] * n
    op = np.full(n, -1, np.int64)
    if not n or not trace.num_rows("op_args"):
        return elems, dtype, op
    dims_ids = trace.column("op_args", "input_dims")
    type_ids = trace.column("op_args", "input_type")
    parent = trace.column("events", "parent")
    sizes: dict[tuple[int, int], Optional[tuple[int, str]]] = {}
    cur = np.asarray(start, np.int64).copy()
    for _ in range(8):  # the launch's nccl:* annotation is a level or two up
        todo = np.flatnonzero((op < 0) & (cur >= 0))
        if not len(todo):
            break
        pos, found = op_arg_positions(trace, cur[todo])
        for i, p in zip(todo[found].tolist(), pos[found].tolist()):
            key = (int(dims_ids[p]), int(type_ids[p]))
            if key not in sizes:
                texts = texts_at(trace.strings, np.array([max(k, 0) for k in key]))
                sizes[key] = (
                    input_dims_size(texts[0], texts[1] if key[1] >= 0 else None)
                    if key[0] >= 0
                    else None
                )
            got = sizes[key]
            if got is not None:
                elems[i], dtype[i], op[i] = got[0], got[1], cur[i]
        left = todo[op[todo] < 0]
        cur[left] = parent[cur[left]]
    return elems, dtype, op


def _comm_arg_columns(trace: Trace, arg: np.ndarray) -> dict[str, list[Any]]:
    """The comm_args columns at the given rows (-1: none), as lists with None where none.
    Column by column, not trace.comm_args: that table would stay on every rank."""
    n = len(arg)
    has = arg >= 0
    pick = array_of(np.where(has, arg, 0)) if trace.num_rows("comm_args") else None
    out = {}
    for col in (
        "collective_name",
        "process_group_name",
        "in_msg_nelems",
        "out_msg_nelems",
        "dtype",
        "group_size",
        "comms_id",
        "seq",
    ):
        if pick is None:
            out[col] = [None] * n
        else:
            values = trace.column_array("comm_args", col).take(pick).to_pylist()
            out[col] = [v if h else None for v, h in zip(values, has)]
    return out


def _collective_table(
    trace: Trace,
    rows: np.ndarray,
    group: list[str],
    args: dict[str, list[Any]],
    size_start: np.ndarray,
    stream: np.ndarray,
) -> pa.Table:
    """The summary's rows for these collective events: sizes from their arguments, else
    from the Input Dims of size_start's rows or their CPU ancestors."""
    n = len(rows)
    # From the pool: building the events table to read a few names costs ~1 ms a rank.
    names = texts_at(trace.strings, trace.column("events", "name")[rows], None) if n else []
    in_n, out_n = args["in_msg_nelems"], args["out_msg_nelems"]
    dtype = [(d or "").lower() or None for d in map(collective_dtype, args["dtype"], names)]
    nbytes = message_bytes(
        np.array([-1 if x is None else x for x in in_n], np.int64),
        np.array([-1 if x is None else x for x in out_n], np.int64),
        dtype,
    )
    size_from: list[Optional[str]] = [None if np.isnan(b) else "arguments" for b in nbytes]
    kind_of = list(args["collective_name"])
    need = np.flatnonzero(np.isnan(nbytes))
    if len(need):
        elems, dims_dtype, op = _input_dims_sizes(trace, size_start[need])
        op_names = texts_at(trace.strings, trace.column("events", "name")[np.maximum(op, 0)])
        sized = message_bytes(elems, elems, dims_dtype)
        for j, i in enumerate(need.tolist()):
            if np.isnan(sized[j]):
                continue
            nbytes[i], dtype[i], size_from[i] = sized[j], str(dims_dtype[j]).lower(), "input_dims"
            # nccl:all_to_all names the collective that a SendRecv kernel runs
            if kind_of[i] is None and collective_of(op_names[j]) != "other":
                kind_of[i] = op_names[j]
    collective = [collective_of(c or k) for c, k in zip(kind_of, names)]
    index = np.zeros(n, np.int64)
    seen: dict[str, int] = {}
    for i, g in enumerate(group):
        index[i] = seen.get(g, 0)
        seen[g] = index[i] + 1
    gsize = args["group_size"]
    return pa.table(
        [
            array_of(group, pa.string()),
            array_of(index),
            array_of(collective, pa.string()),
            array_of(names, pa.string()).dictionary_encode(),
            array_of(np.asarray(stream, np.int64)),
            array_of(trace.column("events", "step")[rows].astype(np.int64)),
            array_of(trace.column("events", "ts")[rows].astype(np.int64)),
            array_of(trace.column("events", "dur")[rows].astype(np.int64)),
            nan_as_null(nbytes, pa.int64()),
            array_of(dtype, pa.string()),
            array_of([g if g is not None and g > 0 else None for g in gsize], pa.int64()),
            array_of(size_from, pa.string()),
            array_of(args["comms_id"], pa.string()),
            array_of([q if q is not None and q >= 0 else None for q in args["seq"]], pa.int64()),
        ],
        schema=COLLECTIVES_SCHEMA,
    )


def _collectives(trace: Trace) -> pa.Table:
    rows = collective_rows(trace)
    arg = _comm_arg_of_kernel(trace, rows) if len(rows) else np.zeros(0, np.int64)
    args = _comm_arg_columns(trace, arg)
    stream = trace.column("events", "stream")[rows].astype(np.int64)
    group = [
        f"pg {p}" if p is not None else f"stream {s}"
        for p, s in zip(args["process_group_name"], stream)
    ]
    launch = trace.column("events", "partner")[rows].astype(np.int64)
    return _collective_table(trace, rows, group, args, launch, stream)


def _named(trace: Trace, prefix: str) -> np.ndarray:
    """Per event row: a CPU event whose name starts with prefix."""
    by_id = starts_with(trace.strings, prefix)
    names = trace.column("events", "name")
    ok = (names >= 0) & ~np.isin(trace.column("events", "kind"), GPU_KINDS)
    ok[ok] = by_id[names[ok]]
    return ok


def cpu_collective_rows(trace: Trace) -> np.ndarray:
    """The event rows of the collectives that run on the CPU, in start order (the order of
    the summary's cpu_collectives): gloo's CPU events (`gloo:all_reduce`, ...); in a trace
    with none of them, no communication kernel and no `nccl:` event, the record_param_comms
    events whose arguments name a collective (a CPU-only process group)."""
    rows = np.flatnonzero(_named(trace, "gloo:"))
    if not len(rows) and not len(collective_rows(trace)) and not _named(trace, "nccl:").any():
        arg_rows = trace.column("comm_args", "row")
        if len(arg_rows):
            named = trace.column("comm_args", "collective_name") >= 0
            rows = np.sort(arg_rows[named])
        rows = rows[_named(trace, "record_param_comms")[rows]] if len(rows) else rows
    return rows[np.argsort(trace.column("events", "ts")[rows], kind="stable")]


def _cpu_collectives(trace: Trace) -> pa.Table:
    rows = cpu_collective_rows(trace)
    if not len(rows):  # most traces: NCCL's kernels, no CPU collective
        return _no_collectives()
    n_events = len(trace.column("events", "ts"))
    by_event = np.full(n_events, -1, np.int64)
    arg_rows = trace.column("comm_args", "row")
    by_event[arg_rows] = np.arange(len(arg_rows))
    args = _comm_arg_columns(trace, by_event[rows])
    tid = trace.column("events", "tid")[rows]
    ts = trace.column("events", "ts")[rows]
    first: dict[int, int] = {}
    for t, s in zip(tid.tolist(), ts.tolist()):  # rows are in start order
        first.setdefault(t, s)
    thread = {t: k for k, t in enumerate(sorted(first, key=lambda t: (first[t], t)))}
    group = [
        f"cpu pg {p}" if p is not None else f"gloo thread {thread[t]}"
        for p, t in zip(args["process_group_name"], tid.tolist())
    ]
    stream = np.full(len(rows), -1, np.int64)
    return _collective_table(trace, rows, group, args, rows.astype(np.int64), stream)


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
    return RankSummary(
        trace.rank,
        info,
        _steps(trace),
        _kernels(trace),
        _collectives(trace),
        _cpu_collectives(trace),
    )


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
