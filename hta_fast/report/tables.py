"""Arrow tables as rows of display text for the HTML template: ns columns in µs."""

from __future__ import annotations

import math
from typing import Any, Optional, Sequence

import pyarrow as pa


def _fmt(v: Any, unit: Optional[str]) -> str:
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
        unit = (field.metadata or {}).get(b"unit", b"").decode() or None
        headers.append(f"{name} (µs)" if unit == "ns" else (f"{name} ({unit})" if unit else name))
        numeric.append(pa.types.is_integer(field.type) or pa.types.is_floating(field.type))
        cols.append([_fmt(v, unit) for v in shown.column(name).to_pylist()])
    rows = [list(r) for r in zip(*cols)] if cols else []
    return {
        "caption": caption,
        "headers": headers,
        "numeric": numeric,
        "rows": rows,
        "more": table.num_rows - shown.num_rows,
    }
