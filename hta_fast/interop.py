"""Handing hta_fast's Arrow tables to other tools: pandas, Polars, DuckDB.

Every Result and every Trace table is a pyarrow Table, so anything that speaks the Arrow
C stream interface (`__arrow_c_stream__`) takes it directly. The helpers here add what a
plain conversion would lose:

    to_pandas    integer columns with missing values become pandas nullable integers
                 (Int64, Int32, ...) rather than float64, so ids and ns stay exact;
                 dictionary strings become Categoricals
    to_polars    the Arrow types as Polars types (Int64, Int32, Categorical), nulls kept
    from_pandas, from_polars   back to Arrow with the original schema (types and metadata)
    duckdb       a DuckDB connection where the tables are views over the Arrow buffers:
                 queries scan them in place, nothing is copied

pandas, Polars and DuckDB are imported only when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Union

import numpy as np
import pyarrow as pa

from ._arrow import numeric
from ._named_tables import NamedTables

if TYPE_CHECKING:
    from .frame.result import Result
    from .trace import Trace
    from .traceset import TraceSet


__all__ = ["to_pandas", "to_polars", "from_pandas", "from_polars", "tables_of", "duckdb"]


# A trace set's tables lead with the file's `rank`; a table's own column of that name (the
# collective's rank argument in comm_args) is renamed to this.
ARG_RANK = "arg_rank"


def _import(module: str, extra: str) -> Any:
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(
            f"this needs {module}, which is not installed: "
            f"pip install {module} (or hta_fast[{extra}])"
        ) from None


def to_pandas(table: pa.Table) -> Any:
    """A pandas DataFrame of the table; integer columns with nulls are nullable integers."""
    pd = _import("pandas", "interop")
    df = table.to_pandas()
    nullable = {
        pa.int8(): pd.Int8Dtype(),
        pa.int16(): pd.Int16Dtype(),
        pa.int32(): pd.Int32Dtype(),
        pa.int64(): pd.Int64Dtype(),
        pa.uint8(): pd.UInt8Dtype(),
        pa.uint16(): pd.UInt16Dtype(),
        pa.uint32(): pd.UInt32Dtype(),
        pa.uint64(): pd.UInt64Dtype(),
    }
    for field in table.schema:
        if field.type in nullable and table[field.name].null_count:
            df[field.name] = table[field.name].to_pandas(types_mapper=nullable.get)
        elif pa.types.is_dictionary(field.type):
            # a trace's string columns share its whole pool as their dictionary: keep only
            # the values present, or value_counts() lists thousands of empty categories
            df[field.name] = df[field.name].cat.remove_unused_categories()
    return df


def to_polars(table: pa.Table) -> Any:
    """A Polars DataFrame of the table (Polars reads the Arrow buffers)."""
    pl = _import("polars", "interop")
    return pl.from_arrow(table)


def _restore(table: pa.Table, schema: pa.Schema) -> pa.Table:
    return table.select(schema.names).cast(schema).replace_schema_metadata(schema.metadata)


def from_pandas(df: Any, schema: pa.Schema) -> pa.Table:
    """The DataFrame as an Arrow table with `schema` (types, field metadata)."""
    return _restore(pa.Table.from_pandas(df, schema=schema, preserve_index=False), schema)


def from_polars(df: Any, schema: pa.Schema) -> pa.Table:
    """The Polars DataFrame as an Arrow table with `schema` (types, field metadata)."""
    return _restore(df.to_arrow(), schema)


def tables_of(
    source: Union["Trace", "TraceSet", "Result"], names: Optional[Iterable[str]] = None
) -> dict[str, pa.Table]:
    """Name -> Arrow table: a trace's tables, or a result's main and side tables (whatever
    has `named_tables()`); a trace set's tables with a leading `rank` column (the ranks'
    chunks side by side, not copied; a column of that name already there is `arg_rank`).
    `names`: only these of a trace's tables (each built
    only when asked for)."""
    if hasattr(source, "named_tables"):  # a Trace or a Result: one set of tables
        if names is not None and isinstance(source, NamedTables):
            return {n: getattr(source, n) for n in names}
        named: dict[str, pa.Table] = source.named_tables()
        return named if names is None else {n: named[n] for n in names}
    out: dict[str, list[pa.Table]] = {}
    for rank, trace in source.items():
        wanted = trace.named_tables() if names is None else {n: getattr(trace, n) for n in names}
        for name, t in wanted.items():
            if "rank" in t.column_names:  # an argument named rank (comm_args): kept apart
                t = t.rename_columns([ARG_RANK if c == "rank" else c for c in t.column_names])
            out.setdefault(name, []).append(
                t.add_column(0, "rank", numeric(np.full(t.num_rows, rank, np.int64)))
            )
    return {name: pa.concat_tables(parts) for name, parts in out.items()}


def duckdb(source: Union["Trace", "TraceSet", "Result"], connection: Optional[Any] = None) -> Any:
    """A DuckDB connection (a new in-memory one unless given) in which each table of
    `source` is a view of that name (see tables_of). DuckDB scans the Arrow buffers where
    they are; the connection keeps them alive."""
    db = _import("duckdb", "interop")
    con = connection if connection is not None else db.connect()
    for name, table in tables_of(source).items():
        con.register(name, table)
    return con
