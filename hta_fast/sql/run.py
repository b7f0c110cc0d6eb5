"""query(): one SQL statement over a trace's tables and the results it names.

The connection is sealed before the statement runs: no file or network access, no
extensions, no Python variables scanned by name, and the settings locked, so a statement
reads only the tables registered here (the SQL may come from an agent or a shared
notebook). Each table the statement names is registered in place (DuckDB scans the Arrow
buffers; nothing is copied); a computed result is computed only when named.
"""

from __future__ import annotations

from typing import Any, Optional

import pyarrow as pa

from ..frame import select
from ..frame.result import Result
from ..interop import _import
from ..trace import Trace
from .catalog import COMPUTED, TABLES, Traces, kernels_view, trace_tables

# What a sealed connection may not do (DuckDB settings).
SEALED = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "python_enable_replacements": False,
}
_TRACE_NAMES = {t.name for t in TABLES if t.kind == "trace"}


def query(traces: Traces, sql: str, *, selection: Optional[select.Selection] = None) -> Result:
    """The rows of one SQL statement (DuckDB's dialect) over the traces' tables and any
    result it names (hta_fast.sql.tables(); docs/query.md). Its notes are those of the
    results it computed, each prefixed with the result's name.

    selection   the ranks and steps the computed results cover (None: all); the trace
                tables are always whole (filter them in SQL)
    """
    if not isinstance(sql, str) or not sql.strip():
        raise ValueError("query: give one SQL statement")
    duckdb = _import("duckdb", "interop")
    sel = selection if selection is not None else select.Selection()
    try:
        bases = _names(duckdb, sql)
    except duckdb.Error as e:
        raise ValueError(f"query: the SQL does not parse: {_first_line(e)}") from None
    con = duckdb.connect(config=dict(SEALED))
    notes = _register(con, traces, bases, sel)
    con.execute("SET lock_configuration = true")
    try:
        rel = con.sql(sql)
        table = pa.table({}) if rel is None else rel.to_arrow_table()
    except duckdb.Error as e:
        raise ValueError(f"query: {_first_line(e)}{_known_names_hint(e)}") from None
    return Result("query", _plain_integers(table), notes=notes, params={"sql": sql})


def _names(duckdb: Any, sql: str) -> set[str]:
    """The table names the statement reads, a side table `NAME.SIDE` as NAME."""
    qualified = duckdb.get_table_names(sql, qualified=True)  # "a.b AS x" where aliased
    schemas = {q.split(" AS ")[0].split(".")[0].strip('"') for q in qualified if "." in q}
    return set(duckdb.get_table_names(sql)) | schemas


def _plain_integers(table: pa.Table) -> pa.Table:
    """DuckDB sums 64-bit integers into 128-bit ones, which reach Arrow as decimal(38, 0):
    back to int64 where every value fits (pandas and JSON read those as numbers)."""
    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type) and field.type.scale == 0:
            try:
                table = table.set_column(i, field.name, table.column(i).cast(pa.int64()))
            except pa.ArrowInvalid:  # too large for int64: left as it is
                pass
    return table


def _register(con: Any, traces: Traces, bases: set[str], sel: select.Selection) -> list[str]:
    """Registers what the statement names; returns the computed results' notes."""
    ranked = not isinstance(traces, Trace)  # a trace set: every table leads with rank
    wanted = {n for n in bases if n in _TRACE_NAMES}
    if "kernels" in wanted:
        wanted |= {"events", "kernel_args"}
    for name, table in trace_tables(traces, sorted(wanted - {"kernels"})).items():
        con.register(name, table)
    if "kernels" in wanted:
        con.execute(kernels_view(ranked))
    notes: list[str] = []
    for name in sorted(bases & COMPUTED.keys()):
        result = COMPUTED[name](traces, sel)
        con.register(name, result.table)
        if result.tables:
            con.execute(f'CREATE SCHEMA "{name}"')
        for side, table in result.tables.items():
            hidden = f"__{name}__{side}"
            con.register(hidden, table)
            con.execute(f'CREATE VIEW "{name}"."{side}" AS SELECT * FROM "{hidden}"')
        notes.extend(f"{name}: {n}" for n in result.notes)
    return notes


def _first_line(e: Exception) -> str:
    return str(e).strip().split("\n")[0]


def _known_names_hint(e: Exception) -> str:
    if "does not exist" not in str(e):
        return ""
    return "; the tables are: " + ", ".join(t.name for t in TABLES)
