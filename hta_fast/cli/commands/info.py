"""`hta-fast info`: ranks, devices, span, steps, event and kernel counts, sizes, load time."""

from __future__ import annotations

import click

from ..._arrow import table_from_rows
from ...loading.rank_info import rank_info, stream_source
from ..app import Options, cli
from ..loading import load_files, path_arguments, recover_option
from ..output import dumps, echo_table
from ..terminal import echo

# Files listed under the table: a few say where the traces are; --limit 0 lists them all.
FILES_SHOWN = 8


@cli.command()
@path_arguments
@recover_option
@click.option("--json", "as_json", is_flag=True, help="One JSON document instead of a table.")
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Ranks shown in the table (0: all); --json lists every rank.",
)
@click.pass_obj
def info(opts: Options, paths: tuple[str, ...], recover: bool, as_json: bool, limit: int) -> None:
    """What the traces hold: ranks, devices, span, steps, events, kernels, sizes.

    On many ranks the text shows the first --limit rows of the table and the files of the
    first few ranks; --json has them all.
    """
    traces, seconds = load_files(paths, opts, recover)
    rows = [rank_info(t) for t in traces.values()]
    json_mb = sum(r["json_bytes"] for r in rows) / 1e6
    sources = {r: s for r, t in traces.items() if (s := stream_source(t)) is not None}
    if as_json:
        out = {"ranks": rows, "load_seconds": round(seconds, 3), "json_mb": round(json_mb, 3)}
        if sources:
            out["stream_source"] = {str(r): s for r, s in sources.items()}
        click.echo(dumps(out))
        return
    table = table_from_rows([{k: v for k, v in r.items() if k != "file"} for r in rows])
    echo_table(
        f"{len(rows)} rank(s), {json_mb:,.1f} MB of JSON loaded in {seconds:.2f} s",
        table,
        limit or None,
        "--limit 0 shows all; --json lists every rank",
    )
    shown = rows if limit == 0 else rows[:FILES_SHOWN]
    for r in shown:
        echo(f"rank {r['rank']}: {r['file']}")
    if len(shown) < len(rows):
        echo(f"... and {len(rows) - len(shown):,} more rank(s) (--limit 0 or --json: every file)")
    for text in sorted(set(sources.values())):
        ranks = [r for r, s in sources.items() if s == text]
        echo(f"streams of {len(ranks)} rank(s): {text}")
