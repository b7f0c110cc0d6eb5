"""Cause 6, imbalance between ranks: fast ranks wait in collectives for the slowest.

Per analysed step present on two ranks or more, each rank's work time is the union of its
non-communication GPU work launched in that step; a rank waits for the slowest rank by the
difference, at most its own communication time in that step (the wait happens inside
collectives). Cost per step: that wait.

The slowest rank is named only when it stands out: its mean work time per step is an outlier
above the other ranks' (analysis.stragglers.high_outliers: more than 3 robust standard
deviations, 1.4826 * MAD, and more than 5 % above their median). Work time, not step time:
ranks that wait for each other have the same step time, and a duration is immune to clock
skew between ranks. Among identical ranks none stands out, and their wait is their noise.

Evidence: the slowest rank and the other slow ones, how much more work per step it has than
the median rank and how long the others wait for it (their median wait per step), the
straggler ranks (analysis.stragglers, rule "robust": late to start the collectives), the
spread of the mean step time and of the work time across ranks ((max - min) / mean).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ... import ops
from ...analysis.stragglers import high_outliers, stragglers
from ...frame.fields import duration_text
from ...model.whatif.edits import Edits
from ...schema import GPU_WORK_KINDS, KernelClass
from ...traceset import TraceSet
from ..views.context import RankView
from ..views.estimate import Estimate
from ..views.text import Number
from .record import Cause, Examination

ADVICE = (
    "Balance the work across ranks: even data shards and sequence lengths (length "
    "bucketing, token-based batching), even model/embedding sharding, identical hardware "
    "and clocks; then look at the slowest rank on its own (its input pipeline, host load, "
    "throttling) - the other causes of this report, for that rank, usually say why."
)


def per_step_times(v: RankView) -> tuple[np.ndarray, np.ndarray]:
    """(work time, communication time) of each analysed step of a rank, ns."""
    w = v.work
    comm = w.kclass == KernelClass.COMM
    out = []
    for mask in (v.selected & ~comm, v.selected & comm):
        g = ops.grouped_total(v.work_step_index[mask], w.starts[mask], w.ends[mask])
        t = np.zeros(v.n_steps, np.float64)
        t[np.asarray(g[0], np.int64)] = g[1]
        out.append(t)
    return out[0], out[1]


def examine(views: list[RankView], traces: TraceSet, steps: Optional[Sequence[int]]) -> Estimate:
    cost = {v.rank: np.zeros(v.n_steps) for v in views}
    evidence: dict[str, Number] = {}
    notes: list[str] = []
    if len(views) < 2:
        if views:
            notes.append("one rank: no imbalance between ranks to measure")
        return Estimate(cost, evidence, [], "Imbalance between ranks: one rank only", ADVICE, notes)
    work_t: dict[int, np.ndarray] = {}
    comm_t: dict[int, np.ndarray] = {}
    for v in views:
        work_t[v.rank], comm_t[v.rank] = per_step_times(v)
    # Align ranks by step number.
    all_steps = np.unique(np.concatenate([v.steps for v in views]))
    table = np.full((len(views), len(all_steps)), np.nan)
    for i, v in enumerate(views):
        table[i, np.searchsorted(all_steps, v.steps)] = work_t[v.rank]
    shared = np.sum(~np.isnan(table), axis=0) >= 2
    slowest = np.where(shared, np.nanmax(np.where(np.isnan(table), -np.inf, table), axis=0), np.nan)
    top: list[dict[str, Any]] = []
    for v in views:
        cols = np.searchsorted(all_steps, v.steps)
        wait = np.where(shared[cols], slowest[cols] - work_t[v.rank], 0.0)
        cost[v.rank] = np.clip(np.minimum(wait, comm_t[v.rank]), 0, None)
        top.append(
            {
                "name": f"rank {v.rank}",
                "count": v.n_steps,
                "total_ns": int(work_t[v.rank].sum()),
                "wait_ns": int(cost[v.rank].sum()),
            }
        )
    top.sort(key=lambda r: -r["total_ns"])  # stable: equal work in rank order
    step_times = np.array([v.step_time for v in views])
    works = np.array([work_t[v.rank].mean() for v in views])
    step_spread = (
        float((step_times.max() - step_times.min()) / step_times.mean())
        if step_times.mean() > 0
        else 0.0
    )
    work_spread = float((works.max() - works.min()) / works.mean()) if works.mean() > 0 else 0.0
    ranks = np.array([v.rank for v in views])
    waits = np.array([cost[v.rank].sum() / v.n_steps for v in views])
    slow = high_outliers(works)
    # Slowest first; equal work in rank order.
    slow_order = np.flatnonzero(slow)[np.lexsort((ranks[slow], -works[slow]))]
    evidence["slowest_rank"] = int(ranks[slow_order[0]]) if len(slow_order) else "none stands out"
    evidence["slow_ranks"] = _ranks_text(ranks[slow_order].tolist())
    if len(slow_order):
        excess = float(works[slow_order[0]] - np.median(works[~slow]))
        others_wait = float(np.median(waits[~slow]))
        evidence["slowest_extra_work_ns_per_step"] = excess
        evidence["others_wait_ns_per_step"] = others_wait
    evidence["step_time_spread"] = step_spread
    evidence["work_time_spread"] = work_spread
    evidence["wait_in_collectives_ns_per_step"] = float(np.mean(waits))
    try:
        st = stragglers(traces, rule="robust", ranks=[v.rank for v in views], steps=steps)
        evidence["stragglers"] = _ranks_text(st.params.get("stragglers") or [])
        notes.extend(f"stragglers: {n}" for n in st.notes)
    except ValueError as e:  # e.g. steps the analysis cannot use
        evidence["stragglers"] = "unknown"
        notes.append(f"stragglers: {e}")
    spread = (
        f"work time varies {100 * work_spread:.0f}% across ranks, step time "
        f"{100 * step_spread:.0f}%"
    )
    if len(slow_order):
        title = (
            f"Imbalance between ranks: rank {evidence['slowest_rank']} is slowest, "
            f"{duration_text(excess)} more work per step than the median rank; the others wait "
            f"{duration_text(others_wait)} per step for it; {spread}"
        )
    else:
        title = f"Imbalance between ranks: no rank stands out; {spread}"
    return Estimate(cost, evidence, top[:5], title, ADVICE, notes)


def _ranks_text(ranks: Sequence[int]) -> str:
    """Ranks as evidence: "3, 17" (every one: text output shortens long lists), or "none found"."""
    return ", ".join(str(int(r)) for r in ranks) if len(ranks) else "none found"


def _edit(ex: Examination) -> Optional[Edits]:
    """Ranks whose compute per step is above the median rank's, scaled to the median."""
    views = ex.views
    if len(views) < 2:
        return None
    work = {v.rank: per_step_times(v)[0].mean() for v in views}
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


CAUSE = Cause(
    key="rank_imbalance",
    name="imbalance between ranks",
    thresholds=("min_share",),
    evidence=(
        "slowest_rank",
        "slow_ranks",
        "slowest_extra_work_ns_per_step",
        "others_wait_ns_per_step",
        "step_time_spread",
        "work_time_spread",
        "wait_in_collectives_ns_per_step",
        "stragglers",
        "wait_ns",
    ),
    heuristic=lambda ex: examine(ex.views, ex.traces, ex.steps),
    edit=_edit,
    edit_text="every rank as fast as the median rank",
    edit_limits="it scales the slow ranks' compute kernels only; their host time, input and "
    "communication stay",
)
