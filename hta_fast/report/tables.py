"""Arrow tables as rows of display text for the HTML template: ns columns in µs."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import pyarrow as pa


def cell(v: Any, unit: Optional[str]) -> str:
    """One value as display text: ns in µs, None and NaN as a dash."""
    if v is None:
        return "–"
    if isinstance(v, float) and math.isnan(v):
        return "–"
    if unit == "ns" and isinstance(v, (int, float)):
        return f"{v / 1e3:,.1f}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:,.2f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def unit_of(field: pa.Field) -> Optional[str]:
    return (field.metadata or {}).get(b"unit", b"").decode() or None


def header(name: str, unit: Optional[str]) -> str:
    return f"{name} (µs)" if unit == "ns" else (f"{name} ({unit})" if unit else name)


def html_table(
    caption: str,
    table: pa.Table,
    columns: Optional[Sequence[str]] = None,
    limit: Optional[int] = 50,
) -> dict[str, Any]:
    """{caption, headers, numeric, rows, more}: ns columns are shown in µs (header says so)."""
    names = [c for c in (columns or table.column_names) if c in table.column_names]
    shown = table if limit is None else table.slice(0, limit)
    headers, numeric, cols = [], [], []
    for name in names:
        field = table.schema.field(name)
        unit = unit_of(field)
        headers.append(header(name, unit))
        numeric.append(pa.types.is_integer(field.type) or pa.types.is_floating(field.type))
        cols.append([cell(v, unit) for v in shown.column(name).to_pylist()])
    rows = [list(r) for r in zip(*cols)] if cols else []
    return {
        "caption": caption,
        "headers": headers,
        "numeric": numeric,
        "rows": rows,
        "more": table.num_rows - shown.num_rows,
    }
