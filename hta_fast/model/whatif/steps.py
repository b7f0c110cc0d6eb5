"""What-if: edit the dependency graph's weights (hta_fast.model.whatif.edits), replay, and compare
with the measured step, per (rank, step).

The steps come from the one walk over a rank's steps (hta_fast.model.graph.walk): chained (the
default) a rank's consecutive selected steps are one graph, so a step starts where the one
before it ends and the GPU work it carries over follows the replayed previous step; window
by window its carried-over work stays at its measured time. With several ranks and
cross_rank, the ranks' chains of the same steps are replayed together (a collective ends on
no rank before the last rank has reached it, hta_fast.model.replay.cross_rank).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional, Union

from ...frame import select
from ...frame.result import Result
from ...frame.select import Ranks, Steps
from ...trace import Trace
from ...traceset import TraceSet
from .device_changes import edit_changes
from .edits import KEYWORDS, Edits, edit_keywords
from .replay_run import replay_run


def _edits_of(edits: Optional[Edits], keywords: dict[str, Any]) -> Edits:
    """The edits given, with the keyword edits (what_if's spelling of Edits' fields and of
    the declared edits, hta_fast.model.whatif.declared.registry)."""
    unknown = sorted(set(keywords) - set(KEYWORDS))
    if unknown:
        raise TypeError(
            f"what_if() got unexpected keyword argument(s) {unknown}; the edits are {KEYWORDS}"
        )
    if edits is None:
        return Edits(**edit_keywords(None, keywords))
    if not isinstance(edits, Edits):
        raise TypeError(f"what_if(): edits must be an Edits, got {type(edits).__name__}")
    return dataclasses.replace(edits, **edit_keywords(edits, keywords)) if keywords else edits


def what_if(
    traces: Union[Trace, TraceSet],
    edits: Optional[Edits] = None,
    *,
    ranks: Ranks = None,
    steps: Steps = None,
    selection: Optional[select.Selection] = None,
    cross_rank: bool = True,
    chained: bool = True,
    allow_unmatched: bool = False,
    **edit_keywords: Any,
) -> Result:
    """Per (rank, step): measured, replayed (unedited) and predicted (edited) step time,
    change_pct = (predicted - measured) / measured × 100, the category that bounds most of the
    critical path before and after, the new path's shares, and the share spent waiting for
    another rank (held_by) before it. edits: an Edits, or its fields as keywords
    (kernel_class={"COMM": 0.5}, cpu=0.8, device="V100-SXM2", edit_ranks=[1], ...; both:
    the keywords replace those fields; each edit and its keywords are declared in
    hta_fast.model.whatif.declared.registry). cross_rank: with several ranks, replay the ranks of
    a step together; on a rank, the critical path then stops where another rank held it.
    chained (default): each rank's consecutive selected steps as one graph; False: each
    step's window alone (the module doc). With several ranks replayed together, the side
    tables "path_across_ranks" (per step) and "path_across_ranks_breakdown" follow each
    step's predicted path across the ranks (as critical_path(cross_rank=True)). Chained,
    "totals" has per rank its steps from the first one's start to the last one's end,
    replayed and predicted: where an edit lets the host run ahead, the steps' spans overlap
    and this, not their sum, is the time they take. "per_step" is the time per step (chained:
    the totals over the steps' count; window by window: the windows' mean), with its band
    (predicted_low / predicted_high: with a device edit the replays with every kernel at its
    prediction's band, the error measured on real pairs; else the spread of the trace's own
    steps after warm-up) and the predicted steps' median and p10-p90 after warm-up
    (hta_fast.model.whatif.per_step); each row carries its step's band the same way. With
    durations_from, "durations_from" says how each event was paired; with world_size or
    topology (the job at another scale), "world_size" has each collective's kind, bytes,
    recorded and predicted time, the algorithm the model chose before and after and the
    slowest-rank wait added (hta_fast.model.whatif.declared.world_size_edit). A scale edit
    (kernel_class, name, category, op_scale) that matches no selected event raises
    ValueError naming it (a no-op would read as "no saving"); allow_unmatched=True lets it
    pass, for callers that apply a fixed set of edits to any trace (the doctor)."""
    edits = _edits_of(edits, edit_keywords)
    sel = select.selection_of(selection, ranks, steps)
    return replay_run(
        traces,
        edits,
        sel,
        cross_rank=cross_rank,
        chained=chained,
        allow_unmatched=allow_unmatched,
        device=edit_changes,
    )
