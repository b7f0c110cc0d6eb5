"""The tables a query can name, and how each is made.

Trace tables (events, kernels, steps, counters, ...) are views over the loaded Arrow
buffers, with a `rank` column first on a trace set. An analysis result is computed only when
a query names it: its main table under the analysis' name and each side table as
`NAME.SIDE` (a table SIDE in the schema NAME), as `hta-fast analyze` names them.
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple, Union

import numpy as np
import pyarrow as pa

from .._arrow import numeric
from .._named_tables import TABLE_ATTRIBUTES, NamedTables
from ..analysis.registry import ANALYSES
from ..doctor import diagnose
from ..frame.result import Result
from ..frame.select import Selection
from ..interop import tables_of
from ..model.path.critical_path import critical_path
from ..model.path.owners import wait_owners
from ..trace import Trace
from ..traceset import TraceSet

Traces = Union[Trace, TraceSet]


class TableInfo(NamedTuple):
    """name: what SQL calls it; kind: "trace" (the loaded tables), "analysis" (computed
    when named), "model" or "doctor"; about: one line."""

    name: str
    kind: str
    about: str


# `kernels` is a view: the GPU kernels of `events` with their launch arguments.
KERNELS_VIEW = (
    "CREATE VIEW kernels AS SELECT e.*, a.* EXCLUDE (row{rank}) "
    "FROM events e LEFT JOIN kernel_args a ON a.row = e.row{join} WHERE e.kind = 'kernel'"
)


def _about_trace_table(attr: str) -> str:
    doc = getattr(NamedTables, attr).__doc__ or ""
    return doc.strip().split("\n")[0]


def _doctor_findings(traces: Traces, selection: Selection) -> Result:
    """One row per cause: cost, share, the model's saving and its edit, above threshold."""
    diag = diagnose(traces, steps=selection.steps)
    rows = [
        {
            "cause": f.cause,
            "above_threshold": f.above_threshold,
            "cost_ns_per_step": f.cost_ns_per_step,
            "share": f.share,
            "saving_ns_per_step": f.saving_ns_per_step,
            "saving_edit": f.saving_edit,
            "title": f.title,
        }
        for f in diag.findings
    ]
    schema = pa.schema(
        [
            ("cause", pa.string()),
            ("above_threshold", pa.bool_()),
            pa.field("cost_ns_per_step", pa.int64(), metadata={"unit": "ns"}),
            ("share", pa.float64()),
            pa.field("saving_ns_per_step", pa.int64(), metadata={"unit": "ns"}),
            ("saving_edit", pa.string()),
            ("title", pa.string()),
        ]
    )
    return Result("doctor", pa.Table.from_pylist(rows, schema=schema), notes=list(diag.notes))


Runner = Callable[[Traces, Selection], Result]
# Results beside the analyses: the model's and the doctor's, by the names their commands use.
MODEL_RESULTS: dict[str, tuple[str, str, Runner]] = {
    "critical_path": (
        "model",
        "per (rank, step): what bounds the step, as shares (hta-fast critical-path)",
        lambda t, s: critical_path(t, selection=s),
    ),
    "owners": (
        "model",
        "per (rank, step): each owner's time of the step on the GPU, ns (hta-fast owners)",
        lambda t, s: wait_owners(t, selection=s),
    ),
    "doctor": ("doctor", "one row per cause of idle GPU time (hta-fast doctor)", _doctor_findings),
}


# An analysis whose name is also a trace table's goes by another name in SQL.
RENAMED = {"steps": "profiler_steps"}
_ANALYSES = {RENAMED.get(n, n): run for n, run in ANALYSES.items()}

TRACE_TABLES: tuple[TableInfo, ...] = (
    *(TableInfo(a, "trace", _about_trace_table(a)) for a in TABLE_ATTRIBUTES),
    TableInfo("kernels", "trace", "The GPU kernels of events, with their launch arguments."),
)
TABLES: tuple[TableInfo, ...] = (
    *TRACE_TABLES,
    *(
        TableInfo(
            RENAMED.get(n, n), "analysis", f"hta-fast analyze -a {n}; side tables as NAME.SIDE"
        )
        for n in sorted(ANALYSES)
    ),
    *(TableInfo(n, kind, about) for n, (kind, about, _) in MODEL_RESULTS.items()),
)
COMPUTED: dict[str, Runner] = {
    **_ANALYSES,
    **{n: run for n, (_, _, run) in MODEL_RESULTS.items()},
}


def tables() -> tuple[TableInfo, ...]:
    """Every table a query can name (trace tables first, then the computed results)."""
    return TABLES


def trace_tables(traces: Traces, names: Iterable[str]) -> dict[str, pa.Table]:
    """The trace's tables of these names (each built only when named), `events` with a
    `row` column (its row in the rank's events, which the *_args tables' `row` points at);
    on a trace set each with `rank` first (interop.tables_of: the ranks' chunks side by
    side, nothing copied)."""
    named = tables_of(traces, names)
    if "events" in named:
        sizes = (
            [traces.num_rows("events")]
            if isinstance(traces, Trace)
            else [traces[r].num_rows("events") for r in traces.ranks]
        )
        rows = pa.chunked_array([numeric(np.arange(n, dtype=np.int32)) for n in sizes], pa.int32())
        named["events"] = named["events"].add_column(
            0 if isinstance(traces, Trace) else 1, "row", rows
        )
    return named


def kernels_view(ranked: bool) -> str:
    """The SQL that makes `kernels` over `events` and `kernel_args` (ranked: of a trace
    set, whose tables lead with `rank`)."""
    return KERNELS_VIEW.format(
        rank=", rank" if ranked else "", join=" AND a.rank = e.rank" if ranked else ""
    )
