"""A capture recorded in another trace, given beside the trace whose graph replays it explains.

A program often captures its graphs once, before the profiler starts (warm-up, a serving
engine's start-up), and only replays them while it profiles. A trace of the capture (a run
profiled from the start, or the same program's start-up) then says which operators made the
launches. with_capture returns a copy of the trace with the capture's CPU side added: every
captured launch (frame.graph_captures) and the CPU events around it (operators, annotations,
Python frames, with their shapes), on a thread of their own, so every analysis finds the
capturing operators as it finds the trace's own.

The added events are placed to end just before the trace's first graph launch (a capture
precedes its replays; their own clock is another run's), belong to no profiler step, and
queue no GPU work. Their correlation and External ids are moved past the trace's, so they
match none of its events. The trace's own rows, ids and strings are unchanged: the copy
appends rows and strings, it never renumbers.
"""

from __future__ import annotations

import os
from typing import Mapping, Union, overload

import numpy as np
import pyarrow.compute as pc

from .._arrow import array_of, as_numpy, starts_with
from ..schema import KernelClass
from ..trace import Trace
from ..traceset import TraceSet
from .graph_captures import graph_captures
from .graph_replays import graph_replays
from .launches import ancestor_pairs

__all__ = ["with_capture", "added_rows"]

# The capture ends this long before the first replay (ns).
GAP_NS = 1_000
# The thread name of the added events' threads begins so (then the capture file's name).
ADDED_THREAD = "graph capture from "
_EVENT_STRINGS = ("name", "cat")
_OP_ARG_STRINGS = ("input_dims", "input_type", "input_strides", "concrete_inputs")
# ids that link events to each other; the capture's would link to the trace's by chance
_OP_ARG_IDS = ("record_function_id", "sequence_number", "fwd_thread_id", "ev_idx")


@overload
def with_capture(traces: Trace, capture: Trace) -> Trace: ...
@overload
def with_capture(traces: TraceSet, capture: Trace) -> TraceSet: ...
def with_capture(traces: Union[Trace, TraceSet], capture: Trace) -> Union[Trace, TraceSet]:
    """A copy of the trace (of each rank, for a TraceSet) with the CPU side of the graph
    captures recorded in `capture` added: each captured launch and the events around it
    (operators with their shapes, annotations, Python frames), on a thread of their own,
    ending just before the trace's first graph launch, in no profiler step. The trace's
    graph replays are then matched to those captures, and their GPU work counts for the
    operators that captured it. The trace's own rows, ids and strings are unchanged; with
    no capture in `capture` the copy holds the trace's own events only."""
    if isinstance(traces, TraceSet):
        return TraceSet({rank: _with_capture(traces[rank], capture) for rank in traces.ranks})
    return _with_capture(traces, capture)


def _with_capture(trace: Trace, capture: Trace) -> Trace:
    found = graph_captures(capture)
    rows = found.launch
    if len(rows):
        # every event around a captured launch but the capture's profiler steps: the
        # trace has steps of its own, and the added events belong to none of them
        around = np.ones(capture.num_rows("events"), bool)
        around[capture.column("steps", "row")] = False
        _, anc = ancestor_pairs(capture, rows, around)
        rows = np.unique(np.r_[rows, anc])
    strings = _Strings(trace, capture)
    tables = {
        "events": _events(trace, capture, rows, strings),
        "op_args": _op_args(trace, capture, rows, strings),
        "meta": _meta(trace, capture, rows, strings),
    }
    return trace.copy(tables, strings.added)


class _Strings:
    """The trace's pool with the capture's strings added where the trace lacks them."""

    def __init__(self, trace: Trace, capture: Trace):
        self.trace, self.capture = trace, capture
        self.added: list[str] = []
        self.ids: dict[int, int] = {}

    def of(self, capture_ids: np.ndarray) -> np.ndarray:
        """The trace's ids of these capture string ids (-1 stays -1)."""
        ids = np.asarray(capture_ids, np.int64)
        wanted = np.unique(ids[ids >= 0])
        new = np.array([i for i in wanted.tolist() if i not in self.ids], np.int64)
        if len(new):
            texts = self.capture.strings.take(array_of(new))
            at = as_numpy(pc.index_in(texts, value_set=self.trace.strings))
            base = len(self.trace.strings) + len(self.added)
            for i, text, j in zip(new.tolist(), texts.to_pylist(), at.tolist()):
                if j is None or j != j:  # not in the trace's pool: add it
                    self.ids[i] = base
                    self.added.append(text)
                    base += 1
                else:
                    self.ids[i] = int(j)
        return self.map(ids)

    def map(self, ids: np.ndarray) -> np.ndarray:
        out = np.full(len(ids), -1, np.int64)
        ok = ids >= 0
        out[ok] = [self.ids[i] for i in ids[ok].tolist()]
        return out

    def text(self, value: str) -> int:
        """The id of a string of our own, added when the pool lacks it."""
        at = pc.index(self.trace.strings, value).as_py()
        if at >= 0:
            return int(at)
        if value not in self.added:
            self.added.append(value)
        return len(self.trace.strings) + self.added.index(value)


def _past(values: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Ids moved past every id in `after`; -1 (none) stays -1."""
    top = int(after.max(initial=-1)) + 1
    return np.where(values >= 0, values + top, -1).astype(values.dtype)


def _events(
    trace: Trace, capture: Trace, rows: np.ndarray, strings: _Strings
) -> Mapping[str, np.ndarray]:
    own = trace.columns("events")
    theirs = capture.columns("events")
    n = len(own["ts"])
    position = np.full(capture.num_rows("events"), -1, np.int64)
    position[rows] = n + np.arange(len(rows))
    ts, dur = theirs["ts"][rows], np.maximum(theirs["dur"][rows], 0)
    shift = _anchor(trace) - GAP_NS - int((ts + dur).max(initial=0))
    parent = theirs["parent"][rows]
    added: dict[str, np.ndarray] = {
        "ts": ts + shift,
        "dur": theirs["dur"][rows],
        "name": strings.of(theirs["name"][rows]).astype(np.int32),
        "cat": strings.of(theirs["cat"][rows]).astype(np.int32),
        "pid": np.full(len(rows), _pid(trace), np.int64),
        "tid": _thread_of(trace, theirs, rows),
        "kind": theirs["kind"][rows],
        "kernel_class": np.full(len(rows), KernelClass.NONE, np.uint8),
        "device": np.full(len(rows), -1, np.int32),
        "stream": np.full(len(rows), -1, np.int32),
        "correlation": _past(theirs["correlation"][rows], own["correlation"]),
        "external_id": _past(theirs["external_id"][rows], own["external_id"]),
        "partner": np.full(len(rows), -1, np.int64),
        "parent": np.where(parent >= 0, position[np.maximum(parent, 0)], -1),
        "step": np.full(len(rows), -1, np.int32),
    }
    return {c: np.r_[own[c], added[c].astype(own[c].dtype)] for c in own}


def _op_args(
    trace: Trace, capture: Trace, rows: np.ndarray, strings: _Strings
) -> Mapping[str, np.ndarray]:
    own = trace.columns("op_args")
    theirs = capture.columns("op_args")
    n = trace.num_rows("events")
    position = np.full(capture.num_rows("events"), -1, np.int64)
    position[rows] = n + np.arange(len(rows))
    src = np.flatnonzero(position[theirs["row"]] >= 0) if len(theirs["row"]) else np.zeros(0, int)
    added: dict[str, np.ndarray] = {"row": position[theirs["row"][src]]}
    for c in _OP_ARG_STRINGS:
        added[c] = strings.of(theirs[c][src])
    for c in _OP_ARG_IDS:
        added[c] = np.full(len(src), -1, np.int64)
    return {c: np.r_[own[c], added[c].astype(own[c].dtype)] for c in own}


def added_rows(trace: Trace) -> np.ndarray:
    """Per events row: whether with_capture added it from a capture trace (its thread is one
    named ADDED_THREAD...). The capture's annotations are not the trace's own passes or
    steps, though they sit on its timeline."""
    # A thread name is a string of the pool: a pool without the prefix names no such
    # thread, and its thread names (a table built a rank) need not be read.
    if not starts_with(trace.strings, ADDED_THREAD).any():
        return np.zeros(trace.num_rows("events"), bool)
    tids = [tid for (_, tid), name in trace.thread_names.items() if name.startswith(ADDED_THREAD)]
    if not tids:
        return np.zeros(trace.num_rows("events"), bool)
    return np.isin(trace.column("events", "tid"), np.asarray(tids, np.int64))


def _meta(
    trace: Trace, capture: Trace, rows: np.ndarray, strings: _Strings
) -> Mapping[str, np.ndarray]:
    """A thread_name for each thread of the added events, saying where they came from."""
    own = trace.columns("meta")
    tids = np.unique(_thread_of(trace, capture.columns("events"), rows))
    if not len(tids):
        return own
    source = os.path.basename(capture.meta.path) if capture.meta.path else "another trace"
    label = f"{ADDED_THREAD}{source}"
    added: dict[str, np.ndarray] = {
        "name": np.full(len(tids), strings.text("thread_name"), np.int32),
        "pid": np.full(len(tids), _pid(trace), np.int64),
        "tid": tids,
        "value": np.full(len(tids), strings.text(label), np.int32),
        "sort_index": np.full(len(tids), -1, np.int64),
    }
    return {c: np.r_[own[c], added[c].astype(own[c].dtype)] for c in own}


def _anchor(trace: Trace) -> int:
    """The start of the trace's first graph launch; the trace's start without one."""
    replays = graph_replays(trace)
    ts = trace.column("events", "ts")
    if replays.total:
        return int(ts[replays.launch].min())
    return int(ts.min(initial=0))


def _pid(trace: Trace) -> int:
    """The process of the trace's first graph launch (its host process); 0 without one."""
    replays = graph_replays(trace)
    if replays.total:
        return int(trace.column("events", "pid")[replays.launch[0]])
    return 0


def _thread_of(trace: Trace, theirs: Mapping[str, np.ndarray], rows: np.ndarray) -> np.ndarray:
    """A thread id of the trace's process for each capture thread, unused by the trace."""
    if not len(rows):
        return np.zeros(0, np.int64)
    top = int(trace.column("events", "tid").max(initial=0)) + 1
    _, code = np.unique(
        np.c_[theirs["pid"][rows], theirs["tid"][rows]], axis=0, return_inverse=True
    )
    return (top + code.reshape(-1)).astype(np.int64)
