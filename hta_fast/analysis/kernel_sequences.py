"""Frequent GPU kernel sequences under an operator.

Roots are the outermost instances of the operator: CPU events named `operator_name`
(or containing it, with exact=False) that are not nested, through `parent`, in another
such event. A root's sequence is the GPU work (kernels, memcpys, memsets) queued by the
launches nested under it, by GPU start; its pattern is the root's name followed by those
names, joined with "|". Roots with fewer than `min_pattern_len` GPU events are left out.

Per pattern: how many roots have it, the total GPU time of their GPU events and the total
duration of the roots themselves.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .._arrow import array_of, as_numpy
from ..frame import select
from ..frame.fields import NS
from ..frame.launches import enclosing, launch_pairs
from ..frame.result import Result
from ..schema import GPU_KINDS
from ..trace import Trace
from ..traceset import TraceSet
from .ops.op_kernels import joined_names

__all__ = ["kernel_sequences"]

SEPARATOR = "|"
SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("pattern", pa.string()),
        pa.field("count", pa.int64()),
        pa.field("gpu_kernel_duration", pa.int64(), metadata=NS),
        pa.field("cpu_op_duration", pa.int64(), metadata=NS),
    ]
)
OCCURRENCE_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("pattern", pa.string()),
        pa.field("root", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
        pa.field("num_kernels", pa.int64()),
        pa.field("kernel_dur_sum", pa.int64(), metadata=NS),
    ]
)


def _candidates(trace: Trace, operator_name: str, exact: bool) -> np.ndarray:
    strings = trace.strings
    if exact:
        by_id = as_numpy(pc.equal(strings, operator_name))
    else:
        by_id = as_numpy(pc.match_substring(strings, operator_name))
    names = trace.column("events", "name")
    kind = trace.column("events", "kind")
    ok = (names >= 0) & ~np.isin(kind, GPU_KINDS)
    ok[ok] = by_id[names[ok]]
    return ok


def _occurrences(
    rank: int,
    trace: Trace,
    mask: Optional[np.ndarray],
    operator_name: str,
    exact: bool,
    min_pattern_len: int,
) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """(occurrence table, GPU rows, their root) for one rank."""
    is_cand = _candidates(trace, operator_name, exact)
    cand = np.flatnonzero(is_cand)
    is_root = np.zeros(len(is_cand), bool)
    is_root[cand[enclosing(trace, cand, is_cand) < 0]] = True
    if mask is not None:
        is_root &= mask
    launch, gpu = launch_pairs(trace, mask, include_memory_events=True)
    root = np.where(is_root[launch], launch, enclosing(trace, launch, is_root))
    keep = root >= 0
    gpu, root = gpu[keep], root[keep]
    col = trace.column
    ts, dur = col("events", "ts"), col("events", "dur")
    order = np.lexsort((ts[gpu], root))
    gpu, root = gpu[order], root[order]
    roots, counts = np.unique(root, return_counts=True)  # root is sorted
    enough = counts >= min_pattern_len
    long_enough = np.repeat(enough, counts)
    gpu, root = gpu[long_enough], root[long_enough]
    roots, counts = roots[enough], counts[enough]
    first = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)[: len(counts)]
    offsets = np.r_[first, len(gpu)]
    kernels = joined_names(trace, offsets, gpu, SEPARATOR)
    root_names = trace.strings.take(array_of(col("events", "name")[roots], pa.int32()))
    pattern = pc.binary_join_element_wise(root_names.cast(pa.string()), kernels, SEPARATOR)
    kdur = np.add.reduceat(dur[gpu], first) if len(first) else np.zeros(0, np.int64)
    table = pa.table(
        [
            np.full(len(roots), rank, np.int64),
            pattern,
            roots,
            ts[roots],
            dur[roots],
            counts.astype(np.int64),
            kdur.astype(np.int64),
        ],
        schema=OCCURRENCE_SCHEMA,
    )
    return table, gpu, root


def kernel_sequences(
    traces: Union[Trace, TraceSet],
    operator_name: str,
    *,
    min_pattern_len: int = 3,
    top_k: int = 5,
    exact: bool = True,
    output_dir: Optional[str] = None,
    compress_other_kernels: bool = True,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    window: Optional[tuple[int, int]] = None,
    streams: Optional[Sequence[int]] = None,
    selection: Optional[select.Selection] = None,
) -> Result:
    """Per rank and pattern: count, gpu_kernel_duration, cpu_op_duration (ns), sorted by
    rank, count descending, pattern. Side table "occurrences": one row per root.

    output_dir  when given, write for each rank a gzipped copy of its trace file,
                `overlaid_<file name>` (when it has patterns), whose events in the top_k patterns carry
                args["Patterns"] = {pattern: count}; with compress_other_kernels the other
                complete events lose their args. The paths are in params["written"].
    """
    if not operator_name:
        raise ValueError("operator_name must be a non-empty string")
    sel = select.selection_of(selection, ranks, steps, window, streams)
    parts, written = [], []
    for rank, trace, mask in select.each_rank(traces, sel):
        occ, gpu, root = _occurrences(rank, trace, mask, operator_name, exact, min_pattern_len)
        parts.append(occ)
        if output_dir is not None and occ.num_rows:
            written.append(
                _write_overlay(trace, occ, gpu, root, top_k, output_dir, compress_other_kernels)
            )
    occ = pa.concat_tables(parts) if parts else OCCURRENCE_SCHEMA.empty_table()
    table = _patterns(occ)
    notes = (
        []
        if table.num_rows
        else [f"no '{operator_name}' operator with at least {min_pattern_len} GPU events"]
    )
    return Result(
        "kernel_sequences",
        table,
        tables={"occurrences": occ},
        notes=notes,
        params=dict(
            operator_name=operator_name,
            min_pattern_len=min_pattern_len,
            top_k=top_k,
            exact=exact,
            selection=sel,
            written=written,
        ),
    )


def _patterns(occ: pa.Table) -> pa.Table:
    g = occ.group_by(["rank", "pattern"], use_threads=False).aggregate(
        [("root", "count"), ("kernel_dur_sum", "sum"), ("dur", "sum")]
    )
    table = pa.table(
        [
            g["rank"],
            g["pattern"],
            g["root_count"].cast(pa.int64()),
            g["kernel_dur_sum_sum"].cast(pa.int64()),
            g["dur_sum"].cast(pa.int64()),
        ],
        schema=SCHEMA,
    )
    return table.sort_by([("rank", "ascending"), ("count", "descending"), ("pattern", "ascending")])


class _Number(float):
    """A JSON number with the text it was written as, so that microsecond timestamps
    convert to nanoseconds exactly (a double cannot hold 1.7e18 to the nanosecond)."""

    text: str

    def __new__(cls, text: str) -> "_Number":
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def _ns(ts: Any) -> int:
    """A trace timestamp (µs: int, JSON number or numeric string) as integer ns."""
    from decimal import Decimal

    text = getattr(ts, "text", None) or (ts if isinstance(ts, str) else None)
    if text is not None:
        return int((Decimal(text) * 1000).to_integral_value())
    return int(ts) * 1000 if isinstance(ts, int) else int(round(ts * 1000))


def _write_overlay(
    trace: Trace,
    occ: pa.Table,
    gpu: np.ndarray,
    root: np.ndarray,
    top_k: int,
    output_dir: str,
    compress_other_kernels: bool,
) -> str:
    """Write the annotated copy of one rank's trace file; returns its path."""
    if trace.meta.path is None:
        raise ValueError("the trace was not loaded from a file: nothing to annotate")
    top = _patterns(occ).slice(0, top_k)
    counts = dict(zip(top.column("pattern").to_pylist(), top.column("count").to_pylist()))
    root_pattern = {
        r: p
        for r, p in zip(occ.column("root").to_pylist(), occ.column("pattern").to_pylist())
        if p in counts
    }
    # rows in a top pattern: each root, every CPU event nested in it, and its GPU events
    col = trace.column
    is_root = np.zeros(len(col("events", "ts")), bool)
    is_root[list(root_pattern)] = True
    cpu_rows = np.flatnonzero(col("events", "parent") >= 0)
    cpu_root = enclosing(trace, cpu_rows, is_root)
    marked = {}
    for rows, roots in (
        (cpu_rows, cpu_root),
        (gpu, root),
        (np.array(list(root_pattern), np.int64),) * 2,
    ):
        ok = np.isin(roots, list(root_pattern))
        for r, rt in zip(rows[ok].tolist(), roots[ok].tolist()):
            marked[r] = root_pattern[rt]
    ts, names = col("events", "ts"), col("events", "name")
    strings = trace.strings.to_pylist()
    keys = {(strings[names[r]], int(ts[r])): p for r, p in marked.items()}
    base = trace.meta.base_time_ns
    opener = gzip.open if trace.meta.path.endswith(".gz") else open
    with opener(trace.meta.path, "rt") as f:
        content = json.load(f, parse_float=_Number)
    for e in content.get("traceEvents", []):
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        try:
            key = (e.get("name"), _ns(e["ts"]) + base)
        except (KeyError, TypeError, ValueError):
            continue
        p = keys.get(key)
        if p is not None:
            args: dict[str, Any] = e["args"] if isinstance(e.get("args"), dict) else {}
            args["Patterns"] = {p: counts[p]}
            e["args"] = args
        elif compress_other_kernels:
            e.pop("args", None)
    os.makedirs(output_dir, exist_ok=True)
    out = os.path.join(output_dir, "overlaid_" + os.path.basename(trace.meta.path))
    if not out.endswith(".gz"):
        out += ".gz"
    text = json.dumps(content)  # one shot: the C encoder (json.dump streams in Python)
    with gzip.open(out, "wt", compresslevel=6) as f:
        f.write(text)
    return out
