"""What removing each cause would save, by the performance model: each cause's edit (its
Cause record) replayed on the dependency graph (hta_fast.model.whatif.replay_run, what_if's
replay) against the unedited replay, per step.

The heuristic costs (each cause module) read the idle gaps a cause sits in; the model follows
what the removal does downstream: a faster loader only helps until the GPU becomes the bound,
and a sync that no longer waits lets the host run ahead only as far as the next wait. A cause
without an edit is "not modelled" (None), never 0; an edit that finds nothing to change in
these traces saves 0.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from .._arrow import as_numpy
from ..frame import select
from ..model.path.owners import OWNERS, wait_owners
from ..model.whatif.replay_run import replay_run
from .causes.record import Cause, Examination

# Where the heuristic cost and the model's saving differ by more than this factor (10 %),
# the finding says why.
SAVINGS_DIFFER = 1.1


@dataclasses.dataclass
class Saving:
    """ns_per_step: what the model predicts removing the cause saves per step (what_if's time
    per step, replayed minus predicted), None where it cannot say; edit: what was replayed,
    or why nothing was."""

    ns_per_step: Optional[int]
    edit: str


def predicted_saving(cause: Cause, ex: Examination, notes: list[str]) -> Saving:
    """The model's predicted saving per step for one cause on the examined ranks."""
    if cause.edit is None:
        return Saving(None, cause.edit_text)
    edits = cause.edit(ex)
    if edits is None:
        return Saving(0, "nothing to edit in these traces")
    try:
        # A cause's edit may match nothing in these traces (no loader, no pageable copy):
        # that removes nothing, and saves 0.
        # replay_run: what_if without its device edit (no cause edits the device)
        per_step = replay_run(
            ex.traces,
            edits,
            select.selection_of(None, [v.rank for v in ex.views], ex.steps),
            allow_unmatched=True,
        )["per_step"]
    except ValueError as e:  # steps or ranks the model cannot replay
        notes.append(f"{cause.key}: no model saving ({e})")
        return Saving(None, f"not modelled here: {e}")
    # what_if's one figure per step (hta_fast.model.whatif.per_step: the steps' time
    # together over their count, not the sum of their spans, which overlap where an edit
    # lets the host run ahead): the one the CLI prints and the evaluators read.
    replayed, predicted = (per_step[c][0].as_py() for c in ("replayed", "predicted"))
    ns = None if replayed is None or predicted is None else int(round(replayed - predicted))
    return Saving(ns, cause.edit_text)


def differ_text(cause: Cause, cost_ns: float, saving_ns: Optional[int], step_ns: float) -> str:
    """One sentence where the heuristic cost and the model's saving differ by more than
    SAVINGS_DIFFER (and either is 1 % of the step or more): what the edit removes and what
    it cannot. Empty otherwise."""
    if saving_ns is None:
        return ""
    lo, hi = sorted((max(float(saving_ns), 0.0), max(cost_ns, 0.0)))
    if hi < 0.01 * step_ns or hi <= SAVINGS_DIFFER * lo:
        return ""
    more = "less" if saving_ns < cost_ns else "more"
    why = f": {cause.edit_limits}" if cause.edit_limits else ""
    return (
        f"The model saves {more} than the heuristic cost: its edit ({cause.edit_text}) "
        f"follows what the removal does downstream{why}."
    )


def owned_per_step(ex: Examination, notes: list[str]) -> Optional[dict[str, float]]:
    """Each owner's GPU time per step on the examined ranks (model.path.owners): the mean
    over ranks of each rank's mean step; None where the model cannot walk these steps."""
    try:
        t = wait_owners(ex.traces, ranks=[v.rank for v in ex.views], steps=ex.steps).table
    except ValueError as e:
        notes.append(f"owners: not computed ({e})")
        return None
    if not t.num_rows:
        return None
    rank = as_numpy(t["rank"])
    out = {}
    for o in OWNERS:
        per = as_numpy(t[o]).astype(np.float64)
        means = [per[rank == r].mean() for r in np.unique(rank)]
        out[o] = float(np.mean(means))
    return out
