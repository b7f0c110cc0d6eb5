"""Building this package's tables: percentages with nulls where the whole is zero, and
columns gathered rank by rank."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

from ..._arrow import array_of

__all__ = ["pct", "pcts", "table_of"]


def pct(part: float, whole: float) -> Optional[float]:
    """100 * part / whole; None where whole is not positive."""
    return 100.0 * part / whole if whole > 0 else None


def pcts(part: np.ndarray, whole: np.ndarray) -> pa.Array:
    """pct() of arrays, as an Arrow array with nulls where whole is not positive."""
    whole_f = np.asarray(whole, np.float64)
    out = 100.0 * np.asarray(part, np.float64) / np.where(whole_f > 0, whole_f, 1.0)
    return array_of(out, pa.float64(), mask=whole_f <= 0)


def table_of(cols: dict[str, list], schema: pa.Schema) -> pa.Table:
    """A table from columns given as lists of parts (one per rank): numpy arrays, Arrow
    arrays or plain values."""
    if not cols[schema[0].name]:
        return schema.empty_table()
    arrays = []
    for f in schema:
        parts = cols[f.name]
        if isinstance(parts[0], pa.Array):
            arrays.append(
                pa.concat_arrays([p if p.type == f.type else p.cast(f.type) for p in parts])
            )
        elif isinstance(parts[0], np.ndarray):
            arrays.append(array_of(np.concatenate(parts), f.type))
        else:
            arrays.append(array_of(parts, f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
