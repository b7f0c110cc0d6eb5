"""Report sections for many ranks that show ranks side by side: the outlier ranks (with the
command that opens each one's own report), and rank x step, rank x time and rank x
collective heatmaps, binned to at most heatmap.MAX_ROWS rows whatever the number of ranks."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...analysis.stragglers import MAD_TO_SIGMA, OUTLIER_MIN_MARGIN, OUTLIER_SIGMAS
from ...analysis.temporal import busy_bins
from ...frame.select import Selection
from ..page.context import Context, Section, SectionFailed, section
from ..page.figures import heatmap
from ..page.heatmap import bin_axis, grid, rank_rows
from ..page.rank_stats import (
    Outlier,
    distribution,
    per_rank_median,
    rank_labels,
    slow_outliers,
)
from ..page.tables import html_table

MS = 1e6
US = 1e3
TIME_BINS = 120
MAX_COLS = 150  # steps or collectives per heatmap row


def step_outliers(ctx: Context) -> tuple[list[Outlier], float, np.ndarray, np.ndarray]:
    """(outliers by median step time, the median over ranks, ranks, their median step)."""

    def compute() -> tuple[list[Outlier], float, np.ndarray, np.ndarray]:
        t = ctx.result("steps").table
        ranks, med = per_rank_median(
            as_numpy(t.column("rank")), as_numpy(t.column("span")).astype(float)
        )
        found, overall = slow_outliers(ranks, med)
        return found, overall, ranks, med

    return ctx.derived("step_outliers", compute)


def work_outliers(ctx: Context) -> tuple[list[Outlier], float]:
    """(outliers by GPU compute time per step, its median over ranks). Ranks that wait for
    each other in collectives share one step time: a straggler shows in its own work, as in
    the doctor's rank_imbalance."""

    def compute() -> tuple[list[Outlier], float]:
        t = ctx.result("temporal").table
        s = ctx.result("steps").table
        if t.num_rows == 0:
            return [], float("nan")
        ranks = as_numpy(t.column("rank")).astype(np.int64)
        work = as_numpy(t.column("compute_time")).astype(float)
        counted = s.group_by("rank").aggregate([("step", "count")])
        steps = dict(
            zip(counted.column("rank").to_pylist(), counted.column("step_count").to_pylist())
        )
        per_step = work / np.array([max(steps.get(int(r), 1), 1) for r in ranks], float)
        return slow_outliers(ranks, per_step)

    return ctx.derived("work_outliers", compute)


def drawn_ranks(ctx: Context, most: int = 4) -> list[int]:
    """The few ranks whose time series are drawn: the slowest outliers (by step time, then
    by GPU compute per step: ranks that wait for a straggler in collectives share its step
    time) and the rank with the median step time (the first rank when there are no steps)."""
    try:
        found, overall, ranks, med = step_outliers(ctx)
    except SectionFailed:
        found, ranks = [], np.zeros(0, np.int64)
    try:
        by_work = work_outliers(ctx)[0]
    except SectionFailed:
        by_work = []
    picked = list(dict.fromkeys(o.rank for o in found + by_work))[: most - 1]
    if len(ranks):
        typical = int(ranks[np.nanargmin(np.abs(med - overall))]) if np.isfinite(overall) else None
        if typical is not None and typical not in picked:
            picked.append(typical)
    return picked or [int(ctx.traces.ranks[0])]


def drawn_selection(ctx: Context, what: str) -> tuple[Selection, str]:
    """The report's selection on the drawn ranks only, and the note that says so: what
    costs a model per rank (a replay, the cost models) is computed on these on many ranks."""
    ranks = drawn_ranks(ctx)
    shown = ", ".join(map(str, ranks))
    note = f"{what} on ranks {shown} of {len(ctx.traces):,} (the outliers and the median rank)"
    return dataclasses.replace(ctx.selection, ranks=ranks), note


@section("ranks", "steps", "temporal")
def outliers(ctx: Context) -> Section:
    by_step, step_median, ranks, _ = step_outliers(ctx)
    by_work, work_median = work_outliers(ctx)
    rule = (
        f"a rank is an outlier when its GPU compute time per step, or its median step time, "
        f"is above the other ranks' median by more than {OUTLIER_SIGMAS:g} x {MAD_TO_SIGMA} x "
        f"MAD (the median absolute deviation) and by more than {100 * OUTLIER_MIN_MARGIN:g} %"
    )
    intro = (
        f"The ranks that stand out among {len(ctx.traces):,}, slowest first ({rule}), the "
        "doctor's rule. Each command writes the report of that rank alone."
    )
    if not len(ranks):
        return Section(intro, notes=["no profiler steps: no step time"])
    rows = [(o, "GPU compute per step") for o in by_work]
    rows += [(o, "step time") for o in by_step if o.rank not in {w.rank for w in by_work}]
    ns, pct = {"unit": "ns"}, {"unit": "%"}
    table = pa.table(
        {
            "rank": array_of([o.rank for o, _ in rows], pa.int64()),
            "stands_out_by": array_of([by for _, by in rows], pa.string()),
            "value": array_of([o.value for o, _ in rows], pa.float64()),
            "above_median_pct": array_of([o.above_median_pct for o, _ in rows], pa.float64()),
            "command": array_of(
                [f"hta-fast report {ctx.source} --ranks {o.rank}" for o, _ in rows], pa.string()
            ),
        },
        schema=pa.schema(
            [
                pa.field("rank", pa.int64()),
                pa.field("stands_out_by", pa.string()),
                pa.field("value", pa.float64(), metadata=ns),
                pa.field("above_median_pct", pa.float64(), metadata=pct),
                pa.field("command", pa.string()),
            ]
        ),
    )
    shown = html_table("outlier ranks", table, limit=50)
    shown["code"] = [4]  # the command column: shown whole, as code
    notes = [
        f"median over ranks: step time {step_median / US:,.1f} µs, GPU compute per step "
        f"{work_median / US:,.1f} µs"
    ]
    if not rows:
        notes.insert(
            0, "no outlier: every rank's GPU compute and step time are close to the median"
        )
    return Section(intro, tables=[shown] if rows else [], notes=notes)


@section("steps", "steps")
def steps(ctx: Context) -> Section:
    t = ctx.result("steps").table
    if t.num_rows == 0:
        return Section(notes=ctx.notes("steps"))
    ranks, cols, z = grid(
        as_numpy(t.column("rank")), as_numpy(t.column("step")), as_numpy(t.column("span")) / MS
    )
    cb = bin_axis(z, 1, MAX_COLS, "max")
    zr, labels = rank_rows(cb.z, ranks, "max")
    x = [
        f"step {cols[a]}" if a == e else f"steps {cols[a]}–{cols[e]}"
        for a, e in zip(cb.first, cb.last)
    ]
    binned = len(labels) < len(ranks) or len(x) < len(cols)
    fig = heatmap(
        zr,
        x,
        labels,
        "step time per rank" + (" (max of each bin)" if binned else ""),
        "",
        "ms",
    )
    _, _, r, med = step_outliers(ctx)
    agg = (
        t.group_by("rank")
        .aggregate([("span", "mean"), ("span", "max"), ("span", "count")])
        .sort_by("rank")
    )
    ns = {"unit": "ns"}
    per_rank = pa.table(
        [med, agg["span_mean"], agg["span_max"], agg["span_count"]],
        schema=pa.schema(
            [
                pa.field("median_step", pa.float64(), metadata=ns),
                pa.field("mean_step", pa.float64(), metadata=ns),
                pa.field("max_step", pa.int64(), metadata=ns),
                pa.field("steps", pa.int64()),
            ]
        ),
    )
    slowest = t.sort_by([("span", "descending"), ("rank", "ascending")])
    return Section(
        "Device-aware duration of every profiler step on every rank (to the end of the GPU "
        "work it launched, as the TensorBoard profiler times steps): a row darker than "
        "the others is a rank slower on every step (a straggler); one dark cell is a hiccup.",
        figures=[fig],
        tables=[
            distribution(
                "step time per rank", per_rank, per_rank.column_names, [f"rank {x}" for x in r]
            ),
            html_table("slowest steps", slowest, limit=20),
        ],
        notes=ctx.notes("steps"),
    )


@section("temporal", "temporal")
def temporal(ctx: Context) -> Section:
    t = ctx.result("temporal").table
    b = busy_bins(ctx.traces, ctx.selection, TIME_BINS)
    figures = []
    if b.busy.shape[1]:
        z, labels = rank_rows(100 * b.busy, b.ranks, "min")
        centers = (b.edges[:-1] + b.edges[1:]) / 2
        binned = len(labels) < len(b.ranks)
        figures.append(
            heatmap(
                z,
                centers / MS,
                labels,
                "GPU busy per rank over time" + (" (min of each rank bin)" if binned else ""),
                f"ms since the first GPU work ({TIME_BINS} bins of "
                f"{(b.edges[1] - b.edges[0]) / MS:,.2f} ms)",
                "% busy",
                reverse=True,
            )
        )
    cols = [c for c in t.column_names if c != "rank"]
    return Section(
        "Each rank's GPU span (first to last GPU event) split into computation, other GPU "
        "work (communication, memory copies) and idle time; the heatmap shows the share of "
        "each time bin with GPU work running (ranks' clocks as recorded).",
        figures=figures,
        tables=[distribution("temporal breakdown", t, cols, rank_labels(t, "rank"))],
        notes=ctx.notes("temporal"),
    )


def _comm_per_rank(ctx: Context) -> tuple[pa.Table, list[str]]:
    kernels = ctx.result("kernel_breakdown")["kernels"]
    comm = kernels.filter(pc.equal(kernels["kernel_type"], "COMMUNICATION"))
    agg = comm.group_by("rank").aggregate([("sum", "sum"), ("count", "sum")]).sort_by("rank")
    table = pa.table(
        [agg["sum_sum"], agg["count_sum"]],
        schema=pa.schema(
            [
                pa.field("comm_time", pa.int64(), metadata={"unit": "ns"}),
                pa.field("comm_kernels", pa.int64()),
            ]
        ),
    )
    return table, rank_labels(agg, "rank")


def _arrival_heatmap(per_rank: pa.Table) -> dict:
    first = as_numpy(per_rank["ts"]) - as_numpy(per_rank["arrival_delay"])
    # A matched collective's column, in time order: its first arrival, then its index.
    _, code = np.unique(
        np.stack([first, as_numpy(per_rank["index"])], axis=1), axis=0, return_inverse=True
    )
    ranks, cols, z = grid(
        as_numpy(per_rank["rank"]), code.reshape(-1), as_numpy(per_rank["arrival_delay"]) / US
    )
    cb = bin_axis(z, 1, MAX_COLS, "max")
    zr, labels = rank_rows(cb.z, ranks, "max")
    binned = len(labels) < len(ranks) or len(cb.first) < len(cols)
    return heatmap(
        zr,
        cb.first,
        labels,
        "arrival at each collective after the first rank"
        + (" (max of each bin)" if binned else ""),
        f"collectives in time order ({len(cols):,})",
        "µs late",
    )


@section("collectives", "collectives", "kernel_breakdown", "late_arrivals")
def collectives(ctx: Context) -> Section:
    comm, labels = _comm_per_rank(ctx)
    figures, tables, notes = [], [], []
    if comm.num_rows:
        tables.append(
            distribution("communication kernels per rank", comm, comm.column_names, labels)
        )
    else:
        notes.append("no communication kernels in these traces")
    try:
        coll = ctx.result("collectives")
        if coll["per_rank"].num_rows:
            figures.append(_arrival_heatmap(coll["per_rank"]))
            late = ctx.result("late_arrivals").table
            tables.append(html_table("ranks most often last to a collective", late, limit=10))
        notes += coll.notes
    except SectionFailed as e:
        notes.append(f"collectives not available ({e})")
    return Section(
        "How late each rank starts each collective after the first rank to start it (the "
        "others wait for the last one), and the time in communication kernels per rank.",
        figures=figures,
        tables=tables,
        notes=notes,
    )
