"""What removing each cause would save, by the performance model: each cause's edit replayed on
the dependency graph (hta_fast.model.whatif.what_if) against the unedited replay, per step.

The heuristic costs (each cause module) read the idle gaps a cause sits in; the model follows
what the removal does downstream: a faster loader only helps until the GPU becomes the bound,
and a sync that no longer waits lets the host run ahead only as far as the next wait. The
edit per cause (docs/doctor.md, "Predicted savings"):

    input_pipeline         the data-loader calls cost nothing (op_scale: the loader = 0)
    launch_bound           launches cost nothing (zero_launch_overhead, what CUDA graphs approach)
    memory_sync            blocking syncs return at once (drop_sync_waits), host-device copies
                           from pageable memory run at pinned speed, FP32 GEMMs on CUDA cores
                           at tensor-core speed (Thresholds.fp32_gemm_speedup)
    exposed_communication  nothing waits for communication (drop_comm_waits)
    rank_imbalance         every rank's compute as fast as the median rank's (its non-
                           communication GPU work per step), replayed across ranks
    parallelism            not modelled: the graph keeps each stream's order and each kernel's
                           duration, and more parallel work is a change of the program
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

import numpy as np

from ..frame.derived import DATALOADER
from ..model.whatif.edits import Edits
from ..model.whatif.steps import what_if
from ..schema import GPU_WORK_KINDS, KernelClass
from ..traceset import TraceSet
from . import memory_sync, rank_imbalance
from .context import RankView
from .thresholds import Thresholds

# A copy from pageable memory goes through a pinned staging buffer: on PCIe it reaches about
# half the bandwidth of a copy from pinned memory.
PAGEABLE_SLOWDOWN = 2.0

EDIT_TEXT = {
    "input_pipeline": "the data loader costs nothing",
    "launch_bound": "launches cost nothing",
    "memory_sync": "syncs return at once, pageable copies at pinned speed, FP32 GEMMs on "
    "tensor cores",
    "exposed_communication": "nothing waits for communication",
    "rank_imbalance": "every rank as fast as the median rank",
    "parallelism": "not modelled: more parallel work changes the program, not its timing",
}


@dataclasses.dataclass
class Saving:
    """ns_per_step: what the model predicts removing the cause saves per step (mean over the
    replayed ranks and steps), None where it cannot say; edit: what was replayed."""

    ns_per_step: Optional[int]
    edit: str


def _imbalance_edit(views: list[RankView]) -> Optional[Edits]:
    """Ranks whose compute per step is above the median rank's, scaled to the median."""
    if len(views) < 2:
        return None
    work = {v.rank: rank_imbalance.per_step_times(v)[0].mean() for v in views}
    median = float(np.median(list(work.values())))
    change = {}
    for v in views:
        if work[v.rank] <= median or work[v.rank] <= 0:
            continue
        trace = v.trace
        kind = trace.column("events", "kind")
        rows = np.flatnonzero(
            np.isin(kind, GPU_WORK_KINDS)
            & (trace.column("events", "kernel_class") != KernelClass.COMM)
        )
        dur = np.maximum(trace.column("events", "dur")[rows], 0).astype(np.float64)
        change[v.rank] = (rows, dur * (median / work[v.rank] - 1.0))
    return Edits(duration_change=change) if change else None


def cause_edits(views: list[RankView], th: Thresholds) -> dict[str, Optional[Edits]]:
    """The edit that removes each cause (the module doc); None where there is none."""
    return {
        "input_pipeline": Edits(op_scale={DATALOADER: 0.0}),
        "launch_bound": Edits(zero_launch_overhead=True),
        "memory_sync": Edits(
            drop_sync_waits=True,
            name={
                memory_sync.PAGEABLE: 1.0 / PAGEABLE_SLOWDOWN,
                memory_sync.FP32_GEMM: 1.0 / th.fp32_gemm_speedup,
            },
        ),
        "exposed_communication": Edits(drop_comm_waits=True),
        "rank_imbalance": _imbalance_edit(views),
        "parallelism": None,
    }


def predicted_savings(
    traces: TraceSet,
    views: list[RankView],
    steps: Optional[Sequence[int]],
    th: Thresholds,
    notes: list[str],
) -> dict[str, Saving]:
    """Per cause, the model's predicted saving per step on these ranks (their views)."""
    ranks = [v.rank for v in views]
    out = {}
    for cause, edits in cause_edits(views, th).items():
        if edits is None:
            none_why = EDIT_TEXT[cause] if cause == "parallelism" else "nothing to edit"
            out[cause] = Saving(None if cause == "parallelism" else 0, none_why)
            continue
        try:
            # A cause's fixed edit may match nothing in these traces (no loader, no pageable
            # copy): that removes nothing, and saves 0.
            totals = what_if(traces, edits, ranks=ranks, steps=steps, allow_unmatched=True)[
                "totals"
            ]
        except ValueError as e:  # steps or ranks the model cannot replay
            notes.append(f"{cause}: no model saving ({e})")
            out[cause] = Saving(None, EDIT_TEXT[cause])
            continue
        # The steps' time together, not the sum of their spans: an edit that lets the host
        # run ahead makes the spans overlap (what_if's "totals").
        steps_of = np.maximum(totals["steps"].to_numpy(), 1)
        saved = (totals["replayed"].to_numpy() - totals["predicted"].to_numpy()) / steps_of
        ns = int(round(float(saved.mean()))) if len(saved) else None
        out[cause] = Saving(ns, EDIT_TEXT[cause])
    return out
