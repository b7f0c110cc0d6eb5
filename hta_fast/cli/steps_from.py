"""--steps-from, the one option that says where the steps of analyze, doctor, report, ops,
predict, critical-path, replay and whatif come from: the profiler's ProfilerStep#N events
(the default), the passes of one inference phase, or repeated launches
(hta_fast.frame.steps_from). The traces are handed over with those steps as they load
(cli/loading.load_traces), so --steps then numbers them and every command sees them."""

from __future__ import annotations

import logging
from typing import Callable, TypeVar

import click

from ..frame.steps_from import SOURCES, steps_from, with_steps
from ..traceset import TraceSet
from .app import BadInput

log = logging.getLogger("hta_fast")

F = TypeVar("F", bound=Callable[..., object])

HELP = (
    "Where the steps come from: the profiler's ProfilerStep#N events, repeated launch "
    "sequences (iterations), or inference passes of one phase, numbered from 0 per rank "
    "(see docs/inference.md)."
)


def steps_from_option(f: F) -> F:
    return click.option(
        "--steps-from",
        "steps_from",
        type=click.Choice(SOURCES),
        default="profiler",
        show_default=True,
        help=HELP,
    )(f)


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
