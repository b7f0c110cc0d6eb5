"""Arrays derived from a trace's columns that several analyses need (which rows are GPU
work, which launch queued which GPU event, which names match a pattern), kept read-only in
the trace's memo (hta_fast.memo) and shared by every analysis and selection that asks.

DATALOADER names the host events that are data loading: a DataLoader's `__next__`
(`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` and the like) and a DataPipe
graph's iteration (torch.utils.data.datapipes records each pipe's as
`enumerate(DataPipe)#<its class>`, nested as the pipes are).
"""

from __future__ import annotations

import hashlib
from typing import Callable, Hashable, Iterable, Optional, Sequence, TypeVar

import numpy as np
import pyarrow.compute as pc

from .._arrow import as_numpy
from ..schema import EventKind
from ..trace import Trace

T = TypeVar("T")

# A DataLoader iterator's `__next__`, whatever the iterator's class (it changes with
# num_workers: _SingleProcessDataLoaderIter, _MultiProcessingDataLoaderIter).
DATALOADER_NEXT = r"DataLoader.*__next__"
DATALOADER = DATALOADER_NEXT + r"|^enumerate\(DataLoader\)|^enumerate\(DataPipe\)#"


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


def name_flags(trace: Trace, pattern: str) -> np.ndarray:
    """Per string id of the trace's pool: whether it matches the regular expression
    (searched, case-sensitive). Remembered per trace, under a key that a caller matching
    many traces' pools at once may fill for each (the doctor does). The ranks of a job
    mostly hold the same pool: a pool whose digest is that of the pool last matched against
    this pattern takes its flags, so a pattern asked of 1,024 alike ranks compiles and runs
    once, not 1,024 times (~0.2 ms each)."""

    def compute() -> np.ndarray:
        digest = pool_digest(trace)
        last = _LAST_MATCHED.get(pattern)
        if last is not None and last[0] == digest:
            return last[1]
        flags = as_numpy(pc.match_substring_regex(trace.strings, pattern))
        flags = np.asarray(flags, bool) if len(flags) else np.zeros(0, bool)
        flags.flags.writeable = False
        _LAST_MATCHED[pattern] = (digest, flags)
        return flags

    return remember(trace, ("name_flags", pattern), compute)


# Per pattern: the digest of the pool it was last matched against, and the flags it gave
# (one entry a pattern: the patterns are the package's own, a few dozen).
_LAST_MATCHED: dict[str, tuple[bytes, np.ndarray]] = {}


def pool_digest(trace: Trace) -> bytes:
    """A digest of the trace's string pool (its offsets and bytes, BLAKE2b-128): equal
    pools have equal digests, and two different pools the same one by a 2**-64 chance."""

    def compute() -> bytes:
        pool = trace.strings
        h = hashlib.blake2b(digest_size=16)
        h.update(len(pool).to_bytes(8, "little"))
        for buf in pool.buffers()[1:]:
            h.update(b"" if buf is None else memoryview(buf))
        h.update(pool.offset.to_bytes(8, "little"))
        return h.digest()

    return remember(trace, "pool_digest", compute)


def rows_named(trace: Trace, pattern: str, kinds: Sequence[EventKind]) -> np.ndarray:
    """Rows of events of the given kinds whose name matches the pattern."""
    flags = name_flags(trace, pattern)
    if not flags.any():
        return np.zeros(0, np.int64)
    name = trace.column("events", "name")
    hit = flags[np.maximum(name, 0)] & (name >= 0) & kind_mask(trace, kinds)
    return np.flatnonzero(hit)
