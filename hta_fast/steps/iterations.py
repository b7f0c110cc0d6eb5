"""Iterations found from repeated launches (hta_fast.frame.launch_pattern), as passes of
phase "iteration": what `steps_from(..., "iterations")` makes steps of in a trace without
profiler steps or annotations.

Iteration k starts at the start of its first launch and ends where iteration k + 1 starts;
the last ends at the end of its last launch call. The host work before an iteration's
first launch (Python, operator dispatch) is thus counted in the iteration before it: the
launches are all that says where an iteration is.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..frame.launch_pattern import Repeat, find_repeat, launches
from ..trace import Trace
from .passes import Passes

__all__ = ["iterations", "MIN_ITERATIONS"]

# Fewer copies than this are no steady state to speak of.
MIN_ITERATIONS = 2
# A repeat that holds less of the rank's launched GPU time than this is a detail of the
# run (two lone copies at its end), not its loop.
MIN_SHARE = 0.2


def iterations(trace: Trace) -> tuple[Passes, Optional[Repeat], str]:
    """The rank's iterations, the repeat they come from (None when there is none) and a
    note saying what was found or why nothing was."""
    seq = launches(trace)
    if len(seq.rows) == 0:
        return Passes.empty(), None, "no launch queued GPU work"
    repeat = find_repeat(seq.item, seq.weight, MIN_ITERATIONS)
    if repeat is None:
        return (
            Passes.empty(),
            None,
            f"no sequence of launches repeats (of {len(seq.rows)} launches)",
        )
    stop = repeat.start + repeat.period * repeat.copies
    total = float(seq.weight.sum())
    share = float(seq.weight[repeat.start : stop].sum()) / total if total > 0 else 1.0
    if share < MIN_SHARE:
        return (
            Passes.empty(),
            None,
            f"the longest repeat ({repeat.copies} copies of {repeat.period} launches) holds "
            f"{share:.0%} of the launched GPU time, under {MIN_SHARE:.0%}",
        )
    first = repeat.start + repeat.period * np.arange(repeat.copies)
    rows = seq.rows[first]
    ts = trace.column("events", "ts")
    starts = ts[rows]
    last = seq.rows[stop - 1]
    tail = int(ts[last] + max(int(trace.column("events", "dur")[last]), 0))
    ends = np.r_[starts[1:], max(tail, int(starts[-1]))].astype(np.int64)
    note = (
        f"{repeat.copies} iterations of {repeat.period} launches each (launches "
        f"{repeat.start} to {stop - 1} of {len(seq.rows)}, {share:.0%} of the launched "
        "GPU time)"
    )
    passes = Passes(
        rows, starts, ends, np.full(len(rows), "iteration"), np.full(len(rows), -1, np.int64)
    )
    return passes, repeat, note
