"""Kernel time models fitted from a trace's own kernels: per family, an efficiency curve
(the fraction of the roofline a call reaches, as a function of its roofline time) and a
launch floor (the shortest time a kernel takes, whatever its work).

Efficiency e = roofline time / measured time of one call. Small calls reach a smaller
fraction of the device's peaks than large ones, so e is fitted against x = log10(roofline
time): operator groups are binned by half decades of x, each bin's value is the weighted
median of log10(e) (predict weighs each group once by default, so that a few groups called
many times do not set a family's curve; or by calls), and between bin centres the curve is
linear (flat beyond the first and last).
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
    """Fit one family's curve from per-call roofline and measured times of its groups,
    each weighted by `calls` (its calls, or 1 to count each group once)."""
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


@dataclasses.dataclass
class KernelModels:
    """Per family curves and the launch floor of one trace."""

    curves: dict
    floor_ns: float

    def predict_call(
        self,
        family: str,
        measured_ns: np.ndarray,
        roofline_src: np.ndarray,
        roofline_dst: np.ndarray,
        kernels_per_call: np.ndarray,
        floor_dst_ns: Optional[float] = None,
    ) -> np.ndarray:
        """Time of one call on the destination device: the measured time scaled by the
        roofline ratio, corrected by the efficiency the curve gives at the two sizes, and
        not under the launch floor times the call's kernels (nor its measured time, where
        that is lower still)."""
        curve = self.curves.get(family)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = roofline_dst / roofline_src
            if curve is not None:
                gain = curve(np.log10(roofline_src)) - curve(np.log10(roofline_dst))
                ratio = ratio * 10**gain
        pred = np.where(np.isfinite(ratio) & (ratio > 0), measured_ns * ratio, measured_ns)
        floor = self.floor_ns if floor_dst_ns is None else floor_dst_ns
        # the floor stops a prediction going below it; it never raises a call that was
        # already faster than the floor
        return np.maximum(pred, np.minimum(measured_ns, kernels_per_call * floor))
