"""The reference's GPU-time methods (temporal breakdown, idle time breakdown, kernel type
breakdown, communication/computation overlap) in its pandas shapes and units
(microseconds, float64), computed by hta_fast.analysis with the TraceAnalysis's selection.

Where the reference is wrong our numbers differ: see docs/differences.md (sync events are
not GPU time; idle intervals start at the stream's latest end; per-kernel statistics are
those of the kernel's events; duration_ratio is a share of time; a rank without GPU work or
without communication gives NaN instead of an exception). GPU events without a launch are
left out of the default view, as by the reference, with a warning saying how many
(hta_fast.compat.launchless).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Tuple

import numpy as np

from ..analysis import idle_time, kernel_breakdown, overlap, temporal
from .launchless import warn_launchless
from .plot_frames import plot_frame

if TYPE_CHECKING:
    import pandas as pd

    from .trace_analysis import TraceAnalysis

US = 1000.0  # ns per µs

_TEMPORAL_COLUMNS = ["idle_time", "compute_time", "non_compute_time", "kernel_time"]


def get_temporal_breakdown(analysis: TraceAnalysis, visualize: bool = False) -> pd.DataFrame:
    import pandas as pd

    warn_launchless(analysis, "get_temporal_breakdown")
    t = temporal.temporal_breakdown(analysis.traces, selection=analysis.selection).table
    df = pd.DataFrame({"rank": np.asarray(t["rank"], np.int64)})
    for c in _TEMPORAL_COLUMNS:
        df[f"{c}(us)"] = t[c].to_numpy().astype(np.float64) / US
    kt = df["kernel_time(us)"].to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for c in _TEMPORAL_COLUMNS[:3]:
            df[f"{c}_pctg"] = np.round(100 * df[f"{c}(us)"].to_numpy() / kt, 2)
    if visualize:  # pragma: no cover - drawing only
        import plotly.express as px

        px.bar(
            df,
            x="rank",
            y=[f"{c}_pctg" for c in _TEMPORAL_COLUMNS[:3]],
            title="Temporal breakdown across ranks",
            labels={"value": "Percentage of kernel time"},
        ).show()
    return df


def _stream_dtype(analysis: TraceAnalysis, ranks: List[int]) -> np.dtype:
    """The smallest integer dtype holding -1 and every stream id of these ranks (the
    reference downcasts its integer columns so)."""
    lo, hi = -1, -1
    for r in ranks:
        s = analysis.traces[r].column("events", "stream")
        if len(s):
            lo, hi = min(lo, int(s.min())), max(hi, int(s.max()))
    for dt in (np.int8, np.int16, np.int32, np.int64):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return np.dtype(dt)
    return np.dtype(np.int64)


def get_idle_time_breakdown(
    analysis: TraceAnalysis,
    ranks: Optional[List[int]] = None,
    streams: Optional[List[int]] = None,
    visualize: bool = False,
    visualize_pctg: bool = True,
    show_idle_interval_stats: bool = False,
    consecutive_kernel_delay: int = 30,
) -> Tuple[pd.DataFrame, Optional[pd.DataFrame]]:
    """(breakdown DataFrame, interval statistics DataFrame or None). ranks default to [0];
    consecutive_kernel_delay is in µs, as the reference applies it."""
    import pandas as pd

    ranks = [0] if ranks is None else list(ranks)
    if not ranks:
        raise ValueError("no ranks given")
    res = idle_time.idle_time_breakdown(
        analysis.traces,
        consecutive_kernel_delay=int(round(consecutive_kernel_delay * US)),
        interval_stats=show_idle_interval_stats,
        ranks=ranks,
        streams=streams or None,
        selection=analysis.selection,
    )
    warn_launchless(analysis, "get_idle_time_breakdown", ranks)
    stream_dt = _stream_dtype(analysis, ranks)
    t = {
        name: res.table.column(name).to_numpy(zero_copy_only=False)
        for name in ("rank", "stream", "idle_category", "idle_time", "intervals")
    }
    # Rows come three per (rank, stream): that stream's categories. The reference lists the
    # categories that some kernel falls in; every stream's first kernel falls in "other"
    # (with no interval), so "other" is always there.
    stream_total = np.repeat(
        np.add.reduceat(t["idle_time"], np.arange(0, len(t["idle_time"]), 3))
        if len(t["idle_time"])
        else np.empty(0, np.int64),
        3,
    )
    present = (t["intervals"] > 0) | (t["idle_category"] == "other")
    rows = np.concatenate([np.flatnonzero((t["rank"] == r) & present) for r in ranks])
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = t["idle_time"][rows] / stream_total[rows].astype(np.float64)
    index = np.concatenate([np.arange(np.count_nonzero((t["rank"] == r) & present)) for r in ranks])
    result = pd.DataFrame(
        {
            "rank": t["rank"][rows].astype(np.int64),
            "stream": t["stream"][rows].astype(stream_dt),
            "idle_category": t["idle_category"][rows].astype(object),
            "idle_time": t["idle_time"][rows].astype(np.float64) / US,
            "idle_time_ratio": ratio,
        },
        index=index,
    ).round(2)
    stats = None
    if show_idle_interval_stats:
        st = res["interval_stats"]
        q = {
            k: st.column(k).to_numpy(zero_copy_only=False).astype(np.float64)[rows] / US
            for k in ("mean", "std", "min", "p25", "p50", "p75", "max")
        }
        stats = pd.DataFrame(
            {
                "rank": t["rank"][rows].astype(np.int64),
                "stream": t["stream"][rows].astype(stream_dt),
                "count": st.column("count").to_numpy().astype(np.float64)[rows],
                "mean": q["mean"],
                "std": q["std"],
                "min": q["min"],
                "25%": q["p25"],
                "50%": q["p50"],
                "75%": q["p75"],
                "max": q["max"],
            },
            index=pd.Index(t["idle_category"][rows].astype(object), name="idle_category"),
        ).round(2)
    if visualize:  # pragma: no cover - drawing only
        import plotly.express as px

        ycol = "idle_time_ratio" if visualize_pctg else "idle_time"
        px.bar(
            result.assign(stream=result.stream.astype(str)),
            x="stream",
            y=ycol,
            color="idle_category",
            facet_col="rank",
            title="Idle time breakdown per stream",
        ).show()
    return result, stats


def get_gpu_kernel_breakdown(
    analysis: TraceAnalysis,
    visualize: bool = False,
    duration_ratio: float = 0.8,
    num_kernels: int = 10,
    include_memory_kernels: bool = True,
) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """(kernel type DataFrame, per kernel DataFrame)."""
    import pandas as pd

    warn_launchless(analysis, "get_gpu_kernel_breakdown")
    res = kernel_breakdown.kernel_breakdown(
        analysis.traces,
        duration_ratio=duration_ratio,
        num_kernels=num_kernels,
        include_memory_kernels=include_memory_kernels,
        selection=analysis.selection,
    )
    t = res.table.to_pandas()
    sums = t.groupby("kernel_type", sort=True)["time"].sum()
    types = pd.DataFrame(
        {
            "kernel_type": sums.index.to_numpy(dtype=object),
            "sum": np.round(sums.to_numpy() / US).astype(np.int64),
        }
    )
    types = types.sort_values(["sum", "kernel_type"], ascending=[False, True], ignore_index=True)
    total = types["sum"].sum()
    types["percentage"] = np.round(100 * types["sum"] / total, 1) if total else np.nan

    k = res["kernels"].to_pandas()
    kernels = pd.DataFrame(
        {
            "name": k["name"].to_numpy(dtype=object),
            "sum (us)": k["sum"].to_numpy().astype(np.float64) / US,
            "max (us)": k["max"].to_numpy().astype(np.float64) / US,
            "min (us)": k["min"].to_numpy().astype(np.float64) / US,
            "stddev": k["stddev"].fillna(0.0).to_numpy(dtype=np.float64) / US,
            "mean (us)": k["mean"].to_numpy(dtype=np.float64) / US,
            "kernel_type": k["kernel_type"].to_numpy(dtype=object),
            "rank": k["rank"].to_numpy().astype(np.int64),
        }
    )
    kernels = kernels.sort_values(["kernel_type", "name", "rank"], kind="stable", ignore_index=True)
    if visualize:  # pragma: no cover - drawing only
        import plotly.express as px

        px.pie(
            plot_frame(types),
            values="sum",
            names="kernel_type",
            title="Time spent on each kernel type",
        ).show()
        px.bar(
            plot_frame(kernels),
            x="rank",
            y="sum (us)",
            color="name",
            facet_col="kernel_type",
            title="Kernel time per rank",
        ).show()
    return types, kernels


def get_comm_comp_overlap(analysis: TraceAnalysis, visualize: bool = False) -> pd.DataFrame:
    import pandas as pd

    warn_launchless(analysis, "get_comm_comp_overlap")
    t = overlap.comm_comp_overlap(analysis.traces, selection=analysis.selection).table
    pct = t["comp_comm_overlap_pctg"].to_numpy(zero_copy_only=False).astype(np.float64)
    df = pd.DataFrame(
        {"rank": np.asarray(t["rank"], np.int64), "comp_comm_overlap_pctg": np.round(pct, 2)}
    )
    if visualize:  # pragma: no cover - drawing only
        import plotly.express as px

        px.bar(
            df,
            x="rank",
            y="comp_comm_overlap_pctg",
            title="Computation-communication overlap per rank",
        ).show()
    return df
