"""Arrays derived from a trace's columns that several analyses need: which rows are GPU
work, which launch queued which GPU event. A loaded Trace never changes, so each is
computed once per trace, kept on it read-only, and shared by every analysis and selection
that asks (the compat facade calls many analyses one after another on the same traces).
"""
from __future__ import annotations

from typing import Callable, Hashable, Iterable, TypeVar

import numpy as np

from ..trace import Trace

T = TypeVar("T")


def remember(trace: Trace, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), once per (trace, key). Arrays come back read-only."""
    memo = trace.__dict__.setdefault("_derived", {})
    if key not in memo:
        value = compute()
        for a in value if isinstance(value, tuple) else (value,):
            if isinstance(a, np.ndarray):
                a.flags.writeable = False
        memo[key] = value
    return memo[key]


def kind_mask(trace: Trace, kinds: Iterable[int]) -> np.ndarray:
    """Rows of trace.events whose kind is one of `kinds` (read-only bool array)."""
    wanted = tuple(sorted({int(k) for k in kinds}))

    def compute() -> np.ndarray:
        lookup = np.zeros(256, bool)
        lookup[list(wanted)] = True
        return lookup[trace.column("events", "kind")]
    return remember(trace, ("kind_mask", wanted), compute)
