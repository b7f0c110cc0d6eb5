"""`hta-fast query`: one SQL statement over the traces' tables and any result it names."""

from __future__ import annotations

from typing import Optional

import click

from ...sql import query as run_query
from ...sql import tables
from ..app import Options, cli
from ..options import load_traces, selection, table_options
from ..output import check_format, emit, trace_start
from ..terminal import echo


@cli.command()
@click.argument("args", nargs=-1, metavar="PATH... SQL")
@click.option("--tables", "list_tables", is_flag=True, help="List the tables a query can name.")
@table_options
@click.pass_obj
def query(
    opts: Options,
    args: tuple[str, ...],
    list_tables: bool,
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
) -> None:
    """Run one SQL statement (DuckDB's dialect) over the traces: their tables (events,
    kernels, steps, counters, ...) and any analysis, critical_path, owners or doctor by
    name, computed when named (docs/query.md). --steps and --ranks choose what the computed
    results cover; the trace tables stay whole (filter them in SQL). The statement reads
    nothing else: no files, no extensions.

    \b
    hta-fast query run/ "SELECT rank, sum(dur) / 1e6 AS ms FROM kernels GROUP BY rank"
    hta-fast query --tables
    """
    if list_tables:
        for t in tables():
            echo(f"{t.name:24} {t.kind:9} {t.about}")
        return
    if len(args) < 2:
        raise click.UsageError("give the traces (PATH...) and then one SQL statement")
    check_format(fmt, out_dir)
    *paths, sql = args
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    result = run_query(traces, sql, selection=selection(ranks, steps).of(traces))
    emit({"query": result.table}, {"query": result.notes}, fmt, out_dir, limit, trace_start(traces))
