"""`hta-fast diff A B`: what changed between two traces (hta_fast.analysis.trace_diff)."""

from __future__ import annotations

from typing import Optional

import click
import numpy as np

from ..analysis import trace_diff
from .app import Options, cli
from .loading import load_traces, parse_ints, parse_steps, pick_steps, recover_option
from .output import FORMATS, dumps, echo_table, jsonable, write_tables


@cli.command("diff")
@click.argument("control", metavar="A")
@click.argument("test", metavar="B")
@click.option(
    "--device",
    type=click.Choice(trace_diff.DEVICES),
    default="all",
    show_default=True,
    help="Compare all events, CPU ones or GPU ones.",
)
@click.option("--control-rank", help="Ranks of A (default: its smallest).")
@click.option("--test-rank", help="Ranks of B (default: its smallest).")
@click.option("--control-steps", help="Steps of A, e.g. 3 or 2:5 (default: its first).")
@click.option("--test-steps", help="Steps of B (default: its first).")
@click.option("--short-names", is_flag=True, help="Group by names without template arguments.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Folder for trace_diff.csv / .parquet.",
)
@click.option(
    "--limit",
    type=int,
    default=30,
    show_default=True,
    help="Rows shown in the table format, largest duration change first (0: all).",
)
@recover_option
@click.pass_obj
def diff_command(
    opts: Options,
    control: str,
    test: str,
    device: str,
    control_rank: Optional[str],
    test_rank: Optional[str],
    control_steps: Optional[str],
    test_steps: Optional[str],
    short_names: bool,
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
) -> None:
    """Per operator / kernel name: counts and durations in A and in B, and the change.

    A and B are each a trace file or a folder of per-rank files.
    """
    if fmt in ("csv", "parquet") and not out_dir:
        raise click.UsageError(f"--format {fmt} writes files: give a folder with -o DIR")
    a, _ = load_traces([control], opts, recover, what="loading A")
    b, _ = load_traces([test], opts, recover, what="loading B")
    result = trace_diff.trace_diff(
        a,
        b,
        device=device,
        use_short_name=short_names,
        control_rank=parse_ints(control_rank, "rank"),
        test_rank=parse_ints(test_rank, "rank"),
        control_steps=pick_steps(a, parse_steps(control_steps)),
        test_steps=pick_steps(b, parse_steps(test_steps)),
    )
    table = result.table
    if fmt in ("csv", "parquet") and out_dir:  # out_dir is required for these (above)
        for path in write_tables({"trace_diff": table}, fmt, out_dir):
            click.echo(path)
        return
    if fmt == "json":
        click.echo(dumps({"params": result.params, "rows": jsonable(table)}))
        return
    order = np.argsort(-np.abs(table.column("diff_duration").to_numpy()), kind="stable")
    changed = table.take(order)
    cats = table.column("counts_change_categories").to_pylist()
    counts = {c: cats.count(c) for c in trace_diff.CHANGES}
    p = result.params
    click.echo(
        f"A: rank {p['control_rank']} steps {p['control_steps']}   "
        f"B: rank {p['test_rank']} steps {p['test_steps']}   device {device}"
    )
    click.echo(", ".join(f"{n} {c}" for c, n in counts.items()) + " names")
    click.echo()
    echo_table("largest changes in duration (B - A)", changed, limit or None)
    if out_dir:
        for path in write_tables({"trace_diff": table}, "csv", out_dir):
            click.echo(path)
