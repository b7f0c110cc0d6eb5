"""`hta-fast diff A B`: what changed between two runs, per step (hta_fast.analysis.trace_diff).

A headline comes first: each side's mean step, the change, the steps compared (warm-up ones
left out, and said so) and the names whose time per step changed most; then the per-name
table of time per step. A side that selects nothing is bad input (exit 2) with what to pass.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import click

from ...analysis import trace_diff
from ...analysis.trace_diff import EmptySelection, SideSteps, step_kind, steps_text
from ...frame.result import Result
from ...steps.pass_patterns import PHASES
from ...steps.steps_from import steps_from as steps_from_source
from ...steps.warmup import WARMUP_FACTOR
from ...traceset import TraceSet
from ..app import BadInput, Options, cli
from ..loading import parse_ints, parse_steps, pick_steps, recover_option, steps_from_option
from ..options import load_traces
from ..output import FORMATS, check_format, dumps, echo_table, jsonable, write_tables
from ..terminal import echo

# The sides as the command line names them, and how the options that select each begin.
LABELS = {"control": "A", "test": "B"}
OPTION_PREFIX = {"control": "--control", "test": "--test"}
# Names longer than this are cut in the headline (the table and JSON keep them whole).
NAME_WIDTH = 80


@cli.command("diff")
@click.argument("control", metavar="A")
@click.argument("test", metavar="B")
@click.option(
    "--device",
    type=click.Choice(trace_diff.DEVICES),
    default="all",
    show_default=True,
    help="Compare all events, CPU ones or GPU ones (GPU annotations listed after the work).",
)
@click.option("--control-rank", help="Ranks of A (default: its smallest).")
@click.option("--test-rank", help="Ranks of B (default: its smallest).")
@click.option(
    "--control-steps",
    help="Steps of A, e.g. 3 or 2:5, compared as given (default: every step but warm-up).",
)
@click.option(
    "--test-steps", help="Steps of B, compared as given (default: every step but warm-up)."
)
@click.option(
    "--keep-warmup",
    is_flag=True,
    help="Compare the steps that look like warm-up too (the first step, and any over "
    f"{WARMUP_FACTOR:g}x the median step).",
)
@click.option("--short-names", is_flag=True, help="Group by names without template arguments.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "-o",
    "--output",
    "out_dir",
    type=click.Path(file_okay=False),
    help="Folder for trace_diff.csv and trace_diff.steps.csv (or .parquet).",
)
@click.option(
    "--limit",
    type=int,
    default=30,
    show_default=True,
    help="Rows shown in the table format, largest change per step first (0: all).",
)
@recover_option
@steps_from_option
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
    keep_warmup: bool,
    short_names: bool,
    fmt: str,
    out_dir: Optional[str],
    limit: int,
    recover: bool,
    steps_from: str,
) -> None:
    """What changed from A to B, per step: each side's mean step and, per operator / kernel
    name, counts and time per step in A and in B.

    A and B are each a trace file or a folder of per-rank files. By default every step of
    each side is compared but those that look like warm-up: the first step, and any over
    twice the median step (--keep-warmup compares them too). --control-steps /
    --test-steps compare the steps given, as given.
    """
    check_format(fmt, out_dir)
    a = load_side(control, "control", opts, recover, steps_from)
    b = load_side(test, "test", opts, recover, steps_from)
    try:
        result = trace_diff.step_diff(
            a,
            b,
            device=device,
            use_short_name=short_names,
            control_rank=parse_ints(control_rank, "rank"),
            test_rank=parse_ints(test_rank, "rank"),
            control_steps=pick_steps(a, parse_steps(control_steps)),
            test_steps=pick_steps(b, parse_steps(test_steps)),
            keep_warmup=keep_warmup,
        )
    except EmptySelection as e:
        path, asked = (control, control_steps) if e.side == "control" else (test, test_steps)
        sources = (
            working_sources(
                [(a, parse_ints(control_rank, "rank")), (b, parse_ints(test_rank, "rank"))],
                steps_from,
            )
            if e.missing == "no_steps"
            else []
        )
        raise BadInput(in_option_terms(e, path, asked, sources)) from None
    tables = {"trace_diff": result.table, "trace_diff.steps": result["steps"]}
    if fmt in ("csv", "parquet") and out_dir:  # check_format made sure of out_dir
        for path in write_tables(tables, fmt, out_dir):
            click.echo(path)
        return
    top = headline(result, control, test)
    if fmt == "json":
        echo_json(top, result)
        return
    echo_text(top, result, device, limit)
    if out_dir:
        for path in write_tables(tables, "csv", out_dir):
            click.echo(path)


def echo_json(top: dict[str, Any], result: Result) -> None:
    doc = {
        "headline": top,
        "params": finite(result.params),
        "rows": jsonable(result.table),
        "steps": jsonable(result["steps"]),
    }
    click.echo(dumps(doc))


def echo_text(top: dict[str, Any], result: Result, device: str, limit: int) -> None:
    """The headline, how many names changed how, and the table (its first `limit` rows)."""
    for line in headline_lines(top):
        echo(line)  # names from the trace: control characters escaped
    click.echo()
    click.echo(change_counts(result.table.column("counts_change_categories").to_pylist()))
    click.echo()
    title = f"time per step by name, largest change first (B - A), device {device}"
    echo_table(title, result.table, limit or None)


def load_side(path: str, side: str, opts: Options, recover: bool, steps_from: str) -> TraceSet:
    """One side's traces, with their steps from --steps-from; a side without such steps
    says which side it is."""
    label = LABELS[side]
    try:
        traces, _ = load_traces(
            [path], opts, recover, what=f"loading {label}", steps_from=steps_from
        )
    except BadInput as e:
        raise BadInput(f"{label} ({path}): {e.format_message()}") from None
    return traces


# How each step source other than the profiler's is offered, in the order offered: the
# passes a trace names first, the whole trace as one step last.
OFFERED = {
    **{phase: f"its {phase} passes as steps" for phase in PHASES},
    "iterations": "its repeated launch sequences as steps",
    "host": "the whole trace as one step",
}


def working_sources(sides: list[tuple[TraceSet, Optional[list[int]]]], current: str) -> list[str]:
    """The step sources (OFFERED, but `current`) that find steps on the ranks compared of
    every side (the ranks asked for, else its smallest): what --steps-from may be told."""

    def finds_steps(traces: TraceSet, ranks: Optional[list[int]], source: str) -> bool:
        held = [r for r in (ranks or [min(traces.ranks)]) if r in traces.ranks]
        picked = TraceSet({r: traces[r] for r in held})
        return bool(held) and steps_from_source(picked, source).table.num_rows > 0

    return [
        source
        for source in OFFERED
        if source != current and all(finds_steps(t, r, source) for t, r in sides)
    ]


def in_option_terms(
    e: EmptySelection, path: str, asked_steps: Optional[str], sources: Sequence[str] = ()
) -> str:
    """What a side lacks, and the options that would give it something to compare (of
    --steps-from, the `sources` that find steps: working_sources)."""
    label, option = f"{LABELS[e.side]} ({path})", OPTION_PREFIX[e.side]
    ranks = ",".join(str(r) for r in e.ranks)
    if e.missing == "rank":
        missing = ",".join(str(r) for r in e.asked)
        held = ",".join(str(r) for r in e.available)
        return (
            f"{label} has no rank {missing}; it holds ranks {held}: pass {option}-rank with "
            "one of them"
        )
    if e.missing == "steps":
        return (
            f"{label} has no step {asked_steps} on rank {ranks}; its steps there are "
            f"{steps_text(e.available)}: pass {option}-steps with some of them, or leave it "
            "out to compare every step"
        )
    offered = " or ".join(f"--steps-from {s} ({OFFERED[s]})" for s in sources)
    if e.source == "profiler":
        if not offered:
            return (
                f"{label} has no ProfilerStep#N events on rank {ranks}, and no --steps-from "
                "finds steps on both sides"
            )
        return f"{label} has no ProfilerStep#N events on rank {ranks}: pass {offered}"
    return (
        f"{label} has no {step_kind(e.source)} on rank {ranks}: pass {option}-rank with a "
        "rank that has them" + (f", or {offered}" if offered else "")
    )


def headline(result: Result, control: str, test: str) -> dict[str, Any]:
    """The answer at a glance: each side's mean step and the change, what a step's time is,
    the steps compared and left out (with the figures they would give), the names each
    side gives the same work that are compared as one row (renamed), and the names whose
    time per step changed most."""
    p = result.params
    sides = {"control": side_of(p["control"]), "test": side_of(p["test"])}
    files = {"control": control, "test": test}
    means = [sides["control"].mean_step, sides["test"].mean_step]
    left_out = any(side.left_out for side in sides.values())
    return {
        "text": "mean step A -> B: " + means_text(*means),
        "step_time": step_time_meaning(sides["control"], sides["test"]),
        "change_pct": change_pct(*means),
        **{LABELS[s]: side_summary(side, files[s], p["keep_warmup"]) for s, side in sides.items()},
        "with_warmup": with_warmup(sides["control"], sides["test"]) if left_out else None,
        "top_contributors": [
            {"name": c["name"], "change_ms_per_step": c["diff_duration_per_step"] / 1e6}
            for c in p["top_contributors"]
        ],
        "renamed": [
            {"name": r["name"], "A": r["control"], "B": r["test"], "what": r["what"]}
            for r in p.get("renamed", [])
        ],
    }


def change_pct(a_ns: float, b_ns: float) -> Optional[float]:
    return 100 * (b_ns / a_ns - 1) if a_ns else None


def means_text(a_ns: float, b_ns: float) -> str:
    """'154.7 -> 128.2 ms (-17.1 %)'."""
    pct = change_pct(a_ns, b_ns)
    text = f"{ms(a_ns)} -> {ms(b_ns)} ms"
    return text + (f" ({pct:+.1f} %)" if pct is not None else "")


def with_warmup(control: SideSteps, test: SideSteps) -> dict[str, Any]:
    """The mean steps over every step, warm-up included: what --keep-warmup compares, and
    what a mean over the whole trace gives."""
    a = sum(control.times.values()) / len(control.times)
    b = sum(test.times.values()) / len(test.times)
    return {
        "text": means_text(a, b),
        "A_mean_step_ms": a / 1e6,
        "B_mean_step_ms": b / 1e6,
        "change_pct": change_pct(a, b),
    }


def side_of(params: dict[str, Any]) -> SideSteps:
    fields = {k: v for k, v in params.items() if k != "mean_step"}
    return SideSteps(**fields)


def step_time_meaning(control: SideSteps, test: SideSteps) -> str:
    """What a step's time is, in words, for the headline."""
    sources = dict.fromkeys((control.source, test.source))
    what = " / ".join(
        "its ProfilerStep#N span on the host"
        if s == "profiler"
        else f"its {s} step's span (--steps-from {s})"
        for s in sources
    )
    several = len(control.ranks) > 1 or len(test.ranks) > 1
    return what + (", the longest over the ranks" if several else "")


def side_summary(side: SideSteps, path: str, keep_warmup: bool) -> dict[str, Any]:
    return {
        "file": path,
        "ranks": side.ranks,
        "mean_step_ms": side.mean_step / 1e6,
        "steps": side.steps,
        "steps_in_trace": len(side.times),
        "left_out": [{"step": s, "warmup": side.warmup[s]} for s in side.left_out],
        "warmup_compared": [
            {"step": s, "warmup": side.warmup[s], "compared_as": why_compared(side, keep_warmup)}
            for s in side.warmup_compared
        ],
    }


def why_compared(side: SideSteps, keep_warmup: bool) -> str:
    """Why a step that looks like warm-up is compared all the same."""
    if side.asked:
        return "compared as asked"
    if keep_warmup:
        return "compared (--keep-warmup)"
    return "compared, as there is no other step"


def headline_lines(top: dict[str, Any]) -> list[str]:
    """The headline as the text format prints it, first."""
    lines = [top["text"], f"  step time: {top['step_time']}, mean over the steps compared"]
    lines += [side_line(label, top[label]) for label in ("A", "B")]
    if top["with_warmup"]:
        lines.append(
            f"  with the warm-up steps: {top['with_warmup']['text']} (--keep-warmup compares them)"
        )
    for r in top["renamed"]:
        lines.append(
            f"  one row, {r['name']}, for A's {', '.join(map(cut, r['A']))} and B's "
            f"{', '.join(map(cut, r['B']))} ({r['what']})"
        )
    if top["top_contributors"]:
        lines.append("largest changes in time per step (B - A):")
        for c in top["top_contributors"]:
            change = ms(c["change_ms_per_step"] * 1e6, sign=True)
            lines.append(f"  {change:>9} ms  {cut(c['name'])}")
    return lines


def side_line(label: str, side: dict[str, Any]) -> str:
    """One side's ranks and steps compared, and what the warm-up rule did there."""
    steps, ranks = side["steps"], ",".join(str(r) for r in side["ranks"])
    of_all = f"{len(steps)} of {side['steps_in_trace']}"
    line = f"  {label}: rank {ranks}, steps {steps_text(steps)} ({of_all})"
    if side["left_out"]:
        steps_why = ", ".join(f"step {w['step']} ({w['warmup']})" for w in side["left_out"])
        line += f"; left out as warm-up: {steps_why}"
    for w in side["warmup_compared"]:
        line += f"; step {w['step']} looks like warm-up ({w['warmup']}): {w['compared_as']}"
    return line


def ms(ns: float, sign: bool = False) -> str:
    """ns in ms as a person reads them: one decimal from 10 ms, three significant digits
    below (a synthetic trace's 0.605 ms is not 0.6)."""
    v = ns / 1e6
    plus = "+" if sign else ""
    return f"{v:{plus},.1f}" if abs(v) >= 10 else f"{v:{plus}.3g}"


def cut(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def change_counts(categories: list[str]) -> str:
    counts = {c: categories.count(c) for c in trace_diff.CHANGES}
    return ", ".join(f"{n} {c}" for c, n in counts.items()) + " names (by count per step)"


def finite(value: Any) -> Any:
    """value with NaN and infinities as None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value
