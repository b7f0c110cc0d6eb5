"""`hta-fast analyze`: run analyses and print their tables, or write them to a folder."""

from __future__ import annotations

from typing import Optional

import click
import pyarrow as pa

from ...analysis.registry import ANALYSES, DEFAULT
from ..app import Options, cli
from ..loading import (
    RANKS_HELP,
    STEPS_HELP,
    capture_option,
    path_arguments,
    recover_option,
    steps_from_option,
    with_capture_file,
)
from ..options import load_traces
from ..options import selection as asked_selection
from ..output import FORMATS, check_format, emit, trace_start
from ..progress import bar


@cli.command()
@path_arguments
@click.option(
    "-a",
    "--analysis",
    "names",
    multiple=True,
    type=click.Choice(sorted(ANALYSES)),
    help=f"Analysis to run (repeat for several). Default: {', '.join(DEFAULT)}.",
)
@click.option("--steps", help=STEPS_HELP)
@click.option("--ranks", help=RANKS_HELP)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Folder for the tables (NAME.csv / NAME.parquet / analyses.json).",
)
@click.option(
    "--limit",
    type=int,
    default=20,
    show_default=True,
    help="Rows shown per table in the table format (0: all).",
)
@recover_option
@steps_from_option
@capture_option
@click.pass_obj
def analyze(
    opts: Options,
    paths: tuple[str, ...],
    names: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
    capture: Optional[str],
) -> None:
    """Run analyses on the traces; print their tables or write them to a folder.

    Text tables show durations in the unit that suits each column and points in time from
    the traces' start; CSV, Parquet and JSON keep nanoseconds. Each analysis gives a main
    table and, for some, side tables (NAME.SIDE): per-kernel rows, summaries, interval
    statistics.
    """
    check_format(fmt, out_dir)
    asked = asked_selection(ranks, steps)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = with_capture_file(traces, capture, opts, recover)
    selection = asked.of(traces)
    tables: dict[str, pa.Table] = {}
    notes: dict[str, list[str]] = {}
    chosen = list(dict.fromkeys(names or DEFAULT))
    for name in bar(opts, iterable=chosen, desc="analysing"):
        result = ANALYSES[name](traces, selection)
        tables[name] = result.table
        for side, table in result.tables.items():
            tables[f"{name}.{side}"] = table
        notes[name] = result.notes
    emit(tables, notes, fmt, out_dir, limit, origin_ns=trace_start(traces))
