"""Field metadata and field groups shared by the analyses' Arrow schemas."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np
import pyarrow as pa

from .._arrow import as_numpy, present_values

NS = {"unit": "ns"}
PCT = {"unit": "%"}

# A table's ns columns are shown to people in one unit, the largest of these that the
# typical (lower median) value of all of them reaches, ns below 1 µs; a larger one where
# the largest value would reach MAX_SHOWN of it (2,651.41 ms, not 2,651,409.08 µs). The
# same in the CLI and the report.
DISPLAY_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"))
MAX_SHOWN = 1e4
# Columns in ns that are points in time, not durations: shown from the trace's start.
TIME_POINTS = frozenset({"ts", "start", "end", "first_start", "last_start"})


def floats(values: Any) -> np.ndarray:
    """Values (a list with None for nulls, an Arrow or NumPy array) as float64, nulls NaN."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)):
            values = values.cast(pa.float64(), safe=False)
        return np.asarray(as_numpy(values), float)  # nulls are NaN
    if isinstance(values, np.ndarray):
        return values.astype(float)
    return np.asarray([np.nan if x is None else x for x in values], float)


def display_unit(values: Any) -> tuple[float, str]:
    """(scale, unit) to show these ns values in (a list, nulls and NaN left out, or an
    array): the largest unit their lower median reaches, raised while the largest value
    would reach MAX_SHOWN of it."""
    v = np.abs(floats(values))
    v = np.sort(v[np.isfinite(v) & (v != 0)])
    if not len(v):
        return 1.0, "ns"
    median, largest = v[(len(v) - 1) // 2], v[-1]
    units = [(1.0, "ns"), *reversed(DISPLAY_UNITS)]  # smallest first
    i = max(j for j, (s, _) in enumerate(units) if j == 0 or median >= s)
    while i + 1 < len(units) and largest >= MAX_SHOWN * units[i][0]:
        i += 1
    return units[i]


def table_unit(
    columns: Mapping[str, Any], origin_ns: Optional[int] = None
) -> tuple[float, str, dict[str, int]]:
    """One unit for all the ns columns of a table (name -> every row's values, None for a
    null), as display_unit picks it over all their values: durations as they are, points
    in time (is_time_point) from origin_ns, else from their column's first. Returns (scale,
    unit, {time-point column: the origin it is shown from})."""
    origins: dict[str, int] = {}
    pooled = []
    for name, values in columns.items():
        v = floats(values)
        if is_time_point(name):
            origins[name] = origin_ns if origin_ns is not None else _first(values)
            v = v - origins[name]
        pooled.append(v)
    scale, unit = display_unit(np.concatenate(pooled) if pooled else [])
    return scale, unit, origins


def _first(values: Any) -> int:
    """The smallest of a column's values, exactly (0 without any)."""
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        present = present_values(values)
        first = present.min().item() if len(present) else None
    else:
        seen = [x for x in values if x is not None and x == x]
        first = min(seen) if seen else None
    return 0 if first is None else first


# Columns that name a row rather than measure it: shown as written (step 1009, not 1,009),
# and a row is all zeros when its other columns are.
KEY_COLUMNS = frozenset(
    {"rank", "step", "stream", "index", "device", "pid", "tid", "example_row", "row"}
)


def duration_text(ns: float, micro: str = "us") -> str:
    """One duration in ns as people read it: s from 1 s up, ms from 1 ms up, else µs
    (spelled `micro`: "us" for terminals that may lack the µ; the report passes "µs")."""
    ns = float(ns)
    for scale, unit in DISPLAY_UNITS[:2]:
        if abs(ns) >= scale:
            return f"{ns / scale:,.2f} {unit}"
    return f"{ns / 1e3:,.1f} {micro}"


def is_time_point(name: str) -> bool:
    """Whether a ns column holds points in time (a start, an end, a *_ts) and not durations."""
    return name in TIME_POINTS or name.endswith("_ts")


def duration_stats() -> list[pa.Field]:
    """count, sum, max, min, mean, stddev of durations (ns)."""
    return [
        pa.field("count", pa.int64()),
        pa.field("sum", pa.int64(), metadata=NS),
        pa.field("max", pa.int64(), metadata=NS),
        pa.field("min", pa.int64(), metadata=NS),
        pa.field("mean", pa.float64(), metadata=NS),
        pa.field("stddev", pa.float64(), metadata=NS),
    ]
