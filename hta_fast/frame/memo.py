"""Arrays derived from a trace's columns that several analyses need: which rows are GPU
work, which launch queued which GPU event. A loaded Trace never changes, so each is
computed once per trace, kept on it read-only, and shared by every analysis and selection
that asks (the compat facade calls many analyses one after another on the same traces).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Hashable, Iterable, Optional, TypeVar

import numpy as np

from ..trace import Trace

T = TypeVar("T")


def remember(trace: Trace, key: Hashable, compute: Callable[[], T]) -> T:
    """compute(), once per (trace, key). Arrays come back read-only."""
    memo = trace.__dict__.setdefault("_derived", {})
    if key not in memo:
        value = compute()
        _freeze(value)
        memo[key] = value
    return memo[key]


def remember_under(trace: Trace, key: Hashable, mask: Optional[np.ndarray],
                   compute: Callable[[], T]) -> T:
    """compute(), once per (trace, key, mask) for the read-only masks a Selection keeps
    (select.Selection.event_mask): the value is kept with the mask it was computed under and
    used only for that very mask. Other masks (writeable ones could change) compute anew."""
    if mask is None:
        return remember(trace, key, compute)
    if mask.flags.writeable:
        return compute()
    memo = trace.__dict__.setdefault("_derived", {})
    held = memo.get((key, id(mask)))
    if held is None or held[0] is not mask:  # holding the mask keeps its id from reuse
        value = compute()
        _freeze(value)
        held = memo[(key, id(mask))] = (mask, value)
    return held[1]


def _freeze(value: object) -> None:
    """Make the arrays of a value (an array, a tuple or a dataclass of them) read-only."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts: Iterable[object] = (getattr(value, f.name) for f in dataclasses.fields(value))
    elif isinstance(value, tuple):
        parts = value
    else:
        parts = (value,)
    for a in parts:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False


def kind_mask(trace: Trace, kinds: Iterable[int]) -> np.ndarray:
    """Rows of trace.events whose kind is one of `kinds` (read-only bool array)."""
    wanted = tuple(sorted({int(k) for k in kinds}))

    def compute() -> np.ndarray:
        lookup = np.zeros(256, bool)
        lookup[list(wanted)] = True
        return lookup[trace.column("events", "kind")]
    return remember(trace, ("kind_mask", wanted), compute)
