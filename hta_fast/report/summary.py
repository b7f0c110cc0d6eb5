"""What a set of traces holds (the report's summary and `hta-fast info`)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..costs.devices import trace_device
from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace
from ..traceset import TraceSet
from .context import Context, Section
from .tables import html_table


def rank_info(trace: Trace) -> dict[str, Any]:
    """One rank: file, sizes, devices, events, kernels, streams, steps, span."""
    kind = trace.column("events", "kind")
    ts = trace.column("events", "ts")
    dur = np.maximum(trace.column("events", "dur"), 0)
    gpu = np.isin(kind, GPU_WORK_KINDS)
    steps = trace.column("steps", "step")
    devices = sorted(
        {str(d.get("name")) for d in trace.meta.devices if isinstance(d, dict) and d.get("name")}
    )
    if not devices:  # unnamed (ROCm builds of vLLM): the device table's entry, if it knows it
        known = trace_device(trace)
        devices = [f"{known.key} (identified)"] if known is not None else []
    path = trace.meta.path
    return {
        "rank": trace.rank,
        "file": path,
        "file_bytes": os.path.getsize(path) if path and os.path.isfile(path) else None,
        "json_bytes": trace.meta.json_bytes,
        "world_size": trace.meta.world_size,
        "devices": ", ".join(devices),
        "events": int(len(kind)),
        "kernels": int(np.count_nonzero(kind == EventKind.kernel)),
        "gpu_events": int(np.count_nonzero(gpu)),
        "streams": pc.count_distinct(pa.array(trace.column("events", "stream")[gpu])).as_py(),
        "steps": int(len(steps)),
        "first_step": int(steps.min()) if len(steps) else None,
        "last_step": int(steps.max()) if len(steps) else None,
        "span_ms": float((ts + dur).max() - ts.min()) / 1e6 if len(ts) else 0.0,
    }


def ranks_table(traces: TraceSet) -> pa.Table:
    return pa.Table.from_pylist([rank_info(t) for t in traces.values()])


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
        pa.array([None if not np.isfinite(u) else 100 * u for u in util], pa.float64()),
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
    """Per rank, the loader statistics with a non-zero count (Trace.stats)."""
    parts = []
    for rank, trace in traces.items():
        st = trace.stats.select(["name", "severity", "count", "description"])
        st = st.filter(pc.greater(st["count"], 0))
        parts.append(st.add_column(0, "rank", pa.array([rank] * st.num_rows, pa.int64())))
    return pa.concat_tables(parts) if parts else pa.table({})
