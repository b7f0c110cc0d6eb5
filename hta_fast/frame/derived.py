"""Arrays derived from a trace's columns that several analyses need (which rows are GPU
work, which launch queued which GPU event), kept read-only in the trace's memo
(hta_fast.memo) and shared by every analysis and selection that asks.
"""

from __future__ import annotations

from typing import Callable, Hashable, Iterable, Optional, TypeVar

import numpy as np

from ..trace import Trace

T = TypeVar("T")


def remember(trace: Trace, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), once per (trace, key). Arrays come back read-only."""
    return trace.memo.get(("frame.derived", key), compute, freeze=True)


def remembered(trace: Trace, key: Hashable) -> bool:
    """Whether remember() already holds a value for (trace, key)."""
    return trace.memo.has(("frame.derived", key))


def remember_under(
    trace: Trace, key: Hashable, mask: Optional[np.ndarray], compute: Callable[[], T]
) -> T:
    """compute(), once per (trace, key, mask) for the read-only masks a Selection keeps
    (select.Selection.event_mask); other masks (writeable ones could change) compute anew."""
    return trace.memo.get_under(("frame.derived", key), mask, compute)


def kind_mask(trace: Trace, kinds: Iterable[int]) -> np.ndarray:
    """Rows of trace.events whose kind is one of `kinds` (read-only bool array)."""
    wanted = tuple(sorted({int(k) for k in kinds}))

    def compute() -> np.ndarray:
        lookup = np.zeros(256, bool)
        lookup[list(wanted)] = True
        return lookup[trace.column("events", "kind")]

    return remember(trace, ("kind_mask", wanted), compute)


def kernel_arg(trace: Trace, column: str, rows: np.ndarray) -> np.ndarray:
    """A kernel_args column (grid_x, registers_per_thread, ...) at the given event rows; -1
    (NaN for floats) where an event has none."""
    arg_rows = trace.column("kernel_args", "row")
    values = trace.column("kernel_args", column)
    fill = np.nan if values.dtype.kind == "f" else -1
    out = np.full(len(rows), fill, values.dtype)
    if len(arg_rows) == 0 or len(rows) == 0:
        return out
    # kernel_args rows ascend (one per GPU event, in event order): a binary search maps
    # each event row to its argument row.
    pos = np.minimum(np.searchsorted(arg_rows, rows), len(arg_rows) - 1)
    hit = arg_rows[pos] == rows
    out[hit] = values[pos[hit]]
    return out
