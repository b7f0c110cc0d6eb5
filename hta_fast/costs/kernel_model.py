"""Kernel time models fitted from a trace's own kernels: a launch floor (the shortest time a
kernel takes, whatever its work) and, per family, an efficiency curve (the fraction of the
roofline a call's work reaches, as a function of its roofline time).

A call's time is split in two: its latency, the part spent at the launch floor (at most
the floor per kernel, and never more than the time the roofline leaves unexplained), and its
work, the rest. On another device the work scales with the roofline while the latency
follows that device's floor: the source's own floor unless the target's is known, since the
source trace says nothing about how long the target takes to launch a kernel.

Efficiency e = roofline time / work time of one call. Small calls reach a smaller fraction of
the device's peaks than large ones, so e is fitted against x = log10(roofline time):
operator groups are binned by half decades of x, each bin's value is the weighted median of
log10(e) (predict weighs each group once by default, so that a few groups called many times
do not set a family's curve; or by calls), and between bin centres the curve is linear (flat
beyond the first and last).
"""

from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

BIN_WIDTH = 0.5  # decades of roofline time per bin
FLOOR_QUANTILE = 0.05  # the launch floor: this quantile of the trace's kernel durations,
FLOOR_MAX_NS = 5_000.0  # capped: a trace without small kernels says nothing about the floor


@dataclasses.dataclass(frozen=True)
class EfficiencyCurve:
    """log10(efficiency) at bin centres x (log10 of roofline ns)."""

    x: np.ndarray
    log_eff: np.ndarray

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if not len(self.x):
            return np.zeros_like(np.asarray(x, np.float64))
        return np.interp(x, self.x, self.log_eff)


def weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    v, w = values[order], weights[order]
    c = np.cumsum(w)
    return float(v[np.searchsorted(c, c[-1] / 2)])


def fit_curve(
    roofline_ns: np.ndarray, measured_ns: np.ndarray, calls: np.ndarray
) -> EfficiencyCurve:
    """Fit one family's curve from per-call roofline and measured (work) times of its
    groups, each weighted by `calls` (its calls, or 1 to count each group once)."""
    ok = (roofline_ns > 0) & (measured_ns > 0) & (calls > 0)
    if not ok.any():
        return EfficiencyCurve(np.zeros(0), np.zeros(0))
    x = np.log10(roofline_ns[ok])
    y = np.log10(roofline_ns[ok] / measured_ns[ok])
    w = calls[ok].astype(np.float64)
    b = np.floor(x / BIN_WIDTH).astype(np.int64)
    xs, ys = [], []
    for k in np.unique(b):
        sel = b == k
        xs.append(float(np.average(x[sel], weights=w[sel])))
        ys.append(weighted_median(y[sel], w[sel]))
    return EfficiencyCurve(np.array(xs), np.array(ys))


def launch_floor(kernel_durations_ns: np.ndarray) -> float:
    """The shortest time a kernel takes on this device: a low quantile of the positive
    durations (robust to a few odd events), at most FLOOR_MAX_NS; 0 without kernels."""
    d = kernel_durations_ns[kernel_durations_ns > 0]
    return min(float(np.quantile(d, FLOOR_QUANTILE)), FLOOR_MAX_NS) if len(d) else 0.0


def latency_floor(kernel_durations_ns: np.ndarray) -> float:
    """The launch latency in each kernel's time: the launch floor where the trace measures
    one (below FLOOR_MAX_NS), else 0: a trace of long kernels only gives no evidence that
    any of their time is latency, so all of it scales."""
    floor = launch_floor(kernel_durations_ns)
    return floor if floor < FLOOR_MAX_NS else 0.0


def latency_part(
    measured_ns: np.ndarray,
    roofline_ns: Optional[np.ndarray],
    kernels_per_call: np.ndarray,
    latency_ns: float,
) -> np.ndarray:
    """The part of each call's time spent at the launch floor: the floor per kernel, not
    more than the call took, nor more than the time its roofline leaves unexplained (the
    work cannot run faster than the roofline). roofline_ns=None: not known."""
    part = np.minimum(measured_ns, kernels_per_call * latency_ns)
    if roofline_ns is not None:
        unexplained = np.where(roofline_ns > 0, measured_ns - roofline_ns, measured_ns)
        part = np.minimum(part, np.maximum(unexplained, 0.0))
    return part


def between_one_and(ratio: np.ndarray, roofline_ratio: np.ndarray) -> np.ndarray:
    """`ratio` held between 1 and the roofline ratio. The curve's correction stands for
    small calls reaching less of the peaks than large ones; past these bounds it would say
    that a call with less work takes longer, or that the efficiency falls as the work grows,
    which only the noise of its bins can say."""
    return np.clip(ratio, np.minimum(1.0, roofline_ratio), np.maximum(1.0, roofline_ratio))


def scale_kernels(
    measured_ns: np.ndarray,
    latency_ns: np.ndarray,
    work_ratio: np.ndarray,
    latency_ratio: float,
) -> np.ndarray:
    """Times on the other device: the latency part by the ratio of the two launch floors,
    the work by `work_ratio` (the measured work where that ratio is not a number)."""
    work = measured_ns - latency_ns
    ok = np.isfinite(work_ratio) & (work_ratio > 0)
    return latency_ns * latency_ratio + np.where(ok, work * np.where(ok, work_ratio, 1.0), work)


@dataclasses.dataclass
class KernelModels:
    """Per family curves (fitted on the calls' work time), the launch floor of one trace,
    and the launch latency in each kernel's time (0: none measured)."""

    curves: dict
    floor_ns: float
    latency_ns: float = 0.0

    def latency_ratio(self, floor_dst_ns: Optional[float]) -> float:
        """The target's launch latency over the source's: 1 unless the target's floor is
        known, as the source trace cannot tell it."""
        if floor_dst_ns is None or self.latency_ns <= 0:
            return 1.0
        return floor_dst_ns / self.latency_ns

    def predict_call(
        self,
        family: str,
        measured_ns: np.ndarray,
        roofline_src: np.ndarray,
        roofline_dst: np.ndarray,
        kernels_per_call: np.ndarray,
        floor_dst_ns: Optional[float] = None,
    ) -> np.ndarray:
        """Time of one call on the destination device: its latency part by the ratio of
        the two launch floors (1 unless `floor_dst_ns`, the destination's floor, is given),
        its work by the roofline ratio corrected by the efficiency the curve gives at the two
        sizes (held between 1 and the roofline ratio); and not under the launch floor times
        the call's kernels (nor its measured time, where that is lower still)."""
        curve = self.curves.get(family)
        with np.errstate(divide="ignore", invalid="ignore"):
            roofline_ratio = roofline_dst / roofline_src
            ratio = roofline_ratio
            if curve is not None:
                gain = curve(np.log10(roofline_src)) - curve(np.log10(roofline_dst))
                ratio = between_one_and(ratio * 10**gain, roofline_ratio)
        latency = latency_part(measured_ns, roofline_src, kernels_per_call, self.latency_ns)
        pred = scale_kernels(measured_ns, latency, ratio, self.latency_ratio(floor_dst_ns))
        floor = self.floor_ns if floor_dst_ns is None else floor_dst_ns
        # the floor stops a prediction going below it; it never raises a call that was
        # already faster than the floor
        return np.maximum(pred, np.minimum(measured_ns, kernels_per_call * floor))


def fit_models(
    family: np.ndarray,
    roofline_ns: np.ndarray,
    per_call_ns: np.ndarray,
    kernels_per_call: np.ndarray,
    weights: np.ndarray,
    kernel_durations_ns: np.ndarray,
    curves: bool = True,
) -> KernelModels:
    """A trace's kernel models from its operator groups (family, per-call roofline and
    measured times, kernels per call, curve weights) and all its GPU event durations. Each
    family's curve is fitted on the groups' work time, their time less the latency part,
    so that it carries only how far from the roofline the work runs."""
    latency = latency_floor(kernel_durations_ns)
    work = per_call_ns - latency_part(per_call_ns, roofline_ns, kernels_per_call, latency)
    fitted = {}
    if curves:
        for f in sorted({f for f, w in zip(family, weights) if f and w}):
            sel = family == f
            fitted[f] = fit_curve(roofline_ns[sel], work[sel], weights[sel])
    return KernelModels(fitted, launch_floor(kernel_durations_ns), latency)
