"""Launches and the CPU events around them: which launch call queued which GPU event (the
pairs every operator/kernel question starts from), and the walk up a row's `parent` chain
to the operators that enclose it. Below the analyses so that frame-level code (graph
replays and captures) can use them too."""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..schema import GPU_WORK_KINDS, EventKind
from ..trace import Trace
from . import derived

__all__ = ["LAUNCH_KINDS", "launch_pairs", "enclosing", "ancestor_pairs"]

# The host events that queue GPU work: runtime and driver calls.
LAUNCH_KINDS = np.array([EventKind.runtime, EventKind.driver], np.uint8)


def launch_pairs(
    trace: Trace, mask: Optional[np.ndarray], include_memory_events: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(launch rows, GPU rows) of every launch -> GPU work link kept by `mask`, ordered by
    launch start, then GPU start. A graph launch is the launch of every GPU event it
    replayed (frame.graph_attribution says which operator captured them)."""
    launch, gpu = derived.remember(
        trace,
        ("launch_pairs", include_memory_events),
        lambda: _all_launch_pairs(trace, include_memory_events),
    )
    if mask is not None:
        ok = mask[gpu] & mask[launch]
        launch, gpu = launch[ok], gpu[ok]
    return launch, gpu


def _all_launch_pairs(trace: Trace, include_memory_events: bool) -> tuple[np.ndarray, np.ndarray]:
    col = trace.column
    partner = col("events", "partner")
    work = GPU_WORK_KINDS if include_memory_events else (EventKind.kernel,)
    gpu = np.flatnonzero(derived.kind_mask(trace, work) & (partner >= 0))
    gpu = gpu[derived.kind_mask(trace, LAUNCH_KINDS)[partner[gpu]]]
    launch = partner[gpu]
    ts = col("events", "ts")
    order = np.lexsort((ts[gpu], launch, ts[launch]))
    return launch[order], gpu[order]


def enclosing(trace: Trace, rows: np.ndarray, is_target: np.ndarray) -> np.ndarray:
    """For each row, the innermost CPU ancestor (by `parent`) for which is_target[ancestor]
    holds; -1 where there is none. One vectorised step per nesting level."""
    parent = trace.column("events", "parent")
    found = np.full(len(rows), -1, np.int64)
    cur = parent[rows].astype(np.int64)
    active = cur >= 0
    while active.any():
        idx = np.flatnonzero(active)
        hit = is_target[cur[idx]]
        found[idx[hit]] = cur[idx[hit]]
        miss = idx[~hit]
        cur[miss] = parent[cur[miss]]
        active[:] = False
        active[miss] = cur[miss] >= 0
    return found


def ancestor_pairs(
    trace: Trace, rows: np.ndarray, is_target: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(i, ancestor) for every CPU ancestor (by `parent`) of rows[i] for which
    is_target[ancestor] holds, at any depth. One vectorised step per nesting level."""
    parent = trace.column("events", "parent")
    idx_parts, anc_parts = [], []
    idx = np.arange(len(rows))
    cur = parent[rows].astype(np.int64)
    while len(idx):
        live = cur >= 0
        idx, cur = idx[live], cur[live]
        hit = is_target[cur]
        idx_parts.append(idx[hit])
        anc_parts.append(cur[hit])
        cur = parent[cur].astype(np.int64)
    if not idx_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(idx_parts), np.concatenate(anc_parts)
