"""What the table-printing commands (ops, predict, critical-path, replay, whatif) share: their
options, the selection they describe, and their results as named tables; and, for every
command with --steps-from, the traces loaded with their steps from there (load_traces)."""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable, Optional, Sequence, TypeVar

import click
import pyarrow as pa

from ..frame.result import Result
from ..frame.select import Selection
from ..steps.steps_from import steps_from, with_steps
from ..traceset import TraceSet
from .app import BadInput, Options
from .loading import (
    RANKS_HELP,
    STEPS_HELP,
    IntRanges,
    load_files,
    parse_ints,
    parse_steps,
    path_arguments,
    pick_steps,
    recover_option,
    steps_from_option,
)
from .output import FORMATS

F = TypeVar("F", bound=Callable[..., object])

log = logging.getLogger("hta_fast")


def load_traces(
    paths: Sequence[str],
    opts: Options,
    recover: bool = False,
    what: str = "loading",
    steps_from: str = "profiler",
) -> tuple[TraceSet, float]:
    """The TraceSet of the paths (cli.loading.load_files), its steps from `steps_from`
    (steps_from_option), and the seconds it took."""
    t0 = time.perf_counter()
    traces, _ = load_files(paths, opts, recover, what)
    return applied(traces, steps_from), time.perf_counter() - t0


def applied(traces: TraceSet, source: str) -> TraceSet:
    """The traces with their steps from the source; what found them, or why a rank has
    none, is logged; no steps on any rank is bad input."""
    if source == "profiler":
        return traces
    found = steps_from(traces, source)
    if found.table.num_rows == 0:
        raise BadInput(f"--steps-from {source}: no steps found; " + "; ".join(found.notes))
    counted = set(found.table.column("rank").to_pylist())
    for rank, note in zip(traces.ranks, found.notes):
        if rank not in counted:
            log.warning("--steps-from %s: %s; the rank is analysed whole", source, note)
        else:
            log.info("--steps-from %s: %s", source, note)
    return with_steps(traces, found.table, source)


def table_command(f: F) -> F:
    """PATH..., --steps, --steps-from, --ranks, --format, -o, --limit, --recover."""
    return table_options(path_arguments(f))


def table_options(f: F) -> F:
    """--steps, --steps-from, --ranks, --format, -o, --limit, --recover."""
    for option in reversed(
        [
            click.option("--steps", help=STEPS_HELP),
            click.option("--ranks", help=RANKS_HELP),
            click.option(
                "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
            ),
            click.option(
                "-o",
                "--output",
                "out_dir",
                type=click.Path(file_okay=False),
                help="Folder for the tables (NAME.csv / NAME.parquet / analyses.json).",
            ),
            click.option(
                "--limit",
                type=int,
                default=20,
                show_default=True,
                help="Rows shown per table in the table format (0: all).",
            ),
        ]
    ):
        f = option(f)
    return recover_option(steps_from_option(f))


@dataclasses.dataclass(frozen=True)
class Asked:
    """--ranks and --steps, checked before the traces load; the Selection once they have."""

    ranks: Optional[list[int]]
    steps: Optional[IntRanges]

    def of(self, traces: TraceSet) -> Selection:
        return Selection(ranks=self.ranks, steps=pick_steps(traces, self.steps))


def selection(ranks: Optional[str], steps: Optional[str]) -> Asked:
    return Asked(parse_ints(ranks, "rank"), parse_steps(steps))


def result_tables(results: list[Result]) -> tuple[dict[str, pa.Table], dict[str, list[str]]]:
    """Each result's main table under its name, side tables as NAME.SIDE, and its notes."""
    tables: dict[str, pa.Table] = {}
    notes: dict[str, list[str]] = {}
    for r in results:
        tables[r.name] = r.table
        tables.update({f"{r.name}.{side}": t for side, t in r.tables.items()})
        notes[r.name] = r.notes
    return tables, notes
