"""What a set of traces holds (the report's summary and `hta-fast info`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..._arrow import array_of, table_from_rows
from ...loading.rank_info import rank_info
from ...traceset import TraceSet
from ..page.context import Context, Section
from ..page.tables import html_table


def ranks_table(traces: TraceSet) -> pa.Table:
    return table_from_rows([rank_info(t) for t in traces.values()])


def rank_overview(ctx: Context, load_seconds: float) -> tuple[pa.Table, pa.Table, dict[str, Any]]:
    """(ranks_table, the table shown: without files, with each rank's GPU busy share, the
    headline numbers)."""
    info = ranks_table(ctx.traces)
    headline = {
        "ranks": len(ctx.traces),
        "json_mb": sum(info.column("json_bytes").to_pylist()) / 1e6,
        "events": sum(info.column("events").to_pylist()),
        "kernels": sum(info.column("kernels").to_pylist()),
        "devices": ", ".join(sorted({d for d in info.column("devices").to_pylist() if d})) or "–",
        "load_seconds": load_seconds,
        "utilization": None,
    }
    temporal = ctx.result("temporal").table
    kt = np.array(temporal.column("kernel_time").to_pylist(), float)
    idle = np.array(temporal.column("idle_time").to_pylist(), float)
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(kt > 0, (kt - idle) / kt, np.nan)
    if np.isfinite(util).any():
        headline["utilization"] = float(np.nanmean(util))
    shown = info.drop_columns(["file"]).append_column(
        "gpu_busy_pct",
        array_of([None if not np.isfinite(u) else 100 * u for u in util], pa.float64()),
    )
    return info, shown, headline


def summary(ctx: Context, load_seconds: float) -> tuple[Section, dict[str, Any]]:
    """The summary section and the headline numbers shown above it."""
    info, shown, headline = rank_overview(ctx, load_seconds)
    files = pa.table({"rank": info.column("rank"), "file": info.column("file")})
    tables = [html_table("ranks", shown, limit=None), html_table("files", files, limit=None)]
    skipped = loader_counts(ctx.traces)
    if skipped.num_rows:
        tables.append(html_table("what the loader counted and skipped", skipped, limit=None))
    return Section(tables=tables), headline


def loader_counts(traces: TraceSet) -> pa.Table:
    """Per rank, the loader statistics with a non-zero count (Trace.counted)."""
    if not traces:
        return pa.table({})
    rows = [(rank, *row) for rank, trace in traces.items() for row in trace.counted()]
    return pa.table(
        {
            "rank": array_of([r[0] for r in rows], pa.int64()),
            "name": array_of([r[1] for r in rows], pa.string()),
            "severity": array_of([r[2] for r in rows], pa.string()),
            "count": array_of([r[4] for r in rows], pa.int64()),
            "description": array_of([r[3] for r in rows], pa.string()),
        }
    )
