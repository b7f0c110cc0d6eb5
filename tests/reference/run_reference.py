#!/usr/bin/env python3
"""Run the reference tool's analyses on real traces and store their results.

This script runs under the REFERENCE's interpreter (``.venv-ref/bin/python``): it imports
``hta`` (Holistic Trace Analysis, PyPI ``traceinsight``), never ``hta_fast``.

    .venv-ref/bin/python tests/reference/run_reference.py --out OUT_DIR TRACE_DIR
    .venv-ref/bin/python tests/reference/run_reference.py --out OUT_DIR FILE [FILE ...]
    ... [--analyses NAME [NAME ...]] [--diff-with OTHER_TRACE_DIR] [--list] [--] INPUTS

One argument that is a directory becomes ``TraceAnalysis(trace_dir=DIR)``; files become
``TraceAnalysis(trace_files=[...])`` (ranks read from the files, as the reference does for a
list). The trace is loaded once; every analysis then runs on its own deep copy of the loaded
``TraceAnalysis``, so columns that one analysis adds to the trace frames (the reference mutates
them) cannot change another's result. Nothing is plotted: ``visualize=False`` everywhere, and
plotly's ``Figure.show`` is replaced by a no-op for the calls that show a figure regardless.

Output (``OUT_DIR``):

* ``index.json``: environment, inputs, load time, and per analysis ``status`` ("ok", "error" or
  "skipped"), ``seconds`` (wall time of the call, without the deep copies, which are in
  ``copy_seconds``), ``call`` (what was called), and either
  ``result`` (a descriptor, below) or ``error`` (``type``, ``message``, ``traceback``) or
  ``reason``.
* one file per DataFrame/Series in the results: parquet (pyarrow) when pyarrow is installed in
  this interpreter, else pickle.

Result descriptors are JSON: ``{"kind": "none"}``, ``{"kind": "json", "value": ...}`` for plain
JSON-able values (numbers, strings, lists of them), ``{"kind": "list"|"tuple", "items": [...]}``,
``{"kind": "dict", "keys": [...], "items": [...]}`` (keys keep their type), and
``{"kind": "dataframe"|"series", "file", "format", "index_names", "columns", "json_columns",
"dtypes", ...}``. DataFrames are stored loss-free: the index becomes columns ``__index_i__``,
columns are renamed ``c0, c1, ...`` (the original labels, MultiIndex tuples included, are in the
descriptor), and object columns that pyarrow cannot store as one type are stored as JSON text.
``tests/reference/reference_results.py`` reads all of this back.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import pickle
import platform
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd

try:  # parquet when available, pickle otherwise
    import pyarrow as pa
    import pyarrow.parquet as pq

    HAVE_PYARROW = True
except ImportError:  # pragma: no cover - depends on the reference environment
    HAVE_PYARROW = False

HARNESS_VERSION = 1

# Operators tried, in this order, for get_frequent_cuda_kernel_sequences: the first whose name
# occurs (as a substring, like the reference matches it) in the trace's symbol table is used.
FREQUENT_SEQUENCE_OPERATORS = [
    "aten::linear",
    "aten::addmm",
    "aten::conv2d",
    "aten::mm",
    "aten::add",
    "aten::mul",
    "aten::copy_",
]


# --------------------------------------------------------------------------------------
# Storing results
# --------------------------------------------------------------------------------------


def _jsonable_scalar(v: Any) -> Any:
    """A JSON value for a scalar (numpy scalars included); raises TypeError otherwise."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (np.bool_,)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    raise TypeError(f"not a JSON scalar: {type(v)}")


def _is_plain_json(obj: Any) -> bool:
    try:
        json.dumps(_to_plain_json(obj), allow_nan=True)
        return True
    except TypeError:
        return False


def _to_plain_json(obj: Any) -> Any:
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise TypeError("non-string key")
        return {k: _to_plain_json(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_to_plain_json(v) for v in obj]
    return _jsonable_scalar(obj)


def _column_label(label: Any) -> Any:
    """A JSON form of a column or index label (tuples of MultiIndex columns become lists)."""
    if isinstance(label, tuple):
        return [_column_label(x) for x in label]
    try:
        return _jsonable_scalar(label)
    except TypeError:
        return str(label)


def _arrow_can_store(col: pd.Series) -> bool:
    try:
        arr = pa.array(col, from_pandas=True)
    except (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        TypeError,
        ValueError,
        OverflowError,
    ):
        return False
    # A struct or a union of mixed dicts loses nothing, but keep things simple and uniform.
    return not pa.types.is_struct(arr.type) and not pa.types.is_union(arr.type)


def _json_cell(v: Any) -> Optional[str]:
    def default(o: Any) -> Any:
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (np.floating,)):
            return float(o)
        if isinstance(o, (set, frozenset, tuple)):
            return list(o)
        return repr(o)

    if v is None:
        return None
    return json.dumps(v, default=default, allow_nan=True)


class ResultWriter:
    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        self.counter = 0

    def _new_file(self, stem: str, ext: str) -> Path:
        self.counter += 1
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in stem)[:80]
        return self.out_dir / f"{self.counter:03d}_{safe}.{ext}"

    def write_frame(
        self,
        df: pd.DataFrame,
        stem: str,
        kind: str = "dataframe",
        extra: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        desc: Dict[str, Any] = {
            "kind": kind,
            "shape": [int(df.shape[0]), int(df.shape[1])],
            "index_names": [_column_label(n) for n in df.index.names],
            "index_dtypes": [
                str(df.index.get_level_values(i).dtype) for i in range(df.index.nlevels)
            ],
            "columns": [_column_label(c) for c in df.columns],
            "column_level_names": [_column_label(n) for n in df.columns.names],
            "column_multiindex": isinstance(df.columns, pd.MultiIndex),
            "dtypes": [str(t) for t in df.dtypes],
        }
        if extra:
            desc.update(extra)
        flat = df.copy()
        n_index = df.index.nlevels
        index_frame = df.index.to_frame(index=False)
        index_frame.columns = [f"__index_{i}__" for i in range(n_index)]
        flat.columns = [f"c{i}" for i in range(df.shape[1])]
        flat = pd.concat([index_frame.reset_index(drop=True), flat.reset_index(drop=True)], axis=1)
        if HAVE_PYARROW:
            json_columns = []
            for name in flat.columns:
                col = flat[name]
                if col.dtype == object and not _arrow_can_store(col):
                    flat[name] = col.map(_json_cell)
                    json_columns.append(name)
            path = self._new_file(stem, "parquet")
            table = pa.Table.from_pandas(flat, preserve_index=False)
            pq.write_table(table, path)
            desc.update({"file": path.name, "format": "parquet", "json_columns": json_columns})
        else:  # pragma: no cover - depends on the reference environment
            path = self._new_file(stem, "pkl")
            with open(path, "wb") as f:
                pickle.dump(df, f, protocol=4)
            desc.update({"file": path.name, "format": "pickle", "json_columns": []})
        return desc

    def write(self, obj: Any, stem: str) -> Dict[str, Any]:
        if obj is None:
            return {"kind": "none"}
        if isinstance(obj, pd.DataFrame):
            return self.write_frame(obj, stem)
        if isinstance(obj, pd.Series):
            desc = self.write_frame(
                obj.to_frame(name="__series__"),
                stem,
                kind="series",
                extra={"series_name": _column_label(obj.name), "series_dtype": str(obj.dtype)},
            )
            return desc
        if isinstance(obj, tuple):
            return {
                "kind": "tuple",
                "items": [self.write(v, f"{stem}_{i}") for i, v in enumerate(obj)],
            }
        if isinstance(obj, list) and not _is_plain_json(obj):
            return {
                "kind": "list",
                "items": [self.write(v, f"{stem}_{i}") for i, v in enumerate(obj)],
            }
        if isinstance(obj, dict) and not _is_plain_json(obj):
            keys = list(obj.keys())
            return {
                "kind": "dict",
                "keys": [_column_label(k) for k in keys],
                "items": [self.write(obj[k], f"{stem}_{k}") for k in keys],
            }
        if _is_plain_json(obj):
            return {"kind": "json", "value": _to_plain_json(obj)}
        return {"kind": "repr", "value": repr(obj), "type": type(obj).__name__}


# --------------------------------------------------------------------------------------
# The analyses
# --------------------------------------------------------------------------------------


class Context:
    """What the analyses need: the loaded TraceAnalysis (pristine), inputs, scratch space."""

    def __init__(
        self, inputs: List[str], is_dir: bool, scratch: Path, diff_with: Optional[str]
    ) -> None:
        self.inputs = inputs
        self.is_dir = is_dir
        self.scratch = scratch
        self.diff_with = diff_with
        self.ta: Any = None  # TraceAnalysis, loaded once
        self.ta_last_step: Any = None  # loaded on demand with include_last_profiler_step
        self.load_error: Optional[BaseException] = None
        self.copy_seconds = 0.0  # time spent in deep copies, not counted as the call's time

    def construct(self, include_last_profiler_step: bool = False) -> Any:
        from hta.trace_analysis import TraceAnalysis

        if self.is_dir:
            return TraceAnalysis(
                trace_dir=self.inputs[0], include_last_profiler_step=include_last_profiler_step
            )
        files = [os.path.abspath(f) for f in self.inputs]
        common = os.path.commonpath([os.path.dirname(f) for f in files])
        return TraceAnalysis(
            trace_files=files,
            trace_dir=common,  # type: ignore[arg-type]
            include_last_profiler_step=include_last_profiler_step,
        )

    def fresh(self) -> Any:
        """A deep copy of the loaded TraceAnalysis; analyses may mutate it freely."""
        if self.ta is None:
            raise RuntimeError("the trace did not load") from self.load_error
        t0 = time.perf_counter()
        ta = copy.deepcopy(self.ta)
        self.copy_seconds += time.perf_counter() - t0
        return ta

    def fresh_last_step(self) -> Any:
        if self.ta_last_step is None:
            # This second load is part of the first analysis that needs it.
            self.ta_last_step = self.construct(include_last_profiler_step=True)
        t0 = time.perf_counter()
        ta = copy.deepcopy(self.ta_last_step)
        self.copy_seconds += time.perf_counter() - t0
        return ta

    def ranks(self) -> List[int]:
        return sorted(self.ta.t.traces.keys()) if self.ta is not None else []

    def first_rank(self) -> int:
        ranks = self.ranks()
        if not ranks:
            raise ValueError("the loaded trace has no rank with events")
        return ranks[0]


class Skip(Exception):
    """An analysis that does not apply to this input (recorded as skipped, with the reason)."""


def _per_rank(ctx: Context, fn: Callable[[Any, int], Any]) -> Dict[int, Any]:
    """Call fn(fresh TraceAnalysis, rank) once per rank, each on its own fresh copy."""
    out: Dict[int, Any] = {}
    for r in ctx.ranks():
        out[r] = fn(ctx.fresh(), r)
    return out


def a_load(ctx: Context) -> Any:
    """The loaded per-rank frames as the analyses see them, plus metadata (not an analysis of
    the reference, but what every analysis starts from). s_name/s_cat are added here (full
    names) because the integer ids depend on the symbol table's (hash-seeded) order."""
    ta = ctx.fresh()
    t = ta.t
    sym = t.symbol_table.get_sym_table()
    traces = {}
    for r in sorted(t.traces):
        df = t.traces[r].copy()
        df["s_name"] = df["name"].map(lambda i: sym[i] if i >= 0 else "")
        df["s_cat"] = df["cat"].map(lambda i: sym[i] if i >= 0 else "")
        traces[r] = df
    meta = {str(r): t.meta_data.get(r) for r in sorted(t.meta_data)}
    return {
        "traces": traces,
        "meta_data": meta if _is_plain_json(meta) else repr(meta),
        "trace_files": {str(r): f for r, f in sorted(t.trace_files.items())},
        "min_ts": _jsonable_scalar(t.min_ts),
        "symbol_table": list(sym),
        "device_type": t.get_device_type() if t.traces else None,
    }


def a_temporal_breakdown(ctx: Context) -> Any:
    return ctx.fresh().get_temporal_breakdown(visualize=False)


def a_temporal_breakdown_with_last_step(ctx: Context) -> Any:
    return ctx.fresh_last_step().get_temporal_breakdown(visualize=False)


def a_idle_time_breakdown(ctx: Context) -> Any:
    return ctx.fresh().get_idle_time_breakdown(ranks=ctx.ranks(), visualize=False)


def a_idle_time_breakdown_stats(ctx: Context) -> Any:
    return ctx.fresh().get_idle_time_breakdown(
        ranks=ctx.ranks(), visualize=False, show_idle_interval_stats=True
    )


def a_kernel_breakdown(ctx: Context) -> Any:
    return ctx.fresh().get_gpu_kernel_breakdown(visualize=False)


def a_kernel_breakdown_no_memory(ctx: Context) -> Any:
    return ctx.fresh().get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=False)


def a_gpu_kernels_with_user_annotations(ctx: Context) -> Any:
    return _per_rank(ctx, lambda ta, r: ta.get_gpu_kernels_with_user_annotations(rank=r))


def a_gpu_user_annotation_breakdown(ctx: Context) -> Any:
    return ctx.fresh().get_gpu_user_annotation_breakdown(visualize=False)


def a_cpu_user_annotation_breakdown(ctx: Context) -> Any:
    return ctx.fresh().get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)


def a_comm_comp_overlap(ctx: Context) -> Any:
    return ctx.fresh().get_comm_comp_overlap(visualize=False)


def a_queue_length_time_series(ctx: Context) -> Any:
    return ctx.fresh().get_queue_length_time_series(ranks=ctx.ranks())


def a_queue_length_summary(ctx: Context) -> Any:
    return ctx.fresh().get_queue_length_summary(ranks=ctx.ranks())


def a_time_blocked_on_full_queue(ctx: Context) -> Any:
    ta = ctx.fresh()
    ql = ta.get_queue_length_time_series(ranks=ctx.ranks())
    return ta.get_time_spent_blocked_on_full_queue(ql)


def a_time_blocked_on_full_queue_len2(ctx: Context) -> Any:
    """max_queue_length=2, so that the real traces (whose queues stay far below 1024) exercise
    the computation, including its one-stream-per-rank overwrite."""
    ta = ctx.fresh()
    ql = ta.get_queue_length_time_series(ranks=ctx.ranks())
    return ta.get_time_spent_blocked_on_full_queue(ql, max_queue_length=2)


def a_memory_bw_time_series(ctx: Context) -> Any:
    return ctx.fresh().get_memory_bw_time_series(ranks=ctx.ranks())


def a_memory_bw_summary(ctx: Context) -> Any:
    return ctx.fresh().get_memory_bw_summary(ranks=ctx.ranks())


def a_counters_trace(ctx: Context) -> Any:
    """generate_trace_with_counters writes `<trace>_with_counters.json...` beside each trace
    file; the trace files are pointed at links in a scratch folder so that nothing is written
    next to the real traces. The result is the counter events the reference appended, per
    rank, in the order it appended them (ph, name, pid, ts, id, and the counter's value)."""
    ta = ctx.fresh()
    t = ta.t
    work = Path(tempfile.mkdtemp(dir=ctx.scratch, prefix="counters_"))
    originals = dict(t.trace_files)
    for r, f in originals.items():
        link = work / f"rank{r}_{os.path.basename(f)}"
        os.symlink(os.path.abspath(f), link)
        t.trace_files[r] = str(link)
    ranks = ctx.ranks()
    ta.generate_trace_with_counters(ranks=ranks)
    out: Dict[int, Any] = {}
    for r in ranks:
        written = t.trace_files[r].replace(".json", "_with_counters.json")
        if not os.path.exists(written):
            continue
        with gzip.open(written, "rt") as f:
            content = json.load(f)
        n_orig = _count_events(originals[r])
        added = content["traceEvents"][n_orig:]
        rows = []
        for e in added:
            args = e.get("args", {})
            ((counter, value),) = args.items() if len(args) == 1 else ((None, None),)
            rows.append(
                {
                    "ph": e.get("ph"),
                    "name": e.get("name"),
                    "pid": e.get("pid"),
                    "ts": e.get("ts"),
                    "id": e.get("id"),
                    "counter": counter,
                    "value": value,
                }
            )
        out[r] = pd.DataFrame(rows, columns=["ph", "name", "pid", "ts", "id", "counter", "value"])
    shutil.rmtree(work, ignore_errors=True)
    return out


def _count_events(path: str) -> int:
    from hta.common.trace_parser import parse_trace_dict

    return len(parse_trace_dict(path).get("traceEvents", []))


def a_cuda_kernel_launch_stats(ctx: Context) -> Any:
    return _per_rank(
        ctx, lambda ta, r: ta.get_cuda_kernel_launch_stats(ranks=[r], visualize=False)[r]
    )


def a_cuda_kernel_launch_stats_no_memory(ctx: Context) -> Any:
    return _per_rank(
        ctx,
        lambda ta, r: ta.get_cuda_kernel_launch_stats(
            ranks=[r], include_memory_events=False, visualize=False
        )[r],
    )


def a_aten_op_kernels_and_delay(ctx: Context) -> Any:
    """Called once per rank: the reference accumulates its rows across the ranks of one call
    (the list is created outside the rank loop), so a multi-rank call mixes ranks."""
    return _per_rank(ctx, lambda ta, r: ta.get_aten_op_kernels_and_delay(ranks=[r])[r])


def a_frequent_cuda_kernel_sequences(ctx: Context) -> Any:
    ta = ctx.fresh()
    names = ta.t.symbol_table.get_sym_table()
    op = next((o for o in FREQUENT_SEQUENCE_OPERATORS if any(o in n for n in names)), None)
    if op is None:
        raise Skip(f"none of {FREQUENT_SEQUENCE_OPERATORS} occurs in the trace")
    out_dir = tempfile.mkdtemp(dir=ctx.scratch, prefix="frequent_")
    rank = ctx.first_rank()
    df = ta.get_frequent_cuda_kernel_sequences(
        operator_name=op, output_dir=out_dir, rank=rank, visualize=False
    )
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"operator_name": op, "rank": rank, "patterns": df}


def a_profiler_steps(ctx: Context) -> Any:
    return ctx.fresh().get_profiler_steps()


def a_profiler_steps_with_last_step(ctx: Context) -> Any:
    return ctx.fresh_last_step().get_profiler_steps()


def a_potential_stragglers(ctx: Context) -> Any:
    if len(ctx.ranks()) < 2:
        raise Skip("single rank: straggler analysis compares ranks")
    return ctx.fresh().get_potential_stragglers()


def a_cupti_counter_data(ctx: Context) -> Any:
    return ctx.fresh().get_cupti_counter_data_with_operators(ranks=ctx.ranks())


def a_critical_path(ctx: Context) -> Any:
    """critical_path_analysis on the first rank, for the first ProfilerStep when the trace has
    one (annotation "ProfilerStep", instance 0) and for the whole trace otherwise
    (annotation "", which matches every symbol). The graph is summarised: counts, the path in
    order (one row per edge, the order being nx.dag_longest_path's), the reference's breakdown
    (rows in its set order, which is hash-dependent) and its summary."""
    ta = ctx.fresh()
    rank = ctx.first_rank()
    names = ta.t.symbol_table.get_sym_table()
    annotation = "ProfilerStep" if any("ProfilerStep" in n for n in names) else ""
    res = ta.critical_path_analysis(rank=rank, annotation=annotation, instance_id=0)
    if res is None:
        return {"rank": rank, "annotation": annotation, "returned": None}
    g, ok = res
    edge_types: Dict[str, int] = {}
    for u, v in g.edges:
        ty = g.edges[u, v]["object"].type.value
        edge_types[ty] = edge_types.get(ty, 0) + 1
    out: Dict[str, Any] = {
        "rank": rank,
        "annotation": annotation,
        "success": bool(ok),
        "num_nodes": int(g.number_of_nodes()),
        "num_edges": int(g.number_of_edges()),
        "edge_type_counts": edge_types,
    }
    if ok:
        rows = []
        path = g.critical_path_nodes
        for u, v in zip(path[:-1], path[1:]):
            e = g.edges[u, v]["object"]
            nu, nv = g.node_list[u], g.node_list[v]
            rows.append(
                {
                    "begin": int(u),
                    "end": int(v),
                    "begin_ev_idx": int(nu.ev_idx),
                    "end_ev_idx": int(nv.ev_idx),
                    "begin_ts": _jsonable_scalar(nu.ts),
                    "end_ts": _jsonable_scalar(nv.ts),
                    "begin_is_start": bool(nu.is_start),
                    "end_is_start": bool(nv.is_start),
                    "type": e.type.value,
                    "weight": _jsonable_scalar(g.edges[u, v]["weight"]),
                    "edge_weight": _jsonable_scalar(e.weight),
                    "attributed_event": g.get_event_attribution_for_edge(e),
                }
            )
        out["path_edges"] = pd.DataFrame(rows)
        out["breakdown"] = g.get_critical_path_breakdown()
        out["summary"] = g.summary()
        out["critical_path_length"] = _jsonable_scalar(
            sum(g.edges[u, v]["weight"] for u, v in zip(path[:-1], path[1:]))
        )
    return out


def a_trace_diff(ctx: Context) -> Any:
    if not ctx.diff_with:
        raise Skip("needs a second trace (--diff-with)")
    if not ctx.is_dir:
        raise Skip("TraceDiff takes trace directories")
    from hta.trace_diff import TraceDiff

    return TraceDiff.compare_traces(ctx.inputs[0], ctx.diff_with)


def a_trace_diff_short_names(ctx: Context) -> Any:
    if not ctx.diff_with:
        raise Skip("needs a second trace (--diff-with)")
    if not ctx.is_dir:
        raise Skip("TraceDiff takes trace directories")
    from hta.trace_diff import TraceDiff

    return TraceDiff.compare_traces(ctx.inputs[0], ctx.diff_with, use_short_name=True)


def a_ops_diff(ctx: Context) -> Any:
    if not ctx.diff_with:
        raise Skip("needs a second trace (--diff-with)")
    if not ctx.is_dir:
        raise Skip("TraceDiff takes trace directories")
    from hta.trace_diff import TraceDiff

    return TraceDiff.ops_diff(ctx.inputs[0], ctx.diff_with)


def a_memory_timeline(ctx: Context) -> Any:
    """MemoryAnalysis reads the raw list torch.profiler's export_memory_timeline writes; its only
    public method plots. The data behind the plot is MemoryAnalysis._process_raw_events():
    timestamps and per-category byte totals, stored here one row per timestamp."""
    files = _input_files(ctx)
    raw = [
        f
        for f in files
        if ".raw." in os.path.basename(f) or "memory_timeline" in os.path.basename(f)
    ]
    if not raw:
        raise Skip("no raw memory timeline file (*.raw.gz) among the inputs")
    from hta.memory_analysis import _CATEGORY_TO_INDEX, MemoryAnalysis

    out = {}
    for f in raw:
        times, sizes = MemoryAnalysis(f)._process_raw_events()
        df = pd.DataFrame(sizes, columns=list(_CATEGORY_TO_INDEX))
        df.insert(0, "time", times)
        out[os.path.basename(f)] = df
    return out


def _input_files(ctx: Context) -> List[str]:
    if ctx.is_dir:
        d = ctx.inputs[0]
        return sorted(
            os.path.join(d, f) for f in os.listdir(d) if os.path.isfile(os.path.join(d, f))
        )
    return list(ctx.inputs)


# name -> (function, needs the loaded TraceAnalysis, what is called)
ANALYSES: Dict[str, Tuple[Callable[[Context], Any], bool, str]] = {
    "load": (a_load, True, "TraceAnalysis(...).t: traces, meta_data, symbol table"),
    "temporal_breakdown": (a_temporal_breakdown, True, "get_temporal_breakdown(visualize=False)"),
    "idle_time_breakdown": (
        a_idle_time_breakdown,
        True,
        "get_idle_time_breakdown(ranks=<all>, visualize=False)",
    ),
    "idle_time_breakdown_stats": (
        a_idle_time_breakdown_stats,
        True,
        "get_idle_time_breakdown(ranks=<all>, visualize=False, show_idle_interval_stats=True)",
    ),
    "kernel_breakdown": (a_kernel_breakdown, True, "get_gpu_kernel_breakdown(visualize=False)"),
    "kernel_breakdown_no_memory": (
        a_kernel_breakdown_no_memory,
        True,
        "get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=False)",
    ),
    "comm_comp_overlap": (a_comm_comp_overlap, True, "get_comm_comp_overlap(visualize=False)"),
    "queue_length_time_series": (
        a_queue_length_time_series,
        True,
        "get_queue_length_time_series(ranks=<all>)",
    ),
    "queue_length_summary": (a_queue_length_summary, True, "get_queue_length_summary(ranks=<all>)"),
    "time_blocked_on_full_queue": (
        a_time_blocked_on_full_queue,
        True,
        "get_time_spent_blocked_on_full_queue(get_queue_length_time_series(ranks=<all>))",
    ),
    "time_blocked_on_full_queue_len2": (
        a_time_blocked_on_full_queue_len2,
        True,
        "get_time_spent_blocked_on_full_queue(<time series of all ranks>, max_queue_length=2)",
    ),
    "memory_bw_time_series": (
        a_memory_bw_time_series,
        True,
        "get_memory_bw_time_series(ranks=<all>)",
    ),
    "memory_bw_summary": (a_memory_bw_summary, True, "get_memory_bw_summary(ranks=<all>)"),
    "cuda_kernel_launch_stats": (
        a_cuda_kernel_launch_stats,
        True,
        "get_cuda_kernel_launch_stats(ranks=[r], visualize=False)[r] for each rank r",
    ),
    "cuda_kernel_launch_stats_no_memory": (
        a_cuda_kernel_launch_stats_no_memory,
        True,
        "get_cuda_kernel_launch_stats(ranks=[r], include_memory_events=False, "
        "visualize=False)[r] for each rank r",
    ),
    "aten_op_kernels_and_delay": (
        a_aten_op_kernels_and_delay,
        True,
        "get_aten_op_kernels_and_delay(ranks=[r])[r] for each rank r",
    ),
    "gpu_kernels_with_user_annotations": (
        a_gpu_kernels_with_user_annotations,
        True,
        "get_gpu_kernels_with_user_annotations(rank=r) for each rank r",
    ),
    "gpu_user_annotation_breakdown": (
        a_gpu_user_annotation_breakdown,
        True,
        "get_gpu_user_annotation_breakdown(visualize=False)",
    ),
    "cpu_user_annotation_breakdown": (
        a_cpu_user_annotation_breakdown,
        True,
        "get_gpu_user_annotation_breakdown(use_gpu_annotation=False, visualize=False)",
    ),
    "profiler_steps": (a_profiler_steps, True, "get_profiler_steps()"),
    "potential_stragglers": (
        a_potential_stragglers,
        True,
        "get_potential_stragglers() (multi-rank only)",
    ),
    "frequent_cuda_kernel_sequences": (
        a_frequent_cuda_kernel_sequences,
        True,
        "get_frequent_cuda_kernel_sequences(operator_name=<first of FREQUENT_SEQUENCE_OPERATORS "
        "in the trace>, output_dir=<scratch>, rank=<first rank>, visualize=False)",
    ),
    "counters_trace": (
        a_counters_trace,
        True,
        "generate_trace_with_counters(ranks=<all>) (files in scratch)",
    ),
    "cupti_counter_data": (
        a_cupti_counter_data,
        True,
        "get_cupti_counter_data_with_operators(ranks=<all>)",
    ),
    "trace_diff": (a_trace_diff, False, "TraceDiff.compare_traces(<input dir>, <diff-with dir>)"),
    "trace_diff_short_names": (
        a_trace_diff_short_names,
        False,
        "TraceDiff.compare_traces(<input dir>, <diff-with dir>, use_short_name=True)",
    ),
    "ops_diff": (a_ops_diff, False, "TraceDiff.ops_diff(<input dir>, <diff-with dir>)"),
    "memory_timeline": (
        a_memory_timeline,
        False,
        "MemoryAnalysis(<*.raw.gz>)._process_raw_events()",
    ),
    "temporal_breakdown_with_last_step": (
        a_temporal_breakdown_with_last_step,
        True,
        "TraceAnalysis(..., include_last_profiler_step=True).get_temporal_breakdown("
        "visualize=False)",
    ),
    "profiler_steps_with_last_step": (
        a_profiler_steps_with_last_step,
        True,
        "TraceAnalysis(..., include_last_profiler_step=True).get_profiler_steps()",
    ),
    "critical_path": (
        a_critical_path,
        True,
        "critical_path_analysis(rank=<first rank>, annotation='ProfilerStep' (or '' without "
        "one), instance_id=0)",
    ),
}


# --------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------


def _disable_figures() -> None:
    """Some reference calls show a plotly figure whatever visualize says; make that a no-op."""
    try:
        import plotly.basedatatypes

        plotly.basedatatypes.BaseFigure.show = lambda *a, **k: None  # type: ignore
    except ImportError:  # pragma: no cover
        pass


def _error_record(exc: BaseException) -> Dict[str, Any]:
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "traceback": "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-6000:],
    }


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="*", help="a trace directory, or trace files")
    ap.add_argument("--out", help="output directory (created)")
    ap.add_argument("--analyses", nargs="+", help="analysis names (default: all)")
    ap.add_argument("--diff-with", help="second trace directory for the trace diff analyses")
    ap.add_argument("--list", action="store_true", help="list the analysis names and exit")
    args = ap.parse_args(argv)

    if args.list:
        for name, (_, _, call) in ANALYSES.items():
            print(f"{name}: {call}")
        return 0
    if not args.inputs or not args.out:
        ap.error("inputs and --out are required")
    names = [n for a in (args.analyses or []) for n in a.split(",") if n] or list(ANALYSES)
    unknown = [n for n in names if n not in ANALYSES]
    if unknown:
        ap.error(f"unknown analyses {unknown}; known: {list(ANALYSES)}")

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    is_dir = len(args.inputs) == 1 and os.path.isdir(args.inputs[0])
    inputs = [os.path.abspath(p) for p in args.inputs]

    _disable_figures()
    import hta

    index: Dict[str, Any] = {
        "harness_version": HARNESS_VERSION,
        "inputs": inputs,
        "input_is_dir": is_dir,
        "diff_with": os.path.abspath(args.diff_with) if args.diff_with else None,
        "storage": "parquet" if HAVE_PYARROW else "pickle",
        "environment": {
            "python": platform.python_version(),
            "hta_file": os.path.dirname(hta.__file__),
            "traceinsight": _dist_version("traceinsight"),
            "pandas": pd.__version__,
            "numpy": np.__version__,
            "pyarrow": pa.__version__ if HAVE_PYARROW else None,
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED"),
        },
        "analyses": {},
    }
    writer = ResultWriter(out_dir)
    scratch = Path(tempfile.mkdtemp(prefix="refharness_"))
    ctx = Context(inputs, is_dir, scratch, args.diff_with)

    def write_index() -> None:
        tmp = out_dir / "index.json.tmp"
        with open(tmp, "w") as f:
            json.dump(index, f, indent=1, allow_nan=True)
        os.replace(tmp, out_dir / "index.json")

    try:
        if any(ANALYSES[n][1] for n in names):
            t0 = time.perf_counter()
            try:
                ctx.ta = ctx.construct()
                index["load"] = {
                    "status": "ok",
                    "seconds": time.perf_counter() - t0,
                    "ranks": ctx.ranks(),
                    "trace_files": {str(r): f for r, f in sorted(ctx.ta.t.trace_files.items())},
                }
            except Exception as exc:  # noqa: BLE001 - recorded, the rest still runs
                ctx.load_error = exc
                index["load"] = {
                    "status": "error",
                    "seconds": time.perf_counter() - t0,
                    "error": _error_record(exc),
                }
        for name in names:
            fn, needs_trace, call = ANALYSES[name]
            rec: Dict[str, Any] = {"call": call}
            if needs_trace and ctx.ta is None:
                rec.update(
                    {
                        "status": "error",
                        "seconds": 0.0,
                        "error": {
                            "type": "LoadFailed",
                            "message": "TraceAnalysis could not be constructed: "
                            + index["load"]["error"]["type"]
                            + ": "
                            + index["load"]["error"]["message"][:500],
                        },
                    }
                )
                index["analyses"][name] = rec
                write_index()
                continue
            print(f"[run_reference] {name} ...", file=sys.stderr, flush=True)
            ctx.copy_seconds = 0.0
            t0 = time.perf_counter()

            def elapsed(t0: float = t0) -> Dict[str, float]:
                total = time.perf_counter() - t0
                return {"seconds": total - ctx.copy_seconds, "copy_seconds": ctx.copy_seconds}

            try:
                result = fn(ctx)
                rec.update(elapsed())
                rec["status"] = "ok"
                t1 = time.perf_counter()
                rec["result"] = writer.write(result, name)
                rec["write_seconds"] = time.perf_counter() - t1
            except Skip as exc:
                rec.update({"status": "skipped", "reason": str(exc), **elapsed()})
            except Exception as exc:  # noqa: BLE001 - one failure must not stop the others
                rec.update({"status": "error", "error": _error_record(exc), **elapsed()})
            index["analyses"][name] = rec
            write_index()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        index["complete"] = True
        write_index()
    return 0


def _dist_version(name: str) -> Optional[str]:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # noqa: BLE001
        return None


if __name__ == "__main__":
    sys.exit(main())
