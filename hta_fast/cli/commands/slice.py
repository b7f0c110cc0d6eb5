"""`hta-fast slice PATH... --steps N | --window START:END -o OUT`: the events of some steps
(or of a time window) as a Chrome trace small enough for Perfetto UI or chrome://tracing,
which cannot open a trace of a few GB whole. hta_fast.loading.slice_writer writes it; this
module turns the options into one window per rank and the output into one file per rank.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import time
from pathlib import Path
from typing import Optional

import click
import numpy as np

from ...loading.files import TRACE_SUFFIXES
from ...loading.slice_writer import (
    Window,
    steps_window,
    trace_start,
    window_rows,
    write_slice,
    write_slice_pftrace,
)
from ...trace import Trace
from ...traceset import TraceSet
from ..app import BadInput, Options, cli
from ..loading import (
    RANKS_HELP,
    parse_ints,
    path_arguments,
    recover_option,
    steps_from_option,
    subset,
)
from ..options import load_traces
from ..progress import bar
from ..terminal import echo

log = logging.getLogger("hta_fast")

# The name of each rank's file when OUT is a folder, by --format.
RANK_FILE = {"json": "rank-{rank}.json.gz", "pftrace": "rank-{rank}.pftrace.gz"}
RANK_FILE_NAME = re.compile(r"rank-[0-9]+\.(json|pftrace)\.gz")

STEPS_HELP = (
    "Profiler steps: 3, 3,5 or 2:5. The window runs from the start of the first step "
    "named to the end of the last (steps between included), plus the GPU work launched "
    "in it. Every step named must exist on every rank sliced."
)
WINDOW_HELP = (
    "START:END in ns from the start of the first event of the ranks sliced (so one window "
    "is one instant on every rank); END excluded. With --absolute, ns since the epoch, the "
    "clock of hta_fast's ts columns. The events that start in it are kept, plus the GPU "
    "work launched in it. Ranks with no event in it are left out, with a warning."
)
NO_STEPS_HINT = (
    "; --window START:END slices it by time, and --steps-from finds steps in a trace "
    "without ProfilerStep#N events"
)
OUTPUT_HELP = (
    "The file to write (gzip when it ends in .gz) for one rank; a folder for several, "
    "which gets one rank-N.json.gz (rank-N.pftrace.gz with --format pftrace) per rank (a "
    "name not ending in .json, .pftrace or .gz is a folder too)."
)
FORMAT_HELP = (
    "json (the default): Chrome-trace JSON, every phase the loader keeps and the header. "
    "pftrace: a Perfetto protobuf trace, which Perfetto UI opens past its JSON size limit "
    "and hta-fast loads back to the same events, arguments, flows, counters, instants and "
    "process and thread names. Not kept in it: the header (distributedInfo, "
    "deviceProperties: a folder's ranks come from the file names), events and names of "
    "string pids or tids (trace spans), the cat and name of flows, bp of a flow start, the "
    "tid of process-scoped instants and the pid and tid of global ones. What is left out "
    "is counted in a warning."
)


@dataclasses.dataclass(frozen=True)
class AskedWindow:
    """--steps or --window, checked before the traces load."""

    steps: Optional[list[int]]
    bounds: Optional[tuple[int, int]]
    absolute: bool
    text: str

    def of(self, trace: Trace, origin: int) -> Window:
        """This rank's window; `origin` is what relative windows count from."""
        if self.steps is not None:
            try:
                return steps_window(trace, self.steps)
            except ValueError as e:
                hint = "" if trace.num_rows("steps") else NO_STEPS_HINT
                raise BadInput(f"--steps {self.text}: {e}{hint}") from None
        assert self.bounds is not None
        lo, hi = self.bounds
        return (lo, hi) if self.absolute else (origin + lo, origin + hi)


def asked_window(steps: Optional[str], window: Optional[str], absolute: bool) -> AskedWindow:
    if (steps is None) == (window is None):
        raise click.UsageError("give one of --steps N[,M...] and --window START:END")
    if absolute and window is None:
        raise click.UsageError("--absolute says how --window counts; it goes with --window")
    if steps is not None:
        return AskedWindow(parse_ints(steps, "step"), None, absolute, steps)
    assert window is not None
    return AskedWindow(None, parse_bounds(window), absolute, window)


def parse_bounds(text: str) -> tuple[int, int]:
    """'START:END', two integers of ns, END after START."""
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        lo, hi = int(start), int(end)
    except ValueError:
        raise click.BadParameter(
            f"{text!r}: expected START:END, two integers of ns (1000000:2000000)",
            param_hint="--window",
        ) from None
    if hi <= lo:
        raise click.BadParameter(f"{text!r} ends before it starts", param_hint="--window")
    return lo, hi


def names_a_file(out: str) -> bool:
    return not os.path.isdir(out) and out.endswith((".json", ".pftrace", ".gz"))


@dataclasses.dataclass(frozen=True)
class Outputs:
    """Where each rank is written, and the files of an earlier slice in the folder that
    --overwrite removes once this one is written (so that the folder holds this slice)."""

    paths: dict[int, Path]
    stale: list[Path]


def output_paths(out: str, ranks: list[int], overwrite: bool, form: str = "json") -> Outputs:
    """Where each rank goes; what is in the way is bad usage."""
    if names_a_file(out):
        if len(ranks) > 1:
            raise click.UsageError(
                f"{len(ranks)} ranks are sliced and -o {out} names one file: give a folder "
                f"(one {RANK_FILE[form].format(rank='N')} per rank), or pick one rank with --ranks"
            )
        if os.path.exists(out) and not overwrite:
            raise click.UsageError(f"{out} exists; --overwrite replaces it")
        return Outputs({ranks[0]: Path(out)}, [])
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise click.UsageError(
            f"{out} is a file; -o names a folder when it has no .json/.pftrace/.gz"
        )
    paths = {r: folder / RANK_FILE[form].format(rank=r) for r in ranks}
    # Trace files other than a slice's would mix with this one when the folder is loaded.
    present = sorted(p for p in folder.glob("*") if p.name.endswith(TRACE_SUFFIXES))
    foreign = [p.name for p in present if not RANK_FILE_NAME.fullmatch(p.name)]
    if foreign:
        raise click.UsageError(
            f"{out} holds trace files other than a slice's ({', '.join(foreign[:3])}"
            f"{', ...' if len(foreign) > 3 else ''}); give an empty or new folder"
        )
    if present and not overwrite:
        raise click.UsageError(f"{out} holds a slice already; --overwrite replaces it")
    return Outputs(paths, [p for p in present if p not in paths.values()])


def origin_of(traces: TraceSet) -> int:
    """The first event of the ranks sliced: where relative windows count from."""
    starts = [s for s in (trace_start(t) for t in traces.values()) if s is not None]
    if not starts:
        raise BadInput("the traces hold no complete events; there is nothing to slice")
    return min(starts)


def windows_and_rows(traces: TraceSet, asked: AskedWindow) -> dict[int, tuple[Window, np.ndarray]]:
    """Each rank's window and its events. A time window that holds no event on some ranks
    leaves them out (one warning says which); on every rank, or steps without events on a
    rank, it is bad input."""
    origin = origin_of(traces) if asked.steps is None else 0
    found = {}
    for rank, trace in traces.items():
        window = asked.of(trace, origin)
        found[rank] = (window, window_rows(trace, window))
    empty = [r for r, (_, rows) in found.items() if not len(rows)]
    if not empty:
        return found
    option = f"--steps {asked.text}" if asked.steps is not None else f"--window {asked.text}"
    if asked.steps is not None or len(empty) == len(found):
        raise BadInput(f"{option} holds no event on rank(s) {empty}; {span(traces, asked)}")
    log.warning(
        "%s holds no event on rank(s) %s: the other %d rank(s) are written",
        option,
        empty,
        len(found) - len(empty),
    )
    return {r: v for r, v in found.items() if r not in empty}


def span(traces: TraceSet, asked: AskedWindow) -> str:
    """Where the events of the ranks are, in the terms --window was given in."""
    first = origin_of(traces)
    last = max(
        int((t.column("events", "ts") + t.column("events", "dur")).max())
        for t in traces.values()
        if t.num_rows("events")
    )
    if asked.absolute:
        return f"the events run from {first} to {last} ns since the epoch"
    return f"the events run from 0 to {last - first:,} ns from the first one"


@cli.command("slice")
@path_arguments
@click.option("--steps", help=STEPS_HELP)
@click.option("--window", metavar="START:END", help=WINDOW_HELP)
@click.option("--absolute", is_flag=True, help="--window is in ns since the epoch.")
@click.option("--ranks", help=RANKS_HELP)
@click.option("-o", "--output", "out", required=True, type=click.Path(), help=OUTPUT_HELP)
@click.option("--overwrite", is_flag=True, help="Replace the file, or the slice in the folder.")
@click.option(
    "--format", "form", type=click.Choice(["json", "pftrace"]), default="json", help=FORMAT_HELP
)
@steps_from_option
@recover_option
@click.pass_obj
def slice_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    window: Optional[str],
    absolute: bool,
    ranks: Optional[str],
    out: str,
    overwrite: bool,
    form: str,
    steps_from: str,
    recover: bool,
) -> None:
    """Write the events of some steps, or of a time window, as a Chrome trace to open in
    Perfetto UI or chrome://tracing (which cannot open a trace of a few GB whole).

    Every phase the loader keeps is written: complete events with their arguments, the
    flows whose both ends are in the window, counters and instants in it, all metadata
    events and the header (timestamps absolute, in µs). hta-fast and the reference tool
    load the file back. With --format pftrace the slice is a Perfetto protobuf trace
    (what it keeps: see --format).
    """
    asked = asked_window(steps, window, absolute)
    rank_list = parse_ints(ranks, "rank")
    traces, load_s = load_traces(paths, opts, recover, steps_from=steps_from)
    traces = subset(traces, rank_list)
    outputs = output_paths(out, traces.ranks, overwrite, form)
    found = windows_and_rows(traces, asked)
    if not names_a_file(out):
        os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    totals = np.zeros(3, np.int64)
    with bar(opts, total=len(found), desc="writing") as progress:
        for rank, (window_of_rank, rows) in found.items():
            if form == "pftrace":
                counts, left_out = write_slice_pftrace(
                    traces[rank], outputs.paths[rank], window_of_rank, rows
                )
                for reason, n in left_out.items():
                    log.warning(
                        "rank %d: %d event(s) left out of the Perfetto trace: %s", rank, n, reason
                    )
            else:
                counts = write_slice(traces[rank], outputs.paths[rank], window_of_rank, rows)
            totals += (counts.events, counts.flows, counts.counters + counts.instants)
            progress.update(1)
    # A rank left out (no event in the window) keeps no file of an earlier slice either.
    unwritten = [p for r, p in outputs.paths.items() if r not in found and p.exists()]
    for path in outputs.stale + unwritten:
        path.unlink()
    events, flows, others = (int(n) for n in totals)
    echo(
        f"{out}: {len(found)} rank(s), {events:,} events, {flows:,} flow ends, "
        f"{others:,} counters and instants; loaded in {load_s:.2f} s, written in "
        f"{time.perf_counter() - t0:.2f} s"
    )
