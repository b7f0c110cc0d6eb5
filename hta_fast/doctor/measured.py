"""The measured SM-active share beside the doctor's utilization, where the traces carry
Kineto's hardware counters (hta_fast.analysis.hardware_counters owns the figure): a row per
rank and device, and the lines the doctor's text shows. Traces without counters give no
row and no line."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..analysis.hardware_counters import (
    DISAGREE_POINTS,
    SM_ACTIVE_PCT,
    SM_CYCLES,
    SmActiveVsBusy,
    sm_active_vs_busy,
)
from .views.context import RankView
from .views.text import short_list

# Why the two shares part, by which one is higher.
BELOW_WHY = (
    "the GPU ran kernels that kept few of its SMs active (small grids, low occupancy, waits "
    "inside kernels)"
)
ABOVE_WHY = "the SMs worked while the trace holds no GPU work (work the profiler did not record)"


def measured_sm_active(views: Sequence[RankView]) -> list[SmActiveVsBusy]:
    """Each analysed rank's measured SM-active share over its window (RankView.lo..hi) beside
    its utilization, per device with a counter track."""
    return [
        row for v in views for row in sm_active_vs_busy(v.rank, v.trace, v.lo, v.hi, v.utilization)
    ]


def _where(row: SmActiveVsBusy) -> str:
    return f"rank {row.rank} GPU {row.device}"


def measured_text(rows: Sequence[SmActiveVsBusy]) -> list[str]:
    """The measured share beside the computed one, a warning where they differ by more than
    DISAGREE_POINTS, and where counters were recorded but SM activity was not measured."""
    lines = []
    both = [r for r in rows if r.measured_pct is not None and r.busy_pct is not None]
    if both:
        measured = float(np.mean([r.measured_pct for r in both]))
        busy = float(np.mean([r.busy_pct for r in both]))
        where = _where(both[0]) if len(both) == 1 else f"mean over {len(both)} GPUs"
        lines.append(
            f"measured SM active {measured:.1f}% vs computed busy {busy:.1f}% ({where}; "
            "hardware counters, time-weighted over the analysed window)"
        )
    apart = [r for r in both if r.differs]
    if apart:
        lower = sum(1 for r in apart if (r.difference_points or 0) < 0)
        why = BELOW_WHY if 2 * lower >= len(apart) else ABOVE_WHY
        lines.append(
            f"warning: measured SM active and computed busy differ by more than "
            f"{DISAGREE_POINTS:g} points on "
            + short_list(
                [f"{_where(r)} ({r.measured_pct:.1f}% vs {r.busy_pct:.1f}%)" for r in apart]
            )
            + f": {why}"
        )
    alone = [r for r in rows if r.measured_pct is not None and r.busy_pct is None]
    if alone:
        lines.append(
            "measured SM active "
            + short_list([f"{r.measured_pct:.1f}% on {_where(r)}" for r in alone])
            + " (the rank's GPU work ran on other devices too: no busy share of one device)"
        )
    no_metric = [r for r in rows if r.metric is None]
    if no_metric:
        lines.append(
            "hardware counters recorded but SM active not measured on "
            + short_list([_where(r) for r in no_metric])
            + f": no SM-active metric ({SM_ACTIVE_PCT}, or {SM_CYCLES[0]} with {SM_CYCLES[1]})"
        )
    no_sample = [r for r in rows if r.metric is not None and r.measured_pct is None]
    if no_sample:
        lines.append(
            "SM active not measured on "
            + short_list([_where(r) for r in no_sample])
            + ": no SM-active sample in the analysed window"
        )
    return lines
