"""The critical path as a Chrome trace to open in Perfetto (the paths of
hta_fast.model.path.critical_path, chained or window by window): each graph event of the chosen
steps as a slice (args.critical = 1 on the path) and one flow arrow per path edge that is a
wait between two events (launch, stream order, cross-stream, sync, cross-thread), so the path
can be followed across threads and streams. Slices are rebuilt from the loaded columns (name,
cat, pid, tid, ts, dur), not copied from the file, so the original args are not in it.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import Any, Optional, Union

import numpy as np

from ...frame import select
from ...trace import Trace
from ...traceset import TraceSet
from ..graph.chain import Chain
from ..graph.dependency_graph import EDGE_TYPES, DependencyGraph
from ..graph.walk import walk
from .bounds import bound_by, names_of
from .step_paths import step_paths

# The path's edges drawn as arrows: those that join two events by a wait.
ARROWS = {"launch", "kernel_kernel", "cross_stream", "sync_wait", "cross_thread", "thread_join"}


def _id(trace: Trace, value: int) -> Union[int, str]:
    name = trace.id_name(value)
    return name if name is not None else int(value)


def _events(
    trace: Trace, g: DependencyGraph, step_of: list, paths: list[np.ndarray], flow_id: int
) -> tuple[list[dict[str, Any]], int]:
    """The slices of the graph's events (step_of: each one's step) and the arrows of these
    path edges, flows numbered after flow_id."""
    on_path = np.zeros(len(g.rows), bool)
    for path in paths:
        ends = np.concatenate([g.core.src[path], g.core.dst[path]]) // 2
        on_path[ends[ends < len(g.rows)]] = True
    rows = g.rows
    names = names_of(trace, "name", rows).to_pylist()
    cats = names_of(trace, "cat", rows).to_pylist()
    pid, tid = trace.column("events", "pid")[rows], trace.column("events", "tid")[rows]
    start = trace.column("events", "ts")[rows]
    dur = np.maximum(trace.column("events", "dur")[rows], 0)
    events: list[dict[str, Any]] = []
    for i in range(len(rows)):
        events.append(
            {
                "ph": "X",
                "name": names[i] or "",
                "cat": cats[i] or "",
                "pid": _id(trace, pid[i]),
                "tid": _id(trace, tid[i]),
                "ts": start[i] / 1000,
                "dur": dur[i] / 1000,
                "args": {"critical": int(on_path[i]), "step": step_of[i]},
            }
        )
    times = g.core.measured
    for path in paths:
        for e, bound in zip(path, bound_by(g, trace, path)):
            s, d = int(g.core.src[e]), int(g.core.dst[e])
            a = s // 2
            if EDGE_TYPES[g.edge_type[e]] not in ARROWS or a >= len(g.rows):
                continue  # nesting and durations show as slices already
            flow_id += 1
            for ph, node, row in (("s", s, a), ("f", d, d // 2)):
                flow = {
                    "ph": ph,
                    "id": flow_id,
                    "name": EDGE_TYPES[g.edge_type[e]],
                    "cat": "critical_path",
                    "pid": _id(trace, pid[row]),
                    "tid": _id(trace, tid[row]),
                    "ts": times[node] / 1000,
                    "args": {"bound_by": bound},
                }
                if ph == "f":
                    flow["bp"] = "e"
                events.append(flow)
    return events, flow_id


def _drawn_steps(chain: Chain) -> list:
    """The step each of the chain's events is drawn with: its own, or the chain's first step
    for what that step carries in from a step not in the chain (window by window: the
    window's step, a carried event being drawn with each window that holds it)."""
    if chain.steps == [None]:
        return [None] * len(chain.graph.rows)
    step_col = chain.trace.column("events", "step")[chain.graph.rows]
    own = np.isin(step_col, np.array(chain.steps, np.int64))
    return np.asarray(np.where(own, step_col, chain.steps[0])).tolist()


def critical_path_trace(
    traces: Union[Trace, TraceSet],
    *,
    rank: Optional[int] = None,
    steps: Optional[list[int]] = None,
    chained: bool = True,
) -> dict[str, Any]:
    """The Chrome trace document (a dict) of one rank's critical paths. chained (default):
    the paths of hta_fast.model.path.critical_path's chained steps (each from the step's end
    back to its replayed start), each event drawn once with its own step; False: each step's
    window alone (an event carried over into a step is drawn with each window holding it)."""
    ts_set = select.as_traceset(traces)
    if rank is None:
        if len(ts_set.ranks) != 1:
            raise ValueError(f"the traces hold ranks {ts_set.ranks}: pass rank= to pick one")
        rank = ts_set.ranks[0]
    sel = select.Selection(ranks=[rank], steps=steps)
    events: list[dict[str, Any]] = []
    flow_id = 0
    for chain in walk(traces, sel, chained):
        g = chain.graph
        paths = [p for p, _ in step_paths(chain, g.weight, g.replay())]
        drawn, flow_id = _events(chain.trace, g, _drawn_steps(chain), paths, flow_id)
        events += drawn
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_critical_path_trace(
    traces: Union[Trace, TraceSet],
    path: Union[str, os.PathLike],
    *,
    rank: Optional[int] = None,
    steps: Optional[list[int]] = None,
    chained: bool = True,
) -> str:
    """Writes critical_path_trace(...) as JSON (gzip when path ends in .gz); returns the path."""
    doc = critical_path_trace(traces, rank=rank, steps=steps, chained=chained)
    data = json.dumps(doc).encode()
    out = os.fspath(path)
    with gzip.open(out, "wb") if out.endswith(".gz") else open(out, "wb") as f:
        f.write(data)
    return out
