"""Arrow tables as rows of display text for the HTML template: a table's ns columns in the one
ms, µs or s that suits them all (frame.fields.table_unit, as the command line shows them)."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ...frame.fields import KEY_COLUMNS, table_unit


def cell(v: Any, unit: Optional[str], scale: float = 1e3) -> str:
    """One value as display text: ns divided by `scale` (the column's display unit), None
    and NaN as a dash."""
    if v is None:
        return "–"
    if isinstance(v, float) and math.isnan(v):
        return "–"
    if unit == "ns" and isinstance(v, (int, float)):
        return f"{v / scale:,.{0 if scale == 1 else 2}f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def unit_of(field: pa.Field) -> Optional[str]:
    return (field.metadata or {}).get(b"unit", b"").decode() or None


def header(name: str, unit: Optional[str], shown: str = "µs") -> str:
    return f"{name} ({shown})" if unit == "ns" else (f"{name} ({unit})" if unit else name)


def html_table(
    caption: str,
    table: pa.Table,
    columns: Optional[Sequence[str]] = None,
    limit: Optional[int] = 50,
) -> dict[str, Any]:
    """{caption, headers, numeric, rows, more, zero_rows}: every ns column in the table's one
    display unit (the headers say which), points in time from the column's first. Rows
    whose measures are all zero (or missing) are left out where others are not, and counted
    in zero_rows: a table of idle times per stream lists the streams that were idle."""
    names = [c for c in (columns or table.column_names) if c in table.column_names]
    table, zero_rows = _without_zero_rows(table, names)
    shown = table if limit is None else table.slice(0, limit)
    # One unit for every ns column shown, chosen over all the rows (frame.fields.table_unit).
    scale, shown_unit, origins = table_unit(
        {n: table.column(n) for n in names if unit_of(table.schema.field(n)) == "ns"}
    )
    headers, numeric, cols = [], [], []
    for name in names:
        field = table.schema.field(name)
        unit = unit_of(field)
        values = shown.column(name).to_pylist()
        if unit in RATES:  # FLOP/s and B/s in the T and G a person compares with a datasheet
            rate_scale, unit = RATES[unit]
            values = [None if v is None else v / rate_scale for v in values]
        if name in origins:  # a point in time: from the column's first
            values = [None if v is None else v - origins[name] for v in values]
        since = " from the first" if name in origins else ""
        headers.append(header(name, unit, shown_unit + since))
        numeric.append(pa.types.is_integer(field.type) or pa.types.is_floating(field.type))
        key = name in KEY_COLUMNS  # a step or a pid is a name: 1009, not 1,009
        cols.append([str(v) if key and type(v) is int else cell(v, unit, scale) for v in values])
    rows = [list(r) for r in zip(*cols)] if cols else []
    return {
        "caption": caption,
        "headers": headers,
        "numeric": numeric,
        "rows": rows,
        "more": table.num_rows - shown.num_rows,
        "zero_rows": zero_rows,
    }


RATES = {"FLOP/s": (1e12, "TFLOP/s"), "B/s": (1e9, "GB/s")}


def _without_zero_rows(table: pa.Table, names: Sequence[str]) -> tuple[pa.Table, int]:
    measures = [
        n
        for n in names
        if n not in KEY_COLUMNS
        and (
            pa.types.is_integer(table.schema.field(n).type)
            or pa.types.is_floating(table.schema.field(n).type)
        )
    ]
    if not measures or table.num_rows < 2:
        return table, 0
    nonzero = None
    for n in measures:
        col = pc.fill_null(pc.not_equal(table[n], 0), False)
        nonzero = col if nonzero is None else pc.or_(nonzero, col)
    kept = int(pc.sum(nonzero).as_py() or 0)
    if kept == 0 or kept == table.num_rows:
        return table, 0
    return table.filter(nonzero), table.num_rows - kept
