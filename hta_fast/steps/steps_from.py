"""Steps from a source other than the profiler: the windows of a rank's inference passes of
one phase, or of its repeated launches, and traces whose steps are those windows.

    source       a rank's steps are
    profiler     its ProfilerStep#N events (what a load gives)
    host         one step over its host events, with the GPU work launched in them (the
                 TensorBoard plugin's window for a trace without steps)
    iterations   the copies of its repeated launch sequence (hta_fast.steps.iterations)
    prefill, decode, mixed, denoise, forward
                 its passes of that phase (hta_fast.steps.passes, whose names
                 hta_fast.steps.pass_patterns lists)

Step numbers count a rank's windows from 0 in time order, so the n-th decode step of every
rank has the same number and cross-rank analyses line them up. with_steps hands each rank
over to Trace.with_steps, the one place where a trace's steps are set: every analysis, the
doctor, the critical path, the replay and the what-if then walk these steps.
"""

from __future__ import annotations

from typing import Union, overload

import numpy as np
import pyarrow as pa

from .._arrow import array_of, as_numpy
from ..frame import derived
from ..frame.fields import NS
from ..frame.result import Result
from ..schema import EventKind
from ..trace import Trace
from ..traceset import TraceSet
from .iterations import iterations
from .pass_patterns import SOURCES
from .passes import Passes, described, find_passes, module_calls_inside_serving

__all__ = ["SOURCES", "steps_from", "with_steps", "with_steps_from"]

# The host events that make a rank's one "host" step (as the TensorBoard plugin times a
# trace without steps: operators, annotations and Python frames).
_HOST_KINDS = (EventKind.cpu_op, EventKind.user_annotation, EventKind.python_function)

SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64()),
        pa.field("step", pa.int64()),
        pa.field("phase", pa.string()),
        pa.field("name", pa.string()),
        pa.field("row", pa.int64()),
        pa.field("ts", pa.int64(), metadata=NS),
        pa.field("end", pa.int64(), metadata=NS),
        pa.field("dur", pa.int64(), metadata=NS),
    ]
)


def _check(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"no step source {source!r}; sources are {', '.join(SOURCES)}")


def rank_windows(trace: Trace, source: str) -> tuple[Passes, str]:
    """One rank's windows from the source, and a note saying what gave them or why there
    are none."""
    _check(source)
    if source == "profiler":
        col = trace.column
        rows, ts = col("steps", "row"), col("steps", "ts")
        order = np.argsort(ts, kind="stable")
        end = ts + np.maximum(col("steps", "dur"), 0)
        n = len(rows)
        passes = Passes(
            rows[order], ts[order], end[order], np.full(n, "profiler"), np.full(n, -1, np.int64)
        )
        return passes, f"{n} ProfilerStep#N events" if n else "no ProfilerStep#N events"
    if source == "iterations":
        passes, _, note = iterations(trace)
        return passes, note
    if source == "host":
        return _host_window(trace)
    passes = find_passes(trace, (source,))
    if not len(passes.row):
        why = (
            "its module calls all run inside prefill, decode or denoising passes"
            if source == "forward" and module_calls_inside_serving(trace)
            else f"no event's name matches a {source} pattern"
        )
        return passes, f"no {source} pass: {why}"
    return passes, described(passes)


def _host_window(trace: Trace) -> tuple[Passes, str]:
    """One window over the rank's host events (the first one's start to the last end),
    marked by the first of them: GPU work belongs to it when its launch lies inside, so
    work the trace holds no launch for (queued before it, or by another process) is left
    out, as the TensorBoard plugin leaves it out of a trace without steps."""
    host = np.flatnonzero(derived.kind_mask(trace, _HOST_KINDS))
    if not len(host):
        return Passes.empty(), "no host events"
    ts = trace.column("events", "ts")[host]
    end = ts + np.maximum(trace.column("events", "dur")[host], 0)
    first = int(host[np.argmin(ts)])
    lo, hi = int(ts.min()), int(end.max())
    passes = Passes(
        np.array([first], np.int64),
        np.array([lo], np.int64),
        np.array([hi], np.int64),
        np.array(["host"]),
        np.array([-1], np.int64),
    )
    return passes, f"one step over its {len(host):,} host events ({(hi - lo) / 1e3:,.1f} us)"


def _table(rank: int, trace: Trace, passes: Passes, source: str) -> pa.Table:
    n = len(passes.row)
    name = (
        pa.nulls(n, pa.string())
        if source == "iterations"
        else trace.strings_at(trace.column("events", "name")[passes.row])
    )
    return pa.table(
        [
            np.full(n, rank, np.int64),
            np.arange(n, dtype=np.int64)
            if source != "profiler"
            else trace.column("events", "step")[passes.row].astype(np.int64),
            array_of(passes.phase.tolist(), pa.string()),
            name,
            passes.row,
            passes.ts,
            passes.end,
            passes.end - passes.ts,
        ],
        schema=SCHEMA,
    )


def _ranks(traces: Union[Trace, TraceSet]) -> TraceSet:
    return traces if isinstance(traces, TraceSet) else TraceSet({traces.rank: traces})


def steps_from(traces: Union[Trace, TraceSet], source: str) -> Result:
    """The step windows the source gives each rank: rank, step (from 0 per rank, in time
    order; the profiler's own numbers for "profiler"), phase, name (of the event that
    marks the step; null for iterations), row (of that event in events; an iteration's
    first launch), ts, end, dur (ns). Notes: per rank, what found them or why none were.
    Sources: SOURCES (module doc)."""
    _check(source)
    parts, notes = [], []
    for rank, trace in _ranks(traces).items():
        passes, note = rank_windows(trace, source)
        parts.append(_table(rank, trace, passes, source))
        notes.append(f"rank {rank}: {note}")
    table = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    return Result("steps_from", table, notes=notes, params={"source": source})


@overload
def with_steps(traces: Trace, windows: pa.Table, source: str) -> Trace: ...
@overload
def with_steps(traces: TraceSet, windows: pa.Table, source: str) -> TraceSet: ...
def with_steps(
    traces: Union[Trace, TraceSet], windows: pa.Table, source: str
) -> Union[Trace, TraceSet]:
    """The traces with each rank's steps set to its rows of `windows` (steps_from's table:
    rank, step, row, ts, dur); a rank without rows gets no steps, so that it is analysed
    whole. `source` is what the windows came from (Trace.steps_source)."""
    ranks = np.asarray(as_numpy(windows.column("rank")), np.int64)

    def one(rank: int, trace: Trace) -> Trace:
        pick = windows.take(array_of(np.flatnonzero(ranks == rank), pa.int64()))
        row, step, ts, dur = (
            np.asarray(as_numpy(pick.column(c)), np.int64) for c in ("row", "step", "ts", "dur")
        )
        return trace.with_steps(row, step, ts, dur, source)

    if isinstance(traces, Trace):
        return one(traces.rank, traces)
    return TraceSet({rank: one(rank, trace) for rank, trace in traces.items()})


@overload
def with_steps_from(traces: Trace, source: str) -> Trace: ...
@overload
def with_steps_from(traces: TraceSet, source: str) -> TraceSet: ...
def with_steps_from(traces: Union[Trace, TraceSet], source: str) -> Union[Trace, TraceSet]:
    """The traces with their steps taken from the source (steps_from, then with_steps);
    "profiler" hands them back as they are."""
    _check(source)
    if source == "profiler":
        return traces
    return with_steps(traces, steps_from(traces, source).table, source)
