"""Per-rank numbers summed up for many ranks: a distribution per column (min, p10, median,
p90, max, and which rank holds each extreme) instead of a row per rank, and the ranks
whose step time stands out."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..._arrow import as_numpy
from ...analysis.stragglers import high_outliers
from ...frame.fields import display_unit
from .tables import cell, header, unit_of

QUANTILES = (0, 10, 50, 90, 100)
HEADERS = ["metric", "min", "p10", "median", "p90", "max", "lowest", "highest"]


def _floats(table: pa.Table, name: str) -> np.ndarray:
    # as_numpy reads a null as NaN (fill_null's scalar would import pandas)
    return np.asarray(as_numpy(pc.cast(table.column(name), pa.float64())), float)


def distribution(
    caption: str, table: pa.Table, columns: Sequence[str], labels: Sequence[str]
) -> dict[str, Any]:
    """A template table (see tables.html_table) with one row per column of `table`: its
    quantiles over the rows, and the labels of the rows holding the minimum and maximum
    (labels[i] names row i: "rank 5", "rank 5 / stream 7"). Nulls are left out."""
    names = np.asarray(labels, dtype=object)
    rows = []
    for name in columns:
        if name not in table.column_names:
            continue
        field = table.schema.field(name)
        unit = unit_of(field)
        whole = pa.types.is_integer(field.type) and unit != "ns"
        v = _floats(table, name)
        ok = np.isfinite(v)
        if not ok.any():
            rows.append([header(name, unit), *["–"] * 7])
            continue
        q = np.percentile(v[ok], QUANTILES)
        scale, shown_unit = display_unit(q.tolist()) if unit == "ns" else (1.0, "")
        shown = [cell(int(round(x)) if whole else float(x), unit, scale) for x in q]
        kept = names[ok]
        rows.append(
            [header(name, unit, shown_unit), *shown, kept[np.argmin(v[ok])], kept[np.argmax(v[ok])]]
        )
    return {
        "caption": f"{caption}: distribution over {len(names):,} rows",
        "headers": HEADERS,
        "numeric": [False, True, True, True, True, True, False, False],
        "rows": rows,
        "more": 0,
    }


def rank_labels(table: pa.Table, *keys: str) -> list[str]:
    """'rank 5', or 'rank 5 / stream 7' for keys ("rank", "stream"): names for rows."""
    cols = [table.column(k).to_pylist() for k in keys]
    return [" / ".join(f"{k} {v}" for k, v in zip(keys, row)) for row in zip(*cols)]


def per_rank_median(rank: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ranks sorted, the median of each rank's values)."""
    order = np.lexsort((value, rank))
    r, v = rank[order], np.asarray(value, float)[order]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]]) if len(r) else np.zeros(0, int)
    counts = np.diff(np.r_[starts, len(r)])
    mid = (v[starts + (counts - 1) // 2] + v[starts + counts // 2]) / 2
    return r[starts], mid


class Outlier(NamedTuple):
    rank: int
    value: float
    above_median_pct: float


def slow_outliers(ranks: np.ndarray, values: np.ndarray) -> tuple[list[Outlier], float]:
    """The ranks whose value stands out above the others' (analysis.stragglers.high_outliers,
    the doctor's rule: over median + 3 x 1.4826 x MAD and 5 % above the median), slowest
    first; and the median."""
    ok = np.isfinite(values)
    if not ok.any():
        return [], float("nan")
    v, r = values[ok], ranks[ok]
    med = float(np.median(v))
    idx = np.flatnonzero(high_outliers(v))
    idx = idx[np.lexsort((r[idx], -v[idx]))]
    return [
        Outlier(int(r[i]), float(v[i]), 100.0 * (v[i] - med) / med if med else float("nan"))
        for i in idx
    ], med
