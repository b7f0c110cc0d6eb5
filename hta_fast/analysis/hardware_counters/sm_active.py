"""The measured SM-active share beside the computed GPU busy share: one owner of that figure.

A GPU is busy (the computed share) while any kernel, copy or fill runs on it; its SMs are
active (the measured share) while they hold work. Where a trace carries Kineto's hardware
counters (samples.py) with an SM-active metric, the two are set side by side per rank and
device. They differ where kernels keep few SMs busy (small grids, low occupancy, waits
inside kernels), or where the device worked on what the trace does not hold.

The measured share is the time-weighted mean of the SM-active samples over the analysed
window: a sample holds from its ts to the next sample's (Chrome's counter semantics; Kineto
writes a sample at its start), the last one for the median sampling period, each clipped to
the window. Where no sample covers the window, or the track has no SM-active metric, it is
None ("not measured"), never 0.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

import numpy as np

from ...frame.gpu_work import gpu_work
from ...trace import Trace
from .samples import CounterSamples, counter_samples

__all__ = [
    "DISAGREE_POINTS",
    "SM_ACTIVE_PCT",
    "SM_CYCLES",
    "SmActiveVsBusy",
    "sm_active_series",
    "sm_active_vs_busy",
    "time_weighted_mean",
]

# The CUPTI metric of the SMs' active share in percent (of the elapsed cycles).
SM_ACTIVE_PCT = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed"
# Without it, the share is the ratio of these two, sampled together: active / elapsed cycles.
SM_CYCLES = ("sm__cycles_active.avg", "sm__cycles_elapsed.avg")
# The measured and computed shares disagree beyond this many percentage points.
DISAGREE_POINTS = 10.0


@dataclasses.dataclass
class SmActiveVsBusy:
    """One device of one rank.

    rank, device   the rank, and the CUDA device of its "GPU N Counters" track
    metric         the metric the measured share is read from (SM_ACTIVE_PCT, or
                   "sm__cycles_active.avg / sm__cycles_elapsed.avg"); None without one
    counters       every metric sampled on the track, by name
    samples        SM-active samples that cover some of the window
    covered_share  the share of the window those samples cover (0..1)
    measured_pct   time-weighted mean SM-active share over the window (%); None: not measured
    busy_pct       the computed GPU busy share (%) the caller gives (the doctor's
                   utilization); None where the rank's GPU work ran on other devices too
    """

    rank: int
    device: int
    metric: Optional[str]
    counters: list[str]
    samples: int
    covered_share: float
    measured_pct: Optional[float]
    busy_pct: Optional[float]

    @property
    def difference_points(self) -> Optional[float]:
        """measured - busy, in percentage points; None where either is missing."""
        if self.measured_pct is None or self.busy_pct is None:
            return None
        return self.measured_pct - self.busy_pct

    @property
    def differs(self) -> bool:
        """The two disagree by more than DISAGREE_POINTS."""
        d = self.difference_points
        return d is not None and abs(d) > DISAGREE_POINTS

    def to_dict(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "difference_points": self.difference_points,
            "differs": self.differs,
        }


def time_weighted_mean(
    ts: np.ndarray, values: np.ndarray, lo: int, hi: int
) -> tuple[Optional[float], int, int]:
    """(Mean of the samples weighted by the time each holds inside [lo, hi], the ns they
    cover there, how many cover some of it); (None, 0, 0) where none does. ts sorted."""
    keep = np.isfinite(values)
    ts, values = np.asarray(ts, np.int64)[keep], np.asarray(values, np.float64)[keep]
    if not len(ts) or hi <= lo:
        return None, 0, 0
    ends = np.empty_like(ts)
    ends[:-1] = ts[1:]
    period = int(np.median(np.diff(ts))) if len(ts) > 1 else hi - int(ts[-1])
    ends[-1] = ts[-1] + max(period, 0)
    held = np.clip(ends, lo, hi) - np.clip(ts, lo, hi)
    held = np.maximum(held, 0)
    total = int(held.sum())
    if total <= 0:
        return None, 0, 0
    return float((held * values).sum() / total), total, int(np.count_nonzero(held))


def sm_active_series(
    samples: CounterSamples, device: int
) -> Optional[tuple[np.ndarray, np.ndarray, str]]:
    """(ts, SM-active %, the metric it comes from) of one device; None without such a metric."""
    names = samples.names(device)
    if SM_ACTIVE_PCT in names:
        ts, pct = samples.of(device, SM_ACTIVE_PCT)
        return ts, pct, SM_ACTIVE_PCT
    if all(n in names for n in SM_CYCLES):
        a_ts, active = samples.of(device, SM_CYCLES[0])
        e_ts, elapsed = samples.of(device, SM_CYCLES[1])
        ts, ia, ie = np.intersect1d(a_ts, e_ts, return_indices=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            pct = np.where(elapsed[ie] > 0, 100.0 * active[ia] / elapsed[ie], np.nan)
        return ts, pct, f"{SM_CYCLES[0]} / {SM_CYCLES[1]}"
    return None


def sm_active_vs_busy(
    rank: int, trace: Trace, lo: int, hi: int, busy_share: Optional[float]
) -> list[SmActiveVsBusy]:
    """Per device with a "GPU N Counters" track: the measured SM-active share over [lo, hi]
    (ns) beside busy_share (0..1, the computed GPU busy share of the same window). Empty
    where the trace has no counter track: nothing is measured, nothing is said."""
    samples = counter_samples(trace)
    devices = sorted(set(samples.device.tolist()))
    if not devices:
        return []
    work = gpu_work(trace, None)
    ran_on = set(trace.column("events", "device")[work.rows].tolist()) - {-1}
    out = []
    for device in devices:
        series = sm_active_series(samples, device)
        measured, covered, n = (
            (None, 0, 0) if series is None else (time_weighted_mean(series[0], series[1], lo, hi))
        )
        # The busy share is the rank's, over all its devices: it is this device's only
        # where the rank's GPU work ran on it alone.
        own = ran_on == {device} or (not ran_on and len(devices) == 1)
        out.append(
            SmActiveVsBusy(
                rank=rank,
                device=device,
                metric=None if series is None else series[2],
                counters=samples.names(device),
                samples=n,
                covered_share=covered / (hi - lo) if hi > lo else 0.0,
                measured_pct=measured,
                busy_pct=100.0 * busy_share if busy_share is not None and own else None,
            )
        )
    return out
