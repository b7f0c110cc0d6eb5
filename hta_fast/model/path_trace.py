"""The critical path as a Chrome trace to open in Perfetto: each graph event of the chosen
steps as a slice (args.critical = 1 on the path) and one flow arrow per path edge that is a
wait between two events (launch, stream order, cross-stream, sync, cross-thread), so the path
can be followed across threads and streams. Slices are rebuilt from the loaded columns (name, cat, pid, tid,
ts, dur), not copied from the file, so the original args are not in it.
"""
from __future__ import annotations

import gzip
import json
import os
from typing import Any, Optional, Union

import numpy as np

from ..analysis import select
from ..trace import Trace
from ..traceset import TraceSet
from .dependency_graph import EDGE_TYPES
from .path_bounds import bound_by, names_of
from .windows import each_window


# The path's edges drawn as arrows: those that join two events by a wait.
ARROWS = {"launch", "kernel_kernel", "cross_stream", "sync_wait", "cross_thread", "thread_join"}


def _id(trace: Trace, value: int) -> Union[int, str]:
    name = trace.id_name(value)
    return name if name is not None else int(value)


def critical_path_trace(traces: Union[Trace, TraceSet], *, rank: Optional[int] = None,
                        steps: Optional[list[int]] = None) -> dict[str, Any]:
    """The Chrome trace document (a dict) of one rank's critical paths."""
    ts_set = select.as_traceset(traces)
    if rank is None:
        if len(ts_set.ranks) != 1:
            raise ValueError(f"the traces hold ranks {ts_set.ranks}: pass rank= to pick one")
        rank = ts_set.ranks[0]
    sel = select.Selection(ranks=[rank], steps=steps)
    events: list[dict[str, Any]] = []
    flow_id = 0
    for w in each_window(traces, sel):
        g, trace = w.graph, w.trace
        path = g.critical_path()
        on_path = np.zeros(len(g.rows), bool)
        ends = np.concatenate([g.core.src[path], g.core.dst[path]]) // 2
        on_path[ends[ends < len(g.rows)]] = True
        names = names_of(trace, "name", g.rows).to_pylist()
        cats = names_of(trace, "cat", g.rows).to_pylist()
        pid, tid = trace.column("events", "pid")[g.rows], trace.column("events", "tid")[g.rows]
        start = trace.column("events", "ts")[g.rows]
        dur = np.maximum(trace.column("events", "dur")[g.rows], 0)
        for i in range(len(g.rows)):
            events.append({"ph": "X", "name": names[i] or "", "cat": cats[i] or "",
                           "pid": _id(trace, pid[i]), "tid": _id(trace, tid[i]),
                           "ts": start[i] / 1000, "dur": dur[i] / 1000,
                           "args": {"critical": int(on_path[i]), "step": w.step}})
        times = g.core.measured
        bounds = bound_by(g, trace, path)
        for e, bound in zip(path, bounds):
            s, d = int(g.core.src[e]), int(g.core.dst[e])
            a = s // 2
            if EDGE_TYPES[g.edge_type[e]] not in ARROWS or a >= len(g.rows):
                continue  # nesting and durations show as slices already
            flow_id += 1
            for ph, node, row in (("s", s, a), ("f", d, d // 2)):
                flow = {"ph": ph, "id": flow_id, "name": EDGE_TYPES[g.edge_type[e]],
                        "cat": "critical_path", "pid": _id(trace, pid[row]),
                        "tid": _id(trace, tid[row]), "ts": times[node] / 1000,
                        "args": {"bound_by": bound}}
                if ph == "f":
                    flow["bp"] = "e"
                events.append(flow)
    return {"traceEvents": events, "displayTimeUnit": "ns"}


def write_critical_path_trace(traces: Union[Trace, TraceSet], path: Union[str, os.PathLike], *,
                              rank: Optional[int] = None, steps: Optional[list[int]] = None) -> str:
    """Writes critical_path_trace(...) as JSON (gzip when path ends in .gz); returns the path."""
    doc = critical_path_trace(traces, rank=rank, steps=steps)
    data = json.dumps(doc).encode()
    out = os.fspath(path)
    with (gzip.open(out, "wb") if out.endswith(".gz") else open(out, "wb")) as f:
        f.write(data)
    return out
