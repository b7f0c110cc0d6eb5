"""Fewer points for plots, never for numbers: the figures of big traces keep each bucket's
minimum and maximum (so peaks stay visible); tables and statistics use every row."""

from __future__ import annotations

import numpy as np


def min_max(x: np.ndarray, y: np.ndarray, max_points: int) -> tuple[np.ndarray, np.ndarray]:
    """At most ~max_points of (x, y), in x order: per bucket of consecutive points, the
    points holding its minimum and its maximum y."""
    n = len(x)
    if n <= max_points or max_points < 4:
        return x, y
    buckets = max_points // 2
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    bucket = np.repeat(np.arange(buckets), np.diff(edges))
    order = np.lexsort((y, bucket))  # by bucket, then by y: each bucket's first is its min
    keep = np.unique(np.concatenate([order[edges[:-1]], order[edges[1:] - 1]]))
    return x[keep], y[keep]


def per_series_budget(total_points: int, series: int, floor: int = 200) -> int:
    return max(floor, total_points // max(series, 1))
