"""Report sections for many ranks whose per-rank tables become distributions (min, p10,
median, p90, max, the ranks at the extremes) and whose per-rank bars become a few bars or a
histogram, so that the report's size stays the same whatever the number of ranks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_numpy
from ...frame.result import fold_rank_notes
from ..page.context import Context, Section, section
from ..page.figures import bar, figure
from ..page.rank_stats import distribution, rank_labels
from ..page.tables import html_table
from . import memory as memory_section
from . import timeline
from .gpu import (
    EFFICIENCY,
    EFFICIENCY_ABOUT,
    STEP_CATEGORIES,
    efficiency_table,
    operators_section,
)
from .ranks import drawn_ranks, drawn_selection
from .summary import loader_counts, rank_overview

MS = 1e6
KEYS = ("rank", "stream", "name", "idle_category", "kernel_type")


def rows_distribution(caption: str, table: pa.Table) -> dict[str, Any]:
    """Every numeric column's distribution over the rows; the rows named by their keys."""
    keys = [k for k in KEYS if k in table.column_names]
    values = [
        f.name
        for f in table.schema
        if f.name not in keys and (pa.types.is_integer(f.type) or pa.types.is_floating(f.type))
    ]
    return distribution(caption, table, values, rank_labels(table, *keys))


def _pivot(t: pa.Table, key: str, value: str) -> tuple[pa.Table, list[str]]:
    """One row per rank, one column per distinct key (0 where a rank has none), in ns."""
    ranks, ri = np.unique(as_numpy(t.column("rank")), return_inverse=True)
    names = list(dict.fromkeys(t.column(key).to_pylist()))
    ki = np.array([names.index(k) for k in t.column(key).to_pylist()], np.int64)
    z = np.zeros((len(ranks), len(names)))
    np.add.at(z, (ri.reshape(-1), ki), as_numpy(t.column(value)).astype(float))
    ns = {"unit": "ns"}
    schema = pa.schema([pa.field(str(n), pa.float64(), metadata=ns) for n in names])
    return pa.table([z[:, i] for i in range(len(names))], schema=schema), [
        f"rank {r}" for r in ranks
    ]


def _median_bars(table: pa.Table, title: str) -> dict[str, Any]:
    """Horizontal bars: each column's median over ranks, whiskers to the min and max."""
    names = table.column_names
    v = np.stack([as_numpy(table.column(n)) for n in names], axis=1) / MS
    med, lo, hi = np.median(v, 0), v.min(0), v.max(0)
    trace = bar(
        names[::-1],
        med[::-1],
        "median over ranks",
        0,
        horizontal=True,
        error_x={
            "type": "data",
            "symmetric": False,
            "array": (hi - med)[::-1].tolist(),
            "arrayminus": (med - lo)[::-1].tolist(),
        },
    )
    return figure([trace], title, "ms per rank", "", height=max(300, 30 * len(names) + 120))


def summary(ctx: Context, load_seconds: float) -> tuple[Section, dict[str, Any]]:
    info, shown, headline = rank_overview(ctx, load_seconds)
    labels = rank_labels(shown, "rank")
    cols = [c for c in shown.column_names if c not in ("rank", "devices")]
    files = pa.table({"rank": info.column("rank"), "file": info.column("file")})
    tables = [distribution("ranks", shown, cols, labels), html_table("files", files, limit=10)]
    skipped = loader_counts(ctx.traces)
    if skipped.num_rows:
        by_stat = (
            skipped.group_by(["name", "severity", "description"])
            .aggregate([("rank", "count"), ("count", "sum"), ("count", "max")])
            .rename_columns(["name", "severity", "description", "ranks", "count", "max_per_rank"])
        )
        tables.append(html_table("what the loader counted and skipped", by_stat, limit=None))
    return Section(tables=tables), headline


@section("kernel-types", "kernel_breakdown")
def kernel_types(ctx: Context) -> Section:
    t = ctx.result("kernel_breakdown").table
    table, labels = _pivot(t, "kernel_type", "time")
    return Section(
        "GPU busy time split by the exact set of kernel types running at once, per rank: the "
        "median over ranks, whiskers to the smallest and the largest rank.",
        figures=[_median_bars(table, "busy time by kernel type")] if table.num_columns else [],
        tables=[distribution("kernel types, time per rank", table, table.column_names, labels)],
        notes=ctx.notes("kernel_breakdown"),
    )


def _rank_histogram(values: np.ndarray, label: str, i: int) -> dict[str, Any]:
    """Ranks per 5 % bin of a percentage."""
    edges = np.linspace(0, 100, 21)
    counts, _ = np.histogram(values[np.isfinite(values)], edges)
    return bar(edges[:-1] + 2.5, counts, label, i, width=4.5)


@section("gpu-efficiency", "gpu_utilization", "sm_efficiency", "achieved_occupancy")
def gpu_efficiency(ctx: Context) -> Section:
    table, read = efficiency_table(ctx)
    data = [
        _rank_histogram(
            np.asarray(as_numpy(pc.cast(table[col], pa.float64()).fill_null(np.nan)), float),
            label,
            i,
        )
        for i, (_, col, label) in enumerate(EFFICIENCY)
    ]
    return Section(
        EFFICIENCY_ABOUT + " Ranks per 5 % bin of each.",
        figures=[figure(data, "ranks by GPU efficiency", "%", "ranks", barmode="group")],
        tables=[rows_distribution("GPU efficiency per rank", table)],
        notes=ctx.notes(*read),
    )


@section("step-breakdown", "step_breakdown")
def step_breakdown(ctx: Context) -> Section:
    r = ctx.result("step_breakdown")
    means = r["ranks"]
    split = means.select(list(STEP_CATEGORIES)).rename_columns(list(STEP_CATEGORIES.values()))
    return Section(
        "Each rank's mean step (the step extended to the end of its GPU work) split as the "
        "TensorBoard profiler plugin's overview splits it: the median over ranks, whiskers "
        "to the smallest and the largest rank.",
        figures=[_median_bars(split, "mean step time by category")] if means.num_rows else [],
        tables=[rows_distribution("mean step per rank", means)],
        notes=ctx.notes("step_breakdown"),
    )


@section("operators", "steps", "temporal")
def operators(ctx: Context) -> Section:
    """The operators section from the cost models of the drawn ranks: a rank's cost models
    cost about as much as its load, and data-parallel ranks run the same operators."""
    sel, note = drawn_selection(ctx, "costed")
    res = ctx.result_on("roofline", sel)
    return operators_section(res, [note, *fold_rank_notes(res.notes)])


@section("memory", "operator_memory")
def memory(ctx: Context) -> Section:
    return memory_section.memory.build(ctx, drawn_ranks(ctx), rows_distribution)


@section("overlap", "overlap")
def overlap(ctx: Context) -> Section:
    t = ctx.result("overlap").table
    pct = np.asarray(
        as_numpy(pc.cast(t["comp_comm_overlap_pctg"], pa.float64()).fill_null(np.nan)), float
    )
    edges = np.linspace(0, 100, 21)
    counts, _ = np.histogram(pct[np.isfinite(pct)], edges)
    data = [bar((edges[:-1] + 2.5), counts, "ranks", 2, width=4.5)]
    return Section(
        "The share of each rank's communication time during which computation also runs "
        "(higher is better): how many ranks hide how much.",
        figures=[figure(data, "ranks by overlap", "% of communication overlapped", "ranks")],
        tables=[rows_distribution("overlap", t)],
        notes=ctx.notes("overlap"),
    )


@section("idle", "idle_time")
def idle(ctx: Context) -> Section:
    t = ctx.result("idle_time").table
    table, labels = _pivot(t, "idle_category", "idle_time")
    return Section(
        "Why streams sit idle between their kernels, summed over each rank's streams: "
        "host_wait (the CPU had not launched the next kernel yet), kernel_wait (short gaps "
        "between queued kernels), other.",
        figures=[_median_bars(table, "idle time per rank")] if table.num_columns else [],
        tables=[distribution("idle time per rank", table, table.column_names, labels)],
        notes=ctx.notes("idle_time"),
    )


@section("queue", "queue_length")
def queue(ctx: Context) -> Section:
    return timeline.queue.build(ctx, drawn_ranks(ctx), rows_distribution)


@section("bandwidth", "memory_bw")
def bandwidth(ctx: Context) -> Section:
    return timeline.bandwidth.build(ctx, drawn_ranks(ctx), rows_distribution)


@section("launch-delay", "launch_stats")
def launch_delay(ctx: Context) -> Section:
    return timeline.launch_delay.build(ctx, rows_distribution)
