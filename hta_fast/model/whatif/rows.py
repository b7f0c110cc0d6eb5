"""What-if output rows, one per (rank, step) of a replayed group (hta_fast.model.whatif.group):
the predicted step, the bounds of its critical path before and after the edit, and the time
spent waiting for another rank before the path begins.

The wait is one rule for chained steps and windows: a step's path walks back from its end to
its start (hta_fast.model.path.step_paths); where it stops earlier, at a collective's end that
another rank held (its floor, not an edge, set its time), the time from the step's replayed
start to that end was spent waiting for the rank that arrived last. A held end at or before
the step's start (a collective carried over from the step before) is no wait of this step.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..path.bounds import bound_codes, shares
from ..path.step_paths import step_paths
from .group import GroupReplay, Replayed

# The share of a rank's predicted step spent before its critical path begins: waiting at a
# collective for another rank (held_by) to arrive, in a cross-rank replay.
WAITING = "waiting_for_rank"

Path = tuple[np.ndarray, np.ndarray]  # edges, and the time each counts for in the step


def waited_for_rank(r: Replayed, first: int, start: int, times: Optional[np.ndarray] = None) -> int:
    """ns of a step (replayed start `start`) before its path begins at node `first`, spent
    waiting for another rank (the module doc); 0 when no rank held it. times: the replay
    the path is of (default: the edited one)."""
    t = r.times if times is None else times
    return int(t[first] - start) if first in r.code_of and t[first] > start else 0


def _bound(share: dict[str, Optional[float]], waited: int, step: int) -> Optional[str]:
    """The category that bounds most of a step: its path's largest share, or waiting for
    another rank where that took longer (the path's shares are of the rest of the step)."""
    top = _top(share)
    if not waited or not step:
        return top
    on_path = (step - waited) / step
    largest = max((float(v) * on_path for v in share.values() if v is not None), default=0.0)
    return WAITING if 100.0 * waited / step > largest else top


def _top(share: dict[str, Optional[float]]) -> Optional[str]:
    """The category with the largest share (the first of equal ones)."""
    s = {k: v for k, v in share.items() if v is not None}
    return max(s, key=lambda k: s[k]) if s else None


def step_row(
    r: Replayed,
    k: int,
    spans: tuple[int, int, int],
    before: Path,
    after: Path,
    waits: tuple[int, int],
    held_by: Optional[int],
) -> dict[str, Any]:
    """One output row for step k of r's chain. spans: the step measured, replayed and
    predicted; before / after: its paths; waits: ns waiting for another rank before
    `before` begins and before `after` begins (rank held_by)."""
    chain = r.chain
    graph, trace = chain.graph, chain.trace
    measured, replayed, predicted = spans
    waited_before, waited = waits
    after_share = shares(bound_codes(graph, trace, after[0]), after[1])
    before_share = shares(bound_codes(graph, trace, before[0]), before[1])
    row: dict[str, Any] = {
        "rank": chain.rank,
        "step": chain.steps[k],
        "measured": measured,
        "replayed": replayed,
        "predicted": predicted,
        "change_pct": 100.0 * (predicted - measured) / measured if measured else None,
        "bound_before": _bound(before_share, waited_before, replayed),
        "bound_after": _bound(after_share, waited, predicted),
    }
    on_path = predicted - waited
    row.update(
        {
            b: (v * on_path / predicted if v is not None and predicted else v)
            for b, v in after_share.items()
        }
    )
    row[WAITING] = 100.0 * waited / predicted if predicted else None
    row["held_by"] = held_by if waited else None
    return row


def group_rows(group: GroupReplay) -> list[dict[str, Any]]:
    """One row per (rank, step) of this replayed group."""
    rows = []
    for r in group.ranks:
        chain = r.chain
        measured = chain.spans(chain.measured_times())
        base, predicted = chain.spans(r.base_times), chain.spans(r.times)
        starts = chain.step_starts(r.times)
        ends = chain.end_nodes(r.times)
        before = step_paths(chain, r.w_base, r.base_times)
        after = step_paths(chain, r.w_edit, r.times)
        base_starts = chain.step_starts(r.base_times)
        base_ends = chain.end_nodes(r.base_times)
        for k in range(len(chain.steps)):
            path = after[k][0]
            first = int(chain.graph.src[path[0]]) if len(path) else int(ends[k])
            waited = waited_for_rank(r, first, int(starts[k]))
            path_b = before[k][0]
            first_b = int(chain.graph.src[path_b[0]]) if len(path_b) else int(base_ends[k])
            waited_b = waited_for_rank(r, first_b, int(base_starts[k]), r.base_times)
            held_by = int(group.holder[r.code_of[first]]) if waited else None
            rows.append(
                step_row(
                    r,
                    k,
                    (int(measured[k]), int(base[k]), int(predicted[k])),
                    before[k],
                    after[k],
                    (waited_b, waited),
                    held_by,
                )
            )
    return rows


def chain_totals(group: GroupReplay) -> list[dict[str, Any]]:
    """Per rank of this group, its steps from the first one's start to the last one's end,
    replayed and predicted: the time the steps take together. Where an edit lets the host
    run ahead of the GPU, a step starts before the one before it has ended and the steps'
    spans overlap; their sum then overstates the time, and this total does not."""
    out = []
    for r in group.ranks:
        chain = r.chain
        total = []
        for times in (r.base_times, r.times):
            starts, ends = chain.step_starts(times), chain.step_ends(times)
            total.append(int(ends.max() - starts.min()) if len(starts) else 0)
        out.append(
            {
                "rank": chain.rank,
                "steps": len(chain.steps),
                "replayed": total[0],
                "predicted": total[1],
            }
        )
    return out


def predicted_spans(group: GroupReplay) -> list[dict[str, Any]]:
    """Per (rank, step) of this group, the predicted step's span: the rows of a band replay
    (hta_fast.model.whatif.per_step)."""
    out = []
    for r in group.ranks:
        chain = r.chain
        spans = chain.spans(r.times)
        out += [
            {"rank": chain.rank, "step": step, "predicted": int(spans[k])}
            for k, step in enumerate(chain.steps)
        ]
    return out
