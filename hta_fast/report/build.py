"""Assembles the report: sections from the analyses, rendered into one HTML file."""

from __future__ import annotations

import datetime
import os
import time
from typing import TYPE_CHECKING, Any, Callable, Optional, Sequence

import jinja2

from .._core import __version__
from ..frame.select import Selection
from ..traceset import TraceSet
from .page import plotlyjs
from .page.context import TITLES, Context, Part, Section, SectionFailed
from .sections import (
    critical_path,
    dist,
    gpu,
    graphs,
    inference,
    memory,
    modules,
    ranks,
    timeline,
)
from .sections.findings import diagnosis
from .sections.summary import summary as rank_summary

if TYPE_CHECKING:
    from ..doctor import Thresholds

# The sections in the order the report shows them, after the summary; each builder declares
# its part and what it reads (context.section). What a section reads is released once no
# later section reads it (build_sections): on thousands of ranks each analysis's result is
# hundreds of MB.
SECTIONS: tuple[Part, ...] = (
    gpu.temporal,
    gpu.gpu_efficiency,
    gpu.step_breakdown,
    critical_path.critical_path_per_step,
    gpu.kernel_types,
    gpu.top_kernels,
    gpu.operators,
    graphs.graph_replays,
    inference.inference,
    gpu.overlap,
    gpu.idle,
    timeline.queue,
    timeline.bandwidth,
    memory.memory,
    modules.modules,
    timeline.launch_delay,
    timeline.steps,
    timeline.collectives,
)

# From this many ranks on, a row per rank is screens of alike rows and a file that grows
# with the ranks: the sections below show distributions, binned heatmaps and the ranks
# that stand out instead, in a report of about the same size for any number of ranks.
MANY_RANKS = 16
MANY_SECTIONS: tuple[Part, ...] = (
    ranks.outliers,
    ranks.temporal,
    dist.gpu_efficiency,
    dist.step_breakdown,
    critical_path.critical_path_of_drawn_ranks,
    ranks.steps,
    ranks.collectives,
    dist.kernel_types,
    gpu.top_kernels,
    dist.operators,
    graphs.graph_replays,
    inference.inference,
    dist.overlap,
    dist.idle,
    dist.queue,
    dist.bandwidth,
    dist.memory,
    modules.modules,
    dist.launch_delay,
)
# The summary (before the sections) reads the temporal breakdown.
SUMMARY_USES = ("temporal",)


def sections_for(ranks: int) -> tuple[Part, ...]:
    return MANY_SECTIONS if ranks >= MANY_RANKS else SECTIONS


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("hta_fast.report", "templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
    undefined=jinja2.StrictUndefined,
)


def one_bar_each(fig: dict[str, Any]) -> bool:
    """Whether every bar series of a figure holds one value at most (one rank's bar): a
    chart that says nothing its table's number does not."""
    series = fig["data"]
    return bool(series) and all(
        t.get("type") == "bar" and len(t.get("x" if t.get("orientation") != "h" else "y", ())) <= 1
        for t in series
    )


def has_values(fig: dict[str, Any]) -> bool:
    """Whether a figure would draw anything: some trace with a number other than null."""
    for trace in fig["data"]:
        if trace.get("type") == "heatmap":
            if any(v is not None for row in trace["z"] for v in row):
                return True
            continue
        values = trace.get("x" if trace.get("orientation") == "h" else "y", ())
        if any(v is not None for v in values):
            return True
    return False


def build_sections(
    ctx: Context, load_seconds: float, on_section: Optional[Callable[[str], object]] = None
) -> tuple[list[Section], dict[str, Any]]:
    done = on_section or (lambda _id: None)
    many = len(ctx.traces) >= MANY_RANKS
    summary = dist.summary if many else rank_summary
    try:
        first, headline = summary(ctx, load_seconds)
    except SectionFailed as e:  # the summary needs the temporal breakdown
        first = Section(notes=[f"not available ({e})"])
        headline = {
            "ranks": len(ctx.traces),
            "json_mb": 0.0,
            "events": 0,
            "kernels": 0,
            "devices": "–",
            "load_seconds": load_seconds,
            "utilization": None,
        }
    first.id, first.title = "summary", TITLES["summary"]
    done("summary")
    sections = [first]
    plan = sections_for(len(ctx.traces))
    for i, part in enumerate(plan):
        sections.append(part(ctx))
        done(part.id)
        later = plan[i + 1 :]
        ctx.release(
            set().union(*(p.uses for p in later)), graphs=any(p.walks_graphs for p in later)
        )
    return sections, headline


# How the GPU busy shares of the report differ from the doctor's utilization, in one line.
BUSY_SHARE_NOTE = (
    "gpu_busy_pct is each rank's GPU busy time over its whole span (the temporal breakdown); "
    "the first card's GPU utilization is the doctor's: the busy share of the analysed steps' "
    "device-aware windows, the figure the CI gate reads"
)


def one_utilization(headline: dict[str, Any], doctor: dict[str, Any], sections: list) -> None:
    """The first card shows the doctor's utilization (the one the gate reads), named; the
    temporal busy share only where the doctor could not run, named as what it is."""
    if doctor.get("available"):
        headline["utilization"] = doctor["utilization"]
        headline["utilization_label"] = "GPU utilization (busy share of the analysed steps)"
        headline["compute_utilization"] = doctor.get("compute_utilization")
        if sections and sections[0].id == "summary":
            sections[0].notes.append(BUSY_SHARE_NOTE)
    else:
        headline["utilization_label"] = "GPU busy over the trace's span (mean over ranks)"


def write_report(
    traces: TraceSet,
    path: str,
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    cdn: bool = False,
    load_seconds: float = 0.0,
    title: Optional[str] = None,
    max_points: int = 20_000,
    thresholds: Optional[Thresholds] = None,
    on_section: Optional[Callable[[str], object]] = None,
    source: str = "DIR",
) -> dict[str, Any]:
    """Writes the report to path; returns {path, bytes, seconds, figures}.

    From MANY_RANKS ranks on, per-rank tables and bars become distributions, heatmaps and
    the outlier ranks, each with the command that opens its own report (`hta-fast report
    SOURCE --ranks N`; source names the traces as the command line does).

    The numbers come from every event; only the time-series figures keep at most
    max_points points (per figure, split over its series). on_section(id) is called as
    each part is done ("doctor", "summary", then each of sections_for(ranks)), for
    progress bars."""
    t0 = time.perf_counter()
    # Every part of the report, the summary and the doctor included, sees the chosen ranks.
    chosen = traces if ranks is None else TraceSet({r: traces[r] for r in ranks})
    ctx = Context(chosen, Selection(steps=steps), max_points=max_points, source=source)
    # The doctor's what-if replays build the graphs the critical path walks: kept till then.
    ctx.keep_graphs()
    try:
        doctor = diagnosis(chosen, steps, thresholds)
        if on_section is not None:
            on_section("doctor")
        sections, headline = build_sections(ctx, load_seconds, on_section)
    finally:
        ctx.release(set())
    one_utilization(headline, doctor, sections)
    for s in sections:
        drawn = [f for f in s.figures if has_values(f)]
        if len(drawn) < len(s.figures):
            s.notes.append("nothing to plot for these traces")
        single = [f for f in drawn if one_bar_each(f)]
        if single:
            s.notes.append("one bar per series: the table gives the numbers")
        s.figures = [f for f in drawn if not one_bar_each(f)]
    figures = [
        {"id": f"fig-{s.id}-{i}", "spec": fig} for s in sections for i, fig in enumerate(s.figures)
    ]
    html = _ENV.get_template("report.html.j2").render(
        title=title or f"hta_fast report: {len(traces)} rank(s)",
        headline=headline,
        doctor=doctor,
        sections=sections,
        figures=figures,
        plotly_inline=None if cdn else plotlyjs.bundle(),
        plotly_src=plotlyjs.cdn_url() if cdn else None,
        version=__version__,
        created=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        selection={"ranks": ranks, "steps": steps},
    )
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(html)
    os.replace(tmp, path)  # a reader never sees half a report
    return {
        "path": path,
        "bytes": os.path.getsize(path),
        "figures": len(figures),
        "seconds": time.perf_counter() - t0,
    }
