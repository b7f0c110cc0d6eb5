"""Interval arithmetic the shared ops do not give: how much of each query interval a
normalised interval set covers, in one vectorised pass (prefix sums + binary search)."""

from __future__ import annotations

import numpy as np


def covered_length(
    set_starts: np.ndarray, set_ends: np.ndarray, q_starts: np.ndarray, q_ends: np.ndarray
) -> np.ndarray:
    """Per query [q_starts[i], q_ends[i]): the length of its intersection with the interval
    set (sorted, disjoint, as ops.union returns). int64 ns; empty queries give 0."""
    q_starts = np.asarray(q_starts, np.int64)
    q_ends = np.maximum(np.asarray(q_ends, np.int64), q_starts)
    if len(set_starts) == 0 or len(q_starts) == 0:
        return np.zeros(len(q_starts), np.int64)
    s = np.asarray(set_starts, np.int64)
    e = np.asarray(set_ends, np.int64)
    before = np.concatenate([[0], np.cumsum(e - s)])  # length of the set before interval k

    def upto(t: np.ndarray) -> np.ndarray:
        """Length of the set before time t."""
        k = np.searchsorted(s, t, side="right") - 1
        kk = np.maximum(k, 0)
        return np.where(k >= 0, before[kk] + np.clip(t - s[kk], 0, (e - s)[kk]), 0)

    return upto(q_ends) - upto(q_starts)


def touches(
    set_starts: np.ndarray, set_ends: np.ndarray, q_starts: np.ndarray, q_ends: np.ndarray
) -> np.ndarray:
    """Per query [q_starts[i], q_ends[i]]: whether any set interval [s, e] meets it (closed
    ends, so an interval ending exactly where the query starts counts)."""
    q_starts = np.asarray(q_starts, np.int64)
    if len(set_starts) == 0 or len(q_starts) == 0:
        return np.zeros(len(q_starts), bool)
    # The last set interval starting at or before the query's end must end at or after its start.
    k = np.searchsorted(set_starts, q_ends, side="right") - 1
    return (k >= 0) & (np.asarray(set_ends)[np.maximum(k, 0)] >= q_starts)
