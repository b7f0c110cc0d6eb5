"""Field metadata and field groups shared by the analyses' Arrow schemas."""

from __future__ import annotations

import pyarrow as pa

NS = {"unit": "ns"}
PCT = {"unit": "%"}

# A column of ns durations is shown to people in the largest of these units its typical
# (median) value reaches, ns below 1 µs: one unit per column, the same in the CLI and the
# report.
DISPLAY_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"))
# Columns in ns that are points in time, not durations: shown from the trace's start.
TIME_POINTS = frozenset({"ts", "start", "end", "first_start", "last_start"})


def display_unit(values: list) -> tuple[float, str]:
    """(scale, unit) to show these ns values in: the largest unit their median reaches."""
    sizes = sorted(abs(v) for v in values if isinstance(v, (int, float)) and v == v and v)
    if not sizes:
        return 1.0, "ns"
    median = sizes[len(sizes) // 2]
    return next(((s, u) for s, u in DISPLAY_UNITS if median >= s), (1.0, "ns"))


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
