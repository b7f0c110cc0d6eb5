"""Results an agent can read: tables cut to a number of rows, whole documents to a number
of characters, each cut said in the result (what was cut, how to get more). Figures keep
their units: a table lists the unit of each column that has one."""

from __future__ import annotations

import json
import math
from typing import Any, Optional

import pyarrow as pa

# Rows of a table returned unless asked for more, and the most a call may ask for.
ROWS = 50
MAX_ROWS = 1000
# Characters of one result's JSON; a result above it loses table rows until it fits.
MAX_CHARS = 40_000


def table_doc(table: pa.Table, limit: int = ROWS, offset: int = 0) -> dict[str, Any]:
    """{"columns", "units", "rows", "rows_total", "offset", "cut"?}: rows [offset,
    offset + limit) of the table as JSON values (NaN as null)."""
    limit = max(0, min(int(limit), MAX_ROWS))
    offset = max(0, int(offset))
    part = table.slice(offset, limit)
    doc: dict[str, Any] = {
        "columns": table.column_names,
        "units": _units(table.schema),
        "rows": finite(part.to_pylist()),
        "rows_total": table.num_rows,
        "offset": offset,
    }
    shown = offset + part.num_rows
    if shown < table.num_rows:
        doc["cut"] = (
            f"rows {offset}-{shown - 1} of {table.num_rows}: ask with offset={shown} "
            f"(and limit up to {MAX_ROWS}) for more"
        )
    return doc


def fit(doc: dict[str, Any], max_chars: int = MAX_CHARS) -> dict[str, Any]:
    """The document with its longest lists halved until its JSON is at most max_chars: a
    table's rows (the table's "cut" says which it kept and how to ask for more) or any
    other list (the document's "cut" names it). Strings are not cut."""
    cuts: list[str] = []
    while len(dumps(doc)) > max_chars:
        found = _longest_list(doc)
        if found is None:
            cuts.append(f"the result is over {max_chars:,} characters with every list emptied")
            break
        owner, key, where = found
        items = owner[key]
        keep = len(items) // 2
        owner[key] = items[:keep]
        if key == "rows" and "rows_total" in owner:
            end = owner["offset"] + keep
            owner["cut"] = (
                f"rows {owner['offset']}-{end - 1} of {owner['rows_total']} kept (results are "
                f"bounded to {max_chars:,} characters): ask with offset={end} and a smaller "
                "limit for more"
                if keep
                else f"no rows kept of {owner['rows_total']} (results are bounded to "
                f"{max_chars:,} characters): ask with a smaller limit"
            )
        else:
            cuts.append(f"{where}: {keep} of {len(items)} items kept")
    if cuts:
        doc["cut"] = cuts
    return doc


def dumps(doc: Any) -> str:
    return json.dumps(doc, default=str, allow_nan=False)


def finite(value: Any) -> Any:
    """The value with NaN and infinities as None, through dicts and lists (JSON has none)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _longest_list(doc: Any, where: str = "") -> Optional[tuple[Any, Any, str]]:
    """(the dict or list holding it, its key, its path) of the non-empty list whose JSON is
    longest."""
    best: Optional[tuple[int, tuple[Any, Any, str]]] = None
    items = doc.items() if isinstance(doc, dict) else enumerate(doc)
    for k, v in items:
        if not isinstance(v, (dict, list)):
            continue
        path = f"{where}.{k}" if isinstance(doc, dict) else f"{where}[{k}]"
        if isinstance(v, list) and v:
            size = len(dumps(v))
            if best is None or size > best[0]:
                best = (size, (doc, k, path.lstrip(".")))
        inner = _longest_list(v, path)
        if inner is not None:
            size = len(dumps(inner[0][inner[1]]))
            if best is None or size > best[0]:
                best = (size, inner)
    return None if best is None else best[1]


def _units(schema: pa.Schema) -> dict[str, str]:
    out = {}
    for field in schema:
        unit = (field.metadata or {}).get(b"unit")
        if unit:
            out[field.name] = unit.decode()
    return out
