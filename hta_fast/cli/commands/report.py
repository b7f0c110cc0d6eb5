"""`hta-fast report PATH... -o report.html`: one self-contained HTML report."""

from __future__ import annotations

import os
import shlex
from typing import Any, Optional, Sequence

import click

from ...traceset import TraceSet
from ..app import Options, cli
from ..loading import (
    RANKS_HELP,
    STEPS_HELP,
    capture_option,
    parse_ints,
    parse_steps,
    path_arguments,
    pick_steps,
    recover_option,
    steps_from_option,
    subset,
    with_capture_file,
)
from ..options import load_traces
from ..progress import bar


def write(
    traces: TraceSet,
    out: str,
    opts: Options,
    *,
    ranks: Optional[Sequence[int]] = None,
    steps: Optional[Sequence[int]] = None,
    cdn: bool = False,
    load_seconds: float = 0.0,
    max_points: int = 20_000,
    title: Optional[str] = None,
    source: str = "DIR",
) -> dict[str, Any]:
    from ...report import write_report  # jinja2 and the template only when a report is made
    from ...report.build import sections_for

    if os.path.isdir(out):
        raise click.UsageError(f"{out} is a folder; -o takes the report's file name")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise click.UsageError(f"{parent}: no such folder for the report")
    parts = len(sections_for(len(ranks) if ranks is not None else len(traces))) + 2
    with bar(opts, total=parts, desc="report") as progress:
        return write_report(
            traces,
            out,
            ranks=ranks,
            steps=steps,
            cdn=cdn,
            load_seconds=load_seconds,
            max_points=max_points,
            title=title,
            on_section=lambda _id: progress.update(1),
            source=source,
        )


@cli.command()
@path_arguments
@click.option(
    "-o",
    "--output",
    "out",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write.",
)
@click.option(
    "--cdn",
    is_flag=True,
    help="Load plotly.js from its CDN: a small file that needs the network to view.",
)
@click.option("--steps", help=STEPS_HELP)
@click.option("--ranks", help=RANKS_HELP)
@click.option(
    "--max-points",
    type=click.IntRange(100),
    default=20_000,
    show_default=True,
    help="Points per time-series figure (the numbers always use every event).",
)
@click.option("--title", help="Title of the report.")
@recover_option
@steps_from_option
@capture_option
@click.pass_obj
def report(
    opts: Options,
    paths: tuple[str, ...],
    out: str,
    cdn: bool,
    steps: Optional[str],
    ranks: Optional[str],
    max_points: int,
    title: Optional[str],
    recover: bool,
    steps_from: str,
    capture: Optional[str],
) -> None:
    """Write one self-contained HTML report: the doctor's findings, then every analysis."""
    ranks_, asked_steps = parse_ints(ranks, "rank"), parse_steps(steps)
    traces, load_s = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = with_capture_file(traces, capture, opts, recover)
    subset(traces, ranks_)  # an unknown rank is bad input, before any work
    steps_ = pick_steps(traces, asked_steps)
    default_title = "hta_fast report: " + ", ".join(
        os.path.basename(os.path.normpath(p)) for p in paths[:3]
    )
    info = write(
        traces,
        out,
        opts,
        ranks=ranks_,
        steps=steps_,
        cdn=cdn,
        load_seconds=load_s,
        max_points=max_points,
        title=title or default_title,
        source=" ".join(shlex.quote(p) for p in paths),  # for the commands the report shows
    )
    click.echo(
        f"{info['path']}: {info['bytes'] / 1e6:.1f} MB, {info['figures']} figures, "
        f"written in {load_s + info['seconds']:.2f} s (load {load_s:.2f} s)"
    )
