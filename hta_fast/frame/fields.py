"""Field metadata and field groups shared by the analyses' Arrow schemas."""

from __future__ import annotations

import pyarrow as pa

NS = {"unit": "ns"}
PCT = {"unit": "%"}


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
