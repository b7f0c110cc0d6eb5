"""Grouping the selected events of one rank: a dense group id per event, the events in
(group, start time) order, and each group's key values.

One stable sort by start time, then one stable sort by group id (a radix sort when there
are few groups), so the work is O(n log n) at worst and close to O(n) on traces that are
already in time order.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from ..trace import Trace

# Group keys and the events column each reads; "window" is a time bucket of the start.
KEYS = {
    "stream": "stream",
    "step": "step",
    "name": "name",
    "kind": "kind",
    "kernel_class": "kernel_class",
    "device": "device",
    "pid": "pid",
    "tid": "tid",
    "window": "ts",
}


class Groups(NamedTuple):
    order: np.ndarray  # int64 positions into the selected rows, grouped, by start time
    offsets: np.ndarray  # int64, len(groups) + 1: group g is order[offsets[g]:offsets[g+1]]
    keys: dict[str, np.ndarray]  # per key: its value for each group (window: bucket start)


def check_keys(by: tuple[str, ...], every: Optional[int]) -> None:
    for key in by:
        if key not in KEYS:
            raise ValueError(f"cannot group by {key!r}; group keys are {', '.join(KEYS)}")
    if len(set(by)) != len(by):
        raise ValueError(f"a group key is repeated in by={by!r}")
    if ("window" in by) != (every is not None):
        raise ValueError(
            "grouping by 'window' needs every=<bucket length in ns>, and every= "
            "needs 'window' in by"
        )
    if every is not None and every <= 0:
        raise ValueError(f"every must be a positive number of ns, got {every}")


def _dense(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values ascending) with values == distinct[codes]."""
    if len(values) == 0:
        return np.empty(0, np.int64), values[:0]
    lo, hi = int(values.min()), int(values.max())
    if hi - lo < (1 << 22):
        # Few distinct values in a small range (streams, steps, kinds): a lookup table
        # instead of a sort.
        present = np.zeros(hi - lo + 1, bool)
        shifted = values.astype(np.int64) - lo
        present[shifted] = True
        lut = np.cumsum(present, dtype=np.int64) - 1
        return lut[shifted], (np.flatnonzero(present) + lo).astype(values.dtype)
    distinct, codes = np.unique(values, return_inverse=True)
    return codes.astype(np.int64).reshape(-1), distinct


def _sort_codes(codes: np.ndarray, n: int) -> np.ndarray:
    """Narrowest unsigned type for codes < n: numpy sorts 8- and 16-bit keys by radix."""
    for t in (np.uint8, np.uint16, np.uint32):
        if n <= np.iinfo(t).max:
            return codes.astype(t)
    return codes


def group(
    trace: Trace,
    rows: np.ndarray,
    ts: np.ndarray,
    bucket: Optional[np.ndarray],
    by: tuple[str, ...],
) -> Groups:
    """Groups of the selected rows (trace.events row numbers, start times ts, and for
    by "window" the start of each row's time bucket) by the keys in `by`."""
    order = np.argsort(ts, kind="stable")
    if not by:
        return Groups(
            order, np.array([0, len(rows)], np.int64) if len(rows) else np.zeros(1, np.int64), {}
        )
    gid = np.zeros(len(rows), np.int64)
    n = 1
    key_columns = {}
    for key in by:
        col = bucket if key == "window" else trace.column("events", KEYS[key])[rows]
        assert col is not None
        codes, distinct = _dense(col)
        # Re-densified after each key, so the combined id stays below the number of rows.
        gid, first = _dense(gid * len(distinct) + codes)
        n = len(first)
        key_columns[key] = col
    order = order[np.argsort(_sort_codes(gid[order], n), kind="stable")]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(gid, minlength=n), out=offsets[1:])
    first_rows = order[offsets[:-1]]
    keys = {key: col[first_rows] for key, col in key_columns.items()}
    return Groups(order, offsets, keys)
