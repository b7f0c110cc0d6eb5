"""The reference's launch, operator, annotation and step methods, shaped its way: pandas
frames in microseconds (float64), {rank: DataFrame} where it returns one.

The numbers come from hta_fast.analysis (launch_stats, op_kernels, kernel_sequences,
annotations, steps); this module only selects, renames and converts units.
"""
from __future__ import annotations

from typing import List, Optional

import numpy as np

from ..analysis import annotations as ann_mod
from ..analysis import kernel_sequences as seq_mod
from ..analysis import launch_stats as ls_mod
from ..analysis import op_kernels as ok_mod
from ..analysis import steps as steps_mod

US = 1e-3  # ns -> µs


def _default_ranks(analysis, ranks: Optional[List[int]]) -> List[int]:
    if ranks:
        return list(ranks)
    known = analysis.traces.ranks
    return [0] if 0 in known or not known else [known[0]]


def _us(table, column):
    return table.column(column).to_numpy().astype(np.float64) * US


def get_cuda_kernel_launch_stats(analysis, ranks: Optional[List[int]] = None,
                                 runtime_cutoff: int = 50, launch_delay_cutoff: int = 100,
                                 include_memory_events: bool = True, visualize: bool = False):
    """{rank: DataFrame[correlation, cpu_duration, gpu_duration, launch_delay]} (µs).
    Cutoffs are in µs, as in the reference; they only drive the plots."""
    import pandas as pd

    out = {}
    for rank in _default_ranks(analysis, ranks):
        res = ls_mod.launch_stats(analysis.traces, selection=analysis.selection, ranks=[rank],
                                  include_memory_events=include_memory_events,
                                  runtime_cutoff=int(runtime_cutoff * 1000),
                                  launch_delay_cutoff=int(launch_delay_cutoff * 1000))
        t = res.table
        df = pd.DataFrame({
            "correlation": t.column("correlation").to_numpy(),
            "cpu_duration": _us(t, "cpu_duration"),
            "gpu_duration": _us(t, "gpu_duration"),
            "launch_delay": _us(t, "launch_delay"),
        })
        out[rank] = df
        if visualize:
            _plot_launch_stats(rank, df, runtime_cutoff, launch_delay_cutoff)
    return out


def _plot_launch_stats(rank, df, runtime_cutoff, launch_delay_cutoff):
    import plotly.express as px

    px.scatter(df, x="cpu_duration", y="gpu_duration",
               title=f"Rank {rank}: launch call vs GPU duration (us)").show()
    long_runtime = df[df["cpu_duration"] > runtime_cutoff]
    px.histogram(long_runtime, x="cpu_duration",
                 title=f"Rank {rank}: launch calls longer than {runtime_cutoff} us").show()
    long_delay = df[df["launch_delay"] > launch_delay_cutoff]
    px.histogram(long_delay, x="launch_delay",
                 title=f"Rank {rank}: launch delays longer than {launch_delay_cutoff} us").show()


ATEN_COLUMNS = ["aten_op_name", "kernel_sequence", "occurrence_count",
                "avg_aten_op_launch_delay", "avg_runtime_delay"]


def get_aten_op_kernels_and_delay(analysis, ranks: Optional[List[int]] = None,
                                  sort_by: Optional[List[str]] = None):
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
        df = pd.DataFrame({
            "aten_op_name": t.column("op_name").to_pylist(),
            "kernel_sequence": t.column("kernel_sequence").to_pylist(),
            "occurrence_count": t.column("occurrence_count").to_numpy().astype(np.int64),
            "avg_aten_op_launch_delay": (_us(t, "avg_op_launch_delay")).round(3),
            "avg_runtime_delay": (_us(t, "avg_runtime_delay")).round(3),
        }, columns=ATEN_COLUMNS)
        df = df.sort_values(["aten_op_name", "kernel_sequence"], ignore_index=True)
        out[rank] = df.sort_values(sort_by, ascending=False, kind="stable")
    return out


def get_profiler_steps(analysis) -> List[int]:
    """Sorted distinct step numbers over all ranks (the dropped last step excluded unless
    include_last_profiler_step)."""
    res = steps_mod.profiler_steps(analysis.traces, selection=analysis.selection)
    return [int(s) for s in res["steps"].column("step").to_pylist()]


def get_frequent_cuda_kernel_sequences(analysis, operator_name: str, output_dir: str,
                                       min_pattern_len: int = 3, rank: int = 0, top_k: int = 5,
                                       visualize: bool = False,
                                       compress_other_kernels: bool = True):
    raise NotImplementedError


def get_gpu_kernels_with_user_annotations(analysis, rank: int, expand_names: bool = True,
                                          shorten_names: bool = True):
    raise NotImplementedError


def get_gpu_user_annotation_breakdown(analysis, use_gpu_annotation: bool = True,
                                      visualize: bool = False, duration_ratio: float = 0.8,
                                      num_kernels: int = 1000,
                                      allowlist_patterns: Optional[List[str]] = None):
    raise NotImplementedError
