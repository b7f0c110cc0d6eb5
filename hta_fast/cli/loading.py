"""Paths on the command line to a TraceSet, with a progress bar and warnings logged
(load_files), and the options that say how: --recover, and --steps-from, the one option that
says where the steps of analyze, doctor, report, ops, predict, critical-path, replay and
whatif come from: the profiler's ProfilerStep#N events (the default), the passes of one
inference phase, or repeated launches (hta_fast.steps.steps_from). cli.options.load_traces
hands the traces over with those steps, so --steps then numbers them and every command sees
them; this module only names the sources, so that a command without steps (info, convert)
does not import what finds them."""

from __future__ import annotations

import bisect
import dataclasses
import logging
import math
import operator
import os
import time
import warnings
from typing import Callable, Iterable, Sequence, TypeVar

import click

from ..loading.files import trace_files as files_of
from ..loading.sets import load_dir
from ..steps.pass_patterns import SOURCES
from ..traceset import TraceSet
from .app import Options
from .progress import bar

log = logging.getLogger("hta_fast")


def trace_files(paths: Sequence[str]) -> list[str]:
    """Files named, plus the trace files inside folders named, in order, each once."""
    return files_of(paths, must_exist=True)


def load_files(
    paths: Sequence[str],
    opts: Options,
    recover: bool = False,
    what: str = "loading",
) -> tuple[TraceSet, float]:
    """The TraceSet of the paths, as the profiler recorded its steps, and the seconds it
    took; loader warnings go to the log."""
    files = trace_files(paths)
    total = sum(os.path.getsize(f) for f in files)
    t0 = time.perf_counter()
    with (
        bar(opts, total=total, desc=what) as progress,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        traces = load_dir(
            files,
            recover=recover,
            cache=cached(),
            on_loaded=lambda f: progress.update(os.path.getsize(f)),
        )
    for w in caught:
        log.warning("%s", w.message)
    if recover:
        log.warning("%s", recover_summary(traces))
    return traces, time.perf_counter() - t0


def with_capture_file(
    traces: TraceSet, capture: str | None, opts: Options, recover: bool = False
) -> TraceSet:
    """The traces with the captures recorded in the file `capture` added to every rank
    (hta_fast.with_capture); the traces themselves when no file is given."""
    if capture is None:
        return traces
    from ..frame.capture_trace import with_capture

    captured, _ = load_files([capture], opts, recover, what="loading --capture")
    if len(captured) != 1:
        raise click.BadParameter(
            f"{capture!r} holds {len(captured)} traces; give one", param_hint="--capture"
        )
    return with_capture(traces, captured[captured.ranks[0]])


def recover_summary(traces: TraceSet) -> str:
    """One line: what --recover dropped or repaired, summed over ranks (Trace.counted rows of
    severity warning or error; the info rows are routine)."""
    counts: dict[str, int] = {}
    for t in traces.values():
        for name, severity, _, count in t.counted():
            if severity != "info":
                counts[name] = counts.get(name, 0) + count
    ranks = f"{len(traces)} rank(s)"
    if not counts:
        return f"--recover: {ranks} read whole, nothing dropped or repaired"
    what = ", ".join(f"{name} {n:,}" for name, n in counts.items())
    return f"--recover: {ranks}; dropped or repaired: {what} (see Trace.stats)"


@dataclasses.dataclass(frozen=True)
class IntRanges:
    """What --steps or --ranks names: sorted, disjoint, inclusive (lo, hi) bounds. Kept as
    bounds, never expanded: `--steps 0:99999999999` costs two numbers, and `pick` looks up
    only the values a trace has."""

    text: str
    bounds: tuple[tuple[int, int], ...]

    def __contains__(self, value: object) -> bool:
        try:
            v = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            return False
        i = bisect.bisect_right(self.bounds, (v, math.inf)) - 1
        return i >= 0 and self.bounds[i][0] <= v <= self.bounds[i][1]

    def count(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.bounds)

    def pick(self, values: Iterable[int]) -> list[int]:
        """The values named, sorted and distinct."""
        return sorted({int(v) for v in values if int(v) in self})


def parse_ranges(text: str | None, what: str) -> IntRanges | None:
    """'3', '1,4', '2:5' or '2-5' (2 to 5, both included), '0:3,6'; None when not given."""
    if text is None or text.strip() == "":
        return None
    parts: list[tuple[int, int]] = []
    for part in text.split(","):
        part = part.strip()
        sep = ":" if ":" in part else ("-" if "-" in part else None)
        try:
            if sep:
                a, b = part.split(sep, 1)
                lo, hi = int(a), int(b)
                if hi < lo:
                    raise click.BadParameter(
                        f"{what} range {part!r} ends before it starts", param_hint=f"--{what}s"
                    )
            else:
                lo = hi = int(part)
        except ValueError:
            raise click.BadParameter(
                f"{text!r}: expected numbers like 3, 1,4 or 2:5 (both ends included)",
                param_hint=f"--{what}s",
            ) from None
        parts.append((lo, hi))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(parts):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return IntRanges(text, tuple(merged))


# Ranks are listed (every rank named must exist, and the analyses take a list); a job has
# far fewer, so a longer list is a typo, not a wish.
MAX_RANKS = 1 << 20


def parse_ints(text: str | None, what: str) -> list[int] | None:
    """Ranks (or any numbers to be listed) as sorted distinct ints, at most MAX_RANKS."""
    ranges = parse_ranges(text, what)
    if ranges is None:
        return None
    if ranges.count() > MAX_RANKS:
        raise click.BadParameter(
            f"{text!r} names {ranges.count():,} {what}s; at most {MAX_RANKS:,} can be listed",
            param_hint=f"--{what}s",
        )
    return [v for lo, hi in ranges.bounds for v in range(lo, hi + 1)]


def parse_steps(text: str | None) -> IntRanges | None:
    """--steps: kept as ranges until the traces are loaded (pick_steps)."""
    return parse_ranges(text, "step")


def pick_steps(traces: TraceSet, steps: IntRanges | None) -> list[int] | None:
    """The profiler steps named that the traces have (a step no trace has selects nothing,
    as it did when listed); None (all) when none were named."""
    if steps is None:
        return None
    return steps.pick({s for t in traces.values() for s in t.column("steps", "step").tolist()})


def subset(traces: TraceSet, ranks: list[int] | None) -> TraceSet:
    """The ranks asked for (all when None); a rank the traces do not hold is bad input."""
    if ranks is None:
        return traces
    missing = sorted(set(ranks) - set(traces.ranks))
    if missing:
        raise click.BadParameter(
            f"no such rank(s) {missing}; the traces hold ranks {traces.ranks}", param_hint="--ranks"
        )
    return TraceSet({r: traces[r] for r in ranks})


F = TypeVar("F", bound=Callable[..., object])

STEPS_HELP = "Profiler steps: 3, 3,5 or 2:5 (both ends included). Default: all."
RANKS_HELP = "Ranks: 0, 0,3 or 0:3 (both ends included). Default: all."


def path_arguments(f: F) -> F:
    return click.argument("paths", nargs=-1, required=True, metavar="PATH...")(f)


def recover_option(f: F) -> F:
    """--recover, and --cache beside it (kept in the command's context, read where traces load)."""
    f = click.option(
        "--cache",
        is_flag=True,
        envvar="HTA_FAST_CACHE",
        expose_value=False,
        callback=lambda ctx, _param, value: ctx.meta.__setitem__(CACHE_KEY, value),
        help="Keep an Arrow copy of each trace file loaded (in HTA_FAST_CACHE_DIR, else "
        "~/.cache/hta_fast) and read that instead while the file is unchanged.",
    )(f)
    return click.option(
        "--recover",
        is_flag=True,
        help="Keep the complete events of a truncated trace instead of failing.",
    )(f)


CACHE_KEY = "hta_fast.cache"


def cached() -> bool:
    """Whether this command was given --cache (or HTA_FAST_CACHE=1)."""
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.meta.get(CACHE_KEY))


CAPTURE_HELP = (
    "A trace that recorded the graph captures whose replays these traces ran: replayed "
    "kernels then count for the operators that captured them (see docs/ops.md)."
)


def capture_option(f: F) -> F:
    return click.option(
        "--capture",
        "capture",
        type=click.Path(dir_okay=False, exists=True),
        help=CAPTURE_HELP,
    )(f)


STEPS_FROM_HELP = (
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
        help=STEPS_FROM_HELP,
    )(f)
