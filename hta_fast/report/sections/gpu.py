"""Report sections on where GPU time goes: temporal breakdown, GPU utilization with SM
efficiency and occupancy, the step-time breakdown, kernel types with their overlaps, top
kernels, communication/computation overlap, idle time per stream."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...analysis.tensorboard.step_breakdown import CATEGORIES
from ...frame.result import Result
from ..page.context import Context, Section, section
from ..page.figures import IDLE, bar, figure
from ..page.tables import html_table

MS = 1e6


@section("temporal", "temporal")
def temporal(ctx: Context) -> Section:
    t = ctx.result("temporal").table
    ranks = [f"rank {r}" for r in t.column("rank").to_pylist()]
    parts = (
        ("compute_time", "computation"),
        ("non_compute_time", "communication / memory"),
        ("idle_time", "idle"),
    )
    data = [
        bar(
            ranks,
            np.asarray(as_numpy(t.column(c))) / MS,
            label,
            i,
            color=IDLE if c == "idle_time" else None,
        )
        for i, (c, label) in enumerate(parts)
    ]
    return Section(
        "Each rank's GPU span (first to last GPU event) split into computation, other GPU "
        "work (communication, memory copies) and idle time.",
        figures=[figure(data, "GPU time per rank", "", "ms", barmode="stack")],
        tables=[html_table("temporal breakdown", t)],
        notes=ctx.notes("temporal"),
    )


# The plugin's names of the step-time categories, in its order.
STEP_CATEGORIES = dict(
    zip(
        CATEGORIES,
        (
            "Kernel",
            "Memcpy",
            "Memset",
            "Communication",
            "Runtime",
            "DataLoader",
            "CPU Exec",
            "Other",
        ),
    )
)
# (analysis, column, label) of the per-rank GPU efficiency numbers, all in %.
EFFICIENCY = (
    ("gpu_utilization", "kernel_busy_of_steps_pct", "GPU utilization (kernels / steps' time)"),
    ("gpu_utilization", "gpu_work_busy_of_span_pct", "GPU busy (GPU work / its span)"),
    ("sm_efficiency", "sm_efficiency_pct", "Est. SM efficiency"),
    ("achieved_occupancy", "achieved_occupancy_pct", "Est. achieved occupancy"),
)


def efficiency_table(ctx: Context) -> tuple[pa.Table, list[str]]:
    """One row per rank: the EFFICIENCY columns and the SM count; and the analyses read."""
    tables = {name: ctx.result(name).table for name in dict.fromkeys(e[0] for e in EFFICIENCY)}
    ranks = tables["gpu_utilization"].column("rank").to_pylist()
    columns = [(n, c) for n, c, _ in EFFICIENCY] + [("sm_efficiency", "sm_count")]
    fields, arrays = [tables["gpu_utilization"].schema.field("rank")], [array_of(ranks)]
    for name, col in columns:
        t = tables[name]
        by_rank = dict(zip(t.column("rank").to_pylist(), t.column(col).to_pylist()))
        fields.append(t.schema.field(col))
        arrays.append(array_of([by_rank.get(r) for r in ranks], t.schema.field(col).type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields)), list(tables)


EFFICIENCY_ABOUT = (
    "As the TensorBoard profiler plugin defines them, over the steps each extended to "
    "the end of its GPU work: GPU utilization is the time a kernel runs over the "
    "steps' time; Est. SM efficiency counts the running kernels' thread blocks as a "
    "share of the SMs (at most all of them); Est. achieved occupancy is the kernels' "
    "recorded occupancy weighted by their time. GPU busy is the temporal breakdown's "
    "(kernels, copies and fills over the GPU work's span). The first card's GPU "
    "utilization is the doctor's: kernels, copies and fills over the analysed steps' "
    "device-aware windows, the figure the CI gate reads."
)


@section("gpu-efficiency", "gpu_utilization", "sm_efficiency", "achieved_occupancy")
def gpu_efficiency(ctx: Context) -> Section:
    table, read = efficiency_table(ctx)
    ranks = table.column("rank").to_pylist()
    data = [
        bar(
            [f"rank {r}" for r in ranks],
            np.array([np.nan if v is None else v for v in table.column(col).to_pylist()]),
            label,
            i,
        )
        for i, (_, col, label) in enumerate(EFFICIENCY)
    ]
    return Section(
        EFFICIENCY_ABOUT,
        figures=[figure(data, "GPU efficiency per rank", "", "%", barmode="group")],
        tables=[html_table("GPU efficiency per rank", table)],
        notes=ctx.notes(*read),
    )


@section("step-breakdown", "step_breakdown")
def step_breakdown(ctx: Context) -> Section:
    r = ctx.result("step_breakdown")
    t = r.table
    x = [
        f"rank {a} / step {b}"
        for a, b in zip(t.column("rank").to_pylist(), t.column("step").to_pylist())
    ]
    data = [
        bar(
            x,
            np.asarray(as_numpy(t.column(c))) / MS,
            label,
            i,
            color=IDLE if c == "other" else None,
        )
        for i, (c, label) in enumerate(STEP_CATEGORIES.items())
    ]
    shares = [f"{c}_pct" for c in CATEGORIES]
    return Section(
        "Each step's time (the step extended to the end of its GPU work) split as the "
        "TensorBoard profiler plugin's overview splits it: where several things run at "
        "once, the time goes to the first of Kernel, Memcpy, Memset, Communication, "
        "Runtime, DataLoader, CPU Exec; Other is the rest.",
        figures=[
            figure(data, "step time by category", "", "ms", barmode="stack", xtype="category")
        ],
        tables=[
            html_table(
                "mean step per rank (% of the mean step)",
                r["ranks"],
                ["rank", "steps", "dur", *shares],
            ),
            html_table("per step (% of the step)", t, ["rank", "step", "dur", *shares], limit=60),
        ],
        notes=ctx.notes("step_breakdown"),
    )


@section("kernel-types", "kernel_breakdown")
def kernel_types(ctx: Context) -> Section:
    t = ctx.result("kernel_breakdown").table
    ranks = sorted(set(t.column("rank").to_pylist()))
    labels = list(dict.fromkeys(t.column("kernel_type").to_pylist()))
    data = []
    for i, label in enumerate(labels):
        sub = t.filter(pc.equal(t["kernel_type"], label))
        by_rank = dict(zip(sub.column("rank").to_pylist(), sub.column("time").to_pylist()))
        data.append(
            bar(
                [f"rank {r}" for r in ranks],
                np.array([by_rank.get(r, 0) for r in ranks], float) / MS,
                label,
                i,
            )
        )
    return Section(
        "GPU busy time split by the exact set of kernel types running at once, so "
        "'COMPUTATION overlapping COMMUNICATION' is time both run; a rank's rows add up to "
        "its busy time.",
        figures=[figure(data, "busy time by kernel type", "", "ms", barmode="stack")],
        tables=[html_table("kernel types", t)],
        notes=ctx.notes("kernel_breakdown"),
    )


@section("top-kernels", "kernel_breakdown")
def top_kernels(ctx: Context, n: int = 20) -> Section:
    dist = ctx.result("kernel_breakdown")["distribution"]
    top = dist.sort_by([("mean", "descending")]).slice(0, n)
    names = top.column("name").to_pylist()
    short = [s if len(s) <= 60 else s[:57] + "..." for s in names]
    mean = as_numpy(top.column("mean")) / MS
    lo = mean - as_numpy(top.column("min")) / MS
    hi = as_numpy(top.column("max")) / MS - mean
    data = [
        bar(
            short[::-1],
            mean[::-1],
            "mean over ranks",
            0,
            horizontal=True,
            text=names[::-1],
            error_x={
                "type": "data",
                "symmetric": False,
                "array": hi[::-1].tolist(),
                "arrayminus": lo[::-1].tolist(),
            },
        )
    ]
    kernels = ctx.result("kernel_breakdown")["kernels"].sort_by([("sum", "descending")])
    return Section(
        f"The {len(names)} kernels with the most time per rank (bars: mean of the per-rank "
        "totals; whiskers: the smallest and the largest rank).",
        figures=[
            figure(data, "top kernels", "ms per rank", "", height=max(320, 26 * len(names) + 120))
        ],
        tables=[html_table("kernels per rank (largest total first)", kernels, limit=40)],
    )


@section("overlap", "overlap")
def overlap(ctx: Context) -> Section:
    t = ctx.result("overlap").table
    ranks = [f"rank {r}" for r in t.column("rank").to_pylist()]
    pct = np.array(
        [np.nan if v is None else v for v in t.column("comp_comm_overlap_pctg").to_pylist()]
    )
    data = [bar(ranks, pct, "communication hidden behind computation", 2)]
    return Section(
        "The share of each rank's communication time during which computation also runs "
        "(higher is better: exposed communication stalls the step).",
        figures=[figure(data, "overlap per rank", "", "%")],
        tables=[
            html_table("overlap", t),
            html_table(
                "per step: computation only, overlap, communication only, other",
                ctx.result("overlap")["steps"],
                limit=40,
            ),
        ],
        notes=ctx.notes("overlap"),
    )


@section("idle", "idle_time")
def idle(ctx: Context) -> Section:
    t = ctx.result("idle_time").table
    keys = list(dict.fromkeys(zip(t.column("rank").to_pylist(), t.column("stream").to_pylist())))
    cats = ("host_wait", "kernel_wait", "other")
    x = [f"rank {r} / stream {s}" for r, s in keys]
    rank, stream = as_numpy(t.column("rank")), as_numpy(t.column("stream"))
    cat, time = (
        np.array(t.column("idle_category").to_pylist(), object),
        as_numpy(t.column("idle_time")),
    )
    data = []
    for i, c in enumerate(cats):
        y = [time[(rank == r) & (stream == s) & (cat == c)].sum() / MS for r, s in keys]
        data.append(bar(x, y, c, i + 3))
    return Section(
        "Why each stream sits idle between its kernels: host_wait (the CPU had not launched "
        "the next kernel yet), kernel_wait (short gaps between queued kernels), other.",
        figures=[
            figure(
                data,
                "idle time per stream",
                "",
                "ms",
                barmode="stack",
                height=420,
                xtype="category",
            )
        ],
        tables=[html_table("idle time", t, limit=60)],
        notes=ctx.notes("idle_time"),
    )


OPERATOR_COLUMNS = (
    "rank",
    "name",
    "input_dims",
    "family",
    "precision",
    "calls",
    "gpu_time",
    "achieved_flops",
    "achieved_bandwidth",
    "pct_of_roofline",
    "bound",
    "time_left",
    "uncertain",
    "uncertain_why",
)


@section("operators", "roofline")
def operators(ctx: Context) -> Section:
    """Operators by the GPU time their roofline leaves: FLOPs and bytes from the cost
    models, achieved against the device's peaks; rows the roofline cannot vouch for marked
    uncertain with the reason (analysis.ops.roofline, hta_fast.costs.above_peak)."""
    return operators_section(ctx.result("roofline"), ctx.notes("roofline"))


def operators_section(res: Result, notes: list[str]) -> Section:
    """The operators section of a roofline result (operators; on many ranks, sections.dist's
    of the drawn ranks)."""
    t = res.table
    if t.num_rows == 0:
        return Section(
            "No operator with recorded shapes and a cost model launched GPU work "
            "(profile with record_shapes=True).",
            notes=notes,
        )
    flagged = int(pc.sum(t["uncertain"]).as_py() or 0)
    return Section(
        "Each operator group (name and shapes) with its FLOPs and bytes from the cost models, "
        "what it achieved against the device's peak FLOP/s and bandwidth (pct_of_roofline: "
        "the roofline's time over the measured one) and the time left above the roofline, "
        "most first. uncertain rows rest on an assumption the trace cannot check, or run above "
        f"their roofline (uncertain_why says which): {flagged:,} of {t.num_rows:,} here. "
        "hta-fast ops prints every row.",
        tables=[
            html_table("operators by time left above the roofline", t, OPERATOR_COLUMNS, limit=40)
        ],
        notes=notes,
    )
