"""The report's critical-path section: per step, what share of the chain of dependencies that
decides the step's time each category holds (CPU, GPU compute, communication, launch and
kernel-to-kernel overhead, data loading, untraced host time, unrecorded GPU work), and the
events that hold the most of it (hta_fast.model.path.critical_path, as `hta-fast
critical-path` prints it).

On many ranks the path is walked on the ranks whose time series the report draws (the
slowest outliers and the median rank): a path per rank of thousands would cost a replay
each and say what the few say."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import array_of, as_numpy
from ...frame.fields import NS, PCT
from ...frame.result import fold_rank_notes
from ...frame.select import Selection
from ...model.graph.chain import step_label
from ...model.path.bounds import BOUND_BY
from ...model.path.critical_path import critical_path
from ..page.context import Context, Section, section
from ..page.figures import bar, figure
from ..page.tables import html_table
from .ranks import drawn_selection

MS = 1e6
TOP_EVENTS = 20
SHOWN_NOTES = 6
ABOUT = (
    "The chain of dependencies that decides each step's time: the step's dependency graph "
    "(CPU calls, launches, kernels on their streams, stream waits and syncs) replayed with "
    "the measured durations, walked back from the step's last event. Each bar splits the "
    "path by what bounds it; the events below hold the most time on it. The path is as long "
    "as the replayed step."
)


@section("critical-path", walks_graphs=True)
def critical_path_per_step(ctx: Context) -> Section:
    return _path_section(ctx, ctx.selection, [])


@section("critical-path", "steps", "temporal", walks_graphs=True)
def critical_path_of_drawn_ranks(ctx: Context) -> Section:
    sel, note = drawn_selection(ctx, "walked")
    return _path_section(ctx, sel, [note])


def _path_section(ctx: Context, sel: Selection, notes: list[str]) -> Section:
    r = ctx.guarded(
        "critical_path", lambda: critical_path(ctx.traces, selection=sel, breakdown=False)
    )
    summary, on_path = r.table, r["on_path"]
    if summary.num_rows == 0:
        return Section("No steps the model could replay on the selected ranks.", notes=notes)
    shares = [b for b in BOUND_BY if pc.max(summary[b]).as_py() > 0]
    label = [
        f"rank {k} {step_label(s)}"
        for k, s in zip(summary.column("rank").to_pylist(), summary.column("step").to_pylist())
    ]
    length = as_numpy(summary.column("critical_path_length")) / MS
    data = [
        bar(label, length * as_numpy(summary.column(b)) / 100, b, i)
        for i, b in enumerate(BOUND_BY)
        if b in shares
    ]
    folded = fold_rank_notes(list(r.notes))
    more = folded[SHOWN_NOTES:]
    tail = (
        [
            f"{len(more):,} more notes of the model (how it tied waits and launches): "
            f"hta-fast critical-path {ctx.source} prints them"
        ]
        if more
        else []
    )
    return Section(
        ABOUT,
        figures=[figure(data, "critical path per step", "", "ms", barmode="stack")],
        tables=[
            html_table(
                "critical path per step (shares of the path, %)",
                summary,
                ["rank", "step", "critical_path_length", "measured_step", *shares],
            ),
            html_table("events holding the most of the path", top_events(on_path, summary)),
        ],
        notes=notes + folded[:SHOWN_NOTES] + tail + [overlay_command(ctx, summary)],
    )


def top_events(on_path: pa.Table, summary: pa.Table, n: int = TOP_EVENTS) -> pa.Table:
    """The events (by name and what bounds them) holding the most time on the paths, summed
    over the ranks and steps shown (critical_path's "on_path"), with their share of all the
    paths' time."""
    total = max(int(pc.sum(summary["critical_path_length"]).as_py() or 0), 1)
    grouped = (
        on_path.group_by(["name", "bound_by"])
        .aggregate([("duration", "sum"), ("edges", "sum")])
        .sort_by([("duration_sum", "descending")])
        .slice(0, n)
    )
    on = as_numpy(grouped.column("duration_sum"))
    return pa.table(
        {
            "name": grouped["name"],
            "bound_by": grouped["bound_by"],
            "time_on_path": array_of(on, pa.int64()),
            "share_of_path": array_of(100.0 * on / total, pa.float64()),
            "edges": grouped["edges_sum"],
        },
        schema=pa.schema(
            [
                pa.field("name", pa.string()),
                pa.field("bound_by", pa.string()),
                pa.field("time_on_path", pa.int64(), metadata=NS),
                pa.field("share_of_path", pa.float64(), metadata=PCT),
                pa.field("edges", pa.int64()),
            ]
        ),
    )


def overlay_command(ctx: Context, summary: pa.Table) -> str:
    """The command that writes the longest step's path as a timeline overlay (Perfetto)."""
    i = int(np.argmax(as_numpy(summary.column("critical_path_length"))))
    rank, step = summary["rank"][i].as_py(), summary["step"][i].as_py()
    steps = "" if step is None else f" --steps {step}"
    name = "whole" if step is None else f"step{step}"
    return (
        f"the longest path, {'the whole trace' if step is None else f'step {step}'} of rank "
        f"{rank}, as a timeline overlay for Perfetto UI: hta-fast critical-path {ctx.source} "
        f"--ranks {rank}{steps} --trace-out critical_path_{name}.json.gz"
    )
