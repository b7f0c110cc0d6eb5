"""`hta-fast critical-path`, `hta-fast owners`, `hta-fast replay` and `hta-fast whatif`: the
dependency-graph model (hta_fast.model.path.critical_path, hta_fast.model.path.owners,
hta_fast.model.replay.steps, hta_fast.model.whatif.steps.what_if with
hta_fast.model.whatif.edits.Edits)."""

from __future__ import annotations

import dataclasses
import re
from typing import Optional

import click

from .app import BadInput, Options, cli
from .loading import parse_ints, parse_steps, pick_steps
from .options import load_traces, result_tables, selection, table_command
from .output import check_format, emit, trace_start


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
    from ..model.path.critical_path import critical_path
    from ..model.path.overlay import write_critical_path_trace

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
    from ..model.path.owners import wait_owners

    check_format(fmt, out_dir)
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    chosen = selection(ranks, steps).of(traces)
    results = [wait_owners(traces, selection=chosen, by_stream=by_stream)]
    if by_thread:
        from ..model.path.host_owners import host_owners

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
@click.option(
    "--windows",
    is_flag=True,
    help="Replay each profiler step's window alone (default: a rank's consecutive "
    "steps as one chain, each starting where the one before it ends).",
)
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
    from ..model.replay.ranks import replay_ranks
    from ..model.replay.steps import replay_steps

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


def _factors(pairs: tuple[str, ...], what: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in pairs:
        key, sep, value = pair.rpartition("=")
        try:
            out[key] = float(value)
        except ValueError:
            key = ""
        if not sep or not key:
            raise click.BadParameter(
                f"{pair!r}: expected KEY=FACTOR, e.g. COMM=0.5", param_hint=what
            )
    return out


def _match(pairs: tuple[str, ...]) -> Optional[dict[str, str]]:
    """--match REGEX[=REGEX_B] as {REGEX: REGEX_B}; an escaped \\= stays in the pattern."""
    if not pairs:
        return None
    out = {}
    for pair in pairs:
        parts = re.split(r"(?<!\\)=", pair, maxsplit=1)
        here = parts[0].replace("\\=", "=")
        there = parts[1].replace("\\=", "=") if len(parts) > 1 else here
        if not here or not there:
            raise click.BadParameter(
                f"{pair!r}: expected REGEX or REGEX=REGEX_B", param_hint="--match"
            )
        out[here] = there
    return out


def _bandwidth(text: Optional[str]) -> tuple[Optional[float], Optional[float]]:
    """--comm-bandwidth: "2" or "2x" -> (scale, None); "150GB/s" -> (None, bus GB/s)."""
    if text is None:
        return None, None
    t = text.strip().lower().replace(" ", "")
    busbw = t.endswith("gb/s") or t.endswith("gbps")
    number = t.removesuffix("gb/s").removesuffix("gbps").removesuffix("x")
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise click.BadParameter(
            f"{text!r}: expected a positive scale (2, 2x) or a bus bandwidth (150GB/s)",
            param_hint="--comm-bandwidth",
        )
    return (None, value) if busbw else (value, None)


@cli.command("whatif")
@table_command
@click.option(
    "--scale",
    "classes",
    multiple=True,
    metavar="CLASS=F",
    help="Scale GPU time of a kernel class: COMM, COMP or MEM (repeatable).",
)
@click.option(
    "--scale-name",
    "names",
    multiple=True,
    metavar="REGEX=F",
    help="Scale GPU events whose name matches (repeatable).",
)
@click.option(
    "--scale-category",
    "categories",
    multiple=True,
    metavar="CAT=F",
    help="Scale events of a trace category, e.g. cpu_op=0.5 (repeatable).",
)
@click.option(
    "--scale-op",
    "ops",
    multiple=True,
    metavar="REGEX=F",
    help="CPU ops whose name matches take F times as long, with everything nested under "
    "them on their thread; F=0: they cost nothing (repeatable).",
)
@click.option(
    "--durations-from",
    "durations_from",
    type=click.Path(exists=True),
    default=None,
    help="With --match: events that match take the durations this other trace (a file or "
    "a folder of ranks) measured for its matching events.",
)
@click.option(
    "--match",
    "matches",
    multiple=True,
    metavar="REGEX[=REGEX_B]",
    help="With --durations-from: events here whose name matches REGEX pair with events "
    "there matching REGEX_B (default: the same REGEX); write a literal = in a pattern "
    "as \\= (repeatable).",
)
@click.option("--cpu", type=float, default=1.0, show_default=True, help="Scale CPU time.")
@click.option("--zero-launch-overhead", is_flag=True, help="Launches cost nothing (CUDA graphs).")
@click.option(
    "--drop-comm-waits",
    is_flag=True,
    help="Nothing waits on communication (perfect overlap bound).",
)
@click.option(
    "--drop-sync-waits",
    is_flag=True,
    help="Blocking syncs return at once: the host never waits for the GPU.",
)
@click.option(
    "--edit-ranks",
    help="Apply the edits (not --comm-bandwidth) to these ranks only, "
    "e.g. 0,3 or 0-3 (default: all).",
)
@click.option(
    "--no-cross-rank",
    is_flag=True,
    help="Replay each rank alone (default: the ranks of a step together).",
)
@click.option(
    "--windows",
    is_flag=True,
    help="Replay each profiler step's window alone (default: a rank's consecutive "
    "steps as one chain, each starting where the one before it ends).",
)
@click.option(
    "--comm-bandwidth",
    metavar="S|GBPS",
    default=None,
    help="Interconnect bandwidth through the collective cost model fitted to the "
    "trace: a scale (2 or 2x: twice as fast) or a bus bandwidth (150GB/s).",
)
@click.option(
    "--device",
    default=None,
    help="This step on another GPU (device table key or name): kernels take the "
    "times `hta-fast predict` gives there.",
)
@click.option(
    "--source-device",
    default=None,
    help="With --device: the trace's own GPU, when its header does not name it.",
)
@click.option(
    "--devices-file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="With --device: a JSON device table tried before the built-in one.",
)
@click.option(
    "--world-size",
    "world_size",
    type=click.IntRange(min=1),
    default=None,
    help="The job at N ranks of data parallelism (the same batch per rank): each "
    "collective re-costed by the collective model for N ranks, its slowest-rank wait "
    "grown; compute unchanged (table world_size).",
)
@click.option(
    "--topology",
    default=None,
    metavar="FILE|NAME",
    help="Run on another machine: a topology JSON file or a shipped name (hgx_h100, "
    "dgx_a100, ...; see `hta-fast comm-model`); default: the recorded machine.",
)
@click.option(
    "--recorded-topology",
    "recorded_topology",
    default=None,
    metavar="FILE|NAME",
    help="With --world-size / --topology: the recorded machine's topology, where the "
    "trace's GPU does not call for the right one.",
)
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
    classes: tuple[str, ...],
    names: tuple[str, ...],
    categories: tuple[str, ...],
    ops: tuple[str, ...],
    durations_from: Optional[str],
    matches: tuple[str, ...],
    cpu: float,
    zero_launch_overhead: bool,
    drop_comm_waits: bool,
    drop_sync_waits: bool,
    edit_ranks: Optional[str],
    no_cross_rank: bool,
    windows: bool,
    comm_bandwidth: Optional[str],
    device: Optional[str],
    source_device: Optional[str],
    devices_file: Optional[str],
    world_size: Optional[int],
    topology: Optional[str],
    recorded_topology: Optional[str],
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
    from ..model.whatif.edits import Edits
    from ..model.whatif.steps import what_if

    check_format(fmt, out_dir)
    scale, busbw = _bandwidth(comm_bandwidth)
    try:  # the edits are checked before the traces load
        edits = Edits(
            kernel_class=_factors(classes, "--scale") or None,
            name=_factors(names, "--scale-name") or None,
            category=_factors(categories, "--scale-category") or None,
            op_scale=_factors(ops, "--scale-op") or None,
            durations_from=durations_from,
            match=_match(matches),
            cpu=cpu,
            zero_launch_overhead=zero_launch_overhead,
            drop_comm_waits=drop_comm_waits,
            drop_sync_waits=drop_sync_waits,
            collective_bandwidth=scale,
            collective_busbw_gbps=busbw,
            edit_ranks=parse_ints(edit_ranks, "rank"),
            device=device,
            source_device=source_device,
            devices_file=devices_file,
            world_size=world_size,
            topology=topology,
            recorded_topology=recorded_topology,
        )
    except ValueError as e:
        raise BadInput(str(e)) from None
    traces, _ = load_traces(paths, opts, recover, steps_from=steps_from)
    if durations_from is not None:
        other, _ = load_traces(
            (durations_from,),
            opts,
            recover,
            what="loading --durations-from",
            steps_from=steps_from,
        )
        edits = dataclasses.replace(edits, durations_from=other)
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
    tables = {result.name: result.table}
    # the time per step the doctor and the evaluators read (the model computes it once,
    # hta_fast.model.whatif.per_step), and each rank's steps together where chained
    for name in ("per_step", "totals", "durations_from", "world_size"):
        if name in result.tables:
            tables[name] = result.tables[name]
    emit(tables, {result.name: result.notes}, fmt, out_dir, limit, origin_ns=trace_start(traces))
