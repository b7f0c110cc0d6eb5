"""Cause 2, input pipeline stalls: the GPU idles while the host waits on the data loader.

Cost per step: the GPU idle time during which a data-loader call
(`enumerate(DataLoader)#...__next__`) runs on the host (gap_causes: input_pipeline).
"""

from __future__ import annotations

import numpy as np

from ...frame.derived import DATALOADER
from ...frame.fields import duration_text
from ...model.whatif.edits import Edits
from ..views.context import RankView
from ..views.estimate import Estimate, Tally, per_step
from ..views.gap_causes import split_gaps
from ..views.intervals import covered_length
from ..views.thresholds import Thresholds
from .record import Cause, CauseDoc

# The part of the idle-gap split charged to it.
GAP_PARTS = ("input_pipeline",)

ADVICE = (
    "Have the next batch ready before the GPU needs it: DataLoader with num_workers > 0, "
    "persistent_workers=True, a larger prefetch_factor and pin_memory=True; move decoding "
    "and augmentation off the training process or onto the GPU (e.g. DALI); cache "
    "preprocessed data; copy batches with non_blocking=True."
)


def examine(views: list[RankView], th: Thresholds) -> Estimate:
    cost = {}
    tally = Tally()
    calls = 0
    loader_time = 0.0
    idle_in_loader = 0.0
    for v in views:
        split = split_gaps(v, th)
        cost[v.rank] = per_step(v, v.gaps.step_index, split.charged(GAP_PARTS))
        rows = split.loader_rows
        ts = v.trace.column("events", "ts")[rows]
        end = np.minimum(ts + np.maximum(v.trace.column("events", "dur")[rows], 0), v.hi)
        ts = np.maximum(ts, v.lo)
        idle = covered_length(v.gaps.starts, v.gaps.ends, ts, end)
        tally.add(v, rows, idle)
        calls += len(rows)
        loader_time += float(np.maximum(end - ts, 0).sum())
        idle_in_loader += float(idle.sum())
    total_steps = sum(v.n_steps for v in views) or 1
    evidence = {
        "loader_calls_per_step": calls / total_steps,
        "loader_time_ns_per_step": loader_time / total_steps,
        "gpu_idle_in_loader_ns_per_step": idle_in_loader / total_steps,
        "gpu_idle_share_of_loader_time": idle_in_loader / loader_time if loader_time else 0.0,
    }
    title = (
        f"Input pipeline stalls: the host spends {duration_text(evidence['loader_time_ns_per_step'])} "
        f"per step in the data loader, {100 * evidence['gpu_idle_share_of_loader_time']:.0f}% of "
        "it with the GPU idle"
    )
    return Estimate(cost, evidence, tally.top(), title, ADVICE)


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means="the GPU idles while the host waits on the data loader",
    cost=(
        "GPU idle time during data-loader calls (`enumerate(DataLoader)#...__next__`, "
        "and a DataPipe graph's `enumerate(DataPipe)#...`)"
    ),
    helps=(
        "DataLoader workers, prefetching, pinned memory, preprocessing off the training process"
    ),
    edit=(
        "the data-loader calls (the gap rule's `DataLoader...__next__` and "
        "`enumerate(DataPipe)#` names) cost nothing: `op_scale={loader: 0}`, the call "
        "and everything under it"
    ),
)


CAUSE = Cause(
    key="input_pipeline",
    name="input pipeline stalls",
    thresholds=("min_share",),
    evidence=(
        "loader_calls_per_step",
        "loader_time_ns_per_step",
        "gpu_idle_in_loader_ns_per_step",
        "gpu_idle_share_of_loader_time",
    ),
    heuristic=lambda ex: examine(ex.views, ex.th),
    edit=lambda ex: Edits(op_scale={DATALOADER: 0.0}),
    edit_text="the data loader costs nothing",
    edit_limits="the host's other work stays, and once the loader is gone the GPU or that "
    "work becomes the bound",
    owners=("data_loading",),
    name_patterns=(DATALOADER,),
    gap_parts=GAP_PARTS,
    doc=DOC,
)
