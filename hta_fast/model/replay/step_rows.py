"""One what-if output row per (rank, step): the predicted step, the bounds of its critical
path before and after the edit, and the time spent waiting for another rank before the path
begins. Shared by the per-window and the chained replays (hta_fast.model.whatif.what_if)."""
from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from ...trace import Trace
from ..graph.dependency_graph import DependencyGraph
from ..path.bounds import BOUND_BY, bound_by, shares

# The share of a rank's predicted step spent before its critical path begins: waiting at a
# collective for another rank (held_by) to arrive, in a cross-rank replay.
WAITING = "waiting_for_rank"


@dataclasses.dataclass
class Replayed:
    """One rank's graph (a window or a chain) replayed as measured (base) and edited: the
    weights and node times of each, and code_of (collective end node -> collective code,
    for the collectives tied to other ranks)."""
    w_base: np.ndarray
    base_times: np.ndarray
    w_edit: np.ndarray
    times: np.ndarray
    code_of: dict[int, int]


def _top(bounds: np.ndarray, weight: np.ndarray) -> Optional[str]:
    s = {k: v for k, v in shares(bounds, weight).items() if v is not None}
    return max(s, key=lambda k: s[k]) if s else None


def step_row(rank: int, step: Optional[int], graph: DependencyGraph, trace: Trace,
             r: Replayed, holder: np.ndarray, measured: int, replayed: int, predicted: int,
             before: np.ndarray, before_w: np.ndarray, after_path: np.ndarray,
             after_w: np.ndarray, first: int, waited: int) -> dict[str, Any]:
    """One output row: the bounds of the paths before and after (edges and the time each
    counts for), and the wait for another rank before the step's path begins (from node
    `first`, `waited` ns)."""
    b_after = bound_by(graph, trace, after_path)
    held_by = int(holder[r.code_of[first]]) if waited else None
    row: dict[str, Any] = {"rank": rank, "step": step, "measured": measured, "replayed": replayed,
           "predicted": predicted,
           "change_pct": 100.0 * (predicted - measured) / measured if measured else None,
           "bound_before": _top(bound_by(graph, trace, before), before_w),
           "bound_after": _top(b_after, after_w)}
    on_path = predicted - waited
    row.update({k: (v * on_path / predicted if v is not None and predicted else v)
                for k, v in shares(b_after, after_w).items()})
    row[WAITING] = 100.0 * waited / predicted if predicted else None
    row["held_by"] = held_by
    waiting_share = float(row[WAITING] or 0.0)
    if waited and (row["bound_after"] is None or waiting_share > max(
            float(row[b] or 0.0) for b in BOUND_BY)):
        row["bound_after"] = WAITING
    return row
