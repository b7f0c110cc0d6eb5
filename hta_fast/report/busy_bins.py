"""GPU utilisation of each rank in time bins, for the report's rank x time heatmap.

The temporal breakdown gives one number per rank; a heatmap over time needs the busy share
of each bin. The busy time up to any instant is read off the union of the rank's GPU work
(the intervals the temporal breakdown starts from) with one sorted search per rank."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import ops
from ..analysis.temporal import gpu_work
from ..frame import select
from ..traceset import TraceSet


class BusyBins(NamedTuple):
    ranks: np.ndarray  # int64, sorted
    edges: np.ndarray  # float ns, bins + 1 edges shared by every rank
    busy: np.ndarray  # float, ranks x bins: share of the bin (0..1) with GPU work running


def _busy_before(starts: np.ndarray, ends: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Busy ns before each instant in `at`, for a normalised interval set."""
    done = np.r_[0, np.cumsum(ends - starts)]
    k = np.searchsorted(ends, at, side="right")  # intervals ended by then count whole
    partial = np.where(k < len(starts), at - starts[np.minimum(k, len(starts) - 1)], 0)
    return done[k] + np.clip(partial, 0, None)


def busy_bins(traces: TraceSet, selection: select.Selection, bins: int) -> BusyBins:
    unions = {}
    for rank, trace, mask in select.each_rank(traces, selection):
        w = gpu_work(trace, mask, selection.window)
        unions[rank] = ops.union(w.starts, w.ends)
    spans = [(u.starts[0], u.ends[-1]) for u in unions.values() if len(u.starts)]
    ranks = np.array(sorted(unions), np.int64)
    if not spans:
        return BusyBins(ranks, np.zeros(0), np.zeros((len(ranks), 0)))
    lo, hi = min(s for s, _ in spans), max(e for _, e in spans)
    edges = np.linspace(lo, max(hi, lo + 1), bins + 1)
    busy = np.full((len(ranks), bins), np.nan)
    for i, r in enumerate(ranks):
        u = unions[int(r)]
        if len(u.starts):
            before = _busy_before(u.starts.astype(float), u.ends.astype(float), edges)
            busy[i] = np.diff(before) / np.diff(edges)
    return BusyBins(ranks, edges, busy)
