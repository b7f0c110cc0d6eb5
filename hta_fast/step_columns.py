"""A trace's step columns (the `steps` table and events.step) from windows chosen after the
load: what Trace.with_steps builds its copy over, so that steps found another way
(hta_fast.steps.steps_from: annotated inference passes, repeated launches) stand where the
ProfilerStep#N steps stood, for every analysis, the doctor and the model alike (they all
read steps from these two columns and nowhere else).

The rule is the link pass's (csrc/trace/link_pass.cc, assign_steps), restated over numpy
because the windows are known only in Python: a CPU event takes the step of the window
that, of those starting at or before it, starts last, when it starts inside that window
(or exactly at its start); a GPU event takes its launch's step. tests/frame/test_phases.py holds
the two to each other: these columns, given the ProfilerStep#N windows of real traces, are
the core's own.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from .raw_columns import RawColumns
from .schema import GPU_KINDS


def reassigned(
    raw: RawColumns, row: np.ndarray, step: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> RawColumns:
    """raw with its steps replaced by these windows: row (in events, of the event that
    marks the step), step number, ts and dur (ns). The other columns are shared, not
    copied. Bad windows (lengths that differ, a row out of range, a negative dur) are a
    ValueError."""
    events = raw.tables["events"]
    n_events = len(events["ts"])
    row = np.asarray(row, np.int64)
    step = np.asarray(step, np.int64)
    ts = np.asarray(ts, np.int64)
    dur = np.asarray(dur, np.int64)
    if not len(row) == len(step) == len(ts) == len(dur):
        raise ValueError("steps: row, step, ts and dur must have one value per step each")
    if len(row) and (row.min() < 0 or row.max() >= min(n_events, np.iinfo(np.int32).max)):
        raise ValueError(f"steps: a row outside the trace's {n_events} events")
    if len(dur) and dur.min() < 0:
        raise ValueError("steps: a negative duration")
    if len(step) and (step.min() < 0 or step.max() > np.iinfo(np.int32).max):
        raise ValueError("steps: step numbers must be non-negative int32 values")
    tables = dict(raw.tables)
    # The core's own dtypes for the steps table (row and step are int32, as it loads them):
    # Trace.steps builds its Arrow table from these by the declared column specs.
    tables["steps"] = {
        "row": row.astype(np.int32),
        "step": step.astype(np.int32),
        "ts": ts,
        "dur": dur,
    }
    tables["events"] = {**events, "step": _event_steps(events, step, ts, dur)}
    return dataclasses.replace(raw, tables=tables)


def _event_steps(
    events: Mapping[str, np.ndarray], step: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> np.ndarray:
    ev_ts = events["ts"]
    gpu = np.isin(events["kind"], GPU_KINDS)
    out = np.full(len(ev_ts), -1, np.int32)
    if len(step) == 0:
        return out
    order = np.argsort(ts, kind="stable")
    starts, ends, numbers = ts[order], ts[order] + dur[order], step[order].astype(np.int32)
    # The last window starting at or before each event; equal starts: the later one listed.
    at = np.searchsorted(starts, ev_ts, side="right") - 1
    safe = np.maximum(at, 0)
    inside = (at >= 0) & ~gpu & ((ev_ts < ends[safe]) | (ev_ts == starts[safe]))
    out[inside] = numbers[safe[inside]]
    partner = events["partner"]
    linked = gpu & (partner >= 0)
    out[linked] = out[partner[linked]]
    return out
