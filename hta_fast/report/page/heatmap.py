"""Rank x something grids for heatmaps, kept to a bounded size: beyond max_rows ranks (or
max_cols columns), neighbouring rows (columns) are merged into bins, each bin's cell being
the max, min or mean of the merged cells, as the caller says (and the figure says)."""

from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple

import numpy as np

MAX_ROWS = 256
REDUCE: dict[str, Callable[..., np.ndarray]] = {
    "max": np.nanmax,
    "min": np.nanmin,
    "mean": np.nanmean,
}


class Binned(NamedTuple):
    z: np.ndarray  # float, NaN where no value
    first: np.ndarray  # index of each bin's first original row (or column)
    last: np.ndarray  # index of each bin's last one


def bin_axis(z: np.ndarray, axis: int, max_n: int, how: str) -> Binned:
    """z with at most max_n entries along axis: equal bins of consecutive entries."""
    n = z.shape[axis]
    if n <= max_n:
        idx = np.arange(n)
        return Binned(z, idx, idx)
    size = math.ceil(n / max_n)
    bins = math.ceil(n / size)
    moved = np.moveaxis(z.astype(float), axis, 0)
    padded = np.full((bins * size, *moved.shape[1:]), np.nan)
    padded[:n] = moved
    with warnings.catch_warnings():  # an all-NaN bin stays NaN: nothing to say
        warnings.simplefilter("ignore", RuntimeWarning)
        reduced = REDUCE[how](padded.reshape(bins, size, *moved.shape[1:]), axis=1)
    first = np.arange(bins) * size
    return Binned(np.moveaxis(reduced, 0, axis), first, np.minimum(first + size, n) - 1)


def rank_rows(
    z: np.ndarray, ranks: np.ndarray, how: str, max_rows: int = MAX_ROWS
) -> tuple[np.ndarray, list[str]]:
    """(z binned by rows, a label per row: 'rank 5' or 'ranks 256–263')."""
    b = bin_axis(z, 0, max_rows, how)
    labels = [
        f"rank {ranks[a]}" if a == e else f"ranks {ranks[a]}–{ranks[e]}"
        for a, e in zip(b.first, b.last)
    ]
    return b.z, labels


def grid(rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """(distinct rows, distinct cols, matrix): values placed at (row, col); a cell given
    twice keeps the larger value; cells never given are NaN."""
    rk, ri = np.unique(rows, return_inverse=True)
    ck, ci = np.unique(cols, return_inverse=True)
    z = np.full((len(rk), len(ck)), np.nan)
    np.fmax.at(z, (ri.reshape(-1), ci.reshape(-1)), np.asarray(values, float))
    return rk, ck, z
