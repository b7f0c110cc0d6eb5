"""Fitting time = latency + bytes / bandwidth to measured (bytes, time) points, robustly.

Measured times of one transfer size scatter upwards only: interference, clock
throttling and queueing make an operation slower, never faster than the hardware allows.
So each distinct size is represented by its lower envelope (the fastest time seen), and
the line is fitted to the envelope by least squares in relative error (weights 1/time),
because sizes and times span orders of magnitude and an absolute fit would ignore the
small sizes.

The piecewise form (Lin et al., TPDS 2025) has a latency-bound part below a knee and a
bandwidth-bound part above it: time = latency for bytes <= knee, latency + (bytes -
knee) / bandwidth above. The knee is searched among the points between distinct sizes;
for each candidate the two remaining parameters are a weighted linear least squares.

All functions take numpy arrays and return plain floats: bytes in B, times in ns,
bandwidth in B/ns (= GB/s).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np

# Distinct sizes needed before the piecewise form is tried (two on each side of a knee).
PIECEWISE_MIN_SIZES = 5


@dataclasses.dataclass(frozen=True)
class TimeFit:
    """One fitted curve. form: "linear" (latency + bytes / bandwidth), "piecewise" (flat
    latency up to knee_bytes, then the linear part), "bandwidth" (one size only: latency
    cannot be told from bandwidth, so all time is counted as bandwidth) or "latency" (no
    growth with size: a constant). bandwidth is in B/ns (GB/s), inf for "latency"."""

    form: str
    latency_ns: float
    bandwidth_gbps: float
    knee_bytes: Optional[float] = None

    def predict(self, nbytes: np.ndarray | float) -> np.ndarray | float:
        x = np.asarray(nbytes, np.float64)
        over = x if self.knee_bytes is None else np.maximum(x - self.knee_bytes, 0.0)
        out = self.latency_ns + over / self.bandwidth_gbps
        return float(out) if out.ndim == 0 else out

    def scaled(self, bandwidth_factor: float) -> "TimeFit":
        """The same curve with bandwidth multiplied by bandwidth_factor (latency kept)."""
        return dataclasses.replace(self, bandwidth_gbps=self.bandwidth_gbps * bandwidth_factor)


def lower_envelope(nbytes: np.ndarray, time: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct sizes ascending, the fastest time at each)."""
    sizes, code = np.unique(nbytes, return_inverse=True)
    fastest = np.full(len(sizes), np.inf)
    np.minimum.at(fastest, code.reshape(-1), time)
    return sizes, fastest


def _weighted_lstsq(basis: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Coefficients minimising the relative squared error, and that error (sum)."""
    w = 1.0 / np.maximum(y, 1e-9)
    coef, *_ = np.linalg.lstsq(basis * w[:, None], y * w, rcond=None)
    resid = (basis @ coef - y) * w
    return coef, float(resid @ resid)


def fit_linear(sizes: np.ndarray, times: np.ndarray) -> TimeFit:
    """latency + bytes / bandwidth through envelope points, latency >= 0, bandwidth > 0."""
    if len(sizes) == 0:
        raise ValueError("no points to fit")
    if len(sizes) == 1:
        if sizes[0] <= 0:
            return TimeFit("latency", float(times[0]), math.inf)
        return TimeFit("bandwidth", 0.0, float(sizes[0] / times[0]))
    basis = np.stack([np.ones_like(sizes), sizes], axis=1)
    (latency, per_byte), _ = _weighted_lstsq(basis, times)
    if per_byte <= 0:  # no growth with size: time is latency alone
        return TimeFit("latency", float(np.average(times, weights=1 / times)), math.inf)
    if latency < 0:  # refit through the origin: no negative latency
        (per_byte,), _ = _weighted_lstsq(sizes[:, None], times)
        latency = 0.0
    return TimeFit("linear", float(latency), float(1.0 / per_byte))


def fit_piecewise(sizes: np.ndarray, times: np.ndarray) -> Optional[TimeFit]:
    """The knee curve, or None with fewer than PIECEWISE_MIN_SIZES sizes or when no knee
    gives a positive bandwidth. Knee candidates: every distinct size but the two largest
    (so at least two points lie on the bandwidth side), and the midpoints between them."""
    if len(sizes) < PIECEWISE_MIN_SIZES:
        return None
    cands = sizes[:-2]
    cands = (
        np.unique(np.concatenate([cands, (cands[:-1] + cands[1:]) / 2]))
        if len(cands) > 1
        else cands
    )
    best: Optional[tuple[float, TimeFit]] = None
    for knee in cands:
        basis = np.stack([np.ones_like(sizes), np.maximum(sizes - knee, 0.0)], axis=1)
        (latency, per_byte), err = _weighted_lstsq(basis, times)
        if per_byte <= 0 or latency < 0:
            continue
        if best is None or err < best[0]:
            best = (err, TimeFit("piecewise", float(latency), float(1 / per_byte), float(knee)))
    return None if best is None else best[1]


def relative_error(fit: TimeFit, sizes: np.ndarray, times: np.ndarray) -> float:
    """Mean |predicted - measured| / measured, in percent."""
    if len(sizes) == 0:
        return math.nan
    return float(100.0 * np.mean(np.abs(fit.predict(sizes) - times) / times))


def fit_time(nbytes: np.ndarray, time: np.ndarray) -> tuple[TimeFit, float, float]:
    """The best curve for these points, its envelope error and its held-out error (both %).

    The piecewise curve is kept where it fits the envelope better than the line by more
    than a tenth (one extra parameter must earn its place). Held out: each distinct size
    in turn is left out, the curve refitted on the rest and its error on the left-out size
    measured; the mean over sizes (NaN with fewer than three sizes)."""
    keep = (time > 0) & np.isfinite(time) & np.isfinite(nbytes) & (nbytes >= 0)
    sizes, fastest = lower_envelope(nbytes[keep].astype(np.float64), time[keep].astype(np.float64))
    fit = _best(sizes, fastest)
    err = relative_error(fit, sizes, fastest)
    held: list[float] = []
    if len(sizes) >= 3:
        for i in range(len(sizes)):
            rest = np.arange(len(sizes)) != i
            held.append(
                relative_error(
                    _best(sizes[rest], fastest[rest]), sizes[i : i + 1], fastest[i : i + 1]
                )
            )
    return fit, err, float(np.mean(held)) if held else math.nan


def _best(sizes: np.ndarray, times: np.ndarray) -> TimeFit:
    line = fit_linear(sizes, times)
    knee = fit_piecewise(sizes, times)
    if knee is not None and relative_error(knee, sizes, times) < 0.9 * relative_error(
        line, sizes, times
    ):
        return knee
    return line
