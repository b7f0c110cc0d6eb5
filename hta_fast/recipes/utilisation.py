"""GPU utilisation over time: per bucket of `every` ns, the share of the bucket during which
at least one kernel, memcpy or memset runs on the GPU, and a rolling mean over `span`
buckets.

Grouping by "window" puts an event in every bucket it overlaps, clipped to it, so the busy
time of a bucket is the length of the union of its (sorted) intervals.
"""

from __future__ import annotations

from typing import Any, Union

import numpy as np

from .. import udf
from .._arrow import array_of, as_numpy
from ..frame.result import Result
from ..trace import Trace
from ..traceset import TraceSet


@udf.metric(name="busy")
def busy_time(ts: np.ndarray, end: np.ndarray) -> int:
    """Length (ns) of the union of the intervals [ts, end), given sorted by ts."""
    busy = 0
    covered = np.iinfo(np.int64).min  # end of the union so far
    for i in range(len(ts)):
        start = max(ts[i], covered)
        if end[i] > start:
            busy += end[i] - start
        covered = max(covered, end[i])
    return busy


def utilisation_curve(
    traces: Union[Trace, TraceSet], every: int, span: int = 1, **selection: Any
) -> Result:
    """Per rank and bucket (window = bucket start, ns): busy time (ns), utilisation (busy /
    every) and its mean over the last `span` buckets of the rank (fewer at its start;
    buckets without GPU work count as idle)."""
    if span < 1:
        raise ValueError(f"span must be >= 1, got {span}")
    res = udf.apply(busy_time, traces, by="window", every=every, kinds="gpu", **selection)
    t = res.table
    rank = as_numpy(t["rank"])
    window = as_numpy(t["window"])
    busy = as_numpy(t["busy"]).astype(np.float64)
    util = busy / every
    rolling = np.empty(len(t))
    for r in np.unique(rank):
        at = np.flatnonzero(rank == r)
        # Bucket index from the rank's first bucket; absent buckets were idle.
        idx = (window[at] - window[at[0]]) // every
        dense = np.zeros(int(idx[-1]) + 1 if len(idx) else 0)
        dense[idx] = util[at]
        csum = np.r_[0.0, np.cumsum(dense)]
        lo = np.maximum(idx + 1 - span, 0)
        rolling[at] = (csum[idx + 1] - csum[lo]) / (idx + 1 - lo)
    table = t.append_column("utilisation", array_of(util)).append_column(
        "rolling_utilisation", array_of(rolling)
    )
    return Result("utilisation_curve", table, notes=res.notes, params={**res.params, "span": span})
