"""Which steps look like warm-up: the first step of a run (where it compiles, allocates and
fills its caches, and where the profiler starts), and any step far slower than the run's
usual step. Step comparisons (trace_diff) and the what-if's per-step figures leave them
out, each saying which and why."""

from __future__ import annotations

from typing import Mapping

import numpy as np

__all__ = ["WARMUP_FACTOR", "warmup_steps"]

# A step over twice the median of the others does work they do not (compiling, autotuning,
# allocating, filling caches, the profiler's own flush); ordinary jitter (a slow batch, a
# collective waiting on a late rank) stays well under it. Twice is far enough above that
# jitter to leave real steps alone.
WARMUP_FACTOR = 2.0


def warmup_steps(times: Mapping[int, int]) -> dict[int, str]:
    """The steps that look like warm-up -> why: the first step (where a run compiles,
    allocates and fills its caches, and where the profiler starts), and any step over
    WARMUP_FACTOR times the median of the steps after the first. A lone step is flagged
    by nothing: it is all the run there is to compare."""
    if len(times) < 2:
        return {}
    first, *rest = sorted(times)
    flagged = {first: "the first step"}
    median = float(np.median([times[s] for s in rest]))
    for s in rest:
        if median > 0 and times[s] > WARMUP_FACTOR * median:
            flagged[s] = f"{times[s] / median:.1f}x the median step"
    return flagged
