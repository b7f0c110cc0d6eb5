"""`hta-fast analyze`: run analyses and print their tables, or write them to a folder."""
from __future__ import annotations

import os
from typing import Optional

import click
import pyarrow as pa

from ..analysis.select import Selection
from .app import Options, cli
from .loading import (RANKS_HELP, STEPS_HELP, load_traces, parse_ints, path_arguments,
                      recover_option)
from .output import FORMATS, dumps, echo_table, jsonable, write_tables
from .progress import bar
from .registry import ANALYSES, DEFAULT


@cli.command()
@path_arguments
@click.option("-a", "--analysis", "names", multiple=True, type=click.Choice(sorted(ANALYSES)),
              help=f"Analysis to run (repeat for several). Default: {', '.join(DEFAULT)}.")
@click.option("--steps", help=STEPS_HELP)
@click.option("--ranks", help=RANKS_HELP)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False),
              help="Folder for the tables (NAME.csv / NAME.parquet / analyses.json).")
@click.option("--limit", type=int, default=20, show_default=True,
              help="Rows shown per table in the table format (0: all).")
@recover_option
@click.pass_obj
def analyze(opts: Options, paths: tuple[str, ...], names: tuple[str, ...], steps: Optional[str],
            ranks: Optional[str], fmt: str, out_dir: Optional[str], limit: int,
            recover: bool) -> None:
    """Run analyses on the traces; print their tables or write them to a folder.

    Times are in nanoseconds. Each analysis gives a main table and, for some, side tables
    (NAME.SIDE): per-kernel rows, summaries, interval statistics.
    """
    if fmt in ("csv", "parquet") and not out_dir:
        raise click.UsageError(f"--format {fmt} writes files: give a folder with -o DIR")
    selection = Selection(ranks=parse_ints(ranks, "rank"), steps=parse_ints(steps, "step"))
    traces, _ = load_traces(paths, opts, recover)
    tables: dict[str, pa.Table] = {}
    notes: dict[str, list[str]] = {}
    chosen = list(dict.fromkeys(names or DEFAULT))
    for name in bar(opts, iterable=chosen, desc="analysing", unit="analysis"):
        result = ANALYSES[name](traces, selection)
        tables[name] = result.table
        for side, table in result.tables.items():
            tables[f"{name}.{side}"] = table
        notes[name] = result.notes
    if fmt in ("csv", "parquet") and out_dir:  # out_dir is required for these (above)
        for path in write_tables(tables, fmt, out_dir):
            click.echo(path)
    elif fmt == "json":
        doc = {"tables": {k: jsonable(t) for k, t in tables.items()}, "notes": notes}
        text = dumps(doc)
        if out_dir:
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "analyses.json")
            with open(path, "w") as fh:
                fh.write(text)
            click.echo(path)
        else:
            click.echo(text)
    else:
        for key, table in tables.items():
            echo_table(f"{key} ({table.num_rows:,} rows)", table, limit or None)
        for name, lines in notes.items():
            for line in lines:
                click.echo(f"note ({name}): {line}")
        if out_dir:
            for path in write_tables(tables, "csv", out_dir):
                click.echo(path)
