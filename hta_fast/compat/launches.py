"""The reference's launch, operator, annotation and step methods, shaped its way: pandas
frames in microseconds (float64), {rank: DataFrame} where it returns one.

The numbers come from hta_fast.analysis (launch_stats, op_kernels, kernel_sequences,
annotations, steps); this module only selects, renames and converts units.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Dict, List, Optional

import numpy as np

from ..analysis import annotations as ann_mod
from ..analysis import kernel_sequences as seq_mod
from ..analysis import launch_stats as ls_mod
from ..analysis import steps as steps_mod
from ..analysis.ops import op_kernels as ok_mod
from ..frame import select
from ..schema import EventKind
from .plot_frames import plot_frame

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from .trace_analysis import TraceAnalysis

US = 1e-3  # ns -> µs


def _default_ranks(analysis: TraceAnalysis, ranks: Optional[List[int]]) -> List[int]:
    if ranks:
        return list(ranks)
    known = analysis.traces.ranks
    return [0] if 0 in known or not known else [known[0]]


def _us(table: pa.Table, column: str) -> np.ndarray:
    return table.column(column).to_numpy().astype(np.float64) * US


def get_cuda_kernel_launch_stats(
    analysis: TraceAnalysis,
    ranks: Optional[List[int]] = None,
    runtime_cutoff: int = 50,
    launch_delay_cutoff: int = 100,
    include_memory_events: bool = True,
    visualize: bool = False,
) -> Dict[int, pd.DataFrame]:
    """{rank: DataFrame[correlation, cpu_duration, gpu_duration, launch_delay]} (µs).
    Cutoffs are in µs, as in the reference; they only drive the plots."""
    import pandas as pd

    wanted = _default_ranks(analysis, ranks)
    sel = dataclasses.replace(analysis.selection, ranks=wanted)
    out = {}
    for rank, trace, mask in select.each_rank(analysis.traces, sel):
        t = ls_mod.launch_timing(trace, mask, include_memory_events)
        df = pd.DataFrame(
            {
                "correlation": t["correlation"],
                "cpu_duration": t["cpu_duration"] * US,
                "gpu_duration": t["gpu_duration"] * US,
                "launch_delay": t["launch_delay"] * US,
            },
            copy=False,
        )  # fresh arrays: no need to gather them into one block
        out[rank] = df
    out = {rank: out[rank] for rank in dict.fromkeys(wanted)}  # in the order asked for
    if visualize:
        for rank, df in out.items():
            _plot_launch_stats(rank, df, runtime_cutoff, launch_delay_cutoff)
    return out


def _plot_launch_stats(
    rank: int, df: pd.DataFrame, runtime_cutoff: float, launch_delay_cutoff: float
) -> None:
    import plotly.express as px

    px.scatter(
        df,
        x="cpu_duration",
        y="gpu_duration",
        title=f"Rank {rank}: launch call vs GPU duration (us)",
    ).show()
    long_runtime = df[df["cpu_duration"] > runtime_cutoff]
    px.histogram(
        long_runtime,
        x="cpu_duration",
        title=f"Rank {rank}: launch calls longer than {runtime_cutoff} us",
    ).show()
    long_delay = df[df["launch_delay"] > launch_delay_cutoff]
    px.histogram(
        long_delay,
        x="launch_delay",
        title=f"Rank {rank}: launch delays longer than {launch_delay_cutoff} us",
    ).show()


ATEN_COLUMNS = [
    "aten_op_name",
    "kernel_sequence",
    "occurrence_count",
    "avg_aten_op_launch_delay",
    "avg_runtime_delay",
]


def get_aten_op_kernels_and_delay(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None, sort_by: Optional[List[str]] = None
) -> Dict[int, pd.DataFrame]:
    """{rank: DataFrame[aten_op_name, kernel_sequence, occurrence_count,
    avg_aten_op_launch_delay, avg_runtime_delay]} (delays in µs, rounded to 3 decimals),
    sorted by `sort_by` (default occurrence_count) descending; the index holds each row's
    position in (aten_op_name, kernel_sequence) order. A rank without any launch inside an
    aten op gives an empty frame."""
    import pandas as pd

    sort_by = list(sort_by) if sort_by else ["occurrence_count"]
    out = {}
    for rank in _default_ranks(analysis, ranks):
        res = ok_mod.op_kernels(analysis.traces, selection=analysis.selection, ranks=[rank])
        t = res.table
        df = pd.DataFrame(
            {
                "aten_op_name": t.column("op_name").to_pylist(),
                "kernel_sequence": t.column("kernel_sequence").to_pylist(),
                "occurrence_count": t.column("occurrence_count").to_numpy().astype(np.int64),
                "avg_aten_op_launch_delay": (_us(t, "avg_op_launch_delay")).round(3),
                "avg_runtime_delay": (_us(t, "avg_runtime_delay")).round(3),
            },
            columns=ATEN_COLUMNS,
        )
        df = df.sort_values(["aten_op_name", "kernel_sequence"], ignore_index=True)
        out[rank] = df.sort_values(sort_by, ascending=False, kind="stable")
    return out


def get_profiler_steps(analysis: TraceAnalysis) -> List[int]:
    """Sorted distinct step numbers over all ranks (the dropped last step excluded unless
    include_last_profiler_step)."""
    res = steps_mod.profiler_steps(analysis.traces, selection=analysis.selection)
    return [int(s) for s in res["steps"].column("step").to_pylist()]


def get_frequent_cuda_kernel_sequences(
    analysis: TraceAnalysis,
    operator_name: str,
    output_dir: str,
    min_pattern_len: int = 3,
    rank: int = 0,
    top_k: int = 5,
    visualize: bool = False,
    compress_other_kernels: bool = True,
) -> pd.DataFrame:
    """pattern, count, GPU kernel duration (us), CPU op duration (us) for the outermost
    operators whose name contains operator_name (as the reference matches it), sorted by
    count descending then pattern; writes output_dir/overlaid_<trace file>. An empty
    operator_name, an output_dir that is not a writable folder, or no pattern: an empty
    DataFrame."""
    import os

    import pandas as pd

    if not operator_name or not os.path.isdir(output_dir) or not os.access(output_dir, os.W_OK):
        return pd.DataFrame()
    res = seq_mod.kernel_sequences(
        analysis.traces,
        operator_name,
        min_pattern_len=min_pattern_len,
        top_k=top_k,
        exact=False,
        output_dir=output_dir,
        compress_other_kernels=compress_other_kernels,
        selection=analysis.selection,
        ranks=[rank],
    )
    t = res.table
    if t.num_rows == 0:
        return pd.DataFrame()
    df = pd.DataFrame(
        {
            "pattern": t.column("pattern").to_pylist(),
            "count": t.column("count").to_numpy().astype(np.int64),
            "GPU kernel duration (us)": _us(t, "gpu_kernel_duration"),
            "CPU op duration (us)": _us(t, "cpu_op_duration"),
        }
    )
    if visualize:
        import plotly.express as px

        top = plot_frame(df[:top_k])
        px.bar(
            top,
            x=top.index,
            y="count",
            hover_data=["pattern", "count"],
            title=f"Top {top_k} frequent patterns for rank {rank}",
        ).show()
    return df


def shorten_name(name: str) -> str:
    """A kernel or operator name without its template and call arguments or return type:
    "void at::native::foo<4, float>(int, float)" -> "at::native::foo". Memcpy/Memset
    names, and names without < or (, are returned unchanged."""
    if name.startswith(("Memcpy", "Memset")) or ("<" not in name and "(" not in name):
        return name
    out: list = []
    for ch in name.replace("->", ""):
        if ch in ">)":
            opener = "<" if ch == ">" else "("
            while out and out[-1] != opener:
                out.pop()
            if out:
                out.pop()
        else:
            out.append(ch)
    return "".join(out).split(" ")[-1]


def _aligned_origin(analysis: TraceAnalysis) -> int:
    """The earliest event start over all ranks (ns): the reference's time zero."""
    import pyarrow.compute as pc

    starts = []
    for t in analysis.traces.values():
        # the trace-span event (category "Trace") is not an event the reference keeps
        is_span = pc.equal(t.strings, "Trace").to_numpy(zero_copy_only=False)
        cat = t.column("events", "cat")
        keep = ~((cat >= 0) & is_span[np.maximum(cat, 0)])
        if keep.any():
            starts.append(int(t.column("events", "ts")[keep].min()))
    return min(starts) if starts else 0


def _has_kind(analysis: TraceAnalysis, kind: int) -> bool:
    return any(bool((t.column("events", "kind") == kind).any()) for t in analysis.traces.values())


def get_gpu_kernels_with_user_annotations(
    analysis: TraceAnalysis, rank: int, expand_names: bool = True, shorten_names: bool = True
) -> Optional[pd.DataFrame]:
    """GPU work events of `rank` with the innermost GPU annotation over each: columns
    name, cat, pid, tid, ts, dur, end (µs, ts from the earliest event of all ranks), stream,
    correlation, user_annotation (the annotation's name, "" for none) and, with
    expand_names, s_name, s_cat, s_user_annotation (shortened with shorten_names). None
    when no rank holds a GPU annotation."""
    import pandas as pd

    if not _has_kind(analysis, EventKind.gpu_user_annotation):
        return None
    res = ann_mod.kernels_with_user_annotations(analysis.traces, rank, selection=analysis.selection)
    t = res.table
    ts = t.column("ts").to_numpy()
    origin = _aligned_origin(analysis)
    df = pd.DataFrame(
        {
            "name": t.column("name").to_pylist(),
            "cat": t.column("cat").to_pylist(),
            "pid": t.column("pid").to_numpy(),
            "tid": t.column("tid").to_numpy(),
            "ts": (ts - origin) * US,
            "dur": _us(t, "dur"),
        }
    )
    df["end"] = df["ts"] + df["dur"]
    df["stream"] = t.column("stream").to_numpy()
    df["correlation"] = t.column("correlation").to_numpy()
    df["user_annotation"] = t.column("annotation").fill_null("").to_pylist()
    if expand_names:
        short = shorten_name if shorten_names else (lambda s: s)
        for col in ("name", "cat", "user_annotation"):
            uniq = {v: short(v) if v else "" for v in set(df[col])}
            df["s_" + col] = df[col].map(uniq)
    return df


def get_gpu_user_annotation_breakdown(
    analysis: TraceAnalysis,
    use_gpu_annotation: bool = True,
    visualize: bool = False,
    duration_ratio: float = 0.8,
    num_kernels: int = 1000,
    allowlist_patterns: Optional[List[str]] = None,
) -> Optional[pd.DataFrame]:
    """name, sum (us), max (us), min (us), stddev, mean (us), rank per rank and annotation
    name (GPU annotations, or CPU ones with use_gpu_annotation=False), sorted by rank and
    name; None when no rank holds that kind of annotation."""
    import pandas as pd

    kind = EventKind.gpu_user_annotation if use_gpu_annotation else EventKind.user_annotation
    if not _has_kind(analysis, kind):
        return None
    res = ann_mod.user_annotation_breakdown(
        analysis.traces,
        use_gpu_annotation=use_gpu_annotation,
        duration_ratio=duration_ratio,
        num_kernels=num_kernels,
        allowlist_patterns=allowlist_patterns,
        selection=analysis.selection,
    )
    t = res.table
    df = pd.DataFrame(
        {
            "name": t.column("name").to_pylist(),
            "sum (us)": _us(t, "sum"),
            "max (us)": _us(t, "max"),
            "min (us)": _us(t, "min"),
            "stddev": _us(t, "stddev"),
            "mean (us)": _us(t, "mean"),
            "rank": t.column("rank").to_numpy(),
        }
    )
    if visualize:
        import plotly.express as px

        px.bar(
            plot_frame(df), x="name", y="sum (us)", color="rank", title="Time per user annotation"
        ).show()
    return df
