"""Cause 1, too little parallel work: the GPU runs kernels too small to fill it.

Cost per step:
  - for each compute kernel whose grid has fewer thread blocks than the device has SMs,
    its duration x (1 - blocks / SMs): the share of the SMs it left empty. Without the SM
    count (no deviceProperties), a kernel whose estimated achieved occupancy is below
    Thresholds.low_occupancy_pct costs duration x (1 - occupancy / low_occupancy_pct).
    The sum is capped at the GPU busy time.
  - plus the idle gaps between back-to-back kernels that were already queued
    (gap_causes: parallelism), which many tiny kernels multiply.
"""

from __future__ import annotations

import numpy as np

from ...frame.kernel_args import grid_blocks, kernel_arg, locate, sm_counts
from ...schema import EventKind, KernelClass
from ..views.context import RankView
from ..views.estimate import Estimate, Tally, per_step
from ..views.gap_causes import split_gaps
from ..views.text import Number
from ..views.thresholds import Thresholds
from .launch_bound import GRAPHS_MOSTLY
from .record import Cause, CauseDoc

# The part of the idle-gap split charged to it.
GAP_PARTS = ("parallelism",)

ADVICE = (
    "Give the GPU bigger pieces of work: larger batches or micro-batches, fused kernels "
    "(torch.compile, fused/foreach optimizers, fused attention and norms), CUDA graphs to "
    "remove the gaps between back-to-back kernels; for small-grid kernels, check which "
    "dimension is tiny and whether it can be batched."
)
# Where most GPU time already runs in graph replays (launch_bound's evidence), graphs are no
# advice.
ADVICE_IN_GRAPHS = (
    "Give the GPU bigger pieces of work: most GPU time already runs in graph replays, so "
    "the gaps are inside the captured work: larger batches, fused kernels (torch.compile, "
    "fused attention and norms) captured in the graph; for small-grid kernels, check which "
    "dimension is tiny and whether it can be batched."
)


def examine(views: list[RankView], th: Thresholds, in_graphs: bool = False) -> Estimate:
    """in_graphs: most GPU time already runs in graph replays (the advice leaves graphs out)."""
    cost: dict[int, np.ndarray] = {}
    tally = Tally()
    n_kernels = n_tiny = 0
    comp_time = small_time = occ_weighted = occ_time = 0.0
    gap_ns = 0.0
    durations: list[np.ndarray] = []
    sms_seen: set[int] = set()
    notes: list[str] = []
    for v in views:
        trace, w = v.trace, v.work
        kind = trace.column("events", "kind")[w.rows]
        comp = v.selected & (kind == EventKind.kernel) & (w.kclass == KernelClass.COMP)
        rows = w.rows[comp]
        dur = (w.ends - w.starts)[comp]
        where = locate(trace, rows)
        blocks = grid_blocks(trace, rows, where)
        sms = sm_counts(trace, rows)
        occ = kernel_arg(trace, rows, "est_achieved_occupancy", where).astype(np.float64)
        sms_seen.update(np.unique(sms[sms > 0]).tolist())
        grid_known = (blocks > 0) & (sms > 0)
        small = grid_known & (blocks < sms)
        frac = np.where(small, 1.0 - blocks / np.maximum(sms, 1), 0.0)
        occ_known = np.isfinite(occ) & (occ >= 0)
        if th.low_occupancy_pct > 0:
            low_occ = ~(sms > 0) & occ_known & (occ < th.low_occupancy_pct)
            frac = np.where(low_occ, 1.0 - occ / th.low_occupancy_pct, frac)
        loss = dur * frac
        cap = v.busy_time
        if loss.sum() > cap > 0:
            loss = loss * (cap / loss.sum())
        gaps = split_gaps(v, th).charged(GAP_PARTS)
        step_cost = per_step(v, v.work_step_index[comp], loss) + per_step(
            v, v.gaps.step_index, gaps
        )
        cost[v.rank] = step_cost
        tally.add(v, rows, loss, {"blocks": np.maximum(blocks, 0)})
        n_kernels += len(rows)
        n_tiny += int(np.count_nonzero(dur < th.tiny_kernel_us * 1000.0))
        comp_time += float(dur.sum())
        small_time += float(dur[small].sum())
        occ_weighted += float((occ[occ_known] * dur[occ_known]).sum())
        occ_time += float(dur[occ_known].sum())
        gap_ns += float(gaps.sum())
        durations.append(dur)
    total_steps = sum(v.n_steps for v in views) or 1
    all_dur = np.concatenate(durations) if durations else np.zeros(0)
    median_us = float(np.median(all_dur)) / 1e3 if len(all_dur) else 0.0
    kernels_per_step = n_kernels / total_steps
    tiny_share = n_tiny / n_kernels if n_kernels else 0.0
    small_grid_share = small_time / comp_time if comp_time else 0.0
    evidence: dict[str, Number] = {
        "compute_kernels_per_step": kernels_per_step,
        "median_kernel_us": median_us,
        "tiny_kernel_share": tiny_share,
        "small_grid_time_share": small_grid_share,
        "sm_count": ", ".join(str(s) for s in sorted(sms_seen)) or "unknown",
        "mean_achieved_occupancy_pct": occ_weighted / occ_time if occ_time else "unknown",
        "kernel_gap_ns_per_step": gap_ns / total_steps,
    }
    if views and not sms_seen:
        notes.append(
            "the traces give no SM count (deviceProperties): small grids are judged "
            "by estimated achieved occupancy instead"
        )
    title = (
        f"Too little parallel work: {kernels_per_step:.0f} compute kernels "
        f"per step (median {median_us:.1f} us, {100 * tiny_share:.0f}% under "
        f"{th.tiny_kernel_us:g} us); {100 * small_grid_share:.0f}% of compute "
        f"time in grids smaller than the SM count"
    )
    advice = ADVICE_IN_GRAPHS if in_graphs else ADVICE
    return Estimate(cost, evidence, tally.top(), title, advice, notes)


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else 0.0


# Its rows in docs/doctor.md (docs/gen_doctor.py writes them).
DOC = CauseDoc(
    means=(
        "too little parallel work: many tiny kernels, grids smaller than the device, low occupancy"
    ),
    cost=(
        "for each compute kernel with fewer thread blocks than the device has SMs "
        "(`deviceProperties` numSms / multiProcessorCount), duration x (1 - blocks / "
        "SMs); without an SM count, kernels under `low_occupancy_pct` estimated achieved "
        "occupancy cost duration x (1 - occupancy / low_occupancy_pct); capped at the "
        "busy time; plus the idle gaps shorter than `kernel_wait_us` between kernels "
        "that were already queued"
    ),
    helps=(
        "larger batches, fused kernels (torch.compile, fused optimizers, fused "
        "attention), CUDA graphs"
    ),
    edit=(
        'not modelled (`saving_ns_per_step` None, null in JSON, "not modelled" in the '
        "text: never 0, which would read \"don't bother\"): the graph keeps each stream's "
        "order and each kernel's duration, and more parallel work is a change of the "
        "program, not of its timing"
    ),
)


CAUSE = Cause(
    key="parallelism",
    name="too little parallel work",
    thresholds=("min_share", "kernel_wait_us", "tiny_kernel_us", "low_occupancy_pct"),
    evidence=(
        "compute_kernels_per_step",
        "median_kernel_us",
        "tiny_kernel_share",
        "small_grid_time_share",
        "sm_count",
        "mean_achieved_occupancy_pct",
        "kernel_gap_ns_per_step",
    ),
    heuristic=lambda ex: examine(
        ex.views,
        ex.th,
        _number(ex.found["launch_bound"].evidence.get("gpu_time_share_in_graphs")) >= GRAPHS_MOSTLY,
    ),
    edit=None,
    edit_text="not modelled: the graph keeps each stream's order and each kernel's duration, "
    "and more parallel work is a change of the program",
    needs=("launch_bound",),
    gap_parts=GAP_PARTS,
    doc=DOC,
)
