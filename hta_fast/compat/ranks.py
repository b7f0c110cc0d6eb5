"""The reference's straggler and CUPTI-counter methods over hta_fast.analysis.stragglers and
hta_fast.analysis.cupti_counters."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, List, Optional

import numpy as np

from ..analysis.cupti_counters import cupti_counters
from ..analysis.stragglers import stragglers
from ..frame import select

if TYPE_CHECKING:
    import pandas as pd

    from ..frame.result import Result
    from .trace_analysis import TraceAnalysis


def _steps(analysis: TraceAnalysis, selection: select.Selection) -> List[int]:
    found: set[int] = set()
    for _, trace, mask in select.each_rank(analysis.traces, selection):
        step = trace.column("events", "step")
        found.update(int(s) for s in np.unique(step if mask is None else step[mask]))
    found.discard(-1)
    return sorted(found)


def get_potential_stragglers(
    analysis: TraceAnalysis,
    profiler_steps: Optional[List[int]] = None,
    num_candidates: int = 2,
    visualize: bool = False,
) -> List[int]:
    """The ranks most often among the `num_candidates` latest to start the probe
    collective, strongest first. A step given in `profiler_steps` is used even when it is
    the last one (which the default view leaves out); unknown steps are ignored, and none
    left is a ValueError."""
    num_candidates = max(1, int(num_candidates))
    available = _steps(analysis, analysis.selection)
    if profiler_steps is None:
        sel = dataclasses.replace(analysis.selection, steps=available)
    else:
        every = _steps(analysis, dataclasses.replace(analysis.selection, before_last_step=False))
        valid = [s for s in profiler_steps if s in every]
        if not valid:
            raise ValueError(
                f"invalid value for argument: profiler_steps={profiler_steps}; "
                f"available profiler steps={available}"
            )
        sel = dataclasses.replace(analysis.selection, steps=valid, before_last_step=False)
    if profiler_steps is None and not available:
        raise ValueError(
            "invalid value for argument: profiler_steps=None; available profiler steps=[]"
        )
    res = stragglers(analysis.traces, num_candidates=num_candidates, selection=sel)
    if visualize:
        _plot(res)
    return list(res.params.get("stragglers", []))


def _plot(res: Result) -> None:
    import plotly.express as px

    df = res.to_pandas("per_step")
    if df.empty:
        return
    df["is_straggler"] = df["is_straggler"].map({True: "Yes", False: "No"})
    px.bar(
        df,
        x="rank",
        y="normalized_start_time",
        color="is_straggler",
        facet_col="step" if df["step"].nunique() > 1 else None,
        color_discrete_map={"Yes": "red", "No": "blue"},
        title="Potential Stragglers",
    ).show()


def _origin(analysis: TraceAnalysis) -> int:
    """The reference's time origin: the earliest event start over all ranks (ns),
    profiler "Trace" spans left out."""
    import pyarrow.compute as pc

    first = None
    for trace in analysis.traces.values():
        ts = trace.column("events", "ts")
        trace_cat = np.flatnonzero(pc.equal(trace.strings, "Trace").to_numpy(zero_copy_only=False))
        keep = ~np.isin(trace.column("events", "cat"), trace_cat)
        if keep.any():
            lo = int(ts[keep].min())
            first = lo if first is None else min(first, lo)
    return first or 0


def get_cupti_counter_data_with_operators(
    analysis: TraceAnalysis, ranks: Optional[List[int]] = None
) -> List[pd.DataFrame]:
    """A list of DataFrames, one per rank with CUPTI range events (ranks: default [0]):
    cat, name, pid, tid, ts, dur (µs; ts from the earliest event of all ranks), stream,
    correlation, external_id, one column per counter, op_stack (list of op names,
    outermost first), top_level_op, bottom_level_op. A rank whose ranges and kernel
    launches differ in number is left out, like the reference."""
    import pandas as pd

    if not ranks:
        ranks = [0]
    res = cupti_counters(
        analysis.traces, selection=dataclasses.replace(analysis.selection, ranks=list(ranks))
    )
    if res.table.num_rows == 0:
        return []
    origin = _origin(analysis)
    df_all = res.to_pandas()
    base = {
        "rank",
        "ts",
        "dur",
        "name",
        "pid",
        "tid",
        "launch_ts",
        "op_stack",
        "top_level_op",
        "bottom_level_op",
    }
    counters = [c for c in df_all.columns if c not in base]
    out = []
    for rank in ranks:
        df = df_all[df_all["rank"] == rank]
        if df.empty or df["launch_ts"].isna().any():
            continue
        frame = pd.DataFrame(
            {
                "cat": "cuda_profiler_range",
                "name": df["name"].fillna("").to_numpy(),
                "pid": df["pid"].to_numpy(),
                "tid": df["tid"].to_numpy(),
                "ts": (df["ts"].to_numpy() - origin) / 1000.0,
                "dur": df["dur"].to_numpy() / 1000.0,
                "stream": -1,
                "correlation": -1,
                "external_id": -1,
            }
        )
        for c in counters:
            frame[c] = df[c].to_numpy()
        frame["op_stack"] = [list(s) for s in df["op_stack"]]
        frame["top_level_op"] = df["top_level_op"].fillna("").to_numpy()
        frame["bottom_level_op"] = df["bottom_level_op"].fillna("").to_numpy()
        out.append(frame)
    return out
