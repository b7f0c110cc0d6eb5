"""Report sections over time and across steps and ranks: queue length and memory bandwidth
over time, the launch-delay distribution, per-step and per-rank timings, collectives."""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ..page.context import Context, Section, SectionFailed, section
from ..page.downsample import min_max, per_series_budget
from ..page.figures import bar, figure, step_line
from ..page.tables import html_table

MS = 1e6

# Turns a table of one row per rank (or rank and stream) into the template's table: every
# row (html_table), or their distribution when there are many ranks (sections.dist).
Tabler = Callable[[str, pa.Table], dict[str, Any]]


def only_ranks(table: pa.Table, ranks: Optional[Sequence[int]]) -> pa.Table:
    if ranks is None:
        return table
    return table.filter(pc.is_in(table["rank"], array_of(list(ranks), pa.int64())))


def drawn_note(ranks: Optional[Sequence[int]]) -> list[str]:
    if ranks is None:
        return []
    return ["the figure draws ranks " + ", ".join(map(str, ranks)) + " (see Outlier ranks)"]


def series(
    table: pa.Table, key: str, value: str, ctx: Context, label: str
) -> tuple[list[dict[str, Any]], int]:
    """One downsampled step line per (rank, key); x in ms from the first change point."""
    if table.num_rows == 0:
        return [], 0
    rank = as_numpy(table.column("rank"))
    keys = table.column(key)
    if pa.types.is_string(keys.type):
        keys = pc.dictionary_encode(keys.combine_chunks())
        names, codes = keys.dictionary.to_pylist(), as_numpy(keys.indices)
    else:
        codes = as_numpy(keys)
        names = None
    group = (rank.astype(np.int64) << 32) + codes.astype(np.int64)
    ts = as_numpy(table.column("ts"))
    y = as_numpy(table.column(value))
    # The analyses give each series as one run of rows in time order; sort only if not.
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    if len(starts) != len(np.unique(group[starts])):
        order = np.lexsort((ts, group))
        group, ts, y, rank, codes = group[order], ts[order], y[order], rank[order], codes[order]
        starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    bounds = np.r_[starts, len(group)]
    t0 = ts.min()
    budget = per_series_budget(ctx.max_points, len(starts))
    lines, shown = [], 0
    for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:])):
        x, v = min_max((ts[a:b] - t0) / MS, y[a:b], budget)
        shown += len(x)
        name = names[codes[a]] if names is not None else codes[a]
        lines.append(step_line(x, v, f"rank {rank[a]} {label} {name}".replace("  ", " "), i))
    return lines, shown


@section("queue", "queue_length")
def queue(
    ctx: Context, drawn: Optional[Sequence[int]] = None, tabler: Tabler = html_table
) -> Section:
    """drawn: the ranks whose series the figure draws (None: all)."""
    res = ctx.result("queue_length")
    table = only_ranks(res.table, drawn)
    lines, shown = series(table, "stream", "queue_length", ctx, "stream")
    note = drawn_note(drawn) + (
        []
        if shown >= table.num_rows
        else [
            f"the figure shows {shown:,} of {table.num_rows:,} change points (the minimum and "
            "maximum of each stretch); the statistics use all of them"
        ]
    )
    return Section(
        "Launched kernels not yet started, per stream. A queue near 0 means the GPU waits for "
        "the CPU; a full queue (1024) blocks the CPU.",
        figures=[
            figure(lines, "queue length", "ms since the first launch", "kernels queued", height=420)
        ],
        tables=[
            tabler("queue length, time-weighted", res["summary"]),
            tabler("time at a full queue", res["blocked"]),
        ],
        notes=note + ctx.notes("queue_length"),
    )


@section("bandwidth", "memory_bw")
def bandwidth(
    ctx: Context, drawn: Optional[Sequence[int]] = None, tabler: Tabler = html_table
) -> Section:
    res = ctx.result("memory_bw")
    table = only_ranks(res.table, drawn)
    lines, shown = series(table, "name", "memory_bw_gbps", ctx, "")
    note = drawn_note(drawn) + (
        []
        if shown >= table.num_rows
        else [
            f"the figure shows {shown:,} of {table.num_rows:,} change points; the statistics "
            "use all of them"
        ]
    )
    return Section(
        "Bandwidth of memcpy / memset per copy type, summed over concurrent copies.",
        figures=[figure(lines, "memory bandwidth", "ms since the first copy", "GB/s", height=420)],
        tables=[tabler("memory bandwidth while copying, time-weighted", res["summary"])],
        notes=note + ctx.notes("memory_bw"),
    )


@section("launch-delay", "launch_stats")
def launch_delay(ctx: Context, tabler: Tabler = html_table) -> Section:
    t = ctx.result("launch_stats").table
    delay = as_numpy(t.column("launch_delay"))
    rank = as_numpy(t.column("rank"))
    data = []
    positive = delay[delay > 0] / 1e3
    if len(positive):
        lo, hi = np.log10(max(positive.min(), 0.01)), np.log10(positive.max()) + 1e-9
        edges = np.logspace(lo, max(hi, lo + 0.1), 41)
        counts, _ = np.histogram(positive, edges)  # every pair counts: no sampling
        centers = np.sqrt(edges[:-1] * edges[1:])
        data.append(bar(centers, counts, "launches", 0, width=(np.diff(edges) * 0.9).tolist()))
    rows = []
    # each rank's delays as one slice of the rows sorted by rank (one pass, not one per rank)
    order = np.argsort(rank, kind="stable")
    ranks, first, count = np.unique(rank[order], return_index=True, return_counts=True)
    for r, lo, n in zip(ranks.tolist(), first.tolist(), count.tolist()):
        d = delay[order[lo : lo + n]]
        q = np.percentile(d, [50, 90, 99]) if len(d) else [np.nan] * 3
        rows.append(
            {
                "rank": int(r),
                "launches": int(len(d)),
                "zero_delay": int(np.count_nonzero(d == 0)),
                "p50": float(q[0]),
                "p90": float(q[1]),
                "p99": float(q[2]),
                "max": int(d.max()) if len(d) else None,
            }
        )
    ns = {"unit": "ns"}
    schema = pa.schema(
        [
            pa.field("rank", pa.int64()),
            pa.field("launches", pa.int64()),
            pa.field("zero_delay", pa.int64()),
            *[pa.field(n, pa.float64(), metadata=ns) for n in ("p50", "p90", "p99")],
            pa.field("max", pa.int64(), metadata=ns),
        ]
    )
    per_rank = pa.Table.from_pylist(rows, schema=schema)
    zero = int(np.count_nonzero(delay == 0))
    return Section(
        "Time from the end of each launch call to the start of its GPU work, over every "
        f"launch ({len(delay):,}; {zero:,} with no delay are not on the log axis).",
        figures=[figure(data, "launch delay distribution", "µs (log)", "launches", xlog=True)],
        tables=[
            tabler("launch delay per rank", per_rank),
            html_table(
                "longest launch delays",
                t.sort_by([("launch_delay", "descending")]),
                columns=[
                    "rank",
                    "launch_name",
                    "gpu_name",
                    "stream",
                    "cpu_duration",
                    "launch_delay",
                ],
                limit=15,
            ),
        ],
        notes=ctx.notes("launch_stats"),
    )


@section("steps", "steps")
def steps(ctx: Context) -> Section:
    t = ctx.result("steps").table
    ranks = sorted(set(t.column("rank").to_pylist()))
    data = []
    for i, r in enumerate(ranks):
        sub = t.filter(pc.equal(t["rank"], r))
        data.append(
            bar(
                [f"step {s}" for s in sub.column("step").to_pylist()],
                as_numpy(sub.column("span")) / MS,
                f"rank {r}",
                i,
            )
        )
    per_rank = (
        t.group_by("rank")
        .aggregate(
            [("span", "count"), ("span", "mean"), ("span", "min"), ("span", "max"), ("dur", "mean")]
        )
        .sort_by("rank")
    )
    ns = {"unit": "ns"}
    per_rank = per_rank.cast(
        pa.schema(
            [
                pa.field("rank", pa.int64()),
                pa.field("span_count", pa.int64()),
                pa.field("span_mean", pa.float64(), metadata=ns),
                pa.field("span_min", pa.int64(), metadata=ns),
                pa.field("span_max", pa.int64(), metadata=ns),
                pa.field("dur_mean", pa.float64(), metadata=ns),
            ]
        )
    )
    return Section(
        "Duration of every profiler step on every rank, device-aware (span: to the end of "
        "the GPU work the step launched, as the TensorBoard profiler times steps; dur is the "
        "host's ProfilerStep#N): a rank that is slower on every step is a straggler; one "
        "slow step is a hiccup.",
        figures=[figure(data, "step duration", "", "ms", barmode="group", xtype="category")],
        tables=[html_table("steps per rank", per_rank), html_table("every step", t, limit=100)],
        notes=ctx.notes("steps") + slowest_step_note(ctx, t),
    )


def slowest_step_note(ctx: Context, t: pa.Table) -> list[str]:
    """The command that writes the slowest step as a timeline that Perfetto UI opens (a
    multi-GB trace does not open there whole)."""
    if t.num_rows == 0:
        return []
    i = int(pc.index(t["span"], pc.max(t["span"])).as_py())
    rank, step = t["rank"][i].as_py(), t["step"][i].as_py()
    return [
        f"the slowest step, step {step} of rank {rank}, as a timeline for Perfetto UI or "
        f"chrome://tracing: hta-fast slice {ctx.source} --ranks {rank} --steps {step} "
        f"-o step{step}.json.gz"
    ]


@section("collectives", "kernel_breakdown", "stragglers")
def collectives(ctx: Context) -> Section:
    kernels = ctx.result("kernel_breakdown")["kernels"]
    comm = kernels.filter(pc.equal(kernels["kernel_type"], "COMMUNICATION"))
    ranks = sorted(set(comm.column("rank").to_pylist()))
    names = list(dict.fromkeys(comm.sort_by([("sum", "descending")]).column("name").to_pylist()))
    data = []
    for i, name in enumerate(names[:10]):
        sub = comm.filter(pc.equal(comm["name"], name))
        by_rank = dict(zip(sub.column("rank").to_pylist(), sub.column("sum").to_pylist()))
        short = name if len(name) <= 50 else name[:47] + "..."
        data.append(
            bar(
                [f"rank {r}" for r in ranks],
                np.array([by_rank.get(r, 0) for r in ranks], float) / MS,
                short,
                i,
            )
        )
    tables = [html_table("communication kernels per rank", comm, limit=60)]
    notes = [] if comm.num_rows else ["no communication kernels in these traces"]
    try:
        strag = ctx.result("stragglers")
        if strag.table.num_rows:
            tables.append(
                html_table("potential stragglers (latest to start the collectives)", strag.table)
            )
        notes += strag.notes
    except SectionFailed as e:  # stragglers need collectives on several ranks
        notes.append(f"stragglers not available ({e})")
    return Section(
        "Time in each communication kernel (NCCL and similar) per rank, and the ranks that "
        "start collectives last (the others wait for them).",
        figures=[figure(data, "communication time per rank", "", "ms", barmode="stack")]
        if data
        else [],
        tables=tables,
        notes=notes,
    )
