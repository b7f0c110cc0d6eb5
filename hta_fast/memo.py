"""Memo: values derived from one rank's tables, each computed once and kept by the rank
(`trace.memo`). A loaded trace never changes, so a mask, an order or a summary that several
analyses need is computed for the first and shared by the rest (the compat facade calls many
analyses one after another on the same traces).

A key is a tuple whose first item names the module that computes the value
("frame.select", "frame.kernel_args", ...), so two modules never share a key by chance;
the rest says which value of that module it is. Values kept under a mask (`get_under`)
hold the mask itself, so its id cannot be reused by another array while the value lives.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Hashable, Iterable, Optional, TypeVar

import numpy as np

T = TypeVar("T")


class Memo:
    def __init__(self) -> None:
        self._values: dict[Hashable, Any] = {}

    def get(self, key: tuple, compute: Callable[[], T], freeze: bool = False) -> T:
        """compute(), once per key; with freeze its arrays come back read-only."""
        if key not in self._values:
            value = compute()
            if freeze:
                freeze_arrays(value)
            self._values[key] = value
        result: T = self._values[key]
        return result

    def get_under(self, key: tuple, mask: Optional[np.ndarray], compute: Callable[[], T]) -> T:
        """compute(), once per (key, mask) for a read-only mask (a Selection's); a writeable
        mask could change, so its values are computed anew each time. Arrays come back
        read-only."""
        if mask is None:
            return self.get(key, compute, freeze=True)
        if mask.flags.writeable:
            return compute()
        held = self._values.get((key, id(mask)))
        if held is None or held[0] is not mask:
            value = compute()
            freeze_arrays(value)
            held = self._values[(key, id(mask))] = (mask, value)
        result: T = held[1]
        return result

    def has(self, key: tuple) -> bool:
        """Whether a value is kept under this key (get's, not get_under's)."""
        return key in self._values

    def __len__(self) -> int:
        return len(self._values)


def freeze_arrays(value: object) -> None:
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
