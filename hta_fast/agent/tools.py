"""Each tool of the server: arguments in (JSON values), one JSON document out, on a
Workspace. The figures are those the command line's JSON gives for the same question
(doctor --json, critical-path --by-event --format json, ...); tables come cut to `limit`
rows from `offset` (bounded.table_doc), and every result says how its traces were loaded."""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from ..analysis import trace_diff
from ..analysis.ops import op_table
from ..doctor import diagnose
from ..frame.result import Result
from ..frame.select import Selection
from ..loading.rank_info import rank_info
from ..loading.slice_writer import steps_window, write_slice
from ..model.path.critical_path import critical_path as critical_path_of
from ..model.whatif.edits import Edits
from ..model.whatif.steps import what_if
from ..sql import query as sql_query
from ..sql import tables as sql_tables
from ..traceset import TraceSet
from .bounded import ROWS, finite, table_doc
from .workspace import Loaded, Workspace

Ints = Optional[Sequence[int]]


def _loaded(ws: Workspace, path: str, ranks: Ints = None) -> tuple[TraceSet, dict[str, Any]]:
    got: Loaded = ws.load(path)
    traces = got.traces
    if ranks is not None:
        missing = sorted(set(ranks) - set(traces.ranks))
        if missing:
            raise ValueError(f"no such rank(s) {missing}; the traces hold ranks {traces.ranks}")
        traces = TraceSet({r: traces[r] for r in ranks})
    return traces, {"ranks": traces.ranks, "cached": got.cached, "seconds": round(got.seconds, 3)}


def _result_doc(results: Sequence[Result], limit: int, offset: int) -> dict[str, Any]:
    """Each result's main table under its name, side tables as NAME.SIDE, and its notes
    (as `hta-fast analyze --format json` names them)."""
    tables: dict[str, Any] = {}
    notes: dict[str, list[str]] = {}
    for r in results:
        tables[r.name] = table_doc(r.table, limit, offset)
        for side, t in r.tables.items():
            tables[f"{r.name}.{side}"] = table_doc(t, limit, offset)
        notes[r.name] = list(r.notes)
    return {"tables": tables, "notes": notes}


def info(ws: Workspace, path: str) -> dict[str, Any]:
    traces, load = _loaded(ws, path)
    rows = [finite(rank_info(t)) for t in traces.values()]
    return {"ranks": rows, "load": load}


def doctor(ws: Workspace, path: str, steps: Ints = None, ranks: Ints = None) -> dict[str, Any]:
    traces, load = _loaded(ws, path, ranks)
    doc: dict[str, Any] = finite(diagnose(traces, steps=steps).to_dict())
    doc["load"] = load
    return doc


def critical_path(
    ws: Workspace,
    path: str,
    steps: Ints = None,
    ranks: Ints = None,
    limit: int = ROWS,
    offset: int = 0,
) -> dict[str, Any]:
    traces, load = _loaded(ws, path, ranks)
    result = critical_path_of(traces, selection=Selection(steps=steps), breakdown=False)
    return {**_result_doc([result], limit, offset), "load": load}


def whatif(
    ws: Workspace,
    path: str,
    scale_class: Optional[Mapping[str, float]] = None,
    scale_name: Optional[Mapping[str, float]] = None,
    scale_op: Optional[Mapping[str, float]] = None,
    scale_category: Optional[Mapping[str, float]] = None,
    cpu: float = 1.0,
    zero_launch_overhead: bool = False,
    drop_comm_waits: bool = False,
    drop_sync_waits: bool = False,
    device: Optional[str] = None,
    steps: Ints = None,
    ranks: Ints = None,
    limit: int = ROWS,
    offset: int = 0,
) -> dict[str, Any]:
    edits = Edits(
        kernel_class=scale_class or None,
        name=scale_name or None,
        op_scale=scale_op or None,
        category=scale_category or None,
        cpu=cpu,
        zero_launch_overhead=zero_launch_overhead,
        drop_comm_waits=drop_comm_waits,
        drop_sync_waits=drop_sync_waits,
        device=device,
    )
    traces, load = _loaded(ws, path, ranks)
    result = what_if(traces, edits, selection=Selection(steps=steps))
    doc = _result_doc([result], limit, offset)
    doc["tables"] = {
        k: v for k, v in doc["tables"].items() if k in (result.name, f"{result.name}.totals")
    }
    return {**doc, "load": load}


def ops(
    ws: Workspace,
    path: str,
    steps: Ints = None,
    ranks: Ints = None,
    limit: int = ROWS,
    offset: int = 0,
) -> dict[str, Any]:
    traces, load = _loaded(ws, path, ranks)
    result = op_table.op_table(traces, costs=True, selection=Selection(steps=steps))
    return {**_result_doc([result], limit, offset), "load": load}


def diff(
    ws: Workspace, control: str, test: str, limit: int = ROWS, offset: int = 0
) -> dict[str, Any]:
    a, load_a = _loaded(ws, control)
    b, load_b = _loaded(ws, test)
    result = trace_diff.step_diff(a, b)
    doc = _result_doc([result], limit, offset)
    doc["change"] = finite(result.params.get("change"))
    doc["top_contributors"] = finite(result.params.get("top_contributors"))
    return {**doc, "load": {"control": load_a, "test": load_b}}


def slice_steps(
    ws: Workspace, path: str, steps: Sequence[int], name: str, rank: Optional[int] = None
) -> dict[str, Any]:
    traces, load = _loaded(ws, path)
    chosen = traces.ranks[0] if rank is None else rank
    if chosen not in traces.ranks:
        raise ValueError(f"no such rank {chosen}; the traces hold ranks {traces.ranks}")
    trace = traces[chosen]
    out = ws.writable(name)
    counts = write_slice(trace, out, steps_window(trace, list(steps)))
    return {
        "path": str(out),
        "rank": chosen,
        "steps": list(steps),
        "events": int(counts.events),
        "flows": int(counts.flows),
        "load": load,
    }


def query(
    ws: Workspace,
    path: str,
    sql: str,
    steps: Ints = None,
    ranks: Ints = None,
    limit: int = ROWS,
    offset: int = 0,
) -> dict[str, Any]:
    traces, load = _loaded(ws, path, ranks)
    result = sql_query(traces, sql, selection=Selection(steps=steps))
    return {
        "rows": table_doc(result.table, limit, offset),
        "notes": list(result.notes),
        "load": load,
    }


def query_tables() -> dict[str, Any]:
    return {"tables": [t._asdict() for t in sql_tables()]}
