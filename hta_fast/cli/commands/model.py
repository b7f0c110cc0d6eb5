"""`hta-fast critical-path`, `hta-fast owners`, `hta-fast replay` and `hta-fast whatif`: the
dependency-graph model (hta_fast.model.path.critical_path, hta_fast.model.path.owners,
hta_fast.model.replay.steps, hta_fast.model.whatif.steps.what_if with
hta_fast.model.whatif.edits.Edits; the edit options come from hta_fast.model.whatif.declared.registry)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, TypeVar

import click
import pyarrow as pa

from ...frame.result import Result
from ...model.whatif.declared.declaration import Option, OptionError
from ...model.whatif.declared.registry import EDITS
from ..app import BadInput, Options, cli
from ..loading import parse_ints, parse_steps, pick_steps
from ..options import load_traces, result_tables, selection, table_command
from ..output import check_format, emit, trace_start

if TYPE_CHECKING:
    from ...model.whatif.edits import Edits


# replay's and whatif's --windows (critical-path's walks windows, with its own help)
replay_windows_option = click.option(
    "--windows",
    is_flag=True,
    help="Replay each profiler step's window alone (default: a rank's consecutive "
    "steps as one chain, each starting where the one before it ends).",
)


@cli.command("critical-path")
@table_command
@click.option(
    "--trace-out",
    type=click.Path(dir_okay=False),
    help="Also write the path as a Chrome trace (open in Perfetto); .gz compresses.",
)
@click.option(
    "--together",
    is_flag=True,
    help="One path per step across the ranks replayed together: where a collective "
    "waited for the last rank, the path goes on on that rank.",
)
@click.option(
    "--windows",
    is_flag=True,
    help="Walk each profiler step's window alone (default: a rank's consecutive "
    "steps replayed as one chain, each step's path back to its replayed start).",
)
@click.option(
    "--by-event",
    is_flag=True,
    help="Instead of a row per path edge (millions on a long trace), the time each event "
    "name holds on each rank's paths, per category (table on_path).",
)
@click.pass_obj
def critical_path_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
    trace_out: Optional[str],
    together: bool,
    windows: bool,
    by_event: bool,
) -> None:
    """The longest path through each step's dependency graph and what bounds it: CPU, GPU
    compute, communication, kernel-to-kernel and launch overhead, data loading, host time
    the trace does not explain (untraced_host)."""
    from ...model.path.critical_path import critical_path
    from ...model.path.overlay import write_critical_path_trace

    check_format(fmt, out_dir)
    if together and trace_out:
        raise BadInput("--trace-out draws one rank's path: it does not go with --together")
    if together and by_event:
        raise BadInput("--by-event sums each rank's own path: it does not go with --together")
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    result = critical_path(
        traces,
        selection=selection(ranks, steps).of(traces),
        cross_rank=together,
        chained=not windows,
        breakdown=not by_event,
    )
    emit(*result_tables([result]), fmt, out_dir, limit, origin_ns=trace_start(traces))
    if trace_out:  # of the first rank asked for (default: the smallest)
        asked = parse_ints(ranks, "rank")
        click.echo(
            write_critical_path_trace(
                traces,
                trace_out,
                rank=asked[0] if asked else None,
                steps=pick_steps(traces, parse_steps(steps)),
                chained=not windows,
            )
        )


@cli.command("owners")
@table_command
@click.option(
    "--by-stream",
    is_flag=True,
    help="Each stream with work in a step partitioned too (its own work, and each of its "
    "idle gaps by what its next event waited for).",
)
@click.option(
    "--by-thread",
    is_flag=True,
    help="Each thread that launched GPU work in a step partitioned too (table host_owners: "
    "the innermost event it was in; a blocking call or a polling run owned by what owned "
    "the GPU meanwhile).",
)
@click.pass_obj
def owners_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
    by_stream: bool,
    by_thread: bool,
) -> None:
    """Who owns each nanosecond of each step on the GPU: compute, communication moving
    data, the wait for the last rank to arrive (named), and each idle gap by what the GPU
    waited for, in the critical path's categories (the host's op, a blocking call, untraced
    host time, GPU work the trace did not record, a one-off stall, a launch's latency). The
    owners add up to the step; table intervals has one row per owned interval."""
    from ...model.path.owners import wait_owners

    check_format(fmt, out_dir)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    chosen = selection(ranks, steps).of(traces)
    results = [wait_owners(traces, selection=chosen, by_stream=by_stream)]
    if by_thread:
        from ...model.path.host_owners import host_owners

        results.append(host_owners(traces, selection=chosen, gpu=results[0]))
    emit(*result_tables(results), fmt, out_dir, limit, origin_ns=trace_start(traces))


@cli.command("replay")
@table_command
@click.option(
    "--together",
    is_flag=True,
    help="Replay all ranks of a step together (a collective ends when the last rank "
    "has reached it), with the no-cross-rank ablation.",
)
@replay_windows_option
@click.pass_obj
def replay_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
    together: bool,
    windows: bool,
) -> None:
    """Replay each step's dependency graph with the measured durations: the replayed step
    time against the measured one (equal by construction: the graph holds the trace), and
    the ablations (kernel sum, busiest stream, no cross-stream edges, GPU only) beside it.
    The replay predicts nothing; `whatif` does (checked against real pairs of runs)."""
    from ...model.replay.ranks import replay_ranks
    from ...model.replay.steps import replay_steps

    check_format(fmt, out_dir)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    sel = selection(ranks, steps).of(traces)
    result = (replay_ranks if together else replay_steps)(
        traces, chained=not windows, selection=sel
    )
    emit(
        {result.name: result.table},
        {result.name: result.notes},
        fmt,
        out_dir,
        limit,
        origin_ns=trace_start(traces),
    )


F = TypeVar("F", bound=Callable[..., Any])

# whatif's edit options come from the edits' declarations (hta_fast.model.whatif.declared.registry).
# The click type of each kind of option (hta_fast.model.whatif.declared.declaration.OPTION_TYPES);
# text and ranks are click's plain text (ranks are parsed with the other values).
CLICK_TYPES: dict[str, Any] = {
    "float": float,
    "count": click.IntRange(min=1),
    "path": click.Path(exists=True),
    "file": click.Path(dir_okay=False, exists=True),
}


def _click_option(option: Option) -> Callable[[F], F]:
    settings: dict[str, Any] = {"help": option.help}
    if option.type == "flag":
        settings["is_flag"] = True
    if option.type in CLICK_TYPES:
        settings["type"] = CLICK_TYPES[option.type]
    if option.metavar is not None:
        settings["metavar"] = option.metavar
    if option.multiple:
        settings["multiple"] = True
    elif option.type != "flag":
        settings["default"] = option.default
    if option.show_default:
        settings["show_default"] = True
    return click.option(option.flag, option.dest, **settings)


def edit_options(command: F) -> F:
    """Adds every declared edit's options to the command, in the registry's order."""
    for edit in reversed(EDITS):  # click lists the options in the order they wrap
        for option in reversed(edit.options):
            command = _click_option(option)(command)
    return command


def _value(option: Option, value: Any) -> Any:
    return parse_ints(value, "rank") if option.type == "ranks" else value


def edits_from_options(values: Mapping[str, Any]) -> Edits:
    """The Edits the edit options' values (by their dest) make; a bad value is bad input,
    named as click names a bad parameter."""
    from ...model.whatif.edits import Edits, edit_keywords

    keywords: dict[str, Any] = {}
    try:
        for edit in EDITS:
            keywords.update(edit.build({o.dest: _value(o, values[o.dest]) for o in edit.options}))
    except OptionError as e:
        raise click.BadParameter(e.message, param_hint=e.option) from None
    try:  # the edits are checked before the traces load
        return Edits(**edit_keywords(None, keywords))
    except ValueError as e:
        raise BadInput(str(e)) from None


def _load_durations_from(edits: Edits, opts: Options, recover: bool, steps_from: str) -> Edits:
    """--durations-from's traces loaded as the command loads its own (progress, --recover,
    --steps-from)."""
    if edits.durations_from is None:
        return edits
    other, _ = load_traces(
        (edits.durations_from,),
        opts,
        recover,
        what="loading --durations-from",
        steps_from=steps_from,
    )
    return dataclasses.replace(edits, durations_from=other)


def _tables(result: Result) -> dict[str, pa.Table]:
    """The what-if's table, with the time per step the doctor and the evaluators read (the
    model computes it once, hta_fast.model.whatif.per_step), each rank's steps together where
    chained, the pairing of --durations-from and the collectives of --world-size."""
    tables = {result.name: result.table}
    for name in ("per_step", "totals", "durations_from", "world_size"):
        if name in result.tables:
            tables[name] = result.tables[name]
    return tables


@cli.command("whatif")
@table_command
@edit_options
@click.option(
    "--no-cross-rank",
    is_flag=True,
    help="Replay each rank alone (default: the ranks of a step together).",
)
@replay_windows_option
@click.pass_obj
def whatif_command(
    opts: Options,
    paths: tuple[str, ...],
    steps: Optional[str],
    ranks: Optional[str],
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
    no_cross_rank: bool,
    windows: bool,
    **edit_values: Any,
) -> None:
    """Edit the dependency graph (faster communication, a faster GPU, no launch overhead,
    an op or a loader as fast as in another run, ...) and replay it: predicted step time per
    rank and step with its band, and the bound that changed; then the time per step (table
    per_step: chained, the steps from the first one's start to the last one's end over
    their count, the figure the doctor and the evaluators use; the median and p10-p90 of
    the predicted steps after warm-up) and each rank's steps together (table totals).

    \b
    Examples:
      hta-fast whatif run/ --scale COMM=0.5          # communication twice as fast
      hta-fast whatif t.json.gz --scale-op DataLoader=0        # a loader that costs nothing
      hta-fast whatif workers0.json.gz --durations-from workers4.json.gz --match DataLoader
                                     # the loader as fast as in the run with 4 workers
      hta-fast whatif fmha.json.gz --durations-from sage.json.gz \\
          --match 'fmha_fwd=sage_fwd|sage_quant'   # another attention kernel
      hta-fast whatif run/ --world-size 16           # the job on twice the ranks
      hta-fast whatif run/ --world-size 64 --topology hgx_h100   # on 8 H100 nodes
    """
    from ...model.whatif.steps import what_if

    check_format(fmt, out_dir)
    edits = edits_from_options(edit_values)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    edits = _load_durations_from(edits, opts, recover, steps_from)
    try:
        result = what_if(
            traces,
            edits,
            cross_rank=not no_cross_rank,
            chained=not windows,
            selection=selection(ranks, steps).of(traces),
        )
    except ValueError as e:
        raise BadInput(str(e)) from None
    notes = {result.name: result.notes}
    emit(_tables(result), notes, fmt, out_dir, limit, origin_ns=trace_start(traces))
